from typing import cast

from django import forms
from django.utils.translation import gettext_lazy as _
from django.utils.translation import pgettext_lazy

from eventsaas.forms import EventQuestionsMixin
from guests.codes import CODE_LENGTH
from guests.models import Guest
from rsvp.models import ChangeRequest
from rsvp.services import MAX_PEOPLE_PER_MEMBER, HouseholdAnswer, MemberChoice


class GuestLoginForm(forms.Form):
    code = forms.CharField(
        label=_("Personal code"),
        # Room for the long codes some imported guests keep (guests.codes.stored_code).
        max_length=64,
        widget=forms.TextInput(attrs={"autocomplete": "off", "autocapitalize": "characters", "spellcheck": "false"}),
    )
    last_name = forms.CharField(
        label=_("Last name"), max_length=100, widget=forms.TextInput(attrs={"autocomplete": "family-name"})
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Interpolated per form, not at import: `%` on a lazy string would freeze it in the import-time language.
        self.fields["code"].help_text = _("%(length)s letters and digits, printed on your invitation.") % {
            "length": CODE_LENGTH
        }


COMING, NOT_COMING, LATER = "yes", "no", "later"
# "the member is coming": a choice, worded apart from the status names ("Coming" is "Asiste" in Spanish).
ATTENDING_CHOICES = [
    (COMING, pgettext_lazy("household form", "Coming")),
    (NOT_COMING, pgettext_lazy("household form", "Not coming")),
]


class MemberAnswerForm(EventQuestionsMixin, forms.Form):
    """One member's row of the household form: coming or not, how many people, dietary needs, questions.

    A member who has not answered yet may be left to answer themselves ("later",
    the default for everyone but the person answering): the form never answers
    for somebody unless that row says so.
    """

    attending = forms.ChoiceField(label=_("Coming?"), choices=ATTENDING_CHOICES, widget=forms.RadioSelect)
    num_guests = forms.IntegerField(
        label=_("People"),
        help_text=_("Including anyone coming with them who has no code of their own (small children)."),
        min_value=0,
        max_value=MAX_PEOPLE_PER_MEMBER,
        required=False,
        widget=forms.NumberInput(attrs={"inputmode": "numeric"}),
    )
    dietary = forms.CharField(
        label=_("Dietary needs or allergies"),
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
    )

    def __init__(self, *args, member: Guest, is_answerer: bool, questions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.member = member
        self.is_answerer = is_answerer
        if member.status == Guest.Status.PENDING and not is_answerer:
            attending_field = cast(forms.ChoiceField, self.fields["attending"])
            attending_field.choices = [
                *ATTENDING_CHOICES,
                (LATER, _("%(name)s answers later") % {"name": member.first_name}),
            ]
        self.add_question_fields(questions)

    def clean(self):
        cleaned = super().clean()
        # A count the field refused already has its own error (too many, not a number).
        if cleaned.get("attending") == COMING and not cleaned.get("num_guests") and "num_guests" not in self.errors:
            self.add_error("num_guests", _("Tell us how many people are coming (at least 1)."))
        if cleaned.get("attending") in (NOT_COMING, LATER):
            cleaned["num_guests"] = 0
        return cleaned

    def choice(self) -> MemberChoice | None:
        """This row's answer, or None when the member is left to answer themselves."""
        if self.cleaned_data["attending"] == LATER:
            return None
        attending = self.cleaned_data["attending"] == COMING
        return MemberChoice(
            guest_id=self.member.pk,
            attending=attending,
            num_guests=self.cleaned_data["num_guests"] if attending else 0,
            dietary=self.cleaned_data["dietary"],
            answers=self.answers(),
        )


class BaseHouseholdFormSet(forms.BaseFormSet):
    """A row per member, in the order given (the person answering first); never more rows than members."""

    def __init__(self, *args, members: list[Guest], questions=(), **kwargs):
        self.members = members
        self.questions = questions
        kwargs.setdefault("initial", [member_initial(m, is_answerer=i == 0) for i, m in enumerate(members)])
        super().__init__(*args, **kwargs)

    def total_form_count(self):
        return len(self.members)

    def get_form_kwargs(self, index):
        return {"member": self.members[index], "is_answerer": index == 0, "questions": self.questions}

    def answer(self, *, confirmed: bool) -> HouseholdAnswer:
        choices = tuple(choice for form in self.forms if (choice := form.choice()) is not None)
        return HouseholdAnswer(members=choices, confirmed=confirmed)

    def total(self) -> int:
        """The people coming according to the rows as shown (posted or prefilled)."""
        total = 0
        for form in self.forms:
            if form["attending"].value() == COMING:
                try:
                    total += max(int(form["num_guests"].value() or 0), 0)
                except (TypeError, ValueError):
                    pass
        return total

    def chosen(self) -> dict:
        """Member id -> (coming?, count) as posted, for the confirmation's wording."""
        chosen = {}
        for form in self.forms:
            try:
                count = int(form["num_guests"].value() or 0)
            except (TypeError, ValueError):
                count = 0
            chosen[form.member.pk] = (form["attending"].value() == COMING, count)
        return chosen


# formset_factory makes a subclass of the `formset` given (the stubs say only BaseFormSet).
HouseholdFormSet = cast(
    type[BaseHouseholdFormSet], forms.formset_factory(MemberAnswerForm, formset=BaseHouseholdFormSet, extra=0)
)


def member_initial(member: Guest, *, is_answerer: bool) -> dict:
    """A row prefilled from the member's answer and, for the count, from the invitation's number.

    A declined member stays "not coming" until the person answering switches
    them; someone else who has not answered is left to answer themselves; the
    person answering chooses for themselves.
    """
    answers: dict[str, str] = {Guest.Status.COMING: COMING, Guest.Status.DECLINED: NOT_COMING}
    attending = answers.get(member.status)
    if attending is None and not is_answerer:
        attending = LATER
    initial = {
        "attending": attending,
        "num_guests": member.usual_count,
        "dietary": member.dietary,
    }
    for key, value in (member.answers or {}).items():
        initial[f"q_{key}"] = value
    return initial


def household_formset(data, *, members: list[Guest], questions, prefix: str = "m") -> BaseHouseholdFormSet:
    return HouseholdFormSet(data, members=members, questions=questions, prefix=prefix)


class ChangeRequestMessageForm(forms.Form):
    message = forms.CharField(
        label=_("Message to the organizer"),
        required=False,
        max_length=ChangeRequest.MESSAGE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 3}),
    )


class DecisionForm(forms.Form):
    response = forms.CharField(
        label=_("Note to the guest (optional)"),
        required=False,
        max_length=ChangeRequest.MESSAGE_MAX_LENGTH,
        widget=forms.Textarea(attrs={"rows": 2}),
    )

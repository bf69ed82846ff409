from django import forms
from django.utils.translation import gettext_lazy as _

from eventsaas.forms import EventQuestionsMixin
from guests.codes import CODE_LENGTH
from guests.models import Guest
from rsvp.models import ChangeRequest
from rsvp.services import MAX_PEOPLE_PER_MEMBER, HouseholdAnswer, MemberChoice


class GuestLoginForm(forms.Form):
    code = forms.CharField(
        label=_("Personal code"),
        max_length=32,
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


COMING, NOT_COMING = "yes", "no"
ATTENDING_CHOICES = [(COMING, _("Coming")), (NOT_COMING, _("Not coming"))]


class MemberAnswerForm(EventQuestionsMixin, forms.Form):
    """One member's row of the household form: coming or not, how many people, dietary needs, questions."""

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

    def __init__(self, *args, member: Guest, questions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.member = member
        self.add_question_fields(questions)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("attending") == COMING and not cleaned.get("num_guests"):
            self.add_error("num_guests", _("Tell us how many people are coming (at least 1)."))
        if cleaned.get("attending") == NOT_COMING:
            cleaned["num_guests"] = 0
        return cleaned

    @property
    def is_coming(self) -> bool:
        value = self.cleaned_data.get("attending") if self.is_bound and hasattr(self, "cleaned_data") else None
        if value is None:
            value = self["attending"].value()
        return value == COMING

    def choice(self) -> MemberChoice:
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
        kwargs.setdefault("initial", [member_initial(m) for m in members])
        super().__init__(*args, **kwargs)

    def total_form_count(self):
        return len(self.members)

    def get_form_kwargs(self, index):
        return {"member": self.members[index], "questions": self.questions}

    def answer(self, *, confirmed: bool) -> HouseholdAnswer:
        return HouseholdAnswer(members=tuple(form.choice() for form in self.forms), confirmed=confirmed)

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


HouseholdFormSet = forms.formset_factory(MemberAnswerForm, formset=BaseHouseholdFormSet, extra=0)


def member_initial(member: Guest) -> dict:
    """A row prefilled from the member's answer; someone who has not answered yet is prefilled as coming with
    the invitation's number. A declined member stays "not coming" until the person answering switches them."""
    initial = {
        "attending": NOT_COMING if member.status == Guest.Status.DECLINED else COMING,
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

from django import forms
from django.utils.translation import gettext_lazy as _

from eventsaas.forms import EventQuestionsMixin
from guests.codes import CODE_LENGTH


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


ATTENDING_CHOICES = [("yes", _("Yes, we are coming")), ("no", _("Sorry, I can't come"))]


class RsvpForm(EventQuestionsMixin, forms.Form):
    attending = forms.ChoiceField(label=_("Are you coming?"), choices=ATTENDING_CHOICES, widget=forms.RadioSelect)
    num_guests = forms.IntegerField(
        label=_("How many people are coming, you included?"), min_value=0, max_value=50, required=False
    )
    dietary = forms.CharField(
        label=_("Dietary needs or allergies"),
        required=False,
        max_length=1000,
        widget=forms.Textarea(attrs={"rows": 2}),
    )
    absent = forms.MultipleChoiceField(
        label=_("Who is not coming?"), required=False, widget=forms.CheckboxSelectMultiple
    )
    confirmed = forms.BooleanField(required=False, widget=forms.HiddenInput)

    def __init__(self, *args, members=(), questions=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["absent"].choices = [(str(m.pk), m.full_name) for m in members]
        self.add_question_fields(questions)

    def clean(self):
        cleaned = super().clean()
        if cleaned.get("attending") == "yes" and not cleaned.get("num_guests"):
            self.add_error("num_guests", _("Tell us how many of you are coming (at least 1)."))
        return cleaned

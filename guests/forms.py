import uuid

from django import forms
from django.core.validators import MinValueValidator
from django.utils.translation import gettext_lazy as _

from guests.models import Guest


class GuestForm(forms.ModelForm):
    class Meta:
        model = Guest
        fields = ["first_name", "last_name", "email", "phone", "expected_guests", "dietary"]
        widgets = {"dietary": forms.Textarea(attrs={"rows": 2})}

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # The model's MinValueValidator runs in the service; this also sets min="1" on the input.
        self.fields["expected_guests"].min_value = 1
        self.fields["expected_guests"].widget.attrs["min"] = 1
        self.fields["expected_guests"].validators.append(MinValueValidator(1))

    def _post_clean(self):
        # Model validation runs in the service.
        pass


class GroupConnectForm(forms.Form):
    guests = forms.TypedMultipleChoiceField(label=_("Guests"), choices=(), coerce=str)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Choices are validated by the service against the event; accept any submitted id here.
        self.fields["guests"].choices = [(v, v) for v in (self.data.getlist("guests") if self.data else [])]

    def clean_guests(self):
        ids = []
        for raw in self.cleaned_data["guests"]:
            try:
                ids.append(uuid.UUID(raw))
            except ValueError:
                raise forms.ValidationError(_("Choose guests from the list.")) from None
        if len(set(ids)) < 2:
            raise forms.ValidationError(_("Select at least two guests to put in one group."))
        return ids


class GuestImportForm(forms.Form):
    file = forms.FileField(
        label=_("Guest list file"),
        help_text=_("A .csv (UTF-8, comma or semicolon) or .xlsx file whose first row names the columns."),
        widget=forms.ClearableFileInput(attrs={"accept": ".csv,.xlsx,text/csv"}),
    )

import uuid

from django import forms
from django.core.validators import MinValueValidator
from django.utils.translation import gettext_lazy as _

from guests.models import Guest
from guests.party_import import MAX_FILE_BYTES


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


class PartyImportForm(forms.Form):
    """The party app's export, and the mapping file of an earlier run (guests.party_import)."""

    file = forms.FileField(
        label=_("Guest documents (JSON)"),
        help_text=_("The export of the party app's guests: mongoexport --jsonArray."),
        widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
    )
    mapping = forms.FileField(
        label=_("Mapping of an earlier import (optional)"),
        help_text=_("The mapping file this page gave you last time: the same guests are updated, never added twice."),
        required=False,
        widget=forms.ClearableFileInput(attrs={"accept": ".json,application/json"}),
    )

    def _read(self, name: str) -> bytes | None:
        upload = self.cleaned_data.get(name)
        if upload is None:
            return None
        if upload.size > MAX_FILE_BYTES:
            raise forms.ValidationError(
                _("The file is larger than %(limit)s MB.") % {"limit": MAX_FILE_BYTES // (1024 * 1024)}
            )
        return upload.read()

    def clean_file(self) -> bytes | None:
        return self._read("file")

    def clean_mapping(self) -> bytes | None:
        return self._read("mapping")

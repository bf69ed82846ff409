"""Forms of the organizer's billing pages; amounts are typed as decimals (eventsaas.money)."""

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from eventsaas.forms import AmountField
from eventsaas.money import amount_to_minor_units


class RefundForm(forms.Form):
    amount = AmountField(
        label=_("Amount to refund"),
        required=False,
        help_text=_("Leave empty to refund everything that is left."),
    )
    # A refund cannot be taken back: the box is the confirmation step, and it works without JavaScript.
    confirm = forms.BooleanField(
        label=_("Yes, refund: the money goes back to the buyer and the tickets it covers are voided."),
        error_messages={"required": _("Tick the box to confirm the refund; nothing was refunded.")},
    )

    def __init__(self, *args, currency: str, **kwargs):
        super().__init__(*args, **kwargs)
        self.currency = currency

    def clean_amount(self):
        amount = self.cleaned_data["amount"]
        if amount is None:
            return None
        minor = amount_to_minor_units(amount, self.currency)
        if minor <= 0:
            raise ValidationError(_("Enter an amount above zero."), code="min_value")
        return minor


class CheckInForm(forms.Form):
    # Scanners type the code and press Enter; people type it with or without dashes, in any case.
    code = forms.CharField(
        label=_("Ticket code"),
        max_length=64,
        widget=forms.TextInput(
            attrs={
                "autofocus": True,
                "autocomplete": "off",
                "autocapitalize": "characters",
                "autocorrect": "off",
                "spellcheck": "false",
                "enterkeyhint": "go",
                "placeholder": "ABCD-EFGH-JKLM-NPQR",
                "class": "check-in-code",
            }
        ),
        error_messages={"required": _("Scan or type a ticket code.")},
    )

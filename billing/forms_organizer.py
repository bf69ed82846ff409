"""Forms of the organizer's billing pages, and the money input shared with the ticket type form.

Amounts are typed as decimals ("25.00", or "25,00") and stored in integer minor
units; the conversion is exact (Decimal, never float) and refuses what a
currency cannot hold (a third decimal, or any decimal for yen).
"""

import re
from decimal import Decimal

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

from billing.services import ZERO_DECIMAL_CURRENCIES

# Seven whole digits keep every amount (in minor units) inside a PositiveIntegerField.
AMOUNT_PATTERN = re.compile(r"^(?P<whole>\d{1,7})(?:[.,](?P<fraction>\d+))?$")

CURRENCY_CHOICES = [
    ("eur", _("EUR — euro")),
    ("usd", _("USD — US dollar")),
    ("gbp", _("GBP — pound sterling")),
    ("chf", _("CHF — Swiss franc")),
    ("jpy", _("JPY — Japanese yen")),
    ("sek", _("SEK — Swedish krona")),
    ("nok", _("NOK — Norwegian krone")),
    ("dkk", _("DKK — Danish krone")),
    ("pln", _("PLN — Polish złoty")),
    ("cad", _("CAD — Canadian dollar")),
    ("aud", _("AUD — Australian dollar")),
    ("mxn", _("MXN — Mexican peso")),
]


def decimals_of(currency: str) -> int:
    return 0 if (currency or "").lower() in ZERO_DECIMAL_CURRENCIES else 2


def amount_parse(text: str) -> Decimal:
    """The amount typed, as an exact Decimal; ValidationError for anything but digits and one separator."""
    match = AMOUNT_PATTERN.match((text or "").strip())
    if match is None:
        raise ValidationError(_("Enter an amount such as 25.00."), code="invalid")
    if match["fraction"] and len(match["fraction"]) > 2:
        raise ValidationError(_("Use at most two decimals."), code="max_decimal_places")
    return Decimal(f"{match['whole']}.{match['fraction'] or '0'}")


def amount_to_minor_units(amount: Decimal, currency: str) -> int:
    """25.00 EUR -> 2500, 2500 JPY -> 2500. Exact: the amount already has at most two decimals."""
    places = decimals_of(currency)
    minor = amount.scaleb(places)
    if minor != minor.to_integral_value():
        raise ValidationError(
            _("%(currency)s has no decimals; enter a whole amount.") % {"currency": currency.upper()},
            code="max_decimal_places",
        )
    return int(minor)


def minor_units_to_text(amount: int | None, currency: str) -> str:
    """2500, "eur" -> "25.00": how the form shows a stored amount (integer arithmetic only)."""
    if amount is None:
        return ""
    if decimals_of(currency) == 0:
        return str(amount)
    whole, cents = divmod(amount, 100)
    return f"{whole}.{cents:02d}"


class AmountField(forms.CharField):
    """A decimal amount as typed; the form converts it to minor units once it knows the currency."""

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", 20)
        super().__init__(**kwargs)
        self.widget.attrs.update({"inputmode": "decimal", "autocomplete": "off"})

    def clean(self, value):
        text = super().clean(value)  # required and max_length apply to the text typed
        return None if text in self.empty_values else amount_parse(text)


class RefundForm(forms.Form):
    amount = AmountField(
        label=_("Amount to refund"),
        required=False,
        help_text=_("Leave empty to refund everything that is left."),
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

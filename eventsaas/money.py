"""Money: integer minor units stored, decimal text typed, shown per locale (Decimal and integers, never float).

Shared by ticket types (events), orders and refunds (billing), their pages, emails and the admin.
Organizers type amounts the same way in every language ("25.00" or "25,00"); what is shown follows the
reader's language through Babel ("€25.00" in English, "25,00 €" in Spanish). The API keeps integer minor
units and the currency code.
"""

import re
from decimal import Decimal

from babel.numbers import format_currency
from django.conf import settings
from django.core.exceptions import ValidationError
from django.utils import translation
from django.utils.translation import gettext_lazy as _

# ISO 4217 currencies Stripe counts in whole units (no cents).
ZERO_DECIMAL_CURRENCIES = frozenset("bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf".split())

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


def minor_units_to_decimal(amount: int, currency: str) -> Decimal:
    """2500, "eur" -> Decimal("25.00"); 2500, "jpy" -> Decimal("2500"). Exact: only the exponent moves."""
    return Decimal(amount).scaleb(-decimals_of(currency))


def money_format(amount: int, currency: str, *, locale: str | None = None) -> str:
    """2500, "eur" -> "€25.00" in English, "25,00 €" in Spanish; 2500, "jpy" -> "¥2,500" in English.

    `locale` is a language code ("es", "en-gb"); without it the active language is used, so a page or an
    email rendered under `translation.override` shows its own. Spaces inside the result are non-breaking.
    """
    language = locale or translation.get_language() or settings.LANGUAGE_CODE
    return format_currency(
        minor_units_to_decimal(amount, currency), currency.upper(), locale=translation.to_locale(language)
    )

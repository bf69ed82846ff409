"""Money shown per locale (Babel), from exact integer minor units; what organizers type is read as before."""

import pytest
from babel.numbers import get_currency_precision
from django.utils import translation

from eventsaas.money import CURRENCY_CHOICES, amount_parse, amount_to_minor_units, decimals_of, money_format

NBSP = "\xa0"


@pytest.mark.parametrize(
    ("language", "shown"),
    [("en", "€25.00"), ("es", f"25,00{NBSP}€")],
)
def test_an_amount_is_shown_in_the_active_language(language, shown):
    with translation.override(language):
        assert money_format(2500, "eur") == shown


@pytest.mark.parametrize(
    ("language", "shown"),
    [("en", "¥2,500"), ("es", f"2.500{NBSP}JPY")],
)
def test_a_currency_without_decimals_shows_none(language, shown):
    assert money_format(2500, "jpy", locale=language) == shown


def test_an_explicit_locale_wins_over_the_active_language():
    """Emails go out in the buyer's language whatever language the sending code runs in."""
    with translation.override("en"):
        assert money_format(6000, "eur", locale="es") == f"60,00{NBSP}€"
    with translation.override("es"):
        assert money_format(6000, "eur", locale="en") == "€60.00"


def test_a_regional_language_code_is_understood():
    assert money_format(123456, "usd", locale="en-us") == "$1,234.56"


def test_negative_and_zero_amounts():
    assert money_format(-150, "usd", locale="en") == "-$1.50"
    assert money_format(0, "eur", locale="es") == f"0,00{NBSP}€"


def test_large_amounts_stay_exact():
    # 2**53 + 1 minor units: a float would show ...409.92.
    assert money_format(2**53 + 1, "eur", locale="en") == "€90,071,992,547,409.93"


@pytest.mark.parametrize("currency", [code for code, _label in CURRENCY_CHOICES])
def test_babel_and_stripe_agree_on_the_decimals_of_every_offered_currency(currency):
    """Amounts are stored in Stripe's minor units; Babel must print the same number of decimals."""
    assert get_currency_precision(currency.upper()) == decimals_of(currency)


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("typed", ["25.00", "25,00", "25"])
def test_organizers_type_amounts_the_same_way_in_every_language(language, typed):
    with translation.override(language):
        assert amount_to_minor_units(amount_parse(typed), "eur") == 2500

"""Names may hold any letters and spaces, but no control characters: tabs and line breaks split a name across
an export's cells and lines, and direction overrides make it print reversed."""

import pytest
from django.core.exceptions import ValidationError
from django.utils import translation

from eventsaas.validators import has_control_character, validate_no_control_characters

REFUSED = [
    "Ann\tLee",  # tab
    "Ann\nLee",  # line feed
    "Ann\r\nLee",
    "Ann\x00",  # NUL
    "Ann\x07",  # bell
    "Ann\x1b[31m",  # an ANSI escape sequence
    "Ann\x7f",  # DEL
    "Ann\x85Lee",  # NEL, a C1 control
    "Ann\u2028Lee",  # line separator
    "Ann\u202eeeL",  # right-to-left override: shows as "AnnLee" reversed
    "\u2066Ann\u2069",  # isolates
]
ALLOWED = [
    "Ann Lee",
    "Ana María López",
    "Jean-Luc O'Neil",
    "Ann\u00a0Lee",  # a no-break space is a space
    "Zoë",
    "محمد",
    "می\u200cخواهم",  # a zero-width non-joiner is ordinary Persian spelling
    "👩\u200d👩\u200d👧",  # a zero-width joiner builds one emoji
    "李小龙",
    "",
]


@pytest.mark.parametrize("value", REFUSED)
def test_control_characters_and_direction_overrides_are_refused(value):
    assert has_control_character(value)
    with pytest.raises(ValidationError) as refused:
        validate_no_control_characters(value)
    assert refused.value.code == "control_characters"


@pytest.mark.parametrize("value", ALLOWED)
def test_names_in_any_script_with_spaces_and_joiners_are_allowed(value):
    assert not has_control_character(value)
    validate_no_control_characters(value)


def test_the_message_is_translated():
    with translation.override("es"), pytest.raises(ValidationError) as refused:
        validate_no_control_characters("Ann\tLee")
    with translation.override("es"):
        message = str(refused.value.messages[0])

    assert message.startswith("Quita los caracteres de control")

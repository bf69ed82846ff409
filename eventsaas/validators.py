"""Validators shared by the apps' models, forms and imports."""

import unicodedata

from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _

# Format characters that reorder the text around them (bidirectional embeddings, overrides and isolates):
# a name holding U+202E shows reversed, in lists, emails and exports alike. Other format characters stay
# allowed: the zero-width joiners (U+200C, U+200D) are part of ordinary Persian, Indic and emoji spelling.
_BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
# Line and paragraph separators break a line as a newline does.
_LINE_SEPARATORS = frozenset("\u2028\u2029")


def has_control_character(value: str) -> bool:
    """Whether `value` holds a control character (Unicode category Cc: NUL, tab, newline, DEL, C1 controls...),
    a bidirectional control or a line separator. Spaces, including no-break spaces, are ordinary text."""
    return any(
        unicodedata.category(char) == "Cc" or char in _BIDI_CONTROLS or char in _LINE_SEPARATORS for char in value
    )


def validate_no_control_characters(value: str) -> None:
    """Refuse text with control characters: tabs and line breaks split a name across cells and lines of an
    export, and invisible ones make two names look alike or print reversed."""
    if has_control_character(value):
        raise ValidationError(
            _("Remove the control characters (tabs, line breaks or invisible direction marks) from this text."),
            code="control_characters",
        )

"""Cells written to CSV and Excel files that people open in a spreadsheet program.

A text cell that starts with `=`, `+`, `-`, `@`, a tab or a carriage return is read as a formula by
Excel, LibreOffice or Google Sheets (OWASP "CSV Injection"): a guest named `=HYPERLINK(...)` would run
in the organizer's spreadsheet. `neutralise` prefixes such text with a single quote, which the
programs show as text and never evaluate; `strip_neutralising_quote` undoes it when a file written
this way is read back (an import).

The same names and behaviour as the exports' module of issue #16 (h16export), of which this is the
part the guest import needs.
"""

# OWASP's list: a cell starting with one of these is read as a formula by some spreadsheet program.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(value: object) -> object:
    """Text a spreadsheet would run as a formula, prefixed with a single quote; any other value unchanged.

    `"=1+1"` -> `"'=1+1"`, `"-1"` -> `"'-1"`, `"@SUM(A1)"` -> `"'@SUM(A1)"`; `-1` (a number) stays a number.
    """
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def strip_neutralising_quote(text: str) -> str:
    """The text `neutralise` was given: an export read back (an import) gets "+41 79 123 45 67", not "'+41 ..."."""
    if text.startswith("'") and text[1:].startswith(FORMULA_TRIGGERS):
        return text[1:]
    return text

"""Cells written to CSV and Excel files that people open in a spreadsheet program.

A cell that starts with `=`, `+`, `-` or `@` (or a tab or carriage return, which some programs
skip before reading one of those) is read as a formula by Excel, LibreOffice and Google Sheets:
a guest named `=HYPERLINK(...)` would run in the organizer's spreadsheet (OWASP "CSV Injection").
Such a cell gets a leading apostrophe, which the programs show as text and never evaluate.
"""

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(value: object) -> object:
    """The value to write in a cell: text that a spreadsheet would evaluate is prefixed with `'`."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value

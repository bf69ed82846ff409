"""Dates people type stay between the years 1900 and 2200, and every stored date can be shown.

Python's datetimes end at the years 1 and 9999: a date near either end, moved
into a far-off time zone (UTC+14, UTC-11), no longer exists, and converting it
raises OverflowError, in a form, in the database adapter or while a page
renders. Nobody plans an event outside 1900-2200, so forms, the API and the
models refuse such dates (`validate_sane_datetime`); rows stored before that
rule are repaired by `manage.py repair_dates`, and until then the pages show
them in UTC (`event_local`) instead of failing.
"""

import datetime as dt

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

MIN_YEAR = 1900
MAX_YEAR = 2200
# The bounds as aware datetimes (UTC), for queries that look for rows outside them.
EARLIEST = dt.datetime(MIN_YEAR, 1, 1, tzinfo=dt.UTC)
LATEST = dt.datetime(MAX_YEAR, 12, 31, 23, 59, 59, tzinfo=dt.UTC)

OUT_OF_RANGE_MESSAGE = _("Enter a date between the years %(min)s and %(max)s.")


def is_sane_datetime(value) -> bool:
    """Whether `value` (naive or aware) lies within the years MIN_YEAR..MAX_YEAR, also once in UTC."""
    if not isinstance(value, dt.datetime):
        return True
    if not MIN_YEAR <= value.year <= MAX_YEAR:
        return False
    if timezone.is_aware(value):
        try:
            utc = value.astimezone(dt.UTC)
        except OverflowError:
            return False
        return EARLIEST <= utc <= LATEST
    return True


def validate_sane_datetime(value) -> None:
    """Model and form validator: a date outside 1900-2200 is a typing mistake, refused with a field error."""
    if not is_sane_datetime(value):
        raise ValidationError(OUT_OF_RANGE_MESSAGE, code="date_out_of_range", params={"min": MIN_YEAR, "max": MAX_YEAR})


def event_local(value, tz=None):
    """`value` in the time zone `tz` (or the current one); in UTC, without a zone, when that date does not exist.

    For showing stored dates only: a row from before the range rule renders
    instead of failing the whole page, so the organizer can open and fix it.
    """
    if not isinstance(value, dt.datetime) or timezone.is_naive(value):
        return value
    try:
        return timezone.localtime(value, tz)
    except OverflowError:
        pass
    try:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    except OverflowError:
        return value.replace(tzinfo=None)

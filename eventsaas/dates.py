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
import functools
import importlib.resources
import zoneinfo

from django.core.exceptions import ValidationError
from django.utils import timezone, translation
from django.utils.dateformat import format as date_format
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


# Formats for dates shown to organizers and guests: weekday, day, month and a 24-hour clock,
# the way an invitation reads ("Sat 5 Dec 2026, 22:00 CET"); names follow the active language.
_DAY_FORMAT = "D j M Y"
_DAY_FORMAT_SAME_YEAR = "D j M"
_TIME_FORMAT = "H:i"
# Django's "M" capitalises the month ("Dic"), right in English and wrong in languages that write
# month names in lower case within a sentence ("sáb 5 dic 2026"); those take "b", its lower-case twin.
_LOWER_CASE_MONTHS = frozenset({"ca", "es", "fr", "it", "nl", "pt"})


def _day_format(day_format: str) -> str:
    if (translation.get_language() or "en").split("-")[0] in _LOWER_CASE_MONTHS:
        return day_format.replace("M", "b")
    return day_format


def zone_label(value: dt.datetime) -> str:
    """The short name of `value`'s zone at that moment ("CET", "CEST", "UTC"), else the zone's IANA name.

    tzdata gives many zones only a numeric abbreviation ("+03", "-05"), which reads like an
    offset typo; those show the zone's name in parentheses instead ("(Europe/Istanbul)").
    """
    if not isinstance(value, dt.datetime) or timezone.is_naive(value):
        return "UTC"
    abbreviation = value.tzname() or ""
    if abbreviation.isalpha():
        return abbreviation
    key = getattr(value.tzinfo, "key", None) or str(value.tzinfo)
    return f"({key})"


def zone_from(tz: "dt.tzinfo | str | None") -> "dt.tzinfo | None":
    """A zone from its IANA name (UTC for an unknown one), or `tz` itself."""
    if isinstance(tz, str):
        try:
            return zoneinfo.ZoneInfo(tz)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            return dt.UTC
    return tz


def _formatted(local: dt.datetime, day_format: str) -> str:
    return f"{date_format(local, _day_format(day_format))}, {date_format(local, _TIME_FORMAT)}"


def format_event_datetime(value, tz: "dt.tzinfo | str | None" = None, *, with_label: bool = True) -> str:
    """One moment in the event's zone, with the zone: "Sat 5 Dec 2026, 22:00 CET"; "" for no date."""
    if not isinstance(value, dt.datetime):
        return "" if value is None else str(value)
    local = event_local(value, zone_from(tz))
    text = _formatted(local, _DAY_FORMAT)
    if with_label:
        text = f"{text} {zone_label(local)}"
    return text


def format_event_day(value, tz: "dt.tzinfo | str | None" = None) -> str:
    """Only the day, in the event's (or page's) zone: "Sat 5 Dec 2026"; "" for no date."""
    if not isinstance(value, dt.datetime):
        return ""
    return date_format(event_local(value, zone_from(tz)), _day_format(_DAY_FORMAT))


def format_event_clock(value, tz: "dt.tzinfo | str | None" = None) -> str:
    """The time of day in the event's zone, with the zone: "18:30 CET"; "" for no date."""
    if not isinstance(value, dt.datetime):
        return ""
    local = event_local(value, zone_from(tz))
    return f"{date_format(local, _TIME_FORMAT)} {zone_label(local)}"


def format_event_range(starts_at, ends_at=None, tz: "dt.tzinfo | str | None" = None) -> str:
    """An event's time span in its zone, both dates when it crosses midnight, the zone once at the end.

    "Sat 5 Dec 2026, 18:00 – 23:00 CET"; "Sat 5 Dec 2026, 22:00 – Sun 6 Dec, 02:00 CET";
    across a change of clocks each end carries its own label ("… 22:00 CEST – Sun 25 Oct, 02:00 CET").
    The one helper for event pages, emails and the guest's page.
    """
    if not isinstance(starts_at, dt.datetime):
        return ""
    zone = zone_from(tz)
    start = event_local(starts_at, zone)
    if not isinstance(ends_at, dt.datetime):
        return format_event_datetime(starts_at, zone)
    end = event_local(ends_at, zone)
    start_label, end_label = zone_label(start), zone_label(end)
    start_text = _formatted(start, _DAY_FORMAT)
    if start_label != end_label:
        start_text = f"{start_text} {start_label}"
    if end.date() == start.date():
        end_text = date_format(end, _TIME_FORMAT)
    else:
        end_text = _formatted(end, _DAY_FORMAT_SAME_YEAR if end.year == start.year else _DAY_FORMAT)
    return f"{start_text} – {end_text} {end_label}"


@functools.cache
def canonical_time_zones() -> tuple[str, ...]:
    """The zones people choose from: tzdata's zone.tab (one or more per country, no aliases), and UTC.

    `zoneinfo.available_timezones()` also lists about 150 deprecated links ("US/Pacific",
    "Asia/Calcutta", "GB"); zone.tab names every place by its canonical name. Falls back
    to the system's copy when the tzdata package is absent.
    """
    try:
        text = importlib.resources.files("tzdata").joinpath("zoneinfo", "zone.tab").read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        text = _system_zone_tab()
    names = {line.split("\t")[2] for line in text.splitlines() if line and not line.startswith("#")}
    return ("UTC", *sorted(names))


def _system_zone_tab() -> str:
    for directory in zoneinfo.TZPATH:
        try:
            with open(f"{directory}/zone.tab", encoding="utf-8") as file:
                return file.read()
        except OSError:
            continue
    return ""

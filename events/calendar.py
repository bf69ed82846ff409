"""An event as an iCalendar file (.ics), for the invitation and tickets emails and the guest's page.

One builder, so every copy of an event that reaches a calendar is the same entry:

- UID is the event's own (`event-<id>@<site host>`): a second invitation, the tickets email or the
  download from the guest's page updates the entry already in the calendar instead of adding another.
  SEQUENCE and LAST-MODIFIED grow with the event's `updated_at`, so the newer copy wins.
- Times are the event's wall-clock times with its TZID, and the calendar carries the matching
  VTIMEZONE. Google Calendar and Apple Calendar read the IANA name of TZID; Outlook reads the
  VTIMEZONE (it refuses a TZID it has no definition for). Either way the entry keeps the event's
  zone: a guest who travels sees "18:00 Madrid time", not a converted time without a zone, and an
  edit in the calendar app keeps the event's zone. UTC times would be read correctly too, but lose
  that. A stored date that does not exist in the zone (before the years 1900-2200 rule,
  eventsaas.dates) is written in UTC instead, which every calendar reads.
- METHOD:PUBLISH: an entry to add, not a meeting request that expects a reply.
- No DTEND when the organizer gave no end: RFC 5545 then ends the event at its start; inventing a
  length would tell guests a time nobody chose.
"""

import datetime as dt
import re
from urllib.parse import urlencode, urlsplit

import icalendar
from django.conf import settings
from django.utils import timezone

from events.models import Event
from eventsaas.dates import MAX_YEAR, MIN_YEAR
from eventsaas.dates import event_local as _event_local
from eventsaas.mail import header_safe, site_sender_address

PRODUCT_ID = "-//eventsaas//eventsaas//EN"
# VTIMEZONE rules cover a year either side of the event: enough for the entry and for someone who
# moves it in their calendar app, without the zone's whole history.
_ZONE_MARGIN = dt.timedelta(days=366)
# SEQUENCE counts seconds from here: it grows with every change of the event and fits in the 32 bits
# calendar apps read until 2088. Two copies of the same version are told apart by DTSTAMP (RFC 5546).
_SEQUENCE_EPOCH = dt.datetime(2020, 1, 1, tzinfo=dt.UTC)


def event_calendar_uid(event: Event) -> str:
    """The entry's UID: the same for every copy of this event, whoever receives it."""
    host = urlsplit(settings.SITE_URL).hostname or "eventsaas"
    return f"event-{event.pk}@{host}"


def event_calendar_filename(event: Event) -> str:
    """`<slug>.ics`, in the letters a header's file name takes without quoting."""
    return f"{re.sub(r'[^A-Za-z0-9_-]', '', event.slug) or 'event'}.ics"


# Zones that are UTC under another name: their times are written as UTC ("…Z"), without a VTIMEZONE.
_UTC_NAMES = frozenset({"UTC", "Etc/UTC", "Etc/UCT", "Etc/Universal", "Etc/Zulu", "UCT", "Universal", "Zulu"})


def _calendar_time(value: dt.datetime, zone: dt.tzinfo) -> dt.datetime:
    """`value` on the event's clock; in UTC when that date does not exist there."""
    if getattr(zone, "key", None) in _UTC_NAMES:
        zone = dt.UTC
    local = _event_local(value, zone)
    return local if timezone.is_aware(local) else local.replace(tzinfo=dt.UTC)


def _sequence(event: Event) -> int:
    changed = event.updated_at or event.created_at
    return max(int((changed - _SEQUENCE_EPOCH).total_seconds()), 0) if changed else 0


def _clamped_date(value: dt.datetime, delta: dt.timedelta) -> dt.date:
    try:
        moved = value + delta
    except OverflowError:
        moved = value
    low, high = dt.date(MIN_YEAR, 1, 1), dt.date(MAX_YEAR, 12, 31)
    return min(max(moved.date(), low), high)


def event_calendar(*, event: Event, link: str, link_label: str, now: dt.datetime | None = None) -> bytes:
    """The event as an .ics file: one VEVENT, in the event's zone, with `link` as its URL.

    `link_label` names the link in the description, in the reader's language ("Your invitation");
    the caller renders it inside the event's language.
    """
    zone = event.tzinfo
    starts_at = _calendar_time(event.starts_at, zone)
    ends_at = _calendar_time(event.ends_at, zone) if event.ends_at else None

    entry = icalendar.Event()
    entry.add("uid", event_calendar_uid(event))
    entry.add("dtstamp", (now or timezone.now()).astimezone(dt.UTC))
    entry.add("sequence", _sequence(event))
    if event.updated_at:
        entry.add("last-modified", event.updated_at.astimezone(dt.UTC))
    entry.add("summary", event.name)
    entry.add("dtstart", starts_at)
    if ends_at is not None:
        entry.add("dtend", ends_at)
    if event.location:
        entry.add("location", event.location)
    description = "\n\n".join(part for part in (event.description.strip(), f"{link_label}: {link}") if part)
    entry.add("description", description)
    entry.add("url", link)
    organizer = icalendar.vCalAddress(f"mailto:{event.contact_email or site_sender_address()}")
    organizer.params["cn"] = icalendar.vText(header_safe(event.tenant.name))
    entry.add("organizer", organizer)

    calendar = icalendar.Calendar()
    calendar.add("prodid", PRODUCT_ID)
    calendar.add("version", "2.0")
    calendar.add("calscale", "GREGORIAN")
    calendar.add("method", "PUBLISH")
    calendar.add_component(entry)
    if starts_at.tzinfo is not dt.UTC:
        calendar.add_missing_timezones(
            first_date=_clamped_date(starts_at, -_ZONE_MARGIN),
            last_date=_clamped_date(ends_at or starts_at, _ZONE_MARGIN),
        )
    return calendar.to_ical()


def _google_time(value: dt.datetime) -> str:
    return value.astimezone(dt.UTC).strftime("%Y%m%dT%H%M%SZ")


def google_calendar_url(*, event: Event, link: str) -> str:
    """A link that opens Google Calendar's "new event" form filled with this event (no code in it)."""
    ends_at = event.ends_at or event.starts_at
    try:
        dates = f"{_google_time(event.starts_at)}/{_google_time(ends_at)}"
    except (OverflowError, ValueError):
        return ""
    details = "\n\n".join(part for part in (event.description.strip(), link) if part)
    query = {"action": "TEMPLATE", "text": event.name, "dates": dates, "ctz": event.timezone, "details": details}
    if event.location:
        query["location"] = event.location
    return "https://calendar.google.com/calendar/render?" + urlencode(query)

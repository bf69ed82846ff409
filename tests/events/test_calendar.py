"""events.calendar: the one .ics builder (UTC events, dates outside the zone's range, the Google link)."""

import datetime as dt
from urllib.parse import parse_qs, urlsplit

import icalendar
import pytest

from events.calendar import event_calendar, google_calendar_url
from events.models import Event
from tests.factories import EventFactory

pytestmark = pytest.mark.django_db


def _entry(event) -> tuple[icalendar.Calendar, icalendar.Event]:
    calendar = icalendar.Calendar.from_ical(event_calendar(event=event, link="https://x.example/rsvp/", link_label="L"))
    [entry] = calendar.walk("VEVENT")
    return calendar, entry


def test_a_utc_event_is_written_in_utc_without_a_zone_definition(tenant):
    event = EventFactory(tenant=tenant, timezone="UTC", starts_at=dt.datetime(2031, 1, 2, 9, 0, tzinfo=dt.UTC))

    calendar, entry = _entry(event)

    assert entry["DTSTART"].to_ical() == b"20310102T090000Z"
    assert calendar.walk("VTIMEZONE") == []


def test_a_stored_date_that_does_not_exist_in_the_events_zone_is_written_in_utc(tenant):
    event = EventFactory(tenant=tenant, timezone="Pacific/Kiritimati")
    far = dt.datetime(9999, 12, 31, 23, 59, tzinfo=dt.UTC)  # 14 hours later is past year 9999
    Event.objects.filter(pk=event.pk).update(starts_at=far, ends_at=far)
    event.refresh_from_db()

    _calendar, entry = _entry(event)

    assert entry.decoded("DTSTART") == far


def test_the_description_keeps_the_events_text_and_names_the_link(tenant):
    event = EventFactory(tenant=tenant, description="Bring a dish\nand a chair")

    _calendar, entry = _entry(event)

    assert str(entry["DESCRIPTION"]) == "Bring a dish\nand a chair\n\nL: https://x.example/rsvp/"


def test_the_google_link_carries_utc_times_and_the_events_zone(tenant):
    event = EventFactory(
        tenant=tenant,
        timezone="America/New_York",
        starts_at=dt.datetime(2031, 3, 1, 23, 0, tzinfo=dt.UTC),
        ends_at=None,
        location="Brooklyn",
    )

    query = parse_qs(urlsplit(google_calendar_url(event=event, link="https://x.example/rsvp/")).query)

    assert query["dates"] == ["20310301T230000Z/20310301T230000Z"]
    assert query["ctz"] == ["America/New_York"] and query["location"] == ["Brooklyn"]
    assert query["details"] == ["https://x.example/rsvp/"]

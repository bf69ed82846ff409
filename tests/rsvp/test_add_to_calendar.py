"""Add to calendar on the guest's page: the event's .ics for its own logged-in guests only, no code in it."""

import datetime as dt
import html
import zoneinfo
from urllib.parse import parse_qs, urlsplit

import icalendar
import pytest

from events.calendar import event_calendar_uid
from tests.factories import EventFactory, GuestFactory

pytestmark = pytest.mark.django_db

MADRID = zoneinfo.ZoneInfo("Europe/Madrid")


@pytest.fixture
def gala(tenant):
    return EventFactory(
        tenant=tenant,
        name="Gala de verano",
        slug="gala",
        starts_at=dt.datetime(2031, 7, 4, 21, 0, tzinfo=MADRID),
        ends_at=dt.datetime(2031, 7, 5, 2, 0, tzinfo=MADRID),
        rsvp_deadline=dt.datetime(2031, 6, 20, 12, 0, tzinfo=MADRID),
        location="Palacio, Sevilla",
    )


@pytest.fixture
def ana(gala):
    return GuestFactory(event=gala, first_name="Ana", last_name="Ruiz")


def _login(client, guest):
    assert client.post("/rsvp/", {"code": guest.code, "last_name": guest.last_name}).status_code == 302
    return client


def _calendar_url(event) -> str:
    return f"/rsvp/events/{event.pk}/calendar.ics"


def test_the_guests_page_links_to_the_events_calendar_file_and_google_calendar(client, ana, gala):
    page = html.unescape(_login(client, ana).get("/rsvp/answer/").content.decode())

    assert f'href="{_calendar_url(gala)}"' in page
    google = next(part for part in page.split('"') if part.startswith("https://calendar.google.com/"))
    query = parse_qs(urlsplit(google).query)
    assert query["text"] == ["Gala de verano"] and query["ctz"] == ["Europe/Madrid"]
    assert query["dates"] == ["20310704T190000Z/20310705T000000Z"]
    assert ana.code not in google


def test_a_logged_in_guest_downloads_the_event_in_its_zone(client, ana, gala, settings):
    settings.SITE_URL = "https://rsvp.example.org"

    response = _login(client, ana).get(_calendar_url(gala))

    assert response.status_code == 200
    assert response["Content-Type"] == "text/calendar; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="gala.ics"'
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
    [entry] = icalendar.Calendar.from_ical(response.content).walk("VEVENT")
    assert entry["DTSTART"].params["TZID"] == "Europe/Madrid"
    assert entry.decoded("DTSTART") == dt.datetime(2031, 7, 4, 19, 0, tzinfo=dt.UTC)
    assert entry.decoded("DTEND") == dt.datetime(2031, 7, 5, 0, 0, tzinfo=dt.UTC)
    assert str(entry["UID"]) == event_calendar_uid(gala)  # the same entry as the invitation's
    assert str(entry["URL"]) == "https://rsvp.example.org/rsvp/"
    assert ana.code.encode() not in response.content  # a calendar may be shared: the code stays out


def test_a_guest_of_another_event_gets_a_404(client, ana, gala, tenant):
    other = GuestFactory(event=EventFactory(tenant=tenant), last_name="Otro")

    response = _login(client, other).get(_calendar_url(gala))

    assert response.status_code == 404
    assert b"BEGIN:VCALENDAR" not in response.content


def test_an_anonymous_visitor_is_sent_to_the_login_page(client, gala):
    response = client.get(_calendar_url(gala))

    assert response.status_code == 302 and response["Location"] == "/rsvp/"


def test_the_calendar_file_is_only_read(client, ana, gala):
    assert _login(client, ana).post(_calendar_url(gala)).status_code == 405

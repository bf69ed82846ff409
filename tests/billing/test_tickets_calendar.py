"""The tickets email carries the event as a calendar file, the same entry as the guests' invitations."""

import datetime as dt
import email
import email.policy
import zoneinfo

import icalendar
import pytest
from django.core import mail

from billing.services import order_page_path
from events.calendar import event_calendar_uid
from tests.api.sweep_fixtures import paid_order
from tests.factories import TenantFactory, TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db

LISBON = zoneinfo.ZoneInfo("Europe/Lisbon")


@pytest.fixture
def tickets_email(settings, django_capture_on_commit_callbacks):
    settings.DEFAULT_FROM_EMAIL = "eventsaas <tickets@events.example.org>"
    concert = TicketedEventFactory(
        tenant=TenantFactory(name="Fado Nights"),
        name="Fado at dusk",
        timezone="Europe/Lisbon",
        starts_at=dt.datetime(2031, 9, 12, 21, 30, tzinfo=LISBON),
        ends_at=None,
        location="Alfama, Lisboa",
    )
    with django_capture_on_commit_callbacks(execute=True):
        order = paid_order(
            event=concert,
            ticket_type=TicketTypeFactory(event=concert),
            quantity=2,
            buyer_name="Rui",
            buyer_email="rui@example.com",
        )
    [message] = [m for m in mail.outbox if m.to == ["rui@example.com"]]
    return concert, order, email.message_from_bytes(message.message().as_bytes(), policy=email.policy.default)


def test_the_tickets_email_has_the_events_ics_in_lisbon_time(tickets_email, settings):
    concert, order, parsed = tickets_email

    [part] = [p for p in parsed.walk() if p.get_content_type() == "text/calendar"]
    assert part.get_content_disposition() == "attachment" and part.get_param("method") == "PUBLISH"
    calendar = icalendar.Calendar.from_ical(part.get_payload(decode=True))
    [entry] = calendar.walk("VEVENT")
    assert str(entry["UID"]) == event_calendar_uid(concert)
    assert entry["DTSTART"].params["TZID"] == "Europe/Lisbon"
    assert entry.decoded("DTSTART") == dt.datetime(2031, 9, 12, 20, 30, tzinfo=dt.UTC)
    assert "DTEND" not in entry  # no end was given: none is invented
    assert str(entry["URL"]) == settings.SITE_URL + order_page_path(order)  # the buyer's tickets page
    assert "Your tickets: " in str(entry["DESCRIPTION"])


def test_the_tickets_email_keeps_its_qr_codes_beside_the_html_and_the_calendar_file_as_an_attachment(tickets_email):
    _concert, _order, parsed = tickets_email

    # mixed[alternative[text, related[html, png, png]], calendar]: mail clients show the file, not the images.
    assert parsed.get_content_type() == "multipart/mixed"
    alternative, calendar = parsed.get_payload()
    assert (alternative.get_content_type(), calendar.get_content_type()) == ("multipart/alternative", "text/calendar")
    text, related = alternative.get_payload()
    assert (text.get_content_type(), related.get_content_type()) == ("text/plain", "multipart/related")
    assert [p.get_content_type() for p in related.get_payload()] == ["text/html", "image/png", "image/png"]
    html = related.get_payload()[0].get_content()
    for image in related.get_payload()[1:]:
        assert f"cid:{image['Content-ID'].strip('<>')}" in html


def test_the_tickets_email_comes_in_the_organizations_name(tickets_email):
    _concert, _order, parsed = tickets_email

    [sender] = parsed["From"].addresses
    assert (sender.display_name, sender.addr_spec) == ("Fado Nights", "tickets@events.example.org")

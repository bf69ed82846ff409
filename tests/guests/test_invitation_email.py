"""The invitation a guest can act on: when, where, what to wear, by when, how to answer, and a calendar file.

Sent in the organization's name (its name, the site's address), in the event's language; the .ics
attached to it is one entry per event (stable UID) in the event's zone.
"""

import datetime as dt
import email
import email.policy
import zoneinfo

import icalendar
import pytest
from django.core import mail
from django.utils import timezone

from events.calendar import event_calendar_uid
from events.models import Event
from events.services import event_update
from guests import notifications
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory

pytestmark = pytest.mark.django_db

MADRID = zoneinfo.ZoneInfo("Europe/Madrid")
SITE_SENDER = "eventsaas <invitations@events.example.org>"


@pytest.fixture(autouse=True)
def _site(settings):
    settings.SITE_URL = "https://rsvp.example.org"
    settings.DEFAULT_FROM_EMAIL = SITE_SENDER


@pytest.fixture
def boda(db):
    """A Spanish wedding in Madrid time that runs past midnight."""
    tenant = TenantFactory(name="Bodas Olivar")
    return EventFactory(
        tenant=tenant,
        name="Boda de Ana y Luis",
        slug="boda-ana-luis",
        language="es",
        timezone="Europe/Madrid",
        starts_at=dt.datetime(2031, 6, 14, 18, 30, tzinfo=MADRID),
        ends_at=dt.datetime(2031, 6, 15, 1, 0, tzinfo=MADRID),
        rsvp_deadline=dt.datetime(2031, 5, 31, 23, 59, tzinfo=MADRID),
        location="Finca El Olivar, Toledo",
        dress_code="Etiqueta",
        contact_email="",
    )


@pytest.fixture
def ana(boda):
    return GuestFactory(event=boda, first_name="Ana", last_name="García", email="ana@example.com")


def _sent() -> email.message.EmailMessage:
    """The one email sent, as a mail client parses it."""
    [message] = mail.outbox
    return email.message_from_bytes(message.message().as_bytes(), policy=email.policy.default)


def _parts(parsed) -> dict[str, str]:
    return {part.get_content_type(): part.get_content() for part in parsed.walk() if not part.is_multipart()}


def _calendar(parsed) -> icalendar.Calendar:
    [part] = [part for part in parsed.walk() if part.get_content_type() == "text/calendar"]
    assert part.get_content_disposition() == "attachment"
    assert part.get_param("method") == "PUBLISH"
    return icalendar.Calendar.from_ical(part.get_payload(decode=True))


def test_the_invitation_says_when_where_what_to_wear_by_when_and_how_to_answer_in_spanish(ana):
    assert notifications.guest_invitation_send(guest=ana, window="send:1")

    parsed = _sent()
    assert parsed["Subject"] == "Estás invitado: Boda de Ana y Luis"
    parts = _parts(parsed)
    link = f"https://rsvp.example.org/rsvp/?code={ana.code}"
    for content in (parts["text/plain"], parts["text/html"]):
        assert "Hola Ana" in content
        assert "Bodas Olivar te invita a Boda de Ana y Luis." in content
        # Madrid time, labelled; the end falls on the next day, so it carries its date.
        assert "sábado, 14 de junio de 2031, 18:30 – domingo, 15 de junio de 2031, 01:00 (Europe/Madrid)" in content
        assert "Dónde" in content and "Finca El Olivar, Toledo" in content
        assert "Código de vestimenta" in content and "Etiqueta" in content
        assert "Fecha límite para responder" in content
        assert "sábado, 31 de mayo de 2031, 23:59 (Europe/Madrid)" in content
        assert ana.code in content and "https://rsvp.example.org/rsvp/" in content
        assert "Responde aquí (tu código ya está rellenado)" in content
    assert link in parts["text/plain"]
    assert f'href="{link}"' in parts["text/html"]


def test_the_invitation_comes_in_the_organizations_name_from_the_sites_address(ana):
    notifications.guest_invitation_send(guest=ana, window="send:1")

    [sender] = _sent()["From"].addresses
    assert (sender.display_name, sender.addr_spec) == ("Bodas Olivar", "invitations@events.example.org")


@pytest.mark.parametrize(
    "hostile_name",
    ['Fiesta "Acme", S.L.\r\nBcc: victim@example.com', "Acme <boss@evil.example>\nReply-To: x@evil.example"],
)
def test_an_organization_name_cannot_add_headers_or_addresses(boda, ana, hostile_name):
    boda.tenant.name = hostile_name
    boda.tenant.save()

    assert notifications.guest_invitation_send(guest=ana, window="send:1")

    [message] = mail.outbox
    assert message.recipients() == ["ana@example.com"]
    parsed = _sent()
    assert parsed["Bcc"] is None and parsed["Reply-To"] is None
    [sender] = parsed["From"].addresses
    assert sender.addr_spec == "invitations@events.example.org"
    assert sender.display_name == " ".join(hostile_name.split())  # the whole name, on one line
    assert "\n" not in parsed["From"] and "\r" not in parsed["From"]


def test_replies_go_to_the_events_contact_address_when_it_has_one(boda, ana):
    boda.contact_email = "novios@example.com"
    boda.save()
    owner = MembershipFactory(tenant=boda.tenant, user__email="planner@example.com").user

    notifications.guest_invitation_send(guest=ana, window="send:1", sender_id=str(owner.pk))

    assert _sent()["Reply-To"] == "novios@example.com"


def test_replies_go_to_the_organizer_who_sent_the_invitations_otherwise(boda, ana, django_capture_on_commit_callbacks):
    boda.tenant.verified_at = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    boda.tenant.save()
    planner = MembershipFactory(tenant=boda.tenant, user__email="planner@example.com").user

    with django_capture_on_commit_callbacks(execute=True):
        queued = notifications.guest_invitations_send(event=boda, guests=[ana], acting_user=planner)

    assert queued.queued == 1
    assert _sent()["Reply-To"] == "planner@example.com"


def test_a_sender_of_another_organization_is_not_a_reply_address(boda, ana):
    outsider = MembershipFactory(tenant=TenantFactory(), user__email="outsider@example.com").user

    notifications.guest_invitation_send(guest=ana, window="send:1", sender_id=str(outsider.pk))

    assert _sent()["Reply-To"] is None


def test_the_invitation_carries_the_event_as_a_calendar_entry_in_madrid_time(ana, boda):
    notifications.guest_invitation_send(guest=ana, window="send:1")

    calendar = _calendar(_sent())
    assert calendar["METHOD"] == "PUBLISH"
    [entry] = calendar.walk("VEVENT")
    start, end = entry.decoded("DTSTART"), entry.decoded("DTEND")
    assert entry["DTSTART"].params["TZID"] == "Europe/Madrid"
    assert (start.hour, start.minute, start.utcoffset()) == (18, 30, dt.timedelta(hours=2))
    assert start == dt.datetime(2031, 6, 14, 16, 30, tzinfo=dt.UTC)
    assert end == dt.datetime(2031, 6, 14, 23, 0, tzinfo=dt.UTC)
    [zone] = calendar.walk("VTIMEZONE")
    assert zone["TZID"] == "Europe/Madrid"  # Outlook needs the definition of every TZID it reads
    assert str(entry["SUMMARY"]) == "Boda de Ana y Luis"
    assert str(entry["LOCATION"]) == "Finca El Olivar, Toledo"
    link = f"https://rsvp.example.org/rsvp/?code={ana.code}"
    assert str(entry["URL"]) == link
    assert f"Tu invitación: {link}" in str(entry["DESCRIPTION"])  # in the event's language
    assert str(entry["ORGANIZER"]) == "mailto:invitations@events.example.org"
    assert entry["ORGANIZER"].params["CN"] == "Bodas Olivar"
    assert str(entry["UID"]) == event_calendar_uid(boda)


def test_a_second_invitation_updates_the_calendar_entry_instead_of_adding_one(ana, boda):
    Event.objects.filter(pk=boda.pk).update(updated_at=timezone.now() - dt.timedelta(hours=1))
    ana.event.refresh_from_db()
    notifications.guest_invitation_send(guest=ana, window="send:1")
    first = _calendar(_sent()).walk("VEVENT")[0]
    mail.outbox.clear()
    event_update(event=ana.event, acting_user=None, location="Cigarral del Ángel, Toledo")

    notifications.guest_invitation_send(guest=ana, window="send:2")

    second = _calendar(_sent()).walk("VEVENT")[0]
    assert str(second["UID"]) == str(first["UID"])
    assert second["SEQUENCE"] > first["SEQUENCE"]  # the newer copy wins in the calendar
    assert str(second["LOCATION"]) == "Cigarral del Ángel, Toledo"


def test_every_guest_of_the_event_gets_the_same_calendar_entry(ana, boda):
    bea = GuestFactory(event=boda, first_name="Bea", email="bea@example.com")
    notifications.guest_invitation_send(guest=ana, window="send:1")
    notifications.guest_invitation_send(guest=bea, window="send:1")

    uids = set()
    for message in mail.outbox:
        parsed = email.message_from_bytes(message.message().as_bytes(), policy=email.policy.default)
        uids.add(str(_calendar(parsed).walk("VEVENT")[0]["UID"]))
    assert uids == {event_calendar_uid(boda)}

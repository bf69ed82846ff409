"""Bad form input: a 400 with the error next to the field, and nothing written."""

import re

import pytest
from django.urls import reverse

from events.models import Event
from tests.factories import GuestFactory

pytestmark = pytest.mark.django_db

VALID_EVENT = {
    "name": "Garden party",
    "description": "",
    "status": Event.Status.PUBLISHED,
    "starts_at": "2031-06-01T18:00",
    "ends_at": "2031-06-01T23:00",
    "timezone": "Europe/Madrid",
    "location": "Garden",
    "dress_code": "",
    "rsvp_deadline": "2031-05-20T12:00",
    "language": "en",
    "contact_email": "",
    "questions_text": "",
}
VALID_GUEST = {
    "first_name": "Maria",
    "last_name": "García",
    "email": "maria@example.com",
    "phone": "",
    "expected_guests": "2",
    "dietary": "",
}

EVENT_ERRORS = {
    "missing_name": ({"name": ""}, "name", "This field is required."),
    "ends_before_starts": ({"ends_at": "2031-06-01T17:59"}, "ends_at", "The event cannot end before it starts."),
    "deadline_after_start": (
        {"rsvp_deadline": "2031-06-01T18:01"},
        "rsvp_deadline",
        "The RSVP deadline should be before the event starts.",
    ),
    "unknown_timezone": ({"timezone": "Mars/Olympus_Mons"}, "timezone", "Select a valid choice."),
}
GUEST_ERRORS = {
    "zero_expected_guests": ({"expected_guests": "0"}, "expected_guests", "greater than or equal to 1"),
    "missing_last_name": ({"last_name": ""}, "last_name", "This field is required."),
    "bad_email": ({"email": "maria-at-example"}, "email", "Enter a valid email address."),
}


def field_tag(html: str, name: str) -> str:
    match = re.search(rf'<(?:input|select|textarea)\b[^>]*\bname="{re.escape(name)}"[^>]*>', html)
    assert match, f"no input named {name!r} in the page"
    return match.group(0)


def assert_error_next_to_field(response, field: str, message: str):
    assert response.status_code == 400
    form = response.context["form"]
    assert list(form.errors) == [field], form.errors
    assert any(message in error for error in form.errors[field]), form.errors[field]
    html = response.content.decode()
    tag = field_tag(html, field)
    assert 'aria-invalid="true"' in tag
    described_by = re.search(r'aria-describedby="([^"]*)"', tag)
    assert described_by and f"id_{field}_error" in described_by.group(1).split()
    error_list = re.search(rf'<ul class="errorlist" id="id_{field}_error">(.*?)</ul>', html, re.S)
    assert error_list and message.split(".")[0] in error_list.group(1)
    # Only the field at fault is marked.
    for other in form.fields:
        if other != field:
            assert 'aria-invalid="true"' not in field_tag(html, other), other


def event_urls(tenant):
    return reverse("events:create", kwargs={"tenant_slug": tenant.slug})


# --- event form ---------------------------------------------------------------------


def test_valid_event_form_is_accepted(owner_client, tenant, snapshot):
    # Control: the baseline data is valid, so each error case below fails for its one change.
    response = owner_client.post(event_urls(tenant), VALID_EVENT)

    assert response.status_code == 302
    event = Event.objects.get(tenant=tenant, name="Garden party")
    assert event.timezone == "Europe/Madrid"
    assert event.starts_at.isoformat() == "2031-06-01T16:00:00+00:00"  # 18:00 in Madrid (summer time)


@pytest.mark.parametrize("case", EVENT_ERRORS.values(), ids=EVENT_ERRORS.keys())
def test_bad_event_input_on_create_shows_field_error_and_creates_nothing(owner_client, tenant, snapshot, case):
    overrides, field, message = case
    before = snapshot()

    response = owner_client.post(event_urls(tenant), {**VALID_EVENT, **overrides})

    assert_error_next_to_field(response, field, message)
    assert snapshot() == before
    # What the organizer typed is kept in the form.
    assert response.context["form"].data["location"] == "Garden"


@pytest.mark.parametrize("case", EVENT_ERRORS.values(), ids=EVENT_ERRORS.keys())
def test_bad_event_input_on_edit_shows_field_error_and_changes_nothing(owner_client, tenant, event, snapshot, case):
    overrides, field, message = case
    before = snapshot()
    url = reverse("events:edit", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    response = owner_client.post(url, {**VALID_EVENT, "name": "Renamed", **overrides})

    assert_error_next_to_field(response, field, message)
    assert snapshot() == before
    event.refresh_from_db()
    assert event.name != "Renamed"


def test_deadline_equal_to_start_is_allowed(owner_client, tenant):
    response = owner_client.post(event_urls(tenant), {**VALID_EVENT, "rsvp_deadline": VALID_EVENT["starts_at"]})

    assert response.status_code == 302


# --- guest form ---------------------------------------------------------------------


def test_valid_guest_form_is_accepted(owner_client, tenant, event):
    url = reverse("guests:create", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    response = owner_client.post(url, VALID_GUEST)

    assert response.status_code == 302
    guest = event.guests.get()
    assert (guest.last_name, guest.expected_guests) == ("García", 2)


@pytest.mark.parametrize("case", GUEST_ERRORS.values(), ids=GUEST_ERRORS.keys())
def test_bad_guest_input_on_create_shows_field_error_and_creates_nothing(owner_client, tenant, event, snapshot, case):
    overrides, field, message = case
    url = reverse("guests:create", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})
    before = snapshot()

    response = owner_client.post(url, {**VALID_GUEST, **overrides})

    assert_error_next_to_field(response, field, message)
    assert snapshot() == before
    assert not event.guests.exists()


@pytest.mark.parametrize("case", GUEST_ERRORS.values(), ids=GUEST_ERRORS.keys())
def test_bad_guest_input_on_edit_shows_field_error_and_changes_nothing(owner_client, tenant, event, snapshot, case):
    overrides, field, message = case
    guest = GuestFactory(event=event, first_name="Old", last_name="Name", email="old@example.com", expected_guests=3)
    url = reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": guest.pk})
    before = snapshot()

    response = owner_client.post(url, {**VALID_GUEST, **overrides})

    assert_error_next_to_field(response, field, message)
    assert snapshot() == before
    guest.refresh_from_db()
    assert (guest.first_name, guest.last_name, guest.email, guest.expected_guests) == (
        "Old",
        "Name",
        "old@example.com",
        3,
    )

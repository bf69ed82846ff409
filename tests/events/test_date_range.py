"""Dates stay between the years 1900 and 2200 (forms, API, models), and every stored date renders.

Rows stored before the rule (here written past validation, as the old code
did) still render on every page that shows them, and `manage.py repair_dates`
brings them back into range.
"""

import datetime as dt
from io import StringIO

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.core.management import call_command

from billing.notifications import order_confirmation_send
from events.models import Event, TicketType
from eventsaas.models import AuditLog
from guests.notifications import guest_invitation_send
from tenants.tokens import guest_access_token, organizer_token_pair
from tests.factories import EventFactory, GuestFactory, TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db

UTC = dt.UTC
# Each exists in UTC, and overflows Python's datetime once moved into the named zone (or the reverse).
OVERFLOWING = [
    ("Pacific/Pago_Pago", dt.datetime(1, 1, 1, 0, 0, tzinfo=UTC)),  # 11 hours before year 1 does not exist
    ("Pacific/Kiritimati", dt.datetime(9999, 12, 31, 23, 59, tzinfo=UTC)),  # nor 14 hours after 9999
]


def event_form(**overrides):
    data = {
        "name": "Far away",
        "status": "draft",
        "starts_at": "2031-06-01T18:00",
        "timezone": "UTC",
        "language": "en",
        "kind": "invite_only",
    }
    data.update(overrides)
    return data


# --- input: forms, API, models -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "timezone,when",
    [
        ("Pacific/Kiritimati", "9999-12-31T23:59"),
        ("Pacific/Kiritimati", "0001-01-01T00:00"),
        ("Pacific/Pago_Pago", "9999-12-31T23:59"),
        ("UTC", "1899-12-31T23:59"),
        ("UTC", "2201-01-01T00:00"),
    ],
)
def test_the_event_form_refuses_dates_outside_the_range_on_the_field(owner_client, tenant, timezone, when):
    response = owner_client.post(f"/o/{tenant.slug}/events/new/", event_form(timezone=timezone, starts_at=when))

    assert response.status_code == 400
    assert "Enter a date between the years 1900 and 2200." in response.context["form"].errors["starts_at"]
    assert not Event.objects.filter(name="Far away").exists()


def test_the_event_form_refuses_a_far_deadline_and_end_too(owner_client, tenant):
    response = owner_client.post(
        f"/o/{tenant.slug}/events/new/",
        event_form(ends_at="9999-12-31T23:59", rsvp_deadline="0001-01-01T00:00", timezone="Pacific/Kiritimati"),
    )
    assert response.status_code == 400
    assert set(response.context["form"].errors) == {"ends_at", "rsvp_deadline"}


def test_the_ticket_type_form_refuses_far_sales_dates(owner_client, tenant):
    concert = TicketedEventFactory(tenant=tenant, timezone="Pacific/Pago_Pago")
    response = owner_client.post(
        f"/o/{tenant.slug}/events/{concert.pk}/ticket-types/new/",
        {
            "name": "Seat",
            "price_amount": "10",
            "currency": "eur",
            "capacity": "5",
            "max_per_order": "4",
            "position": "0",
            "is_active": "on",
            "sales_end": "9999-12-31T23:59",
        },
    )
    assert response.status_code == 400
    assert "sales_end" in response.context["form"].errors


@pytest.mark.parametrize(
    "field,value",
    [
        ("starts_at", "9999-12-31T23:59:00+14:00"),
        ("starts_at", "0001-01-01T00:00:00-11:00"),
        ("starts_at", "0001-01-01T00:00:00+14:00"),
        ("ends_at", "2201-01-01T00:00:00Z"),
        ("rsvp_deadline", "1899-12-31T23:59:00Z"),
    ],
)
def test_the_api_refuses_dates_outside_the_range(client, tenant, owner, event, field, value):
    token = organizer_token_pair(owner)["access"]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    body = {"name": "Far away", "starts_at": "2031-06-01T18:00:00+02:00", field: value}

    created = client.post(f"/api/v1/orgs/{tenant.slug}/events", body, content_type="application/json", **headers)
    patched = client.patch(f"/api/v1/events/{event.pk}", {field: value}, content_type="application/json", **headers)

    for response in (created, patched):
        assert response.status_code == 400, response.content
        assert response.json()["errors"][field] == ["Enter a date between the years 1900 and 2200."]
    assert not Event.objects.filter(name="Far away").exists()


def test_the_api_refuses_far_ticket_sales_dates(client, tenant, owner):
    concert = TicketedEventFactory(tenant=tenant)
    token = organizer_token_pair(owner)["access"]
    response = client.post(
        f"/api/v1/events/{concert.pk}/ticket-types",
        {"name": "Seat", "price": 1000, "capacity": 5, "sales_start": "0001-01-01T00:00:00+14:00"},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {token}",
    )
    assert response.status_code == 400
    assert "sales_start" in response.json()["errors"]


@pytest.mark.parametrize("timezone,when", OVERFLOWING)
def test_the_model_refuses_dates_outside_the_range(tenant, timezone, when):
    event = Event(tenant=tenant, name="x", slug="x", starts_at=when, timezone=timezone)
    with pytest.raises(ValidationError) as error:
        event.full_clean()
    assert "starts_at" in error.value.message_dict
    ticket_type = TicketType(
        tenant=tenant, event=EventFactory(tenant=tenant), name="t", price=1, capacity=1, sales_end=when
    )
    with pytest.raises(ValidationError) as error:
        ticket_type.full_clean()
    assert "sales_end" in error.value.message_dict


def test_the_range_edges_are_accepted(tenant):
    for when in (dt.datetime(1900, 1, 1, tzinfo=UTC), dt.datetime(2200, 12, 31, 12, tzinfo=UTC)):
        Event(tenant=tenant, name="edge", slug="edge", starts_at=when, timezone="UTC").full_clean()


# --- every stored date renders ------------------------------------------------------------------------


@pytest.fixture
def far_events(tenant):
    """Events stored before the rule, with dates that overflow in their own time zone."""
    events = []
    for n, (timezone, when) in enumerate(OVERFLOWING):
        event = EventFactory(tenant=tenant, timezone=timezone, starts_at=when, ends_at=when, rsvp_deadline=when)
        GuestFactory(event=event, last_name=f"Far{n}", email=f"far{n}@example.com")
        events.append(event)
    return events


def test_every_organizer_page_of_an_event_with_stored_far_dates_renders(owner_client, tenant, far_events):
    assert owner_client.get(f"/o/{tenant.slug}/").status_code == 200
    for event in far_events:
        for page in ("", "edit/", "guests/", "activity/", "dietary/", "messages/"):
            response = owner_client.get(f"/o/{tenant.slug}/events/{event.pk}/{page}")
            assert response.status_code == 200, (page, response.status_code)


def test_the_edit_form_of_such_an_event_shows_the_date_and_saves_a_fix(owner_client, tenant, far_events):
    event = far_events[0]
    page = owner_client.get(f"/o/{tenant.slug}/events/{event.pk}/edit/")
    assert page.status_code == 200

    fixed = owner_client.post(
        f"/o/{tenant.slug}/events/{event.pk}/edit/",
        event_form(
            name=event.name, timezone=event.timezone, starts_at="2031-06-01T18:00", ends_at="", rsvp_deadline=""
        ),
    )
    assert fixed.status_code == 302, fixed.context["form"].errors if fixed.context else fixed
    event.refresh_from_db()
    assert event.starts_at.year == 2031


def test_the_guest_answer_page_and_api_of_such_an_event_render(client, far_events):
    for event in far_events:
        guest = event.guests.get()
        client.post("/rsvp/", {"code": guest.code, "last_name": guest.last_name})
        assert client.get("/rsvp/answer/").status_code == 200
        response = client.get("/api/v1/rsvp", HTTP_AUTHORIZATION=f"Bearer {guest_access_token(guest)}")
        assert response.status_code == 200
        client.post("/rsvp/logout/")


def test_the_organizer_api_lists_such_events(client, tenant, owner, far_events):
    token = organizer_token_pair(owner)["access"]
    response = client.get(f"/api/v1/orgs/{tenant.slug}/events", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200
    assert len(response.json()) == len(far_events)


def test_the_shop_and_ticket_types_of_a_far_ticketed_event_render(client, owner_client, tenant):
    timezone, when = OVERFLOWING[1]
    concert = TicketedEventFactory(tenant=tenant, timezone=timezone, starts_at=when, ends_at=when)
    TicketTypeFactory(event=concert, sales_start=OVERFLOWING[0][1], sales_end=when)
    assert client.get(f"/e/{concert.pk}/").status_code == 200
    assert owner_client.get(f"/o/{tenant.slug}/events/{concert.pk}/ticket-types/").status_code == 200


def test_emails_of_such_an_event_are_sent(far_events):
    for event in far_events:
        guest = event.guests.get()
        assert guest_invitation_send(guest=guest, window="far")
    assert len(mail.outbox) == len(far_events)


def test_the_tickets_email_of_such_an_event_is_sent(paid_far_order):
    assert order_confirmation_send(order=paid_far_order)


@pytest.fixture
def paid_far_order(tenant):
    from tests.api.sweep_fixtures import paid_order

    timezone, when = OVERFLOWING[1]
    concert = TicketedEventFactory(tenant=tenant, timezone=timezone)
    ticket_type = TicketTypeFactory(event=concert)
    order = paid_order(event=concert, ticket_type=ticket_type, quantity=1, buyer_name="B", buyer_email="b@example.com")
    Event.objects.filter(pk=concert.pk).update(starts_at=when)
    order.refresh_from_db()
    from billing.models import Order

    Order.objects.filter(pk=order.pk).update(confirmation_sent_at=None, confirmation_claimed_at=None)
    order.refresh_from_db()
    return order


# --- the repair command -------------------------------------------------------------------------------


def test_repair_dates_brings_stored_dates_back_into_range_once(owner_client, tenant, far_events):
    concert = TicketedEventFactory(tenant=tenant)
    ticket_type = TicketTypeFactory(event=concert, sales_end=dt.datetime(9999, 1, 1, tzinfo=UTC))
    fine = EventFactory(tenant=tenant)
    fine_before = Event.objects.filter(pk=fine.pk).values().get()

    dry = StringIO()
    call_command("repair_dates", "--dry-run", stdout=dry)
    assert "3 row(s) would be repaired" in dry.getvalue()
    assert Event.objects.get(pk=far_events[0].pk).starts_at.year == 1

    out = StringIO()
    call_command("repair_dates", stdout=out)
    assert "3 row(s) repaired" in out.getvalue()

    early, late = (Event.objects.get(pk=event.pk) for event in far_events)
    assert (early.starts_at.year, late.starts_at.year) == (1900, 2200)
    assert early.ends_at is None and early.rsvp_deadline is None
    for event in (early, late):
        event.full_clean()  # valid now, also in its own time zone
    ticket_type.refresh_from_db()
    assert ticket_type.sales_end is None
    assert Event.objects.filter(pk=fine.pk).values().get() == fine_before
    assert AuditLog.objects.filter(action="dates.repaired").count() == 3
    assert (
        AuditLog.objects.filter(action="dates.repaired", object_id=early.pk)
        .get()
        .data["changes"]["starts_at"][0]
        .startswith("0001-01-01")
    )

    again = StringIO()
    call_command("repair_dates", stdout=again)
    assert "0 row(s) repaired" in again.getvalue()
    # Saved through the form unchanged, the repaired event passes its own validation.
    page = owner_client.get(f"/o/{tenant.slug}/events/{late.pk}/edit/")
    form = page.context["form"]
    data = {name: form[name].value() or "" for name in form.fields if name != "questions_text"}
    data["starts_at"] = form["starts_at"].value().strftime("%Y-%m-%dT%H:%M")
    response = owner_client.post(
        f"/o/{tenant.slug}/events/{late.pk}/edit/", {**data, "ends_at": "", "rsvp_deadline": ""}
    )
    assert response.status_code == 302, response.context["form"].errors

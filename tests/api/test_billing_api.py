"""The ticketing API: the public checkout, and the organizer's orders, refunds, check-in and sales numbers.

Payments run in test-payment mode (no Stripe keys): paying builds a locally
signed Stripe event that goes through the webhook code; its task runs when the
transaction commits, i.e. inside django_capture_on_commit_callbacks(execute=True).
"""

# The organizer fixtures are imported; test arguments name them (ruff cannot tell).
# ruff: noqa: F811

import json
import logging
import uuid

import pytest

from billing import payments
from billing import services as billing_services
from billing.apis import CheckoutApi, SoldOutTicketTypeSerializer
from billing.models import ConnectedAccount, LedgerEntry, Order, Ticket
from events.models import Event, TicketType
from eventsaas.models import AuditLog
from tenants.models import Role
from tenants.tokens import organizer_token_pair
from tests.api.organizer_fixtures import (  # noqa: F401
    api_client,
    errors_of,
    organizer_client,
    other_tenant,
    owner_api,
    stranger_api,
    viewer_api,
)
from tests.api.sweep_fixtures import tampered_token
from tests.factories import EventFactory, MembershipFactory, TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, name="Harbour concert")


@pytest.fixture
def stalls(concert):
    return TicketTypeFactory(event=concert, name="Stalls", price=4500, capacity=10, max_per_order=4)


@pytest.fixture
def door_api(tenant):
    return organizer_client(MembershipFactory(tenant=tenant, role=Role.DOOR).user)


@pytest.fixture
def pay(django_capture_on_commit_callbacks):
    """Pay an order in test-payment mode, through the signed event and the webhook task."""

    def paid(order_id) -> Order:
        with django_capture_on_commit_callbacks(execute=True):
            billing_services.order_simulate_payment(order=Order.objects.get(pk=order_id))
        return Order.objects.get(pk=order_id)

    return paid


def checkout_url(event):
    return f"/api/v1/events/{event.pk}/checkout"


def checkout_body(*items, **extra) -> dict:
    return {
        "items": [{"ticket_type": str(ticket_type.pk), "quantity": quantity} for ticket_type, quantity in items],
        "buyer": {"name": "Ada Lovelace", "email": "ada@example.com"},
        **extra,
    }


def checkout(event, *items, **extra):
    return api_client().post(checkout_url(event), checkout_body(*items, **extra), format="json")


def seats(ticket_type) -> tuple[int, int]:
    ticket_type.refresh_from_db()
    return ticket_type.sold, ticket_type.reserved


@pytest.fixture
def paid_order(concert, stalls, pay):
    """Ada's paid order of three Stalls tickets (45.00 each)."""
    response = checkout(concert, (stalls, 3))
    assert response.status_code == 201, response.content
    return pay(response.json()["order_id"])


def ledger_balance(order) -> int:
    return sum(entry.signed_amount for entry in LedgerEntry.objects.filter(order=order))


# --- end to end -------------------------------------------------------------------------------


def test_a_ticket_is_bought_paid_checked_in_and_refunded_end_to_end(concert, stalls, owner_api, pay, mailoutbox):
    listed = api_client().get(f"/api/v1/events/{concert.pk}/ticket-types")
    assert [(row["name"], row["price"], row["remaining"]) for row in listed.json()] == [("Stalls", 4500, 10)]

    started = checkout(concert, (stalls, 2), attendees=[{"name": "Ada"}, {"name": "Charles"}])
    assert started.status_code == 201, started.content
    assert set(started.json()) == {"order_id", "status", "checkout_url", "order_url", "expires_at", "total", "currency"}
    assert started.json()["status"] == "pending"
    assert (started.json()["total"], started.json()["currency"]) == (9000, "eur")
    assert "/test-checkout/" in started.json()["checkout_url"]
    assert seats(stalls) == (0, 2)

    pay(started.json()["order_id"])
    detail = owner_api.get(f"/api/v1/orders/{started.json()['order_id']}")
    assert detail.status_code == 200
    order = detail.json()
    assert (order["status"], order["paid_amount"], order["refunded_amount"]) == ("paid", 9000, 0)
    assert [(t["seat"], t["attendee_name"], t["status"], t["checked_in_at"]) for t in order["tickets"]] == [
        (1, "Ada", "valid", None),
        (2, "Charles", "valid", None),
    ]
    assert [(e["kind"], e["amount"]) for e in order["ledger"]] == [("payment", 9000)]
    assert seats(stalls) == (2, 0)
    assert len(mailoutbox) == 1 and mailoutbox[0].to == ["ada@example.com"]

    code = order["tickets"][0]["code"]
    first = owner_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": code}, format="json")
    second = owner_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": code.lower()}, format="json")
    assert (first.status_code, first.json()["result"]) == (200, "valid")
    assert first.json()["ticket"]["attendee_name"] == "Ada"
    assert (second.status_code, second.json()["result"]) == (200, "already_checked_in")
    assert second.json()["checked_in_at"] == first.json()["checked_in_at"] is not None

    partial = owner_api.post(f"/api/v1/orders/{order['id']}/refund", {"amount": 4500}, format="json")
    assert partial.status_code == 200, partial.content
    assert (partial.json()["status"], partial.json()["refunded_amount"]) == ("partially_refunded", 4500)
    assert [t["status"] for t in partial.json()["tickets"]] == ["valid", "void"]  # the last seat goes first
    assert ledger_balance(Order.objects.get(pk=order["id"])) == 9000 - 4500

    full = owner_api.post(f"/api/v1/orders/{order['id']}/refund", {}, format="json")
    assert full.status_code == 200, full.content
    assert (full.json()["status"], full.json()["refunded_amount"], full.json()["refundable_amount"]) == (
        "refunded",
        9000,
        0,
    )
    assert [(e["kind"], e["amount"]) for e in full.json()["ledger"]] == [
        ("payment", 9000),
        ("refund", 4500),
        ("refund", 4500),
    ]
    assert ledger_balance(Order.objects.get(pk=order["id"])) == 0
    assert seats(stalls) == (0, 0)
    void = owner_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": code}, format="json")
    assert void.json()["result"] == "void"


# --- checkout ---------------------------------------------------------------------------------


def test_checkout_of_a_sold_out_type_names_it_and_reserves_nothing(concert, stalls):
    balcony = TicketTypeFactory(event=concert, name="Balcony", capacity=5, sold=4)

    response = checkout(concert, (stalls, 2), (balcony, 2))

    assert response.status_code == 409
    assert response.json()["code"] == "sold_out"
    assert response.json()["ticket_types"] == [{"id": str(balcony.pk), "name": "Balcony", "remaining": 1}]
    assert seats(stalls) == (0, 0) and seats(balcony) == (4, 0)
    assert not Order.objects.exists()


def test_checkout_answers_are_what_their_documented_serializers_give(concert, stalls):
    """The 201 and the 409 are built as plain dicts (a hot path); the schema documents them by serializers."""
    balcony = TicketTypeFactory(event=concert, name="Balcony", capacity=5, sold=4)
    started = checkout(concert, (stalls, 2))
    refused = checkout(concert, (balcony, 2))

    order = Order.objects.get(pk=started.json()["order_id"])
    assert started.status_code == 201 and refused.status_code == 409
    assert started.json() == json.loads(json.dumps(CheckoutApi.OutputSerializer(order).data))
    assert started.json()["expires_at"] is not None
    assert refused.json()["ticket_types"] == SoldOutTicketTypeSerializer([balcony], many=True).data


@pytest.mark.parametrize(
    ("body", "error_path"),
    [
        (lambda t: checkout_body((t, 1), coupon="FREE"), ["coupon"]),
        (lambda t: {**checkout_body(), "items": [{"ticket_type": str(t.pk), "quantity": 1, "seat": 4}]}, ["items"]),
        (lambda t: {**checkout_body((t, 1)), "buyer": {"name": "Ada", "email": "a@b.example", "vip": True}}, ["buyer"]),
        (lambda t: checkout_body((t, 0)), ["items"]),
        (lambda t: checkout_body((t, -2)), ["items"]),
        (lambda t: checkout_body((t, 5)), ["items"]),  # max_per_order is 4
        (lambda t: checkout_body(), ["items"]),
        (lambda t: {**checkout_body((t, 1)), "items": [{"ticket_type": str(uuid.uuid4()), "quantity": 1}]}, ["items"]),
        (lambda t: {**checkout_body((t, 1)), "buyer": {"name": "Ada", "email": "not-an-email"}}, ["buyer", "email"]),
        (lambda t: {**checkout_body((t, 1)), "buyer": {"name": "  ", "email": "ada@example.com"}}, ["buyer", "name"]),
        (lambda t: checkout_body((t, 2), attendees=[{"name": "Ada"}]), ["attendees"]),
        (lambda t: checkout_body((t, 1), answers={"no_such_question": "yes"}), ["answers"]),
        (
            lambda t: {**checkout_body((t, 1)), "buyer": {"name": "Ada\u202eecalevol", "email": "a@b.example"}},
            ["buyer", "name"],
        ),
        (lambda t: checkout_body((t, 2), attendees=[{"name": "Ada"}, {"name": "Charles\tBabbage"}]), ["attendees"]),
    ],
    ids=[
        "unknown-field",
        "unknown-item-field",
        "unknown-buyer-field",
        "quantity-0",
        "negative-quantity",
        "above-max-per-order",
        "no-items",
        "unknown-ticket-type",
        "bad-email",
        "blank-name",
        "wrong-attendee-count",
        "unknown-question",
        "buyer-name-reversed-by-a-direction-mark",
        "attendee-name-with-a-tab",
    ],
)
def test_bad_checkout_input_is_a_field_error_and_reserves_nothing(concert, stalls, body, error_path):
    response = api_client().post(checkout_url(concert), body(stalls), format="json")

    errors = errors_of(response)
    for key in error_path:
        assert key in errors, errors
        errors = errors[key] if isinstance(errors, dict) else errors
    assert seats(stalls) == (0, 0)
    assert not Order.objects.exists()


def test_an_event_that_asks_for_names_needs_one_per_ticket(tenant, owner_api, pay):
    gala = TicketedEventFactory(tenant=tenant, attendee_names_required=True)
    seat = TicketTypeFactory(event=gala)

    nameless = checkout(gala, (seat, 2))
    named = checkout(gala, (seat, 2), attendees=[{"name": "Ada"}, {"name": "Charles"}])

    assert "attendees" in errors_of(nameless)
    assert named.status_code == 201
    detail = owner_api.get(f"/api/v1/orders/{named.json()['order_id']}").json()
    assert [a["name"] for a in detail["attendees"]] == ["Ada", "Charles"]


def test_a_hidden_type_is_sold_with_its_access_code(concert):
    crew = TicketTypeFactory(event=concert, name="Crew", access_code="CREW2031", price=0)

    without = checkout(concert, (crew, 1))
    with_code = checkout(concert, (crew, 1), access_code="CREW2031")

    assert "items" in errors_of(without)
    assert with_code.status_code == 201
    assert seats(crew) == (1, 0)  # free: registered (sold) at once, no payment to wait for


@pytest.mark.parametrize(
    "make_event",
    [
        pytest.param(lambda t: TicketedEventFactory(tenant=t, status=Event.Status.DRAFT), id="draft"),
        pytest.param(lambda t: EventFactory(tenant=t), id="invite-only"),
    ],
)
def test_checkout_of_an_event_not_on_sale_is_404(tenant, make_event):
    event = make_event(tenant)
    ticket_type = TicketTypeFactory(event=event, tenant=tenant)

    response = checkout(event, (ticket_type, 1))

    assert response.status_code == 404
    assert seats(ticket_type) == (0, 0) and not Order.objects.exists()


def test_checkouts_are_throttled_per_client_address(concert, stalls, settings):
    settings.TICKET_CHECKOUT_RATE_PER_CLIENT = "2/h"  # per hour: a minute window could roll over mid-test
    client = api_client()

    statuses = [
        client.post(checkout_url(concert), checkout_body((stalls, 1)), format="json", REMOTE_ADDR="203.0.113.7")
        for _ in range(3)
    ]
    elsewhere = client.post(
        checkout_url(concert), checkout_body((stalls, 1)), format="json", REMOTE_ADDR="198.51.100.2"
    )

    assert [r.status_code for r in statuses] == [201, 201, 429]
    assert statuses[2].json()["code"] == "throttled" and statuses[2]["Retry-After"] == "60"
    assert elsewhere.status_code == 201
    assert seats(stalls) == (0, 3)


def test_without_a_way_to_pay_checkout_is_503_and_reserves_nothing(concert, stalls, settings):
    settings.TEST_PAYMENTS = False
    settings.STRIPE_SECRET_KEY = ""

    response = checkout(concert, (stalls, 1))

    assert response.status_code == 503
    assert response.json()["code"] == "payments_unavailable" and response.json()["detail"]
    assert seats(stalls) == (0, 0) and not Order.objects.exists()


def test_when_the_payment_provider_fails_checkout_is_503_and_the_seats_are_released(
    concert, stalls, monkeypatch, caplog
):
    def refuse(**kwargs):
        raise payments.PaymentProviderError("Stripe is down")

    monkeypatch.setattr(payments, "checkout_session_create", refuse)

    response = checkout(concert, (stalls, 2))

    assert response.status_code == 503
    assert response.json()["code"] == "payments_unavailable"
    assert seats(stalls) == (0, 0)
    assert list(Order.objects.values_list("status", flat=True)) == [Order.Status.CANCELLED]
    # Logged once as the warning it is (the provider's failure), not as a server error of ours.
    assert "Stripe is down" in caplog.text
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_the_order_speaks_the_language_the_client_asks_for_else_the_events(tenant):
    fiesta = TicketedEventFactory(tenant=tenant, language="es")
    seat = TicketTypeFactory(event=fiesta)

    asked = api_client().post(checkout_url(fiesta), checkout_body((seat, 1)), format="json", HTTP_ACCEPT_LANGUAGE="en")
    silent = api_client().post(checkout_url(fiesta), checkout_body((seat, 1)), format="json")

    assert Order.objects.get(pk=asked.json()["order_id"]).language == "en"
    assert Order.objects.get(pk=silent.json()["order_id"]).language == "es"


def test_checkout_ignores_a_token_and_needs_none(concert, stalls, owner):
    response = api_client("not.a.token").post(checkout_url(concert), checkout_body((stalls, 1)), format="json")

    assert response.status_code == 201


# --- orders -------------------------------------------------------------------------------------


def test_organizers_list_an_events_orders_newest_first_and_by_status(concert, stalls, viewer_api, pay):
    first = checkout(concert, (stalls, 1)).json()["order_id"]
    second = checkout(concert, (stalls, 2)).json()["order_id"]
    pay(first)

    everything = viewer_api.get(f"/api/v1/events/{concert.pk}/orders")
    paid = viewer_api.get(f"/api/v1/events/{concert.pk}/orders", {"status": "paid"})

    assert everything.status_code == 200
    assert everything.json()["count"] == 2
    assert [(o["id"], o["status"], o["quantity"]) for o in everything.json()["results"]] == [
        (second, "pending", 2),
        (first, "paid", 1),
    ]
    assert [o["id"] for o in paid.json()["results"]] == [first]
    assert "status" in errors_of(viewer_api.get(f"/api/v1/events/{concert.pk}/orders", {"status": "lost"}))


def test_the_order_list_is_paginated(concert, stalls, owner_api):
    for _ in range(3):
        checkout(concert, (stalls, 1))

    page = owner_api.get(f"/api/v1/events/{concert.pk}/orders", {"page_size": 2, "page": 2})

    assert page.status_code == 200
    assert (page.json()["count"], len(page.json()["results"])) == (3, 1)


def test_the_order_detail_shows_tickets_with_their_codes(paid_order, viewer_api):
    response = viewer_api.get(f"/api/v1/orders/{paid_order.pk}")

    assert response.status_code == 200
    tickets = Ticket.objects.filter(order=paid_order).order_by("seat")
    assert [t["code"] for t in response.json()["tickets"]] == [t.display_code for t in tickets]
    assert response.json()["tickets"][0]["ticket_type"] == {"id": str(tickets[0].ticket_type_id), "name": "Stalls"}
    assert response.json()["lines"] == [
        {"ticket_type": str(tickets[0].ticket_type_id), "name": "Stalls", "quantity": 3, "unit_price": 4500}
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [({"amount": 0}, "amount"), ({"amount": -100}, "amount"), ({"amount": 13501}, "amount"), ({"all": 1}, "all")],
)
def test_a_bad_refund_amount_is_a_field_error_and_refunds_nothing(paid_order, owner_api, body, field):
    response = owner_api.post(f"/api/v1/orders/{paid_order.pk}/refund", body, format="json")

    assert field in errors_of(response)
    paid_order.refresh_from_db()
    assert (paid_order.status, paid_order.refunded_amount) == (Order.Status.PAID, 0)
    assert not LedgerEntry.objects.filter(kind=LedgerEntry.Kind.REFUND).exists()


def test_an_unpaid_order_has_nothing_to_refund(concert, stalls, owner_api):
    order_id = checkout(concert, (stalls, 1)).json()["order_id"]

    errors = errors_of(owner_api.post(f"/api/v1/orders/{order_id}/refund", {}, format="json"))

    assert errors == {"amount": ["This order has nothing left to refund."]}


@pytest.mark.parametrize("role_api", ["viewer_api", "door_api"])
def test_viewers_and_door_staff_cannot_refund(request, paid_order, role_api):
    api = request.getfixturevalue(role_api)
    before = (list(Order.objects.values()), list(Ticket.objects.values()), LedgerEntry.objects.count())

    response = api.post(f"/api/v1/orders/{paid_order.pk}/refund", {"amount": 4500}, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert (list(Order.objects.values()), list(Ticket.objects.values()), LedgerEntry.objects.count()) == before


def test_another_organizations_order_and_event_do_not_exist(paid_order, concert, stranger_api):
    before = (list(Order.objects.values()), list(Ticket.objects.values()), AuditLog.objects.count())
    code = Ticket.objects.filter(order=paid_order).first().code

    responses = [
        stranger_api.get(f"/api/v1/orders/{paid_order.pk}"),
        stranger_api.post(f"/api/v1/orders/{paid_order.pk}/refund", {}, format="json"),
        stranger_api.get(f"/api/v1/events/{concert.pk}/orders"),
        stranger_api.get(f"/api/v1/events/{concert.pk}/sales"),
        stranger_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": code}, format="json"),
    ]

    assert [r.status_code for r in responses] == [404] * 5
    assert all(r.json()["code"] == "not_found" for r in responses)
    assert "Ada" not in "".join(r.content.decode() for r in responses)
    assert (list(Order.objects.values()), list(Ticket.objects.values()), AuditLog.objects.count()) == before


def test_a_tampered_token_is_refused(paid_order, other_tenant, tenant):
    stranger = MembershipFactory(tenant=other_tenant, role=Role.OWNER).user
    forged = tampered_token(
        organizer_token_pair(stranger)["access"], orgs={str(tenant.pk): {"slug": tenant.slug, "role": "owner"}}
    )

    read = api_client(forged).get(f"/api/v1/orders/{paid_order.pk}")
    refund = api_client(forged).post(f"/api/v1/orders/{paid_order.pk}/refund", {}, format="json")

    assert (read.status_code, refund.status_code) == (401, 401)
    paid_order.refresh_from_db()
    assert paid_order.status == Order.Status.PAID


# --- check-in -----------------------------------------------------------------------------------


def test_door_staff_check_tickets_in(paid_order, concert, door_api, tenant):
    ticket = Ticket.objects.filter(order=paid_order).first()

    response = door_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": ticket.display_code}, format="json")

    assert response.status_code == 200
    assert response.json()["result"] == "valid"
    assert response.json()["ticket"]["id"] == str(ticket.pk)
    ticket.refresh_from_db()
    assert ticket.checked_in_at is not None and ticket.checked_in_by.memberships.get().role == Role.DOOR


def test_viewers_cannot_check_tickets_in(paid_order, concert, viewer_api):
    ticket = Ticket.objects.filter(order=paid_order).first()

    response = viewer_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": ticket.code}, format="json")

    assert response.status_code == 403
    ticket.refresh_from_db()
    assert ticket.checked_in_at is None


def test_an_unknown_code_is_404_unknown(concert, owner_api):
    response = owner_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": "NOPE-NOPE"}, format="json")

    assert response.status_code == 404
    assert response.json()["code"] == "not_found" and response.json()["result"] == "unknown"


def test_a_ticket_of_another_event_is_wrong_event(paid_order, tenant, owner_api):
    other_night = TicketedEventFactory(tenant=tenant)
    ticket = Ticket.objects.filter(order=paid_order).first()

    response = owner_api.post(f"/api/v1/events/{other_night.pk}/check-in", {"code": ticket.code}, format="json")

    assert response.status_code == 200
    assert (response.json()["result"], response.json()["checked_in_at"]) == ("wrong_event", None)
    assert response.json()["ticket"]["event_id"] == str(paid_order.event_id)
    ticket.refresh_from_db()
    assert ticket.checked_in_at is None


def test_another_organizations_ticket_is_unknown_at_my_door(paid_order, other_tenant):
    rival_night = TicketedEventFactory(tenant=other_tenant)
    rival_door = organizer_client(MembershipFactory(tenant=other_tenant, role=Role.DOOR).user)
    ticket = Ticket.objects.filter(order=paid_order).first()

    response = rival_door.post(f"/api/v1/events/{rival_night.pk}/check-in", {"code": ticket.code}, format="json")

    assert (response.status_code, response.json()["result"]) == (404, "unknown")
    assert "Ada" not in response.content.decode()
    ticket.refresh_from_db()
    assert ticket.checked_in_at is None


def test_a_check_in_without_a_code_is_a_field_error(concert, owner_api):
    assert "code" in errors_of(owner_api.post(f"/api/v1/events/{concert.pk}/check-in", {}, format="json"))


# --- sales --------------------------------------------------------------------------------------


def test_the_sales_numbers_follow_sales_check_ins_and_refunds(paid_order, concert, stalls, owner_api, viewer_api):
    TicketTypeFactory(event=concert, name="Balcony", price=2000, capacity=5)
    checkout(concert, (stalls, 1))  # pending: holds a seat
    code = Ticket.objects.filter(order=paid_order).order_by("seat").first().code
    owner_api.post(f"/api/v1/events/{concert.pk}/check-in", {"code": code}, format="json")
    owner_api.post(f"/api/v1/orders/{paid_order.pk}/refund", {"amount": 4500}, format="json")

    response = viewer_api.get(f"/api/v1/events/{concert.pk}/sales")

    assert response.status_code == 200
    numbers = response.json()
    assert {k: v for k, v in numbers.items() if k != "ticket_types"} == {
        "currency": "eur",
        "sold": 2,
        "checked_in": 1,
        "captured": 13500,
        "refunded": 4500,
        "net": 9000,
        "orders_paid": 1,
        "orders_pending": 1,
        "orders_needing_attention": 0,
    }
    by_name = {row["name"]: row for row in numbers["ticket_types"]}
    assert by_name["Stalls"] | {"id": None} == {
        "id": None,
        "name": "Stalls",
        "price": 4500,
        "currency": "eur",
        "capacity": 10,
        "sold": 2,
        "reserved": 1,
        "remaining": 7,
        "revenue": 13500,
        "refunded": 4500,
        "checked_in": 1,
    }
    assert (by_name["Balcony"]["sold"], by_name["Balcony"]["remaining"]) == (0, 5)
    assert TicketType.objects.get(pk=stalls.pk).sold == 2


def test_order_api_shows_the_platform_fee_and_each_entrys_fee_and_net(
    tenant, concert, stalls, owner_api, pay, settings
):
    settings.PLATFORM_FEE_BASIS_POINTS, settings.PLATFORM_FEE_FIXED = 250, 30
    ConnectedAccount.objects.update_or_create(
        tenant=tenant, defaults={"stripe_account_id": "acct_test1", "is_test": True, "charges_enabled": True}
    )
    started = checkout(concert, (stalls, 2), attendees=[{"name": "Ada"}, {"name": "Charles"}])
    pay(started.json()["order_id"])

    refunded = owner_api.post(f"/api/v1/orders/{started.json()['order_id']}/refund", {"amount": 3000}, format="json")

    assert refunded.status_code == 200, refunded.content
    # 2.5 % of 90.00 = 2.25, plus 0.30; 30.00 of 90.00 gives back a third: 0.85.
    assert refunded.json()["application_fee"] == 255
    assert [(e["kind"], e["amount"], e["fee"], e["net"]) for e in refunded.json()["ledger"]] == [
        ("payment", 9000, 255, 8745),
        ("refund", 3000, 85, 2915),
    ]

"""Shared fixtures of the Stripe-side billing tests: a ticketed event on sale, buying through the fake Stripe,
posting signed events to the webhook endpoint, and the money checks every step ends with."""

import copy
import secrets
import time

import pytest
import stripe
from django.core import mail
from django.urls import reverse

from billing import services
from billing.models import LedgerEntry, Order, Ticket
from billing.services import CheckoutItem, CheckoutRequest
from events.models import TicketType
from tests.factories import TicketedEventFactory, TicketTypeFactory
from tests.support.stripe_fixtures import STRIPE_WEBHOOK_SECRET
from tests.support.stripe_server import FakeStripe

WEBHOOK_URL = reverse("billing:stripe-webhook")

STANDARD_PRICE = 2500
VIP_PRICE = 6000


@pytest.fixture
def ticketed_event(tenant):
    """A published ticketed event of `tenant`, on sale now."""
    return TicketedEventFactory(tenant=tenant)


@pytest.fixture
def standard(ticketed_event):
    return TicketTypeFactory(event=ticketed_event, name="Standard", price=STANDARD_PRICE, capacity=10, position=1)


@pytest.fixture
def vip(ticketed_event):
    """The small-capacity type: two seats."""
    return TicketTypeFactory(event=ticketed_event, name="VIP", price=VIP_PRICE, capacity=2, position=2)


@pytest.fixture
def no_backoff(monkeypatch):
    """The SDK sleeps 0.5 s-5 s between its retries; the tests need not."""
    monkeypatch.setattr(stripe.HTTPClient, "INITIAL_DELAY", 0)
    monkeypatch.setattr(stripe.HTTPClient, "MAX_DELAY", 0)


def buy(event, *items, email="ada@example.com", names=()):
    """checkout_start for (ticket_type, quantity) pairs; returns the pending order."""
    return services.checkout_start(
        event=event,
        request=CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=str(t.pk), quantity=q) for t, q in items],
            buyer_name="Ada Lovelace",
            buyer_email=email,
            attendee_names=list(names),
        ),
    )


def fresh(obj):
    obj.refresh_from_db()
    return obj


def seats(ticket_type: TicketType) -> tuple[int, int]:
    """(sold, reserved) as stored now."""
    ticket_type.refresh_from_db()
    return ticket_type.sold, ticket_type.reserved


def post_webhook(client, event, *, secret=STRIPE_WEBHOOK_SECRET, timestamp=None, capture=None, body=None, header=None):
    """POST a Stripe event to the webhook endpoint, signed like Stripe signs it, running the on-commit task.

    `body` replaces the serialised event (to post exactly the bytes of an earlier delivery, or garbage);
    `header` replaces the computed Stripe-Signature (None: sign `body` with `secret` at `timestamp`).
    """
    if body is None:
        body = FakeStripe.payload(event)
    if header is None:
        header = FakeStripe.sign(body, secret, timestamp=timestamp)
    extra = {"HTTP_STRIPE_SIGNATURE": header} if header else {}
    with capture(execute=True):
        return client.post(WEBHOOK_URL, data=body, content_type="application/json", **extra)


@pytest.fixture
def webhook(client, django_capture_on_commit_callbacks):
    """post_webhook bound to the test client and on-commit capture: webhook(event, secret=..., timestamp=...)."""

    def post(event, **kwargs):
        return post_webhook(client, event, capture=django_capture_on_commit_callbacks, **kwargs)

    return post


def stripe_event(event_type: str, obj: dict) -> dict:
    """A Stripe-shaped event with a new id, for deliveries the fake cannot produce in that order
    (an `expired` for a session that later completed, a second event type for the same session)."""
    return {
        "id": "evt_" + secrets.token_hex(12),
        "object": "event",
        "api_version": "2026-10-28.endive",
        "created": int(time.time()),
        "data": {"object": copy.deepcopy(obj)},
        "livemode": False,
        "pending_webhooks": 1,
        "request": {"id": None, "idempotency_key": None},
        "type": event_type,
    }


def expired_event(session: dict) -> dict:
    """checkout.session.expired for a snapshot of a session (taken while it was still open)."""
    return stripe_event("checkout.session.expired", {**session, "status": "expired", "url": None})


def tickets_of(order) -> list[Ticket]:
    return list(Ticket.objects.filter(order_id=order.pk).order_by("seat"))


def ledger_of(order) -> list[tuple[str, int, str]]:
    return [
        (e.kind, e.amount, e.stripe_object_id)
        for e in LedgerEntry.objects.filter(order_id=order.pk).order_by("created_at", "kind")
    ]


def tickets_emails() -> list:
    return [m for m in mail.outbox if m.subject.startswith("Your tickets for")]


def png_attachments(message) -> list:
    return [a for a in message.attachments if not isinstance(a, tuple) and a.get_content_type() == "image/png"]


def stripe_net(fake, payment_intent_id: str) -> int:
    """What the fake Stripe holds for a payment: captured minus refunded (0 if nothing was captured)."""
    pi = fake.payment_intents.get(payment_intent_id)
    if not pi or not pi["latest_charge"]:
        return 0
    charge = fake.charges[pi["latest_charge"]]
    return charge["amount_captured"] - charge["amount_refunded"]


def assert_money_matches(order, fake) -> int:
    """The ledger invariant: sum(payments) - sum(refunds) == Stripe's captured - refunded == the order's amounts."""
    order.refresh_from_db()
    entries = LedgerEntry.objects.filter(order_id=order.pk)
    booked = sum(e.signed_amount for e in entries)
    assert booked == stripe_net(fake, order.stripe_payment_intent_id)
    assert booked == order.paid_amount - order.refunded_amount
    return booked


def order_snapshot(order) -> dict:
    """Every field of the order that processing could change, to show that nothing did."""
    row = Order.objects.filter(pk=order.pk).values().get()
    return {k: row[k] for k in ("status", "attention", "paid_amount", "refunded_amount", "paid_at", "closed_at")}

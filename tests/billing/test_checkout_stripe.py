"""Starting checkout creates one Stripe Checkout Session through the real SDK (against the local fake Stripe),
and a Stripe that fails leaves nothing held: the order is cancelled and its seats are free again."""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from billing import payments, services
from billing.models import Order
from events.models import TicketType
from eventsaas.fields import now_as_stored
from tests.billing.conftest import STANDARD_PRICE, VIP_PRICE, buy, fresh, seats
from tests.support.backends import statements

pytestmark = pytest.mark.django_db

SESSIONS = "/v1/checkout/sessions"


def test_payment_mode_is_stripe_with_the_fake(fake_stripe):
    assert payments.payment_mode() == "stripe"


def test_checkout_creates_one_session_with_the_order_in_minor_units(fake_stripe, ticketed_event, standard, vip):
    before = now_as_stored()  # expires_at is stored to the millisecond
    order = buy(ticketed_event, (standard, 2), (vip, 1))

    calls = fake_stripe.calls("POST", SESSIONS)
    assert len(calls) == 1 and fake_stripe.sessions_created == 1
    sent = calls[0].params
    assert sent["mode"] == "payment"
    assert [
        (item["price_data"]["unit_amount"], item["quantity"], item["price_data"]["currency"])
        for item in sent["line_items"]
    ] == [(str(STANDARD_PRICE), "2", "eur"), (str(VIP_PRICE), "1", "eur")]
    assert sent["line_items"][1]["price_data"]["product_data"]["name"] == f"{ticketed_event.name}: VIP"
    assert sent["client_reference_id"] == str(order.pk)
    ids = {"order_id": str(order.pk), "tenant_id": str(ticketed_event.tenant_id), "event_id": str(ticketed_event.pk)}
    assert sent["metadata"] == ids
    assert sent["payment_intent_data"]["metadata"] == ids  # charge.refunded finds the order by these
    assert sent["customer_email"] == "ada@example.com"
    assert calls[0].headers["Idempotency-Key"] == f"order-{order.pk}-checkout"

    # The order holds its seats for ORDER_HOLD_MINUTES (30); the session closes a minute later, so Stripe's own
    # "expired" event usually comes before the expiry sweep.
    assert order.expires_at - before >= timedelta(minutes=30)
    assert int(sent["expires_at"]) == int((order.expires_at + timedelta(minutes=1)).timestamp())

    session_id, session = next(iter(fake_stripe.sessions.items()))
    assert session["amount_total"] == 2 * STANDARD_PRICE + VIP_PRICE == order.total
    stored = fresh(order)
    assert stored.status == Order.Status.PENDING
    assert stored.stripe_session_id == session_id
    assert stored.checkout_url == session["url"] == f"{fake_stripe.base_url}/pay/{session_id}"
    assert stored.is_test is False
    assert seats(standard) == (0, 2) and seats(vip) == (0, 1)


def test_a_hold_shorter_than_stripes_minimum_is_ended_by_the_sweep_which_expires_the_session(
    fake_stripe, ticketed_event, standard, settings
):
    settings.ORDER_HOLD_MINUTES = 5
    before = now_as_stored()  # expires_at is stored to the millisecond
    order = buy(ticketed_event, (standard, 2))

    # The seats are held for 5 minutes; Stripe still wants its session to live 30 minutes at least.
    assert timedelta(minutes=5) <= order.expires_at - before < timedelta(minutes=6)
    sent = fake_stripe.calls("POST", SESSIONS)[0].params
    assert int(sent["expires_at"]) == int((order.created_at + timedelta(minutes=31)).timestamp())

    grace = timedelta(seconds=settings.ORDER_EXPIRY_GRACE_SECONDS)
    assert services.orders_expire_due(now=order.expires_at + grace) == 1

    assert fresh(order).status == Order.Status.EXPIRED and seats(standard) == (0, 0)
    session_id = order.stripe_session_id
    assert fake_stripe.calls("POST", f"{SESSIONS}/{session_id}/expire")
    assert fake_stripe.session(session_id)["status"] == "expired"  # nobody can pay the expired order any more
    # A second sweep finds nothing and calls Stripe no more.
    assert services.orders_expire_due(now=order.expires_at + grace) == 0
    assert len(fake_stripe.calls("POST", f"{SESSIONS}/{session_id}/expire")) == 1


def test_success_and_cancel_urls_lead_back_to_the_buyers_order(fake_stripe, ticketed_event, standard, settings):
    order = buy(ticketed_event, (standard, 1))

    sent = fake_stripe.calls("POST", SESSIONS)[0].params
    assert sent["success_url"] == settings.SITE_URL + services.order_page_path(order) + "?paid=1"
    assert sent["cancel_url"] == settings.SITE_URL + services.order_cancel_path(order)


@pytest.mark.parametrize(
    ("status", "attempts"),
    [
        (500, 3),  # the first try and the SDK's two retries (STRIPE_MAX_NETWORK_RETRIES) all fail
        (400, 1),  # Stripe refuses the request: not retried
        (429, 1),  # rate limited: the SDK does not retry it, the buyer may
    ],
)
def test_stripe_failing_cancels_the_order_and_frees_its_seats(
    fake_stripe, no_backoff, ticketed_event, standard, vip, status, attempts
):
    fake_stripe.fail_next(3, status)

    with pytest.raises(services.PaymentsUnavailable):
        buy(ticketed_event, (standard, 2), (vip, 1))

    assert len(fake_stripe.calls("POST", SESSIONS)) == attempts
    assert fake_stripe.sessions_created == 0
    order = Order.objects.get()
    assert order.status == Order.Status.CANCELLED and order.closed_at is not None
    assert order.stripe_session_id == "" and order.checkout_url == ""
    assert not Order.objects.filter(status=Order.Status.PENDING).exists()
    assert seats(standard) == (0, 0) and seats(vip) == (0, 0)
    # Nothing left for the sweep: it finds no pending order, and releasing again cannot go below zero.
    assert services.orders_expire_due(now=timezone.now() + timedelta(days=1)) == 0
    assert seats(standard) == (0, 0)


def test_a_transient_failure_is_retried_by_the_sdk_with_the_same_key(fake_stripe, no_backoff, ticketed_event, standard):
    fake_stripe.fail_next(2, 500)

    order = buy(ticketed_event, (standard, 1))

    calls = fake_stripe.calls("POST", SESSIONS)
    assert len(calls) == 3
    assert {c.headers["Idempotency-Key"] for c in calls} == {f"order-{order.pk}-checkout"}
    assert fake_stripe.sessions_created == 1
    assert fresh(order).stripe_session_id in fake_stripe.sessions


def test_a_lost_response_is_retried_and_creates_no_second_session(fake_stripe, no_backoff, ticketed_event, standard):
    fake_stripe.drop_next(1)

    order = buy(ticketed_event, (standard, 1))

    assert len(fake_stripe.calls("POST", SESSIONS)) == 2
    assert fake_stripe.sessions_created == 1
    assert fresh(order).stripe_session_id == next(iter(fake_stripe.sessions))


def test_sold_out_calls_stripe_not_at_all(fake_stripe, ticketed_event, vip):
    buy(ticketed_event, (vip, 2))

    with pytest.raises(services.SoldOut) as caught:
        buy(ticketed_event, (vip, 1), email="late@example.com")

    assert [t.pk for t in caught.value.ticket_types] == [vip.pk]
    assert len(fake_stripe.calls("POST", SESSIONS)) == 1
    assert Order.objects.count() == 1
    assert seats(vip) == (0, 2)


def test_a_type_sold_out_when_read_is_answered_without_writing_anything(fake_stripe, ticketed_event, standard, vip):
    """A rush's late buyers: the ticket types as read already say sold out, so no seat write and no waitlist read."""
    buy(ticketed_event, (vip, 2))

    with CaptureQueriesContext(connection) as queries, pytest.raises(services.SoldOut) as caught:
        buy(ticketed_event, (standard, 1), (vip, 1), email="late@example.com")

    assert [(t.pk, t.remaining) for t in caught.value.ticket_types] == [(vip.pk, 0)]
    assert statements(queries, "UPDATE") == statements(queries, "INSERT") == []
    assert statements(queries, "SELECT", "billing_waitlistentry") == []
    assert seats(standard) == (0, 0) and seats(vip) == (0, 2)


def test_seats_taken_after_they_were_read_are_still_refused_by_the_reservation(
    fake_stripe, ticketed_event, vip, monkeypatch
):
    """Seats left when read prove nothing: another buyer may take them before this one's reservation."""
    read = services.checkout._checkout_lines

    def read_then_someone_else_buys(**kwargs):
        checked = read(**kwargs)
        TicketType.objects.filter(pk=vip.pk).update(sold=F("capacity"))
        return checked

    monkeypatch.setattr(services.checkout, "_checkout_lines", read_then_someone_else_buys)

    with pytest.raises(services.SoldOut) as caught:
        buy(ticketed_event, (vip, 1))

    assert [(t.pk, t.remaining) for t in caught.value.ticket_types] == [(vip.pk, 0)]  # as stored, not as read
    assert seats(vip) == (2, 0)
    assert Order.objects.count() == 0 and fake_stripe.calls("POST", SESSIONS) == []

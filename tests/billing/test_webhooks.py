"""The Stripe webhook endpoint: real signatures (the SDK verifies them), events stored once and processed by the
task, replays and out-of-order deliveries giving the same result, and the payload treated as a trigger only."""

import time
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing import services
from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
from billing.payments import signature_header
from billing.services import orders, webhooks
from eventsaas.models import AuditLog
from guests.models import Guest
from tests.billing.conftest import (
    STANDARD_PRICE,
    VIP_PRICE,
    WEBHOOK_URL,
    assert_money_matches,
    buy,
    expired_event,
    fresh,
    ledger_of,
    order_snapshot,
    png_attachments,
    seats,
    stripe_event,
    tickets_emails,
    tickets_of,
)
from tests.factories import TicketedEventFactory, TicketTypeFactory
from tests.support.backends import NO_ROLLBACK, statements
from tests.support.stripe_fixtures import STRIPE_WEBHOOK_SECRET

pytestmark = pytest.mark.django_db


@pytest.fixture
def order(fake_stripe, ticketed_event, standard, vip):
    """Two standard seats and one VIP seat, pending at Stripe Checkout."""
    return buy(ticketed_event, (standard, 2), (vip, 1))


def assert_paid_once(order, fake_stripe, standard, vip):
    """The end state of one successful payment of `order` (2 standard + 1 VIP)."""
    order = fresh(order)
    assert order.status == Order.Status.PAID and order.paid_at is not None
    tickets = tickets_of(order)
    assert [(t.seat, t.ticket_type_id, t.price, t.status) for t in tickets] == [
        (1, standard.pk, STANDARD_PRICE, Ticket.Status.VALID),
        (2, standard.pk, STANDARD_PRICE, Ticket.Status.VALID),
        (3, vip.pk, VIP_PRICE, Ticket.Status.VALID),
    ]
    assert len({t.code for t in tickets}) == 3
    assert seats(standard) == (2, 0) and seats(vip) == (1, 0)
    assert ledger_of(order) == [("payment", order.total, order.stripe_payment_intent_id)]
    assert_money_matches(order, fake_stripe)
    emails = tickets_emails()
    assert len(emails) == 1 and emails[0].to == [order.buyer_email]
    assert len(png_attachments(emails[0])) == 3


# --- A correctly signed payment ------------------------------------------------------------------


def test_signed_completed_event_pays_the_order_and_issues_one_ticket_per_seat(
    fake_stripe, order, standard, vip, webhook
):
    event = fake_stripe.complete(order.stripe_session_id)

    response = webhook(event)

    assert response.status_code == 200
    row = WebhookEvent.objects.get()
    assert (row.stripe_event_id, row.type, row.status) == (event["id"], "checkout.session.completed", "processed")
    assert row.order_id == order.pk and row.tenant_id == order.tenant_id
    assert fresh(order).stripe_payment_intent_id == event["data"]["object"]["payment_intent"]
    assert_paid_once(order, fake_stripe, standard, vip)
    # The QR images are the tickets' codes, named as printed.
    filenames = sorted(a.get_filename() for a in png_attachments(tickets_emails()[0]))
    assert filenames == sorted(f"ticket-{t.display_code}.png" for t in tickets_of(order))


def test_processing_a_payment_reads_nothing_it_already_has(fake_stripe, order, standard, vip, monkeypatch):
    """The hot path after a rush: the order read once, without its event, and what was just written is not read
    back (the ledger entry, the tickets, the holder's guest). Each statement costs a round trip on every backend."""
    body, signature = fake_stripe.signed_payload(fake_stripe.complete(order.stripe_session_id), STRIPE_WEBHOOK_SECRET)
    # Stored, not processed yet; then processed without the email (a task of its own). On MongoDB on-commit
    # work runs at once, so the tasks are not sent at all.
    for module in (webhooks, orders):
        monkeypatch.setattr(module, "enqueue_on_commit", lambda *args, **kwargs: None)
    row, _created = services.webhook_receive(payload=body, signature=signature)

    with CaptureQueriesContext(connection) as queries:
        services.webhook_event_process(webhook_event=row)

    assert fresh(order).status == Order.Status.PAID
    # Nor the event, not even joined to the order: the holder guest needs only its ids, which the order has.
    assert statements(queries, "SELECT", "events_event") == []
    # The order read once: its first payment moves it from pending to paid in one write, with the payment
    # intent and the ledger's totals.
    assert len(statements(queries, "SELECT", main_table="billing_order")) == 1
    assert len(statements(queries, "UPDATE", main_table="billing_order")) == 1
    # No seats looked for (a first payment has no tickets yet): the holder inserted first, then the tickets
    # pointing at it in one insert, so nothing is linked or counted afterwards.
    assert statements(queries, "SELECT", main_table="billing_ticket") == []
    assert statements(queries, "UPDATE", main_table="billing_ticket") == []
    assert set(Ticket.objects.filter(order=order).values_list("guest__holder_key", flat=True)) == {f"order:{order.pk}"}
    # The holder inserted already coming for its tickets, never read and never written again.
    assert statements(queries, "SELECT", main_table="guests_guest") == []
    assert statements(queries, "UPDATE", main_table="guests_guest") == []
    # Nor the event row read back at the end.
    assert statements(queries, "SELECT", main_table="billing_webhookevent") == []
    # Nor the ledger: the payment was just booked, for an order no event had named a payment intent for.
    assert statements(queries, "SELECT", main_table="billing_ledgerentry") == []
    # The order paid, the holder created and coming: one audit insert; and no savepoint around each insert
    # that could be refused (eventsaas.db.run_optimistically). One savepoint on SQL: the test's transaction
    # makes the whole attempt one.
    assert len(statements(queries, "INSERT", main_table="tenants_auditlog")) == 1
    savepoints = [q["sql"] for q in queries.captured_queries if q["sql"].upper().startswith("SAVEPOINT")]
    assert len(savepoints) == NO_ROLLBACK.pick(sql=1, mongodb=0)
    holder = Guest.objects.get(holder_key=f"order:{order.pk}")
    assert (holder.status, holder.num_guests, holder.expected_guests, holder.answered_by_kind) == (
        Guest.Status.COMING,
        3,
        3,
        Guest.AnsweredBy.TICKETS,
    )
    history = dict(AuditLog.objects.filter(object_id=holder.pk).values_list("action", "data"))
    assert sorted(history) == ["guest.created", "rsvp.coming"]
    assert history["rsvp.coming"] == {
        "answered_by": "tickets",
        "status": "coming",
        "num_guests": 3,
        "previous_status": "pending",
        "previous_num_guests": 0,
        "via": "tickets",
        "reason": "issued",
    }


def test_a_payment_already_in_the_ledger_is_processed_again_the_careful_way_and_pays_once(
    fake_stripe, order, standard, vip, webhook
):
    """The first attempt takes no savepoints (eventsaas.db.run_optimistically): the ledger refusing the payment
    ends it, with its writes and on-commit tasks on SQL, and the second attempt, with savepoints, pays the order
    once: one ledger entry, one set of tickets, one email, one "paid" entry in the history."""
    event = fake_stripe.complete(order.stripe_session_id)
    # Booked by an earlier attempt that stopped right after (a worker killed where writes stand alone).
    LedgerEntry.objects.create(
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        order_id=order.pk,
        kind=LedgerEntry.Kind.PAYMENT,
        amount=order.total,
        currency=order.currency,
        stripe_object_id=event["data"]["object"]["payment_intent"],
    )

    response = webhook(event)

    assert response.status_code == 200
    assert WebhookEvent.objects.get().status == WebhookEvent.Status.PROCESSED
    assert_paid_once(order, fake_stripe, standard, vip)
    assert AuditLog.objects.filter(action="order.paid", object_id=order.pk).count() == 1
    assert Guest.objects.filter(holder_key=f"order:{order.pk}").count() == 1


# --- Refused deliveries change nothing --------------------------------------------------------------


def _refusals(fake_stripe, body: bytes) -> list[tuple[str, bytes, str]]:
    """(name, body, Stripe-Signature) of deliveries that must be refused."""
    good = fake_stripe.sign(body, STRIPE_WEBHOOK_SECRET)
    tampered = body.replace(b'"amount_total": 11000', b'"amount_total": 100')
    assert tampered != body
    return [
        ("unsigned", body, ""),
        ("wrong secret", body, fake_stripe.sign(body, "whsec_someone_else")),
        ("tampered body", tampered, good),
        ("signature of another body", body, fake_stripe.sign(tampered, STRIPE_WEBHOOK_SECRET)),
        ("older than 300 s", body, fake_stripe.sign(body, STRIPE_WEBHOOK_SECRET, timestamp=int(time.time()) - 301)),
        ("garbage header", body, "t=abc,v1=xyz"),
        ("not JSON", b"{not json", fake_stripe.sign(b"{not json", STRIPE_WEBHOOK_SECRET)),
        ("JSON without an id", b"{}", fake_stripe.sign(b"{}", STRIPE_WEBHOOK_SECRET)),
        ("JSON, not an object", b'["evt_1"]', fake_stripe.sign(b'["evt_1"]', STRIPE_WEBHOOK_SECRET)),
        ("JSON string", b'"evt_1"', fake_stripe.sign(b'"evt_1"', STRIPE_WEBHOOK_SECRET)),
        ("signed, not UTF-8", b'{"id": "\xff"}', signature_header(b'{"id": "\xff"}', STRIPE_WEBHOOK_SECRET)),
    ]


def test_unsigned_badly_signed_old_or_malformed_deliveries_are_400_and_store_nothing(
    fake_stripe, order, standard, vip, webhook
):
    event = fake_stripe.complete(order.stripe_session_id)
    body = fake_stripe.payload(event)
    before = order_snapshot(order)

    for name, sent_body, header in _refusals(fake_stripe, body):
        response = webhook(event, body=sent_body, header=header)
        assert response.status_code == 400, name
        assert WebhookEvent.objects.count() == 0, name

    assert order_snapshot(order) == before
    assert fresh(order).status == Order.Status.PENDING
    assert Ticket.objects.count() == 0 and LedgerEntry.objects.count() == 0
    assert seats(standard) == (0, 2) and seats(vip) == (0, 1)
    assert tickets_emails() == []

    # The same bytes, signed properly, are accepted: the refusals were about the signatures, not the event.
    assert webhook(event, body=body).status_code == 200
    assert fresh(order).status == Order.Status.PAID


def test_a_signature_within_the_tolerance_is_accepted(fake_stripe, order, webhook):
    event = fake_stripe.complete(order.stripe_session_id)

    assert webhook(event, timestamp=int(time.time()) - 240).status_code == 200
    assert fresh(order).status == Order.Status.PAID


def test_get_is_405_and_stores_nothing(fake_stripe, client):
    assert client.get(WEBHOOK_URL).status_code == 405
    assert WebhookEvent.objects.count() == 0


# --- Exactly once -------------------------------------------------------------------------------------------


def test_replaying_the_same_delivery_is_200_and_processes_nothing_again(fake_stripe, order, standard, vip, webhook):
    event = fake_stripe.complete(order.stripe_session_id)
    body = fake_stripe.payload(event)
    header = fake_stripe.sign(body, STRIPE_WEBHOOK_SECRET)
    assert webhook(event, body=body, header=header).status_code == 200
    paid_at = fresh(order).paid_at

    response = webhook(event, body=body, header=header)

    assert response.status_code == 200
    assert WebhookEvent.objects.count() == 1
    assert WebhookEvent.objects.get().attempts == 1
    assert fresh(order).paid_at == paid_at
    assert_paid_once(order, fake_stripe, standard, vip)


def test_the_same_event_three_times_and_a_second_event_for_the_session_give_one_set_of_tickets(
    fake_stripe, order, standard, vip, webhook
):
    completed = fake_stripe.complete(order.stripe_session_id)
    # Stripe redelivers with a new signature each time; a second event type reports the same payment.
    succeeded = stripe_event("checkout.session.async_payment_succeeded", completed["data"]["object"])

    responses = [webhook(completed, timestamp=int(time.time()) - n) for n in range(3)] + [webhook(succeeded)]

    assert [r.status_code for r in responses] == [200] * 4
    assert webhook_rows_by_type() == {"checkout.session.completed": 1, "checkout.session.async_payment_succeeded": 1}
    assert set(WebhookEvent.objects.values_list("status", flat=True)) == {"processed"}
    assert_paid_once(order, fake_stripe, standard, vip)


def webhook_rows_by_type() -> dict[str, int]:
    counts: dict[str, int] = {}
    for event_type in WebhookEvent.objects.values_list("type", flat=True):
        counts[event_type] = counts.get(event_type, 0) + 1
    return counts


# --- Out of order ------------------------------------------------------------------------------------------


def test_expired_after_completed_changes_nothing(fake_stripe, order, standard, vip, webhook):
    open_session = fake_stripe.session(order.stripe_session_id)
    webhook(fake_stripe.complete(order.stripe_session_id))

    response = webhook(expired_event(open_session))

    assert response.status_code == 200
    assert_paid_once(order, fake_stripe, standard, vip)
    assert fresh(order).closed_at is None


def test_completed_after_expired_with_seats_free_is_a_late_payment_honoured(fake_stripe, order, standard, vip, webhook):
    webhook(expired_event(fake_stripe.session(order.stripe_session_id)))
    assert fresh(order).status == Order.Status.EXPIRED
    assert seats(standard) == (0, 0) and seats(vip) == (0, 0)

    webhook(fake_stripe.complete(order.stripe_session_id))

    assert_paid_once(order, fake_stripe, standard, vip)
    assert fresh(order).attention == ""


def test_completed_after_expired_when_the_seats_were_sold_is_marked_for_refund(
    fake_stripe, ticketed_event, vip, webhook
):
    late = buy(ticketed_event, (vip, 2), email="late@example.com")
    webhook(expired_event(fake_stripe.session(late.stripe_session_id)))
    other = buy(ticketed_event, (vip, 2), email="quick@example.com")
    webhook(fake_stripe.complete(other.stripe_session_id))
    assert seats(vip) == (2, 0)

    webhook(fake_stripe.complete(late.stripe_session_id))

    late = fresh(late)
    assert (late.status, late.attention) == (Order.Status.REFUND_DUE, Order.Attention.SEATS_GONE)
    assert tickets_of(late) == []
    assert ledger_of(late) == [("payment", 2 * VIP_PRICE, late.stripe_payment_intent_id)]
    assert_money_matches(late, fake_stripe)
    assert seats(vip) == (2, 0)  # not oversold
    assert len(tickets_of(other)) == 2
    assert [m.to for m in tickets_emails()] == [["quick@example.com"]]


def test_async_payment_failed_cancels_and_frees_the_seats(fake_stripe, order, standard, vip, webhook):
    webhook(fake_stripe.complete(order.stripe_session_id, paid=False))
    assert fresh(order).status == Order.Status.PENDING
    assert seats(standard) == (0, 2)

    webhook(fake_stripe.async_payment_failed(order.stripe_session_id))

    order = fresh(order)
    assert order.status == Order.Status.CANCELLED
    assert seats(standard) == (0, 0) and seats(vip) == (0, 0)
    assert tickets_of(order) == [] and ledger_of(order) == []
    assert_money_matches(order, fake_stripe)


def test_delayed_payment_is_paid_once_when_it_clears(fake_stripe, order, standard, vip, webhook):
    completed = fake_stripe.complete(order.stripe_session_id, paid=False)
    webhook(completed)
    order = fresh(order)
    assert order.status == Order.Status.PENDING and tickets_of(order) == [] and ledger_of(order) == []
    assert order.stripe_payment_intent_id == completed["data"]["object"]["payment_intent"]

    succeeded = fake_stripe.async_payment_succeeded(order.stripe_session_id)
    webhook(succeeded)
    webhook(succeeded)
    webhook(completed)  # the unpaid completion again, late

    assert_paid_once(order, fake_stripe, standard, vip)


# --- Amount or currency mismatch -----------------------------------------------------------------------------------


@pytest.mark.parametrize("change", [{"amount_total": 100}, {"currency": "usd"}])
def test_a_payment_of_another_amount_or_currency_needs_review_and_keeps_the_seats(
    fake_stripe, order, standard, vip, webhook, change
):
    webhook(fake_stripe.complete(order.stripe_session_id, **change))

    order = fresh(order)
    assert (order.status, order.attention) == (Order.Status.NEEDS_REVIEW, Order.Attention.AMOUNT_MISMATCH)
    assert tickets_of(order) == []
    assert seats(standard) == (0, 2) and seats(vip) == (0, 1)
    assert_money_matches(order, fake_stripe)
    assert tickets_emails() == []
    # Not swept: the money arrived, the organizer decides.
    assert services.orders_expire_due(now=order.expires_at + timedelta(days=1)) == 0
    assert fresh(order).status == Order.Status.NEEDS_REVIEW
    assert seats(standard) == (0, 2)


# --- The payload is a trigger, checked against our own rows ---------------------------------------------------


def _ignored(fake_stripe, webhook, event, *orders):
    before = [order_snapshot(o) for o in orders]
    response = webhook(event)
    assert response.status_code == 200
    assert WebhookEvent.objects.get(stripe_event_id=event["id"]).status == WebhookEvent.Status.IGNORED
    assert [order_snapshot(o) for o in orders] == before
    assert Ticket.objects.count() == 0 and LedgerEntry.objects.count() == 0
    assert tickets_emails() == []


def test_an_event_naming_another_tenants_order_is_ignored(fake_stripe, order, standard, webhook):
    other_event = TicketedEventFactory()
    other_type = TicketTypeFactory(event=other_event, price=100)
    theirs = buy(other_event, (other_type, 1), email="bob@example.com")
    event = fake_stripe.complete(order.stripe_session_id)
    session = event["data"]["object"]
    session["metadata"]["order_id"] = session["client_reference_id"] = str(theirs.pk)

    _ignored(fake_stripe, webhook, event, order, theirs)
    assert seats(other_type) == (0, 1) and seats(standard) == (0, 2)


def test_an_event_paying_our_session_with_all_the_ids_of_another_tenants_order_is_ignored(fake_stripe, order, webhook):
    other_event = TicketedEventFactory()
    other_type = TicketTypeFactory(event=other_event, price=100)
    theirs = buy(other_event, (other_type, 1), email="bob@example.com")
    event = fake_stripe.complete(order.stripe_session_id)
    # Consistent ids of a real order: only its Checkout Session tells this payment is not for it.
    event["data"]["object"]["metadata"] = {
        "order_id": str(theirs.pk),
        "tenant_id": str(theirs.tenant_id),
        "event_id": str(theirs.event_id),
    }
    event["data"]["object"]["client_reference_id"] = str(theirs.pk)

    _ignored(fake_stripe, webhook, event, order, theirs)
    assert seats(other_type) == (0, 1)


def test_an_event_for_an_unknown_order_is_ignored(fake_stripe, order, webhook):
    event = fake_stripe.complete(order.stripe_session_id)
    event["data"]["object"]["metadata"]["order_id"] = str(uuid.uuid4())
    event["data"]["object"]["client_reference_id"] = None

    _ignored(fake_stripe, webhook, event, order)


@pytest.mark.parametrize("metadata", ["x", ["order_id"], 7])
def test_an_event_whose_metadata_is_not_an_object_is_ignored_not_retried(fake_stripe, order, webhook, metadata):
    """Stripe always sends an object; a signed event that does not is ignored once, not failed ten times."""
    event = fake_stripe.complete(order.stripe_session_id)
    event["data"]["object"]["metadata"] = metadata
    event["data"]["object"]["client_reference_id"] = None

    _ignored(fake_stripe, webhook, event, order)


def test_an_event_with_the_right_order_but_another_session_is_ignored(fake_stripe, ticketed_event, order, webhook):
    event = fake_stripe.complete(order.stripe_session_id)
    event["data"]["object"]["id"] = "cs_test_" + "x" * 58

    _ignored(fake_stripe, webhook, event, order)


def test_an_event_of_a_type_not_handled_is_stored_and_ignored(fake_stripe, order, webhook):
    event = stripe_event("customer.created", {"id": "cus_123", "object": "customer"})

    _ignored(fake_stripe, webhook, event, order)


# --- charge.refunded before its payment ------------------------------------------------------------------------


def test_charge_refunded_before_the_payment_is_retried_and_booked_once_the_payment_is_in(
    fake_stripe, order, standard, vip, webhook
):
    completed = fake_stripe.complete(order.stripe_session_id)
    pi = completed["data"]["object"]["payment_intent"]
    refund = fake_stripe.refund_outside(pi, VIP_PRICE)
    refunded = fake_stripe.charge_refunded(pi)

    assert webhook(refunded).status_code == 200  # stored; its processing failed and will be retried

    row = WebhookEvent.objects.get(stripe_event_id=refunded["id"])
    assert row.status == WebhookEvent.Status.FAILED
    assert "not recorded yet" in row.error and row.attempts >= 1
    assert LedgerEntry.objects.count() == 0 and fresh(order).status == Order.Status.PENDING

    webhook(completed)
    assert fresh(order).status == Order.Status.PAID

    row = services.webhook_event_process(webhook_event=fresh(row))

    assert row.status == WebhookEvent.Status.PROCESSED and row.error == ""
    order = fresh(order)
    assert order.status == Order.Status.PARTIALLY_REFUNDED
    assert ledger_of(order) == [("payment", order.total, pi), ("refund", VIP_PRICE, refund["id"])]
    assert [t.status for t in tickets_of(order)] == ["valid", "valid", "void"]
    assert seats(vip) == (0, 0) and seats(standard) == (2, 0)
    assert assert_money_matches(order, fake_stripe) == 2 * STANDARD_PRICE
    # Processing it again books nothing twice.
    services.webhook_event_process(webhook_event=fresh(row))
    assert len(ledger_of(order)) == 2


def test_the_stale_events_sweep_reprocesses_a_failed_refund_event(
    fake_stripe, order, vip, webhook, django_capture_on_commit_callbacks
):
    completed = fake_stripe.complete(order.stripe_session_id)
    pi = completed["data"]["object"]["payment_intent"]
    fake_stripe.refund_outside(pi)  # all of it, from Stripe's dashboard
    webhook(fake_stripe.charge_refunded(pi))
    webhook(completed)
    assert fresh(order).status == Order.Status.PAID

    with django_capture_on_commit_callbacks(execute=True):
        requeued = services.webhook_events_requeue_stale(older_than_seconds=0)

    assert requeued == 1
    assert set(WebhookEvent.objects.values_list("status", flat=True)) == {"processed"}
    order = fresh(order)
    assert order.status == Order.Status.REFUNDED
    assert {t.status for t in tickets_of(order)} == {"void"}
    assert seats(vip) == (0, 0)
    assert assert_money_matches(order, fake_stripe) == 0


def test_an_event_whose_worker_dies_every_time_is_sent_again_at_most_ten_times(
    fake_stripe, order, monkeypatch, django_capture_on_commit_callbacks
):
    """A worker killed inside the handler reports no outcome, so the sweep counts its resend: an event that
    kills every worker stops being sent after 10 attempts, where it would otherwise come back every sweep."""
    body, signature = fake_stripe.signed_payload(fake_stripe.complete(order.stripe_session_id), STRIPE_WEBHOOK_SECRET)
    sent = []
    monkeypatch.setattr(webhooks, "enqueue_on_commit", lambda task, **kwargs: sent.append(kwargs))
    row, _created = services.webhook_receive(payload=body, signature=signature)  # its worker then dies

    rounds = [services.webhook_events_requeue_stale(older_than_seconds=0) for _sweep in range(12)]

    assert rounds == [1] * 10 + [0, 0]
    assert len(sent) == 1 + 10
    assert fresh(row).attempts == 10 and fresh(row).status == WebhookEvent.Status.RECEIVED


def test_a_payment_cut_short_leaves_nothing_half_done_and_the_retry_completes_it(
    fake_stripe, order, standard, vip, webhook, monkeypatch, django_capture_on_commit_callbacks
):
    """On SQL databases a delivery's processing is one transaction: a failure between marking the order paid and
    issuing its tickets leaves the order as it was (no paid order without tickets), and the retry does it all."""
    from billing.services import orders
    from eventsaas.db import is_mongodb

    if is_mongodb():
        pytest.skip("Django's atomic() is a no-op on MongoDB: each write stands alone, and the retry completes it")
    before = order_snapshot(order)

    def failing(**kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(orders, "tickets_issue", failing)
    assert webhook(fake_stripe.complete(order.stripe_session_id)).status_code == 200

    row = WebhookEvent.objects.get()
    assert row.status == WebhookEvent.Status.FAILED and "disk full" in row.error
    assert order_snapshot(order) == before
    assert ledger_of(order) == [] and tickets_of(order) == []
    assert seats(standard) == (0, 2) and seats(vip) == (0, 1)

    monkeypatch.undo()
    with django_capture_on_commit_callbacks(execute=True):  # the tickets email goes after the commit
        services.webhook_event_process(webhook_event=row)

    assert fresh(row).status == WebhookEvent.Status.PROCESSED
    assert_paid_once(order, fake_stripe, standard, vip)

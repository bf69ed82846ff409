"""Races of ticket sales with real parallel connections: seats, duplicate webhooks, check-in, expiry.

Every test starts its threads together at a barrier. Django gives each thread
its own database connection (opened before the barrier, closed when the thread
ends), and the module is transactional, so each service call commits as it does
in production and the threads see each other's writes at once. On SQLite the
writers take turns on the file's lock; on PostgreSQL they really overlap.

The control test swaps the conditional seat update for a read-check-write and
shows that the same rush then oversells (pretix's concurrency tests do the
same): the protected rush passing is evidence, not luck. `ticketed_event` comes
from tests/billing/conftest.py.
"""

import threading
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from functools import partial

import pytest
from django.db import connection
from django.utils import timezone

from billing import payments, services
from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
from billing.services import (
    CheckoutItem,
    CheckoutRequest,
    SoldOut,
    checkout_start,
    orders_expire_due,
    ticket_check_in,
    webhook_event_process,
    webhook_receive,
)
from billing.services import orders as billing_orders
from billing.services import webhooks as billing_webhooks
from events import services as events_services
from events.models import TicketType
from eventsaas.db import atomic
from eventsaas.models import AuditLog
from guests.models import Guest
from tests.factories import TicketTypeFactory
from tests.support.backends import WRITE_CONFLICT

pytestmark = pytest.mark.django_db(transaction=True)

CAPACITY = 10
BUYERS = 40


@dataclass
class Outcome:
    value: object = None
    error: BaseException | None = None


def run_together(calls) -> list[Outcome]:
    """Run each call in its own thread, all released at once; what each returned or raised, in order."""
    barrier = threading.Barrier(len(calls))
    outcomes = [Outcome() for _ in calls]

    def run(index, call):
        try:
            # Connecting takes milliseconds; done before the barrier so the calls themselves start together.
            connection.ensure_connection()
            barrier.wait(timeout=20)
            outcomes[index].value = call()
        except BaseException as exc:  # noqa: BLE001 - handed back to the test
            outcomes[index].error = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(n, call), daemon=True) for n, call in enumerate(calls)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads), "a thread did not finish"
    return outcomes


def raise_unexpected(outcomes: list[Outcome], expected=()) -> None:
    for outcome in outcomes:
        if outcome.error is not None and not isinstance(outcome.error, expected):
            raise outcome.error


def buyer_request(ticket_type: TicketType, quantity: int, n: int) -> CheckoutRequest:
    return CheckoutRequest(
        items=[CheckoutItem(ticket_type_id=str(ticket_type.pk), quantity=quantity)],
        buyer_name=f"Buyer {n}",
        buyer_email=f"buyer{n}@example.com",
    )


def rush(event, ticket_type: TicketType, quantities: list[int]) -> tuple[list[Order], list[int]]:
    """One buyer per quantity, all at once: (the orders created, the quantities refused as sold out)."""
    outcomes = run_together(
        [
            partial(checkout_start, event=event, request=buyer_request(ticket_type, q, n))
            for n, q in enumerate(quantities)
        ]
    )
    raise_unexpected(outcomes, SoldOut)
    refused = [q for q, outcome in zip(quantities, outcomes, strict=True) if isinstance(outcome.error, SoldOut)]
    for outcome in outcomes:
        if outcome.error is not None:
            assert [t.pk for t in outcome.error.ticket_types] == [ticket_type.pk]
    ticket_type.refresh_from_db()
    return [outcome.value for outcome in outcomes if outcome.error is None], refused


def naive_seats_reserve(*, ticket_type_id, quantity: int) -> bool:
    """The race the conditional update prevents: read, check in Python, write the absolute number."""
    row = TicketType.objects.filter(pk=ticket_type_id).values("capacity", "sold", "reserved").get()
    if row["sold"] + row["reserved"] + quantity > row["capacity"]:
        return False
    time.sleep(0.02)  # a busy server between the read and the write; widens the window every buyer shares
    TicketType.objects.filter(pk=ticket_type_id).update(reserved=row["reserved"] + quantity)
    return True


# --- Seats ----------------------------------------------------------------------------------------


def test_forty_simultaneous_buyers_for_ten_seats_get_exactly_ten_and_paying_sells_exactly_ten(
    ticketed_event, mailoutbox
):
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=CAPACITY, price=2500)

    orders, refused = rush(ticketed_event, ticket_type, [1] * BUYERS)

    assert len(orders) == CAPACITY
    assert len(refused) == BUYERS - CAPACITY
    assert (ticket_type.reserved, ticket_type.sold) == (CAPACITY, 0)
    assert Order.objects.filter(event=ticketed_event, status=Order.Status.PENDING).count() == CAPACITY

    payment_events = [payments.simulated_payment_event(order=order) for order in orders]
    outcomes = run_together([partial(webhook_receive, payload=p, signature=s) for p, s in payment_events])
    raise_unexpected(outcomes)

    ticket_type.refresh_from_db()
    assert (ticket_type.sold, ticket_type.reserved) == (CAPACITY, 0)
    assert Ticket.objects.filter(ticket_type=ticket_type).count() == CAPACITY
    assert set(Order.objects.filter(event=ticketed_event).values_list("status", flat=True)) == {Order.Status.PAID}
    assert LedgerEntry.objects.filter(event=ticketed_event, kind=LedgerEntry.Kind.PAYMENT).count() == CAPACITY
    assert sorted(m.to[0] for m in mailoutbox) == sorted(order.buyer_email for order in orders)


def test_simultaneous_buyers_of_one_to_three_seats_never_oversell(ticketed_event):
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=CAPACITY, max_per_order=3)
    quantities = [n % 3 + 1 for n in range(BUYERS)]

    orders, refused = rush(ticketed_event, ticket_type, quantities)

    held = sum(order.quantity for order in orders)
    assert ticket_type.reserved == held
    assert held <= CAPACITY
    assert len(orders) + len(refused) == BUYERS
    # Seats only ever went down during the rush, so each refused buyer wanted more than is left even now.
    assert refused and min(refused) > CAPACITY - held


def test_control_a_read_check_write_reservation_oversells_the_same_rush(ticketed_event, monkeypatch):
    """Without the conditional update the rush above sells more than the capacity: the race is real."""
    monkeypatch.setattr(events_services, "seats_reserve", naive_seats_reserve)
    for _attempt in range(3):
        ticket_type = TicketTypeFactory(event=ticketed_event, capacity=CAPACITY)
        orders, _refused = rush(ticketed_event, ticket_type, [1] * BUYERS)
        if len(orders) > CAPACITY:
            break

    assert len(orders) > CAPACITY, "the unprotected rush did not oversell: this harness cannot show a race"
    # Lost updates: the counter forgot some of the seats the orders hold.
    assert ticket_type.reserved < len(orders)


# --- Webhooks -------------------------------------------------------------------------------------

DELIVERIES = 8


@pytest.mark.parametrize("delivery", ["same_event_posted", "same_stored_event_processed", "distinct_event_ids"])
def test_simultaneous_deliveries_of_one_payment_book_it_once_and_issue_tickets_once(
    delivery, ticketed_event, mailoutbox, monkeypatch
):
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=5, price=1500)
    order = checkout_start(event=ticketed_event, request=buyer_request(ticket_type, 3, 0))

    if delivery == "same_event_posted":
        payload, signature = payments.simulated_payment_event(order=order)
        calls = [partial(webhook_receive, payload=payload, signature=signature)] * DELIVERIES
    elif delivery == "same_stored_event_processed":
        # Stored once, then picked up by several workers at once (a redelivered task, a requeue sweep).
        payload, signature = payments.simulated_payment_event(order=order)
        with monkeypatch.context() as patch:
            patch.setattr(billing_webhooks, "enqueue_on_commit", lambda *args, **kwargs: None)
            row, _created = webhook_receive(payload=payload, signature=signature)

        def process():
            return webhook_event_process(webhook_event=WebhookEvent.objects.get(pk=row.pk))

        calls = [process] * DELIVERIES
    else:
        # Stripe may send several events about one session (completed, async_payment_succeeded, resends).
        calls = [
            partial(webhook_receive, payload=payload, signature=signature)
            for payload, signature in (payments.simulated_payment_event(order=order) for _ in range(DELIVERIES))
        ]

    outcomes = run_together(calls)
    raise_unexpected(outcomes)

    if delivery == "same_event_posted":
        assert sorted(created for _row, created in (o.value for o in outcomes)) == [False] * (DELIVERIES - 1) + [True]
    expected_rows = DELIVERIES if delivery == "distinct_event_ids" else 1
    assert (
        list(WebhookEvent.objects.values_list("status", flat=True)) == [WebhookEvent.Status.PROCESSED] * expected_rows
    )
    order.refresh_from_db()
    assert (order.status, order.paid_amount) == (Order.Status.PAID, 4500)
    assert list(LedgerEntry.objects.filter(order_id=order.pk).values_list("kind", "amount")) == [("payment", 4500)]
    assert AuditLog.objects.filter(action="order.paid", object_id=order.pk).count() == 1
    assert list(Ticket.objects.filter(order_id=order.pk).values_list("seat", flat=True)) == [1, 2, 3]
    ticket_type.refresh_from_db()
    assert (ticket_type.sold, ticket_type.reserved) == (3, 0)
    assert len(mailoutbox) == 1
    # One holder, coming for the three seats and holding them, whichever delivery made the order paid.
    (holder,) = Guest.objects.filter(event_id=ticketed_event.pk, holder_key=f"order:{order.pk}")
    assert (holder.status, holder.num_guests) == (Guest.Status.COMING, 3)
    assert set(Ticket.objects.filter(order_id=order.pk).values_list("guest_id", flat=True)) == {holder.pk}
    assert AuditLog.objects.filter(action="guest.created", object_id=holder.pk).count() == 1


def test_tickets_are_issued_once_while_another_delivery_holds_them_in_an_open_transaction(ticketed_event, monkeypatch):
    """The race of the test above, made certain: one delivery has inserted the tickets and not committed yet.

    SQL makes the second insert wait, then fail on the unique (order, seat) index.
    A MongoDB transaction fails at once with WriteConflict (code 112) instead; the
    backend raises that as a DatabaseError, not an IntegrityError. Either way the
    second delivery falls back to one insert per seat, which waits for the first
    delivery to commit, and each seat ends up with one ticket.
    """
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=5, price=1500)
    order = checkout_start(event=ticketed_event, request=buyer_request(ticket_type, 3, 0))
    holding, release = threading.Event(), threading.Event()
    conflicts = []

    def seats_issued() -> list[int]:
        return list(Ticket.objects.filter(order_id=order.pk).order_by("seat").values_list("seat", flat=True))

    original = billing_orders.is_transient_transaction_error
    monkeypatch.setattr(
        billing_orders, "is_transient_transaction_error", lambda exc: conflicts.append(original(exc)) or original(exc)
    )

    def first_delivery():
        with atomic():
            services.tickets_issue(order=order)
            issued = seats_issued()
            holding.set()
            assert release.wait(timeout=20)
        return issued

    def second_delivery():
        assert holding.wait(timeout=20)
        threading.Timer(0.5, release.set).start()  # commit the first while the second is inside tickets_issue
        services.tickets_issue(order=order)
        return seats_issued()

    outcomes = run_together([first_delivery, second_delivery])

    raise_unexpected(outcomes)
    assert [o.value for o in outcomes] == [[1, 2, 3], [1, 2, 3]]
    assert list(Ticket.objects.filter(order_id=order.pk).values_list("seat", flat=True)) == [1, 2, 3]
    assert conflicts == WRITE_CONFLICT.pick(sql=[], mongodb=[True])


# --- Check-in -------------------------------------------------------------------------------------


def test_simultaneous_scans_of_one_ticket_check_it_in_exactly_once(ticketed_event, owner):
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=5)
    order = checkout_start(event=ticketed_event, request=buyer_request(ticket_type, 1, 0))
    services.order_simulate_payment(order=order)  # imported by name, pytest would collect it as a test
    ticket = Ticket.objects.get(order_id=order.pk)
    # Door scanners send the raw code, people type the printed groups or lower case.
    spellings = [ticket.code, ticket.display_code, ticket.display_code.lower()]

    outcomes = run_together(
        [
            partial(ticket_check_in, event=ticketed_event, code=spellings[n % 3], acting_user=owner)
            for n in range(DELIVERIES)
        ]
    )
    raise_unexpected(outcomes)

    results = [o.value for o in outcomes]
    assert sorted(r.result for r in results) == ["already_checked_in"] * (DELIVERIES - 1) + ["valid"]
    winner = next(r for r in results if r.result == "valid")
    assert {r.checked_in_at for r in results} == {winner.checked_in_at}
    ticket.refresh_from_db()
    assert (ticket.checked_in_at, ticket.checked_in_by) == (winner.checked_in_at, owner)
    assert AuditLog.objects.filter(action="ticket.checked_in", object_id=ticket.pk).count() == 1


# --- Expiry against payment ---------------------------------------------------------------------

ROUNDS = 20


class NoEmail:
    """Stands in for the confirmation email task where the email is not what a test looks at (it is slow)."""

    name = "billing.order_confirmation_send"

    def apply_async(self, args=(), kwargs=None):
        pass


def test_expiry_sweep_and_payment_at_the_same_moment_neither_leak_nor_double_release_seats(ticketed_event, monkeypatch):
    """Each round: the sweep, the order's payment, and a second buyer who wants the same two seats.

    Across the rounds the head start moves from the sweep to the payment: the payment starts
    up to a payment's time (measured first) after the sweep, then the sweep up to that long after
    the payment, so the sweep wins, the payment wins, and the moments in between all happen,
    however a loaded machine schedules the threads. Whatever the order, the seats counted on the ticket type
    are exactly those of paid and pending orders, and a payment is never dropped: its order
    is paid, or flagged for a refund when the seats went to the second buyer meanwhile.
    """
    later = timezone.now() + timedelta(hours=2)
    monkeypatch.setattr(billing_orders, "_confirmation_task", NoEmail)

    def new_round(n):
        ticket_type = TicketTypeFactory(event=ticketed_event, capacity=2, max_per_order=2)
        order = checkout_start(event=ticketed_event, request=buyer_request(ticket_type, 2, n))
        return ticket_type, order, payments.simulated_payment_event(order=order)

    timings = []
    for n in (-2, -1):  # the first payment also loads templates and code: the second one is timed
        _ticket_type, _order, (payload, signature) = new_round(n)
        started = time.perf_counter()
        webhook_receive(payload=payload, signature=signature)
        timings.append(time.perf_counter() - started)
    payment_seconds = timings[-1]

    rounds = []
    for n in range(ROUNDS):
        ticket_type, order, (payload, signature) = new_round(n)
        # From -1.2 to +1.2 payments: below 0 the payment waits, above 0 the sweep does.
        head_start = 1.2 * payment_seconds * (2 * n / (ROUNDS - 1) - 1)
        sweep_waits, payment_waits = max(head_start, 0), max(-head_start, 0)

        swept = threading.Event()

        def sweep(delay=sweep_waits, swept=swept):
            time.sleep(delay)
            try:
                return orders_expire_due(now=later)
            finally:
                swept.set()

        def pay(delay=payment_waits, payload=payload, signature=signature):
            time.sleep(delay)
            return webhook_receive(payload=payload, signature=signature)

        def walk_in(ticket_type=ticket_type, n=n, swept=swept):
            # Asks for the seats as soon as the sweep may have freed them, racing the late payment.
            swept.wait(timeout=10)
            for _attempt in range(3):
                try:
                    return checkout_start(event=ticketed_event, request=buyer_request(ticket_type, 2, 1000 + n))
                except SoldOut:
                    time.sleep(0.002)
            return None

        outcomes = run_together([sweep, pay, walk_in])
        raise_unexpected(outcomes)
        rounds.append((ticket_type, order, outcomes[2].value))

    seen = Counter()
    for ticket_type, order, walk_in_order in rounds:
        ticket_type.refresh_from_db()
        orders = [o for o in Order.objects.filter(pk__in=[order.pk, getattr(walk_in_order, "pk", None)])]
        paid = sum(o.quantity for o in orders if o.is_paid)
        pending = sum(o.quantity for o in orders if o.status == Order.Status.PENDING)
        assert (ticket_type.sold, ticket_type.reserved) == (paid, pending), [(o.status, o.quantity) for o in orders]
        for o in orders:
            assert Ticket.objects.filter(order_id=o.pk).count() == (o.quantity if o.is_paid else 0)

        order.refresh_from_db()
        assert LedgerEntry.objects.filter(order_id=order.pk, kind=LedgerEntry.Kind.PAYMENT).count() == 1
        assert order.status in {Order.Status.PAID, Order.Status.REFUND_DUE}, (
            f"a payment was dropped: the order is {order.status} with {order.paid_amount} paid"
        )
        paid_audit = AuditLog.objects.filter(action="order.paid", object_id=order.pk).first()
        if order.status == Order.Status.REFUND_DUE:
            assert order.attention == Order.Attention.SEATS_GONE
            seen["sweep first, seats gone: refund due"] += 1
        elif paid_audit.data["late"]:
            seen["sweep first, paid late"] += 1
        else:
            seen["payment first"] += 1

    # Both orders happened, so the rounds above checked both sides of the race.
    assert 0 < seen["payment first"] < ROUNDS, seen


def test_a_payment_whose_order_the_sweep_closes_between_its_read_and_its_update_is_honoured_late(
    ticketed_event, monkeypatch
):
    """The narrowest interleaving of the race above, made to happen every time.

    The payment reads the order as pending; the sweep expires it and frees its seats; the
    payment's pending -> paid update then matches nothing. The payment must count as a late
    one (paid if the seats are still free, else refund due), not vanish.
    """
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=2, max_per_order=2)
    order = checkout_start(event=ticketed_event, request=buyer_request(ticket_type, 2, 0))
    swept = []
    stamp = billing_orders.now_as_stored

    def stamp_then_sweep():
        # Taken last before the payment's pending -> paid compare-and-set (billing.services.orders).
        result = stamp()
        if not swept:
            swept.append(None)  # the sweep takes a time stamp too
            swept[0] = orders_expire_due(now=timezone.now() + timedelta(hours=2))
        return result

    monkeypatch.setattr(billing_orders, "now_as_stored", stamp_then_sweep)
    services.order_simulate_payment(order=order)

    assert swept == [1]
    order.refresh_from_db()
    assert (order.status, order.paid_amount) == (Order.Status.PAID, order.total)
    assert AuditLog.objects.get(action="order.paid", object_id=order.pk).data["late"] is True
    assert Ticket.objects.filter(order_id=order.pk).count() == 2
    ticket_type.refresh_from_db()
    assert (ticket_type.sold, ticket_type.reserved) == (2, 0)

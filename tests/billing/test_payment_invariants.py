"""A payment's books, seats, tickets and ticket holder hold after every step of random sequences (Hypothesis).

A rule-based state machine sells a small ticket type (6 seats, two orders pending at the start) and walks
random sequences of the real services: checkouts of 1-3 seats, payments delivered (a first one, another event
about the same paid session, or the very same stored event processed again), sessions that expire at Stripe,
the sweep closing pending orders (so later payments are late ones, honoured while seats are free), refunds of
part or all of an order, and tickets voided at the door. Webhook deliveries go through the real
store-and-process path in test-payment mode; tasks the services send on commit stay queued
(tests.support.backends.tasks_left_queued), so every backend walks the same sequences.
After every step, from the rows:

1. sold + reserved <= capacity; reserved == the seats of pending orders; sold == valid tickets;
2. each order's ledger: at most one payment, and payments - refunds == paid_amount - refunded_amount;
3. an order paid at some point has one "order.paid" record and one ticket per seat (seats 1..n); any other
   (pending, closed, or a late payment that found its seats gone: refund due) has neither, nor a holder;
4. every order that was paid has exactly one ticket holder, holding every ticket, coming for as many people as
   it holds valid tickets (declined with none), with one "guest.created" in its history.

The suite's machine settings (tests/support/machines.py: `ci` by default, `deep` on demand). A control
runs the machine with a first payment that forgets to sell its held seats and asserts that the checker catches it.
"""

from django.core.exceptions import ValidationError
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase
from hypothesis.stateful import invariant, precondition, rule, run_state_machine_as_test

from billing import services
from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
from billing.services import orders as orders_services
from events.models import TicketType
from eventsaas.models import AuditLog
from guests.models import Guest
from tests.billing.conftest import buy
from tests.billing.machines import TicketedEventMachine
from tests.factories import TicketTypeFactory
from tests.support.backends import ON_MONGODB
from tests.support.machines import PROFILE, control_settings, machine_settings

MACHINE = machine_settings(ci_examples=15 if ON_MONGODB else 30, steps=25, deep_steps=50)
PRICE = 2500
NEVER_PAID = {Order.Status.PENDING, Order.Status.EXPIRED, Order.Status.CANCELLED}
PAID_ONCE = (Order.Status.PAID, Order.Status.PARTIALLY_REFUNDED, Order.Status.REFUNDED)


class Stats:
    examples = first_payments = late_payments = refunds = voids = 0


class PaymentMachine(TicketedEventMachine):
    def __init__(self):
        super().__init__()
        Stats.examples += 1
        self.ticket_type = TicketTypeFactory(event=self.event, price=PRICE, capacity=6, max_per_order=3)
        self.buyers = 0
        # Two orders waiting for their payment from the start.
        for quantity in (1, 2):
            self.checkout(quantity)

    # --- helpers ---------------------------------------------------------------------------------------

    def orders(self, *statuses):
        return Order.objects.filter(event_id=self.event.pk, status__in=statuses).order_by("created_at", "pk")

    def pick(self, index, *statuses) -> Order | None:
        """The index-th order in these statuses, oldest first (so a draw picks the same order on every run)."""
        candidates = list(self.orders(*statuses))
        return candidates[index % len(candidates)] if candidates else None

    def deliver(self, order: Order, *, paid: bool = True) -> None:
        """A Stripe event about the order's session, signed, stored once and processed as the task would."""
        services.webhook_event_process(webhook_event=services.order_simulate_payment(order=order, paid=paid))

    # --- rules -----------------------------------------------------------------------------------------

    @rule(quantity=st.integers(1, 3))
    def checkout(self, quantity):
        self.buyers += 1
        try:
            buy(self.event, (self.ticket_type, quantity), email=f"buyer{self.buyers}@example.com")
        except services.SoldOut:
            pass

    @precondition(lambda self: self.orders(Order.Status.PENDING).exists())
    @rule(index=st.integers(0, 20))
    def first_payment(self, index):
        order = self.pick(index, Order.Status.PENDING)
        if order is not None:
            self.deliver(order)
            Stats.first_payments += 1

    @precondition(lambda self: self.orders(Order.Status.EXPIRED, Order.Status.CANCELLED).exists())
    @rule(index=st.integers(0, 20))
    def late_payment(self, index):
        """The buyer paid at the last second: the completed event arrives after the order closed."""
        order = self.pick(index, Order.Status.EXPIRED, Order.Status.CANCELLED)
        if order is not None:
            self.deliver(order)
            Stats.late_payments += 1

    @precondition(lambda self: self.orders(*PAID_ONCE).exists())
    @rule(index=st.integers(0, 20))
    def another_event_about_a_paid_session(self, index):
        """Stripe sends more than one event about a session (resends, async_payment_succeeded)."""
        order = self.pick(index, *PAID_ONCE)
        if order is not None:
            self.deliver(order)

    @rule(index=st.integers(0, 20))
    def a_stored_event_processed_again(self, index):
        """A redelivered task, or the requeue sweep: processing a stored event again changes nothing."""
        rows = list(WebhookEvent.objects.filter(tenant_id=self.event.tenant_id).order_by("received_at", "pk"))
        if rows:
            services.webhook_event_process(webhook_event=rows[index % len(rows)])

    @rule(index=st.integers(0, 20))
    def session_expires_at_stripe(self, index):
        order = self.pick(index, Order.Status.PENDING, Order.Status.PAID)
        if order is not None:
            self.deliver(order, paid=False)  # a no-op for a paid order

    @precondition(lambda self: self.orders(Order.Status.PENDING).exists())
    @rule(index=st.integers(0, 20))
    def sweep_closes_it(self, index):
        order = self.pick(index, Order.Status.PENDING)
        if order is not None:
            services.order_close(order=order, to=Order.Status.EXPIRED, reason="sweep")

    @precondition(lambda self: self.orders(Order.Status.PAID, Order.Status.PARTIALLY_REFUNDED).exists())
    @rule(index=st.integers(0, 20), part=st.sampled_from([None, PRICE, PRICE // 2]))
    def refund(self, index, part):
        order = self.pick(index, Order.Status.PAID, Order.Status.PARTIALLY_REFUNDED)
        if order is None:
            return
        try:
            services.order_refund(order=order, acting_user=self.owner, amount=part)
        except ValidationError:
            return  # more than is left to refund: refused with a field error
        Stats.refunds += 1

    @rule(index=st.integers(0, 20))
    def void_at_the_door(self, index):
        tickets = list(
            Ticket.objects.filter(event_id=self.event.pk, status=Ticket.Status.VALID).order_by("created_at", "seat")
        )
        if tickets and services.ticket_void(ticket=tickets[index % len(tickets)], acting_user=self.owner):
            Stats.voids += 1

    # --- invariants ------------------------------------------------------------------------------------

    @invariant()
    def seats_add_up(self):
        ticket_type = TicketType.objects.get(pk=self.ticket_type.pk)
        assert ticket_type.sold + ticket_type.reserved <= ticket_type.capacity, "oversold"
        pending = sum(order.quantity for order in self.orders(Order.Status.PENDING))
        assert ticket_type.reserved == pending, f"reserved {ticket_type.reserved} != pending orders' seats {pending}"
        valid = Ticket.objects.filter(ticket_type_id=ticket_type.pk, status=Ticket.Status.VALID).count()
        assert ticket_type.sold == valid, f"sold {ticket_type.sold} != valid tickets {valid}"

    @invariant()
    def books_balance(self):
        for order in Order.objects.filter(event_id=self.event.pk):
            entries = list(LedgerEntry.objects.filter(order_id=order.pk).values_list("kind", "amount"))
            payments = [amount for kind, amount in entries if kind == LedgerEntry.Kind.PAYMENT]
            refunds = [amount for kind, amount in entries if kind == LedgerEntry.Kind.REFUND]
            assert len(payments) <= 1, f"order {order.pk} booked {len(payments)} payments"
            assert sum(payments) - sum(refunds) == order.paid_amount - order.refunded_amount, (
                f"ledger {sum(payments)} - {sum(refunds)} != order {order.paid_amount} - {order.refunded_amount}"
            )

    def ever_paid(self, order: Order) -> bool:
        """Paid at some point (later refunds included); a late payment that found its seats gone never was."""
        records = AuditLog.objects.filter(action="order.paid", object_id=order.pk).count()
        assert records <= 1, f"{records} order.paid records"
        assert records == 0 or order.status not in NEVER_PAID, f"a {order.status} order was paid"
        assert records == 1 or order.status != Order.Status.PAID, "a paid order without its order.paid record"
        return records == 1

    @invariant()
    def tickets_follow_payments(self):
        for order in Order.objects.filter(event_id=self.event.pk):
            seats = sorted(Ticket.objects.filter(order_id=order.pk).values_list("seat", flat=True))
            expected = list(range(1, order.quantity + 1)) if self.ever_paid(order) else []
            assert seats == expected, f"a {order.status} order has seats {seats}"

    @invariant()
    def each_holder_follows_their_tickets(self):
        for order in Order.objects.filter(event_id=self.event.pk):
            holders = list(Guest.objects.filter(event_id=self.event.pk, holder_key=f"order:{order.pk}"))
            if not self.ever_paid(order):
                assert holders == [], f"a {order.status} order that was never paid has a holder"
                continue
            assert len(holders) == 1, f"order {order.pk} has {len(holders)} holders"
            (holder,) = holders
            tickets = list(Ticket.objects.filter(order_id=order.pk).values_list("guest_id", "status"))
            assert {guest_id for guest_id, _status in tickets} == {holder.pk}, "a ticket is not the holder's"
            valid = sum(status == Ticket.Status.VALID for _guest_id, status in tickets)
            expected = (Guest.Status.COMING, valid) if valid else (Guest.Status.DECLINED, 0)
            assert (holder.status, holder.num_guests) == expected, (
                f"holder is {holder.status} for {holder.num_guests} with {valid} valid tickets"
            )
            created = AuditLog.objects.filter(action="guest.created", object_id=holder.pk).count()
            assert created == 1, f"{created} guest.created records"


def run_machine(profile_settings) -> None:
    run_state_machine_as_test(PaymentMachine, settings=profile_settings)


class PaymentInvariantsTest(TestCase):
    def test_the_books_seats_tickets_and_holders_always_add_up(self):
        Stats.examples = Stats.first_payments = Stats.late_payments = Stats.refunds = Stats.voids = 0

        run_machine(MACHINE)

        print(
            f"\nHypothesis profile {PROFILE!r}: {Stats.examples} examples, {Stats.first_payments} first payments, "
            f"{Stats.late_payments} late payments, {Stats.refunds} refunds, {Stats.voids} voids"
        )
        assert Stats.examples >= MACHINE.max_examples
        # The machine reaches the interesting states, not only refusals and no-ops.
        assert Stats.first_payments > 0 and Stats.late_payments > 0 and Stats.refunds > 0 and Stats.voids > 0


CONTROL = control_settings(examples=100, steps=25)


class BrokenRuleControlTest(TestCase):
    def test_a_first_payment_that_forgets_to_sell_its_held_seats_is_caught(self):
        real = orders_services.events_services.seats_sell_reserved
        orders_services.events_services.seats_sell_reserved = lambda **kwargs: True
        try:
            with self.assertRaises(AssertionError) as caught:
                run_machine(CONTROL)
        finally:
            orders_services.events_services.seats_sell_reserved = real
        assert "reserved" in str(caught.exception) or "sold" in str(caught.exception), caught.exception

"""Checkout's ticket types and charge account kept in process memory (billing/checkout_terms.py).

What must hold: while kept, a checkout reads neither; any change to a type but its seat counters is seen by
the very next checkout; the organization's account within SHOP_PAGE_CACHE_SECONDS; the seat counters are never
taken from memory, in either direction (no sale past the capacity, no refusal of a freed seat); and whatever
happens in any order, a checkout answers as one that read everything now would.
"""

import time
import uuid
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.models import F
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test

from billing import checkout_terms, services
from billing.models import ConnectedAccount, Order
from billing.services import CheckoutItem, CheckoutRequest
from events import services as events_services
from events.models import TicketType
from tests.factories import TicketedEventFactory, TicketTypeFactory
from tests.support.backends import ON_MONGODB, statements
from tests.support.machines import machine_settings

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def kept(settings):
    settings.SHOP_PAGE_CACHE_SECONDS = 60
    settings.STRIPE_SECRET_KEY = ""
    settings.TEST_PAYMENTS = True
    checkout_terms.kept_terms_forget()
    yield
    checkout_terms.kept_terms_forget()


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant)


@pytest.fixture
def seat(concert):
    return TicketTypeFactory(event=concert, name="Seat", price=2500, capacity=5)


def checkout(event, ticket_type, quantity=1, *, access_code=""):
    return services.checkout_start(
        event=event,
        request=CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=str(ticket_type.pk), quantity=quantity)],
            buyer_name="Ada Lovelace",
            buyer_email=f"{uuid.uuid4().hex[:8]}@example.com",
            access_code=access_code,
        ),
    )


def counters(ticket_type):
    ticket_type.refresh_from_db()
    return ticket_type.sold, ticket_type.reserved


def test_while_kept_a_checkout_reads_neither_its_ticket_types_nor_the_account(concert, seat):
    checkout(concert, seat)  # the first reads both, and keeps them

    with CaptureQueriesContext(connection) as queries:
        order = checkout(concert, seat)

    assert statements(queries, "SELECT", "events_tickettype") == []
    assert statements(queries, "SELECT", "billing_connectedaccount") == []
    assert order.total == 2500 and counters(seat) == (0, 2)


@pytest.mark.parametrize(
    "change, answer",
    [
        ({"price": 4000}, "total 8000"),  # two seats
        ({"is_active": False}, "not on sale now"),
        ({"sales_end": timezone.now() - timedelta(minutes=1)}, "not on sale now"),
        ({"access_code": "FRIENDS"}, "not on sale for this event"),
        ({"max_per_order": 1}, "At most 1"),
    ],
)
@pytest.mark.parametrize("how", ["service", "save", "queryset"])
def test_a_change_to_a_type_is_seen_by_the_next_checkout(concert, seat, owner, change, answer, how):
    checkout(concert, seat)
    if how == "service":
        events_services.ticket_type_update(ticket_type=seat, acting_user=owner, **change)
    elif how == "save":
        stored = TicketType.objects.get(pk=seat.pk)
        for name, value in change.items():
            setattr(stored, name, value)
        stored.save()
    else:
        TicketType.objects.filter(pk=seat.pk).update(**change)

    try:
        said = f"total {checkout(concert, seat, 2).total}"
    except ValidationError as exc:
        said = " ".join(exc.messages)
    assert answer in said


def test_a_type_added_after_the_others_were_kept_is_on_sale_at_once(concert, seat):
    checkout(concert, seat)
    late = TicketTypeFactory(event=concert, name="Late", price=1500, capacity=3)

    assert checkout(concert, late).total == 1500


def test_seats_taken_elsewhere_are_refused_by_the_reservation_not_sold_from_memory(concert, seat):
    checkout(concert, seat)  # kept with 4 seats left
    TicketType.objects.filter(pk=seat.pk).update(sold=F("capacity") - F("reserved"))  # a counter: no new version

    with pytest.raises(services.SoldOut) as refused:
        checkout(concert, seat)

    assert [(t.pk, t.remaining) for t in refused.value.ticket_types] == [(seat.pk, 0)]
    assert counters(seat) == (4, 1)


def test_seats_freed_elsewhere_are_sold_although_the_kept_type_was_sold_out(concert, seat):
    TicketType.objects.filter(pk=seat.pk).update(reserved=5)  # held by orders of another process
    with pytest.raises(services.SoldOut):
        checkout(concert, seat)  # kept as read: none left
    TicketType.objects.filter(pk=seat.pk).update(reserved=0)  # those orders expired

    assert checkout(concert, seat, 2).status == Order.Status.PENDING
    assert counters(seat) == (0, 2)


def test_a_refusal_of_several_seats_tells_the_seats_left_now(concert, seat):
    checkout(concert, seat)
    checkout(concert, seat, 3)  # one left

    with pytest.raises(services.SoldOut) as refused:
        checkout(concert, seat, 2)

    assert [t.remaining for t in refused.value.ticket_types] == [1]
    assert counters(seat) == (0, 4)


def test_a_waitlist_started_after_the_type_was_kept_holds_its_freed_seats_back(concert, seat):
    checkout(concert, seat, 5)
    services.waitlist_join(event=concert, ticket_type_id=seat.pk, email="wait@example.com")
    TicketType.objects.filter(pk=seat.pk).update(reserved=4)  # a seat freed, the line's to offer

    with pytest.raises(services.SoldOut):
        checkout(concert, seat)
    assert counters(seat)[1] == 4


def test_the_kept_types_stay_as_read_whatever_a_checkout_does_with_its_own(concert, seat):
    checkout(concert, seat, 5)
    with pytest.raises(services.SoldOut):
        checkout(concert, seat)  # its copy is shown sold out

    kept = checkout_terms.checkout_terms(event=concert).ticket_types[str(seat.pk)]
    assert (kept.sold, kept.reserved) == (0, 0)


def test_an_account_change_reaches_checkout_within_the_seconds(concert, seat, settings, monkeypatch):
    checkout(concert, seat)
    ConnectedAccount.objects.filter(tenant_id=concert.tenant_id).update(charges_enabled=False)
    assert checkout(concert, seat).status == Order.Status.PENDING  # the kept account, for now

    later = time.monotonic() + settings.SHOP_PAGE_CACHE_SECONDS + 1
    monkeypatch.setattr(time, "monotonic", lambda: later)
    with pytest.raises(ValidationError, match="cannot take payments yet"):
        checkout(concert, seat)


def test_off_with_zero_seconds_every_checkout_reads_its_types(concert, seat, settings):
    settings.SHOP_PAGE_CACHE_SECONDS = 0
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            checkout(concert, seat)
        assert len(statements(queries, "SELECT", "events_tickettype")) == 1


MACHINE_SETTINGS = machine_settings(ci_examples=6 if ON_MONGODB else 25, steps=15)


class KeptTermsMachine(RuleBasedStateMachine):
    """Organizer edits, sales and freed seats elsewhere, and checkouts, in any order: each checkout answers
    what the database says at that moment."""

    def __init__(self):
        super().__init__()
        checkout_terms.kept_terms_forget()
        self.event = TicketedEventFactory()
        self.type = TicketTypeFactory(event=self.event, price=2500, capacity=4, max_per_order=4)

    @rule(price=st.sampled_from([1000, 2500, 4000]))
    def price_changes(self, price):
        TicketType.objects.filter(pk=self.type.pk).update(price=price)

    @rule(active=st.booleans())
    def on_or_off_sale(self, active):
        stored = TicketType.objects.get(pk=self.type.pk)
        stored.is_active = active
        stored.save()

    @rule(capacity=st.integers(min_value=0, max_value=6))
    def capacity_changes(self, capacity):
        TicketType.objects.filter(pk=self.type.pk, sold__lte=capacity - F("reserved")).update(capacity=capacity)

    @rule(sold=st.integers(min_value=0, max_value=6))
    def sold_elsewhere(self, sold):
        TicketType.objects.filter(pk=self.type.pk, reserved__lte=F("capacity") - sold).update(sold=sold)

    @rule()
    def held_seats_freed(self):
        TicketType.objects.filter(pk=self.type.pk).update(reserved=0)

    @rule(quantity=st.integers(min_value=1, max_value=3))
    def checkout(self, quantity):
        stored = TicketType.objects.get(pk=self.type.pk)
        try:
            order = checkout(self.event, self.type, quantity)
        except services.SoldOut:
            assert stored.is_active and stored.remaining < quantity
        except ValidationError:
            assert not stored.is_active
        else:
            assert stored.is_active and stored.remaining >= quantity
            assert order.total == quantity * stored.price
        after = TicketType.objects.get(pk=self.type.pk)
        assert after.sold + after.reserved <= after.capacity


class KeptTermsInvariantsTest(TestCase):
    def test_each_checkout_answers_what_the_database_says(self):
        with self.settings(SHOP_PAGE_CACHE_SECONDS=60, STRIPE_SECRET_KEY="", TEST_PAYMENTS=True):
            run_state_machine_as_test(KeptTermsMachine, settings=MACHINE_SETTINGS)

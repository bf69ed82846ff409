"""Races of the waitlist with real parallel connections: each freed seat is offered exactly once.

As tests/billing/test_concurrency.py: threads released together at a barrier, each on its own
connection, every service call committing as in production (so on-commit offers and emails run
at once, eagerly). Seats are freed (orders expiring, a capacity raised) while many workers offer
them at the same moment (the trigger of each release, the sweep, redelivered offer tasks).

Two control runs swap one compare-and-set each for a read-check-write and show the same rush then
goes wrong: without the entry's waiting -> offered guard one person is offered several seats (and
emailed twice); without the seat's conditional update more seats are offered than were free.
"""

import time
from collections import Counter
from functools import partial

import pytest

from billing import services
from billing.models import Order, WaitlistEntry
from billing.services import waitlist as waitlist_services
from events.models import TicketType
from eventsaas.models import AuditLog
from tests.billing.test_concurrency import buyer_request, raise_unexpected, run_together
from tests.factories import TicketTypeFactory

pytestmark = pytest.mark.django_db(transaction=True)

SEATS = 10
WAITING = 30
WORKERS = 20


def line_up(event, ticket_type, count=WAITING) -> list[WaitlistEntry]:
    return [
        services.waitlist_join(event=event, ticket_type_id=ticket_type.pk, email=f"wait{n:02}@example.com")
        for n in range(count)
    ]


def offers() -> Counter:
    """How many offers each entry got (the audit records one per successful waiting -> offered)."""
    return Counter(str(a.object_id) for a in AuditLog.objects.filter(action="waitlist.offered"))


def sold_out_by_pending_orders(event, ticket_type) -> list[Order]:
    return [services.checkout_start(event=event, request=buyer_request(ticket_type, 1, n)) for n in range(SEATS)]


def expire_and_offer_at_once(event, ticket_type) -> None:
    """SEATS orders expire (each release offers on commit) while WORKERS sweeps and offer tasks run."""
    orders = sold_out_by_pending_orders(event, ticket_type)
    line_up(event, ticket_type)
    calls = [partial(services.order_close, order=order, to=Order.Status.EXPIRED, reason="sweep") for order in orders]
    calls += [
        services.waitlist_sweep if n % 2 else partial(services.waitlist_offer_next, ticket_type_id=ticket_type.pk)
        for n in range(WORKERS)
    ]
    raise_unexpected(run_together(calls))


def naive_entry_offer(*, entry, at, expires) -> bool:
    """The race the entry's compare-and-set prevents: read the status, check it in Python, write."""
    if WaitlistEntry.objects.get(pk=entry.pk).status != WaitlistEntry.Status.WAITING:
        return False
    time.sleep(0.02)  # a busy worker between the read and the write
    WaitlistEntry.objects.filter(pk=entry.pk).update(
        status=WaitlistEntry.Status.OFFERED, offered_at=at, offer_expires_at=expires
    )
    return True


def naive_seat_hold(*, ticket_type_id) -> bool:
    """The race the conditional seat update prevents: read the counters, check, write the absolute number."""
    row = TicketType.objects.filter(pk=ticket_type_id).values("capacity", "sold", "reserved").get()
    if row["sold"] + row["reserved"] + 1 > row["capacity"]:
        return False
    time.sleep(0.02)
    TicketType.objects.filter(pk=ticket_type_id).update(reserved=row["reserved"] + 1)
    return True


def test_seats_freed_while_many_workers_offer_are_each_offered_exactly_once(ticketed_event, mailoutbox):
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=SEATS)

    expire_and_offer_at_once(ticketed_event, ticket_type)

    ticket_type.refresh_from_db()
    offered = WaitlistEntry.objects.filter(status=WaitlistEntry.Status.OFFERED).order_by("created_at")
    assert offered.count() == SEATS
    assert set(offers().values()) == {1}  # no entry offered twice
    assert sum(offers().values()) == SEATS
    assert (ticket_type.sold, ticket_type.reserved) == (0, SEATS)  # every freed seat held by exactly one offer
    # First come, first served: the offers went to the first SEATS in line.
    assert [e.email for e in offered] == [f"wait{n:02}@example.com" for n in range(SEATS)]
    offer_emails = sorted(m.to[0] for m in mailoutbox if m.to[0].startswith("wait"))
    assert offer_emails == [f"wait{n:02}@example.com" for n in range(SEATS)]


def test_a_raised_capacity_offered_by_many_workers_never_offers_more_seats_than_were_freed(ticketed_event):
    ticket_type = TicketTypeFactory(event=ticketed_event, capacity=SEATS)
    sold_out_by_pending_orders(ticketed_event, ticket_type)
    line_up(ticketed_event, ticket_type)
    TicketType.objects.filter(pk=ticket_type.pk).update(capacity=2 * SEATS)  # no trigger: the workers race for them

    raise_unexpected(run_together([partial(services.waitlist_offer_next, ticket_type_id=ticket_type.pk)] * WORKERS))

    ticket_type.refresh_from_db()
    assert WaitlistEntry.objects.filter(status=WaitlistEntry.Status.OFFERED).count() == SEATS
    assert ticket_type.reserved == 2 * SEATS  # SEATS by the orders, SEATS by the offers
    assert set(offers().values()) == {1}


def test_control_without_the_entrys_compare_and_set_one_person_is_offered_several_seats(ticketed_event, monkeypatch):
    """The first rush with a read-check-write of the entry: double offers appear, so the test can catch them."""
    monkeypatch.setattr(waitlist_services, "_entry_offer", naive_entry_offer)
    for _attempt in range(3):
        AuditLog.objects.filter(action="waitlist.offered").delete()
        ticket_type = TicketTypeFactory(event=ticketed_event, capacity=SEATS)
        expire_and_offer_at_once(ticketed_event, ticket_type)
        if max(offers().values()) > 1:
            break

    assert max(offers().values()) > 1, "the unprotected rush offered no entry twice: this harness shows no race"
    # Seats are held for offers that collapsed into one: fewer people holding offers than seats held.
    ticket_type.refresh_from_db()
    people = WaitlistEntry.objects.filter(ticket_type=ticket_type, status=WaitlistEntry.Status.OFFERED).count()
    assert people < ticket_type.reserved == sum(offers().values())


def test_control_without_the_conditional_seat_update_more_seats_are_offered_than_were_freed(
    ticketed_event, monkeypatch
):
    monkeypatch.setattr(waitlist_services, "_seat_hold", naive_seat_hold)
    for _attempt in range(3):
        ticket_type = TicketTypeFactory(event=ticketed_event, capacity=SEATS)
        sold_out_by_pending_orders(ticketed_event, ticket_type)
        line_up(ticketed_event, ticket_type)
        TicketType.objects.filter(pk=ticket_type.pk).update(capacity=2 * SEATS)
        raise_unexpected(run_together([partial(services.waitlist_offer_next, ticket_type_id=ticket_type.pk)] * WORKERS))
        offered = WaitlistEntry.objects.filter(ticket_type=ticket_type, status=WaitlistEntry.Status.OFFERED).count()
        if offered > SEATS:
            break

    assert offered > SEATS, "the unprotected rush did not over-offer: this harness cannot show a race"

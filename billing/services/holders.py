"""Ticket holders are guests: each order's buyer becomes one guest of the event, whose answer follows the tickets.

One guest per order (not per email address): the buyer's order page shows the guest code to
whoever holds the order's link, and an email address is only what the buyer typed, so linking
two orders by it would show one buyer another's tickets. The guest is created once, under
retries and concurrent deliveries, by guests' unique (tenant, event, holder_key) constraint; every
ticket of the order points at it (`Ticket.guest`), and the guest is coming for as many people as
it has valid tickets, declined when none is left (docs/payments.md, "Ticket holders are guests").
"""

import uuid

from billing.models import Order, Ticket
from billing.selectors import holder_valid_tickets, order_holder_key
from guests import services as guests_services
from guests.models import Guest


def holder_follow(*, guest_id: uuid.UUID, reason: str) -> Guest | None:
    """The guest's answer made to match their valid tickets now (idempotent)."""
    guest = Guest.objects.filter(pk=guest_id).first()
    return _answer_follow_tickets(guest, reason=reason) if guest is not None else None


def _answer_follow_tickets(guest: Guest, *, reason: str) -> Guest:
    # guest_tickets_follow reads the guest again before each write: `guest` only needs its ids.
    return guests_services.guest_tickets_follow(
        guest=guest, valid_tickets=lambda: holder_valid_tickets(guest=guest), reason=reason
    )


def order_holder_create(*, order: Order, coming: int) -> Guest | None:
    """The order's guest inserted (no read first) coming for `coming` people; None if it exists already.

    For the order's first payment only (tickets_issue, first=True): the caller won the order's pending ->
    paid arrow, so it alone issues the tickets and can hold them by this guest from the start.
    """
    guest, created = guests_services.guest_ticket_holder_create(
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        holder_key=order_holder_key(order),
        full_name=order.buyer_name,
        email=order.buyer_email,
        coming=coming,
    )
    return guest if created else None


def order_holder_link(*, order: Order, tickets_issued: bool = False) -> Guest | None:
    """The order's guest, created once, linked to each of the order's tickets, coming for the valid ones.

    Called by tickets_issue after every issue but the first payment's (retries included), so it is safe
    any number of times. `tickets_issued`: the caller has just issued them, so they need not be looked for.
    """
    if not tickets_issued and not Ticket.objects.filter(order_id=order.pk).exists():
        return None
    guest = guests_services.guest_ticket_holder_get_or_create(
        tenant_id=order.tenant_id,
        event_id=order.event_id,
        holder_key=order_holder_key(order),
        full_name=order.buyer_name,
        email=order.buyer_email,
    )
    Ticket.objects.filter(order_id=order.pk, guest__isnull=True).update(guest=guest)
    return _answer_follow_tickets(guest, reason="issued")

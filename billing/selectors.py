"""Reads of ticketed events: what is on sale, orders, the sales dashboard."""

import datetime as dt
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from billing.models import ATTENTION_STATUSES, ConnectedAccount, LedgerEntry, Order, Ticket, WaitlistEntry
from events.models import Event, TicketType
from eventsaas.models import AuditLog
from guests.models import Guest
from tenants.models import Tenant


def order_holder_key(order: Order) -> str:
    """The order's buyer as a guest of the event: guests' holder_key (billing.services.holders)."""
    return f"order:{order.pk}"


def order_holder(*, order: Order) -> Guest | None:
    """The order's guest, once its tickets were issued (the buyer's order page and email show the code)."""
    return Guest.objects.filter(
        tenant_id=order.tenant_id, event_id=order.event_id, holder_key=order_holder_key(order)
    ).first()


def holder_valid_tickets(*, guest: Guest) -> int:
    """How many people a ticket holder is coming as: their valid tickets."""
    return Ticket.objects.filter(
        tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk, status=Ticket.Status.VALID
    ).count()


def guest_tickets(*, guest: Guest) -> list[Ticket]:
    """A ticket holder's tickets (valid and void), in their orders' seat order, for their guest page."""
    return list(
        Ticket.objects.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk)
        .select_related("ticket_type", "order")
        .order_by("created_at", "seat")
    )


def order_get(*, tenant: Tenant, order_id: uuid.UUID) -> Order | None:
    return Order.objects.for_tenant(tenant).select_related("event").filter(pk=order_id).first()


def order_for_buyer(*, order_id: uuid.UUID, token: str) -> Order | None:
    """The buyer's order by its emailed link; a wrong token is the same as no order."""
    order = Order.objects.select_related("event", "tenant").filter(pk=order_id).first()
    if order is None or not token or not _same(order.access_token, token):
        return None
    return order


def _same(a: str, b: str) -> bool:
    import hmac

    return hmac.compare_digest(a.encode(), b.encode())


def order_list(*, event: Event, status: str | None = None) -> QuerySet[Order]:
    orders = Order.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
    if status:
        orders = orders.filter(status=status)
    return orders.order_by("-created_at")


#: Rows read per round trip by an export: its rows stream without the whole list in memory.
EXPORT_CHUNK_SIZE = 2000


def order_export_list(*, event: Event, statuses: Sequence[str] = ()) -> Iterator[Order]:
    """The event's orders as the order list shows them (newest first, optionally some statuses), in chunks.

    One query whatever the number of orders: lines and attendees are embedded in the order.
    """
    orders = Order.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
    if statuses:
        orders = orders.filter(status__in=list(statuses))
    return orders.order_by("-created_at", "pk").iterator(chunk_size=EXPORT_CHUNK_SIZE)


def last_refund_at_by_order(*, event: Event) -> dict[uuid.UUID, dt.datetime]:
    """When each order of the event was last refunded, in one query over the ledger."""
    last: dict[uuid.UUID, dt.datetime] = {}
    refunds = LedgerEntry.objects.filter(
        tenant_id=event.tenant_id, event_id=event.pk, kind=LedgerEntry.Kind.REFUND
    ).values_list("order_id", "created_at")
    for order_id, created_at in refunds:
        if order_id not in last or created_at > last[order_id]:
            last[order_id] = created_at
    return last


def ticket_export_list(*, event: Event) -> Iterator[Ticket]:
    """Every ticket issued for the event with its type, order and who checked it in, in one query, in chunks."""
    return (
        Ticket.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .select_related("ticket_type", "order", "checked_in_by")
        .order_by("created_at", "order_id", "seat")
        .iterator(chunk_size=EXPORT_CHUNK_SIZE)
    )


def order_status_counts(*, event: Event) -> dict[str, int]:
    """Orders of the event per status, in one grouped query."""
    rows = (
        Order.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .values("status")
        .annotate(count=Count("pk"))
        .order_by()
    )
    return {row["status"]: row["count"] for row in rows}


def order_ledger(*, order: Order) -> list[LedgerEntry]:
    return list(LedgerEntry.objects.filter(tenant_id=order.tenant_id, order_id=order.pk).order_by("created_at"))


def order_history(*, order: Order, tickets: list[Ticket]) -> list[AuditLog]:
    """The audit trail of the order and its tickets; tenant and event lead, as the audit index does."""
    return list(
        AuditLog.objects.filter(
            tenant_id=order.tenant_id, event_id=order.event_id, object_id__in=[order.pk, *(t.pk for t in tickets)]
        )
        .select_related("actor_user")
        .order_by("created_at")[:100]
    )


def order_tickets(*, order: Order) -> list[Ticket]:
    return list(Ticket.objects.filter(order_id=order.pk).select_related("ticket_type").order_by("seat"))


@dataclass
class TicketTypeSales:
    ticket_type: TicketType
    sold: int
    reserved: int
    remaining: int
    revenue: int  # price of the tickets issued, refunded ones included
    refunded: int  # price of the tickets voided by refunds
    checked_in: int
    # Set for the dashboard by billing.hooks, in the event's currency:
    price_display: str = ""
    revenue_display: str = ""
    refunded_display: str = ""


@dataclass
class SalesSummary:
    types: list[TicketTypeSales]
    orders_paid: int
    orders_pending: int
    orders_needing_attention: int
    captured: int  # ledger: payments
    refunded: int  # ledger: refunds
    currency: str  # an event sells in one currency (events.services._check_one_currency)

    @property
    def net(self) -> int:
        return self.captured - self.refunded

    @property
    def sold(self) -> int:
        return sum(t.sold for t in self.types)

    @property
    def checked_in(self) -> int:
        return sum(t.checked_in for t in self.types)


def sales_summary(*, event: Event) -> SalesSummary:
    """The dashboard's numbers: three grouped aggregations whatever the number of orders."""
    types = list(TicketType.objects.filter(tenant_id=event.tenant_id, event_id=event.pk))
    per_type: dict[uuid.UUID, dict[str, Any]] = {
        row["ticket_type_id"]: row  # type: ignore[misc]  # the row has the annotated sums too
        for row in Ticket.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .values("ticket_type_id")
        .annotate(
            revenue=Sum("price", default=0),
            refunded=Sum("price", filter=Q(status=Ticket.Status.VOID), default=0),
            checked_in=Count("pk", filter=Q(checked_in_at__isnull=False, status=Ticket.Status.VALID)),
        )
        .order_by()
    }
    money = LedgerEntry.objects.filter(tenant_id=event.tenant_id, event_id=event.pk).aggregate(
        captured=Sum("amount", filter=Q(kind=LedgerEntry.Kind.PAYMENT), default=0),
        refunded=Sum("amount", filter=Q(kind=LedgerEntry.Kind.REFUND), default=0),
    )
    orders = Order.objects.filter(tenant_id=event.tenant_id, event_id=event.pk).aggregate(
        paid=Count("pk", filter=Q(status__in=[Order.Status.PAID, Order.Status.PARTIALLY_REFUNDED])),
        pending=Count("pk", filter=Q(status=Order.Status.PENDING)),
        attention=Count("pk", filter=Q(status__in=ATTENTION_STATUSES)),
    )
    return SalesSummary(
        types=[
            TicketTypeSales(
                ticket_type=t,
                sold=t.sold,
                reserved=t.reserved,
                remaining=t.remaining,
                revenue=per_type.get(t.pk, {}).get("revenue", 0),
                refunded=per_type.get(t.pk, {}).get("refunded", 0),
                checked_in=per_type.get(t.pk, {}).get("checked_in", 0),
            )
            for t in types
        ],
        orders_paid=orders["paid"],
        orders_pending=orders["pending"],
        orders_needing_attention=orders["attention"],
        captured=money["captured"],
        refunded=money["refunded"],
        currency=types[0].currency if types else "eur",
    )


def connected_account_for_charges(*, tenant_id: uuid.UUID) -> ConnectedAccount | None:
    """The organization's connected account if it can take charges now (paid orders go there), else None."""
    return ConnectedAccount.objects.filter(
        tenant_id=tenant_id, charges_enabled=True, deauthorized_at__isnull=True
    ).first()


def connected_account_get(*, tenant: Tenant) -> ConnectedAccount | None:
    """The organization's connected account in any state (the Payments page), or None before onboarding starts."""
    return ConnectedAccount.objects.for_tenant(tenant).first()


def paid_sales_blocked(*, event: Event) -> bool:
    """The event has paid ticket types but its organization cannot take charges yet (no usable Stripe account)."""
    has_paid = TicketType.objects.filter(tenant_id=event.tenant_id, event_id=event.pk, price__gt=0).exists()
    return has_paid and connected_account_for_charges(tenant_id=event.tenant_id) is None


# --- Waitlist ------------------------------------------------------------------------------------


def waitlist_entry_for_buyer(*, entry_id: uuid.UUID, token: str) -> WaitlistEntry | None:
    """The entry its emailed link names, or None (unknown id or wrong token: the same answer)."""
    entry = WaitlistEntry.objects.select_related("event", "event__tenant", "ticket_type").filter(pk=entry_id).first()
    if entry is None or not _same(entry.token, token):
        return None
    return entry


def waitlist_held_back_type_ids(*, ticket_types: Sequence[TicketType]) -> set[uuid.UUID]:
    """Of these types, the ones with people waiting: their free seats are the waitlist's, not the public's."""
    if not ticket_types:
        return set()
    return set(
        WaitlistEntry.objects.filter(
            ticket_type_id__in=[t.pk for t in ticket_types], status=WaitlistEntry.Status.WAITING
        ).values_list("ticket_type_id", flat=True)
    )


def waitlist_list(*, event: Event, ticket_type_id: uuid.UUID | None = None) -> QuerySet[WaitlistEntry]:
    """The event's waitlist in line order, optionally of one type (the organizer's page and API)."""
    entries = WaitlistEntry.objects.for_tenant(event.tenant).filter(event_id=event.pk).select_related("ticket_type")
    if ticket_type_id is not None:
        entries = entries.filter(ticket_type_id=ticket_type_id)
    return entries.order_by("created_at", "pk")


def waitlist_counts(*, event: Event) -> dict[uuid.UUID, dict[str, int]]:
    """Per ticket type: how many wait and how many hold an offer now."""
    counts: dict[uuid.UUID, dict[str, int]] = {}
    rows = (
        WaitlistEntry.objects.for_tenant(event.tenant)
        .filter(event_id=event.pk, status__in=[WaitlistEntry.Status.WAITING, WaitlistEntry.Status.OFFERED])
        .values("ticket_type_id", "status")
        .annotate(n=Count("pk"))
        .order_by()
    )
    for row in rows:
        counts.setdefault(row["ticket_type_id"], {"waiting": 0, "offered": 0})[row["status"]] = row["n"]
    return counts

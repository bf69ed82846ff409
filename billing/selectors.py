"""Reads of ticketed events: what is on sale, orders, the sales dashboard."""

import datetime as dt
import itertools
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast
from zoneinfo import ZoneInfo

from django.conf import settings
from django.db.models import Count, Max, Min, Q, QuerySet, Sum

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


def platform_fee_kept_by_order(*, event: Event) -> dict[uuid.UUID, int]:
    """The platform fee each order of the event left with the platform (taken less given back), in one query."""
    rows = (
        LedgerEntry.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .values("order_id")
        .annotate(
            taken=Sum("fee", filter=Q(kind=LedgerEntry.Kind.PAYMENT), default=0),
            given_back=Sum("fee", filter=Q(kind=LedgerEntry.Kind.REFUND), default=0),
        )
        .order_by()
    )
    return {row["order_id"]: row["taken"] - row["given_back"] for row in cast(list[dict[str, Any]], list(rows))}


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


def account_id_for_charges(*, tenant_id: uuid.UUID) -> str | None:
    """The Stripe id of the organization's connected account if it can take charges now (paid orders go
    there), else None. Only the id, unordered: checkout reads it on every order (one account per organization).

    With real Stripe keys a simulated account (test-payment mode's) never takes charges: Stripe does not know it.
    """
    accounts = ConnectedAccount.objects.filter(tenant_id=tenant_id, charges_enabled=True, deauthorized_at__isnull=True)
    if settings.STRIPE_SECRET_KEY:
        accounts = accounts.filter(is_test=False)
    return next(iter(accounts.order_by().values_list("stripe_account_id", flat=True)[:1]), None)


def connected_account_get(*, tenant: Tenant) -> ConnectedAccount | None:
    """The organization's connected account in any state (the Payments page), or None before onboarding starts."""
    return ConnectedAccount.objects.for_tenant(tenant).first()


def paid_sales_blocked(*, event: Event) -> bool:
    """The event has paid ticket types but its organization cannot take charges yet (no usable Stripe account)."""
    has_paid = TicketType.objects.filter(tenant_id=event.tenant_id, event_id=event.pk, price__gt=0).exists()
    return has_paid and account_id_for_charges(tenant_id=event.tenant_id) is None


# --- Earnings (the organizer's money: gross, platform fee, net, refunds) ---------------------------------------------

#: Payout periods shown: the most recent calendar months with ledger entries (older months stay in the totals).
EARNINGS_MONTHS = 24


@dataclass(frozen=True)
class EarningsTotals:
    """Money of one currency, in its minor units: what buyers paid and got back, and the platform's fee on each."""

    currency: str
    gross: int = 0
    fee: int = 0
    refunded: int = 0
    fee_refunded: int = 0

    @property
    def net(self) -> int:
        """What the payments left the organizer before any refund."""
        return self.gross - self.fee

    @property
    def net_after_refunds(self) -> int:
        """What the organizer keeps: each refund takes back its amount less the fee given back with it."""
        return self.net - (self.refunded - self.fee_refunded)

    def __add__(self, other: "EarningsTotals") -> "EarningsTotals":
        if other.currency != self.currency:
            raise ValueError("Earnings of different currencies do not add up.")
        return EarningsTotals(
            currency=self.currency,
            gross=self.gross + other.gross,
            fee=self.fee + other.fee,
            refunded=self.refunded + other.refunded,
            fee_refunded=self.fee_refunded + other.fee_refunded,
        )


@dataclass(frozen=True)
class EventEarnings:
    event_id: uuid.UUID
    name: str
    starts_at: dt.datetime | None
    totals: EarningsTotals


@dataclass(frozen=True)
class PeriodEarnings:
    """One payout period: a calendar month in the earnings' time zone, [start, end)."""

    start: dt.datetime
    end: dt.datetime
    totals: EarningsTotals


@dataclass(frozen=True)
class Earnings:
    timezone: str
    events: list[EventEarnings]
    periods: list[PeriodEarnings]  # newest first
    totals: list[EarningsTotals]  # one per currency


_PAYMENT = Q(kind=LedgerEntry.Kind.PAYMENT)
_REFUND = Q(kind=LedgerEntry.Kind.REFUND)


def _money_sums(where: Q | None = None, prefix: str = "sum_") -> dict[str, Sum]:
    """The four sums of a set of ledger entries, each optionally narrowed by `where`."""

    def narrowed(kind: Q) -> Q:
        return kind & where if where is not None else kind

    return {
        f"{prefix}gross": Sum("amount", filter=narrowed(_PAYMENT), default=0),
        f"{prefix}fee": Sum("fee", filter=narrowed(_PAYMENT), default=0),
        f"{prefix}refunded": Sum("amount", filter=narrowed(_REFUND), default=0),
        f"{prefix}fee_refunded": Sum("fee", filter=narrowed(_REFUND), default=0),
    }


def _totals(currency: str, row: dict[str, Any], prefix: str = "sum_") -> EarningsTotals:
    return EarningsTotals(
        currency=currency,
        gross=row[f"{prefix}gross"],
        fee=row[f"{prefix}fee"],
        refunded=row[f"{prefix}refunded"],
        fee_refunded=row[f"{prefix}fee_refunded"],
    )


def earnings_timezone(*, tenant: Tenant) -> str:
    """The organization's time zone for payout periods: the one most of its ticketed events use (else UTC)."""
    row = (
        Event.objects.for_tenant(tenant)
        .filter(kind=Event.Kind.TICKETED)
        .values("timezone")
        .annotate(events=Count("pk"))
        .order_by("-events", "timezone")
        .first()
    )
    return str(row["timezone"]) if row else "UTC"


def _month_starts(first: dt.datetime, last: dt.datetime, zone: ZoneInfo) -> list[dt.datetime]:
    """The starts of the calendar months (in `zone`) from the one holding `first` to the one after `last`."""
    local = first.astimezone(zone)
    month = dt.datetime(local.year, local.month, 1, tzinfo=zone)
    starts = [month]
    while starts[-1] <= last:
        previous = starts[-1]
        year, number = (previous.year + 1, 1) if previous.month == 12 else (previous.year, previous.month + 1)
        starts.append(dt.datetime(year, number, 1, tzinfo=zone))
    return starts


def earnings_for(*, tenant: Tenant) -> Earnings:
    """The organization's earnings from its ledger: per event, per calendar month, in all; per currency.

    Five queries whatever the number of orders: the time zone, the sums per event, the events' names, the
    ledger's time span, and the sums per month (one conditional sum per month and measure, per currency).
    """
    zone_name = earnings_timezone(tenant=tenant)
    zone = ZoneInfo(zone_name)
    ledger = LedgerEntry.objects.for_tenant(tenant)

    # Rows of values(): plain dicts carrying the annotated sums (the stubs type them without the sums).
    per_event = cast(
        list[dict[str, Any]], list(ledger.values("event_id", "currency").annotate(**_money_sums()).order_by())
    )
    events: dict[uuid.UUID, dict[str, Any]] = {
        e["pk"]: cast(dict[str, Any], e)
        for e in Event.objects.for_tenant(tenant)
        .filter(pk__in={row["event_id"] for row in per_event})
        .values("pk", "name", "starts_at")
    }
    event_rows = [
        EventEarnings(
            event_id=row["event_id"],
            name=str(events.get(row["event_id"], {}).get("name", "")),
            starts_at=events.get(row["event_id"], {}).get("starts_at"),
            totals=_totals(row["currency"], row),
        )
        for row in per_event
    ]
    epoch = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    event_rows.sort(key=lambda e: (e.starts_at or epoch, e.name, e.totals.currency), reverse=True)

    totals: dict[str, EarningsTotals] = {}
    for event_row in event_rows:
        currency = event_row.totals.currency
        totals[currency] = totals.get(currency, EarningsTotals(currency=currency)) + event_row.totals

    periods: list[PeriodEarnings] = []
    span = ledger.aggregate(first=Min("created_at"), last=Max("created_at"))
    if span["first"] is not None:
        starts = _month_starts(span["first"], span["last"], zone)[-(EARNINGS_MONTHS + 1) :]
        sums: dict[str, Sum] = {}
        for index, (start, end) in enumerate(itertools.pairwise(starts)):
            sums.update(_money_sums(Q(created_at__gte=start, created_at__lt=end), prefix=f"m{index}_"))
        for row in cast(list[dict[str, Any]], list(ledger.values("currency").annotate(**sums).order_by("currency"))):
            for index, (start, end) in enumerate(itertools.pairwise(starts)):
                month = _totals(row["currency"], row, prefix=f"m{index}_")
                if month.gross or month.refunded:
                    periods.append(PeriodEarnings(start=start, end=end, totals=month))
        periods.sort(key=lambda p: (p.start, p.totals.currency), reverse=True)

    return Earnings(
        timezone=zone_name,
        events=event_rows,
        periods=periods,
        totals=sorted(totals.values(), key=lambda t: t.currency),
    )


# --- Waitlist ------------------------------------------------------------------------------------


def waitlist_entry_for_buyer(*, entry_id: uuid.UUID, token: str) -> WaitlistEntry | None:
    """The entry its link names, the joiner's (`token`) or the current offer's emailed one (`offer_token`),
    or None (unknown id or wrong token: the same answer)."""
    entry = WaitlistEntry.objects.select_related("event", "event__tenant", "ticket_type").filter(pk=entry_id).first()
    if entry is None:
        return None
    # Both compared every time (constant time), so the answer's timing tells nothing about which one matched.
    joiners, offers = _same(entry.token, token), waitlist_link_is_offer(entry=entry, token=token)
    return entry if joiners or offers else None


def waitlist_link_is_offer(*, entry: WaitlistEntry, token: str) -> bool:
    """Whether `token` is the current offer's emailed link, the only one that can buy the held seat."""
    return bool(_same(entry.offer_token, token) and entry.offer_token)


def waitlist_waiting_type_ids(*, ticket_types: Sequence[TicketType]) -> set[uuid.UUID]:
    """Of these types, the ones with people waiting: their free seats are the waitlist's, not the public's.

    One query however many types (the shop page, and checkout's lines), and none when no type has ever had
    a waitlist (`waitlist_started_at`, set before a type's first entry is stored and read with the types).
    Also events.hooks' held-back provider."""
    started = [t.pk for t in ticket_types if t.waitlist_started_at is not None]
    if not started:
        return set()
    return set(
        WaitlistEntry.objects.filter(ticket_type_id__in=started, status=WaitlistEntry.Status.WAITING)
        .order_by()
        .values_list("ticket_type_id", flat=True)
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

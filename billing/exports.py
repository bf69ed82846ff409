"""A ticketed event's downloads: its orders (with tickets and refunds) and its tickets with their check-ins.

Each function turns what a selector reads into a `Sheet` (eventsaas/spreadsheets.py writes it as CSV or
Excel, formula injection neutralised). Amounts are exact decimals of the currency's major unit made from
the stored integer minor units (2500 EUR cents -> 25.00, 2500 JPY -> 2500), never floats; times are in the
event's time zone, named in the header.
"""

from collections import Counter
from collections.abc import Iterator, Sequence
from zoneinfo import ZoneInfo

from django.utils.translation import gettext as _

from billing import selectors
from billing.models import Order
from events.models import Event
from eventsaas.money import minor_units_to_decimal
from eventsaas.spreadsheets import Cell, Sheet, local_datetime, zoned_header


def order_sheet(*, event: Event, statuses: Sequence[str] = ()) -> Sheet:
    """One row per order as the order list shows them (newest first, the page's status filter).

    Three queries whatever the number of orders (the refunds' dates, the platform fee kept per order, then
    the orders in chunks), streamed. "Net" is what the organization keeps: paid less refunded less that fee.
    """
    zone = event.timezone
    headers = [
        _("Order"),
        zoned_header(_("Ordered at"), zone),
        _("Buyer"),
        _("Buyer email"),
        _("Status"),
        _("Test payment"),
        _("Tickets"),
        _("Ticket types"),
        _("Ticket holders"),
        _("Currency"),
        _("Total"),
        _("Paid"),
        _("Refunded"),
        _("Platform fee"),
        _("Net"),
        zoned_header(_("Paid at"), zone),
        zoned_header(_("Last refund at"), zone),
        _("Stripe payment"),
    ]
    last_refund_at = selectors.last_refund_at_by_order(event=event)
    fee_kept = selectors.platform_fee_kept_by_order(event=event)

    def rows() -> Iterator[Sequence[Cell]]:
        tz = event.tzinfo
        for order in selectors.order_export_list(event=event, statuses=statuses):
            currency = order.currency
            yield [
                str(order.pk),
                local_datetime(order.created_at, tz),
                order.buyer_name,
                order.buyer_email,
                order.get_status_display(),
                _("Yes") if order.is_test else _("No"),
                order.quantity,
                _ticket_types(order),
                "; ".join(name for name in _holder_names(order) if name),
                currency.upper(),
                minor_units_to_decimal(order.total, currency),
                minor_units_to_decimal(order.paid_amount, currency),
                minor_units_to_decimal(order.refunded_amount, currency),
                minor_units_to_decimal(fee_kept.get(order.pk, 0), currency),
                minor_units_to_decimal(order.paid_amount - order.refunded_amount - fee_kept.get(order.pk, 0), currency),
                local_datetime(order.paid_at, tz),
                local_datetime(last_refund_at.get(order.pk), tz),
                order.stripe_payment_intent_id,
            ]

    return Sheet(title=_("Orders"), headers=headers, rows=rows())


def _ticket_types(order: Order) -> str:
    """ "2 × General; 1 × VIP", in the order's line order."""
    quantities: Counter[str] = Counter()
    for line in order.lines:
        quantities[str(line.get("name", ""))] += int(line.get("quantity", 0))
    return "; ".join(f"{quantity} × {name}" for name, quantity in quantities.items() if quantity)


def _holder_names(order: Order) -> list[str]:
    return [str(attendee.get("name", "")).strip() for attendee in order.attendees or []]


def ticket_sheet(*, event: Event, include_codes: bool) -> Sheet:
    """One row per ticket issued, void ones too, with when and by whom it was checked in.

    One query whatever the number of tickets, streamed. `include_codes` adds the ticket's code, which
    lets its bearer in at the door.
    """
    zone = event.timezone
    headers = [
        *([_("Ticket code")] if include_codes else []),
        _("Order"),
        _("Ticket type"),
        _("Seat"),
        _("Holder"),
        _("Buyer"),
        _("Buyer email"),
        _("Status"),
        _("Currency"),
        _("Price"),
        zoned_header(_("Checked in at"), zone),
        _("Checked in by"),
    ]

    def rows() -> Iterator[Sequence[Cell]]:
        tz = event.tzinfo
        for ticket in selectors.ticket_export_list(event=event):
            order = ticket.order
            yield [
                *([ticket.display_code] if include_codes else []),
                str(order.pk),
                ticket.ticket_type.name,
                ticket.seat,
                ticket.attendee_name or order.buyer_name,
                order.buyer_name,
                order.buyer_email,
                ticket.get_status_display(),
                ticket.currency.upper(),
                minor_units_to_decimal(ticket.price, ticket.currency),
                local_datetime(ticket.checked_in_at, tz),
                ticket.checked_in_by.email if ticket.checked_in_by else "",
            ]

    return Sheet(title=_("Tickets and check-ins"), headers=headers, rows=rows())


# --- Earnings ---------------------------------------------------------------------------------------


def _money_headers() -> list[str]:
    return [
        _("Currency"),
        _("Gross"),
        _("Platform fee"),
        _("Net"),
        _("Refunded"),
        _("Fee refunded"),
        _("Net after refunds"),
    ]


def _money_cells(totals: selectors.EarningsTotals) -> list[Cell]:
    currency = totals.currency
    return [
        currency.upper(),
        *(
            minor_units_to_decimal(amount, currency)
            for amount in (
                totals.gross,
                totals.fee,
                totals.net,
                totals.refunded,
                totals.fee_refunded,
                totals.net_after_refunds,
            )
        ),
    ]


def earnings_by_event_sheet(*, earnings: selectors.Earnings) -> Sheet:
    """One row per event and currency, as the earnings page lists them."""
    headers = [_("Event"), zoned_header(_("Starts at"), earnings.timezone), *_money_headers()]
    zone = ZoneInfo(earnings.timezone)
    rows = [[row.name, local_datetime(row.starts_at, zone), *_money_cells(row.totals)] for row in earnings.events]
    return Sheet(title=_("Earnings by event"), headers=headers, rows=rows)


def earnings_by_month_sheet(*, earnings: selectors.Earnings) -> Sheet:
    """One row per payout period (calendar month in the earnings' time zone) and currency, newest first."""
    headers = [zoned_header(_("Month"), earnings.timezone), *_money_headers()]
    rows = [[period.start.date(), *_money_cells(period.totals)] for period in earnings.periods]
    return Sheet(title=_("Earnings by month"), headers=headers, rows=rows)

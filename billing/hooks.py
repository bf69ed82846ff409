"""What billing adds to other apps' pages (registered from BillingConfig.ready()).

Events' dashboard gets the sales (events.hooks); the guest's page gets a ticket holder's tickets
(guests.hooks, rendered by rsvp, which never imports billing).
"""

from billing.qr import qr_svg
from billing.selectors import guest_tickets, sales_summary, waitlist_waiting_type_ids
from billing.services import order_page_path
from billing.services.waitlist import waitlist_seats_freed
from events.hooks import register_dashboard_section, register_held_back, register_seats_freed
from events.models import Event
from eventsaas.money import money_format
from guests.hooks import GuestPageSection, register_guest_page_section
from guests.models import Guest


def dashboard_sales(event: Event) -> dict:
    """The ticketed dashboard's sales, with every amount formatted in the event's currency."""
    if not event.is_ticketed:
        return {}
    sales = sales_summary(event=event)
    for row in sales.types:
        currency = row.ticket_type.currency
        row.price_display = money_format(row.ticket_type.price, currency)
        row.revenue_display = money_format(row.revenue, currency)
        row.refunded_display = money_format(row.refunded, currency)
    money = {
        "captured": money_format(sales.captured, sales.currency),
        "refunded": money_format(sales.refunded, sales.currency),
        "net": money_format(sales.net, sales.currency),
    }
    return {"sales": sales, "money": money}


def guest_page_tickets(guest: Guest) -> GuestPageSection | None:
    """A ticket holder's tickets on their guest page: type, seat, status, code and QR, and their order's page."""
    if not guest.is_ticket_holder:
        return None
    tickets = guest_tickets(guest=guest)
    rows = [
        {
            "ticket": ticket,
            "qr": qr_svg(ticket.code) if ticket.is_valid else "",
            "order_url": order_page_path(ticket.order),
        }
        for ticket in tickets
    ]
    return GuestPageSection(
        template_name="billing/_guest_tickets.html",
        context={"rows": rows, "valid_count": sum(1 for t in tickets if t.is_valid)},
    )


def register() -> None:
    register_dashboard_section(dashboard_sales)
    register_guest_page_section(guest_page_tickets)
    register_seats_freed(waitlist_seats_freed)
    register_held_back(waitlist_waiting_type_ids)

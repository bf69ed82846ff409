"""What billing adds to events' pages (registered from BillingConfig.ready(), see events.hooks)."""

from billing.selectors import sales_summary, waitlist_held_back_type_ids
from billing.services.waitlist import waitlist_seats_freed
from events.hooks import register_dashboard_section, register_held_back, register_seats_freed
from events.models import Event
from eventsaas.money import money_format


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


def register() -> None:
    register_dashboard_section(dashboard_sales)
    register_seats_freed(waitlist_seats_freed)
    register_held_back(waitlist_held_back_type_ids)

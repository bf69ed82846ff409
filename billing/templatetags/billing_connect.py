"""Template tags of the organization's Stripe account, for pages outside billing (events' dashboard, tickets)."""

from django import template

from billing import selectors

register = template.Library()


@register.inclusion_tag("billing/organizer/_payments_notice.html", takes_context=True)
def payments_notice(context, event):
    """A banner while the event's paid tickets cannot go on sale: the organization cannot take charges yet."""
    request = context["request"]
    blocked = event.is_ticketed and selectors.paid_sales_blocked(event=event)
    return {"blocked": blocked, "request": request}

"""One checkout rate per client address, shared by the shop page and the API."""

from django.conf import settings
from django_ratelimit.core import is_ratelimited

RETRY_AFTER_SECONDS = 60


def checkout_is_throttled(request) -> bool:
    """Count this checkout against the client address; True when it is over the rate.

    Each checkout holds seats for half an hour, so one client must not be able to
    hold a whole event. Page and API count in the same group: alternating them
    gains nothing. `request` is Django's HttpRequest (DRF's `request._request`).
    """
    return is_ratelimited(
        request,
        group="ticket-checkout-client",
        key="ip",
        rate=settings.TICKET_CHECKOUT_RATE_PER_CLIENT,
        increment=True,
    )

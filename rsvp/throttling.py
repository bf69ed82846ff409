"""Guest login throttling, shared by the page and the API: per client and per code."""

from django.conf import settings
from django_ratelimit.core import is_ratelimited

from guests.codes import normalize_code

RETRY_AFTER_SECONDS = 60


def guest_login_is_throttled(request, code: str) -> bool:
    """Count this attempt against the client and against the code; True when either is over its rate.

    `request` is Django's HttpRequest (for the API, DRF's `request._request`).
    """
    normalized = normalize_code(code) or "-"
    by_client = is_ratelimited(
        request, group="rsvp-login-client", key="ip", rate=settings.GUEST_LOGIN_RATE_PER_CLIENT, increment=True
    )
    by_code = is_ratelimited(
        request,
        group="rsvp-login-code",
        key=lambda group, request: normalized,
        rate=settings.GUEST_LOGIN_RATE_PER_CODE,
        increment=True,
    )
    return by_client or by_code

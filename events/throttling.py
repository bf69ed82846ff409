"""Access codes of hidden ticket types: how many wrong ones a client may try.

Organizers pick the codes (often short and guessable, "VIP42"), and the public ticket type list and the shop
page say at once whether one unlocks something, so each client address may try only so many codes that unlock
nothing (TICKET_ACCESS_CODE_RATE_PER_CLIENT, the API and the shop page together). A right code is never counted:
a buyer who has one can reload the page with it as often as they like.
"""

from django.conf import settings
from django_ratelimit.core import get_usage, is_ratelimited

RETRY_AFTER_SECONDS = 60
_GROUP = "ticket-access-code-client"


def access_codes_tried_too_often(request) -> bool:
    """True when this client address has tried too many wrong codes: look no code up for it now.
    `request` is Django's HttpRequest (DRF's `request._request`)."""
    usage = get_usage(request, group=_GROUP, key="ip", rate=settings.TICKET_ACCESS_CODE_RATE_PER_CLIENT)
    # The rate's number of misses are allowed; with that many counted, the next code is not looked up.
    return usage is not None and (usage["should_limit"] or usage["count"] >= usage["limit"])


def access_code_missed(request) -> None:
    """Count a code that unlocked nothing against the client address."""
    is_ratelimited(request, group=_GROUP, key="ip", rate=settings.TICKET_ACCESS_CODE_RATE_PER_CLIENT, increment=True)

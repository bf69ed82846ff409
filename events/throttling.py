"""Access codes of hidden ticket types: how many wrong ones a client may try.

Organizers pick the codes (often short and guessable, "VIP42"), and the public ticket type list and the shop
page say at once whether one unlocks something, so each client address may try only so many codes that unlock
nothing (TICKET_ACCESS_CODE_RATE_PER_CLIENT, the API and the shop page together). A right code is never counted:
a buyer who has one can reload the page with it as often as they like.
"""

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpRequest
from django_ratelimit.core import get_usage, is_ratelimited

from events import selectors
from events.models import Event, TicketType

RETRY_AFTER_SECONDS = 60
_GROUP = "ticket-access-code-client"


@dataclass(frozen=True)
class VisitorTicketTypes:
    """What a visitor who typed an access code (or none) may buy."""

    ticket_types: list[TicketType]
    #: The code as it was looked up: blank when it was refused.
    access_code: str
    #: The client has tried too many codes that unlock nothing: its code was not looked up (answer 429).
    refused: bool


def ticket_types_for_visitor(request: HttpRequest, *, event: Event, access_code: str) -> VisitorTicketTypes:
    """The types on sale for this visitor, with those `access_code` unlocks unless the client is over the rate;
    a code that unlocks nothing is counted. The one place the rule is applied (the public API and the shop
    page). `request` is Django's HttpRequest (DRF's `request._request`)."""
    access_code = access_code.strip()
    refused = bool(access_code) and _tried_too_often(request)
    if refused:
        access_code = ""
    types = selectors.ticket_types_for_sale(event=event, access_code=access_code)
    if access_code and not any(t.access_code for t in types):
        is_ratelimited(
            request, group=_GROUP, key="ip", rate=settings.TICKET_ACCESS_CODE_RATE_PER_CLIENT, increment=True
        )
    return VisitorTicketTypes(types, access_code, refused)


def _tried_too_often(request: HttpRequest) -> bool:
    usage = get_usage(request, group=_GROUP, key="ip", rate=settings.TICKET_ACCESS_CODE_RATE_PER_CLIENT)
    # The rate's number of misses are allowed; with that many counted, the next code is not looked up.
    return usage is not None and (usage["should_limit"] or usage["count"] >= usage["limit"])

"""What checkout reads of an event besides the event: its ticket types and the account paid lines go to.

Every checkout needs both, and a rush asks for them hundreds of times a second while they do not change
(issue #15: two of a paid checkout's eight statements). A web process keeps them beside the kept event
(events/on_sale_cache.py), under the same guest view version and for at most SHOP_PAGE_CACHE_SECONDS:

- any write to a ticket type but its seat counters changes the event's version (events.models.TicketType), so
  a new price, sales window, access code, capacity, a type taken off sale or a waitlist started is seen by the
  next checkout in every process;
- the organization's account (connected, restricted, disconnected) within those seconds, as the organization
  itself is. A checkout in between goes to the account that could take charges a moment ago; Stripe refuses
  a destination that no longer can, and the buyer is told to try again with nothing held.
- `sold` and `reserved` are never served from memory: kept types carry the counters of their read, so a
  checkout that used them lets the reservation, one conditional update, decide (`counters_current`).

Off (read for each checkout, as before) where the kept event is off: SHOP_PAGE_CACHE_SECONDS or
GUEST_API_CACHE_SECONDS 0, which is the embedded default's case (no Redis). There a sold-out type is answered
from its read, without a write (SQLite's writers take turns).
"""

import uuid
from dataclasses import dataclass, field, replace

from django.conf import settings

from billing import selectors
from events.guest_view_versions import guest_view_version_if_set
from events.models import Event, TicketType
from eventsaas.kept import KeptUnderVersion

MAX_ENTRIES = 1_000


@dataclass
class CheckoutTerms:
    tenant_id: uuid.UUID
    #: Every ticket type of the event, by id as text. Shared with the kept entry: copy a type before changing it.
    ticket_types: dict[str, TicketType]
    #: Whether `sold` and `reserved` were read for this checkout; if not, only the reservation can tell seats.
    counters_current: bool
    _account_id: str | None = field(default=None, repr=False)
    _account_read: bool = field(default=False, repr=False)

    def account_id(self) -> str | None:
        """The Stripe account paid lines are charged to (billing.selectors.account_id_for_charges), read once."""
        if not self._account_read:
            self._account_id = selectors.account_id_for_charges(tenant_id=self.tenant_id)
            self._account_read = True
        return self._account_id


_kept: KeptUnderVersion[uuid.UUID, CheckoutTerms] = KeptUnderVersion(MAX_ENTRIES)


def _terms_read(event: Event) -> CheckoutTerms:
    # Unordered: read into a dict (the model's ordering would cost Django's building and a sort).
    types = TicketType.objects.filter(tenant_id=event.tenant_id, event_id=event.pk).order_by()
    return CheckoutTerms(event.tenant_id, {str(t.pk): t for t in types}, counters_current=True)


def checkout_terms(*, event: Event) -> CheckoutTerms:
    """The event's ticket types and charge account: read now, or this process's while they are unchanged."""
    seconds = settings.SHOP_PAGE_CACHE_SECONDS
    if seconds <= 0 or settings.GUEST_API_CACHE_SECONDS <= 0:
        return _terms_read(event)
    version = guest_view_version_if_set(event.pk)  # before the rows: a write after this replaces it
    if version is None:  # made by the kept event's read; without one (evicted, Redis down) nothing is kept
        return _terms_read(event)
    if (kept := _kept.get(event.pk, version)) is not None:
        return kept
    terms = _terms_read(event)
    terms.account_id()  # kept with the types: read now, once for the entry's seconds
    _kept.put(event.pk, version, seconds, replace(terms, counters_current=False))
    return terms


def kept_terms_forget() -> None:
    """Drop every kept entry (tests; a process that switches settings)."""
    _kept.clear()

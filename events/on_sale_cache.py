"""Published ticketed events, with their organization, kept in process memory for the public (issue #15).

Every checkout, waitlist join and shop POST starts by reading the event and its organization (a join, a
quarter of a sold-out checkout's time in a rush). Each web process keeps the event it read under the event's
guest view version (events/guest_view_versions.py: every write to the event row replaces it, and the
process learns of it before the writer has its answer), for at most SHOP_PAGE_CACHE_SECONDS: so a change to
the event itself (unpublished, archived, its questions) is seen by the next request in every process, and a
change to the organization (verified, its platform fee, deleted) within those seconds.

Only events that are on sale are kept (a 404 is never kept), and only under a version that already existed
when the row was read: a version made for this read (the event's first) is made after the row, so the event
is read again by the next request. Unknown ids make no version, so guessing ids costs Redis nothing.
Callers get a copy of their own; the organization object is shared and only read.
"""

import copy
import uuid
from collections.abc import Callable

from django.conf import settings

from events.guest_view_versions import guest_view_version, guest_view_version_if_set
from events.models import Event
from eventsaas.kept import KeptUnderVersion

MAX_ENTRIES = 1_000


_kept: KeptUnderVersion[uuid.UUID, Event] = KeptUnderVersion(MAX_ENTRIES)


def event_on_sale_kept(event_id: uuid.UUID, read: Callable[[uuid.UUID], Event]) -> Event:
    """`read(event_id)` (the database read, which raises Http404), or this process's copy of its answer."""
    seconds = settings.SHOP_PAGE_CACHE_SECONDS
    if seconds <= 0 or settings.GUEST_API_CACHE_SECONDS <= 0:
        return read(event_id)
    version = guest_view_version_if_set(event_id)  # before the row: a write after this replaces it
    if version is not None and (kept := _kept.get(event_id, version)) is not None:
        return copy.copy(kept)
    event = read(event_id)
    if version is not None:
        _kept.put(event.pk, version, seconds, event)
        return copy.copy(event)
    guest_view_version(event_id)  # made now, after the row: kept from the next request on
    return event


def kept_events_forget() -> None:
    """Drop every kept event (tests; a process that switches settings)."""
    _kept.clear()

"""The guest API's household read, kept in process memory between requests (issue #15).

`GET /api/v1/rsvp` is read far more often than anything it shows is written, and its one query
(the guest, its event and household, rsvp.services.household_with_hint) was most of its time. Each
process keeps the households it read, each under the version of its event at the time it was read
(events.guest_view_versions), and serves one again only while that version is current (read from
memory while Redis says it did not change, eventsaas/redis_watch.py) instead of running the query.
Every write to the event or its guests' rows that a guest could see changes the version (the models
and querysets do it), so an answer, an organizer's edit, a regrouping, a regenerated code or an
archived event is seen by the next request, in any process, and a revoked token ends at once.

On only with a cache every process shares (REDIS_URL; GUEST_API_CACHE_SECONDS > 0): with a
per-process cache one process would not see another's versions. Entries are kept at most
GUEST_API_CACHE_SECONDS (which bounds a write that changed no version: a data migration, a lost
version change while Redis was down), at most GUEST_API_CACHE_ENTRIES per process (about 8 KB for a
household of four), least recently used first out. When the version cannot be read, nothing is served from memory.

What is kept is shared by the requests that read it: callers read it and never change it.
"""

import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass

from django.conf import settings

from events.guest_view_versions import guest_view_version
from rsvp import services


@dataclass(frozen=True)
class _Entry:
    version: str
    kept_until: float
    household: services.Household


_Key = tuple[uuid.UUID, uuid.UUID, uuid.UUID, uuid.UUID | None]


class _Households:
    """A process's households, least recently used first; a lock for threaded servers (gthread)."""

    def __init__(self) -> None:
        self._entries: OrderedDict[_Key, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _Key, version: str) -> services.Household | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.version != version or entry.kept_until <= time.monotonic():
                del self._entries[key]
                return None
            self._entries.move_to_end(key)
            return entry.household

    def put(self, key: _Key, version: str, household: services.Household) -> None:
        entry = _Entry(version, time.monotonic() + settings.GUEST_API_CACHE_SECONDS, household)
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > settings.GUEST_API_CACHE_ENTRIES:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_households = _Households()


def household_with_hint(
    *, tenant_id: uuid.UUID, event_id: uuid.UUID, guest_id: uuid.UUID, group_hint: uuid.UUID | None
) -> services.Household | None:
    """rsvp.services.household_with_hint, from this process's memory while the event's version is current."""
    # The version is read before the rows: a write after this read changes it, so what is kept below
    # under it is never served once that write is done. Off, or the cache unreadable: no version, nothing kept.
    version = guest_view_version(event_id) if settings.GUEST_API_CACHE_SECONDS > 0 else None
    key = (tenant_id, event_id, guest_id, group_hint)
    if version is not None and (kept := _households.get(key, version)) is not None:
        return kept
    household = services.household_with_hint(
        tenant_id=tenant_id, event_id=event_id, guest_id=guest_id, group_hint=group_hint
    )
    if household is not None and version is not None:
        for member in household.members:
            member.event = household.guest.event  # one event object per household: half the memory kept
        _households.put(key, version, household)
    return household


def households_forget() -> None:
    """Empty this process's memory (tests and benchmarks)."""
    _households.clear()

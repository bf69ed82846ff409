"""Versions of what an event's guests see, for caches of it (rsvp.household_cache).

Every write to an event, or to one of its guests' rows, that a guest could see changes the
event's version; a process that kept something of the event under an older version reads it
again. The models' save/delete and their querysets' update/bulk writes call
`guest_view_changed` (events.models, guests.models), so no service has to remember it.

- The version is changed at once and again after the surrounding transaction commits: a reader
  that read the old rows (the write not yet committed) and kept them under the first new version
  finds the second one. Outside a transaction, once.
- A version is a random token, not a counter: a cache that lost its keys (restart, eviction)
  cannot come back to a value an old entry was kept under.
- Best effort on the writing side (a cache outage never fails a write; it is logged), fail-closed
  on the reading side: no version read, nothing served from memory. Readers also bound how long
  they keep anything (GUEST_API_CACHE_SECONDS), which bounds a version change that was lost.
- Read from process memory while Redis says the version is unchanged (eventsaas/redis_watch.py: Redis
  names every changed version on a connection the process watches, before the writer has its answer),
  so a request reads Redis only for an event whose version changed, or every VERSION_COPY_SECONDS.
"""

import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import cache, caches
from django.db import transaction
from django.db.models import Model, QuerySet
from django.db.models.expressions import Col
from django.db.models.lookups import Exact, In, Lookup
from django.db.models.sql.where import AND

from eventsaas.cache import RedisCache
from eventsaas.models import TenantScopedQuerySet
from eventsaas.redis_watch import WatchedKeys

logger = logging.getLogger(__name__)

_M = TypeVar("_M", bound=Model)

# Versions outlive any reader's entry by far; an expired one is replaced by a new token.
VERSION_TIMEOUT_SECONDS = 7 * 24 * 3600
# How long a version read from Redis is taken from memory at most, even though Redis named no change:
# bounds what a lost invalidation could cost (eventsaas/redis_watch.py).
VERSION_COPY_SECONDS = 5.0

_PREFIX = "guestview:version:"


def _key(event_id: Any) -> str:
    try:  # one key per event however its id was written (a UUID, or its text with or without dashes)
        event_id = uuid.UUID(str(event_id))
    except ValueError:
        pass
    return f"{_PREFIX}{event_id}"


_watches: dict[tuple[str, str], WatchedKeys] = {}


def _watch() -> WatchedKeys | None:
    """The process's watch of the versions in Redis, when the cache is one Redis (not a local cache)."""
    if not isinstance(caches["default"], RedisCache):
        return None
    location = settings.CACHES["default"].get("LOCATION")
    if isinstance(location, (list, tuple)):
        location = location[0] if len(location) == 1 else None  # replicas: reads may lag the primary's messages
    if not isinstance(location, str):
        return None
    where = (location, cache.make_key(_PREFIX))
    watch = _watches.get(where)
    if watch is None:
        watch = _watches.setdefault(where, WatchedKeys(url=where[0], prefix=where[1], max_age=VERSION_COPY_SECONDS))
    return watch


def _version_read(event_id: uuid.UUID, load: Callable[[str], str | None]) -> str | None:
    """`load(key)` through the process's watch when there is one; None when the cache cannot be read."""
    key = _key(event_id)
    try:
        watch = _watch()
        if watch is None:
            return load(key)
        return watch.read(cache.make_key(key), lambda: load(key))
    except Exception:
        logger.warning("Guest view version not read", exc_info=True)
        return None


def guest_view_version(event_id: uuid.UUID) -> str | None:
    """The event's current version (a copy in memory, or one cache read); None when the cache cannot be
    read: keep nothing."""
    return _version_read(event_id, lambda key: cache.get_or_set(key, uuid.uuid4().hex, VERSION_TIMEOUT_SECONDS))


def guest_view_version_if_set(event_id: uuid.UUID) -> str | None:
    """The event's current version if it has one (made by an earlier read); None otherwise, or when the cache
    cannot be read. Unlike guest_view_version() it makes none: ids nobody knows (a public URL) cost no key."""
    return _version_read(event_id, cache.get)


def _replace_versions(event_ids: frozenset[Any]) -> None:
    versions = {_key(event_id): uuid.uuid4().hex for event_id in event_ids}
    try:
        if (watch := _watch()) is not None:
            watch.forget(cache.make_key(key) for key in versions)
        cache.set_many(versions, VERSION_TIMEOUT_SECONDS)
    except Exception:
        # Readers keep entries for GUEST_API_CACHE_SECONDS at most: that bounds what this loses.
        logger.exception("Guest view versions of %d event(s) not changed", len(event_ids))


def guest_view_changed(event_ids: Iterable[Any]) -> None:
    """What these events' guests see has changed (or is about to, when the transaction commits)."""
    if settings.GUEST_API_CACHE_SECONDS <= 0:
        return  # nothing is kept anywhere (a process that keeps households starts with none)
    ids = frozenset(event_id for event_id in event_ids if event_id is not None)
    if not ids:
        return
    _replace_versions(ids)
    if transaction.get_connection().in_atomic_block:
        transaction.on_commit(lambda: _replace_versions(ids), robust=True)


# --- which events a queryset writes to ------------------------------------------------------------


def _filtered_values(queryset: QuerySet[Any], attname: str) -> set[Any] | None:
    """The values `attname` is pinned to by the queryset's own filter (`field=x` or `field__in=[...]`)."""
    where = queryset.query.where
    if where.connector != AND or where.negated or queryset.query.combinator:
        return None
    for child in where.children:
        if not (isinstance(child, Lookup) and isinstance(child.lhs, Col) and child.lhs.target.attname == attname):
            continue
        if isinstance(child, Exact) and not hasattr(child.rhs, "resolve_expression"):
            return {child.rhs}
        if isinstance(child, In) and isinstance(child.rhs, (list, tuple, set, frozenset)):
            return set(child.rhs)
    return None


def event_ids_written_by(queryset: QuerySet[Any], attname: str) -> set[Any]:
    """The events whose rows an update or delete of `queryset` touches.

    Read from the filter when it names them (every scoped write does: `for_event()`, `pk=`);
    otherwise one query for them, before the write.
    """
    pinned = _filtered_values(queryset, attname)
    if pinned is not None:
        return pinned
    return set(queryset.order_by().values_list(attname, flat=True).distinct())


def fields_are_unseen(fields: Iterable[str] | None, unseen: frozenset[str]) -> bool:
    """Whether a write of only these fields (None: all of them) leaves what guests see unchanged."""
    written = None if fields is None else set(fields)
    return bool(written) and written <= unseen  # type: ignore[operator]  # not None when truthy


class GuestViewQuerySet(TenantScopedQuerySet[_M]):
    """A queryset whose writes change the guest view versions of the events they touch.

    `event_attname` names the column holding the event (`event_id` on an event's rows, `id` on
    the event itself); a write of only `unseen_fields` (the worker's activity stamps) changes nothing
    guests see, so it changes no version.
    """

    event_attname = "event_id"
    unseen_fields: frozenset[str] = frozenset()

    def update(self, **kwargs: Any) -> int:
        if fields_are_unseen(kwargs, self.unseen_fields):
            return super().update(**kwargs)
        event_ids = event_ids_written_by(self, self.event_attname)
        rows = super().update(**kwargs)
        if rows:
            guest_view_changed(event_ids)
        return rows

    def delete(self) -> tuple[int, dict[str, int]]:
        event_ids = event_ids_written_by(self, self.event_attname)
        deleted = super().delete()
        if deleted[0]:
            guest_view_changed(event_ids)
        return deleted

    def bulk_create(self, objs: Iterable[_M], *args: Any, **kwargs: Any) -> list[_M]:
        created = super().bulk_create(objs, *args, **kwargs)
        guest_view_changed(getattr(obj, self.event_attname) for obj in created)
        return created

    def bulk_update(self, objs: Iterable[_M], fields: Any, *args: Any, **kwargs: Any) -> int:
        objs = list(objs)
        rows = super().bulk_update(objs, fields, *args, **kwargs)
        if not fields_are_unseen(fields, self.unseen_fields):
            guest_view_changed(getattr(obj, self.event_attname) for obj in objs)
        return rows


class GuestViewModel(Model):
    """A model whose save() and delete() change the guest view version of its event (see GuestViewQuerySet)."""

    guest_view_event_attname = "event_id"
    guest_view_unseen_fields: frozenset[str] = frozenset()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        if not fields_are_unseen(kwargs.get("update_fields"), self.guest_view_unseen_fields):
            guest_view_changed([getattr(self, self.guest_view_event_attname)])

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        event_id = getattr(self, self.guest_view_event_attname)
        deleted = super().delete(*args, **kwargs)
        guest_view_changed([event_id])
        return deleted

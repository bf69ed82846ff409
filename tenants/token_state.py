"""Whether an organizer's token is still good: token versions and refresh-token families.

A token's signature and claims are checked with public keys alone
(tenants.token_verification), which a gateway can do too. Whether the access
it grants still stands is state, kept here and read from the cache on every
request (one `get_many` of two keys; a miss reads one row each and caches it):

- the user's `token_version`: every access token carries the version current
  when it was signed (`ver`); removing the person from an organization, changing
  their role, deactivating them or setting a new password bumps it, so older
  tokens stop at once;
- the token's refresh family (`fam`): logout and refresh-token reuse revoke it,
  which ends its access tokens too.

Bumps and revocations are single-row updates (atomic on every database, MongoDB
included); the cache is written after them, and again after the surrounding
transaction commits, while readers only ever `add` to it, so a reader that
loaded a value before a bump cannot overwrite the newer one. Without Redis the
cache is per process: another process notices within TOKEN_STATE_CACHE_SECONDS.
"""

import uuid
from datetime import datetime

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from tenants.models import RefreshTokenFamily, User

# Cached for users who are gone or deactivated: no token version matches it.
NO_VERSION = -1
# Family states in the cache.
FAMILY_LIVE, FAMILY_REVOKED = 1, 0


def _version_key(user_id: uuid.UUID | str) -> str:
    return f"tokens:version:{user_id}"


def _family_key(family_id: uuid.UUID | str | None) -> str:
    return f"tokens:family:{family_id}"


def _ttl() -> int:
    return settings.TOKEN_STATE_CACHE_SECONDS


def _as_uuid(value: object) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except (TypeError, ValueError, AttributeError):
        return None


# --- token versions ---------------------------------------------------------------------------


def _stored_version(user_id: uuid.UUID | str) -> int:
    row = get_user_model().objects.filter(pk=user_id).values_list("token_version", "is_active").first()
    if row is None or not row[1]:
        return NO_VERSION
    return row[0]


def user_token_version(*, user_id: uuid.UUID | str) -> int:
    """The version an access token signed now carries (read from the database, not the cache).

    Also offered to the cache (`add`: never over a newer value), since the token
    is about to be used: its first request then needs no query.
    """
    version = _stored_version(user_id)
    cache.add(_version_key(user_id), version, _ttl())
    return version


def _publish_version(user_id: uuid.UUID | str) -> None:
    cache.set(_version_key(user_id), _stored_version(user_id), _ttl())


def user_tokens_revoke(*, user_id: uuid.UUID | str, families: bool = False) -> None:
    """End every access token of the user; with `families`, their refresh tokens too.

    Called after the change that caused it (membership, role, active flag,
    password) is written, so a token signed in between carries the old version.
    """
    get_user_model().objects.filter(pk=user_id).update(token_version=F("token_version") + 1)
    if families:
        RefreshTokenFamily.objects.filter(user_id=user_id, revoked_at__isnull=True).update(
            revoked_at=timezone.now(), revoked_reason="access_changed"
        )
    _publish_version(user_id)
    transaction.on_commit(lambda: _publish_version(user_id))


def user_token_state_forget(*, user_id: uuid.UUID | str) -> None:
    """Drop the cached state of a deleted account: the next request finds no account."""
    cache.set(_version_key(user_id), NO_VERSION, _ttl())


# --- refresh families --------------------------------------------------------------------------


def token_family_create(*, user: User, expires_at: datetime) -> RefreshTokenFamily:
    family = RefreshTokenFamily.objects.create(user=user, expires_at=expires_at)
    cache.add(_family_key(family.pk), FAMILY_LIVE, _ttl())
    return family


def token_family_rotate(
    *, family_id: uuid.UUID | str | None, generation: int
) -> tuple[RefreshTokenFamily | None, bool]:
    """Move the family from `generation` to the next one: (family, reused).

    (family, False): this caller won and may sign generation + 1. (None, True): an
    older generation came back, so the family is now revoked. (None, False): no
    such family, revoked, or expired.
    """
    family_pk = _as_uuid(family_id)
    if family_pk is None or not isinstance(generation, int) or isinstance(generation, bool):
        return None, False
    now = timezone.now()
    won = RefreshTokenFamily.objects.filter(
        pk=family_pk, generation=generation, revoked_at__isnull=True, expires_at__gt=now
    ).update(generation=F("generation") + 1, last_used_at=now)
    family = RefreshTokenFamily.objects.filter(pk=family_pk).first()
    if won:
        return family, False
    if family is not None and family.revoked_at is None and family.generation > generation:
        token_family_revoke(family_id=family_pk, reason="reuse")
        return None, True
    return None, False


def token_family_revoke(*, family_id: uuid.UUID | str | None, reason: str) -> bool:
    """Revoke a family and the access tokens it issued; True when this call revoked it."""
    family_pk = _as_uuid(family_id)
    if family_pk is None:
        return False
    revoked = RefreshTokenFamily.objects.filter(pk=family_pk, revoked_at__isnull=True).update(
        revoked_at=timezone.now(), revoked_reason=reason
    )
    # Revocation is final, so the cache can hold it as long as any token of the family lives.
    cache.set(
        _family_key(family_pk), FAMILY_REVOKED, int(settings.SIMPLE_JWT["REFRESH_TOKEN_LIFETIME"].total_seconds())
    )
    return bool(revoked)


def token_families_cleanup(*, now: datetime | None = None) -> int:
    """Delete families whose refresh tokens have all expired (their access tokens expired long before)."""
    deleted, _per_model = RefreshTokenFamily.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return deleted


def _stored_family_state(family_pk: uuid.UUID | str) -> int:
    live = RefreshTokenFamily.objects.filter(pk=family_pk, revoked_at__isnull=True).exists()
    return FAMILY_LIVE if live else FAMILY_REVOKED


# --- the per-request check ----------------------------------------------------------------------


def organizer_access_is_current(claims: dict) -> bool:
    """Whether an organizer access token's version and family still stand (two cache reads)."""
    user_pk, family_pk, version = _as_uuid(claims.get("sub")), _as_uuid(claims.get("fam")), claims.get("ver")
    if user_pk is None or family_pk is None or not isinstance(version, int) or isinstance(version, bool):
        return False
    version_key, family_key = _version_key(user_pk), _family_key(family_pk)
    cached = cache.get_many([version_key, family_key])
    current = cached.get(version_key)
    if current is None:
        try:
            current = _stored_version(user_pk)
        except ValidationError:
            return False
        cache.add(version_key, current, _ttl())
    if current != version or current == NO_VERSION:
        return False
    family_state = cached.get(family_key)
    if family_state is None:
        family_state = _stored_family_state(family_pk)
        cache.add(family_key, family_state, _ttl())
    return family_state == FAMILY_LIVE

"""Write operations on guests: creation, editing, codes, groups, activity records and stamps."""

import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from eventsaas.db import run_in_transaction
from eventsaas.fields import MillisecondDateTimeField
from guests.codes import generate_code
from guests.models import Guest, GuestActivity
from tenants.services import audit_log_record

EDITABLE_FIELDS = ("first_name", "last_name", "email", "phone", "expected_guests", "dietary")
CODE_ATTEMPTS = 10
BULK_CREATE_MAX_ROWS = 1000


def _save_with_fresh_code(guest: Guest, *, update_fields=None) -> None:
    """Save with a new random code; the unique index on code decides collisions."""
    for _attempt in range(CODE_ATTEMPTS):
        guest.code = generate_code()
        try:
            with transaction.atomic():
                guest.save(update_fields=update_fields)
            return
        except IntegrityError:
            if Guest.objects.filter(code=guest.code).exclude(pk=guest.pk).exists():
                continue
            raise
    raise RuntimeError("Could not generate a unique guest code")


def guest_create(*, event, acting_user, **fields) -> Guest:
    """Add a guest to an event with a fresh personal code."""
    guest = Guest(tenant_id=event.tenant_id, event=event, **{k: v for k, v in fields.items() if k in EDITABLE_FIELDS})
    guest.code = generate_code()
    guest.full_clean(exclude=["code"], validate_constraints=False)
    _save_with_fresh_code(guest)
    audit_log_record(
        action="guest.created",
        tenant=event.tenant,
        event_id=event.pk,
        actor_user=acting_user,
        object_id=guest.pk,
    )
    return guest


class GuestRowsInvalid(ValidationError):
    """Rows of a bulk create failed validation; `row_errors` maps each bad row's index to its field errors."""

    def __init__(self, row_errors: dict[int, dict[str, list[str]]]):
        self.row_errors = row_errors
        super().__init__(_("Some guests are not valid; none were added."))


def _taken_codes(codes) -> set[str]:
    return set(Guest.objects.filter(code__in=list(codes)).values_list("code", flat=True))


def _give_fresh_codes(guests: list[Guest], *, taken: set[str]) -> None:
    """A random code for each guest, none in `taken` nor shared within the batch."""
    for guest in guests:
        code = generate_code()
        while code in taken:
            code = generate_code()
        taken.add(code)
        guest.code = code


def _bulk_insert_with_fresh_codes(guests: list[Guest]) -> None:
    """Insert every guest with a unique code: one bulk insert per attempt, normally one attempt.

    The unique index on code decides collisions. A code taken by a concurrent
    insert between the check and the INSERT fails the statement; the guests that
    are not in the database afterwards (looked up by their primary keys, which
    are chosen here) are retried with new codes for the colliding ones. This
    holds whether the failed insert stored none of its rows (SQL, in its own
    savepoint) or the rows before the duplicate (MongoDB's ordered insert_many).
    """
    pending = guests
    codes_in_use: set[str] = set()
    _give_fresh_codes(pending, taken=codes_in_use)
    collisions = _taken_codes(g.code for g in pending)
    for _attempt in range(CODE_ATTEMPTS):
        if collisions:
            codes_in_use |= collisions
            _give_fresh_codes([g for g in pending if g.code in collisions], taken=codes_in_use)
        try:
            # A savepoint, so PostgreSQL can go on after a failed INSERT inside an outer transaction.
            with transaction.atomic():
                Guest.objects.bulk_create(pending)
            return
        except IntegrityError:
            stored = set(Guest.objects.filter(pk__in=[g.pk for g in pending]).values_list("pk", flat=True))
            pending = [g for g in pending if g.pk not in stored]
            if not pending:
                return
            collisions = _taken_codes(g.code for g in pending)
            if not collisions and not stored:
                raise
    raise RuntimeError("Could not generate unique guest codes")


def guest_bulk_create(*, event, rows: list[dict], acting_user) -> list[Guest]:
    """Add many guests at once, all or none: every row is validated before anything is saved.

    Raises GuestRowsInvalid naming each invalid row. Valid rows are inserted with
    few statements (codes unique, see `_bulk_insert_with_fresh_codes`) and one
    audit entry records them.
    """
    if len(rows) > BULK_CREATE_MAX_ROWS:
        raise ValidationError(
            _("At most %(max)s guests can be added at once.") % {"max": BULK_CREATE_MAX_ROWS}, code="too_many"
        )
    guests, row_errors = [], {}
    for index, row in enumerate(rows):
        guest = Guest(tenant_id=event.tenant_id, event=event, **{k: v for k, v in row.items() if k in EDITABLE_FIELDS})
        try:
            # Without the per-row queries: the primary key and code are fresh, tenant and event are given.
            guest.full_clean(
                exclude=["id", "code", "tenant", "event"], validate_unique=False, validate_constraints=False
            )
        except ValidationError as error:
            row_errors[index] = error.message_dict
        guests.append(guest)
    if row_errors:
        raise GuestRowsInvalid(row_errors)
    if not guests:
        return []
    _bulk_insert_with_fresh_codes(guests)
    audit_log_record(
        action="guest.bulk_created",
        tenant=event.tenant,
        event_id=event.pk,
        actor_user=acting_user,
        data={"count": len(guests), "guests": [str(g.pk) for g in guests]},
    )
    return guests


def guest_update(*, guest: Guest, acting_user, **fields) -> Guest:
    changed = [name for name in EDITABLE_FIELDS if name in fields and getattr(guest, name) != fields[name]]
    for name in changed:
        setattr(guest, name, fields[name])
    if changed:
        guest.full_clean(exclude=["code"], validate_constraints=False)
        guest.save(update_fields=changed)
        audit_log_record(
            action="guest.updated",
            **_audit_keys(guest),
            actor_user=acting_user,
            data={"fields": changed},
        )
    return guest


def _audit_keys(guest: Guest) -> dict:
    return {"tenant": guest.tenant, "event_id": guest.event_id, "object_id": guest.pk}


def guest_delete(*, guest: Guest, acting_user) -> None:
    keys = _audit_keys(guest)
    name = guest.full_name
    guest.delete()
    audit_log_record(action="guest.deleted", **keys, actor_user=acting_user, data={"name": name})


def guest_code_regenerate(*, guest: Guest, acting_user) -> Guest:
    """Give the guest a new code; the old one stops working at once (sessions check the code)."""
    _save_with_fresh_code(guest, update_fields=["code"])
    audit_log_record(action="guest.code_regenerated", **_audit_keys(guest), actor_user=acting_user)
    return guest


def guest_group_connect(*, event, guest_ids, acting_user) -> uuid.UUID:
    """Put the given guests of `event` into one group, in one update.

    The group keeps the id of the first selected guest that already has one, so
    adding a person to an existing household does not split the household.
    """
    guests = list(Guest.objects.for_event(event).filter(pk__in=guest_ids).order_by("created_at"))
    if len(guests) < 2 or len(guests) != len(set(guest_ids)):
        raise ValueError("Choose at least two guests of this event")
    group_id = next((g.group_id for g in guests if g.group_id), None) or uuid.uuid4()
    Guest.objects.for_event(event).filter(pk__in=[g.pk for g in guests]).update(group_id=group_id)
    audit_log_record(
        action="guest.group_connected",
        tenant=event.tenant,
        event_id=event.pk,
        actor_user=acting_user,
        data={"group_id": str(group_id), "guests": [str(g.pk) for g in guests]},
    )
    return group_id


def guest_group_leave(*, guest: Guest, acting_user) -> Guest:
    """Take one guest out of its group: one update of that guest."""
    old_group = guest.group_id
    guest.group_id = None
    guest.save(update_fields=["group_id"])
    audit_log_record(
        action="guest.group_left",
        **_audit_keys(guest),
        actor_user=acting_user,
        data={"group_id": str(old_group)},
    )
    return guest


@dataclass
class ActivityBatchResult:
    rows_inserted: int = 0
    guests_updated: int = 0
    dropped: int = 0


def _later_of(field: str, when) -> Greatest:
    """The stored time or `when`, whichever is later: a stamp never moves backwards.

    Coalesce because SQLite's MAX() (and MongoDB's $max on a missing field) would
    otherwise give NULL for a guest who has no stamp yet.
    """
    value = Value(when, output_field=MillisecondDateTimeField())  # stored to the millisecond, like the field
    return Greatest(Coalesce(F(field), value), value)


def guest_activity_record_batch(*, events) -> ActivityBatchResult:
    """Write a batch of activity events (guests.activity.ActivityEvent): one row each, one update per guest.

    All events of one guest in the batch become a single UPDATE that sets
    last_access_at (and last_login_at, if the batch holds a login) to the later
    of the stored value and the batch's newest event, so events arriving late or
    twice never move time backwards. The rows go in with one bulk insert.

    Idempotent: an event whose id is already stored (a message delivered
    again) adds no row. Events of guests that no longer exist, or whose
    tenant/event do not match the guest, are dropped.
    """
    unique = list({event.id: event for event in events}.values())
    if not unique:
        return ActivityBatchResult()
    guests = {
        pk: (tenant_id, event_id)
        for pk, tenant_id, event_id in Guest.objects.filter(pk__in={e.guest_id for e in unique}).values_list(
            "pk", "tenant_id", "event_id"
        )
    }
    valid = [e for e in unique if guests.get(e.guest_id) == (e.tenant_id, e.event_id)]
    result = ActivityBatchResult(dropped=len(unique) - len(valid))
    if not valid:
        return result
    already_stored = set(GuestActivity.objects.filter(pk__in=[e.id for e in valid]).values_list("pk", flat=True))

    latest_access: dict = {}
    latest_login: dict = {}
    for event in valid:
        if event.is_guest_access:
            latest_access[event.guest_id] = max(event.at, latest_access.get(event.guest_id, event.at))
        if event.is_login:
            latest_login[event.guest_id] = max(event.at, latest_login.get(event.guest_id, event.at))

    rows = [
        GuestActivity(
            id=e.id,
            tenant_id=e.tenant_id,
            event_id=e.event_id,
            guest_id=e.guest_id,
            kind=e.kind,
            at=e.at,
            user_agent=e.user_agent,
            client_hash=e.client_hash,
            actor_user_id=e.actor_user_id,
        )
        for e in valid
        if e.id not in already_stored
    ]

    def write(*, attempt: int) -> int:
        pending = rows
        if attempt > 1 and rows:
            # Run again after a conflict with another flush, which may have stored some of them.
            taken = set(GuestActivity.objects.filter(pk__in=[r.pk for r in rows]).values_list("pk", flat=True))
            pending = [r for r in rows if r.pk not in taken]
        if pending:
            GuestActivity.objects.bulk_create(pending)
        for guest_id, accessed_at in latest_access.items():
            tenant_id, event_id = guests[guest_id]
            stamps = {"last_access_at": _later_of("last_access_at", accessed_at)}
            if guest_id in latest_login:
                stamps["last_login_at"] = _later_of("last_login_at", latest_login[guest_id])
            Guest.objects.filter(pk=guest_id, tenant_id=tenant_id, event_id=event_id).update(**stamps)
        return len(pending)

    # One transaction for tidiness (and one commit on SQLite); correctness does not
    # depend on it: replaying the batch changes nothing, so a MongoDB transaction that
    # lost a race with another flush (WriteConflict on a guest's stamps) just runs again.
    result.rows_inserted = run_in_transaction(write)
    result.guests_updated = len(latest_access)
    return result


def activity_cleanup(*, now=None) -> int:
    """Delete activity records older than ACTIVITY_RETENTION_DAYS; the number deleted (running twice is harmless)."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.ACTIVITY_RETENTION_DAYS)
    deleted, _per_model = GuestActivity.objects.filter(at__lt=cutoff).delete()
    return deleted

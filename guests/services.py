"""Write operations on guests: creation, editing, codes, groups, activity stamps."""

import uuid

from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from guests.codes import generate_code
from guests.models import Guest
from tenants.services import audit_log_record

EDITABLE_FIELDS = ("first_name", "last_name", "email", "phone", "expected_guests", "dietary")
CODE_ATTEMPTS = 10


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


def _stamp(guest_id, field: str, when) -> None:
    # Conditional update: a stale or duplicate stamp never moves the time backwards.
    Guest.objects.filter(pk=guest_id).filter(Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__lt": when})).update(
        **{field: when}
    )


def guest_record_login(*, guest: Guest, when=None) -> None:
    when = when or timezone.now()
    _stamp(guest.pk, "last_login_at", when)
    _stamp(guest.pk, "last_access_at", when)


def guest_record_access(*, guest: Guest, when=None) -> None:
    _stamp(guest.pk, "last_access_at", when or timezone.now())

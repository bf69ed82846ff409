"""Write operations on events."""

import datetime as dt
import uuid
from dataclasses import dataclass
from typing import Any, TypedDict

from django.core.exceptions import ValidationError
from django.db.models import F, Q
from django.utils import timezone as django_timezone
from django.utils.text import slugify
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from events import hooks
from events.models import Event, TicketType
from eventsaas.dates import EARLIEST, LATEST
from eventsaas.fields import now_as_stored
from eventsaas.services import audit_log_record
from eventsaas.types import NOT_GIVEN, NotGiven, given
from tenants.models import ActingUser, Tenant
from tenants.services import OrganizationNotVerified, tenant_require_verified

EDITABLE_FIELDS = (
    "name",
    "slug",
    "description",
    "status",
    "starts_at",
    "ends_at",
    "timezone",
    "location",
    "dress_code",
    "rsvp_deadline",
    "language",
    "contact_email",
    "questions",
    "attendee_names_required",
)


class Question(TypedDict):
    """One of an event's custom questions (`Event.questions`); no choices means free text."""

    key: str
    label: str
    choices: list[str]


def questions_from_text(text: str, existing: list[Question] | None = None) -> list[Question]:
    """Parse the organizer's question list: one per line, `Question? choice | choice` optional.

    Keys are derived from the labels and kept stable so stored answers stay attached:
    a question of `existing` whose label is unchanged keeps its key.
    """
    known = {q["label"].strip(): q["key"] for q in existing or []}
    questions: list[Question] = []
    seen = set()
    for line in (text or "").splitlines():
        line = line.strip()
        if not line:
            continue
        label, _sep, raw_choices = line.partition("::")
        choices = [c.strip() for c in raw_choices.split("|") if c.strip()]
        key = known.get(label.strip()) or slugify(label)[:40] or f"q{len(questions) + 1}"
        if key in seen:
            raise ValidationError(_("Two questions have the same text: %(label)s") % {"label": label.strip()})
        seen.add(key)
        questions.append({"key": key, "label": label.strip(), "choices": choices})
    return questions


def questions_to_text(questions: list[Question]) -> str:
    lines = []
    for q in questions or []:
        line = q["label"]
        if q.get("choices"):
            line += " :: " + " | ".join(q["choices"])
        lines.append(line)
    return "\n".join(lines)


def event_answers_clean(*, event: Event, answers: dict[str, Any] | None) -> dict[str, str]:
    """Answers to the event's custom questions: known keys only, choices from the list, short text."""
    questions = {q["key"]: q for q in event.questions or []}
    errors: list[str] = []
    cleaned: dict[str, str] = {}
    for key, value in (answers or {}).items():
        question = questions.get(key)
        if question is None:
            errors.append(_("“%(key)s” is not a question of this event.") % {"key": key})
        elif not isinstance(value, str) or len(value) > 500:
            errors.append(_("The answer to “%(label)s” must be text of at most 500 characters.") % question)
        elif question.get("choices") and value and value not in question["choices"]:
            errors.append(_("Choose one of the options for “%(label)s”.") % question)
        elif value:
            cleaned[key] = value
    if errors:
        raise ValidationError({"answers": errors})
    return cleaned


def _unique_slug(tenant: Tenant, name: str, exclude_pk: uuid.UUID | None = None) -> str:
    base = slugify(name)[:70] or "event"
    slug, n = base, 1
    existing = Event.objects.for_tenant(tenant)
    if exclude_pk:
        existing = existing.exclude(pk=exclude_pk)
    while existing.filter(slug=slug).exists():
        n += 1
        slug = f"{base}-{n}"
    return slug


def _check_may_sell(event: Event) -> None:
    """A ticketed event goes on sale (published) only once the organization is verified: a field error on status."""
    if event.is_ticketed and event.status == Event.Status.PUBLISHED:
        try:
            tenant_require_verified(tenant=event.tenant, action="sell")
        except OrganizationNotVerified as refusal:
            raise ValidationError({"status": str(refusal)}) from refusal


def event_create(
    *,
    tenant: Tenant,
    acting_user: ActingUser,
    kind: str = Event.Kind.INVITE_ONLY,
    name: str | NotGiven = NOT_GIVEN,
    slug: str | NotGiven = NOT_GIVEN,
    description: str | NotGiven = NOT_GIVEN,
    status: str | NotGiven = NOT_GIVEN,
    starts_at: dt.datetime | NotGiven = NOT_GIVEN,
    ends_at: dt.datetime | None | NotGiven = NOT_GIVEN,
    timezone: str | NotGiven = NOT_GIVEN,
    location: str | NotGiven = NOT_GIVEN,
    dress_code: str | NotGiven = NOT_GIVEN,
    rsvp_deadline: dt.datetime | None | NotGiven = NOT_GIVEN,
    language: str | NotGiven = NOT_GIVEN,
    contact_email: str | NotGiven = NOT_GIVEN,
    questions: list[Question] | NotGiven = NOT_GIVEN,
    attendee_names_required: bool | NotGiven = NOT_GIVEN,
) -> Event:
    """A new event; its kind (invite-only or ticketed) is chosen here and does not change later.

    A field not given keeps the model's default.
    """
    fields = given(
        name=name,
        slug=slug,
        description=description,
        status=status,
        starts_at=starts_at,
        ends_at=ends_at,
        timezone=timezone,
        location=location,
        dress_code=dress_code,
        rsvp_deadline=rsvp_deadline,
        language=language,
        contact_email=contact_email,
        questions=questions,
        attendee_names_required=attendee_names_required,
    )
    event = Event(tenant=tenant, kind=kind, **fields)
    if not event.slug:
        event.slug = _unique_slug(tenant, event.name)
    if not event.contact_email and acting_user is not None and acting_user.is_authenticated:
        event.contact_email = acting_user.email
    _check_may_sell(event)
    event.full_clean()
    event.save()
    audit_log_record(
        action="event.created", tenant=tenant, event_id=event.pk, actor_user=acting_user, object_id=event.pk
    )
    return event


def event_update(
    *,
    event: Event,
    acting_user: ActingUser,
    name: str | NotGiven = NOT_GIVEN,
    slug: str | NotGiven = NOT_GIVEN,
    description: str | NotGiven = NOT_GIVEN,
    status: str | NotGiven = NOT_GIVEN,
    starts_at: dt.datetime | NotGiven = NOT_GIVEN,
    ends_at: dt.datetime | None | NotGiven = NOT_GIVEN,
    timezone: str | NotGiven = NOT_GIVEN,
    location: str | NotGiven = NOT_GIVEN,
    dress_code: str | NotGiven = NOT_GIVEN,
    rsvp_deadline: dt.datetime | None | NotGiven = NOT_GIVEN,
    language: str | NotGiven = NOT_GIVEN,
    contact_email: str | NotGiven = NOT_GIVEN,
    questions: list[Question] | NotGiven = NOT_GIVEN,
    attendee_names_required: bool | NotGiven = NOT_GIVEN,
) -> Event:
    """Change the given fields of an event; the ones not given stay as they are."""
    fields = given(
        name=name,
        slug=slug,
        description=description,
        status=status,
        starts_at=starts_at,
        ends_at=ends_at,
        timezone=timezone,
        location=location,
        dress_code=dress_code,
        rsvp_deadline=rsvp_deadline,
        language=language,
        contact_email=contact_email,
        questions=questions,
        attendee_names_required=attendee_names_required,
    )
    changed = [k for k in EDITABLE_FIELDS if k in fields and getattr(event, k) != fields[k]]
    for name in changed:
        setattr(event, name, fields[name])
    if changed:
        event.updated_at = django_timezone.now()
        if "status" in changed:
            _check_may_sell(event)
        event.full_clean()
        extra = []
        # A deadline moved into the future reopens answers; the close job closes again when it passes.
        if (
            "rsvp_deadline" in changed
            and event.rsvp_closed_at
            and (event.rsvp_deadline is None or event.rsvp_deadline > event.updated_at)
        ):
            event.rsvp_closed_at = None
            extra = ["rsvp_closed_at"]
        event.save(update_fields=[*changed, "updated_at", *extra])
        audit_log_record(
            action="event.updated",
            tenant=event.tenant,
            event_id=event.pk,
            actor_user=acting_user,
            object_id=event.pk,
            data={"fields": changed},
        )
    return event


def event_archive(*, event: Event, acting_user: ActingUser) -> Event:
    """Archive: guests can no longer answer; the organizer keeps every record.

    A compare-and-set on the status alone, so it works for an event whose other
    fields predate today's validation rules, and archiving twice is harmless.
    """
    now = now_as_stored()
    archived = (
        Event.objects.filter(pk=event.pk)
        .exclude(status=Event.Status.ARCHIVED)
        .update(status=Event.Status.ARCHIVED, updated_at=now)
    )
    event.status, event.updated_at = Event.Status.ARCHIVED, now
    if archived:
        audit_log_record(
            action="event.archived",
            tenant=event.tenant,
            event_id=event.pk,
            actor_user=acting_user,
            object_id=event.pk,
        )
    return event


def event_rsvp_close_due(*, now: dt.datetime | None = None) -> int:
    """Mark every event whose RSVP deadline has passed as closed; the number closed by this call.

    A compare-and-set on `rsvp_closed_at IS NULL`: running twice, late or on two
    workers at once closes each event once, with one audit record.
    """
    now = now or django_timezone.now()
    closed = 0
    due = Event.objects.filter(rsvp_closed_at__isnull=True, rsvp_deadline__lte=now).exclude(
        status=Event.Status.ARCHIVED
    )
    for event in due.select_related("tenant"):
        if Event.objects.filter(pk=event.pk, rsvp_closed_at__isnull=True).update(rsvp_closed_at=now) != 1:
            continue
        closed += 1
        audit_log_record(
            action="event.rsvp_closed",
            tenant=event.tenant,
            event_id=event.pk,
            object_id=event.pk,
            # Never None: only events with a deadline are due.
            data={"deadline": event.rsvp_deadline.isoformat() if event.rsvp_deadline else None},
        )
    return closed


TICKET_TYPE_FIELDS = (
    "name",
    "description",
    "price",
    "currency",
    "capacity",
    "sales_start",
    "sales_end",
    "max_per_order",
    "access_code",
    "is_active",
    "position",
)


def ticket_type_create(
    *,
    event: Event,
    acting_user: ActingUser,
    name: str | NotGiven = NOT_GIVEN,
    description: str | NotGiven = NOT_GIVEN,
    price: int | NotGiven = NOT_GIVEN,
    currency: str | None | NotGiven = NOT_GIVEN,
    capacity: int | NotGiven = NOT_GIVEN,
    sales_start: dt.datetime | None | NotGiven = NOT_GIVEN,
    sales_end: dt.datetime | None | NotGiven = NOT_GIVEN,
    max_per_order: int | NotGiven = NOT_GIVEN,
    access_code: str | NotGiven = NOT_GIVEN,
    is_active: bool | NotGiven = NOT_GIVEN,
    position: int | NotGiven = NOT_GIVEN,
) -> TicketType:
    """A new ticket type of a ticketed event. `sold` and `reserved` start at 0 and belong to billing.

    A field not given keeps the model's default.
    """
    if not event.is_ticketed:
        raise ValidationError(_("Only ticketed events sell tickets."))
    fields = given(
        name=name,
        description=description,
        price=price,
        currency=currency,
        capacity=capacity,
        sales_start=sales_start,
        sales_end=sales_end,
        max_per_order=max_per_order,
        access_code=access_code,
        is_active=is_active,
        position=position,
    )
    ticket_type = TicketType(tenant_id=event.tenant_id, event=event, **fields)
    if "currency" in fields:
        ticket_type.currency = (fields["currency"] or "").lower()
    _check_one_currency(ticket_type)
    ticket_type.full_clean()
    ticket_type.save(force_insert=True)
    audit_log_record(
        action="ticket_type.created",
        tenant_id=event.tenant_id,
        event_id=event.pk,
        actor_user=acting_user,
        object_id=ticket_type.pk,
    )
    return ticket_type


def _check_one_currency(ticket_type: TicketType) -> None:
    """An event sells in one currency: one Checkout per order, and totals that add up."""
    other = (
        TicketType.objects.filter(tenant_id=ticket_type.tenant_id, event_id=ticket_type.event_id)
        .exclude(pk=ticket_type.pk)
        .exclude(currency=ticket_type.currency)
        .values_list("currency", flat=True)
        .first()
    )
    if other:
        message = _("This event sells in %(currency)s; all its ticket types use it.") % {"currency": other.upper()}
        raise ValidationError({"currency": message})


def ticket_type_update(
    *,
    ticket_type: TicketType,
    acting_user: ActingUser,
    name: str | NotGiven = NOT_GIVEN,
    description: str | NotGiven = NOT_GIVEN,
    price: int | NotGiven = NOT_GIVEN,
    currency: str | None | NotGiven = NOT_GIVEN,
    capacity: int | NotGiven = NOT_GIVEN,
    sales_start: dt.datetime | None | NotGiven = NOT_GIVEN,
    sales_end: dt.datetime | None | NotGiven = NOT_GIVEN,
    max_per_order: int | NotGiven = NOT_GIVEN,
    access_code: str | NotGiven = NOT_GIVEN,
    is_active: bool | NotGiven = NOT_GIVEN,
    position: int | NotGiven = NOT_GIVEN,
) -> TicketType:
    """Change the given fields of a ticket type; the ones not given stay as they are.

    Capacity is checked against what is sold and held at this moment, and saved with a
    conditional update so a sale in between can never leave it below `sold + reserved`.
    """
    fields = given(
        name=name,
        description=description,
        price=price,
        currency=currency,
        capacity=capacity,
        sales_start=sales_start,
        sales_end=sales_end,
        max_per_order=max_per_order,
        access_code=access_code,
        is_active=is_active,
        position=position,
    )
    if "currency" in fields:
        fields["currency"] = (fields["currency"] or "").lower()
    changed = [k for k in TICKET_TYPE_FIELDS if k in fields and getattr(ticket_type, k) != fields[k]]
    if not changed:
        return ticket_type
    fresh = TicketType.objects.get(pk=ticket_type.pk)
    for name in changed:
        setattr(fresh, name, fields[name])
    if "currency" in changed and fresh.sold + fresh.reserved:
        raise ValidationError({"currency": _("The currency cannot change once tickets are sold or reserved.")})
    if "currency" in changed:
        _check_one_currency(fresh)
    fresh.full_clean()
    updated = TicketType.objects.filter(
        pk=fresh.pk,
        event_id=fresh.event_id,  # names the event whose guest view version the write changes (no read for it)
        sold__lte=(fresh.capacity if "capacity" in changed else F("capacity")) - F("reserved"),
    ).update(**{name: getattr(fresh, name) for name in changed})
    if not updated:
        raise ValidationError({"capacity": _("More tickets were sold meanwhile; the capacity cannot be that low.")})
    audit_log_record(
        action="ticket_type.updated",
        tenant_id=fresh.tenant_id,
        event_id=fresh.event_id,
        actor_user=acting_user,
        object_id=fresh.pk,
        data={"fields": changed},
    )
    fresh.refresh_from_db()
    if {"capacity", "is_active", "sales_start", "sales_end"} & set(changed):
        hooks.seats_freed(ticket_type_ids=[fresh.pk])
    return fresh


# The refusal of a delete, also shown by the admin when seats were taken after its confirmation page loaded.
TICKET_TYPE_IN_USE = gettext_lazy("Tickets of this type were sold or are held; take it off sale instead.")


def ticket_type_is_in_use(*, ticket_type: TicketType) -> bool:
    """Seats of the type sold or held (as read), or tickets of it stored (voided ones too): it can be taken off
    sale, not deleted. ticket_type_delete decides again with a compare-and-set on the counters."""
    return bool(ticket_type.sold or ticket_type.reserved) or ticket_type.tickets.exists()


def ticket_type_delete(*, ticket_type: TicketType, acting_user: ActingUser) -> None:
    """Delete a type not in use (ticket_type_is_in_use); otherwise take it off sale instead (is_active=False).

    Closed to new seats first, in one compare-and-set on "nobody bought or holds any" (capacity 0, off
    sale), then deleted: a checkout between a check and the delete would hold seats of a type gone.
    """
    closed = not ticket_type_is_in_use(ticket_type=ticket_type) and TicketType.objects.filter(
        pk=ticket_type.pk, event_id=ticket_type.event_id, sold=0, reserved=0
    ).update(capacity=0, is_active=False)
    if closed:
        pk = ticket_type.pk  # delete() sets the instance's pk to None
        ticket_type.delete()
        audit_log_record(
            action="ticket_type.deleted",
            tenant_id=ticket_type.tenant_id,
            event_id=ticket_type.event_id,
            actor_user=acting_user,
            object_id=pk,
        )
        return
    raise ValidationError(TICKET_TYPE_IN_USE)


# --- Seats ---------------------------------------------------------------------------------------
# Each function is one conditional UPDATE of one ticket type row; it returns
# whether it applied. Events owns these counters; billing's orders call these functions and guard
# the release/sell calls by the order's own status change, so each happens at most once per order.


def seats_reserve(*, ticket_type_id: uuid.UUID, quantity: int) -> bool:
    return bool(
        TicketType.objects.filter(pk=ticket_type_id, sold__lte=F("capacity") - F("reserved") - quantity).update(
            reserved=F("reserved") + quantity
        )
    )


def seats_release(*, ticket_type_id: uuid.UUID, quantity: int) -> bool:
    return bool(
        TicketType.objects.filter(pk=ticket_type_id, reserved__gte=quantity).update(reserved=F("reserved") - quantity)
    )


def seats_sell_reserved(*, ticket_type_id: uuid.UUID, quantity: int) -> bool:
    return bool(
        TicketType.objects.filter(pk=ticket_type_id, reserved__gte=quantity).update(
            reserved=F("reserved") - quantity, sold=F("sold") + quantity
        )
    )


def seats_sell_unreserved(*, ticket_type_id: uuid.UUID, quantity: int) -> bool:
    """Sell seats nobody holds (a payment after its order expired), if they are still free."""
    return bool(
        TicketType.objects.filter(pk=ticket_type_id, sold__lte=F("capacity") - F("reserved") - quantity).update(
            sold=F("sold") + quantity
        )
    )


def seats_unsell(*, ticket_type_id: uuid.UUID, quantity: int) -> bool:
    return bool(TicketType.objects.filter(pk=ticket_type_id, sold__gte=quantity).update(sold=F("sold") - quantity))


def ticket_type_waitlist_start(*, ticket_type: TicketType) -> None:
    """Mark the type as having a waitlist, before its first entry is stored (see TicketType.waitlist_started_at).

    Once: a compare-and-set on the unset mark; the instance gets the stored value either way."""
    if ticket_type.waitlist_started_at is not None:
        return
    now = now_as_stored()
    # Changes the event's guest view version before the entry is stored: checkout's kept types see the mark.
    if TicketType.objects.filter(
        pk=ticket_type.pk, event_id=ticket_type.event_id, waitlist_started_at__isnull=True
    ).update(waitlist_started_at=now):
        ticket_type.waitlist_started_at = now
    else:
        ticket_type.refresh_from_db(fields=["waitlist_started_at"])


# --- dates from before the 1900-2200 rule ------------------------------------------------------

# Where a required date outside the range goes: a day inside each end, so it exists in every time
# zone and passes the form again when the organizer saves the event unchanged.
_CLAMPED_EARLY = EARLIEST + dt.timedelta(days=1)
_CLAMPED_LATE = LATEST - dt.timedelta(days=1)

DATE_FIELDS: dict[type[Event | TicketType], tuple[str, ...]] = {
    Event: ("starts_at", "ends_at", "rsvp_deadline"),
    TicketType: ("sales_start", "sales_end"),
}


@dataclass
class DateRepair:
    model: str
    pk: uuid.UUID
    tenant_id: uuid.UUID
    event_id: uuid.UUID
    changes: dict[str, tuple[str, str | None]]  # field -> (old ISO text, new ISO text or None)


def _out_of_range(fields: tuple[str, ...]) -> Q:
    condition = Q()
    for name in fields:
        condition |= Q(**{f"{name}__lt": EARLIEST}) | Q(**{f"{name}__gt": LATEST})
    return condition


def _repaired_value(model: type[Event | TicketType], name: str, value: dt.datetime) -> dt.datetime | None:
    if EARLIEST <= value <= LATEST:
        return value
    if model._meta.get_field(name).null:
        return None
    return _CLAMPED_EARLY if value < EARLIEST else _CLAMPED_LATE


def dates_repair(*, dry_run: bool = False) -> list[DateRepair]:
    """Bring every stored event and ticket-type date back into 1900-2200; what was (or would be) changed.

    Optional dates outside the range are cleared; an event's start is moved to a
    day inside the nearest end. Each row is one update of that row, audited with
    the old values. Running it again finds nothing to do.
    """
    repairs = []
    for model, fields in DATE_FIELDS.items():
        for row in model.objects.filter(_out_of_range(fields)).order_by("pk"):
            new = {name: _repaired_value(model, name, getattr(row, name)) for name in fields if getattr(row, name)}
            changed = {name: value for name, value in new.items() if value != getattr(row, name)}
            repair = DateRepair(
                model=model._meta.label,
                pk=row.pk,
                tenant_id=row.tenant_id,
                event_id=row.pk if isinstance(row, Event) else row.event_id,
                changes={
                    name: (getattr(row, name).isoformat(), value.isoformat() if value else None)
                    for name, value in changed.items()
                },
            )
            repairs.append(repair)
            if dry_run:
                continue
            model.objects.filter(pk=row.pk).update(**changed)
            audit_log_record(
                action="dates.repaired",
                tenant_id=row.tenant_id,
                event_id=repair.event_id,
                object_id=row.pk,
                data={"model": repair.model, "changes": repair.changes},
            )
    return repairs

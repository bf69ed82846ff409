"""Write operations on guests: creation, editing, codes, groups, answers, activity records and stamps.

Only these functions write Guest rows, and two importers built on them: guests.imports (a CSV
or Excel guest list) and guests.party_import (a whole guest list from the party app). Each keeps
`search_key` in step with the names and the code it writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.db.models import (
    Case,
    CharField,
    F,
    Field,
    IntegerField,
    JSONField,
    Q,
    TextField,
    UUIDField,
    Value,
    When,
)
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from events.models import Event
from eventsaas.db import atomic, is_transient_transaction_error, run_in_transaction, unique_insert
from eventsaas.fields import MillisecondDateTimeField
from eventsaas.services import AuditEntry, audit_log_record, audit_log_record_many
from eventsaas.types import NOT_GIVEN, NotGiven, given
from guests.codes import generate_code, search_key
from guests.models import Guest, GuestActivity
from tenants.models import ActingUser

if TYPE_CHECKING:
    from guests.activity import ActivityEvent

EDITABLE_FIELDS = ("first_name", "last_name", "email", "phone", "expected_guests", "dietary")
CODE_ATTEMPTS = 10
BULK_CREATE_MAX_ROWS = 1000


def _refresh_search_key(guest: Guest) -> None:
    guest.search_key = search_key(first_name=guest.first_name, last_name=guest.last_name, code=guest.code)


def _save_with_fresh_code(guest: Guest, *, update_fields: list[str] | None = None) -> None:
    """Save with a new random code; the unique index on code decides collisions."""
    for _attempt in range(CODE_ATTEMPTS):
        guest.code = generate_code()
        _refresh_search_key(guest)
        try:
            with unique_insert():
                guest.save(update_fields=update_fields)
            return
        except IntegrityError:
            if Guest.objects.filter(code=guest.code).exclude(pk=guest.pk).exists():
                continue
            raise
    raise RuntimeError("Could not generate a unique guest code")


def guest_create(
    *,
    event: Event,
    acting_user: ActingUser,
    first_name: str | NotGiven = NOT_GIVEN,
    last_name: str | NotGiven = NOT_GIVEN,
    email: str | NotGiven = NOT_GIVEN,
    phone: str | NotGiven = NOT_GIVEN,
    expected_guests: int | NotGiven = NOT_GIVEN,
    dietary: str | NotGiven = NOT_GIVEN,
) -> Guest:
    """Add a guest to an event with a fresh personal code; a field not given keeps the model's default."""
    fields = given(
        first_name=first_name,
        last_name=last_name,
        email=email,
        phone=phone,
        expected_guests=expected_guests,
        dietary=dietary,
    )
    guest = Guest(tenant_id=event.tenant_id, event=event, **fields)
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


def _taken_codes(codes: Iterable[str]) -> set[str]:
    return set(Guest.objects.filter(code__in=list(codes)).values_list("code", flat=True))


def _give_fresh_codes(guests: list[Guest], *, taken: set[str]) -> None:
    """A random code for each guest, none in `taken` nor shared within the batch."""
    for guest in guests:
        code = generate_code()
        while code in taken:
            code = generate_code()
        taken.add(code)
        guest.code = code
        _refresh_search_key(guest)


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


def guests_insert_with_fresh_codes(*, guests: list[Guest]) -> None:
    """Insert guests an importer built and validated (guests.imports), each with a unique code.

    Without an audit entry: the import records one for the whole file.
    """
    if guests:
        _bulk_insert_with_fresh_codes(guests)


def guest_bulk_create(*, event: Event, rows: list[dict[str, Any]], acting_user: ActingUser) -> list[Guest]:
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


def guest_update(
    *,
    guest: Guest,
    acting_user: ActingUser,
    first_name: str | NotGiven = NOT_GIVEN,
    last_name: str | NotGiven = NOT_GIVEN,
    email: str | NotGiven = NOT_GIVEN,
    phone: str | NotGiven = NOT_GIVEN,
    expected_guests: int | NotGiven = NOT_GIVEN,
    dietary: str | NotGiven = NOT_GIVEN,
) -> Guest:
    """Change the given details of a guest (never the answer: that is guest_answers_apply's)."""
    fields = given(
        first_name=first_name,
        last_name=last_name,
        email=email,
        phone=phone,
        expected_guests=expected_guests,
        dietary=dietary,
    )
    changed = [name for name in EDITABLE_FIELDS if name in fields and getattr(guest, name) != fields[name]]
    for name in changed:
        setattr(guest, name, fields[name])
    if changed:
        guest.full_clean(exclude=["code"], validate_constraints=False)
        stored = list(changed)
        if {"first_name", "last_name"} & set(changed):
            _refresh_search_key(guest)
            stored.append("search_key")
        guest.save(update_fields=stored)
        audit_log_record(
            action="guest.updated",
            **_audit_keys(guest),
            actor_user=acting_user,
            data={"fields": changed},
        )
    return guest


def _audit_keys(guest: Guest) -> dict[str, Any]:
    return {"tenant": guest.tenant, "event_id": guest.event_id, "object_id": guest.pk}


def guest_delete(*, guest: Guest, acting_user: ActingUser) -> None:
    keys = _audit_keys(guest)
    name = guest.full_name
    guest.delete()
    audit_log_record(action="guest.deleted", **keys, actor_user=acting_user, data={"name": name})


def guest_code_regenerate(*, guest: Guest, acting_user: ActingUser) -> Guest:
    """Give the guest a new code; the old one stops working at once (sessions check the code)."""
    _save_with_fresh_code(guest, update_fields=["code", "search_key"])
    audit_log_record(action="guest.code_regenerated", **_audit_keys(guest), actor_user=acting_user)
    return guest


@dataclass(frozen=True)
class GroupConnected:
    group_id: uuid.UUID
    #: everyone in the resulting group: the selected guests and the households they brought along
    size: int


def guest_group_connect(*, event: Event, guest_ids: Collection[uuid.UUID], acting_user: ActingUser) -> GroupConnected:
    """Put the given guests of `event`, with their households, into one group, in one update.

    The group keeps the id of the first selected guest that already has one, so
    adding a person to an existing household does not split it; selecting
    members of two households merges both households, whole, rather than
    leaving part of one behind. Members' answers stay their own.
    """
    guests = list(Guest.objects.for_event(event).filter(pk__in=guest_ids).order_by("created_at"))
    if len(guests) < 2 or len(guests) != len(set(guest_ids)):
        raise ValueError("Choose at least two guests of this event")
    existing_groups = {g.group_id for g in guests if g.group_id}
    group_id = next((g.group_id for g in guests if g.group_id), None) or uuid.uuid4()
    joining = Q(pk__in=[g.pk for g in guests])
    if existing_groups:
        joining |= Q(group_id__in=existing_groups)
    Guest.objects.for_event(event).filter(joining).update(group_id=group_id)
    size = Guest.objects.for_event(event).filter(group_id=group_id).count()
    audit_log_record(
        action="guest.group_connected",
        tenant=event.tenant,
        event_id=event.pk,
        actor_user=acting_user,
        data={
            "group_id": str(group_id),
            "guests": [str(g.pk) for g in guests],
            "merged_groups": sorted(str(pk) for pk in existing_groups - {group_id}),
            "size": size,
        },
    )
    return GroupConnected(group_id=group_id, size=size)


def guest_group_leave(*, guest: Guest, acting_user: ActingUser) -> Guest:
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


def guest_admin_save(*, guest: Guest, changed_fields: list[str], acting_user: ActingUser, is_new: bool) -> Guest:
    """Save a guest edited in Django admin: the same validation, search key and audit as the organizer's pages.

    The answer fields are read-only in the admin; answers change through the RSVP services.
    """
    guest.tenant_id = guest.event.tenant_id  # never another organization's than its event's
    guest.full_clean(exclude=["code"], validate_constraints=False)
    if is_new:
        _save_with_fresh_code(guest)
    else:
        _refresh_search_key(guest)
        guest.save()
    audit_log_record(
        action="guest.created" if is_new else "guest.updated",
        **_audit_keys(guest),
        actor_user=acting_user,
        data={"fields": changed_fields, "via": "admin"},
    )
    return guest


# --- ticket holders -------------------------------------------------------------------------------

HOLDER_ATTEMPTS = 10


def _holder_names(full_name: str) -> tuple[str, str]:
    """A buyer's name as (first, last): "Ana María López" -> ("Ana María", "López"); one word is both.

    The last name is what the ticket holder types to log in, so it is never empty.
    """
    words = full_name.split()
    if not words:
        return "-", "-"
    if len(words) == 1:
        return words[0][:100], words[0][:100]
    return " ".join(words[:-1])[:100], words[-1][:100]


def guest_ticket_holder_get_or_create(
    *, tenant_id: uuid.UUID, event_id: uuid.UUID, holder_key: str, full_name: str, email: str
) -> Guest:
    """The event's guest for one ticket holder (billing's order), created once with a personal code.

    Exactly once under retries and concurrent deliveries: the unique (tenant, event,
    holder_key) constraint lets one insert win; a loser reads the winner's row. No
    transaction is needed. The guest starts pending with no people; the tickets make
    them coming (guest_tickets_follow).
    """
    if not holder_key:
        raise ValueError("A ticket holder needs a key.")
    existing = Guest.objects.filter(tenant_id=tenant_id, event_id=event_id, holder_key=holder_key).first()
    if existing is not None:
        return existing
    guest, _created = guest_ticket_holder_create(
        tenant_id=tenant_id, event_id=event_id, holder_key=holder_key, full_name=full_name, email=email
    )
    return guest


def guest_ticket_holder_create(
    *, tenant_id: uuid.UUID, event_id: uuid.UUID, holder_key: str, full_name: str, email: str, coming: int = 0
) -> tuple[Guest, bool]:
    """Insert the ticket holder's guest (no read first); (the winner's row, False) if it exists already.

    `coming`: the holder's valid tickets when the caller has just issued them (an order's first payment),
    so the guest is stored coming for them at once instead of pending and then answered by
    guest_tickets_follow: one insert instead of five statements. The caller links the tickets and
    counts them again (a void racing the insert), as guest_tickets_follow would.
    """
    if not holder_key:
        raise ValueError("A ticket holder needs a key.")
    if coming < 0:
        raise ValueError("A ticket holder comes for no fewer than 0 people.")
    first_name, last_name = _holder_names(full_name)
    now = timezone.now()
    # Invited by buying: the tickets email carries their code, so "invite everyone not yet invited" skips them.
    guest = Guest(
        tenant_id=tenant_id,
        event_id=event_id,
        first_name=first_name,
        last_name=last_name,
        holder_key=holder_key,
        invited_at=now,
    )
    guest.email = email if len(email) <= 254 else ""
    if coming:
        guest.status, guest.num_guests, guest.expected_guests = Guest.Status.COMING, coming, coming
        guest.answered_by_kind, guest.rsvp_at = Guest.AnsweredBy.TICKETS, now
    try:
        _save_with_fresh_code(guest)
    except IntegrityError:
        winner = Guest.objects.filter(tenant_id=tenant_id, event_id=event_id, holder_key=holder_key).first()
        if winner is None:
            raise
        return winner, False
    entries: list[AuditEntry] = [
        {
            "action": "guest.created",
            "tenant_id": tenant_id,
            "event_id": event_id,
            "object_id": guest.pk,
            "data": {"via": "tickets", "holder": holder_key},
        }
    ]
    if coming:  # the history guest_tickets_follow writes when it makes a pending holder coming
        entries.append(
            {
                "action": "rsvp.coming",
                "tenant_id": tenant_id,
                "event_id": event_id,
                "object_id": guest.pk,
                "data": _holder_answer_data(
                    Guest.Status.COMING, coming, previous=(Guest.Status.PENDING, 0), reason="issued"
                ),
            }
        )
    audit_log_record_many(entries=entries)
    return guest, True


def _holder_answer_data(status: str, count: int, *, previous: tuple[str, int], reason: str) -> dict[str, Any]:
    return {
        "answered_by": Guest.AnsweredBy.TICKETS,
        "status": status,
        "num_guests": count,
        "previous_status": previous[0],
        "previous_num_guests": previous[1],
        "via": "tickets",
        "reason": reason,
    }


def guest_tickets_follow(*, guest: Guest, valid_tickets: Callable[[], int], reason: str) -> Guest:
    """Make a ticket holder's answer match their valid tickets: coming for n >= 1 people, else declined.

    `valid_tickets()` counts them now (billing's selector). Each write is a
    compare-and-set on the answer as read; the count is taken again after every
    read, so when two voids of one holder race, whichever writes last re-reads and
    corrects a count the other made stale. Idempotent: nothing is written when the
    answer already matches. The organizer sees the reason (`reason`: "issued",
    "refunded", "voided") in the answer's history; `answered_by_kind` is "tickets".
    """
    for _attempt in range(HOLDER_ATTEMPTS):
        current = Guest.objects.filter(pk=guest.pk).first()
        if current is None:
            return guest
        count = valid_tickets()
        status = Guest.Status.COMING if count >= 1 else Guest.Status.DECLINED
        expected = max(count, 1) if count else current.expected_guests
        if current.status == status and current.num_guests == count and current.expected_guests == expected:
            return current
        now = timezone.now()
        # Scoped by event too: the write then names the event whose guest view version it changes (no lookup).
        row = Guest.objects.filter(pk=current.pk, tenant_id=current.tenant_id, event_id=current.event_id)
        if not row.filter(status=current.status, num_guests=current.num_guests).update(
            status=status,
            num_guests=count,
            expected_guests=expected,
            answered_by_kind=Guest.AnsweredBy.TICKETS,
            answered_by_guest_id=None,
            answered_by_user_id=None,
            rsvp_at=now,
        ):
            continue
        if current.status != status or current.num_guests != count:
            audit_log_record(
                action="rsvp.coming" if status == Guest.Status.COMING else "rsvp.declined",
                tenant_id=current.tenant_id,
                event_id=current.event_id,
                object_id=current.pk,
                data=_holder_answer_data(status, count, previous=(current.status, current.num_guests), reason=reason),
            )
    return Guest.objects.filter(pk=guest.pk).first() or guest


# --- answers -------------------------------------------------------------------------------------


class GuestAnswerConflict(Exception):
    """A member's answer or household changed between reading and writing; nothing of this answer is kept."""


@dataclass(frozen=True)
class AnswerWrite:
    """One member's new answer and details, computed from `guest` as it was read.

    `status`/`num_guests`/`answered_by` are None when the answer itself stays (only
    details change); `dietary`/`answers` are None when they stay.
    """

    guest: Guest
    status: str | None = None
    num_guests: int | None = None
    answered_by: str | None = None
    dietary: str | None = None
    answers: dict[str, Any] | None = None

    @property
    def changes_answer(self) -> bool:
        return self.answered_by is not None


@dataclass
class AnswersApplied:
    writes: list[AnswerWrite] = field(default_factory=list)


def _as_read(write: AnswerWrite) -> Q:
    """The row exactly as the rules saw it: the compare of the compare-and-set."""
    guest = write.guest
    return Q(
        pk=guest.pk,
        status=guest.status,
        num_guests=guest.num_guests,
        answered_by_kind=guest.answered_by_kind,
        group_id=guest.group_id,
    )


def _per_row(
    writes: list[AnswerWrite], value_of: Callable[[AnswerWrite], Any], output_field: Field[Any, Any], default_field: str
) -> Case:
    whens = [When(pk=w.guest.pk, then=Value(value_of(w), output_field=output_field)) for w in writes]
    return Case(*whens, default=F(default_field), output_field=output_field)


def _answer_writes_checked(writes: list[AnswerWrite]) -> list[AnswerWrite]:
    """The writes that change something; ValueError for an answer that breaks coming <=> num_guests >= 1."""
    writes = [w for w in writes if w.changes_answer or w.dietary is not None or w.answers is not None]
    for write in writes:
        if write.changes_answer and (write.status == Guest.Status.COMING) != ((write.num_guests or 0) >= 1):
            raise ValueError(f"Answer for {write.guest.pk} breaks coming <=> num_guests >= 1")
    return writes


def _answer_columns(
    writes: list[AnswerWrite],
    *,
    now: datetime,
    answering_guest_id: uuid.UUID | None,
    answering_user_id: uuid.UUID | None,
) -> dict[str, Case]:
    """The UPDATE's values: one CASE per field, naming only the members whose field changes (the rest keep theirs).

    An organizer's answer is stamped with the user; a guest's with the guest who answered.
    """
    answered = [w for w in writes if w.changes_answer]
    values: dict[str, Case] = {}
    if answered:
        values["status"] = _per_row(answered, lambda w: w.status, CharField(), "status")
        values["num_guests"] = _per_row(answered, lambda w: w.num_guests, IntegerField(), "num_guests")
        values["answered_by_kind"] = _per_row(answered, lambda w: w.answered_by, CharField(), "answered_by_kind")
        values["answered_by_guest_id"] = _per_row(
            answered,
            lambda w: answering_guest_id if w.answered_by != Guest.AnsweredBy.ORGANIZER else None,
            UUIDField(),
            "answered_by_guest_id",
        )
        values["answered_by_user_id"] = _per_row(
            answered,
            lambda w: answering_user_id if w.answered_by == Guest.AnsweredBy.ORGANIZER else None,
            UUIDField(),
            "answered_by_user_id",
        )
        values["rsvp_at"] = _per_row(answered, lambda w: now, MillisecondDateTimeField(), "rsvp_at")
    with_dietary = [w for w in writes if w.dietary is not None]
    if with_dietary:
        values["dietary"] = _per_row(with_dietary, lambda w: w.dietary, TextField(), "dietary")
    with_answers = [w for w in writes if w.answers is not None]
    if with_answers:
        values["answers"] = _per_row(with_answers, lambda w: w.answers, JSONField(), "answers")
    return values


def guest_answers_apply(
    *,
    event: Event,
    writes: list[AnswerWrite],
    now: datetime,
    answering_guest_id: uuid.UUID | None = None,
    acting_user: ActingUser = None,
    via: str = "",
) -> AnswersApplied:
    """Write the members' answers decided by rsvp.services: one conditional update for all of them.

    Every row is written only if it is still exactly as the rules read it (status,
    count, who answered, household), so two people answering for one household at
    once cannot overwrite a decline neither of them saw: the second gets
    GuestAnswerConflict. The update is one statement (a CASE per field), so its
    size never depends on the household's; on SQL databases a conflict rolls back
    the whole answer, and on MongoDB the rows that did match are each a complete,
    valid answer of their own. One audit entry per member, in one insert.
    """
    writes = _answer_writes_checked(writes)
    if not writes:
        return AnswersApplied()
    values = _answer_columns(
        writes,
        now=now,
        answering_guest_id=answering_guest_id,
        answering_user_id=acting_user.pk if acting_user is not None else None,
    )
    as_read = Q()
    for write in writes:
        as_read |= _as_read(write)
    try:
        with atomic():
            updated = Guest.objects.for_event(event).filter(as_read).update(**values)
            if updated != len(writes):
                raise GuestAnswerConflict()
            audit_log_record_many(
                entries=[_answer_audit_entry(w, event, answering_guest_id, acting_user, via) for w in writes]
            )
    except Exception as exc:
        # On MongoDB a concurrent answer to the same household can abort this transaction with a
        # WriteConflict instead of making it wait: the same lost race as a compare-and-set that matched
        # fewer rows, and nothing of it was kept.
        if is_transient_transaction_error(exc):
            raise GuestAnswerConflict() from exc
        raise
    return AnswersApplied(writes=writes)


def _answer_audit_entry(
    write: AnswerWrite, event: Event, answering_guest_id: uuid.UUID | None, acting_user: ActingUser, via: str
) -> AuditEntry:
    guest = write.guest
    data: dict[str, Any] = {"answered_by": write.answered_by or ""}
    if write.changes_answer:
        data.update(
            status=write.status,
            num_guests=write.num_guests,
            previous_status=guest.status,
            previous_num_guests=guest.num_guests,
        )
    if write.dietary is not None and write.dietary != guest.dietary:
        data["dietary"] = write.dietary
    if write.answers is not None and write.answers != guest.answers:
        data["answers"] = write.answers
    if via:
        data["via"] = via
    actions: dict[str | None, str] = {Guest.Status.COMING: "rsvp.coming", Guest.Status.DECLINED: "rsvp.declined"}
    action = actions.get(write.status, "rsvp.details")
    return {
        "action": action,
        "tenant_id": event.tenant_id,
        "event_id": event.pk,
        "object_id": guest.pk,
        "actor_guest_id": answering_guest_id if acting_user is None else None,
        "actor_user": acting_user,
        "data": data,
    }


@dataclass
class ActivityBatchResult:
    rows_inserted: int = 0
    guests_updated: int = 0
    dropped: int = 0


def _later_of(field: str, when: datetime) -> Greatest:
    """The stored time or `when`, whichever is later: a stamp never moves backwards.

    Coalesce because SQLite's MAX() (and MongoDB's $max on a missing field) would
    otherwise give NULL for a guest who has no stamp yet.
    """
    value = Value(when, output_field=MillisecondDateTimeField())  # stored to the millisecond, like the field
    return Greatest(Coalesce(F(field), value), value)


def _guests_tenant_and_event(events: list[ActivityEvent]) -> dict[uuid.UUID, tuple[uuid.UUID, uuid.UUID]]:
    """guest pk -> (tenant_id, event_id) of the guests the events name that still exist."""
    guest_ids = {e.guest_id for e in events}
    rows = Guest.objects.filter(pk__in=guest_ids).values_list("pk", "tenant_id", "event_id")
    return {pk: (tenant_id, event_id) for pk, tenant_id, event_id in rows}


def _latest_stamps(
    events: list[ActivityEvent],
) -> tuple[dict[uuid.UUID, datetime], dict[uuid.UUID, datetime]]:
    """Per guest, the newest access and the newest login of the batch."""
    latest_access: dict[uuid.UUID, datetime] = {}
    latest_login: dict[uuid.UUID, datetime] = {}
    for event in events:
        if event.is_guest_access:
            latest_access[event.guest_id] = max(event.at, latest_access.get(event.guest_id, event.at))
        if event.is_login:
            latest_login[event.guest_id] = max(event.at, latest_login.get(event.guest_id, event.at))
    return latest_access, latest_login


def _activity_rows_not_stored(events: list[ActivityEvent]) -> list[GuestActivity]:
    """One row per event, leaving out the events already stored (a message delivered again)."""
    already_stored = set(GuestActivity.objects.filter(pk__in=[e.id for e in events]).values_list("pk", flat=True))
    return [
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
        for e in events
        if e.id not in already_stored
    ]


def guest_activity_record_batch(*, events: Iterable[ActivityEvent]) -> ActivityBatchResult:
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
    guests = _guests_tenant_and_event(unique)
    valid = [e for e in unique if guests.get(e.guest_id) == (e.tenant_id, e.event_id)]
    result = ActivityBatchResult(dropped=len(unique) - len(valid))
    if not valid:
        return result
    latest_access, latest_login = _latest_stamps(valid)
    rows = _activity_rows_not_stored(valid)

    def write(*, attempt: int) -> int:
        pending = rows
        if attempt > 1 and rows:
            # Run again after a conflict with another flush, which may have stored some of them.
            taken = set(GuestActivity.objects.filter(pk__in=[r.pk for r in rows]).values_list("pk", flat=True))
            pending = [r for r in rows if r.pk not in taken]
        if pending:
            GuestActivity.objects.bulk_create(pending)
        # In primary-key order: two flushes at once (a backlog, two workers) then lock the guests they share
        # in the same order and one waits for the other; in arrival order PostgreSQL found deadlocks.
        for guest_id, accessed_at in sorted(latest_access.items()):
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


def activity_cleanup(*, now: datetime | None = None) -> int:
    """Delete activity records older than ACTIVITY_RETENTION_DAYS; the number deleted (running twice is harmless)."""
    cutoff = (now or timezone.now()) - timedelta(days=settings.ACTIVITY_RETENTION_DAYS)
    deleted, _per_model = GuestActivity.objects.filter(at__lt=cutoff).delete()
    return deleted

"""Reads of guests: lists, the dashboard aggregate, reports. Every one is scoped by tenant and event."""

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, cast

from django.db.models import Aggregate, Count, F, Q, QuerySet, Sum
from django.shortcuts import get_object_or_404

from events.models import Event
from eventsaas.models import AuditLog
from guests.codes import name_key
from guests.models import Guest, GuestActivity, GuestImport, GuestMessage
from tenants.models import Tenant, User

COMING = Q(status=Guest.Status.COMING)
HAS_DIETARY = ~Q(dietary="")


# Built once: Django resolves copies of them for each query, and an expression keeps what it worked out
# about itself (its identity, for hashing), which was most of the aggregate's Python time when rebuilt per call.
# COUNT(*) where Django allows it (no filter), else COUNT(status): a column the filters read anyway, where
# COUNT(id) made PostgreSQL read every row's uuid for nothing (about 5 % of the scan, bench/dashboard.py).
# A filter only where a number needs one, since Django resolves each filter like a query of its own: who logged
# in and the invitations sent are their column's non-null values, and the sums are not wrapped in COALESCE
# (_headline_numbers); together a fifth of the aggregate's Python time (bench/dashboard.py).
_HEADLINE_AGGREGATES: dict[str, Aggregate] = {
    "invited": Count("*"),
    "coming": Count("status", filter=COMING),
    "declined": Count("status", filter=Q(status=Guest.Status.DECLINED)),
    "pending": Count("status", filter=Q(status=Guest.Status.PENDING)),
    "logged_in": Count("last_login_at"),
    "invitations_sent": Count("invited_at"),
    "head_count": Sum("num_guests", filter=COMING),
    "expected_head_count": Sum("expected_guests"),
    "dietary_needs": Count("status", filter=COMING & HAS_DIETARY),
}


def _headline_aggregates() -> dict[str, Aggregate]:
    return dict(_HEADLINE_AGGREGATES)


def _headline_numbers(row: dict[str, Any]) -> dict[str, int]:
    """The dashboard's numbers from a row of _HEADLINE_AGGREGATES."""
    return {
        "invited": row["invited"],
        "coming": row["coming"],
        "declined": row["declined"],
        "pending": row["pending"],
        "never_logged_in": row["invited"] - row["logged_in"],
        "invitations_sent": row["invitations_sent"],
        "head_count": row["head_count"] or 0,  # a sum over no guests is None
        "expected_head_count": row["expected_head_count"] or 0,
        "dietary_needs": row["dietary_needs"],
    }


def event_stats(*, event: Event) -> dict[str, int]:
    """All dashboard headline numbers in one aggregate query."""
    return _headline_numbers(Guest.objects.for_event(event).aggregate(**_headline_aggregates()))


def event_headline_numbers_by_event(
    *, tenant: Tenant, event_ids: Iterable[uuid.UUID]
) -> dict[uuid.UUID, dict[str, int]]:
    """Headline numbers for many events of a tenant in one grouped query."""
    if not event_ids:
        return {}
    # The values of the aggregates, which the stubs' row type (event_id alone) leaves out.
    rows = cast(
        Iterable[dict[str, Any]],
        Guest.objects.for_tenant(tenant)
        .filter(event_id__in=event_ids)
        .values("event_id")
        .annotate(**_headline_aggregates())
        .order_by(),
    )
    return {row["event_id"]: _headline_numbers(row) for row in rows}


def guest_get(*, event: Event, guest_id: uuid.UUID) -> Guest:
    return get_object_or_404(Guest.objects.for_event(event), pk=guest_id)


@dataclass(frozen=True)
class GuestFilters:
    status: str = ""
    never_logged_in: bool = False
    search: str = ""


def guest_list(*, event: Event, filters: GuestFilters = GuestFilters()) -> QuerySet[Guest]:
    """Guest list for the organizer; a queryset, so pagination slices it in the database."""
    guests = Guest.objects.for_event(event)
    if filters.status:
        guests = guests.filter(status=filters.status)
    if filters.never_logged_in:
        guests = guests.filter(last_login_at__isnull=True)
    for term in filters.search.split():
        if name_key(term):  # a word of punctuation alone searches for nothing
            guests = guests.filter(search_matches(term))
    return guests.order_by("last_name", "first_name", "pk")


#: Guests read per round trip by an export: its rows stream without the whole list in memory.
EXPORT_CHUNK_SIZE = 2000


def guest_export_list(*, event: Event, filters: GuestFilters = GuestFilters()) -> Iterator[Guest]:
    """The guest list as the page shows it (same filters, same order), read in chunks for an export.

    One query whatever the number of guests (a server-side cursor where the database has one).
    """
    return guest_list(event=event, filters=filters).iterator(chunk_size=EXPORT_CHUNK_SIZE)


def household_names(*, event: Event) -> dict[uuid.UUID | None, str]:
    """Each household of the event as its members' names ("Anna Müller, Lisa Müller"), in one query.

    The same text on every member's row, so a spreadsheet can sort and filter by household and an
    import can group the rows back into households.
    """
    members: dict[uuid.UUID | None, list[str]] = {}
    rows = (
        Guest.objects.for_event(event)
        .filter(group_id__isnull=False)
        .order_by("group_id", "first_name", "last_name", "pk")
        .values_list("group_id", "first_name", "last_name")
    )
    for group_id, first_name, last_name in rows:
        members.setdefault(group_id, []).append(f"{first_name} {last_name}".strip())
    return {group_id: ", ".join(names) for group_id, names in members.items()}


def search_matches(term: str) -> Q:
    """One search word: in a name or the code whatever the case, accents and punctuation, or in the email.

    The stored key (guests.codes.search_key) makes this the same `icontains` on
    SQLite, PostgreSQL and MongoDB: none needs `unaccent` or a collation.
    """
    return Q(email__icontains=term) | Q(search_key__icontains=name_key(term))


def group_members(*, guest: Guest) -> list[Guest]:
    """The other members of the guest's household (empty when the guest has no group)."""
    if guest.group_id is None:
        return []
    return list(Guest.objects.in_group(guest).exclude(pk=guest.pk).order_by("first_name", "pk"))


def groups_of(*, event: Event, group_ids: Iterable[uuid.UUID | None]) -> dict[uuid.UUID | None, list[Guest]]:
    """Members of several groups at once (for a page of the guest list), keyed by group id."""
    groups: dict[uuid.UUID | None, list[Guest]] = {}
    if not group_ids:
        return groups
    for member in Guest.objects.for_event(event).filter(group_id__in=set(group_ids)).order_by("first_name", "pk"):
        groups.setdefault(member.group_id, []).append(member)
    return groups


def dietary_report(*, event: Event) -> list[dict[str, Any]]:
    """Coming guests' dietary needs grouped by the text they gave (case-insensitive), in one query.

    Needs are per person: each member of a household gives their own, so an
    entry counts the persons who wrote it (`persons`). `with_others` adds the
    people those members bring without a code of their own (small children),
    whose needs the member may have written down too.
    """
    rows = (
        Guest.objects.for_event(event)
        .filter(COMING & HAS_DIETARY)
        .order_by("dietary", "last_name")
        .values("pk", "first_name", "last_name", "dietary", "num_guests", "group_id")
    )
    report: dict[str, dict[str, Any]] = {}
    for row in rows:
        key = " ".join(row["dietary"].casefold().split())
        entry = report.setdefault(
            key, {"dietary": row["dietary"].strip(), "guests": [], "persons": 0, "with_others": 0}
        )
        entry["guests"].append(row)
        entry["persons"] += 1
        entry["with_others"] += row["num_guests"] - 1
    return sorted(report.values(), key=lambda e: (-e["persons"], e["dietary"].casefold()))


def question_report(*, event: Event) -> list[dict[str, Any]]:
    """Per custom question, how many coming persons gave each answer (a caterer's "3 vegetarian, 1 vegan").

    One query for any number of guests and questions. Choices are counted in the
    event's order (with 0 for a choice nobody took); free-text answers are
    grouped like the dietary report, case and spaces aside. An answer to a
    question that no longer exists is left out.
    """
    rows = Guest.objects.for_event(event).filter(COMING).values_list("answers", flat=True)
    questions = list(event.questions or [])
    tallies: dict[str, dict[str, dict[str, Any]]] = {q["key"]: {} for q in questions}
    answered = dict.fromkeys(tallies, 0)
    coming = 0
    for answers in rows:
        coming += 1
        for key, value in (answers or {}).items():
            if key not in tallies or not isinstance(value, str) or not value.strip():
                continue
            answered[key] += 1
            group = " ".join(value.casefold().split())
            entry = tallies[key].setdefault(group, {"answer": value.strip(), "count": 0})
            entry["count"] += 1
    report = []
    for question in questions:
        key = question["key"]
        if question.get("choices"):
            counts = [
                {"answer": choice, "count": tallies[key].get(" ".join(choice.casefold().split()), {}).get("count", 0)}
                for choice in question["choices"]
            ]
        else:
            counts = sorted(tallies[key].values(), key=lambda e: (-e["count"], e["answer"].casefold()))
        report.append(
            {
                "key": key,
                "label": question["label"],
                "has_choices": bool(question.get("choices")),
                "answers": counts,
                "answered": answered[key],
                "unanswered": coming - answered[key],
            }
        )
    return report


ACTIVITY_SORTS: dict[str, list[Any]] = {
    "last_login": [F("last_login_at").desc(nulls_last=True), "last_name"],
    "last_access": [F("last_access_at").desc(nulls_last=True), "last_name"],
    "name": ["last_name", "first_name"],
    "never": [F("last_login_at").asc(nulls_first=True), "last_name"],
}


def guest_activity(*, event: Event, sort: str = "last_access", never_opened_only: bool = False) -> QuerySet[Guest]:
    guests = Guest.objects.for_event(event).only(
        "pk", "first_name", "last_name", "status", "last_login_at", "last_access_at", "invited_at", "rsvp_at"
    )
    if never_opened_only:
        guests = guests.filter(last_login_at__isnull=True)
    return guests.order_by(*ACTIVITY_SORTS.get(sort, ACTIVITY_SORTS["last_access"]), "pk")


ACTIVITY_TIMELINE_LENGTH = 30


def guest_activity_timeline(*, guest: Guest, limit: int = ACTIVITY_TIMELINE_LENGTH) -> list[GuestActivity]:
    """The guest's most recent activity, newest first (index activity_guest_at)."""
    activity = GuestActivity.objects.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk)
    entries = list(activity.order_by("-at", "pk")[:limit])
    _attach_actors(entries)
    return entries


def event_recent_activity(*, event: Event, limit: int = ACTIVITY_TIMELINE_LENGTH) -> list[GuestActivity]:
    """The event's most recent activity with each guest's name, newest first (index activity_event_at)."""
    entries = list(
        GuestActivity.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .select_related("guest")
        .only("pk", "kind", "at", "actor_user_id", "guest", "guest__first_name", "guest__last_name")
        .order_by("-at", "pk")[:limit]
    )
    _attach_actors(entries)
    return entries


def _attach_actors(entries: list[GuestActivity]) -> None:
    """Set `.actor` (the organizer's account, or None) on organizer views, in one query for all of them."""
    ids = {e.actor_user_id for e in entries if e.actor_user_id}
    users: dict[uuid.UUID | None, User] = (
        {u.pk: u for u in User.objects.filter(pk__in=ids).only("pk", "email")} if ids else {}
    )
    for entry in entries:
        entry.actor = users.get(entry.actor_user_id)  # type: ignore[attr-defined]  # for the page only


def event_messages(*, event: Event) -> QuerySet[GuestMessage]:
    """The event's message log, newest first (index message_event_created)."""
    return (
        GuestMessage.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .select_related("guest")
        .order_by("-created_at", "pk")
    )


def guest_messages(*, guest: Guest, limit: int = 30) -> list[GuestMessage]:
    """The messages sent to one guest, newest first."""
    messages = GuestMessage.objects.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk)
    return list(messages.order_by("-created_at", "pk")[:limit])


def guests_of_event(*, event: Event, guest_ids: Iterable[uuid.UUID]) -> list[Guest]:
    """These guests of the event; ids of other events or tenants are left out (the caller compares counts)."""
    return list(Guest.objects.for_event(event).filter(pk__in=list(guest_ids)))


ANSWER_ACTIONS = (
    "rsvp.coming",
    "rsvp.declined",
    "rsvp.details",
    "rsvp.change_requested",
    "rsvp.change_approved",
    "rsvp.change_declined",
)


def guest_answer_history(*, guest: Guest, limit: int = ACTIVITY_TIMELINE_LENGTH) -> list[AuditLog]:
    """The guest's answers, newest first, with who gave each (`.actor_name`): themselves, a member, an organizer.

    Read from the audit log (index audit_event_object_created), in three queries
    whatever the length: entries, the members named, the organizers named.
    """
    entries = list(
        AuditLog.objects.filter(
            tenant_id=guest.tenant_id, event_id=guest.event_id, object_id=guest.pk, action__in=ANSWER_ACTIONS
        ).order_by("-created_at", "pk")[:limit]
    )
    guest_ids = {e.actor_guest_id for e in entries if e.actor_guest_id}
    names: dict[uuid.UUID | None, str] = {
        pk: f"{first} {last}".strip()
        for pk, first, last in Guest.objects.filter(
            tenant_id=guest.tenant_id, event_id=guest.event_id, pk__in=guest_ids
        ).values_list("pk", "first_name", "last_name")
    }
    user_ids = {e.actor_user_id for e in entries if e.actor_user_id}
    users: dict[uuid.UUID | None, str] = (
        dict(User.objects.filter(pk__in=user_ids).values_list("pk", "email")) if user_ids else {}
    )
    # Attributes for the page only, not fields:
    for entry in entries:
        entry.actor_name = users.get(entry.actor_user_id) or names.get(entry.actor_guest_id) or ""  # type: ignore[attr-defined]
        entry.by_organizer = entry.actor_user_id is not None or entry.data.get("answered_by") == "organizer"  # type: ignore[attr-defined]
        entry.by_self = entry.actor_guest_id == guest.pk  # type: ignore[attr-defined]
    return entries


def answered_by_name(*, guest: Guest) -> str:
    """Who gave the guest's current answer, for display: an organizer's email or a member's name ("" if unknown)."""
    if guest.answered_by_kind == Guest.AnsweredBy.ORGANIZER and guest.answered_by_user_id:
        return User.objects.filter(pk=guest.answered_by_user_id).values_list("email", flat=True).first() or ""
    if guest.answered_by_kind == Guest.AnsweredBy.HOUSEHOLD and guest.answered_by_guest_id:
        member = (
            Guest.objects.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, pk=guest.answered_by_guest_id)
            .only("first_name", "last_name")
            .first()
        )
        return member.full_name if member else ""
    return ""


def guest_import_get(*, event: Event, import_id: uuid.UUID, with_rows: bool = True) -> GuestImport:
    """An import job of this event; another event's or organization's is a 404, like a missing one.

    Without its rows for the progress bar, which asks every second while a large file runs.
    """
    jobs = GuestImport.objects.for_tenant(event.tenant).filter(event_id=event.pk)
    if not with_rows:
        jobs = jobs.defer("rows", "columns")
    return get_object_or_404(jobs, pk=import_id)


def guest_imports_recent(*, event: Event, limit: int = 5) -> list[GuestImport]:
    """The event's latest imports, without their rows (the list shows counts only)."""
    jobs = GuestImport.objects.for_tenant(event.tenant).filter(event_id=event.pk).defer("rows", "columns")
    return list(jobs.order_by("-created_at")[:limit])


@dataclass(frozen=True)
class ImportPreview:
    refused: list[dict[str, Any]]
    accepted: list[dict[str, Any]]
    more_refused: int
    more_accepted: int


def guest_import_preview(*, job: GuestImport, limit: int = 200) -> ImportPreview:
    """The rows the preview lists: the refused ones first (with their reasons), then the others, each capped."""
    refused = [row for row in job.rows if row.get("action") == "refused"]
    accepted = [row for row in job.rows if row.get("action") in ("new", "update", "unchanged")]
    return ImportPreview(
        refused=refused[:limit],
        accepted=accepted[:limit],
        more_refused=max(0, len(refused) - limit),
        more_accepted=max(0, len(accepted) - limit),
    )

"""Reads of guests: lists, the dashboard aggregate, reports. Every one is scoped by tenant and event."""

from dataclasses import dataclass

from django.db.models import Count, F, Q, Sum
from django.db.models.functions import Coalesce
from django.shortcuts import get_object_or_404

from guests.models import Guest, GuestActivity, GuestMessage

COMING = Q(status=Guest.Status.COMING)
HAS_DIETARY = ~Q(dietary="")


def _headline_aggregates() -> dict:
    return {
        "invited": Count("pk"),
        "coming": Count("pk", filter=COMING),
        "declined": Count("pk", filter=Q(status=Guest.Status.DECLINED)),
        "pending": Count("pk", filter=Q(status=Guest.Status.PENDING)),
        "never_logged_in": Count("pk", filter=Q(last_login_at__isnull=True)),
        "invitations_sent": Count("pk", filter=Q(invited_at__isnull=False)),
        "head_count": Coalesce(Sum("num_guests", filter=COMING), 0),
        "expected_head_count": Coalesce(Sum("expected_guests"), 0),
        "dietary_needs": Count("pk", filter=COMING & HAS_DIETARY),
    }


def event_stats(*, event) -> dict:
    """All dashboard headline numbers in one aggregate query."""
    return Guest.objects.for_event(event).aggregate(**_headline_aggregates())


def event_headline_numbers_by_event(*, tenant, event_ids) -> dict:
    """Headline numbers for many events of a tenant in one grouped query."""
    if not event_ids:
        return {}
    rows = (
        Guest.objects.for_tenant(tenant)
        .filter(event_id__in=event_ids)
        .values("event_id")
        .annotate(**_headline_aggregates())
        .order_by()
    )
    return {row.pop("event_id"): row for row in rows}


def guest_get(*, event, guest_id) -> Guest:
    return get_object_or_404(Guest.objects.for_event(event), pk=guest_id)


@dataclass(frozen=True)
class GuestFilters:
    status: str = ""
    never_logged_in: bool = False
    search: str = ""


def guest_list(*, event, filters: GuestFilters = GuestFilters()):
    """Guest list for the organizer; a queryset, so pagination slices it in the database."""
    guests = Guest.objects.for_event(event)
    if filters.status:
        guests = guests.filter(status=filters.status)
    if filters.never_logged_in:
        guests = guests.filter(last_login_at__isnull=True)
    for term in filters.search.split():
        guests = guests.filter(Q(first_name__icontains=term) | Q(last_name__icontains=term) | Q(email__icontains=term))
    return guests.order_by("last_name", "first_name", "pk")


def group_members(*, guest) -> list[Guest]:
    """The other members of the guest's household (empty when the guest has no group)."""
    if guest.group_id is None:
        return []
    return list(Guest.objects.in_group(guest).exclude(pk=guest.pk).order_by("first_name", "pk"))


def groups_of(*, event, group_ids) -> dict:
    """Members of several groups at once (for a page of the guest list), keyed by group id."""
    groups: dict = {}
    if not group_ids:
        return groups
    for member in Guest.objects.for_event(event).filter(group_id__in=set(group_ids)).order_by("first_name", "pk"):
        groups.setdefault(member.group_id, []).append(member)
    return groups


def dietary_report(*, event) -> list[dict]:
    """Coming guests' dietary needs grouped by the text they gave (case-insensitive), with names and heads."""
    rows = (
        Guest.objects.for_event(event)
        .filter(COMING & HAS_DIETARY)
        .order_by("dietary", "last_name")
        .values("pk", "first_name", "last_name", "dietary", "num_guests", "group_id")
    )
    report: dict[str, dict] = {}
    for row in rows:
        key = " ".join(row["dietary"].casefold().split())
        entry = report.setdefault(key, {"dietary": row["dietary"].strip(), "guests": [], "head_count": 0})
        entry["guests"].append(row)
        entry["head_count"] += max(row["num_guests"], 1)
    return sorted(report.values(), key=lambda e: (-e["head_count"], e["dietary"].casefold()))


ACTIVITY_SORTS = {
    "last_login": [F("last_login_at").desc(nulls_last=True), "last_name"],
    "last_access": [F("last_access_at").desc(nulls_last=True), "last_name"],
    "name": ["last_name", "first_name"],
    "never": [F("last_login_at").asc(nulls_first=True), "last_name"],
}


def guest_activity(*, event, sort: str = "last_access", never_opened_only: bool = False):
    guests = Guest.objects.for_event(event).only(
        "pk", "first_name", "last_name", "status", "last_login_at", "last_access_at", "invited_at", "rsvp_at"
    )
    if never_opened_only:
        guests = guests.filter(last_login_at__isnull=True)
    return guests.order_by(*ACTIVITY_SORTS.get(sort, ACTIVITY_SORTS["last_access"]), "pk")


ACTIVITY_TIMELINE_LENGTH = 30


def guest_activity_timeline(*, guest, limit: int = ACTIVITY_TIMELINE_LENGTH) -> list[GuestActivity]:
    """The guest's most recent activity, newest first (index activity_guest_at)."""
    activity = GuestActivity.objects.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk)
    entries = list(activity.order_by("-at", "pk")[:limit])
    _attach_actors(entries)
    return entries


def event_recent_activity(*, event, limit: int = ACTIVITY_TIMELINE_LENGTH) -> list[GuestActivity]:
    """The event's most recent activity with each guest's name, newest first (index activity_event_at)."""
    entries = list(
        GuestActivity.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .select_related("guest")
        .only("pk", "kind", "at", "actor_user_id", "guest", "guest__first_name", "guest__last_name")
        .order_by("-at", "pk")[:limit]
    )
    _attach_actors(entries)
    return entries


def _attach_actors(entries) -> None:
    """Set `.actor` (the organizer's account, or None) on organizer views, in one query for all of them."""
    from tenants.models import User

    ids = {e.actor_user_id for e in entries if e.actor_user_id}
    users = {u.pk: u for u in User.objects.filter(pk__in=ids).only("pk", "email")} if ids else {}
    for entry in entries:
        entry.actor = users.get(entry.actor_user_id)


def event_messages(*, event):
    """The event's message log, newest first (index message_event_created)."""
    return (
        GuestMessage.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)
        .select_related("guest")
        .order_by("-created_at", "pk")
    )


def guest_messages(*, guest, limit: int = 30) -> list[GuestMessage]:
    """The messages sent to one guest, newest first."""
    messages = GuestMessage.objects.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk)
    return list(messages.order_by("-created_at", "pk")[:limit])


def guests_of_event(*, event, guest_ids) -> list[Guest]:
    """These guests of the event; ids of other events or tenants are left out (the caller compares counts)."""
    return list(Guest.objects.for_event(event).filter(pk__in=list(guest_ids)))

"""Reads of the guest's side: change requests (scoped by tenant and event), and a logged-in guest's event."""

import uuid

from django.db.models import QuerySet
from django.shortcuts import get_object_or_404

from events.models import Event
from guests.models import Guest
from rsvp.models import ChangeRequest


def _of_event(event: Event) -> QuerySet[ChangeRequest]:
    return ChangeRequest.objects.filter(tenant_id=event.tenant_id, event_id=event.pk)


def change_request_list(*, event: Event, status: str = "") -> QuerySet[ChangeRequest]:
    """The event's change requests (pending ones oldest first, as a to-do list; others newest first)."""
    requests = _of_event(event).select_related("guest")
    if status:
        requests = requests.filter(status=status)
    if status == ChangeRequest.Status.PENDING:
        return requests.order_by("created_at", "pk")
    return requests.order_by("-created_at", "pk")


def change_requests_pending(*, event: Event, limit: int = 50) -> list[ChangeRequest]:
    """The requests waiting for the organizer, oldest first (index changerequest_event_status)."""
    return list(change_request_list(event=event, status=ChangeRequest.Status.PENDING)[:limit])


def change_requests_pending_count(*, event: Event) -> int:
    return _of_event(event).filter(status=ChangeRequest.Status.PENDING).count()


def change_request_get(*, event: Event, request_id: uuid.UUID) -> ChangeRequest:
    """One of the event's requests, or 404 (another event's or organization's request does not exist here)."""
    return get_object_or_404(_of_event(event).select_related("guest", "guest__event", "guest__tenant"), pk=request_id)


def change_request_latest(*, guest: Guest) -> ChangeRequest | None:
    """The guest's most recent request (index changerequest_event_guest); no query for a guest who never asked."""
    if guest.change_requested_at is None:
        return None
    return (
        ChangeRequest.objects.filter(tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk)
        .order_by("-created_at", "pk")
        .first()
    )


def guest_event_id(*, guest_id: uuid.UUID, code: str) -> uuid.UUID | None:
    """The event of the guest with this id and code (a logged-in session's), or None if there is no such guest."""
    return Guest.objects.filter(pk=guest_id, code=code).values_list("event_id", flat=True).first()

import uuid

from django.db.models import Q
from django.shortcuts import get_object_or_404

from events import hooks
from events.hooks import EMPTY_NUMBERS, event_numbers_by_event
from events.models import Event, TicketType
from events.on_sale_cache import event_on_sale_kept
from tenants.models import Tenant


def event_get(*, tenant: Tenant, event_id: uuid.UUID) -> Event:
    """The tenant's event or 404: another tenant's event does not exist for you."""
    return get_object_or_404(Event.objects.for_tenant(tenant), pk=event_id)


def ticketed_event_get(*, tenant: Tenant, event_id: uuid.UUID) -> Event:
    """The tenant's event when it sells tickets; the ticket pages of an invite-only event do not exist (404)."""
    return get_object_or_404(Event.objects.for_tenant(tenant).filter(kind=Event.Kind.TICKETED), pk=event_id)


def event_list(*, tenant: Tenant, include_archived: bool = False) -> list[Event]:
    """The organizer's events, each with `.numbers` (headline counts), in two queries."""
    events = Event.objects.for_tenant(tenant)
    if not include_archived:
        events = events.active()
    listed = list(events.order_by("-starts_at"))
    numbers = event_numbers_by_event(tenant=tenant, event_ids=[e.pk for e in listed])
    for event in listed:
        event.numbers = numbers.get(event.pk, dict(EMPTY_NUMBERS))  # type: ignore[attr-defined]  # for the page only
    return listed


def event_on_sale(*, event_id: uuid.UUID) -> Event:
    """A published ticketed event of a verified organization, for the public shop (page and API); drafts,
    archived and invite-only events, and those of organizations nobody verified, do not exist for the public.
    404 otherwise. From this process's memory while the event is unchanged (events/on_sale_cache.py)."""
    return event_on_sale_kept(event_id, _event_on_sale_read)


def _event_on_sale_read(event_id: uuid.UUID) -> Event:
    return get_object_or_404(
        Event.objects.select_related("tenant").filter(
            kind=Event.Kind.TICKETED, status=Event.Status.PUBLISHED, tenant__verified_at__isnull=False
        ),
        pk=event_id,
    )


def ticket_type_list(*, event: Event) -> list[TicketType]:
    """Every ticket type of the event, on sale or not, in the organizer's order."""
    return list(TicketType.objects.filter(tenant_id=event.tenant_id, event_id=event.pk))


def ticket_types_for_sale(*, event: Event, access_code: str = "") -> list[TicketType]:
    """Types in their sales window the buyer may see (public ones, plus those unlocked by `access_code`).

    A type whose free seats are held back for its waitlist (events.hooks.register_held_back) is returned
    as sold out, as the public may buy it: its `reserved` is raised in memory only, never saved.
    """
    visible = Q(access_code="")
    if access_code.strip():
        visible |= Q(access_code=access_code.strip())
    types = list(TicketType.objects.for_tenant(event.tenant).filter(visible, event_id=event.pk).on_sale())
    held_back = hooks.held_back_ticket_type_ids(types)
    for ticket_type in types:
        if ticket_type.pk in held_back:
            ticket_type.hold_back_for_waitlist()
    return types

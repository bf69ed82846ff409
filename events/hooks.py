"""Extension points for the apps built on events (guests, rsvp, billing).

Events owns the organizer's event list and dashboard, but their numbers come from apps that depend
on events; those apps register a provider from their `AppConfig.ready()`, so events imports none
of them and the app map keeps one direction (docs/architecture.md).
"""

from collections.abc import Callable
from typing import Any

from events.models import Event

EventNumbers = Callable[..., dict[Any, dict[str, int]]]
DashboardSection = Callable[[Event], dict[str, Any]]
SeatsFreed = Callable[..., None]
HeldBack = Callable[..., set[Any]]

EMPTY_NUMBERS = {"invited": 0, "coming": 0, "declined": 0, "pending": 0, "head_count": 0}

_numbers_provider: list[EventNumbers] = []
_dashboard_sections: list[DashboardSection] = []
_seats_freed_listeners: list[SeatsFreed] = []
_held_back_provider: list[HeldBack] = []


def register_event_numbers(provider: EventNumbers) -> EventNumbers:
    """`provider(*, tenant, event_ids)` returns headline numbers by event id (guests registers it)."""
    _numbers_provider[:] = [provider]
    return provider


def register_dashboard_section(section: DashboardSection) -> DashboardSection:
    """`section(event)` returns context for the organizer dashboard page (empty when it does not apply)."""
    if section not in _dashboard_sections:
        _dashboard_sections.append(section)
    return section


def register_seats_freed(listener: SeatsFreed) -> SeatsFreed:
    """`listener(*, ticket_type_ids)` is told when an organizer's change may have put seats back on sale
    (a raised capacity; billing's waitlist offers them)."""
    if listener not in _seats_freed_listeners:
        _seats_freed_listeners.append(listener)
    return listener


def seats_freed(*, ticket_type_ids: list) -> None:
    for listener in _seats_freed_listeners:
        listener(ticket_type_ids=ticket_type_ids)


def register_held_back(provider: HeldBack) -> HeldBack:
    """`provider(*, ticket_types)` returns the ids of those types whose free seats are not for the public
    (billing: people are waiting for them, so freed seats go to the waitlist)."""
    _held_back_provider[:] = [provider]
    return provider


def held_back_ticket_type_ids(ticket_types: list) -> set[Any]:
    if not _held_back_provider or not ticket_types:
        return set()
    return _held_back_provider[0](ticket_types=ticket_types)


def event_numbers_by_event(*, tenant, event_ids: list) -> dict[Any, dict[str, int]]:
    if not _numbers_provider or not event_ids:
        return {}
    return _numbers_provider[0](tenant=tenant, event_ids=event_ids)


def dashboard_context(event: Event) -> dict[str, Any]:
    context: dict[str, Any] = {}
    for section in _dashboard_sections:
        context.update(section(event))
    return context

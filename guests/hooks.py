"""Guests' hooks: what guests adds to events' pages, and the guest page's sections from apps above guests.

Events' pages get guests' numbers (registered from GuestsConfig.ready(), see events.hooks). The
guest's own page belongs to rsvp, but what a ticket holder sees there (their tickets) belongs to
billing, and rsvp and billing never import each other: billing registers a section here from
BillingConfig.ready() and rsvp renders every registered section (docs/architecture.md).
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from events.hooks import register_dashboard_section, register_event_numbers
from events.models import Event
from guests.models import Guest
from guests.selectors import event_headline_numbers_by_event, event_stats


@dataclass(frozen=True)
class GuestPageSection:
    """One block of the guest's page: a template and its context (rendered by rsvp)."""

    template_name: str
    context: dict[str, Any] = field(default_factory=dict)


#: `section(guest)` returns a block for the guest's page, or None when it has nothing for this guest.
#: A page without sections may be kept and served again until the guest's event's version changes
#: (rsvp/guest_page_cache.py), so a provider returns None only for what the guest's row says (billing: the
#: guest is no ticket holder), never for rows of its own that can change without a write to the guest.
GuestPageSectionProvider = Callable[[Guest], GuestPageSection | None]

_guest_page_sections: list[GuestPageSectionProvider] = []


def register_guest_page_section(provider: GuestPageSectionProvider) -> GuestPageSectionProvider:
    if provider not in _guest_page_sections:
        _guest_page_sections.append(provider)
    return provider


def guest_page_sections(guest: Guest) -> list[GuestPageSection]:
    """The registered blocks this guest's page shows, in registration order."""
    sections = (provider(guest) for provider in _guest_page_sections)
    return [section for section in sections if section is not None]


def dashboard_stats(event: Event) -> dict:
    """The dashboard's headline numbers: invitees, or for a ticketed event its ticket holders (one set of people)."""
    return {"stats": event_stats(event=event)}


def register() -> None:
    register_event_numbers(event_headline_numbers_by_event)
    register_dashboard_section(dashboard_stats)

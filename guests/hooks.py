"""What guests adds to events' pages (registered from GuestsConfig.ready(), see events.hooks)."""

from events.hooks import register_dashboard_section, register_event_numbers
from events.models import Event
from guests.selectors import event_headline_numbers_by_event, event_stats


def dashboard_stats(event: Event) -> dict:
    """The invite-only dashboard's headline numbers."""
    return {} if event.is_ticketed else {"stats": event_stats(event=event)}


def register() -> None:
    register_event_numbers(event_headline_numbers_by_event)
    register_dashboard_section(dashboard_stats)

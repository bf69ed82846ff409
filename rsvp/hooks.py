"""What rsvp adds to events' pages (registered from RsvpConfig.ready(), see events.hooks)."""

from events.hooks import register_dashboard_section
from events.models import Event
from rsvp.selectors import change_requests_pending, change_requests_pending_count


def dashboard_change_requests(event: Event) -> dict:
    """The invite-only dashboard's pending change requests (the newest ten and the count)."""
    if event.is_ticketed:
        return {}
    return {
        "change_requests": change_requests_pending(event=event, limit=10),
        "change_requests_count": change_requests_pending_count(event=event),
    }


def register() -> None:
    register_dashboard_section(dashboard_change_requests)

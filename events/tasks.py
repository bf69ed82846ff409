"""Celery tasks of the events app (docs/workers.md)."""

from celery import shared_task

from events.services import event_rsvp_close_due


@shared_task(name="events.rsvp_close_due", autoretry_for=(), record_failure=False)
def event_rsvp_close_due_task() -> int:
    """Every few minutes: close RSVPs of events whose deadline has passed (a compare-and-set, safe twice)."""
    return event_rsvp_close_due()

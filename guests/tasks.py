"""Celery tasks of the guests app: adapters that call one function each (docs/workers.md)."""

import uuid

from celery import shared_task

from guests import imports, notifications
from guests.activity import activity_flush
from guests.models import Guest
from guests.services import activity_cleanup


@shared_task(
    name="guests.activity_flush",
    # The next scheduled flush is the retry: no backoff retries, no FailedTask
    # every few seconds while the database is down (the error is logged).
    autoretry_for=(),
    record_failure=False,
    ignore_result=True,
)
def guest_activity_flush_task() -> dict:
    """Write the activity events waiting on the broker, in batches (periodic, see CELERY_BEAT_SCHEDULE)."""
    result = activity_flush()
    return {
        "messages": result.messages,
        "rows_inserted": result.rows_inserted,
        "guests_updated": result.guests_updated,
        "dropped": result.dropped,
    }


@shared_task(name="guests.invitation_send")
def guest_invitation_send_task(*, guest_id: str, window: str, sender_id: str | None = None) -> bool:
    """Send one guest's invitation for this send (idempotent by the message window)."""
    guest = Guest.objects.select_related("event", "event__tenant", "tenant").filter(pk=guest_id).first()
    if guest is None:
        return False  # deleted meanwhile
    return notifications.guest_invitation_send(guest=guest, window=window, sender_id=sender_id)


@shared_task(name="guests.confirmation_send")
def guest_confirmation_send_task(*, guest_id: str, window: str) -> bool:
    """Confirm a guest's answer by email (idempotent by the answer's time)."""
    guest = Guest.objects.select_related("event", "tenant").filter(pk=guest_id).first()
    if guest is None:
        return False
    return notifications.guest_confirmation_send(guest=guest, window=window)


@shared_task(name="guests.change_request_decided_send")
def change_request_decided_send_task(*, guest_id: str, request_id: str, approved: bool, response: str) -> bool:
    """Tell a guest how the organizer decided their change request (idempotent by the request id)."""
    guest = Guest.objects.select_related("event", "tenant").filter(pk=guest_id).first()
    if guest is None:
        return False
    return notifications.change_request_decided_send(
        guest=guest, request_id=request_id, approved=approved, response=response
    )


# Periodic jobs: the next run is the retry (failed rows are taken back then).
@shared_task(name="guests.reminders_send", autoretry_for=(), record_failure=False)
def guest_reminders_send_task() -> int:
    """Hourly: reminders to pending guests of events whose deadline is REMINDER_DAYS_BEFORE_DEADLINE away."""
    return notifications.reminders_send()


@shared_task(name="guests.digests_send", autoretry_for=(), record_failure=False)
def guest_digests_send_task() -> int:
    """Daily: the organizers' digest of every published event with new answers."""
    return notifications.digests_send()


@shared_task(name="guests.activity_cleanup", autoretry_for=(), record_failure=False)
def guest_activity_cleanup_task() -> int:
    """Daily: delete activity records older than ACTIVITY_RETENTION_DAYS."""
    return activity_cleanup()


@shared_task(name="guests.import_check")
def guest_import_check_task(*, import_id: str) -> bool:
    """Check the rows of an uploaded guest file (the preview); once per job (compare-and-set)."""
    return imports.guest_import_check(import_id=uuid.UUID(import_id)) is not None


@shared_task(name="guests.import_apply")
def guest_import_apply_task(*, import_id: str) -> bool:
    """Write a confirmed guest import; once per job (compare-and-set)."""
    return imports.guest_import_apply(import_id=uuid.UUID(import_id)) is not None

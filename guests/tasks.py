"""Celery tasks of the guests app: adapters that call one function each (docs/workers.md)."""

from celery import shared_task

from guests.activity import activity_flush


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

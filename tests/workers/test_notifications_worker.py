"""Integration: notification tasks on a real Celery worker and Redis send each email exactly once.

Skipped without Redis unless REQUIRE_REDIS=1 (see conftest.py). The worker is a
thread of this process, so the locmem email backend's mail.outbox is shared.
"""

from datetime import timedelta

import pytest
from celery.signals import task_postrun
from django.core import mail
from django.utils import timezone

from eventsaas.tasks import enqueue_on_commit
from guests.models import Guest, GuestMessage
from guests.tasks import guest_invitation_send_task, guest_reminders_send_task
from tests.factories import EventFactory, GuestFactory
from tests.support.waiting import wait_for

pytestmark = pytest.mark.redis


def test_the_same_invitation_enqueued_twice_is_sent_once(celery_worker, finished_runs, event):
    guest = GuestFactory(event=event, email="ana@example.com")

    enqueue_on_commit(guest_invitation_send_task, guest_id=str(guest.pk), window="send:1")
    enqueue_on_commit(guest_invitation_send_task, guest_id=str(guest.pk), window="send:1")

    wait_for(lambda: finished_runs.count("guests.invitation_send") == 2)
    assert Guest.objects.get(pk=guest.pk).invited_at is not None
    assert [m.to for m in mail.outbox] == [["ana@example.com"]]
    assert list(GuestMessage.objects.values_list("status", flat=True)) == ["sent"]


def test_reminders_fired_twice_are_sent_once_per_guest(celery_worker, finished_runs, tenant, settings):
    settings.REMINDER_DAYS_BEFORE_DEADLINE = 3
    event = EventFactory(tenant=tenant, rsvp_deadline=timezone.now() + timedelta(days=1))
    GuestFactory(event=event, email="a@example.com")
    GuestFactory(event=event, email="b@example.com")

    guest_reminders_send_task.delay()
    guest_reminders_send_task.delay()

    wait_for(lambda: finished_runs.count("guests.reminders_send") == 2)
    assert GuestMessage.objects.filter(kind="reminder", status="sent").count() == 2
    assert sorted(m.to[0] for m in mail.outbox) == ["a@example.com", "b@example.com"]


@pytest.fixture
def finished_runs():
    """Names of the tasks the worker finished (successful or not), in order."""
    runs = []

    def record(sender=None, **kwargs):
        runs.append(sender.name)

    task_postrun.connect(record, weak=False)
    yield runs
    task_postrun.disconnect(record)

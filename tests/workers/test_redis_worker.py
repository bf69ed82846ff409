"""Integration: a real Celery worker on the real Redis, checked through the database.

Skipped without Redis unless REQUIRE_REDIS=1 (see conftest.py).
"""

from unittest import mock

import pytest
from django.db import connection

from eventsaas.models import AuditLog, FailedTask
from eventsaas.tasks import enqueue_on_commit
from guests.activity import ACTIVITY_QUEUE
from guests.models import Guest, GuestActivity
from guests.tasks import guest_activity_flush_task
from tests.factories import UserFactory
from tests.support import tasks
from tests.support.waiting import wait_for

pytestmark = pytest.mark.redis


@pytest.fixture(autouse=True)
def _fresh_task_state():
    tasks.calls.clear()
    tasks.state["fixed"] = False
    yield
    tasks.state["fixed"] = False


@pytest.fixture
def guest_updates():
    """Counts UPDATEs of guests_guest in every thread (the worker's included)."""
    counted = []
    # The backend's own update compiler: MongoDB's overrides execute_sql.
    compiler = connection.ops.compiler("SQLUpdateCompiler")
    original = compiler.execute_sql

    def counting(self, *args, **kwargs):
        if self.query.model is Guest:
            counted.append(self.query)
        return original(self, *args, **kwargs)

    with mock.patch.object(compiler, "execute_sql", counting):
        yield counted


def _login(client, guest):
    response = client.post("/rsvp/", {"code": guest.code, "last_name": guest.last_name})
    assert response.status_code == 302


def test_a_task_enqueued_on_commit_runs_on_the_worker(celery_worker):
    enqueue_on_commit(tasks.record_call_task, marker="hello")

    wait_for(lambda: AuditLog.objects.filter(action="tests.task_ran", data={"marker": "hello"}).exists())


def test_activity_is_only_queued_by_requests_and_written_by_the_worker_in_one_update_per_guest(
    celery_worker, redis_client, client, household, guest_updates
):
    anna, lisa = household
    _login(client, anna)
    for _ in range(5):
        assert client.get("/rsvp/answer/").status_code == 200
    lisa_client = type(client)()
    _login(lisa_client, lisa)
    for _ in range(2):
        assert lisa_client.get("/rsvp/answer/").status_code == 200

    # The requests only published: 9 messages wait on Redis, nothing is written yet.
    assert redis_client.llen(ACTIVITY_QUEUE.name) == 9
    assert not GuestActivity.objects.exists()
    assert Guest.objects.filter(last_access_at__isnull=False).count() == 0

    guest_activity_flush_task.delay()

    wait_for(lambda: GuestActivity.objects.count() == 9)
    wait_for(lambda: redis_client.llen(ACTIVITY_QUEUE.name) == 0)
    assert len(guest_updates) == 2  # nine events, two guests, two updates
    anna.refresh_from_db()
    lisa.refresh_from_db()
    latest_anna = GuestActivity.objects.filter(guest=anna).order_by("-at").first().at
    assert anna.last_access_at == latest_anna and anna.last_login_at is not None
    assert lisa.last_access_at is not None and lisa.last_login_at is not None
    kinds = list(GuestActivity.objects.filter(guest=anna).values_list("kind", flat=True))
    assert sorted(kinds) == ["login"] + ["page_view"] * 5


def test_a_failing_task_is_retried_by_the_worker_then_recorded(celery_worker):
    enqueue_on_commit(tasks.always_transient_task, marker="w1")

    failed = wait_for(lambda: FailedTask.objects.filter(task_name="tests.always_transient").first())
    assert len([c for c in tasks.calls if c["task"] == "tests.always_transient"]) == 3
    assert failed.retries == 2
    assert failed.kwargs == {"marker": "w1"}
    assert failed.error == "TransientError: the remote service is busy"
    assert failed.stage == FailedTask.Stage.RUN


def test_retry_from_the_admin_re_enqueues_the_task_on_the_worker(celery_worker, client):
    enqueue_on_commit(tasks.fails_until_fixed_task, marker="w2")
    failed = wait_for(lambda: FailedTask.objects.filter(task_name="tests.fails_until_fixed").first())
    assert not AuditLog.objects.filter(action="tests.task_ran").exists()

    tasks.state["fixed"] = True  # the outage is over
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    response = client.post(
        "/admin/eventsaas/failedtask/", {"action": "retry_selected", "_selected_action": [str(failed.pk)]}
    )

    assert response.status_code == 302
    wait_for(lambda: AuditLog.objects.filter(action="tests.task_ran", data={"marker": "w2"}).exists())
    failed.refresh_from_db()
    assert failed.retried_at is not None
    assert FailedTask.objects.count() == 1  # the retried run succeeded: no new failure

"""BaseTask failure handling, enqueue after commit, and the FailedTask admin (tasks run eagerly here)."""

import pytest
from django.db import transaction

from eventsaas.db import atomic as db_atomic
from eventsaas.models import AuditLog, FailedTask
from eventsaas.services import failed_task_retry
from eventsaas.tasks import BaseTask, enqueue_on_commit
from tests.factories import UserFactory
from tests.support import tasks
from tests.support.backends import NO_ROLLBACK, ON_COMMIT_AT_ONCE
from tests.support.celery import celery_config

ADMIN_URL = "/admin/eventsaas/failedtask/"


@pytest.fixture(autouse=True)
def _fresh_task_state():
    tasks.calls.clear()
    tasks.state["fixed"] = False
    yield
    tasks.state["fixed"] = False


@pytest.fixture
def staff_client(client, db):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def _calls(name):
    return [c for c in tasks.calls if c["task"] == name]


def test_every_task_gets_the_reliability_defaults():
    task = tasks.record_call_task
    assert isinstance(task, BaseTask)
    assert task.acks_late and task.reject_on_worker_lost
    assert task.max_retries == 5 and task.retry_backoff and task.retry_jitter and task.retry_backoff_max == 600
    assert ValueError not in task.autoretry_for


def test_transient_error_is_retried_then_recorded_once_with_its_arguments(db):
    tasks.always_transient_task.delay(marker="m1")

    assert len(_calls("tests.always_transient")) == 3  # the first run and max_retries=2 retries
    failed = FailedTask.objects.get()
    assert failed.task_name == "tests.always_transient"
    assert failed.kwargs == {"marker": "m1"} and failed.args == []
    assert failed.error == "TransientError: the remote service is busy"
    assert "TransientError" in failed.traceback
    assert failed.retries == 2
    assert failed.stage == FailedTask.Stage.RUN
    assert failed.task_id and failed.retried_at is None


def test_a_bug_is_not_retried_and_is_recorded_at_once(db):
    tasks.broken_task.delay(marker="b")

    assert len(_calls("tests.broken")) == 1
    failed = FailedTask.objects.get()
    assert (failed.retries, failed.error) == (0, "ValueError: a bug, not worth retrying")


def test_a_successful_task_records_nothing(db):
    tasks.record_call_task.delay(marker="ok")

    assert _calls("tests.record_call") == [{"task": "tests.record_call", "marker": "ok"}]
    assert not FailedTask.objects.exists()


# Django's atomic() is a transaction on SQL databases only; eventsaas.db.atomic() is one everywhere
# (the backend's session transaction on MongoDB).
def _atomics(mongodb_difference):
    return [
        pytest.param(transaction.atomic, id="django-atomic", marks=mongodb_difference.skip),
        pytest.param(db_atomic, id="eventsaas-atomic"),
    ]


@pytest.mark.parametrize("atomic", _atomics(ON_COMMIT_AT_ONCE))
def test_enqueue_on_commit_sends_only_after_the_transaction_commits(transactional_db, atomic):
    with atomic():
        enqueue_on_commit(tasks.record_call_task, marker="after-commit")
        assert tasks.calls == []

    assert _calls("tests.record_call") == [{"task": "tests.record_call", "marker": "after-commit"}]


@pytest.mark.parametrize("atomic", _atomics(NO_ROLLBACK))
def test_enqueue_on_commit_sends_nothing_when_the_transaction_rolls_back(transactional_db, atomic):
    with pytest.raises(RuntimeError):
        with atomic():
            enqueue_on_commit(tasks.record_call_task, marker="rolled-back")
            raise RuntimeError("rollback")

    assert tasks.calls == []


def test_enqueue_on_commit_outside_a_transaction_sends_at_once(transactional_db):
    enqueue_on_commit(tasks.record_call_task, marker="at-once")

    assert _calls("tests.record_call") == [{"task": "tests.record_call", "marker": "at-once"}]


def test_broker_down_at_enqueue_keeps_the_task_as_a_failed_task(db, django_capture_on_commit_callbacks):
    with celery_config(broker_url="redis://127.0.0.1:9/0", task_always_eager=False):
        with django_capture_on_commit_callbacks(execute=True):
            enqueue_on_commit(tasks.record_call_task, marker="lost?")  # must not raise

    failed = FailedTask.objects.get()
    assert failed.stage == FailedTask.Stage.ENQUEUE
    assert failed.task_name == "tests.record_call" and failed.kwargs == {"marker": "lost?"}
    assert failed.task_id == ""
    assert tasks.calls == []


def test_retry_sends_the_task_again_once_per_row(db, django_capture_on_commit_callbacks):
    tasks.fails_until_fixed_task.delay(marker="r1")
    failed = FailedTask.objects.get()
    tasks.state["fixed"] = True
    staff = UserFactory(is_staff=True)

    with django_capture_on_commit_callbacks(execute=True):
        assert failed_task_retry(failed_task=failed, acting_user=staff) is True
        assert failed_task_retry(failed_task=FailedTask.objects.get(pk=failed.pk), acting_user=staff) is False

    assert AuditLog.objects.filter(action="tests.task_ran", data={"marker": "r1"}).count() == 1
    failed.refresh_from_db()
    assert failed.retried_at is not None and failed.retried_by == staff
    assert AuditLog.objects.filter(action="task.retried", object_id=failed.pk, actor_user=staff).exists()


def test_admin_lists_failed_tasks_and_shows_arguments_and_traceback(staff_client):
    tasks.broken_task.delay(marker="shown")
    failed = FailedTask.objects.get()

    listing = staff_client.get(ADMIN_URL)
    detail = staff_client.get(f"{ADMIN_URL}{failed.pk}/change/")

    assert listing.status_code == 200 and "tests.broken" in listing.content.decode()
    page = detail.content.decode()
    assert detail.status_code == 200
    assert "&quot;marker&quot;: &quot;shown&quot;" in page and "ValueError" in page


def test_admin_retry_selected_re_enqueues_and_reports(staff_client, django_capture_on_commit_callbacks):
    tasks.fails_until_fixed_task.delay(marker="a1")
    tasks.fails_until_fixed_task.delay(marker="a2")
    FailedTask.objects.create(task_name="tests.gone", error="x")
    tasks.state["fixed"] = True
    selected = [str(pk) for pk in FailedTask.objects.values_list("pk", flat=True)]

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(ADMIN_URL, {"action": "retry_selected", "_selected_action": selected}, follow=True)

    page = response.content.decode()
    assert response.status_code == 200
    assert "2 tasks sent again." in page
    assert "No such task any more: tests.gone." in page
    markers = set(AuditLog.objects.filter(action="tests.task_ran").values_list("data__marker", flat=True))
    assert markers == {"a1", "a2"}
    assert FailedTask.objects.filter(retried_at__isnull=False).count() == 2


def test_failed_tasks_cannot_be_added_or_edited_in_the_admin(staff_client):
    assert staff_client.get(f"{ADMIN_URL}add/").status_code == 403

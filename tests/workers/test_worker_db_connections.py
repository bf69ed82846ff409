"""A worker keeps its database connection between tasks as a web process does between requests (CONN_MAX_AGE),
and drops it after a task that did not succeed (eventsaas/celery.py). A real worker on Redis; skipped without
Redis unless REQUIRE_REDIS=1 (see conftest.py).
"""

import threading

import pytest
from celery import shared_task
from django.db import connections
from django.db.backends.signals import connection_created

from tenants.models import Tenant
from tests.support.backends import CLIENT_KEPT
from tests.support.waiting import wait_for

pytestmark = pytest.mark.redis

FINISHED: list[str] = []


@shared_task(name="tests.workers.read_the_database", autoretry_for=(), record_failure=False)
def read_the_database(*, label: str, fail: bool = False) -> None:
    Tenant.objects.exists()
    FINISHED.append(label)
    if fail:
        raise ValueError("this task fails after using the database")


@pytest.fixture
def worker_connections():
    """The database connections opened outside the test's own thread (by the worker), in order."""
    test_thread = threading.get_ident()
    opened: list[str] = []
    wrappers = []

    def record(sender, connection, **kwargs):
        if threading.get_ident() != test_thread:
            opened.append(connection.alias)
            wrappers.append(connection)

    connection_created.connect(record, weak=False)
    yield opened
    connection_created.disconnect(record)
    # The worker's thread keeps its connection (what these tests show): closed here, or PostgreSQL refuses to
    # drop the test database at the end of the run ("being accessed by other users").
    for wrapper in wrappers:
        wrapper.inc_thread_sharing()
        try:
            wrapper.close()
        finally:
            wrapper.dec_thread_sharing()


def run_in_worker(*calls: dict) -> None:
    FINISHED.clear()
    for kwargs in calls:
        read_the_database.delay(**kwargs)
    labels = [kwargs["label"] for kwargs in calls]
    wait_for(lambda: FINISHED == labels, what=f"the worker finished {labels}")


@pytest.fixture
def conn_max_age(monkeypatch):
    """Set CONN_MAX_AGE for the connections the worker opens from now on (they read this dict when they connect)."""

    def set_to(seconds: int) -> None:
        monkeypatch.setitem(connections.settings["default"], "CONN_MAX_AGE", seconds)

    return set_to


def test_tasks_that_succeed_share_one_connection_while_conn_max_age_keeps_it(
    celery_worker, worker_connections, conn_max_age
):
    conn_max_age(60)

    run_in_worker({"label": "first"}, {"label": "second"}, {"label": "third"})

    assert worker_connections == ["default"]


def test_without_conn_max_age_each_task_has_a_connection_of_its_own(celery_worker, worker_connections, conn_max_age):
    conn_max_age(0)  # Django's default, and DB_CONN_MAX_AGE's

    run_in_worker({"label": "first"}, {"label": "second"}, {"label": "third"})

    assert worker_connections == CLIENT_KEPT.pick(sql=["default"] * 3, mongodb=["default"])


def test_a_task_that_did_not_succeed_leaves_no_connection_for_the_next(celery_worker, worker_connections, conn_max_age):
    """A soft time limit can interrupt a query and leave a connection that looks usable; such a task never ends
    in success, so the next task starts on a new connection whatever the failure was."""
    conn_max_age(60)

    run_in_worker({"label": "fails", "fail": True}, {"label": "after"}, {"label": "and after"})

    assert worker_connections == CLIENT_KEPT.pick(sql=["default", "default"], mongodb=["default"])

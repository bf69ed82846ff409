"""A real Celery worker (in a thread of the test process) on the real Redis of this machine.

Tests marked `redis` are skipped when Redis is unreachable, unless REQUIRE_REDIS=1
(as in .ci/run), which turns the skip into a failure. Each pytest-xdist process
uses its own Redis database (15, 14, ...), flushed before and after every test.
"""

import os

import pytest
import redis
from celery.contrib.testing.worker import start_worker

from tests.support.celery import celery_config

REDIS_SERVER = os.environ.get("TEST_REDIS_SERVER", "redis://127.0.0.1:6379")


def _redis_db() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return 15 - int(worker.removeprefix("gw") or 0) % 8


@pytest.fixture(scope="session")
def redis_url() -> str:
    url = f"{REDIS_SERVER}/{_redis_db()}"
    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.exceptions.RedisError as exc:
        message = f"Redis is not reachable at {url} ({exc})"
        if os.environ.get("REQUIRE_REDIS") == "1":
            pytest.fail(message + "; REQUIRE_REDIS=1 makes that a failure", pytrace=False)
        pytest.skip(message)
    return url


@pytest.fixture
def redis_client(redis_url):
    client = redis.Redis.from_url(redis_url, socket_connect_timeout=1)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture
def celery_worker(redis_client, redis_url, transactional_db):
    """The project's Celery app on Redis (not eager) with one worker thread consuming from it.

    The worker's tasks use the ORM from their own thread and connection, so the
    tests need transactional_db (committed data) and a test database that other
    connections can see (settings_test makes SQLite's a file).
    """
    with celery_config(broker_url=redis_url, task_always_eager=False, worker_hijack_root_logger=False) as app:
        with start_worker(app, pool="solo", perform_ping_check=False, loglevel="WARNING", shutdown_timeout=20):
            yield app

"""The shadow compilation pass (tests/support/mongo_shadow.py) really compiles, and really fails.

On the MongoDB pass shadow compilation is off (every query really runs); the
same facts are then checked against the real backend where they exist, and the
pytest runs that show a failing shadow pass run on SQLite.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import NotSupportedError, connection

from guests.models import Guest
from guests.selectors import event_stats
from tests.conftest import MONGO_SHADOW
from tests.factories import GuestFactory
from tests.support import mongo_shadow
from tests.support.backends import NO_SQL, ON_MONGODB

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not MONGO_SHADOW and not ON_MONGODB, reason="shadow compilation is switched off (MONGO_SHADOW=0)"
)


@pytest.fixture
def pipelines(monkeypatch):
    """The MongoDB pipelines the shadow compiler builds, in order."""
    from django_mongodb_backend.query import MongoQuery

    built = []
    original = MongoQuery.get_pipeline

    def spy(self):
        pipeline = original(self)
        built.append(pipeline)
        return pipeline

    monkeypatch.setattr(MongoQuery, "get_pipeline", spy)
    return built


def test_dashboard_aggregate_compiles_to_one_mongodb_pipeline(event, pipelines):
    # Shadow-compiled on SQL databases; compiled and run on MongoDB.
    GuestFactory(event=event, status=Guest.Status.COMING, num_guests=2)
    pipelines.clear()

    stats = event_stats(event=event)

    assert stats["head_count"] == 2
    assert len(pipelines) == 1
    stages = [next(iter(stage)) for stage in pipelines[0]]
    assert stages[0] == "$match"  # scoped by tenant and event before anything else
    assert {"tenant_id": str(event.tenant_id).replace("-", "")} in pipelines[0][0]["$match"]["$and"]
    assert mongo_shadow.take_failures() == []


def test_unsupported_query_is_recorded_with_its_sql(event):
    if ON_MONGODB:
        # What the shadow pass records is what the real backend refuses.
        with pytest.raises(NotSupportedError, match=r"extra\(\) is not supported"):
            list(Guest.objects.extra(select={"shouting": "UPPER(last_name)"}))
        return
    list(Guest.objects.extra(select={"shouting": "UPPER(last_name)"}))

    failures = mongo_shadow.take_failures()
    assert len(failures) == 1
    assert failures[0].kind == "compile"
    assert "NotSupportedError" in failures[0].error and "extra() is not supported" in failures[0].error
    assert "UPPER(last_name)" in failures[0].sql
    assert "test_shadow.py" in failures[0].stack


@NO_SQL.skip
def test_raw_sql_in_a_test_is_recorded(db):
    with connection.cursor() as cursor:
        cursor.execute("SELECT COUNT(*) FROM guests_guest")

    failures = mongo_shadow.take_failures()
    assert [f.kind for f in failures] == ["raw-sql"]
    assert "guests_guest" in failures[0].sql


def _sql_environment() -> dict[str, str]:
    """This environment on a SQL database: shadow compilation is what these runs show."""
    return {
        name: value
        for name, value in os.environ.items()
        if not (name in {"DATABASE_URL", "MONGODB_URI"} and value.startswith("mongodb"))
    }


def test_an_unsupported_query_fails_the_run_naming_query_and_test():
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/mongo/shadow_example_unsupported.py"],
        cwd=ROOT,
        env={**_sql_environment(), "MONGO_SHADOW": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "cannot run on MongoDB" in output
    assert "UPPER(last_name)" in output
    assert "test_uses_extra_which_mongodb_cannot_run" in output


def test_the_same_run_passes_with_shadow_compilation_off():
    """Control: the example query works on SQL; only the MongoDB pass rejects it."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "tests/mongo/shadow_example_unsupported.py"],
        cwd=ROOT,
        env={**_sql_environment(), "MONGO_SHADOW": "0"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr

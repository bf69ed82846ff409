"""Where a test's expectation differs on MongoDB, and why.

The suite expects the same behaviour on SQLite, PostgreSQL and MongoDB. A test
departs from that only through one of the behaviours below, each named for what
MongoDB (through django-mongodb-backend) really does differently, so the
complete list of differences is this file (docs/mongodb.md repeats it):

    @NO_ROLLBACK.skip
    def test_...: ...                                  # only SQL databases can show this

    assert row_exists is NO_ROLLBACK.pick(sql=False, mongodb=True)

`statements()` reads captured queries the same way on every backend (SQL
statements or MongoDB operations), so counts of reads and writes need no
per-backend numbers at all.
"""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import dataclass
from unittest import mock

import pytest
from django.conf import settings

ON_MONGODB = settings.DATABASES["default"]["ENGINE"] == "django_mongodb_backend"


@dataclass(frozen=True)
class MongoDiffers:
    """One real difference of MongoDB, and the ways a test can face it."""

    behaviour: str

    def __post_init__(self):
        if not self.behaviour.strip():
            raise ValueError("Name the MongoDB behaviour the expectation stands for")

    @property
    def skip(self) -> pytest.MarkDecorator:
        """Skip on MongoDB a test of something that only exists on SQL databases."""
        return pytest.mark.skipif(ON_MONGODB, reason=f"MongoDB: {self.behaviour}")

    def pick(self, *, sql, mongodb):
        """The expected value on this backend."""
        return mongodb if ON_MONGODB else sql


def mongo_differs(behaviour: str) -> MongoDiffers:
    return MongoDiffers(behaviour)


#: Django's transaction.atomic() opens no transaction on MongoDB (the backend's
#: own atomic() exists, but Django's code and set_rollback() do not use it).
NO_ROLLBACK = mongo_differs(
    "Django's transaction.atomic() opens no transaction, so an exception or set_rollback() "
    "undoes nothing already written"
)

#: The same cause seen from on_commit: with no transaction open, callbacks run
#: at once. pytest-django runs each SQL test in a transaction, so there they
#: wait for the test to end (or for django_capture_on_commit_callbacks);
#: production on SQL runs them at once too when no atomic() block is open.
ON_COMMIT_AT_ONCE = mongo_differs(
    "transaction.on_commit() runs the callback at once: no transaction is open, in tests or in production"
)


@contextmanager
def tasks_left_queued():
    """Run the block with the tasks it sends on commit never sent, on every backend.

    On SQL a test's own transaction never commits, so those tasks wait anyway; on MongoDB they would run at
    once (ON_COMMIT_AT_ONCE). A test that plays the worker itself (two workers, a mail server hanging up, a
    commit hook lost in a crash) starts from the same state everywhere: the work done, its tasks not run.
    """
    with mock.patch("eventsaas.tasks.send_task"):
        yield


#: Concurrent writers: where SQL makes the second writer wait for the first
#: transaction, MongoDB aborts the second transaction at once.
WRITE_CONFLICT = mongo_differs(
    "a transaction that writes a document or unique key another open transaction has written fails at once "
    "with WriteConflict (code 112, TransientTransactionError); SQL waits for the other transaction"
)

#: Check constraints are SQL-only second guards: the rule itself lives in the
#: model's clean() and in the services' conditional writes.
NO_CHECK_CONSTRAINTS = mongo_differs(
    "CheckConstraint is not enforced (models.W027): clean() and the services hold the rule, not the database"
)

#: A connection is a MongoClient, a pool of its own that pymongo checks and renews: close() keeps it.
CLIENT_KEPT = mongo_differs(
    "connection.close() keeps the MongoClient (a pool that pymongo checks and renews itself): a process opens "
    "one client and uses it for every request and task"
)

#: There is no SQL to run: the backend's cursor() is a stub.
NO_SQL = mongo_differs("no SQL at all: connection.cursor() is a stub, so raw SQL cannot even be tried")

_MONGO_OPERATION = re.compile(r"^db\.(?P<collection>\w+)\.(?P<method>\w+)\(")
_MONGO_VERBS = {
    "aggregate": "SELECT",
    "find": "SELECT",
    "count_documents": "SELECT",
    "insert_many": "INSERT",
    "insert_one": "INSERT",
    "update_many": "UPDATE",
    "update_one": "UPDATE",
    "delete_many": "DELETE",
    "delete_one": "DELETE",
}


def statement_verb(query: str) -> str:
    """SELECT, INSERT, UPDATE or DELETE for one captured SQL statement or MongoDB operation ("" for others).

    django-mongodb-backend logs operations as `db.<collection>.<method>(...)`
    and transactions as `session.start_transaction()` / `commit_transaction()`.
    """
    if match := _MONGO_OPERATION.match(query):
        return _MONGO_VERBS.get(match["method"], "")
    verb = query.lstrip().split(" ", 1)[0].upper()
    return verb if verb in {"SELECT", "INSERT", "UPDATE", "DELETE"} else ""


_SQL_MAIN_TABLE = re.compile(r'^\s*(?:SELECT .*? FROM|INSERT INTO|UPDATE|DELETE FROM) "(?P<table>\w+)"', re.DOTALL)


def statements(captured, verb: str, table: str = "", *, main_table: str = "") -> list[str]:
    """Captured queries that are `verb` on `table` (any table when empty), on every backend.

    `table` matches any table a SQL statement names (a join's too); `main_table` only the
    one it reads from or writes to (a MongoDB operation names just its collection).
    `captured` is a CaptureQueriesContext or its `captured_queries`.
    """
    queries = getattr(captured, "captured_queries", captured)
    return [
        query["sql"]
        for query in queries
        if statement_verb(query["sql"]) == verb
        and table in _statement_target(query["sql"], main_only=False)
        and (not main_table or _statement_target(query["sql"], main_only=True) == main_table)
    ]


def _statement_target(query: str, *, main_only: bool) -> str:
    """A MongoDB operation's collection; for SQL, the table it reads or writes (main_only) or its whole text."""
    if match := _MONGO_OPERATION.match(query):
        return match["collection"]
    if not main_only:
        return query
    sql_main = _SQL_MAIN_TABLE.match(query)
    return sql_main["table"] if sql_main else ""

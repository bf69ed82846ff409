"""Between tests on MongoDB, empty only the collections the test wrote to.

MongoDB has no transaction Django's TestCase can roll back, so after every test
Django flushes: for each of ~45 collections it reads the collection's options
and deletes every document, then post_migrate recreates every content type and
permission. Against the wire-protocol test server that is about 150 round trips,
most of a second per test, a quarter of the MongoDB pass.

Here a pymongo command listener (registered before any client exists) records
the collections that received an insert, update or findAndModify, and the
teardown empties just those. Content types and permissions are kept: they are
what post_migrate would recreate. A write this process cannot see (a Celery
worker or a server in another process) is caught by a one-command check: the
database must hold as many documents as after a full flush, or the full flush
runs. So the database every test starts from is the same as with Django's own
teardown.
"""

from __future__ import annotations

import threading

from django.db import connection
from django.test import TransactionTestCase
from pymongo import monitoring

_WRITE_COMMANDS = frozenset({"insert", "update", "findAndModify"})
# Filled by post_migrate after a full flush; kept between tests.
_KEPT = frozenset({"django_content_type", "auth_permission"})
# Not a model's table, so Django's flush leaves it too. A migration test writes to it (stepping back and
# forward); emptying it made the next migration test on that worker find nothing applied.
_MIGRATION_RECORDS = "django_migrations"


class _WrittenCollections(monitoring.CommandListener):
    def __init__(self):
        self._lock = threading.Lock()
        self._names: set[str] = set()

    def started(self, event):
        if event.command_name in _WRITE_COMMANDS:
            name = event.command.get(event.command_name)
            if isinstance(name, str):
                with self._lock:
                    self._names.add(name)

    def succeeded(self, event):
        pass

    def failed(self, event):
        pass

    def take(self) -> set[str]:
        with self._lock:
            names, self._names = self._names, set()
        return names


def _documents() -> int:
    return int(connection.database.command("dbstats")["objects"])


def install() -> None:
    """Replace TransactionTestCase's teardown flush for this test process (MongoDB only)."""
    written = _WrittenCollections()
    monitoring.register(written)
    full_flush = TransactionTestCase._fixture_teardown
    after_full_flush: dict[str, int] = {}

    def flush_everything(case):
        full_flush(case)
        written.take()  # post_migrate's content types: not a test's writes
        after_full_flush["documents"] = _documents()

    def _fixture_teardown(case):
        names = written.take()
        if "documents" not in after_full_flush or names & _KEPT or case._databases_names() != ["default"]:
            flush_everything(case)
            return
        for name in sorted(names):
            if not name.startswith("system.") and name != _MIGRATION_RECORDS:
                connection.database[name].delete_many({})
        if _documents() != after_full_flush["documents"]:
            flush_everything(case)

    TransactionTestCase._fixture_teardown = _fixture_teardown

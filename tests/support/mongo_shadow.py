"""Shadow compilation: every ORM query the test suite runs is also compiled for MongoDB.

While the suite runs on SQLite (or PostgreSQL), each query that reaches a SQL
compiler is cloned and handed to django-mongodb-backend's compiler, which
builds the MongoDB pipeline / update / insert documents without sending them
(the few methods that would talk to a server are replaced by stubs). A query
the backend cannot express (NotSupportedError, NotImplementedError, ...) is
recorded with the SQL it ran as, and the test that made it fails.

Raw SQL has no MongoDB form at all: a SELECT/INSERT/UPDATE/DELETE that reaches
the database without going through a compiler during a test is recorded too.

Nothing here connects to MongoDB; see docs/mongodb.md for what this proves and
what it does not.
"""

from __future__ import annotations

import re
import threading
import traceback
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from unittest import mock

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
from django.db.models.sql import compiler as sql
from django.db.utils import ConnectionHandler

SHADOW_ALIAS = "mongodb_shadow"
_DATA_STATEMENT = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|WITH|REPLACE)\b", re.I)


@dataclass
class ShadowFailure:
    kind: str  # "compile" or "raw-sql"
    sql: str
    error: str
    stack: str

    def describe(self) -> str:
        return f"[{self.kind}] {self.error}\n    query: {self.sql}\n    made at:\n{self.stack}"


class _State(threading.local):
    depth = 0  # > 0 while a SQL compiler runs (its own SQL is not "raw")
    shadowing = False  # True while the MongoDB compiler runs (no recursion)


_state = _State()
failures: list[ShadowFailure] = []
_connection = None


def shadow_connection():
    """A django-mongodb-backend connection that is never opened."""
    global _connection
    if _connection is None:
        config = {"ENGINE": "django_mongodb_backend", "HOST": "mongodb://127.0.0.1:9/", "NAME": "shadow"}
        # ConnectionHandler insists on a "default" alias; only SHADOW_ALIAS is used.
        handler = ConnectionHandler({"default": config, SHADOW_ALIAS: config})
        _connection = handler[SHADOW_ALIAS]
    return _connection


class _EmptyCursor:
    def __iter__(self):
        return iter(())

    def next(self):
        raise StopIteration


def _no_io_patches():
    """Replace the backend's I/O with stubs that still build everything they would send.

    Installed once for the whole run and active only in a thread that is shadow
    compiling (`_state` is per thread); any other caller gets the real method.
    Patching around each query instead would let threads undo each other's patches.
    """
    from django_mongodb_backend import compiler as mongo_compiler
    from django_mongodb_backend.query import MongoQuery

    def get_cursor(self):
        self.get_pipeline()
        return _EmptyCursor()

    def insert(self, docs, returning_fields=None):
        return [(None,)] * len(docs) if returning_fields else []

    stubs = [
        (MongoQuery, "get_cursor", get_cursor),
        (MongoQuery, "delete", lambda self: 0),
        (mongo_compiler.SQLInsertCompiler, "insert", insert),
        (mongo_compiler.SQLUpdateCompiler, "update", lambda self, criteria, pipeline: 0),
    ]
    return [mock.patch.object(cls, name, _while_shadowing(getattr(cls, name), stub)) for cls, name, stub in stubs]


def _while_shadowing(original, stub):
    def method(self, *args, **kwargs):
        return (stub if _state.shadowing else original)(self, *args, **kwargs)

    return method


def _user_stack() -> str:
    frames = [
        f
        for f in traceback.extract_stack()[:-3]
        if "/site-packages/" not in f.filename and "mongo_shadow" not in f.filename and "<frozen" not in f.filename
    ]
    return "".join(traceback.format_list(frames[-6:]))


def _sql_of(compiler) -> str:
    try:
        text, params = compiler.as_sql()
        return f"{text} -- params {params!r}"[:2000]
    except Exception as exc:  # noqa: BLE001 - only for the report
        return f"<{compiler.query.model.__name__ if compiler.query.model else '?'} query: {exc!r}>"


def compile_for_mongodb(sql_compiler, method: str, args, kwargs) -> None:
    """Compile the query behind `sql_compiler` with the MongoDB backend; record any failure."""
    if _state.shadowing:
        return
    _state.shadowing = True
    try:
        # Registered per thread under its own alias so the backend's compilers can
        # look it up by name for subqueries (connections.all() never lists it).
        connections[SHADOW_ALIAS] = shadow_connection()
        query = sql_compiler.query.clone()
        mongo = query.get_compiler(using=SHADOW_ALIAS, elide_empty=sql_compiler.elide_empty)
        getattr(mongo, method)(*args, **kwargs)
    except (EmptyResultSet, FullResultSet):
        pass
    except Exception as exc:  # noqa: BLE001 - every failure is the finding
        failures.append(ShadowFailure("compile", _sql_of(sql_compiler), f"{type(exc).__name__}: {exc}", _user_stack()))
    finally:
        _state.shadowing = False


def _wrap(cls):
    original = cls.__dict__["execute_sql"]

    def execute_sql(self, *args, **kwargs):
        # Only the outermost compiler is shadowed: queries a SQL compiler runs
        # on its own behalf (e.g. an UPDATE's pre-select) are its business.
        if self.connection.vendor != "mongodb" and _state.depth == 0:
            compile_for_mongodb(self, "execute_sql", args, kwargs)
        _state.depth += 1
        try:
            return original(self, *args, **kwargs)
        finally:
            _state.depth -= 1

    execute_sql.__wrapped__ = original
    return mock.patch.object(cls, "execute_sql", execute_sql)


_COMPILERS = [sql.SQLCompiler, sql.SQLInsertCompiler, sql.SQLUpdateCompiler, sql.SQLDeleteCompiler]


@contextmanager
def installed():
    """Shadow-compile every query for as long as the block runs."""
    with ExitStack() as stack:
        for patch in _no_io_patches():
            stack.enter_context(patch)
        for cls in _COMPILERS:
            if "execute_sql" in cls.__dict__:
                stack.enter_context(_wrap(cls))
        yield


def raw_sql_guard(execute, sql_text, params, many, context):
    """A connection execute_wrapper: data statements outside any compiler are raw SQL."""
    if _state.depth == 0 and not _state.shadowing and _DATA_STATEMENT.match(sql_text or ""):
        failures.append(ShadowFailure("raw-sql", str(sql_text)[:2000], "raw SQL has no MongoDB form", _user_stack()))
    return execute(sql_text, params, many, context)


def take_failures() -> list[ShadowFailure]:
    taken = list(failures)
    failures.clear()
    return taken


def report(taken: list[ShadowFailure]) -> str:
    return (
        f"{len(taken)} quer{'y' if len(taken) == 1 else 'ies'} cannot run on MongoDB "
        "(shadow compilation with django-mongodb-backend):\n\n" + "\n\n".join(f.describe() for f in taken)
    )

"""Database helpers that behave the same on SQLite, PostgreSQL and MongoDB."""

import contextlib
import functools
import random
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

from django.db import DEFAULT_DB_ALIAS, IntegrityError, connections, transaction
from django.db.models import Model

T = TypeVar("T")

#: MongoDB's code for a transaction that touched a document another one is writing.
WRITE_CONFLICT = 112


def is_mongodb(using: str = DEFAULT_DB_ALIAS) -> bool:
    return connections[using].vendor == "mongodb"


def atomic(using: str = DEFAULT_DB_ALIAS):
    """A transaction for tidiness, never for correctness.

    On SQL databases this is Django's atomic(). On MongoDB, Django's atomic() is
    a no-op, so this uses the backend's own session transaction (replica sets
    only), which also works inside a Django `transaction.atomic()` block.
    Invariants never depend on it: they hold through single-document
    conditional updates and unique indexes.

    On MongoDB a transaction that writes a document (or unique key) another
    open transaction has written fails at once with WriteConflict, where SQL
    would wait: callers that race catch it with `is_transient_transaction_error`.
    A single-row insert that only needs a savepoint on PostgreSQL uses
    `transaction.atomic()` instead: outside a transaction MongoDB waits for the
    other writer and then answers with the duplicate key, like SQL.
    """
    if is_mongodb(using):
        return _mongodb_atomic_class()(using)
    return transaction.atomic(using=using)


def insert_once(row: Model, *, using: str = DEFAULT_DB_ALIAS) -> bool:
    """Insert `row`; False, with nothing written, when a unique constraint says it is there already.

    "Store once" without a read first (docs/architecture.md, DESIGN's exactly-once webhooks): the
    unique index decides, so most calls are one INSERT where get_or_create() would read, open a
    transaction, insert and commit. Outside a transaction the insert stands alone (autocommit; on
    MongoDB it waits for another writer of the same key, then reports the duplicate); inside one it
    takes a savepoint, so a duplicate leaves the caller's transaction usable.
    """
    try:
        if connections[using].in_atomic_block:
            with unique_insert(using):
                row.save(force_insert=True, using=using)
        else:
            row.save(force_insert=True, using=using)
    except IntegrityError:
        return False
    return True


#: True inside run_optimistically()'s first attempt: unique_insert() takes no savepoint.
_optimistic: ContextVar[bool] = ContextVar("optimistic_transaction", default=False)


class _RunAgainWithSavepoints(Exception):
    """A unique constraint refused an insert in an optimistic attempt: its transaction is lost."""


@contextlib.contextmanager
def unique_insert(using: str = DEFAULT_DB_ALIAS, *, all_or_none: bool = False) -> Iterator[None]:
    """Wrap an insert that a unique constraint may refuse, inside a transaction; the IntegrityError reaches
    the caller, whose transaction stays usable (a savepoint on SQL; nothing on MongoDB, where a plain insert
    waits for a racing one and then reports the duplicate). `all_or_none`: several rows, none stored if one is
    refused (a MongoDB transaction: eventsaas.db.atomic).

    Inside run_optimistically()'s first attempt, no savepoint: a refusal ends that attempt instead, and the
    whole block runs again with savepoints. Most inserts are not refused, and a savepoint costs two statements.
    """
    if _optimistic.get():
        try:
            yield
        except IntegrityError as exc:
            raise _RunAgainWithSavepoints from exc
        return
    with atomic(using) if all_or_none else transaction.atomic(using=using):
        yield


def run_optimistically(block: Callable[[], T], *, using: str = DEFAULT_DB_ALIAS) -> T:
    """`block()` in one transaction whose unique_insert()s take no savepoint; if a unique constraint refuses
    one of them (rare: another writer got there first), the transaction is rolled back, with its on_commit
    callbacks, and `block()` runs again in a new one, with savepoints, to take its usual way around the refusal.
    Inside a caller's transaction the attempt is a savepoint of it, rolled back the same way.

    For blocks that are safe to run twice and read what they need afresh. On SQL only: MongoDB has no
    savepoints to spare and Django's atomic() does not roll it back, so there `block()` runs once, as it is.
    """
    if is_mongodb(using) or not connections[using].features.uses_savepoints:
        with transaction.atomic(using=using):
            return block()
    token = _optimistic.set(True)
    try:
        with transaction.atomic(using=using):
            return block()
    except _RunAgainWithSavepoints:
        pass
    finally:
        _optimistic.reset(token)
    with transaction.atomic(using=using):
        return block()


def run_in_transaction(block: Callable[..., T], *, using: str = DEFAULT_DB_ALIAS, attempts: int = 5) -> T:
    """`block(attempt=n)` inside atomic(), run again while MongoDB aborts the transaction as transient.

    For blocks that are safe to run twice (idempotent writes): MongoDB's answer
    to a WriteConflict is to run the whole transaction again, which SQL
    databases never ask for. Waits a random 0-20, 0-40, 0-80... ms between
    attempts, so that the writers that collided do not collide again; the last
    error is raised.
    """
    for attempt in range(1, attempts + 1):
        try:
            with atomic(using):
                return block(attempt=attempt)
        except Exception as exc:  # the commit raises pymongo's own errors, not DatabaseError
            if attempt == attempts or not is_transient_transaction_error(exc):
                raise
            time.sleep(random.uniform(0, 0.01 * 2**attempt))
    raise AssertionError("unreachable")


def is_transient_transaction_error(exc: BaseException | None) -> bool:
    """True for MongoDB's "this transaction lost a race; run it again" errors.

    That is WriteConflict (code 112) or any error labelled
    TransientTransactionError. django-mongodb-backend raises them as a
    DatabaseError caused by pymongo's OperationFailure (or lets pymongo's error
    through, e.g. from a commit), so the chain of causes is searched. SQL
    databases never raise them.
    """
    while exc is not None:
        has_label = getattr(exc, "has_error_label", None)
        if callable(has_label) and has_label("TransientTransactionError"):
            return True
        if getattr(exc, "code", None) == WRITE_CONFLICT and type(exc).__module__.startswith("pymongo"):
            return True
        exc = exc.__cause__
    return False


@functools.cache
def _mongodb_atomic_class():
    from django_mongodb_backend.transaction import Atomic

    class MongoAtomic(Atomic):
        """The backend's atomic(), usable inside Django's atomic() too."""

        def __exit__(self, exc_type, exc_value, traceback):
            connection = transaction.get_connection(self.using)
            outermost = not connection.nested_atomics
            try:
                if not (outermost and connection.in_atomic_block):
                    return super().__exit__(exc_type, exc_value, traceback)
                # The outermost MongoDB transaction, inside Django's atomic(): that opens no
                # transaction on MongoDB but flags the connection as in a block, and the
                # backend's commit then refuses to run the on_commit callbacks
                # (TransactionManagementError), which nothing else would run. No SQL
                # transaction is pending, so that check does not apply to this commit.
                connection.validate_no_atomic_block = _no_check
                try:
                    return super().__exit__(exc_type, exc_value, traceback)
                finally:
                    del connection.validate_no_atomic_block
            except BaseException:
                if outermost and connection.session is not None:
                    _end_failed_transaction(connection)
                raise

    return MongoAtomic


def _no_check():
    return None


def _end_failed_transaction(connection) -> None:
    """The commit (or abort) itself failed: end the session anyway.

    pymongo's errors from `commit_transaction()` are not the DatabaseError the
    backend's atomic() catches, and after a failed commit pymongo refuses to
    abort; left alone, the dead session would stay on the connection and every
    later query would run inside it. Ending it aborts whatever is still open.
    """
    connection.run_on_commit = []
    session, connection.session = connection.session, None
    with contextlib.suppress(Exception):
        session.end_session()

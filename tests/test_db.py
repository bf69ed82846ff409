"""eventsaas.db: one transaction helper and one transient-error test for SQLite, PostgreSQL and MongoDB."""

import pytest
from django.db import DatabaseError, IntegrityError, OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext
from pymongo.errors import OperationFailure

from eventsaas import db
from tenants.models import Tenant
from tests.support.backends import NO_ROLLBACK, ON_MONGODB, WRITE_CONFLICT

pytestmark = pytest.mark.django_db(transaction=True)  # the transactions under test are the outermost ones


def _write_conflict() -> OperationFailure:
    return OperationFailure(
        "WriteConflict error: this operation conflicted with another operation.",
        code=112,
        details={"code": 112, "codeName": "WriteConflict", "errorLabels": ["TransientTransactionError"]},
    )


def test_eventsaas_atomic_commits_and_runs_on_commit_callbacks_once():
    calls = []
    with db.atomic():
        Tenant.objects.create(name="Committed", slug="committed")
        transaction.on_commit(lambda: calls.append("committed"))
        assert calls == []

    assert calls == ["committed"]
    assert Tenant.objects.filter(slug="committed").exists()


def test_eventsaas_atomic_rolls_back_on_every_backend():
    """On MongoDB it is the backend's session transaction, so this holds there too."""
    calls = []
    with pytest.raises(RuntimeError):
        with db.atomic():
            Tenant.objects.create(name="Undone", slug="undone")
            transaction.on_commit(lambda: calls.append("never"))
            raise RuntimeError("undo")

    assert not Tenant.objects.filter(slug="undone").exists()
    assert calls == []


def test_eventsaas_atomic_nests_inside_djangos_atomic():
    """Services wrap eventsaas.db.atomic() blocks; views and admin actions may wrap them in Django's atomic().

    On MongoDB Django's atomic() opens nothing but marks the connection as in a
    block, which made the inner transaction's commit raise TransactionManagementError.
    """
    calls = []
    with transaction.atomic():
        with db.atomic():
            Tenant.objects.create(name="Nested", slug="nested")
            transaction.on_commit(lambda: calls.append("inner"))
        Tenant.objects.create(name="Outer", slug="outer")

    assert calls == ["inner"]
    assert set(Tenant.objects.values_list("slug", flat=True)) == {"nested", "outer"}


def test_djangos_atomic_nests_inside_eventsaas_atomic():
    with db.atomic():
        with transaction.atomic():
            Tenant.objects.create(name="Inner", slug="inner")
        with db.atomic():
            Tenant.objects.create(name="Twice", slug="twice")

    assert set(Tenant.objects.values_list("slug", flat=True)) == {"inner", "twice"}


def test_djangos_atomic_rolls_back_only_on_sql_databases():
    """Why correctness never depends on it (shared/DESIGN.md): on MongoDB the row stays."""
    with pytest.raises(RuntimeError):
        with transaction.atomic():
            Tenant.objects.create(name="Kept?", slug="kept")
            raise RuntimeError("undo")

    assert Tenant.objects.filter(slug="kept").exists() is NO_ROLLBACK.pick(sql=False, mongodb=True)


@pytest.mark.parametrize(
    ("error", "transient"),
    [
        pytest.param(_write_conflict(), True, id="pymongo-write-conflict"),
        pytest.param(OperationFailure("aborted", code=251, details={"errorLabels": ["TransientTransactionError"]}),
                     True, id="pymongo-transient-label"),
        pytest.param(OperationFailure("E11000 duplicate key error", code=11000), False, id="pymongo-duplicate-key"),
        pytest.param(IntegrityError("UNIQUE constraint failed"), False, id="sql-integrity-error"),
        pytest.param(DatabaseError("database is locked"), False, id="sql-database-error"),
        pytest.param(ValueError(112), False, id="not-a-database-error"),
    ],
)  # fmt: skip
def test_transient_transaction_errors_are_recognised(error, transient):
    assert db.is_transient_transaction_error(error) is transient


def test_the_backends_wrapping_of_a_write_conflict_is_recognised():
    """django-mongodb-backend raises `DatabaseError from OperationFailure`."""
    try:
        try:
            raise _write_conflict()
        except OperationFailure as exc:
            raise DatabaseError from exc
    except DatabaseError as wrapped:
        assert db.is_transient_transaction_error(wrapped)


def test_run_in_transaction_runs_a_block_again_after_a_transient_abort(monkeypatch):
    monkeypatch.setattr(db.time, "sleep", lambda seconds: None)
    attempts = []

    def block(*, attempt):
        attempts.append(attempt)
        Tenant.objects.create(name=f"Try {attempt}", slug=f"try-{attempt}")
        if attempt == 1:
            raise DatabaseError() from _write_conflict()
        return "done"

    assert db.run_in_transaction(block) == "done"
    assert attempts == [1, 2]
    # The first attempt's write went with its transaction on SQL and on MongoDB alike.
    assert list(Tenant.objects.values_list("slug", flat=True)) == ["try-2"]


def test_run_in_transaction_raises_other_errors_at_once_and_gives_up_after_its_attempts(monkeypatch):
    monkeypatch.setattr(db.time, "sleep", lambda seconds: None)
    attempts = []

    def failing(error):
        def block(*, attempt):
            attempts.append(attempt)
            raise error

        return block

    with pytest.raises(IntegrityError):
        db.run_in_transaction(failing(IntegrityError("duplicate")))
    assert attempts == [1]

    attempts.clear()
    with pytest.raises(OperationFailure):
        db.run_in_transaction(failing(_write_conflict()), attempts=3)
    assert attempts == [1, 2, 3]


def test_a_transaction_whose_commit_fails_raises_and_leaves_the_connection_usable(monkeypatch):
    """MongoDB can refuse the commit itself (a WriteConflict found at commit); SQL can too (a lost connection)."""
    if ON_MONGODB:
        from pymongo.client_session import ClientSession

        def refuse(session):
            raise _write_conflict()

        monkeypatch.setattr(ClientSession, "commit_transaction", refuse)
    else:

        def refuse():
            raise OperationalError("the commit failed")

        monkeypatch.setattr(connection, "commit", refuse)

    with pytest.raises((DatabaseError, OperationFailure)) as raised:
        with db.atomic():
            Tenant.objects.create(name="Never", slug="never")
    monkeypatch.undo()

    assert db.is_transient_transaction_error(raised.value) is WRITE_CONFLICT.pick(sql=False, mongodb=True)
    assert not Tenant.objects.filter(slug="never").exists()
    with db.atomic():
        Tenant.objects.create(name="After", slug="after")
    assert list(Tenant.objects.values_list("slug", flat=True)) == ["after"]


def test_insert_once_stores_a_row_once_and_reports_the_duplicate_outside_a_transaction():
    assert db.insert_once(Tenant(name="First", slug="once")) is True
    assert db.insert_once(Tenant(name="Second", slug="once")) is False

    assert list(Tenant.objects.filter(slug="once").values_list("name", flat=True)) == ["First"]


def test_insert_once_inside_a_transaction_leaves_it_usable_after_a_duplicate():
    """The duplicate costs a savepoint, not the caller's transaction: its other writes still commit."""
    Tenant.objects.create(name="Existing", slug="taken")
    with transaction.atomic():
        assert db.insert_once(Tenant(name="Duplicate", slug="taken")) is False
        Tenant.objects.create(name="Later", slug="later")

    assert set(Tenant.objects.values_list("slug", flat=True)) == {"taken", "later"}
    assert Tenant.objects.get(slug="taken").name == "Existing"


def test_run_optimistically_runs_a_block_whose_insert_is_refused_again_with_savepoints():
    """The first attempt's writes and on_commit callbacks go with it (SQL); the second takes the usual way."""
    Tenant.objects.create(name="Existing", slug="taken")
    attempts, committed = [], []

    def block():
        attempts.append(db._optimistic.get())
        Tenant.objects.create(name="Before", slug="before")  # would be refused if the first attempt's stayed
        transaction.on_commit(lambda: committed.append(len(attempts)))
        stored = db.insert_once(Tenant(name="Duplicate", slug="taken"))
        Tenant.objects.create(name="After", slug="after")
        return stored

    assert db.run_optimistically(block) is False

    # On MongoDB there is nothing to roll back, so the block runs once, with its usual (free) guards.
    assert attempts == NO_ROLLBACK.pick(sql=[True, False], mongodb=[False])
    assert committed == [len(attempts)]
    assert sorted(Tenant.objects.values_list("slug", flat=True)) == ["after", "before", "taken"]
    assert Tenant.objects.get(slug="taken").name == "Existing"


@NO_ROLLBACK.skip
def test_run_optimistically_takes_no_savepoint_when_nothing_is_refused():
    with CaptureQueriesContext(connection) as queries:
        assert db.run_optimistically(lambda: db.insert_once(Tenant(name="New", slug="new"))) is True

    assert not [q["sql"] for q in queries if "SAVEPOINT" in q["sql"].upper()]
    assert Tenant.objects.filter(slug="new").exists()


def test_run_optimistically_inside_a_transaction_rolls_back_only_its_attempt():
    Tenant.objects.create(name="Existing", slug="taken")
    with transaction.atomic():
        Tenant.objects.create(name="Outer", slug="outer")
        db.run_optimistically(
            lambda: (
                Tenant.objects.create(name="Inner", slug="inner"),
                db.insert_once(Tenant(name="Dup", slug="taken")),
            )
        )

    assert sorted(Tenant.objects.values_list("slug", flat=True)) == ["inner", "outer", "taken"]


def test_an_error_that_is_not_a_refusal_ends_run_optimistically_at_once():
    attempts = []

    def block():
        attempts.append(1)
        raise ValueError("not a refusal")

    with pytest.raises(ValueError):
        db.run_optimistically(block)
    assert attempts == [1]
    assert db._optimistic.get() is False

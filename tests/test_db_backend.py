"""The PostgreSQL backend's health check (eventsaas/db_backends/postgresql): no round trip for a connection in
good order, Django's `SELECT 1` for anything else, and a connection the server ended never taken as usable.

Each test opens a connection of its own (a second `DatabaseWrapper` for the test database), so ending it on
the server leaves the test's own connection alone.
"""

import select
from unittest import mock

import pytest
from django.db import connection, connections
from django.db.backends.postgresql import base as django_postgresql

from eventsaas.db_backends.postgresql import base as our_postgresql
from tests.support.waiting import wait_for

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL backend's own check"),
]


def _another_connection():
    wrapper = connections.create_connection("default")
    wrapper.ensure_connection()
    return wrapper


@pytest.fixture
def kept():
    """A connection as a web process keeps it between requests (CONN_MAX_AGE), open and idle."""
    wrapper = _another_connection()
    yield wrapper
    wrapper.close()


@pytest.fixture
def server_side():
    """A connection in autocommit, outside the test's transaction, for what the server does to the kept one."""
    wrapper = _another_connection()
    yield wrapper
    wrapper.close()


def _server_ends(kept, server_side) -> None:
    """What a database restart or failover does to a kept connection: the server ends its session."""
    with server_side.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [kept.connection.info.backend_pid])
    _wait_for_input(kept)


def _wait_for_input(wrapper) -> None:
    wait_for(
        lambda: our_postgresql._has_input(wrapper.connection.pgconn.socket),
        timeout=5,
        interval=0.01,
        what="input on the kept connection's socket",
    )


def test_the_settings_use_this_backend():
    assert isinstance(connections["default"], our_postgresql.DatabaseWrapper)


def test_a_connection_in_good_order_is_usable_without_asking_the_server(kept):
    with mock.patch.object(django_postgresql.DatabaseWrapper, "is_usable", side_effect=AssertionError("asked")):
        assert kept.is_usable() is True


def test_a_connection_the_server_ended_is_not_usable_and_the_next_request_reconnects(kept, server_side):
    old_pid = kept.connection.info.backend_pid
    _server_ends(kept, server_side)

    assert kept.is_usable() is False
    # What Django does before a request's first query: close it, so that query opens a new one.
    kept.health_check_enabled, kept.health_check_done = True, False
    kept.close_if_health_check_failed()
    assert kept.connection is None
    with kept.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone()[0] != old_pid


def test_anything_unread_on_the_socket_is_left_to_djangos_select_1(kept, server_side):
    """A notification is not a goodbye: the connection is still usable, but only the server can say so."""
    with kept.cursor() as cursor:
        cursor.execute("LISTEN eventsaas_health_check_test")
    with server_side.cursor() as cursor:
        cursor.execute("NOTIFY eventsaas_health_check_test")
    _wait_for_input(kept)

    with mock.patch.object(django_postgresql.DatabaseWrapper, "is_usable", autospec=True, return_value=True) as asked:
        assert kept.is_usable() is True
    asked.assert_called_once_with(kept)


def test_a_connection_inside_a_transaction_is_left_to_djangos_select_1(kept):
    kept.set_autocommit(False)
    with kept.cursor() as cursor:
        cursor.execute("SELECT 1")  # the transaction is open now
    with mock.patch.object(django_postgresql.DatabaseWrapper, "is_usable", autospec=True, return_value=True) as asked:
        assert kept.is_usable() is True
    asked.assert_called_once_with(kept)
    kept.rollback()
    kept.set_autocommit(True)


def test_a_closed_connection_is_not_usable(kept):
    kept.connection.close()
    assert kept.is_usable() is False


def test_without_poll_the_look_at_the_socket_is_select(kept, server_side, monkeypatch):
    """Windows has no poll(): the same answers through select()."""
    monkeypatch.delattr(select, "poll")
    with mock.patch.object(django_postgresql.DatabaseWrapper, "is_usable", side_effect=AssertionError("asked")):
        assert kept.is_usable() is True
    _server_ends(kept, server_side)

    assert kept.is_usable() is False

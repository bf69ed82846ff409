"""`manage.py db_move` (eventsaas/db_move.py) from the embedded default into the server databases.

The source is the test database (SQLite) holding the demo data and a paid ticket; the targets are a
fresh PostgreSQL database and a database on the MongoDB wire-protocol test server (tests/support/
mongo_server.py, from .venv-mongo, which bin/test-mongo creates). After the move, a separate process
on the target (tests/support/db_move_probe.py) does what users do: a guest logs in with their old code,
the organizer with the old password, the old ticket checks in, event_stats adds up the same.
"""

import io
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.auth.models import Group, Permission
from django.contrib.contenttypes.models import ContentType
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import CommandError, call_command
from django.db import connection

from billing import services as billing_services
from billing.models import Order, Ticket
from billing.services import CheckoutItem, CheckoutRequest
from events.models import Event
from eventsaas.db_move import MoveError, database_move
from guests.models import Guest
from guests.selectors import event_stats
from tenants.models import User
from tests.system.conftest import ROOT, require

pytestmark = [pytest.mark.dbmove, pytest.mark.django_db]

POSTGRES_URL = os.environ.get("DB_MOVE_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/eventsaas_dbmove")


@pytest.fixture(autouse=True)
def _from_the_embedded_default():
    if connection.vendor != "sqlite":
        pytest.skip("the move tests start from the embedded default (SQLite)")


@pytest.fixture
def postgres_target():
    base, _, name = POSTGRES_URL.rpartition("/")
    name = f"{name}_{uuid.uuid4().hex[:8]}"
    try:
        admin = psycopg.connect(f"{base}/postgres", autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        require("DB_MOVE", f"PostgreSQL does not answer at {base}: {exc}")
    with admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield f"{base}/{name}"
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="module")
def mongo_server():
    python = ROOT / ".venv-mongo" / "bin" / "python"
    if not python.exists():
        require("DB_MOVE", "no .venv-mongo for the MongoDB test server (bin/test-mongo creates it)")
    with tempfile.TemporaryDirectory(prefix="eventsaas-move-mongo-") as work:
        ready = Path(work) / "port"
        log = open(Path(work) / "server.log", "wb")  # noqa: SIM115 - closed below
        server = subprocess.Popen(
            [python, ROOT / "tests/support/mongo_server.py", "--data-dir", f"{work}/data", "--ready-file", ready],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            deadline = time.monotonic() + 60
            while not (ready.exists() and ready.read_text().strip()):
                assert server.poll() is None and time.monotonic() < deadline, "the MongoDB test server did not start"
                time.sleep(0.1)
            yield f"mongodb://127.0.0.1:{ready.read_text().strip()}"
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


@pytest.fixture(params=["postgresql", "mongodb"])
def target(request):
    if request.param == "postgresql":
        return request.getfixturevalue("postgres_target")
    server = request.getfixturevalue("mongo_server")
    return f"{server}/move_{uuid.uuid4().hex[:8]}?replicaSet=secantus"


@pytest.fixture
def demo():
    """The demo data, and one paid ticket of the demo concert."""
    out = io.StringIO()
    call_command("seed_demo", "--json", stdout=out)
    data = json.loads(out.getvalue())
    concert = Event.objects.get(pk=data["ticketed_event"]["id"])
    ticket_type_id = data["ticketed_event"]["ticket_types"][0]["id"]
    order = billing_services.checkout_start(
        event=concert,
        request=CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=ticket_type_id, quantity=1)],
            buyer_name="Ada Lovelace",
            buyer_email="ada@example.com",
            attendee_names=["Ada Lovelace"],
        ),
    )
    billing_services.webhook_event_process(webhook_event=billing_services.order_simulate_payment(order=order))
    data["ticket_code"] = Ticket.objects.get(order=order).code
    # Django's own rows with database-made keys, which travel by natural key: a group with a permission, a
    # user's permission and group, an admin log entry; and a session.
    organizer = User.objects.get(email=data["organizer"]["email"])
    door = Group.objects.create(name="Door staff")
    door.permissions.add(Permission.objects.get(codename="change_ticket"))
    organizer.groups.add(door)
    organizer.user_permissions.add(Permission.objects.get(codename="view_guest"))
    LogEntry.objects.create(
        user=organizer,
        content_type=ContentType.objects.get_for_model(Guest),
        object_id=str(Guest.objects.order_by("pk").first().pk),
        object_repr="a guest",
        action_flag=CHANGE,
        change_message="[]",
    )
    session = SessionStore()
    session["note"] = "still logged in after the move"
    session.create()
    return data


def probe(target_url: str, demo: dict) -> dict:
    guest = demo["guests"][0]
    env = {**os.environ, "DATABASE_URL": target_url, "DJANGO_SETTINGS_MODULE": "eventsaas.settings_test"}
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.support.db_move_probe",
            guest["code"],
            guest["last_name"],
            demo["organizer"]["email"],
            demo["organizer"]["password"],
            demo["event"]["id"],
            demo["ticketed_event"]["id"],
            demo["ticket_code"],
        ],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def move(target_url: str, *args) -> str:
    out = io.StringIO()
    call_command("db_move", "--to", target_url, "-v0", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def table(output: str) -> dict:
    """The verification table: model -> (source rows, target rows, verdict)."""
    rows = {}
    for line in output.splitlines():
        cells = line.split()
        if len(cells) == 6 and cells[1].isdigit():
            rows[cells[0]] = (int(cells[1]), int(cells[2]), cells[5])
    return rows


# The demo's 50 invited guests and the buyer of the fixture's one ticket: a ticket holder is a guest too (#17).
DEMO_GUESTS = 51


def source_ids() -> dict:
    return {
        model._meta.label: sorted(str(pk) for pk in model.objects.values_list("pk", flat=True))
        for model in (User, Event, Guest, Order, Ticket)
    }


def test_moved_installation_works_on_the_target_with_the_same_ids_and_numbers(demo, target):
    stats = event_stats(event=Event.objects.get(pk=demo["event"]["id"]))

    output = move(target)

    assert "Verified: " in output and "DIFFERS" not in output
    rows = table(output)
    assert rows["guests.guest"] == (DEMO_GUESTS, DEMO_GUESTS, "ok")
    assert rows["billing.ticket"] == (1, 1, "ok")
    for label in ("auth.group", "auth.group_permissions", "tenants.user_groups", "tenants.user_user_permissions"):
        assert rows[label] == (1, 1, "ok"), label
    assert rows["admin.logentry"] == (1, 1, "ok")
    assert rows["sessions.session"] == (1, 1, "ok")
    assert "not copied: axes.accessattempt" in output
    after = probe(target, demo)
    assert after["ids"] == source_ids()
    assert len(after["ids"]["guests.Guest"]) == DEMO_GUESTS
    assert after["guest_login"] == [302, "/rsvp/answer/"]
    assert after["guest_answer_page"] == 200
    assert after["organizer_login"][0] == 302
    assert after["organizer_session_user"] == str(User.objects.get(email=demo["organizer"]["email"]).pk)
    assert [after["check_in"], after["check_in_again"]] == ["valid", "already_checked_in"]
    assert after["event_stats"] == stats


def test_a_target_that_holds_data_is_refused_unless_resuming(demo, postgres_target):
    move(postgres_target)

    with pytest.raises(CommandError, match=f"already holds data: .*guests.guest \\({DEMO_GUESTS}\\).*--resume"):
        move(postgres_target)
    output = move(postgres_target, "--resume")

    assert "Verified: " in output


def test_an_interrupted_move_resumed_gives_the_same_result(demo, postgres_target):
    complete = database_move(target_url=postgres_target, batch_size=10, migrate_output=False)
    assert complete.matches and complete.copied["guests.guest"] == DEMO_GUESTS

    # A second target, a move stopped after two batches of guests, then resumed.
    halfway = postgres_target + "_b"
    base, _, name = halfway.rpartition("/")
    with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:

        def stop_after_two_guest_batches(label, number):
            if label == "guests.guest" and number == 2:
                raise MoveError("power cut")

        with pytest.raises(MoveError, match="power cut"):
            database_move(
                target_url=halfway, batch_size=10, after_batch=stop_after_two_guest_batches, migrate_output=False
            )
        resumed = database_move(target_url=halfway, batch_size=10, resume=True, migrate_output=False)

        assert resumed.matches
        assert resumed.copied["guests.guest"] == DEMO_GUESTS - 20  # the 20 copied before the cut stay as they are
        assert resumed.copied["tenants.user"] == 0
        assert {(c.label, c.target_rows, c.target_checksum) for c in resumed.checks} == {
            (c.label, c.target_rows, c.target_checksum) for c in complete.checks
        }
    finally:
        with psycopg.connect(f"{base}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_verification_fails_on_a_row_changed_on_the_target(demo, postgres_target):
    move(postgres_target)
    guest = Guest.objects.order_by("pk").first()
    assert "Verified: " in move(postgres_target, "--verify-only")

    # Control: one field of one guest differs on the target; the counts still match.
    with psycopg.connect(postgres_target, autocommit=True) as target_db:
        target_db.execute("UPDATE guests_guest SET dietary = 'tampered' WHERE id = %s", [str(guest.pk)])

    with pytest.raises(CommandError, match="differs from this database in: guests.guest$"):
        move(postgres_target, "--verify-only")

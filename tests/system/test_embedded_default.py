"""The README's run command (`bin/run`) in a fresh clone, used the way people use it.

One clone of HEAD, `bin/run` on a free port (it installs .venv from requirements.txt: pip's own download cache
may be reused, nothing else), then:

- it prints the address and the demo logins, and no development-server warning;
- a checkout rush: 1,000 requests from 50 clients at once for 100 seats: exactly 100 orders, no connection
  error, no 5xx, and "database is locked" never appears in what it printed;
- the scheduled expiry releases the rush's unpaid seats soon after their (test-set, one-minute) hold;
- the scheduled reminders send their email;
- Ctrl+C stops everything it started, and so does SIGTERM: no process of it is left.

Test settings, all documented in .env.example: ORDER_HOLD_MINUTES=1 and ORDER_EXPIRY_GRACE_SECONDS=0 (short
holds), BEAT_INTERVALS (the expiry every 5 s and the reminders every 15 s instead of every minute and hour),
REMINDER_DAYS_BEFORE_DEADLINE=25 (the demo party's deadline is 20 days away), and
TICKET_CHECKOUT_RATE_PER_CLIENT raised: every client of the rush comes from 127.0.0.1, which the default
rate (20 checkouts a minute per address) would turn away.
"""

import datetime as dt
import os
import re
import shutil
import signal
import subprocess
import time

import pytest

from tests.support.rush import rush
from tests.system.conftest import (
    ROOT,
    call,
    free_port,
    is_running,
    person_env,
    process_tree,
    processes_inside,
    require,
    wait_for,
)

pytestmark = pytest.mark.embedded

SEATS, BUYERS, CLIENTS = 100, 1000, 50
HOLD_MINUTES = 1
FIRST_START_TIMEOUT = 900  # a fresh clone installs its .venv first


class RunCommand:
    """`bin/run` in a folder, its output in a file; started in a session of its own, as a terminal would."""

    def __init__(self, folder, port, log):
        self.folder, self.port, self.log = folder, port, log
        self.process = None
        self.offset = 0
        self.address = f"http://127.0.0.1:{port}"

    def start(self, timeout: float):
        env = person_env(
            PORT=self.port,
            ORDER_HOLD_MINUTES=HOLD_MINUTES,
            ORDER_EXPIRY_GRACE_SECONDS=0,
            BEAT_INTERVALS="billing.orders_expire_due=5,guests.reminders_send=15",
            REMINDER_DAYS_BEFORE_DEADLINE=25,
            TICKET_CHECKOUT_RATE_PER_CLIENT="100000/m",
            WORKER_LOG_LEVEL="INFO",
        )
        self.offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self.process = subprocess.Popen(
                ["bin/run"], cwd=self.folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        wait_for(
            lambda: (
                f"eventsaas is serving at {self.address}" in self.output()[self.offset :]
                or self.process.poll() is not None
            ),
            timeout=timeout,
            interval=1,
            what="serving",
        )
        assert self.process.poll() is None, f"bin/run ended:\n{self.output()[-5000:]}"

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def stop_with(self, signum: int, *, whole_group: bool) -> int:
        """Send `signum` the way a terminal (to its process group) or a process manager (to it) would."""
        if whole_group:
            os.killpg(self.process.pid, signum)
        else:
            self.process.send_signal(signum)
        return self.process.wait(timeout=60)

    def kill(self):
        if self.process and self.process.poll() is None:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    if shutil.which("git") is None:
        require("EMBEDDED", "git is not installed")
    folder = tmp_path_factory.mktemp("embedded") / "eventsaas"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(folder)], check=True)
    yield folder
    leftovers = processes_inside(folder)
    assert not leftovers, f"processes of the clone are still running: {leftovers}"


def test_the_run_command_serves_a_rush_runs_its_scheduled_jobs_and_stops_everything(clone, tmp_path):
    run = RunCommand(clone, free_port(), tmp_path / "bin-run.log")
    try:
        started = time.monotonic()
        run.start(timeout=FIRST_START_TIMEOUT)
        print(f"\nbin/run (fresh clone, installing .venv) served after {time.monotonic() - started:.0f} s")
        output = run.output()
        assert "Organizer login: organizer@demo.eventsaas.test / demo-organizer-pass" in output
        assert re.search(r"Guest login at /rsvp/: code \w+ \+ last name", output)
        assert "development server" not in output.lower()

        token = organizer_token(run)
        event_id = re.search(r"Ticket shop of .*/e/([0-9a-f-]{36})/", output).group(1)
        ticket_type = create_ticket_type(run, token, event_id)

        last_expiry = checkout_rush(run, event_id, ticket_type)
        check_no_overselling(run, token, event_id, ticket_type)
        check_expiry_releases_the_seats(run, token, event_id, ticket_type, last_expiry)
        check_reminders_are_sent(run)

        tree = process_tree(run.process.pid)
        assert len(tree) >= 5, tree  # bin/run's supervisor, gunicorn and its worker, Celery and its pool
        assert run.stop_with(signal.SIGINT, whole_group=True) == 0  # Ctrl+C
        assert not [pid for pid in tree if is_running(pid)], "Ctrl+C left processes running"
        assert not processes_inside(clone)
        assert "database is locked" not in run.output()

        # A process manager stops it with SIGTERM to its own pid.
        run.start(timeout=120)
        tree = process_tree(run.process.pid)
        assert run.stop_with(signal.SIGTERM, whole_group=False) == 0
        assert not [pid for pid in tree if is_running(pid)], "SIGTERM left processes running"
        assert not processes_inside(clone)
    finally:
        run.kill()
        if os.environ.get("CI"):
            print(run.output()[-3000:])


def organizer_token(run) -> str:
    status, body, _ = call(
        "POST",
        f"{run.address}/api/v1/auth/token",
        {"email": "organizer@demo.eventsaas.test", "password": "demo-organizer-pass"},
    )
    assert status == 200, body
    return body["access"]


def create_ticket_type(run, token, event_id) -> str:
    status, body, _ = call(
        "POST",
        f"{run.address}/api/v1/events/{event_id}/ticket-types",
        {"name": "Rush", "price": 1500, "currency": "eur", "capacity": SEATS, "max_per_order": 4},
        token=token,
    )
    assert status == 201, body
    return body["id"]


def checkout_rush(run, event_id, ticket_type):
    body = {
        "items": [{"ticket_type": ticket_type, "quantity": 1}],
        "buyer": {"name": "Rush Buyer", "email": "rush@example.com"},
        "attendees": [{"name": "Rush Buyer"}],
        "answers": {"heard": "Friends"},
    }
    result = rush(
        "127.0.0.1", run.port, [("POST", f"/api/v1/events/{event_id}/checkout", body)] * BUYERS, concurrency=CLIENTS
    )
    orders = [a.json() for a in result.answers if a.status == 201]
    sold_out_after = result.last(201)
    print(
        f"checkout rush on the embedded default: {BUYERS} requests, {CLIENTS} clients, {SEATS} seats: "
        f"{result.wall_seconds:.2f} s wall, {BUYERS / result.wall_seconds:.0f} answers/s; "
        f"{len(orders)} orders, the last after {sold_out_after:.2f} s ({len(orders) / sold_out_after:.0f} orders/s); "
        f"p50 {result.percentile(0.5):.0f} ms, p95 {result.percentile(0.95):.0f} ms, "
        f"statuses {dict(sorted(result.statuses.items()))}"
    )
    assert not result.errors, result.errors[:5]
    assert not [s for s in result.statuses if s >= 500], result.statuses
    assert result.statuses == {201: SEATS, 409: BUYERS - SEATS}, result.statuses
    return max(dt.datetime.fromisoformat(order["expires_at"]) for order in orders)


def sales_of(run, token, event_id, ticket_type) -> dict:
    status, sales, _ = call("GET", f"{run.address}/api/v1/events/{event_id}/sales", token=token)
    assert status == 200, sales
    return next(t for t in sales["ticket_types"] if t["id"] == ticket_type)


def check_no_overselling(run, token, event_id, ticket_type):
    seats = sales_of(run, token, event_id, ticket_type)
    assert (seats["sold"], seats["reserved"], seats["remaining"]) == (0, SEATS, 0), seats
    status, page, _ = call("GET", f"{run.address}/api/v1/events/{event_id}/orders?status=pending", token=token)
    assert status == 200 and page["count"] == SEATS, page.get("count")


def check_expiry_releases_the_seats(run, token, event_id, ticket_type, last_expiry):
    # The orders hold their seats for a minute; the sweep runs every 5 s and has no grace here.
    released = wait_for(
        lambda: sales_of(run, token, event_id, ticket_type)["reserved"] == 0 and dt.datetime.now(dt.UTC),
        timeout=HOLD_MINUTES * 60 + 90,
        interval=1,
        what="the rush's seats released by the scheduled expiry",
    )
    late = (released - last_expiry).total_seconds()
    print(f"scheduled expiry released the {SEATS} unpaid seats {late:.0f} s after the last hold ended")
    assert late < 30, late
    status, page, _ = call("GET", f"{run.address}/api/v1/events/{event_id}/orders?status=expired", token=token)
    assert status == 200 and page["count"] == SEATS, page.get("count")
    assert sales_of(run, token, event_id, ticket_type)["remaining"] == SEATS


def check_reminders_are_sent(run):
    # The console email backend prints each email; the worker sends one reminder per pending guest with email.
    wait_for(
        lambda: "Subject: Please answer: Summer Garden Party" in run.output(),
        timeout=90,
        interval=1,
        what="a reminder email printed",
    )
    assert re.search(r"To: \S+@example\.com", run.output())

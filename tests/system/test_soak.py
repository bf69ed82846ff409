"""A production install left running under a steady mixed load for SOAK_MINUTES (default 10), as people meet it.

The same install as tests/system/test_production_install.py (requirements.txt alone, production settings,
gunicorn + one Celery worker + beat, PostgreSQL, Redis, database connections kept: DB_CONN_MAX_AGE=60), with
scheduled work falling due all the time (one-minute holds, the expiry sweep every 3 s, the activity flush every
2 s). Clients at once, each in its own thread, behind a TLS proxy that sets X-Real-IP (CLIENT_IP_HEADER):

- buyers: a checkout of 1-4 seats from an address of their own; 60 % pay (Stripe's signed
  checkout.session.completed, a quarter of them delivered twice), the rest are left to expire;
- the organizer: refunds part of a paid order now and then, reads the sales, orders, stats and dietary report,
  refreshing the ten-minute access token with the refresh token;
- guests: log in with code + last name, read their RSVP and answer for their household (the API's 409 asks
  for the household's total, which the client then gives);
- a hostile client: guessed codes, tampered tokens, a webhook with a bad signature, one replayed from
  long ago, an order that is not the organizer's, the orders without a token.

Every minute it samples each process's memory (RSS), the server connections of the database and what waits in
Redis. At the end, once the last holds have expired:

- no answer was a 5xx or a dropped connection, the hostile client never got a 2xx;
- no order is left pending past its hold, no webhook event received and not processed, none failed;
- the money and seats add up: per order, tickets = seats when paid (minus refunded ones), ledger = paid -
  refunded, one payment entry; per ticket type sold = valid tickets and nothing reserved; every paid order
  emailed its tickets once;
- the database connections stayed within what the processes can hold (kept, not leaked);
- memory grew by at most SOAK_MEMORY_GROWTH (default 1.5x) between the sample after the first fifth of the
  run and the last: a leak over hours shows as steady growth.

Run when asked for: `bin/test -m soak -n 0 -s` or REQUIRE_SOAK=1 (SOAK_MINUTES=120 for two hours). The numbers it
prints go in the notes of whoever ran it. Needs PostgreSQL and Redis, as the production install does.
"""

# The install's fixtures are imported; the test's arguments name them (ruff cannot tell).
# ruff: noqa: F811

import json
import os
import random
import re
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.stripe_server import FakeStripe
from tests.system.conftest import call, process_tree, wait_for
from tests.system.test_production_install import (  # noqa: F401
    DATABASE_URL,
    HTTPS,
    REDIS_URL,
    STRIPE_KEY,
    WEBHOOK_SECRET,
    Deployment,
    checkout_body,
    deployment_serving,
    production_venv,
    services,
    session_of,
    shipped_code,
    webhook,
)

pytestmark = pytest.mark.soak

MINUTES = float(os.environ.get("SOAK_MINUTES", "10"))
MEMORY_GROWTH = float(os.environ.get("SOAK_MEMORY_GROWTH", "1.5"))
BUYERS, GUESTS = 4, 2  # threads
WEB_PROCESSES, WEB_THREADS, WORKER_PROCESSES = 2, 8, 2


@dataclass
class Tally:
    statuses: Counter = field(default_factory=Counter)
    failures: list = field(default_factory=list)  # 5xx and dropped connections
    paid: dict = field(default_factory=dict)  # order id -> the buyer's email address
    left_unpaid: set = field(default_factory=set)
    refunded: Counter = field(default_factory=Counter)
    examples: dict = field(default_factory=dict)  # an answer's body for each (what, status), the first seen
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, what: str, status: int, body):
        with self.lock:
            self.statuses[(what, status)] += 1
            self.examples.setdefault((what, status), str(body)[:300])
            if status == 0 or status >= 500:
                self.failures.append((what, status, str(body)[:300]))


class Client:
    """HTTP as a client behind the TLS proxy sees it: its own address in X-Real-IP."""

    def __init__(self, deployment: Deployment, tally: Tally, address: str):
        self.deployment, self.tally, self.address = deployment, tally, address

    def call(self, what: str, method: str, path: str, body=None, token: str = "", headers=None):
        try:
            status, answer, _ = call(
                method,
                self.deployment.address + path,
                body,
                token=token,
                headers={**HTTPS, "X-Real-IP": self.address, **(headers or {})},
            )
        except OSError as exc:  # a dropped or refused connection
            status, answer = 0, {"error": repr(exc)}
        self.tally.record(what, status, answer)
        return status, answer


def random_address() -> str:
    return f"10.{random.randrange(256)}.{random.randrange(256)}.{random.randrange(1, 255)}"


def test_a_production_install_under_steady_load_for_a_long_run(production_venv, services, shipped_code, tmp_path):
    with FakeStripe(api_key=STRIPE_KEY) as stripe:
        deployment = Deployment(production_venv, shipped_code, tmp_path, stripe)
        deployment.env["CLIENT_IP_HEADER"] = "HTTP_X_REAL_IP"
        deployment.env["WEB_CONCURRENCY"] = str(WEB_PROCESSES)
        deployment.env["WEB_THREADS"] = str(WEB_THREADS)
        try:
            soak(deployment, stripe)
        finally:
            deployment.stop()
            for name in ("web", "worker", "beat"):
                errors = error_lines(tmp_path / f"{name}.log")
                print(f"{name}: {len(errors)} ERROR lines" + "".join(f"\n  {line[:400]}" for line in errors[:5]))


def soak(deployment: Deployment, stripe: FakeStripe):
    demo = deployment_serving(deployment, stripe)
    tally = Tally()
    organizer = Client(deployment, tally, "192.0.2.10")
    status, tokens = organizer.call(
        "token",
        "POST",
        "/api/v1/auth/token",
        {"email": demo["organizer"]["email"], "password": demo["organizer"]["password"]},
    )
    assert status == 200, tokens
    concert = demo["ticketed_event"]["id"]
    status, soak_type = organizer.call(
        "ticket type",
        "POST",
        f"/api/v1/events/{concert}/ticket-types",
        {"name": "Soak", "price": 2500, "currency": "eur", "capacity": 1_000_000, "max_per_order": 4},
        token=tokens["access"],
    )
    assert status == 201, soak_type

    stop_at = time.monotonic() + MINUTES * 60
    clients = [
        *[(buyer, (deployment, stripe, tally, concert, soak_type["id"], stop_at))] * BUYERS,
        *[(guest, (deployment, tally, demo, stop_at))] * GUESTS,
        (organizer_at_work, (organizer, tokens, tally, demo, stop_at)),
        (hostile, (deployment, tally, demo, concert, tokens, stop_at)),
    ]
    threads = [threading.Thread(target=guarded(client, tally), args=args) for client, args in clients]
    for thread in threads:
        thread.start()
    samples = []
    started = time.monotonic()
    while time.monotonic() < stop_at:
        samples.append(sample(deployment, started))
        print(samples[-1]["line"], flush=True)
        time.sleep(min(60, max(0, stop_at - time.monotonic())))
    for thread in threads:
        thread.join(timeout=120)
    samples.append(sample(deployment, started))
    print(samples[-1]["line"])

    # The last holds end a minute after the last checkout; the sweep runs every 3 s.
    wait_for(lambda: settled(deployment), timeout=240, interval=2, what="every hold expired and every task done")
    final = sample(deployment, started)
    print(final["line"])
    print("answers:", dict(sorted((f"{w} {s}", n) for (w, s), n in tally.statuses.items())))
    for (what, status), body in sorted(tally.examples.items()):
        if status >= 400:
            print(f"  e.g. {what} {status}: {body}")
    print(f"orders: {len(tally.paid)} paid ({sum(tally.refunded.values())} cents refunded), "
          f"{len(tally.left_unpaid)} left to expire")  # fmt: skip

    assert not tally.failures, tally.failures[:10]
    answered = {
        what: {s for (w, s) in tally.statuses if w == what} for what in ("rsvp answer", "rsvp answer, household total")
    }
    assert answered == {"rsvp answer": {200, 409}, "rsvp answer, household total": {200}}, tally.examples
    let_in = [(what, status) for what, status in tally.statuses if what.startswith("hostile") and 200 <= status < 300]
    assert not let_in, let_in
    assert tally.paid and tally.left_unpaid and tally.refunded
    books = books_of(deployment, soak_type["id"])
    print("books:", json.dumps(books["summary"]))
    assert books["problems"] == [], books["problems"][:10]
    assert books["summary"]["paid_orders"] == len(tally.paid)
    emails = tickets_emails(deployment)
    assert {order: emails[address] for order, address in tally.paid.items()} == dict.fromkeys(tally.paid, 1)

    # Kept connections: one per web thread (gthread) and per pool process, the worker's main process and beat
    # at most one each, plus this test's shell checks; never one per request or task, never growing.
    most = max(s["connections"] for s in samples + [final])
    assert most <= WEB_PROCESSES * WEB_THREADS + WORKER_PROCESSES + 4, [s["connections"] for s in samples]
    if len(samples) >= 5:
        settled_in = samples[len(samples) // 5]
        for name, rss in samples[-1]["rss"].items():
            assert rss <= settled_in["rss"][name] * MEMORY_GROWTH, (name, settled_in["rss"], samples[-1]["rss"])


# --- the clients ---------------------------------------------------------------------------------------------


def guarded(client, tally: Tally):
    """The client's loop, its end by an exception recorded as a failure (a client that dies lightens the load)."""

    def run(*args):
        try:
            client(*args)
        except Exception as exc:
            with tally.lock:
                tally.failures.append((client.__name__, "ended", repr(exc)))
            raise

    return run


def buyer(deployment, stripe, tally, event_id, ticket_type, stop_at):
    while time.monotonic() < stop_at:
        client = Client(deployment, tally, random_address())
        quantity = random.randint(1, 4)
        email = f"buyer-{uuid.uuid4().hex[:12]}@example.com"
        status, order = client.call(
            "checkout",
            "POST",
            f"/api/v1/events/{event_id}/checkout",
            checkout_body(ticket_type, quantity, email, name="Soak Buyer"),
        )
        if status != 201:
            continue
        if random.random() < 0.6:
            payload, signature = stripe.signed_payload(stripe.complete(session_of(order)), WEBHOOK_SECRET)
            deliveries = 2 if random.random() < 0.25 else 1
            for _ in range(deliveries):
                try:
                    answered, said = webhook(deployment, payload, signature, str(uuid.uuid4()))[0], ""
                except OSError as exc:  # a dropped or refused connection: recorded as a failure
                    answered, said = 0, repr(exc)
                tally.record("webhook", answered, said)
            with tally.lock:
                tally.paid[order["order_id"]] = email
        else:
            with tally.lock:
                tally.left_unpaid.add(order["order_id"])
        time.sleep(random.uniform(0.3, 1.2))


def guest(deployment, tally, demo, stop_at):
    with_codes = [g for g in demo["guests"] if g["code"]]
    while time.monotonic() < stop_at:
        person = random.choice(with_codes)
        client = Client(deployment, tally, random_address())
        status, login = client.call(
            "guest login",
            "POST",
            "/api/v1/auth/guest-login",
            {"code": person["code"], "last_name": person["last_name"]},
        )
        if status != 200:
            time.sleep(1)
            continue
        for _ in range(random.randint(1, 5)):
            client.call("rsvp read", "GET", "/api/v1/rsvp", token=login["access"])
            time.sleep(random.uniform(0.1, 0.5))
        if random.random() < 0.3:
            client.call("rsvp answer", "PUT", "/api/v1/rsvp", {"attending": False}, token=login["access"])
        else:
            # The guest's own count; when the household expects another, the API asks (409) and the page
            # answers with the household's total: the whole group coming, one bulk update.
            answer = {"attending": True, "num_guests": person["expected_guests"]}
            status, asked = client.call("rsvp answer", "PUT", "/api/v1/rsvp", answer, token=login["access"])
            if status == 409:
                answer["num_guests"] = asked["expected"]
                client.call("rsvp answer, household total", "PUT", "/api/v1/rsvp", answer, token=login["access"])
        time.sleep(random.uniform(0.2, 1.0))


def organizer_at_work(client, tokens, tally, demo, stop_at):
    """`tokens` is shared with the hostile client, which tries them where they must not open anything."""
    event, concert = demo["event"]["id"], demo["ticketed_event"]["id"]
    while time.monotonic() < stop_at:
        for what, path in (
            ("sales", f"/api/v1/events/{concert}/sales"),
            ("orders", f"/api/v1/events/{concert}/orders?status=paid"),
            ("stats", f"/api/v1/events/{event}/stats"),
            ("dietary", f"/api/v1/events/{event}/dietary"),
        ):
            status, _ = client.call(what, "GET", path, token=tokens["access"])
            if status == 401:  # the ten-minute access token ended: the refresh token gives a new one
                status, fresh = client.call(
                    "refresh", "POST", "/api/v1/auth/token/refresh", {"refresh": tokens["refresh"]}
                )
                assert status == 200, fresh
                tokens.update(fresh)
        with tally.lock:
            refundable = sorted(set(tally.paid) - set(tally.refunded))
        if refundable and random.random() < 0.3:
            order_id = random.choice(refundable)
            status, order = client.call("order", "GET", f"/api/v1/orders/{order_id}", token=tokens["access"])
            if status == 200 and order["status"] == "paid":
                amount = order["total"] // order["quantity"]
                status, _ = client.call(
                    "refund", "POST", f"/api/v1/orders/{order_id}/refund", {"amount": amount}, token=tokens["access"]
                )
                if status == 200:
                    with tally.lock:
                        tally.refunded[order_id] = amount
        time.sleep(random.uniform(1, 3))


def hostile(deployment, tally, demo, concert, organizer_tokens, stop_at):
    client = Client(deployment, tally, "203.0.113.66")
    victim = demo["guests"][0]
    while time.monotonic() < stop_at:
        attempts = [
            ("guessed code", "POST", "/api/v1/auth/guest-login",
             {"code": uuid.uuid4().hex[:8].upper(), "last_name": victim["last_name"]}, ""),
            ("tampered token", "GET", "/api/v1/rsvp", None, "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."),
            ("someone else's order", "GET", f"/api/v1/orders/{uuid.uuid4()}", None, organizer_tokens["access"]),
            ("orders without a token", "GET", f"/api/v1/events/{concert}/orders", None, ""),
        ]  # fmt: skip
        what, method, path, body, token = random.choice(attempts)
        client.call(f"hostile {what}", method, path, body, token=token)
        if random.random() < 0.2:
            payload = FakeStripe.payload({"id": f"evt_{uuid.uuid4().hex}", "type": "checkout.session.completed"})
            hour_ago = int(time.time()) - 3600
            for label, signature in (
                ("hostile webhook bad signature", "t=1,v1=" + "0" * 64),
                ("hostile webhook signed an hour ago", FakeStripe.sign(payload, WEBHOOK_SECRET, timestamp=hour_ago)),
            ):  # fmt: skip
                answered, _, _ = webhook(deployment, payload, signature, str(uuid.uuid4()))
                tally.record(label, answered, "")
        time.sleep(random.uniform(0.5, 2))


# --- what is measured and checked ------------------------------------------------------------------------------


def error_lines(log: Path) -> list[str]:
    """The ERROR and CRITICAL lines of a process's JSON log (a line that is not JSON counts when it says so)."""
    found = []
    for raw in log.read_text(errors="replace").splitlines() if log.exists() else []:
        try:
            level = json.loads(raw).get("level")
        except ValueError:
            level = "ERROR" if "ERROR" in raw or "Traceback" in raw else ""
        if level in ("ERROR", "CRITICAL"):
            found.append(raw)
    return found


def rss_kb(pids) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            pass
    return total


def sample(deployment: Deployment, started: float) -> dict:
    import psycopg
    import redis

    rss = {name: rss_kb(process_tree(process.pid)) for name, process in deployment.processes.items()}
    database = DATABASE_URL.rsplit("/", 1)[1]
    with psycopg.connect(DATABASE_URL, autocommit=True) as pg:
        (connections,) = pg.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()", [database]
        ).fetchone()
    client = redis.Redis.from_url(REDIS_URL)
    queued = sum(client.llen(key) for key in client.scan_iter(match="celery*") if client.type(key) == b"list")
    client.close()
    line = (
        f"[{(time.monotonic() - started) / 60:5.1f} min] RSS MB "
        + ", ".join(f"{name} {kb / 1024:.0f}" for name, kb in rss.items())
        + f"; database connections {connections}; queued {queued}"
    )
    return {"rss": rss, "connections": connections, "queued": queued, "line": line}


def settled(deployment: Deployment) -> bool:
    result = deployment.manage("shell", "-c", SETTLED)
    return "settled=True" in result.stdout.split()


SETTLED = """
from django.utils import timezone
from billing.models import Order, WebhookEvent
pending = Order.objects.filter(status=Order.Status.PENDING).count()
unprocessed = WebhookEvent.objects.filter(status=WebhookEvent.Status.RECEIVED).count()
print('settled=' + str(pending == 0 and unprocessed == 0))
"""


def books_of(deployment: Deployment, ticket_type: str) -> dict:
    result = deployment.manage("shell", "-c", BOOKS.replace("TICKET_TYPE", ticket_type))
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("BOOKS ")]
    return json.loads(line[len("BOOKS ") :])


BOOKS = """
import json
from collections import Counter
from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
from events.models import TicketType
problems = []
ledger, payments = Counter(), Counter()
for entry in LedgerEntry.objects.all():
    ledger[str(entry.order_id)] += entry.signed_amount
    payments[str(entry.order_id)] += entry.kind == LedgerEntry.Kind.PAYMENT
valid = Counter(str(t.order_id) for t in Ticket.objects.filter(status=Ticket.Status.VALID))
paid = 0
for order in Order.objects.all():
    if not any(line['ticket_type'] == 'TICKET_TYPE' for line in order.lines):
        continue
    key = str(order.pk)
    if order.status in (Order.Status.PAID, Order.Status.PARTIALLY_REFUNDED, Order.Status.REFUNDED):
        paid += 1
        seats_refunded = order.refunded_amount // (order.total // order.quantity)
        if valid[key] != order.quantity - seats_refunded:
            problems.append(('tickets', key, valid[key], order.quantity, order.refunded_amount))
        if payments[key] != 1 or ledger[key] != order.paid_amount - order.refunded_amount:
            problems.append(('ledger', key, payments[key], ledger[key], order.paid_amount, order.refunded_amount))
        if order.paid_amount != order.total:
            problems.append(('paid', key, order.paid_amount, order.total))
    elif order.status == Order.Status.EXPIRED:
        if valid[key] or ledger[key]:
            problems.append(('expired', key, valid[key], ledger[key]))
    else:
        problems.append(('status', key, order.status))
soak = TicketType.objects.get(pk='TICKET_TYPE')
tickets = Ticket.objects.filter(ticket_type_id=soak.pk, status=Ticket.Status.VALID).count()
if soak.reserved != 0 or soak.sold != tickets:
    problems.append(('seats', soak.sold, soak.reserved, tickets))
failed = WebhookEvent.objects.filter(status=WebhookEvent.Status.FAILED).count()
if failed:
    problems.append(('webhook events failed', failed))
summary = {'paid_orders': paid, 'sold': soak.sold, 'reserved': soak.reserved, 'valid_tickets': tickets}
print('BOOKS ' + json.dumps({'problems': problems, 'summary': summary}))
"""


def tickets_emails(deployment: Deployment) -> Counter:
    """Tickets emails written (the file email backend), by the address they went to."""
    found = Counter()
    for path in sorted(deployment.emails.glob("*.log")) if deployment.emails.exists() else []:
        for message in path.read_text(errors="replace").split("\n" + "-" * 79 + "\n"):
            if "\nSubject: Your tickets for " in "\n" + message and (to := re.search(r"^To: (\S+)$", message, re.M)):
                found[to.group(1)] += 1
    return found

"""Benchmark of a ticket rush and of the Stripe webhooks that follow it.

    .venv/bin/python bench/ticket_rush.py [--buyers 1000] [--seats 100] [--workers 8]
                                          [--database-url postgres://postgres@127.0.0.1:5432/eventsaas_bench_rush]
                                          [--celery-worker N [--redis-url redis://127.0.0.1:6379/12]]

Not part of the test suite. In one run it:

1. builds a throwaway database (as dashboard.py: a SQLite file in a temporary directory, or the PostgreSQL
   database named in --database-url, created and dropped here) with one ticketed event, in test-payment mode;
2. lets --buyers buyers (1 to --max-quantity tickets each) rush --seats seats of one ticket type, split over
   --workers processes that start together, each with its own database connection (like web workers), three
   times on fresh ticket types of the same capacity:
   - the bare conditional UPDATE through the ORM (the baseline: what a reservation cannot do with less),
   - a read-check-write reservation without that guard (the control: how the race looks without protection),
   - billing.services.checkout_start(), the real thing (validation, the conditional UPDATE, the order row, the
     Checkout Session, the audit record);
   and prints seats reserved, oversold (must be 0 for the guarded two), sold-out answers, answers per second,
   seats per second until sold out, p50/p95 latency, and checkout_start against the bare UPDATE as a ratio;
3. pays every order of the rush through Stripe-shaped, locally signed webhooks: each order's
   checkout.session.completed event delivered 2 or 3 times (--redeliveries), --expired-share of the orders
   preceded by their checkout.session.expired event (so they are paid late), all shuffled and split over the
   workers; each delivery goes through webhook_receive() and the processing task (eager, in the worker, as
   after the commit); prints deliveries per second and latency, then checks the invariants: every event stored
   once and processed, every order paid, one ticket per seat, ledger = paid amounts = order totals, seats sold
   = seats paid with none left reserved, one confirmation email per order, one expiry notice per order
   expired first (not emailed: sent after the payment, it finds the order paid).
   With --celery-worker N the events are processed instead by a real Celery worker (`celery -A eventsaas worker
   --concurrency N`, prefork, Redis broker), as in production: every delivery is received first, the worker is
   started on the queue, and the events processed per second are timed from the first processed event to the last
   (the worker's start-up is left out); the emails are then sent by that worker too.

Exit status 1 if a guarded rush oversold or leaked a seat, or a webhook invariant is broken.
The emails (the tickets and "your order expired", each a task of its own in production) are not sent inside
the timed webhook phase: the workers record what they enqueue and the emails are sent afterwards, through the
real tasks.
"""

import argparse
import cProfile
import json
import multiprocessing
import os
import random
import signal
import statistics
import subprocess
import sys
import time
import traceback
import warnings
from collections import Counter
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit

BASE_DIR = Path(__file__).resolve().parent.parent
PROFILE_DIR = ""  # --profile
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import PostgresDatabase, SqliteFile, table  # noqa: E402  (bench/ is this script's folder)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--buyers", type=int, default=1000, help="buyers in the rush (default 1000)")
    parser.add_argument("--seats", type=int, default=100, help="capacity of the ticket type (default 100)")
    parser.add_argument("--workers", type=int, default=8, help="worker processes, one connection each (default 8)")
    parser.add_argument("--max-quantity", type=int, default=1, help="each buyer asks for 1..N tickets (default 1)")
    parser.add_argument("--redeliveries", type=int, default=3, help="deliveries of each payment: 2..N (default 3)")
    parser.add_argument(
        "--duplicate-share",
        type=float,
        help="instead of --redeliveries: every payment once, then this share of all deliveries repeated (0.3 = 30%%)",
    )
    parser.add_argument(
        "--expired-share", type=float, default=0.1, help="share of orders expired before paid (default 0.1)"
    )
    parser.add_argument("--seed", type=int, default=2026, help="random seed (quantities, webhook order)")
    parser.add_argument("--database-url", help="postgres://user@host:port/name: created and dropped here")
    parser.add_argument("--recreate", action="store_true", help="drop that PostgreSQL database first if it exists")
    parser.add_argument(
        "--profile", metavar="DIR", help="write a cProfile of each worker's timed phase there (<phase>-<worker>.prof)"
    )
    parser.add_argument(
        "--celery-worker",
        type=int,
        metavar="N",
        help="process the webhooks in a real Celery worker of N processes on Redis instead of in the receivers",
    )
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/12", help="--celery-worker's broker (emptied)")
    parser.add_argument(
        "--worker-conn-max-age", default="60", help="the worker's DB_CONN_MAX_AGE (default 60, docs/deployment.md)"
    )
    args = parser.parse_args(argv)
    if args.celery_worker is not None and args.celery_worker < 1:
        parser.error("--celery-worker must be at least 1")
    if min(args.buyers, args.seats, args.workers, args.max_quantity) < 1 or args.redeliveries < 2:
        parser.error("--buyers, --seats, --workers and --max-quantity must be at least 1, --redeliveries 2")
    if not 0 <= args.expired_share <= 1:
        parser.error("--expired-share is between 0 and 1")
    if args.duplicate_share is not None and not 0 <= args.duplicate_share < 1:
        parser.error("--duplicate-share is at least 0 and below 1")
    return args


def setup_django(database_url: str, broker_url: str = ""):
    os.environ.update(
        DJANGO_SETTINGS_MODULE="eventsaas.settings",
        DATABASE_URL=database_url,
        DJANGO_ENV="development",
        DEBUG="0",
        # Test-payment mode: no Stripe keys, locally signed events through the real webhook code.
        STRIPE_SECRET_KEY="",
        TEST_PAYMENTS="1",
        # The processing task runs in the worker that stored the event, right after the commit.
        CELERY_BROKER_URL="memory://",
        CELERY_TASK_ALWAYS_EAGER="1",
        EMAIL_BACKEND="django.core.mail.backends.locmem.EmailBackend",
        DB_CONN_MAX_AGE="0",
    )
    if broker_url:  # --celery-worker: tasks go to a real worker through Redis
        os.environ.update(CELERY_BROKER_URL=broker_url, CELERY_TASK_ALWAYS_EAGER="0")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(BASE_DIR))
    warnings.filterwarnings("ignore", message="No directory at")
    import logging

    import django

    django.setup()
    # Kombu warns on every eager send that memory:// names no host.
    logging.getLogger("kombu.connection").setLevel(logging.ERROR)


# --- workers ------------------------------------------------------------------------------------------------------


def run_workers(workers: int, jobs: list, work) -> list[dict]:
    """Split `jobs` round-robin over forked worker processes released together; their result dicts.

    Each worker opens its own database connection before the start (a web or Celery worker
    has one already), then calls work(job) for each of its jobs in turn and times each call.
    """
    from django.db import connections

    context = multiprocessing.get_context("fork")
    barrier = context.Barrier(workers)
    results = context.Queue()
    connections.close_all()  # a forked child must never share its parent's socket

    def child(index):
        from django.db import connection

        calls, error = [], None
        profile = cProfile.Profile() if PROFILE_DIR else None
        try:
            connection.ensure_connection()
            barrier.wait(timeout=60)
            if profile is not None:
                profile.enable()
            for job in jobs[index::workers]:
                started = time.perf_counter()
                try:
                    outcome = work(job)
                except Exception as exc:  # noqa: BLE001 - counted and shown, the run goes on
                    outcome = ("error", f"{type(exc).__name__}: {exc}")
                calls.append((started, time.perf_counter(), outcome))
        except Exception:  # noqa: BLE001
            error = traceback.format_exc()
        finally:
            if profile is not None:
                profile.disable()
                profile.dump_stats(Path(PROFILE_DIR) / f"{work.__qualname__.split('.')[0]}-{index}.prof")
            connections.close_all()
            results.put({"calls": calls, "error": error, "extra": getattr(work, "collected", None)})

    processes = [context.Process(target=child, args=(n,)) for n in range(workers)]
    for process in processes:
        process.start()
    collected = [results.get(timeout=600) for _ in processes]
    for process in processes:
        process.join()
    for result in collected:
        if result["error"]:
            raise SystemExit(f"A worker failed:\n{result['error']}")
    return collected


def summarize(collected: list[dict]) -> dict:
    calls = sorted((c for result in collected for c in result["calls"]), key=lambda c: c[0])
    start = calls[0][0]
    latencies = sorted((end - begin) * 1000 for begin, end, _ in calls)
    return {
        "calls": calls,
        "start": start,
        "wall": max(end for _, end, _ in calls) - start,
        "p50": statistics.median(latencies),
        "p95": latencies[min(len(latencies) - 1, int(len(latencies) * 0.95))],
        "outcomes": Counter(outcome[0] for _, _, outcome in calls),
        "errors": [outcome[1] for _, _, outcome in calls if outcome[0] == "error"],
    }


# --- the rush -----------------------------------------------------------------------------------------------------


def bare_update(job):
    """The whole reservation as one conditional UPDATE, nothing else: the floor checkout_start stands on."""
    from django.db.models import F

    from events.models import TicketType

    ticket_type_id, quantity, _n = job
    reserved = TicketType.objects.filter(pk=ticket_type_id, sold__lte=F("capacity") - F("reserved") - quantity).update(
        reserved=F("reserved") + quantity
    )
    return ("reserved", quantity) if reserved else ("sold_out", quantity)


def read_check_write(job):
    """The control: read the counters, decide in Python, write the new number. Lost updates oversell."""
    from events.models import TicketType

    ticket_type_id, quantity, _n = job
    row = TicketType.objects.filter(pk=ticket_type_id).values("capacity", "sold", "reserved").get()
    if row["sold"] + row["reserved"] + quantity > row["capacity"]:
        return ("sold_out", quantity)
    TicketType.objects.filter(pk=ticket_type_id).update(reserved=row["reserved"] + quantity)
    return ("reserved", quantity)


def checkout(event):
    from billing.services import CheckoutItem, CheckoutRequest, SoldOut, checkout_start

    def work(job):
        ticket_type_id, quantity, n = job
        request = CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=str(ticket_type_id), quantity=quantity)],
            buyer_name=f"Buyer {n}",
            buyer_email=f"buyer{n}@bench.example",
        )
        try:
            order = checkout_start(event=event, request=request)
        except SoldOut:
            return ("sold_out", quantity)
        return ("reserved", quantity, str(order.pk))

    return work


def new_ticket_type(event, name: str, capacity: int, max_quantity: int):
    from events.models import TicketType

    return TicketType.objects.create(
        tenant_id=event.tenant_id,
        event=event,
        name=name,
        price=4500,
        currency="eur",
        capacity=capacity,
        max_per_order=max(max_quantity, 1),
    )


def rush(args, event, quantities, name, work_for) -> dict:
    ticket_type = new_ticket_type(event, name, args.seats, args.max_quantity)
    jobs = [(ticket_type.pk, quantity, n) for n, quantity in enumerate(quantities)]
    summary = summarize(run_workers(args.workers, jobs, work_for(ticket_type)))
    granted = [c for c in summary["calls"] if c[2][0] == "reserved"]
    summary["ticket_type"] = ticket_type
    summary["seats"] = sum(c[2][1] for c in granted)
    summary["oversold"] = max(summary["seats"] - args.seats, 0)
    summary["sold_out_after"] = (max(c[1] for c in granted) - summary["start"]) if granted else 0.0
    summary["order_ids"] = [c[2][2] for c in granted if len(c[2]) > 2]
    ticket_type.refresh_from_db()
    summary["counted"] = ticket_type.sold + ticket_type.reserved
    return summary


# --- the webhooks -------------------------------------------------------------------------------------------------


class EnqueueRecorder:
    """Stands in for an email task in the workers: records what it was sent, as (task, kwargs)."""

    def __init__(self, task: str, sent: list):
        self.task, self.name, self.sent = task, f"{task} (recorded)", sent

    def apply_async(self, args=(), kwargs=None):
        self.sent.append((self.task, kwargs))


def deliveries_for(orders, args, rng: random.Random) -> tuple[list, set]:
    """Every order's completed event 2..N times; some orders' expired event before all of those; shuffled."""
    from billing import payments

    late = {order.pk for order in rng.sample(orders, round(len(orders) * args.expired_share))}
    deliveries = []
    payments_of = {}
    for order in orders:
        completed = payments.simulated_payment_event(order=order)
        payments_of[order.pk] = ("completed", order.pk, *completed)
        times = 1 if args.duplicate_share is not None else rng.randint(2, args.redeliveries)
        deliveries += [payments_of[order.pk]] * times
        if order.pk in late:
            expired = payments.simulated_payment_event(order=order, event_type="checkout.session.expired")
            deliveries += [("expired", order.pk, *expired)] * rng.randint(1, 2)
    if args.duplicate_share:
        # Duplicates make up that share of all deliveries: d = share * (unique + d).
        unique = len(deliveries)
        extra = round(args.duplicate_share * unique / (1 - args.duplicate_share))
        deliveries += [payments_of[rng.choice(orders).pk] for _ in range(extra)]
    rng.shuffle(deliveries)
    # Stripe sends an expiry before the payment of a session paid at the last moment: put it first.
    first_completed = {}
    for index, (kind, order_id, *_signed) in enumerate(deliveries):
        if kind == "completed":
            first_completed.setdefault(order_id, index)
    for index, (kind, order_id, *_signed) in enumerate(deliveries):
        if kind == "expired" and first_completed[order_id] < index:
            other = first_completed[order_id]
            deliveries[other], deliveries[index] = deliveries[index], deliveries[other]
            first_completed[order_id] = index
    return deliveries, late


def store(delivery):
    """What the webhook endpoint does: verify, store once, enqueue the processing (eager here unless
    --celery-worker)."""
    from billing import services

    _kind, _order_id, payload, signature = delivery
    _row, created = services.webhook_receive(payload=payload, signature=signature)
    return ("stored" if created else "duplicate",)


def receive():
    from billing.services import orders

    sent = []
    confirmation, closed = EnqueueRecorder("confirmation", sent), EnqueueRecorder("closed", sent)
    # Emails are their own tasks in production; outside the timed phase here (sent afterwards, below):
    # the tickets email of each paid order, the "your order expired" email of each expired one.
    orders._confirmation_task = lambda: confirmation
    orders._closed_notify_task = lambda: closed

    def work(delivery):
        return store(delivery)

    work.collected = sent
    return work


def process_in_celery_worker(args, orders) -> dict:
    """Start `celery -A eventsaas worker --concurrency N` on the queue the receivers filled and wait until it has
    processed every stored event and emailed every paid order. Its rate runs from the first processed event to the
    last, so the worker's start-up is left out."""
    import redis
    from django.db import connections
    from django.db.models import Max, Min

    from billing.models import Order, WebhookEvent

    connections.close_all()  # the worker's connections are its own
    order_ids = [o.pk for o in orders]
    log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"ticket_rush_worker_{os.getpid()}.log"
    command = [sys.executable, "-m", "celery", "-A", "eventsaas", "--quiet", "worker", "--loglevel", "WARNING"]
    command += ["--concurrency", str(args.celery_worker), "--without-heartbeat", "--without-gossip", "--without-mingle"]
    with open(log_path, "wb") as log:
        worker = subprocess.Popen(
            command,
            cwd=BASE_DIR,
            env={**os.environ, "DB_CONN_MAX_AGE": args.worker_conn_max_age},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    broker = redis.Redis.from_url(args.redis_url)
    unfinished = WebhookEvent.objects.exclude(status__in=[WebhookEvent.Status.PROCESSED, WebhookEvent.Status.IGNORED])
    unemailed = Order.objects.filter(pk__in=order_ids, status=Order.Status.PAID, confirmation_sent_at__isnull=True)
    deadline = time.monotonic() + 900
    try:
        # Done when every event is processed, every paid order emailed, and nothing is queued or running.
        while unfinished.exists() or unemailed.exists() or broker.llen("celery") or broker.hlen("unacked"):
            if worker.poll() is not None:
                raise SystemExit(f"The Celery worker stopped; its log: {log_path}")
            if time.monotonic() > deadline:
                raise SystemExit(f"The Celery worker did not finish in 15 minutes; its log: {log_path}")
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGTERM)  # warm shutdown
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
        broker.close()
    span = WebhookEvent.objects.aggregate(first=Min("processed_at"), last=Max("processed_at"))
    return {"events": WebhookEvent.objects.count(), "seconds": (span["last"] - span["first"]).total_seconds()}


def webhook_invariants(orders, ticket_type, deliveries, late, sent) -> list[tuple[str, object, object]]:
    from django.core import mail
    from django.db.models import Count, Sum

    from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
    from billing.tasks import order_closed_notify_task, order_confirmation_send_task
    from eventsaas.models import AuditLog

    order_ids = [o.pk for o in orders]
    seats = sum(o.quantity for o in orders)
    totals = sum(o.total for o in orders)
    fresh = Order.objects.filter(pk__in=order_ids)
    statuses = Counter(fresh.values_list("status", flat=True))
    event_rows = Counter(WebhookEvent.objects.values_list("status", flat=True))
    tickets_per_order = dict(
        Ticket.objects.filter(order_id__in=order_ids).values_list("order_id").annotate(n=Count("pk")).order_by()
    )
    ledger = LedgerEntry.objects.filter(order_id__in=order_ids, kind=LedgerEntry.Kind.PAYMENT)
    ticket_type.refresh_from_db()
    late_paid = fresh.filter(pk__in=late, status=Order.Status.PAID).count()
    # Sent after their expiry, but a worker may still process a payment before the expiry a slower one holds.
    paid_late = AuditLog.objects.filter(action="order.paid", object_id__in=order_ids, data__late=True).count()
    if sent is None:  # --celery-worker: the worker sent them; the orders say which
        expiry_emails = fresh.filter(closed_notified_at__isnull=False).count()
        confirmations = fresh.filter(confirmation_sent_at__isnull=False).count()
    else:
        for task, kwargs in sent:
            if task == "closed":
                order_closed_notify_task(**kwargs)
        expiry_emails = len(mail.outbox)
        for task, kwargs in sent:
            if task == "confirmation":
                order_confirmation_send_task(**kwargs)
        confirmations = len(mail.outbox) - expiry_emails
    rows = [
        ("webhook events stored once", len({d[2] for d in deliveries}), sum(event_rows.values())),
        ("  processed", sum(event_rows.values()), event_rows.get(WebhookEvent.Status.PROCESSED, 0)),
        ("orders paid", len(orders), statuses.get(Order.Status.PAID, 0)),
        ("  of them sent after their expiry", len(late), late_paid),
        ("tickets (one per seat)", seats, sum(tickets_per_order.values())),
        (
            "orders with tickets = quantity",
            len(orders),
            sum(tickets_per_order.get(o.pk, 0) == o.quantity for o in orders),
        ),
        ("ledger payments (one per order)", len(orders), ledger.count()),
        ("ledger sum = order totals", totals, ledger.aggregate(s=Sum("amount"))["s"] or 0),
        ("paid amounts = order totals", totals, fresh.aggregate(s=Sum("paid_amount"))["s"] or 0),
        ("seats sold", seats, ticket_type.sold),
        ("seats still reserved", 0, ticket_type.reserved),
    ]
    if sent is not None:
        rows.append(("expiry notices enqueued (one per expired)", len(late), sum(task == "closed" for task, _ in sent)))
    rows += [
        # Sent after the payments: the order is paid by then, and the tickets email says what matters.
        ("  of them emailed once paid" if sent is not None else "expiry notices emailed once paid", 0, expiry_emails),
        ("confirmation emails (one per order)", len(orders), confirmations),
    ]
    return rows, paid_late


# --- report -------------------------------------------------------------------------------------------------------


def run(args, database) -> int:
    setup_django(database.url, broker_url=args.redis_url if args.celery_worker else "")
    from django.core import mail
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    from billing import payments
    from billing.models import Order
    from billing.services import connected_account_ensure, connected_account_sync
    from events.models import Event
    from tenants.models import Tenant

    phase = time.perf_counter()
    call_command("migrate", verbosity=0, interactive=False)
    migrate_s = time.perf_counter() - phase
    mail.outbox = []
    # A verified organization: unverified ones cannot sell (abuse rule of the sign-up flow).
    tenant = Tenant.objects.create(name="Bench Org", slug="bench-org", verified_at=timezone.now())
    # Paid tickets go on sale once the organization's (here simulated) Stripe account can take charges;
    # payments are then destination charges with the platform's fee, as in production.
    account = connected_account_ensure(tenant=tenant, acting_user=None)
    payload, _signature = payments.simulated_account_event(account=account)
    connected_account_sync(event=json.loads(payload))
    event = Event.objects.create(
        tenant=tenant,
        kind=Event.Kind.TICKETED,
        name="Rush concert",
        slug="rush-concert",
        status=Event.Status.PUBLISHED,
        starts_at=timezone.now() + timedelta(days=30),
        timezone="Europe/Madrid",
    )
    # Warm-up in the parent, so every forked worker starts with the code and templates loaded.
    warm = new_ticket_type(event, "Warm-up", 1, 1)
    checkout(event)((warm.pk, 1, -1))

    engine = (
        f"PostgreSQL {'.'.join(map(str, divmod(connection.pg_version, 10000)))}"
        if connection.vendor == "postgresql"
        else f"SQLite {connection.Database.sqlite_version}"
    )
    rng = random.Random(args.seed)
    quantities = [rng.randint(1, args.max_quantity) for _ in range(args.buyers)]
    print("eventsaas ticket rush benchmark")
    print(f"  database : {engine}, {database.describe()} (migrate {migrate_s:.1f}s)")
    print(
        f"  rush     : {args.buyers:,} buyers ({sum(quantities):,} tickets asked, 1-{args.max_quantity} each) "
        f"for {args.seats:,} seats, {args.workers} worker processes with one connection each"
    )

    results = {
        "bare conditional UPDATE": rush(args, event, quantities, "Bare", lambda t: bare_update),
        "control: read-check-write": rush(args, event, quantities, "Control", lambda t: read_check_write),
        "checkout_start()": rush(args, event, quantities, "General", lambda t: checkout(event)),
    }
    print(f"\nTicket rush: {args.buyers:,} buyers at once, {args.seats:,} seats")
    headers = ["how", "seats granted", "oversold", "sold out", "errors", "answers/s", "sold out after s", "seats/s"]
    headers += ["p50 ms", "p95 ms"]
    rows = []
    for name, r in results.items():
        rows.append(
            [
                name,
                r["seats"],
                r["oversold"],
                r["outcomes"]["sold_out"],
                r["outcomes"]["error"],
                f"{len(r['calls']) / r['wall']:.0f}",
                f"{r['sold_out_after']:.2f}",
                f"{r['seats'] / r['sold_out_after']:.0f}" if r["sold_out_after"] else "-",
                f"{r['p50']:.2f}",
                f"{r['p95']:.2f}",
            ]
        )
    print(table(headers, rows))
    bare, real, control = (
        results["bare conditional UPDATE"],
        results["checkout_start()"],
        results["control: read-check-write"],
    )
    rate, bare_rate = len(real["calls"]) / real["wall"], len(bare["calls"]) / bare["wall"]
    print(
        f"  ratio checkout_start() / bare UPDATE: answers/s {rate / bare_rate:.2f}x, "
        f"p50 latency {real['p50'] / bare['p50']:.1f}x, p95 latency {real['p95'] / bare['p95']:.1f}x"
    )
    held = Order.objects.filter(pk__in=real["order_ids"], status=Order.Status.PENDING)
    held_seats = sum(o.quantity for o in held)
    print(
        f"  checkout_start(): {len(real['order_ids'])} orders holding {held_seats} seats; "
        f"ticket type counts {real['counted']} sold + reserved"
    )
    if control["oversold"]:
        print(f"  control: {control['seats']} seats granted for {args.seats}; the counter says {control['counted']}")
    else:
        print("  control: no overselling this time (the race needs reads to overlap; try more workers)")
    failed = []
    for name in ("bare conditional UPDATE", "checkout_start()"):
        if results[name]["oversold"] or results[name]["errors"]:
            failed.append(f"{name}: oversold {results[name]['oversold']}, errors {results[name]['errors'][:3]}")
    if results["bare conditional UPDATE"]["counted"] != bare["seats"]:
        failed.append("bare UPDATE: the counter differs from the seats granted")
    if not (held_seats == real["seats"] == real["counted"] and held.count() == len(real["order_ids"])):
        failed.append("checkout_start(): orders, seats granted and the ticket type's counter differ")

    orders = list(Order.objects.filter(pk__in=real["order_ids"]))
    deliveries, late = deliveries_for(orders, args, rng)
    if args.celery_worker:
        import redis

        redis.Redis.from_url(args.redis_url).flushdb()  # the rush's own tasks: the webhooks need none of them
        collected = run_workers(args.workers, deliveries, store)
        hooks = summarize(collected)
        processed = process_in_celery_worker(args, orders)
        sent = None
    else:
        collected = run_workers(args.workers, deliveries, receive())
        hooks = summarize(collected)
        sent = [task for result in collected for task in result["extra"] or ()]
    repeats = (
        f"each completed event once plus {args.duplicate_share:.0%} of all deliveries repeated"
        if args.duplicate_share is not None
        else f"completed event delivered 2-{args.redeliveries} times each"
    )
    print(
        f"\nWebhooks: {len(orders)} paid orders, {repeats}, {len(late)} expired first; shuffled, {args.workers} workers"
        + (" receiving, then a Celery worker processing" if args.celery_worker else "")
    )
    print(
        table(
            ["deliveries", "stored", "duplicates", "errors", "wall s"]
            + ["received/s" if args.celery_worker else "deliveries/s", "p50 ms", "p95 ms"],
            [
                [
                    len(deliveries),
                    hooks["outcomes"]["stored"],
                    hooks["outcomes"]["duplicate"],
                    hooks["outcomes"]["error"],
                    f"{hooks['wall']:.2f}",
                    f"{len(deliveries) / hooks['wall']:.0f}",
                    f"{hooks['p50']:.2f}",
                    f"{hooks['p95']:.2f}",
                ]
            ],
        )
    )
    if args.celery_worker:
        rate = (processed["events"] - 1) / processed["seconds"]
        print(
            f"  Celery worker (--concurrency {args.celery_worker}, prefork, Redis, DB_CONN_MAX_AGE="
            f"{args.worker_conn_max_age}): {processed['events']} events processed in {processed['seconds']:.2f} s "
            f"from the first to the last: {rate:.0f} events/s, {rate * len(deliveries) / processed['events']:.0f} "
            "deliveries/s (the receiving above stores and enqueues only)"
        )
    invariants, paid_late = webhook_invariants(orders, real["ticket_type"], deliveries, late, sent)
    print(
        table(
            ["invariant", "expected", "actual", "ok"],
            [[*row, "yes" if row[1] == row[2] else "NO"] for row in invariants],
        )
    )
    print(f"  paid after their order had expired (seats taken back): {paid_late}")
    if sent is not None:
        confirmations = [kwargs["order_id"] for task, kwargs in sent if task == "confirmation"]
        print(
            f"  confirmation tasks enqueued: {len(confirmations)} for {len(orders)} orders (each claims its order once)"
        )
    failed += [
        f"{name}: expected {expected}, got {actual}" for name, expected, actual in invariants if expected != actual
    ]
    if hooks["errors"]:
        failed.append(f"webhook errors: {hooks['errors'][:3]}")

    if failed:
        print("\nBROKEN:\n  " + "\n  ".join(failed))
        return 1
    print("\nAll invariants hold.")
    return 0


def main(argv=None) -> int:
    global PROFILE_DIR
    args = parse_args(argv)
    if args.profile:
        Path(args.profile).mkdir(parents=True, exist_ok=True)
        PROFILE_DIR = args.profile
    started = time.perf_counter()
    if args.database_url:
        if urlsplit(args.database_url).scheme not in {"postgres", "postgresql"}:
            raise SystemExit("--database-url must be a postgres:// URL (SQLite is the default)")
        database = PostgresDatabase(args.database_url, recreate=args.recreate)
    else:
        database = SqliteFile()
    try:
        return run(args, database)
    finally:
        from django.conf import settings

        if settings.configured:
            from django.db import connections

            connections.close_all()
        database.drop()
        print(f"Total {time.perf_counter() - started:.1f}s")


if __name__ == "__main__":
    sys.exit(main())

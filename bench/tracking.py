"""Benchmark of activity tracking: RSVP page latency with tracking on vs off, and database writes batched vs not.

    .venv/bin/python bench/tracking.py [--requests 300] [--accesses 1000] [--guests 20]
                                       [--broker redis://127.0.0.1:6379/12] [--database-url postgres://...]

Not part of the test suite. In one run it:

1. builds a throwaway database (SQLite file in a temporary directory, or the PostgreSQL database named in
   --database-url, created and dropped here) and one event with --guests guests;
2. times GET /rsvp/answer/ for a logged-in guest with django.test.Client, interleaving the modes in rounds:
   tracking off (ACTIVITY_TRACKING=0); tracking on as the embedded default runs it (the request publishes one
   message to the folder broker, kombu's filesystem transport); tracking on as a Redis deployment runs it (one
   message to Redis); and, for comparison, tracking written synchronously in the request (eager tasks; what
   the embedded default did before it had a worker); prints best / median / p95 and the on/off ratios;
3. makes --accesses guest accesses spread over the guests, publishing them as the requests do, then drains
   the queue with guests.activity.activity_flush() (the function the worker's periodic task runs) on each
   broker and counts the INSERT/UPDATE statements it sends; compares with writing the same events one at a
   time (one stamp UPDATE and one row INSERT per access) and with the stamps-only writes of the old request
   path (one UPDATE per access); prints the ratio.

The Redis broker is --broker (default database 12 of 127.0.0.1:6379, whose activity queue is purged first);
when it is unreachable its rows are left out and the run says so.
"""

import argparse
import math
import os
import statistics
import sys
import time
import uuid
from datetime import timedelta
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

from dashboard import PostgresDatabase, SqliteFile  # noqa: E402  (bench/ is this script's folder)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=300, help="timed page requests per mode (default 300)")
    parser.add_argument("--accesses", type=int, default=1000, help="accesses for the write count (default 1000)")
    parser.add_argument("--guests", type=int, default=20, help="guests the accesses are spread over (default 20)")
    parser.add_argument("--batch", type=int, default=500, help="flush batch size (ACTIVITY_FLUSH_BATCH, default 500)")
    parser.add_argument("--broker", default="redis://127.0.0.1:6379/12", help="Redis broker URL (default DB 12)")
    parser.add_argument("--database-url", help="postgres://user@host:port/name: created and dropped here")
    parser.add_argument("--recreate", action="store_true", help="drop that PostgreSQL database first if it exists")
    args = parser.parse_args(argv)
    if min(args.requests, args.accesses, args.guests, args.batch) < 1:
        parser.error("--requests, --accesses, --guests and --batch must be at least 1")
    return args


def broker_reachable(url: str) -> bool:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=1).ping()
    except redis.exceptions.RedisError:
        return False
    return True


def setup_django(database_url: str, broker_folder: str):
    os.environ.update(
        DJANGO_SETTINGS_MODULE="eventsaas.settings",
        DATABASE_URL=database_url,
        DJANGO_ENV="development",
        DEBUG="0",
        # The embedded default's broker: a folder (settings adds the transport's folder options).
        CELERY_BROKER_URL="folder://localhost/",
        CELERY_BROKER_FOLDER=broker_folder,
        CELERY_TASK_ALWAYS_EAGER="0",
    )
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    sys.path.insert(0, str(BASE_DIR))
    import warnings

    warnings.filterwarnings("ignore", message="No directory at")
    import django
    from django.conf import settings

    django.setup()
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]


def use_broker(url: str) -> None:
    """Point the Celery app (and the activity publisher) at another broker."""
    from eventsaas.celery import app
    from tests.support.celery import reset_connections

    if app.conf.broker_url != url:
        app.conf.broker_url = url
        reset_connections()


def create_guests(count: int):
    from django.utils import timezone

    from events.models import Event
    from guests.models import Guest
    from tenants.models import Tenant

    tenant = Tenant.objects.create(name="Bench org", slug=f"bench-{uuid.uuid4().hex[:8]}")
    event = Event.objects.create(
        tenant=tenant,
        name="Tracking bench",
        slug="tracking-bench",
        status=Event.Status.PUBLISHED,
        starts_at=timezone.now() + timedelta(days=30),
        rsvp_deadline=timezone.now() + timedelta(days=20),
        timezone="Europe/Madrid",
    )
    return [
        Guest.objects.create(tenant=tenant, event=event, first_name=f"Guest{n}", last_name="Bench")
        for n in range(count)
    ]


class WriteCounter:
    """Counts INSERT/UPDATE/DELETE statements sent on the default connection."""

    def __init__(self):
        self.inserts = self.updates = self.deletes = 0

    def __call__(self, execute, sql, params, many, context):
        verb = sql.lstrip()[:6].upper()
        self.inserts += verb == "INSERT"
        self.updates += verb == "UPDATE"
        self.deletes += verb == "DELETE"
        return execute(sql, params, many, context)

    @property
    def total(self) -> int:
        return self.inserts + self.updates + self.deletes


def purge_queue():
    from eventsaas.celery import app
    from guests.activity import ACTIVITY_QUEUE

    with app.connection_for_write() as conn:
        queue = ACTIVITY_QUEUE(conn.default_channel)
        queue.declare()
        queue.purge()


def time_page(args, guest, brokers: dict) -> dict:
    """Interleaved rounds of the modes; every mode sees the same warm caches and the same noise."""
    from django.conf import settings
    from django.test import Client

    from eventsaas.celery import app

    client = Client()
    response = client.post("/rsvp/", {"code": guest.code, "last_name": guest.last_name})
    assert response.status_code == 302, response.status_code

    interval = settings.ACTIVITY_SEND_INTERVAL_MS

    def mode(tracking: bool, eager: bool, broker: str, send_interval_ms: int = interval):
        def switch():
            use_broker(broker)
            settings.ACTIVITY_TRACKING, app.conf.task_always_eager = tracking, eager
            settings.ACTIVITY_SEND_INTERVAL_MS = send_interval_ms

        return switch

    folder = brokers["folder"]
    modes = {"tracking off": mode(False, False, folder)}
    modes[EMBEDDED] = mode(True, False, folder)
    if "redis" in brokers:
        modes[REDIS] = mode(True, False, brokers["redis"])
        modes[REDIS_IN_REQUEST] = mode(True, False, brokers["redis"], send_interval_ms=0)
    modes[IN_REQUEST] = mode(True, True, folder)
    times = {name: [] for name in modes}
    for switch in modes.values():  # warm-up
        switch()
        for _ in range(10):
            client.get("/rsvp/answer/")
    rounds, per_round = math.ceil(args.requests / 10), 10
    for _ in range(rounds):
        for name, switch in modes.items():
            switch()
            for _ in range(per_round):
                started = time.perf_counter()
                response = client.get("/rsvp/answer/")
                times[name].append((time.perf_counter() - started) * 1000)
                assert response.status_code == 200, response.status_code
    from guests.activity import _sender

    _sender.send_now()  # what the sender thread still held, before the queues are purged
    settings.ACTIVITY_SEND_INTERVAL_MS = interval
    for broker in brokers.values():
        use_broker(broker)
        purge_queue()
    app.conf.task_always_eager = False
    return times


EMBEDDED = "on: folder broker (embedded)"
REDIS = "on: Redis broker"
REDIS_IN_REQUEST = "on: Redis, sent in the request"
IN_REQUEST = "on: write in the request"


def count_writes(args, guests, brokers: dict) -> dict:
    from django.db import connection
    from django.db.models import Max
    from django.utils import timezone

    from eventsaas.celery import app
    from guests.activity import ActivityEvent, _broker_gate, activity_flush
    from guests.models import Guest, GuestActivity
    from guests.services import guest_activity_record_batch

    results = {}

    def events(base):
        for n in range(args.accesses):
            guest = guests[n % len(guests)]
            kind = GuestActivity.Kind.LOGIN if n < len(guests) else GuestActivity.Kind.PAGE_VIEW
            yield ActivityEvent(
                id=uuid.uuid4(),
                tenant_id=guest.tenant_id,
                event_id=guest.event_id,
                guest_id=guest.pk,
                kind=kind,
                at=base + timedelta(milliseconds=n),
            )

    def newest_stamp():
        return Guest.objects.filter(pk__in=[g.pk for g in guests]).aggregate(Max("last_access_at"))[
            "last_access_at__max"
        ]

    def later_base():
        # Later than every stamp written before, so every run below moves the stamps; whole milliseconds,
        # as the stamps are stored (MillisecondDateTimeField), so the comparisons below are exact.
        base = timezone.now() + timedelta(seconds=1)
        return base.replace(microsecond=base.microsecond // 1000 * 1000)

    # Without batching, as rows: each access written on its own (one INSERT, one UPDATE).
    base = later_base()
    counter = WriteCounter()
    started = time.perf_counter()
    with connection.execute_wrapper(counter):
        for event in events(base):
            guest_activity_record_batch(events=[event])
    results["one at a time (row + stamp)"] = (counter, time.perf_counter() - started)
    assert newest_stamp() == base + timedelta(milliseconds=args.accesses - 1)

    # Batched: publish like the requests do, then one drain as the worker's periodic task does.
    app.conf.task_always_eager = False
    for name, broker in brokers.items():
        use_broker(broker)
        purge_queue()
        base = later_base()
        for event in events(base):
            assert _broker_gate.publish(event), "publishing failed"
        counter = WriteCounter()
        started = time.perf_counter()
        with connection.execute_wrapper(counter):
            flushed = activity_flush(batch_size=args.batch)
        results[f"batched, {name} broker"] = (counter, time.perf_counter() - started)
        assert flushed.rows_inserted == args.accesses, flushed
        # Every way ends with the same stamps: the newest access of each guest.
        assert newest_stamp() == base + timedelta(milliseconds=args.accesses - 1)
    return results


def run(args, database) -> int:
    import tempfile

    folder = tempfile.mkdtemp(prefix="eventsaas-bench-broker-")
    setup_django(database.url, folder)
    from django.conf import settings
    from django.core.management import call_command
    from django.db import connection

    from eventsaas.celery import app

    brokers = {"folder": app.conf.broker_url}
    if broker_reachable(args.broker):
        brokers["redis"] = args.broker
    settings.ACTIVITY_FLUSH_BATCH = args.batch
    call_command("migrate", verbosity=0, interactive=False)
    guests = create_guests(args.guests)
    for broker in brokers.values():
        use_broker(broker)
        purge_queue()
    engine = (
        f"PostgreSQL {divmod(connection.pg_version, 10000)[0]}"
        if connection.vendor == "postgresql"
        else f"SQLite {connection.Database.sqlite_version}"
    )
    print("eventsaas activity tracking benchmark")
    print(f"  database : {engine}, {database.describe()}")
    print(f"  brokers  : a folder ({folder}, the embedded default)", end="")
    print(f", {args.broker}" if "redis" in brokers else f"; Redis at {args.broker} unreachable, left out")

    times = time_page(args, guests[0], brokers)
    count = len(times["tracking off"])
    print(f"\nRSVP page GET /rsvp/answer/, logged-in guest ({count} requests per mode, interleaved)")
    print(f"  {'mode':<30} {'best ms':>8} {'median ms':>10} {'p95 ms':>8}")
    medians = {}
    for name, values in times.items():
        values.sort()
        medians[name] = statistics.median(values)
        p95 = values[min(len(values) - 1, int(len(values) * 0.95))]
        print(f"  {name:<30} {values[0]:8.2f} {medians[name]:10.2f} {p95:8.2f}")
    off = medians["tracking off"]
    for name in (EMBEDDED, REDIS, REDIS_IN_REQUEST, IN_REQUEST):
        if name in medians:
            print(
                f"  latency ratio {name} / off (medians): {medians[name] / off:.2f}x  (+{medians[name] - off:.2f} ms)"
            )

    writes = count_writes(args, guests, brokers)
    print(f"\nDatabase writes for {args.accesses} accesses by {args.guests} guests (flush batch {args.batch})")
    print(f"  {'how':<30} {'INSERT':>7} {'UPDATE':>7} {'total':>7} {'seconds':>8}")
    for name, (counter, seconds) in writes.items():
        print(f"  {name:<30} {counter.inserts:7} {counter.updates:7} {counter.total:7} {seconds:8.2f}")
    unbatched, _ = writes["one at a time (row + stamp)"]
    batched, _ = writes["batched, folder broker"]
    print(f"  {'old request path (stamps only)':<30} {0:7} {args.accesses:7} {args.accesses:7}")
    print(f"  write ratio one-at-a-time / batched: {unbatched.total / batched.total:.1f}x")
    fewer = unbatched.updates / batched.updates
    print(f"  stamp UPDATEs: {unbatched.updates} -> {batched.updates} ({fewer:.1f}x fewer)")
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
    return 0


def main(argv=None) -> int:
    args = parse_args(argv)
    database = PostgresDatabase(args.database_url, recreate=args.recreate) if args.database_url else SqliteFile()
    try:
        return run(args, database)
    finally:
        from django.conf import settings

        if settings.configured:
            from django.db import connections

            connections.close_all()
        database.drop()


if __name__ == "__main__":
    sys.exit(main())

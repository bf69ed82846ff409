"""The guest API's household read, three ways, in process: what the kept households give and what they cost.

Issue #15 asks for `GET /api/v1/rsvp` at 0.25x a bare Django view over HTTP; most of the request was its one
ORM query (the guest and its household, with the event). Since then each process keeps the households it read
(rsvp/household_cache.py), checked on every request against the event's version in Redis. This times, in one
process, alternating:

- **from the database**: the kept households off (GUEST_API_CACHE_SECONDS=0), the query on every request;
- **kept, version read**: as shipped with Redis: the household from memory after one cache read of the
  event's version;
- **kept, no version read**: the same without that read: the ceiling of any household cache, and what the
  read costs.

Everything else runs as in production (middleware, the RS256 check, the access check against the guest's code,
activity tracking handed to the sender thread, the answer built per request, so the RSVP state still follows
the clock).

In one run it creates a throwaway PostgreSQL database (`--database-url`, refused if it exists unless
`--recreate`), runs `migrate` and `seed_demo`, logs in one of the demo's guests through the API, times
`--rounds` rounds of `--requests` requests each way with `django.test.Client`, prints best and median
milliseconds per request and the ratios to "from the database", then drops the database and the event's version key.

    .venv/bin/python bench/api_ceiling.py
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
BASE_DIR = BENCH_DIR.parent
sys.path.insert(0, str(BASE_DIR))

from bench.dashboard import PostgresDatabase  # noqa: E402


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/eventsaas_bench_ceiling")
    parser.add_argument("--recreate", action="store_true", help="drop that database first if it exists")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13")
    parser.add_argument("--requests", type=int, default=300, help="requests per round and way (default 300)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, each way once per round (default 5)")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    database = PostgresDatabase(args.database_url, recreate=args.recreate)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "eventsaas.settings",
        "DJANGO_ENV": "development",
        "DEBUG": "0",
        "DATABASE_URL": database.url,
        "DB_CONN_MAX_AGE": "60",
        "REDIS_URL": args.redis_url,
        "LOG_LEVEL": "WARNING",
    }
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=BASE_DIR, env=env, check=True)
        seeded = subprocess.run(
            [sys.executable, "manage.py", "seed_demo", "--json"], cwd=BASE_DIR, env=env, check=True, capture_output=True
        )
        os.environ.update(env)
        return measure(args, json.loads(seeded.stdout))
    finally:
        from django.conf import settings

        if settings.configured:
            from django.db import connections

            connections.close_all()
        database.drop()


def measure(args, demo: dict) -> int:
    warnings.filterwarnings("ignore", message="No directory at")
    import django

    django.setup()
    from django.conf import settings
    from django.core.cache import cache
    from django.test import Client

    from events import guest_view_versions
    from rsvp import household_cache

    guest = demo["featured_guests"][0]
    client = Client()
    login = {"code": guest["code"], "last_name": guest["last_name"]}
    token = client.post("/api/v1/auth/guest-login", login, content_type="application/json").json()["access"]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    read_version = household_cache.guest_view_version

    def way(seconds: int, version_read: bool):
        def switch():
            settings.GUEST_API_CACHE_SECONDS = seconds
            household_cache.guest_view_version = read_version if version_read else lambda event_id: "fixed"
            household_cache.households_forget()
            client.get("/api/v1/rsvp", **headers)  # the first read of a kept way keeps it

        return switch

    def per_request_ms() -> float:
        started = time.perf_counter()
        for _ in range(args.requests):
            response = client.get("/api/v1/rsvp", **headers)
        assert response.status_code == 200, response.content
        return (time.perf_counter() - started) / args.requests * 1000

    ways = {
        "from the database": way(0, True),
        "kept, version read": way(30, True),
        "kept, no version read": way(30, False),
    }
    times: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for switch in ways.values():
            switch()
            per_request_ms()  # warm-up
        for _ in range(args.rounds):
            for name, switch in ways.items():
                switch()
                times[name].append(per_request_ms())
    finally:
        household_cache.guest_view_version = read_version
        cache.delete(guest_view_versions._key(demo["event"]["id"]))

    print("eventsaas guest API: GET /api/v1/rsvp in process (django.test.Client), PostgreSQL, Redis")
    print(f"  {args.rounds} rounds of {args.requests} requests each way, alternating")
    print(f"  {'way':<24} {'best ms':>8} {'median ms':>10} {'x database':>11}")
    baseline = statistics.median(times["from the database"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<24} {min(values):8.2f} {median:10.2f} {baseline / median:10.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

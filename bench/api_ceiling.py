"""The guest API's ceiling if its household read were cached: in process, the same request three ways.

Issue #15 asks for `GET /api/v1/rsvp` at 0.25x a bare Django view over HTTP. What is left of the request is
mostly its one ORM query (the guest and its household, with the event). Before anyone builds a shared cache
with exact invalidation, this measures what such a cache could give at best, in one process, alternating:

- **as is**: the request as the product serves it (the household read from the database);
- **household from Redis**: the household read replaced by one Redis MGET (the cached household and its
  event's version, as a versioned cache would read them) and unpickling it: what a shared cache would cost;
- **household from memory**: the household handed back from this process's memory: no read at all.

Everything else runs as in production (middleware, the RS256 check, the access check against the guest's code,
the activity LPUSH, the answer built per request, so the RSVP state still follows the clock).

In one run it creates a throwaway PostgreSQL database (`--database-url`, refused if it exists unless
`--recreate`), runs `migrate` and `seed_demo`, logs in one of the demo's guests through the API, times
`--rounds` rounds of `--requests` requests each way with `django.test.Client`, prints best and median
milliseconds per request and the ratios to "as is", then drops the database and its Redis keys.

    .venv/bin/python bench/api_ceiling.py
"""

import argparse
import json
import os
import pickle
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

KEYS = ("bench:ceiling:household", "bench:ceiling:version")


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
    import redis
    from django.test import Client

    from rsvp import services

    guest = demo["featured_guests"][0]
    client = Client()
    login = {"code": guest["code"], "last_name": guest["last_name"]}
    token = client.post("/api/v1/auth/guest-login", login, content_type="application/json").json()["access"]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    store = redis.Redis.from_url(args.redis_url)
    from_database = services.household_with_hint
    kept = {}

    def from_memory(**kwargs):
        key = tuple(sorted(kwargs.items()))
        if key not in kept:
            kept[key] = from_database(**kwargs)
        return kept[key]

    def from_redis(**kwargs):
        blob, _version = store.mget(*KEYS)
        return pickle.loads(blob)[1]

    def per_request_ms(read) -> float:
        services.household_with_hint = read
        try:
            started = time.perf_counter()
            for _ in range(args.requests):
                response = client.get("/api/v1/rsvp", **headers)
            assert response.status_code == 200, response.content
            return (time.perf_counter() - started) / args.requests * 1000
        finally:
            services.household_with_hint = from_database

    # The household as a versioned cache would hold it, next to its event's version.
    per_request_ms(from_memory)
    (household,) = kept.values()
    store.set(KEYS[0], pickle.dumps((1, household), protocol=pickle.HIGHEST_PROTOCOL))
    store.set(KEYS[1], 1)
    ways = {"as is": from_database, "household from Redis": from_redis, "household from memory": from_memory}
    times: dict[str, list[float]] = {name: [] for name in ways}
    try:
        for read in ways.values():
            per_request_ms(read)  # warm-up
        for _ in range(args.rounds):
            for name, read in ways.items():
                times[name].append(per_request_ms(read))
    finally:
        store.delete(*KEYS)

    print("eventsaas guest API ceiling: GET /api/v1/rsvp in process (django.test.Client), PostgreSQL")
    print(f"  {args.rounds} rounds of {args.requests} requests each way, alternating; household of "
          f"{1 + len(household.members)}, {len(pickle.dumps(household))} bytes pickled")  # fmt: skip
    print(f"  {'way':<24} {'best ms':>8} {'median ms':>10} {'x as is':>8}")
    baseline = statistics.median(times["as is"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"  {name:<24} {min(values):8.2f} {median:10.2f} {baseline / median:7.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

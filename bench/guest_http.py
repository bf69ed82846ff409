"""HTTP benchmark: the guest API, the guest and shop pages, and checkout, against a bare Django view.

    .venv/bin/python bench/guest_http.py [--workers 2] [--worker-class sync] [--threads 1] [--duration 10]
                                   [--connections 32] [--database-url postgres://postgres@127.0.0.1:5432/eventsaas_bench_http]
                                   [--redis-url redis://127.0.0.1:6379/13] [--recreate]

Not part of the test suite. Measured the way a user measures a deployment, in one run on one machine:

1. builds a throwaway PostgreSQL database (created here, dropped at the end), runs `migrate` and `seed_demo`;
   empties the Redis database of --redis-url (the cache, the rate-limit counters and the Celery broker of
   the run; no worker runs, so what the requests enqueue just waits there);
2. starts two servers under the same gunicorn settings (gunicorn.conf.py, --worker-class, --workers,
   --threads): the product (DEBUG=0, REDIS_URL set, DB_CONN_MAX_AGE=60, test-payment mode so checkout needs
   no Stripe, logging at WARNING) and the baseline, bench/bare_django.py: one JSON view, no middleware, no
   database;
3. with wrk (--wrk-threads threads, --connections connections, --duration seconds, after a 2 s warm-up)
   measures requests per second and p50/p95 latency of the bare view and of `GET /api/v1/rsvp` with a guest
   token, the guest's RSVP page `GET /rsvp/answer/` with the guest's session (served the page the process kept
   for that guest while the event's version is unchanged, rsvp/guest_page_cache.py), and the public shop page
   `GET /e/<id>/` (as a visitor without a session opens it: served the page the process kept for
   --shop-page-cache-seconds, billing/shop_page_cache.py); prints each against the bare view as a ratio, next
   to the target of issue #15;
4. checkout over HTTP (`POST /api/v1/events/<id>/checkout`, one ticket each) from --concurrency clients
   (tests/support/rush.py): --buyers buyers on an open ticket type (orders per second), then a rush of
   --rush-buyers buyers for --seats seats (wall time, and the seats granted, which must not pass --seats);
5. stops both servers, drops the database and empties the Redis database.

Exit status 1 if a request failed (connection error, or a status other than the expected ones) or the rush
oversold. Targets are printed, not enforced: this is a benchmark, its numbers depend on the machine.
Webhook processing is bench/ticket_rush.py; activity tracking's overhead is bench/tracking.py.
"""

import argparse
import http.cookiejar
import itertools
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
BASE_DIR = BENCH_DIR.parent
sys.path.insert(0, str(BASE_DIR))

from bench.dashboard import PostgresDatabase  # noqa: E402
from bench.web_servers import call_json, free_port  # noqa: E402
from tests.support.rush import rush  # noqa: E402

# wrk prints its summary through this script: requests, errors and the latency percentiles, as one JSON line.
WRK_REPORT = """
done = function(summary, latency, requests)
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
  io.write(string.format(
    "BENCH_JSON {\\"requests\\": %d, \\"duration_us\\": %d, \\"errors\\": %d, \\"non2xx\\": %d, " ..
    "\\"p50_us\\": %d, \\"p95_us\\": %d, \\"p99_us\\": %d}\\n",
    summary.requests, summary.duration, errors, summary.errors.status,
    latency:percentile(50), latency:percentile(95), latency:percentile(99)))
end
"""

# Issue #15's targets, as (ratio of the bare view's throughput, or None) for the wrk rows.
TARGET_RATIO = {"GET /api/v1/rsvp": 0.25, "GET /rsvp/answer/ (guest page)": 0.15, "GET /e/<id>/ (shop page)": 0.15}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database-url", default="postgres://postgres@127.0.0.1:5432/eventsaas_bench_http")
    parser.add_argument("--recreate", action="store_true", help="drop that PostgreSQL database first if it exists")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/13", help="emptied at the start and end")
    parser.add_argument("--worker-class", default="sync", help="gunicorn worker class (sync, gthread, ...)")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn processes")
    parser.add_argument("--threads", type=int, default=1, help="threads per process (gthread)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per wrk run")
    parser.add_argument("--connections", type=int, default=32, help="wrk connections")
    parser.add_argument("--wrk-threads", type=int, default=2)
    parser.add_argument("--buyers", type=int, default=500, help="checkouts on an open ticket type")
    parser.add_argument("--rush-buyers", type=int, default=1000)
    parser.add_argument("--seats", type=int, default=100, help="seats of the rushed ticket type")
    parser.add_argument("--concurrency", type=int, default=50, help="checkout clients at once")
    parser.add_argument(
        "--server-side-binding", action="store_true", help="DB_SERVER_SIDE_BINDING=1 (psycopg prepared statements)"
    )
    parser.add_argument(
        "--no-health-checks", action="store_true", help="DB_CONN_HEALTH_CHECKS=0 (no SELECT 1 per request)"
    )
    parser.add_argument(
        "--shop-page-cache-seconds",
        type=int,
        default=2,
        help="SHOP_PAGE_CACHE_SECONDS (default 2, the product's; 0 renders the shop page for every visitor)",
    )
    parser.add_argument("--only-paths", action="store_true", help="the wrk rows only, no checkout")
    parser.add_argument(
        "--one-address",
        action="store_true",
        help="every buyer from 127.0.0.1, with the checkout rate per client raised so none is refused (the runs "
        "before 2026-12-07); by default each buyer has an address of its own, set by a proxy (X-Real-IP)",
    )
    return parser.parse_args(argv)


# --- servers ----------------------------------------------------------------------------------------------------


class Server:
    """A gunicorn of this checkout on a free loopback port, stopped with its process group."""

    def __init__(self, name: str, app: str, env: dict, args, folder: Path):
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = folder / f"{name}.log"
        command = [
            sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py", "-k", args.worker_class,
            "-w", str(args.workers), "--threads", str(args.threads), "-b", f"127.0.0.1:{self.port}", app,
        ]  # fmt: skip
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.process = subprocess.Popen(
            command, cwd=BASE_DIR, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )

    def wait_until_up(self, path: str, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise SystemExit(f"server exited with {self.process.returncode}; see {self.log_path}")
            try:
                with urllib.request.urlopen(self.base + path, timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise SystemExit(f"{self.base}{path} did not answer in {timeout} s")

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self._log.close()


def guest_session_cookie(base: str, code: str, last_name: str) -> str:
    """Log in on the guest page as a person does (the form, its CSRF token) and return the Cookie header."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    with opener.open(f"{base}/rsvp/", timeout=30) as response:
        page = response.read().decode()
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": csrf, "code": code, "last_name": last_name}).encode()
    request = urllib.request.Request(f"{base}/rsvp/", data=form, headers={"Referer": f"{base}/rsvp/"})
    with opener.open(request, timeout=30) as response:
        if not response.geturl().endswith("/rsvp/answer/"):
            raise SystemExit("the guest login on the page did not reach the answer page")
    return "; ".join(f"{cookie.name}={cookie.value}" for cookie in jar)


# --- measurements -----------------------------------------------------------------------------------------------


def wrk(url: str, args, script: Path, headers: dict[str, str], *, duration: int) -> dict:
    # A slow answer is a slow answer, not a connection error: wrk's own timeout is 2 s.
    command = ["wrk", "-t", str(args.wrk_threads), "-c", str(args.connections), "-d", f"{duration}s"]
    command += ["--timeout", "30s", "-s", str(script)]
    for name, value in headers.items():
        command += ["-H", f"{name}: {value}"]
    output = subprocess.run([*command, url], capture_output=True, text=True, check=True).stdout
    line = next(line for line in output.splitlines() if line.startswith("BENCH_JSON "))
    result = json.loads(line.removeprefix("BENCH_JSON "))
    result["rps"] = result["requests"] / (result["duration_us"] / 1e6)
    return result


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        cpu = next(
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        )
    except (OSError, StopIteration):
        pass
    system = f"{platform.system()} {platform.release()}"
    return f"{os.cpu_count()} CPUs ({cpu}), Python {platform.python_version()}, {system}"


def versions(database_url: str) -> str:
    import django
    import gunicorn
    import psycopg

    with psycopg.connect(database_url) as conn:
        server = conn.execute("SHOW server_version").fetchone()[0]
    wrk_version = subprocess.run(["wrk", "--version"], capture_output=True, text=True).stdout.split(" [")[0]
    return f"Django {django.get_version()}, gunicorn {gunicorn.__version__}, PostgreSQL {server}, {wrk_version}"


def buyer_address(number: int) -> str:
    """The address of the number-th buyer of the run: one each, in 10.0.0.0/8."""
    return f"10.{number >> 16 & 255}.{number >> 8 & 255}.{number & 255}"


def redis_flush(url: str) -> None:
    import redis

    redis.Redis.from_url(url).flushdb()


def main(argv=None) -> int:
    args = parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is not installed: apt-get install wrk")
    redis_flush(args.redis_url)
    database = PostgresDatabase(args.database_url, recreate=args.recreate)
    folder = Path(tempfile.mkdtemp(prefix="eventsaas-bench-http-"))
    script = folder / "report.lua"
    script.write_text(WRK_REPORT)
    keep = {"PATH", "HOME", "LANG", "TMPDIR"}
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("LC_")}
    env.update(
        DJANGO_SETTINGS_MODULE="eventsaas.settings",
        DJANGO_ENV="development",
        DEBUG="0",
        DATABASE_URL=database.url,
        DB_CONN_MAX_AGE="60",
        DB_CONN_HEALTH_CHECKS="0" if args.no_health_checks else "1",
        SHOP_PAGE_CACHE_SECONDS=str(args.shop_page_cache_seconds),
        DB_SERVER_SIDE_BINDING="1" if args.server_side_binding else "0",
        REDIS_URL=args.redis_url,
        TEST_PAYMENTS="1",
        TEST_PAYMENTS_SECRET_FILE=str(folder / "webhook-secret"),
        # A crowd: each buyer from an address of its own, named by the reverse proxy in front (docs/deployment.md),
        # under the product's own checkout rate per client. --one-address: one address, a rate nobody reaches.
        **(
            {"TICKET_CHECKOUT_RATE_PER_CLIENT": "1000000/m"}
            if args.one_address
            else {"CLIENT_IP_HEADER": "HTTP_X_REAL_IP"}
        ),
        LOG_LEVEL="WARNING",
        LOG_FORMAT="text",
    )
    servers: list[Server] = []
    failures: list[str] = []
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=BASE_DIR, env=env, check=True)
        demo = json.loads(
            subprocess.run(
                [sys.executable, "manage.py", "seed_demo", "--json"], cwd=BASE_DIR, env=env, check=True,
                capture_output=True,
            ).stdout
        )  # fmt: skip
        product = Server("product", "eventsaas.wsgi:application", env, args, folder)
        servers.append(product)
        bare = Server("bare", "bench.bare_django:application", env, args, folder)
        servers.append(bare)
        product.wait_until_up("/healthz")
        bare.wait_until_up("/")

        print("eventsaas HTTP benchmark: the product against a bare Django view, same gunicorn settings")
        print(f"  machine : {machine()}")
        print(f"  software: {versions(database.url)}")
        print(
            f"  servers : gunicorn -k {args.worker_class} -w {args.workers} --threads {args.threads}; product with "
            "DEBUG=0, PostgreSQL, REDIS_URL, DB_CONN_MAX_AGE=60, test-payment mode, "
            f"DB_CONN_HEALTH_CHECKS={0 if args.no_health_checks else 1}, "
            f"SHOP_PAGE_CACHE_SECONDS={args.shop_page_cache_seconds}, "
            f"DB_SERVER_SIDE_BINDING={1 if args.server_side_binding else 0}"
        )
        print(f"  load    : wrk -t {args.wrk_threads} -c {args.connections} -d {args.duration}s (after 2 s warm-up)")
        print(
            "  buyers  : "
            + (
                "all from 127.0.0.1, checkout rate per client raised to 1000000/m (--one-address)"
                if args.one_address
                else "each from an address of its own (X-Real-IP), the product's checkout rate per client"
            )
        )

        guest = demo["featured_guests"][0]
        guest_token = call_json(
            "POST", f"{product.base}/api/v1/auth/guest-login", {"code": guest["code"], "last_name": guest["last_name"]}
        )["access"]
        cookie = guest_session_cookie(product.base, guest["code"], guest["last_name"])
        shop = f"/e/{demo['ticketed_event']['id']}/"
        rows = [
            ("bare Django view", bare.base + "/", {}),
            ("GET /api/v1/rsvp", product.base + "/api/v1/rsvp", {"Authorization": f"Bearer {guest_token}"}),
            ("GET /rsvp/answer/ (guest page)", product.base + "/rsvp/answer/", {"Cookie": cookie}),
            ("GET /e/<id>/ (shop page)", product.base + shop, {}),
        ]
        results = {}
        for name, url, headers in rows:
            wrk(url, args, script, headers, duration=2)
            results[name] = result = wrk(url, args, script, headers, duration=args.duration)
            if result["errors"] or result["non2xx"]:
                failures.append(f"{name}: {result['errors']} connection errors, {result['non2xx']} non-2xx answers")
        baseline = results["bare Django view"]
        print()
        print(f"  {'path':<32} {'req/s':>8} {'p50 ms':>7} {'p95 ms':>7} {'x bare':>7} {'p95/bare':>8}  target")
        for name, result in results.items():
            ratio = result["rps"] / baseline["rps"]
            p95_ratio = result["p95_us"] / baseline["p95_us"]
            target = TARGET_RATIO.get(name)
            verdict = ""
            if target is not None:
                verdict = f">= {target:.2f}x: {'met' if ratio >= target else 'NOT met'}"
                if name == "GET /api/v1/rsvp":
                    verdict += f"; p95 <= 3x: {'met' if p95_ratio <= 3 else 'NOT met'}"
            print(
                f"  {name:<32} {result['rps']:8.0f} {result['p50_us'] / 1000:7.1f} {result['p95_us'] / 1000:7.1f} "
                f"{ratio:6.2f}x {p95_ratio:7.1f}x  {verdict}"
            )

        if args.only_paths:
            for failure in failures:
                print(f"FAILED: {failure}")
            return 1 if failures else 0
        organizer = demo["organizer"]
        login = {"email": organizer["email"], "password": organizer["password"]}
        token = call_json("POST", f"{product.base}/api/v1/auth/token", login)["access"]
        event_id = demo["ticketed_event"]["id"]
        path = f"/api/v1/events/{event_id}/checkout"

        def ticket_type(name: str, capacity: int) -> str:
            created = call_json(
                "POST",
                f"{product.base}/api/v1/events/{event_id}/ticket-types",
                {"name": name, "price": 1000, "currency": "eur", "capacity": capacity, "max_per_order": 10},
                token,
            )
            return created["id"]

        buyers = itertools.count(1)

        def checkouts(type_id: str, count: int):
            body = {
                "items": [{"ticket_type": type_id, "quantity": 1}],
                "buyer": {"name": "Bench Buyer", "email": "bench@example.com"},
                "attendees": [{"name": "Bench Buyer"}],
                "answers": {"heard": "Friends"},
            }
            requests = [
                ("POST", path, body, None if args.one_address else {"X-Real-IP": buyer_address(next(buyers))})
                for _ in range(count)
            ]
            return rush("127.0.0.1", product.port, requests, concurrency=args.concurrency)

        print()
        open_type = ticket_type("Open (bench)", 1_000_000)
        checkouts(open_type, 50)  # warm-up
        opened = checkouts(open_type, args.buyers)
        orders = sum(count for status, count in opened.statuses.items() if 200 <= status < 300)
        print(
            f"  checkout, open ticket type: {args.buyers} buyers at concurrency {args.concurrency}: "
            f"{orders / opened.wall_seconds:.0f} orders/s, p50 {opened.percentile(0.5):.0f} ms, "
            f"p95 {opened.percentile(0.95):.0f} ms, statuses {dict(sorted(opened.statuses.items()))} "
            f"(target >= 250 orders/s: {'met' if orders / opened.wall_seconds >= 250 else 'NOT met'})"
        )
        if orders != args.buyers or opened.errors:
            failures.append(f"open checkout: {orders} orders of {args.buyers}, {len(opened.errors)} connection errors")

        rushed_type = ticket_type("Rush (bench)", args.seats)
        rushed = checkouts(rushed_type, args.rush_buyers)
        sales = call_json("GET", f"{product.base}/api/v1/events/{event_id}/sales", token=token)
        seats = next(t for t in sales["ticket_types"] if t["id"] == rushed_type)
        granted = seats["sold"] + seats["reserved"]
        print(
            f"  rush: {args.rush_buyers} buyers for {args.seats} seats at concurrency {args.concurrency}: "
            f"{rushed.wall_seconds:.2f} s wall, p50 {rushed.percentile(0.5):.0f} ms, "
            f"p95 {rushed.percentile(0.95):.0f} ms, seats granted {granted}, oversold {max(0, granted - args.seats)}, "
            f"statuses {dict(sorted(rushed.statuses.items()))} "
            f"(target <= 2.5 s: {'met' if rushed.wall_seconds <= 2.5 else 'NOT met'})"
        )
        if granted > args.seats:
            failures.append(f"the rush oversold: {granted} seats granted for {args.seats}")
        if rushed.errors:
            failures.append(f"the rush had {len(rushed.errors)} connection errors")
    finally:
        for server in servers:
            server.stop()
        database.drop()
        redis_flush(args.redis_url)
        shutil.rmtree(folder, ignore_errors=True)
    for failure in failures:
        print(f"FAILED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

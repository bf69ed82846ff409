"""Benchmark of web servers for the embedded default: a checkout rush and a page crowd against each.

    .venv/bin/python bench/web_servers.py [--servers gthread-1x8,sync-3,...] [--requests 1000] [--concurrency 50]

Not part of the test suite. In one run it:

1. builds a throwaway SQLite database in a temporary folder (migrate, seed_demo), with the folder broker
   next to it, as bin/run's first start does; settings are the embedded default's (DJANGO_ENV=development,
   SQLite WAL + busy timeout + IMMEDIATE transactions), checkout throttling raised for the rush;
2. for each server: starts it on a free loopback port, waits for /healthz, adds a ticket type of 100 seats
   through the organizer API, then
   - **rush**: --requests checkouts (`POST /api/v1/events/<id>/checkout`, one ticket each) from --concurrency
     clients at once (tests/support/rush.py: one keep-alive connection per client, a barrier starts them);
   - **page**: --requests `GET /e/<id>/` (the shop page: templates, three queries) from the same crowd;
   and prints wall time, answers per second, p50/p95 latency, statuses, connection errors, and the seats
   granted (must be exactly 100: sold + reserved never pass the capacity);
3. stops the server (SIGTERM, then SIGKILL) and drops the folder.

Servers that are not installed are skipped: waitress, granian and uvicorn are not project dependencies; install
them into a scratch virtualenv next to requirements.txt to compare (bench/README.md).
"""

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from importlib.util import find_spec
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR))

from tests.support.rush import rush  # noqa: E402

SERVERS = {
    # name: (module that must be importable, command after `python -m`)
    "runserver": ("django", ["django", "runserver", "--noreload", "--nothreading", "{bind}"]),
    "runserver-threads": ("django", ["django", "runserver", "--noreload", "{bind}"]),
    "sync-3": ("gunicorn", ["gunicorn", "-c", "gunicorn.conf.py", "-k", "sync", "-w", "3", "-b", "{bind}"]),
    "gthread-1x8": ("gunicorn", ["gunicorn", "-c", "gunicorn.conf.py", "-w", "1", "--threads", "8", "-b", "{bind}"]),
    "gthread-1x16": ("gunicorn", ["gunicorn", "-c", "gunicorn.conf.py", "-w", "1", "--threads", "16", "-b", "{bind}"]),
    "gthread-2x8": ("gunicorn", ["gunicorn", "-c", "gunicorn.conf.py", "-w", "2", "--threads", "8", "-b", "{bind}"]),
    "waitress-16": (
        "waitress",
        ["waitress", "--listen", "{bind}", "--threads", "16", "eventsaas.wsgi:application"],
    ),
    "granian-1x8": (
        "granian",
        ["granian", "--interface", "wsgi", "--host", "{host}", "--port", "{port}", "--workers", "1",
         "--blocking-threads", "8", "--no-ws", "eventsaas.wsgi:application"],
    ),
    "uvicorn-asgi": (
        "uvicorn",
        ["uvicorn", "--host", "{host}", "--port", "{port}", "--workers", "1", "--no-access-log",
         "eventsaas.asgi:application"],
    ),
}  # fmt: skip


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def call_json(method: str, url: str, body=None, token: str = "") -> dict:
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


def wait_until_up(url: str, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer in {timeout} s")


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pass
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def run_server(name: str, env: dict, demo: dict, args) -> dict:
    _module, command = SERVERS[name]
    port = free_port()
    bind = f"127.0.0.1:{port}"
    command = [part.format(bind=bind, host="127.0.0.1", port=port) for part in command]
    if command[0] == "django":
        command = ["manage.py", *command[1:]]
        argv = [sys.executable, *command]
    else:
        argv = [sys.executable, "-m", *command]
    log = open(Path(env["BENCH_DIR"]) / f"{name}.log", "wb")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        argv, cwd=BASE_DIR, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://{bind}"
    try:
        wait_until_up(f"{base}/healthz", process)
        token = call_json(
            "POST",
            f"{base}/api/v1/auth/token",
            {"email": demo["organizer"]["email"], "password": demo["organizer"]["password"]},
        )["access"]
        event_id = demo["ticketed_event"]["id"]
        ticket_type = call_json(
            "POST",
            f"{base}/api/v1/events/{event_id}/ticket-types",
            {"name": f"Rush {name}", "price": 1000, "currency": "eur", "capacity": 100, "max_per_order": 10},
            token,
        )
        body = {
            "items": [{"ticket_type": ticket_type["id"], "quantity": 1}],
            "buyer": {"name": "Rush Buyer", "email": "rush@example.com"},
            "attendees": [{"name": "Rush Buyer"}],
            "answers": {"heard": "Friends"},
        }
        path = f"/api/v1/events/{event_id}/checkout"
        # Warm-up: the first requests of a process load templates and open connections.
        rush("127.0.0.1", port, [("GET", f"/e/{event_id}/", None)] * 20, concurrency=4)
        checkout = rush("127.0.0.1", port, [("POST", path, body)] * args.requests, concurrency=args.concurrency)
        page = rush("127.0.0.1", port, [("GET", f"/e/{event_id}/", None)] * args.requests, concurrency=args.concurrency)
        sales = call_json("GET", f"{base}/api/v1/events/{event_id}/sales", token=token)
        seats = next(t for t in sales["ticket_types"] if t["id"] == ticket_type["id"])
        granted = seats["sold"] + seats["reserved"]
    finally:
        stop(process)
        log.close()
    server_log = (Path(env["BENCH_DIR"]) / f"{name}.log").read_text(errors="replace")
    return {
        "checkout": checkout,
        "page": page,
        "granted": granted,
        "locked": len(re.findall("database is locked", server_log)),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--servers", default=",".join(SERVERS), help="comma-separated, from: " + ", ".join(SERVERS))
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=50)
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.servers.split(",") if n.strip()]
    unknown = [n for n in names if n not in SERVERS]
    if unknown:
        parser.error(f"unknown servers: {unknown}")

    folder = Path(tempfile.mkdtemp(prefix="eventsaas-bench-servers-"))
    keep = {"PATH", "HOME", "LANG", "TMPDIR"}
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith(("PIP_", "LC_"))}
    env.update(
        DJANGO_SETTINGS_MODULE="eventsaas.settings",
        DATABASE_URL=f"sqlite:///{folder / 'db.sqlite3'}",
        CELERY_BROKER_FOLDER=str(folder / "broker"),
        TICKET_CHECKOUT_RATE_PER_CLIENT="100000/m",
        LOG_LEVEL="WARNING",
        BENCH_DIR=str(folder),
    )
    try:
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=BASE_DIR, env=env, check=True)
        demo = json.loads(
            subprocess.run(
                [sys.executable, "manage.py", "seed_demo", "--json"],
                cwd=BASE_DIR,
                env=env,
                check=True,
                capture_output=True,
            ).stdout
        )
        import sqlite3

        print("eventsaas web servers benchmark (embedded default: SQLite WAL, IMMEDIATE, busy timeout)")
        print(f"  SQLite {sqlite3.sqlite_version}, {os.cpu_count()} CPUs, {args.requests} requests per run, "
              f"{args.concurrency} clients at once; checkouts for 100 seats, then GET /e/<id>/")  # fmt: skip
        columns = ("wall s", 7), ("req/s", 6), ("p50 ms", 7), ("p95 ms", 7), ("errors", 6)
        print(f"  {'server':<18} {'run':<9} " + " ".join(f"{name:>{width}}" for name, width in columns) + "  statuses")
        for name in names:
            module = SERVERS[name][0]
            if find_spec(module) is None:
                print(f"  {name:<18} skipped: {module} is not installed")
                continue
            result = run_server(name, env, demo, args)
            for run in ("checkout", "page"):
                r = result[run]
                statuses = ", ".join(f"{k}: {v}" for k, v in sorted(r.statuses.items()))
                print(
                    f"  {name:<18} {run:<9} {r.wall_seconds:7.2f} {len(r.answers) / r.wall_seconds:6.0f} "
                    f"{r.percentile(0.5):7.0f} {r.percentile(0.95):7.0f} {len(r.errors):6}  {statuses}"
                )
            print(f"  {'':<18} seats granted {result['granted']} of 100; 'database is locked' {result['locked']} times")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

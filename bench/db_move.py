"""Benchmark of `manage.py db_move`: an embedded-default installation of 100,000 guests moved into PostgreSQL.

    .venv/bin/python bench/db_move.py [--guests 100000] [--database-url postgres://postgres@127.0.0.1:5432/eventsaas_bench_move]

Not part of the test suite. In one run it:

1. builds a fresh SQLite file in a temporary directory, migrates it and fills one event with a tenth of the
   guests (bench/dashboard.py's generator: households, answers, logins; bulk_create in batches);
2. moves it with `manage.py db_move --to <database-url>_small` in a child process: the baseline;
3. adds the other nine tenths of the guests and moves the whole file into `<database-url>_large`;
4. prints, for both moves, the rows copied, the wall time (migrate, copy, then verification of both sides),
   rows per second, the CPU time of the command and its writer (rows per CPU second does not depend on
   what else the machine is doing) and the peak resident memory (VmHWM) of the command and of its writer
   process on the target, and the ratio of the peaks: bounded memory means the large move's peak is about
   the small one's.

Exit status 1 when a move fails or the large move's peak is over 500 MB. It creates the PostgreSQL databases
(never one that already exists) and drops them at the end, with the SQLite file.
"""

import argparse
import os
import random
import resource
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

BASE_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(BASE_DIR / "bench"))

from dashboard import PostgresDatabase, SqliteFile, create_organization, fill, setup_django  # noqa: E402

MEMORY_LIMIT_MB = 500


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--guests", type=int, default=100_000, help="guests moved by the large move (default 100000)")
    parser.add_argument(
        "--database-url",
        default="postgres://postgres@127.0.0.1:5432/eventsaas_bench_move",
        help="postgres:// URL; _small and _large are appended to its name for the two targets",
    )
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    if args.guests < 10:
        parser.error("--guests must be at least 10")
    return args


def with_suffix(url: str, suffix: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=parts.path + suffix))


def tree_peak_rss(root_pid: int) -> dict[int, int]:
    """VmHWM (peak resident memory, kB) of a process and its descendants, by pid."""
    peaks, pending = {}, [root_pid]
    while pending:
        pid = pending.pop()
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                peaks[pid] = int(line.split()[1])
        pending.extend(int(child) for child in children)
    return peaks


def cpu_seconds_of_children() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_move(source_url: str, target_url: str) -> dict:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "eventsaas.settings",
        "DATABASE_URL": source_url,
        "DJANGO_ENV": "development",
        "LOG_LEVEL": "WARNING",
    }
    started = time.perf_counter()
    cpu_before = cpu_seconds_of_children()
    process = subprocess.Popen(
        [sys.executable, "manage.py", "db_move", "--to", target_url, "-v0"],
        cwd=BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    peaks: dict[int, int] = {}
    done = threading.Event()

    def watch():
        # VmHWM only grows, so the last reading before a process ends is its peak (to within 50 ms).
        while not done.is_set():
            for pid, peak in tree_peak_rss(process.pid).items():
                peaks[pid] = max(peaks.get(pid, 0), peak)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    output, _ = process.communicate()
    done.set()
    watcher.join()
    seconds = time.perf_counter() - started
    # The command and its writer (waited for by the command): CPU time, which other load on the machine
    # does not inflate the way it inflates wall time.
    cpu = cpu_seconds_of_children() - cpu_before
    command_peak = peaks.pop(process.pid, 0)
    writer_peak = max(peaks.values(), default=0)
    rows = 0
    for line in output.splitlines():
        cells = line.split()
        if len(cells) >= 3 and cells[1].isdigit():
            rows += int(cells[1])
    return {
        "ok": process.returncode == 0,
        "output": output,
        "rows": rows,
        "seconds": seconds,
        "cpu": cpu,
        "command_mb": command_peak / 1024,
        "writer_mb": writer_peak / 1024,
    }


def main(argv=None) -> int:
    args = parse_args(argv)
    if urlsplit(args.database_url).scheme not in {"postgres", "postgresql"}:
        raise SystemExit("--database-url must be a postgres:// URL")
    source = SqliteFile()
    targets = [
        PostgresDatabase(with_suffix(args.database_url, "_small"), recreate=False),
        PostgresDatabase(with_suffix(args.database_url, "_large"), recreate=False),
    ]
    try:
        return run(args, source, targets)
    finally:
        from django.db import connections

        connections.close_all()
        source.drop()
        for target in targets:
            target.drop()


def run(args, source, targets) -> int:
    setup_django(source.url)
    from django.core.management import call_command
    from django.db import connection
    from django.utils import timezone

    call_command("migrate", verbosity=0, interactive=False)
    now = timezone.now()
    rng, codes = random.Random(args.seed), set()
    _owner, _tenant, _small, big = create_organization(now)
    small_count = args.guests // 10
    print("eventsaas db_move benchmark")
    print(f"  source : SQLite {connection.Database.sqlite_version}, {source.path}")
    print(f"  target : PostgreSQL, {targets[0].name} and {targets[1].name}")
    results = []
    for target, count in ((targets[0], small_count), (targets[1], args.guests - small_count)):
        phase = time.perf_counter()
        fill(event=big, count=count, rng=rng, codes=codes, now=now)
        print(f"  filled : {len(codes):,} guests in {time.perf_counter() - phase:.1f} s")
        connection.close()  # the move's process reads the file on its own
        result = timed_move(source.url, target.url)
        results.append((len(codes), result))
        if not result["ok"]:
            print(result["output"])
            print("The move failed.")
            return 1

    print()
    print(
        f"  {'guests':>8}  {'rows':>8}  {'seconds':>8}  {'rows/s':>8}  {'CPU s':>7}  {'rows/CPU s':>10}  "
        f"{'command MB':>10}  {'writer MB':>9}"
    )
    for guests, result in results:
        print(
            f"  {guests:>8,}  {result['rows']:>8,}  {result['seconds']:>8.1f}  "
            f"{result['rows'] / result['seconds']:>8,.0f}  {result['cpu']:>7.1f}  "
            f"{result['rows'] / result['cpu']:>10,.0f}  {result['command_mb']:>10.0f}  {result['writer_mb']:>9.0f}"
        )
    (_, small), (_, large) = results
    large_peak = max(large["command_mb"], large["writer_mb"])
    small_peak = max(small["command_mb"], small["writer_mb"])
    print(f"\n  peak memory, large move / small move: {large_peak / small_peak:.2f} (10x the rows)")
    print("  rows/s and rows/CPU s count every copied row (guests, audit log, users...) over the whole command:")
    print("  migrate, copy and verification of both sides. CPU s: the command's and its writer's, not PostgreSQL's.")
    print("\nVerification of the large move:\n" + large["output"])
    if large_peak > MEMORY_LIMIT_MB:
        print(f"Peak memory {large_peak:.0f} MB is over {MEMORY_LIMIT_MB} MB.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

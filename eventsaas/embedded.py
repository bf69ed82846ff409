"""The embedded default's processes, started and stopped together (bin/run runs this after migrate and seed_demo).

    python -m eventsaas.embedded --port 8000

- **web**: gunicorn with gthread workers (gunicorn.conf.py), serving the pages and the static files (WhiteNoise).
- **worker**: one Celery worker with beat inside it (`worker --beat`): background tasks (emails, webhooks,
  activity) and the scheduled jobs (order expiry, reminders, digests, RSVP closing, clean-up). Its broker is a
  folder (kombu's filesystem transport, settings.CELERY_BROKER_FOLDER): no server to install.

Each runs in its own process group. Once the web server answers /healthz this prints where it serves. Ctrl+C
(SIGINT), SIGTERM or SIGHUP, or either process ending, stops both: SIGTERM to each (running requests and tasks
finish), then SIGKILL to whatever is left in their process groups after STOP_GRACE_SECONDS. Nothing it started
outlives it; if it is killed itself, the kernel sends its two children SIGTERM (PR_SET_PDEATHSIG), and they
stop their own.

Exit status: 0 after a signal, 1 when a process ended by itself or the web server never answered.
"""

import argparse
import ctypes
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

STOP_GRACE_SECONDS = 25
START_TIMEOUT_SECONDS = 90


def _say(*lines: str) -> None:
    """Tell the person at the console (bin/run): the launcher's lines are its interface, shown at once."""
    sys.stdout.write("".join(f"{line}\n" for line in lines))
    sys.stdout.flush()


def _die_with_parent():  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass  # not Linux: a killed launcher leaves its children to the operator


class Supervisor:
    def __init__(self) -> None:
        self.children: dict[str, subprocess.Popen] = {}
        self.stop_signal: int | None = None

    def start(self, name: str, command: list[str], env: dict | None = None) -> None:
        self.children[name] = subprocess.Popen(
            command,
            env={**os.environ, **(env or {})},
            start_new_session=True,
            preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,
        )

    def request_stop(self, signum, _frame) -> None:
        self.stop_signal = signum

    def ended(self) -> str | None:
        """The name of a child that has exited, if any."""
        return next((name for name, child in self.children.items() if child.poll() is not None), None)

    def stop(self) -> None:
        # SIGTERM to the leaders only: gunicorn's master and Celery's main process each stop their own
        # workers in order (a pool process signalled directly would just be replaced).
        for child in self.children.values():
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for name, child in self.children.items():
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                _say(f"eventsaas: the {name} did not stop in {STOP_GRACE_SECONDS} s; killing it")
        # Whatever is left in the groups (a leader that hung, a pool process it left behind) is killed,
        # and only gone once the kernel says the group is empty.
        for child in self.children.values():
            _signal_group(child, signal.SIGKILL)
            child.wait()
        deadline = time.monotonic() + 5
        while any(_group_exists(child) for child in self.children.values()) and time.monotonic() < deadline:
            time.sleep(0.05)


def _signal_group(child: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(child.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass  # the group is gone already


def _group_exists(child: subprocess.Popen) -> bool:
    """Whether a live process is left in the child's group (a zombie waiting for init to reap it is not)."""
    proc = Path("/proc")
    if not proc.is_dir():
        try:
            os.killpg(child.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == child.pid and fields[0] != "Z":  # fields: state, ppid, pgrp, ...
            return True
    return False


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def _worker_command(python: str) -> list[str]:
    return [
        python,
        "-m",
        "celery",
        "-A",
        "eventsaas",
        "--quiet",  # no banner: the address printed below is what a person looks for
        "worker",
        "--beat",
        "--concurrency",
        os.environ.get("WORKER_CONCURRENCY", "2"),
        # Cluster chatter means nothing with one worker, and the folder broker would carry it to no one.
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
    ]


def _announce(address: str) -> None:
    _say(
        f"\neventsaas is serving at {address}",
        f"  guests answer at {address}/rsvp/ · organizers log in at {address}/login/",
        "  background tasks and scheduled jobs run in the worker next to it (docs/workers.md)",
        "  (Ctrl+C stops everything)",
    )


def _watch(supervisor: Supervisor, address: str) -> int:
    """Until a signal: announce the address once the web server answers; 1 if a process ends or it never answers."""
    started = time.monotonic()
    announced = False
    while supervisor.stop_signal is None:
        if name := supervisor.ended():
            _say(f"eventsaas: the {name} process ended (exit status {supervisor.children[name].returncode})")
            return 1
        if not announced:
            if _answers(f"{address}/healthz"):
                announced = True
                _announce(address)
            elif time.monotonic() - started > START_TIMEOUT_SECONDS:
                _say(f"eventsaas: the web server did not answer at {address} in {START_TIMEOUT_SECONDS} s")
                return 1
        time.sleep(0.2)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Run the web server, worker and beat of the embedded default.")
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    address = f"http://{args.host}:{args.port}"

    supervisor = Supervisor()
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, supervisor.request_stop)
    python = sys.executable
    supervisor.start(
        "worker",
        _worker_command(python),
        # Task and schedule chatter every few seconds would drown the console; warnings and errors show.
        env={"LOG_LEVEL": os.environ.get("WORKER_LOG_LEVEL", "WARNING")},
    )
    supervisor.start(
        "web", [python, "-m", "gunicorn", "--config", "gunicorn.conf.py", "--bind", f"{args.host}:{args.port}"]
    )
    status = _watch(supervisor, address)
    if supervisor.stop_signal is not None:
        _say(f"\neventsaas: stopping ({signal.Signals(supervisor.stop_signal).name})")
    supervisor.stop()
    _say("eventsaas: stopped")
    return status


if __name__ == "__main__":
    sys.exit(main())

"""Helpers for the tests that run the product as shipped, in real processes (tests/system/).

Markers: `embedded` (bin/run in a fresh clone) and `prodinstall` (a virtualenv from requirements.txt alone,
gunicorn + worker + beat on PostgreSQL and Redis). They take minutes and start servers, so they run only when
asked for: `bin/test -m embedded`, `bin/test -m prodinstall`, or REQUIRE_EMBEDDED=1 / REQUIRE_PRODINSTALL=1
(as .ci/run sets); a plain `bin/test` lists them as skipped. When asked for, a missing service is a skip, or a
failure with REQUIRE_...=1. `soak` (the production install under load for SOAK_MINUTES) runs only by hand:
`bin/test -m soak -n 0 -s`.

Servers listen on free loopback ports; SYSTEM_TEST_PORTS=18250-18299 limits them to a range.
"""

import json
import os
import random
import socket
import urllib.error
import urllib.request
from functools import partial
from pathlib import Path

import pytest

from tests.support import waiting

ROOT = Path(__file__).resolve().parents[2]

# What a person's shell would pass on; nothing of the test run's own Django settings or services.
PASSED_ON = {"PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME", "SHELL", "TERM"}


SYSTEM_MARKERS = {"embedded": "EMBEDDED", "prodinstall": "PRODINSTALL", "dbmove": "DB_MOVE", "soak": "SOAK"}


def pytest_collection_modifyitems(config, items):
    asked = config.getoption("markexpr") or ""
    for item in items:
        for marker, flag in SYSTEM_MARKERS.items():
            if item.get_closest_marker(marker) and marker not in asked and os.environ.get(f"REQUIRE_{flag}") != "1":
                item.add_marker(pytest.mark.skip(reason=f"runs when asked for: -m {marker} or REQUIRE_{flag}=1"))


def require(flag: str, reason: str):
    """Skip (or, with REQUIRE_<flag>=1, fail) the current test for `reason`."""
    if os.environ.get(f"REQUIRE_{flag}") == "1":
        pytest.fail(f"{reason}; REQUIRE_{flag}=1 makes that a failure", pytrace=False)
    pytest.skip(reason)


def person_env(**extra) -> dict:
    """A clean environment as a person's shell has it (pip's own settings included), plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k in PASSED_ON or k.startswith(("LC_", "PIP_", "XDG_"))}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def free_port() -> int:
    """A port nothing listens on: from SYSTEM_TEST_PORTS (low-high) if set, else any the system gives."""
    ports = os.environ.get("SYSTEM_TEST_PORTS", "")
    if ports:
        low, high = (int(p) for p in ports.split("-"))
        candidates = random.sample(range(low, high + 1), high - low + 1)
    else:
        candidates = [0]
    for candidate in candidates:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise RuntimeError(f"no free port in {ports}")


# HTTP polling of a whole installation: twice a second is often enough.
wait_for = partial(waiting.wait_for, interval=0.5)


def call(method: str, url: str, body=None, *, token: str = "", headers: dict | None = None) -> tuple[int, dict, dict]:
    """An HTTP request with a JSON body; (status, JSON answer or {}, response headers)."""
    request = urllib.request.Request(url, method=method, data=json.dumps(body).encode() if body is not None else None)
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            raw, status, answer_headers = response.read(), response.status, dict(response.headers)
    except urllib.error.HTTPError as error:
        raw, status, answer_headers = error.read(), error.code, dict(error.headers)
    try:
        data = json.loads(raw) if raw else {}
    except ValueError:
        data = {}
    return status, data, answer_headers


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


# --- processes ---------------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process from /proc, None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()
    return fields[0], int(fields[1])


def is_running(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] != "Z"


def process_tree(pid: int) -> set[int]:
    """`pid` and every process descending from it, now."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))):
            parents[int(entry.name)] = stat[1]
    tree, grew = {pid}, True
    while grew:
        children = {child for child, parent in parents.items() if parent in tree} - tree
        tree |= children
        grew = bool(children)
    return tree


def processes_inside(folder: Path) -> list[str]:
    """Running processes whose working directory or command line is inside `folder`."""
    found = []
    folder = str(folder)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not is_running(int(entry.name)):
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if cwd.startswith(folder) or folder in cmdline:
            found.append(f"{entry.name}: {cmdline.strip()}")
    return found

"""bin/run's supervisor (eventsaas/embedded.py) leaves nothing running, even a process that ignores SIGTERM.

tests/system/test_embedded_default.py stops the real bin/run with Ctrl+C and SIGTERM; this covers the
escalation those do not reach: a child that will not stop, and the grandchildren it leaves behind.
"""

import os
import signal
import sys
import time

from eventsaas import embedded

IGNORE_SIGTERM = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
STUBBORN = f"""
import subprocess, sys
child = subprocess.Popen([sys.executable, "-c", {IGNORE_SIGTERM!r}])
print(child.pid, flush=True)
exec({IGNORE_SIGTERM!r})
"""

POLITE = "import time; time.sleep(60)"


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_stop_terminates_then_kills_whole_process_groups(monkeypatch, tmp_path):
    monkeypatch.setattr(embedded, "STOP_GRACE_SECONDS", 1)
    supervisor = embedded.Supervisor()
    grandchild_file = tmp_path / "grandchild"
    with open(grandchild_file, "w") as out:
        supervisor.children["stubborn"] = embedded.subprocess.Popen(
            [sys.executable, "-c", STUBBORN], stdout=out, start_new_session=True
        )
    supervisor.start("polite", [sys.executable, "-c", POLITE])
    deadline = time.monotonic() + 10
    while not grandchild_file.read_text().strip() and time.monotonic() < deadline:
        time.sleep(0.05)
    grandchild = int(grandchild_file.read_text())
    pids = [child.pid for child in supervisor.children.values()] + [grandchild]
    assert all(_running(pid) for pid in pids)

    started = time.monotonic()
    supervisor.stop()

    assert not [pid for pid in pids if _running(pid)]
    assert supervisor.children["polite"].returncode == -signal.SIGTERM  # stopped when asked
    assert supervisor.children["stubborn"].returncode == -signal.SIGKILL  # killed after the grace period
    assert time.monotonic() - started < 10


def test_a_child_that_ends_by_itself_is_noticed():
    supervisor = embedded.Supervisor()
    supervisor.start("short", [sys.executable, "-c", "pass"])
    supervisor.start("long", [sys.executable, "-c", POLITE])
    deadline = time.monotonic() + 10
    while supervisor.ended() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert supervisor.ended() == "short"
    supervisor.stop()
    assert not _running(supervisor.children["long"].pid)


def test_children_get_sigterm_when_the_supervisor_dies():
    # The kernel's PR_SET_PDEATHSIG: a killed bin/run does not orphan its servers.
    reader, writer = os.pipe()
    launcher = f"""
import os, sys
from eventsaas import embedded
supervisor = embedded.Supervisor()
supervisor.start("child", [sys.executable, "-c", {POLITE!r}])
os.write({writer}, str(supervisor.children["child"].pid).encode())
import time; time.sleep(60)
"""
    parent = embedded.subprocess.Popen([sys.executable, "-c", launcher], pass_fds=(writer,), cwd=os.getcwd())
    os.close(writer)
    child = int(os.read(reader, 32))
    os.close(reader)
    assert _running(child)
    parent.kill()
    parent.wait()
    deadline = time.monotonic() + 10
    while _running(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _running(child)

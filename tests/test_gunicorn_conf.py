"""gunicorn.conf.py: gthread by default (bin/run, the image), the worker class from WEB_WORKER_CLASS when set."""

import runpy
from pathlib import Path

CONF = Path(__file__).resolve().parent.parent / "gunicorn.conf.py"


def test_gthread_by_default_with_eight_threads(monkeypatch):
    monkeypatch.delenv("WEB_WORKER_CLASS", raising=False)
    monkeypatch.delenv("WEB_THREADS", raising=False)
    conf = runpy.run_path(str(CONF))
    assert (conf["worker_class"], conf["threads"]) == ("gthread", 8)


def test_a_deployment_behind_a_buffering_proxy_can_choose_sync_workers(monkeypatch):
    monkeypatch.setenv("WEB_WORKER_CLASS", "sync")
    assert runpy.run_path(str(CONF))["worker_class"] == "sync"

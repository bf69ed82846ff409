"""Polling for what happens elsewhere (a worker, a server, another connection), shared by the suites that wait."""

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(predicate: Callable[[], T], *, timeout: float = 20, interval: float = 0.1, what: str = "") -> T:
    """Poll until predicate() is truthy and return its value; AssertionError naming `what` (or the predicate's
    docstring) after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still not {what or predicate.__doc__ or predicate} after {timeout:g} s")
        time.sleep(interval)

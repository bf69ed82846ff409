"""What a web process keeps in memory under a version, for a few seconds (issue #15).

An entry is served only while the version it was kept under is the current one and its seconds have not run
out; a caller reads the current version (before the rows, so a write after the read replaces it) and passes
it in. Bounded: a full store is emptied rather than grown. Thread-safe: gthread workers share it.
"""

import threading
import time
from collections.abc import Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class KeptUnderVersion(Generic[K, V]):
    def __init__(self, max_entries: int) -> None:
        self._max_entries = max_entries
        self._entries: dict[K, tuple[str, float, V]] = {}
        self._lock = threading.Lock()

    def get(self, key: K, version: str) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or entry[0] != version or entry[1] <= time.monotonic():
            return None
        return entry[2]

    def put(self, key: K, version: str, seconds: float, value: V) -> None:
        with self._lock:
            if len(self._entries) >= self._max_entries:
                self._entries.clear()
            self._entries[key] = (version, time.monotonic() + seconds, value)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

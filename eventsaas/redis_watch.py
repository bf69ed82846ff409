"""Copies of Redis keys kept in process memory, dropped as soon as Redis says the key changed.

Redis's own client-side caching (https://redis.io/docs/latest/develop/reference/client-side-caching/), in
its broadcasting mode over RESP2, which Redis 6.0 and later serve: one connection per process asks Redis
(`CLIENT TRACKING ON REDIRECT <itself> BCAST PREFIX <prefix>`, then `SUBSCRIBE __redis__:invalidate`) to
name on it every key under the prefix that any client sets, deletes, or that expires or is evicted. Before
each read the process takes what arrived on that connection (a non-blocking read, no round trip) and drops
the copies it names; a copy nobody named is what Redis holds. redis-py's own client-side cache would do
this but needs RESP3 on Redis 7.4 or later; Debian 12 ships 7.0.

Why a copy is as good as a read (the guest API's versions rely on it, events/guest_view_versions.py):
Redis queues the invalidation of a broadcast key before it writes out the replies of that event-loop pass
(beforeSleep: trackingBroadcastInvalidationMessages, then handleClientsWithPendingWrites, which writes the
clients queued last first), so by the time the writer has its reply (and its user their answer) the message
is on every watching process's socket, and their next read drains it. Redis's threaded I/O (`io-threads`
above 1) does not promise that order; `max_age` bounds what that, or any lost message, could cost. The
"flush everything" message after FLUSHALL or FLUSHDB is sent at once, not in that step: it reaches the
watch after the next round trip to Redis rather than before the flush's own answer (a flush changes no
rows, so no version a reader could miss goes with it).

Fail-safe: no copies unless the connection is up and subscribed; a closed or broken connection, a
message that cannot be parsed, Redis's "flush everything" message (after FLUSHALL, or a restart seen as
a lost connection) or a fork drop every copy, and the caller reads Redis as it would without this. A lost
connection is opened again by the next read; a Redis that cannot be reached, or that (or a proxy in front
of it) refuses CLIENT TRACKING, turns the watch off for the process (logged) for `retry_seconds`.
"""

import logging
import os
import socket
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

try:
    import hiredis  # the C reply parser redis-py uses (requirements.in)
except ImportError:  # pragma: no cover - installed with the product
    hiredis = None  # type: ignore[assignment]

logger = logging.getLogger(__name__)

_V = TypeVar("_V")

INVALIDATE_CHANNEL = b"__redis__:invalidate"


def _command(*parts: str | bytes | int) -> bytes:
    """One command in RESP (the protocol's array of bulk strings)."""
    encoded = [part if isinstance(part, bytes) else str(part).encode() for part in parts]
    return b"*%d\r\n" % len(encoded) + b"".join(b"$%d\r\n%s\r\n" % (len(part), part) for part in encoded)


def _reply(sock: socket.socket, reader: Any) -> Any:
    """The next reply on a blocking socket; a Redis error reply is raised."""
    while (reply := reader.gets()) is False:
        data = sock.recv(65536)
        if not data:
            raise ConnectionError("Redis closed the connection")
        reader.feed(data)
    if isinstance(reply, Exception):
        raise reply
    return reply


class WatchedKeys:
    """Copies of the Redis keys under `prefix` that this process read, each kept while Redis says nothing
    of it changed and at most `max_age` seconds; at most `max_entries` (then all are dropped at once).

    `read(key, load)` answers the copy, or calls `load()` (the caller's own read of Redis) and keeps what it
    returned. Thread-safe (gthread workers); a forked process starts with nothing of its parent's.
    """

    MAX_BEHIND_BYTES = 1 << 20

    def __init__(
        self,
        *,
        url: str,
        prefix: str,
        max_age: float = 5.0,
        max_entries: int = 10_000,
        timeout: float = 1.0,
        retry_seconds: float = 30.0,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self.max_age = max_age
        self.max_entries = max_entries
        self.timeout = timeout
        self.retry_seconds = retry_seconds
        self._lock = threading.Lock()
        self._reset(os.getpid())

    def _reset(self, pid: int) -> None:
        self._pid = pid
        self._sock: socket.socket | None = None
        self._reader: Any = None
        self.client_id: int | None = None  # the watching connection's, in Redis (CLIENT LIST, CLIENT KILL ID)
        self._copies: dict[str, tuple[Any, float]] = {}
        self._generation = 0  # changes whenever copies may have gone stale: a load that spans it keeps nothing
        self._next_attempt = 0.0

    # --- reads ---------------------------------------------------------------------------------------

    def read(self, key: str, load: Callable[[], _V]) -> _V:
        if not key.startswith(self.prefix):
            return load()  # Redis would never name it: a copy could outlive a change
        self._same_process()
        with self._lock:
            watching = self._catch_up()
            if watching:
                copy = self._copies.get(key)
                if copy is not None and copy[1] > time.monotonic():
                    return copy[0]
            generation = self._generation
        value = load()
        if watching and value is not None:
            with self._lock:
                # An invalidation taken since the load began (by another thread) may be about this value.
                if self._generation == generation and self._sock is not None:
                    if len(self._copies) >= self.max_entries:
                        self._copies.clear()
                    self._copies[key] = (value, time.monotonic() + self.max_age)
        return value

    def forget(self, keys: Iterable[str]) -> None:
        """This process changed these keys: drop its copies now (Redis's message about it comes too)."""
        self._same_process()
        with self._lock:
            self._generation += 1
            for key in keys:
                self._copies.pop(key, None)

    def close(self) -> None:
        with self._lock:
            self._disconnect()
            self._next_attempt = 0.0

    # --- the watching connection ---------------------------------------------------------------------

    def _same_process(self) -> None:
        """In a forked child, start afresh: the lock may have been copied held by another thread of the
        parent, and the socket is the parent's (closing the child's descriptor leaves the parent's open)."""
        if self._pid != os.getpid():
            if self._sock is not None:
                try:
                    self._sock.close()
                except OSError:
                    pass
            self._lock = threading.Lock()
            self._reset(os.getpid())

    def _catch_up(self) -> bool:
        """Apply what Redis said since the last read; whether the copies can be trusted now."""
        if self._sock is None and not self._connect():
            return False
        try:
            self._drain()
        except Exception as exc:
            logger.warning("Redis key watch lost (%s); watching again from the next read", exc)
            self._disconnect()
            self._next_attempt = 0.0  # a blip (a restart, a killed connection): the next read tries again
            return False
        return self._sock is not None

    def _connect(self) -> bool:
        now = time.monotonic()
        if now < self._next_attempt:
            return False
        self._next_attempt = now + self.retry_seconds
        try:
            if hiredis is None:
                raise ImportError("hiredis is not installed")
            sock = self._open_socket()
        except Exception as exc:
            logger.warning("Redis key watch not started (%s); reading Redis for every version", exc)
            return False
        self._sock, self._reader = sock, hiredis.Reader()
        try:
            self.client_id = self._call(b"CLIENT", b"ID")
            self._call(b"CLIENT", b"TRACKING", b"ON", b"REDIRECT", self.client_id, b"BCAST", b"PREFIX", self.prefix)
            confirmed = self._call(b"SUBSCRIBE", INVALIDATE_CHANNEL)
            if not (isinstance(confirmed, list) and confirmed[:1] == [b"subscribe"]):
                raise ValueError(f"unexpected answer to SUBSCRIBE: {confirmed!r}")
            sock.setblocking(False)
        except Exception as exc:
            logger.warning("Redis key watch not started (%s); reading Redis for every version", exc)
            self._disconnect()
            return False
        self._generation += 1
        return True

    def _open_socket(self) -> socket.socket:
        parts = urllib.parse.urlsplit(self.url)
        if parts.scheme not in {"redis", "rediss"}:
            raise ValueError(f"a {parts.scheme}:// URL is not watched")
        sock = socket.create_connection((parts.hostname or "localhost", parts.port or 6379), timeout=self.timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if parts.scheme == "rediss":
                query = urllib.parse.parse_qs(parts.query)
                context = ssl.create_default_context()
                if query.get("ssl_cert_reqs", [""])[0].lower() in {"none", "cert_none"}:
                    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
                sock = context.wrap_socket(sock, server_hostname=parts.hostname)
            if parts.password is not None:
                user = urllib.parse.unquote(parts.username or "")
                secret = urllib.parse.unquote(parts.password)
                sock.sendall(_command("AUTH", user, secret) if user else _command("AUTH", secret))
                _reply(sock, hiredis.Reader())
        except BaseException:
            sock.close()
            raise
        return sock

    def _call(self, *parts: bytes | int | str) -> Any:
        """A command and its reply, blocking (only while setting the connection up)."""
        assert self._sock is not None
        self._sock.sendall(_command(*parts))
        return _reply(self._sock, self._reader)

    def _drain(self) -> None:
        """Read what is waiting on the socket without blocking and drop the copies it names."""
        assert self._sock is not None
        waiting = 0
        while True:
            try:
                data = self._sock.recv(65536)
            except (BlockingIOError, ssl.SSLWantReadError):
                break
            if not data:  # read on until nothing waits: messages can come just before the connection closes
                raise ConnectionError("Redis closed the connection")
            self._reader.feed(data)
            waiting += len(data)
            if waiting > self.MAX_BEHIND_BYTES:  # idle while others wrote a lot: starting afresh is cheaper
                raise ConnectionError(f"more than {self.MAX_BEHIND_BYTES} bytes of messages behind")
        while (message := self._reader.gets()) is not False:
            self._apply(message)

    def _apply(self, message: Any) -> None:
        if not (isinstance(message, list) and len(message) == 3 and message[0] == b"message"):
            raise ValueError(f"unexpected message on the watch: {message!r:.200}")
        self._generation += 1
        keys = message[2]
        if keys is None:  # Redis forgot everything (FLUSHALL, FLUSHDB): so does the process
            self._copies.clear()
            return
        for key in keys:
            self._copies.pop(key.decode() if isinstance(key, bytes) else str(key), None)

    def _disconnect(self) -> None:
        self._generation += 1
        self._copies.clear()
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock = None
        self._reader = None

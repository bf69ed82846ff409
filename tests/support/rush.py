"""A crowd of HTTP clients for tests and benchmarks of a running server (loopback only).

`rush(host, port, requests, concurrency=50)` sends every request of `requests` (method, path, JSON body)
from `concurrency` threads at once, each on its own keep-alive connection, released together by a barrier,
and returns what came back: statuses, bodies, latencies and connection errors (a refused, reset or timed-out
connection is recorded, never retried, and the thread opens a new connection for its next request).
"""

import dataclasses
import http.client
import json
import statistics
import threading
import time
from collections import Counter


@dataclasses.dataclass
class Answer:
    status: int | None
    body: bytes
    seconds: float
    error: str = ""
    #: When the answer came, in seconds since the crowd was released.
    finished: float = 0.0

    def json(self):
        return json.loads(self.body)


@dataclasses.dataclass
class RushResult:
    answers: list[Answer]
    wall_seconds: float

    @property
    def statuses(self) -> Counter:
        return Counter(answer.status for answer in self.answers if answer.status is not None)

    @property
    def errors(self) -> list[str]:
        return [answer.error for answer in self.answers if answer.error]

    def percentile(self, fraction: float) -> float:
        """Latency in milliseconds at this fraction (0.5, 0.95) of the answered requests."""
        times = sorted(answer.seconds for answer in self.answers if answer.status is not None)
        if not times:
            return float("nan")
        return times[min(len(times) - 1, int(len(times) * fraction))] * 1000

    def last(self, status: int) -> float:
        """Seconds from the start until the last answer with this status (e.g. when the last seat went)."""
        return max((a.finished for a in self.answers if a.status == status), default=float("nan"))

    def summary(self) -> str:
        answered = [a.seconds for a in self.answers if a.status is not None]
        return (
            f"{len(self.answers)} requests in {self.wall_seconds:.2f} s "
            f"({len(self.answers) / self.wall_seconds:.0f}/s), statuses {dict(sorted(self.statuses.items()))}, "
            f"{len(self.errors)} connection errors, p50 {self.percentile(0.5):.0f} ms, "
            f"p95 {self.percentile(0.95):.0f} ms, mean {statistics.fmean(answered) * 1000 if answered else 0:.0f} ms"
        )


def rush(host: str, port: int, requests: list[tuple], *, concurrency: int = 50, timeout: float = 60) -> RushResult:
    """Send `requests` ((method, path, body or None, headers or None) tuples) with `concurrency` clients at once."""
    answers: list[Answer | None] = [None] * len(requests)
    next_index = iter(range(len(requests)))
    lock = threading.Lock()
    barrier = threading.Barrier(concurrency + 1)
    start = [0.0]

    def client():
        connection = http.client.HTTPConnection(host, port, timeout=timeout)
        barrier.wait()
        while True:
            with lock:
                index = next(next_index, None)
            if index is None:
                break
            method, path, body, headers = (*requests[index], None, None)[:4]
            payload = json.dumps(body).encode() if body is not None else None
            sent_headers = {"Content-Type": "application/json", **(headers or {})}
            started = time.perf_counter()
            try:
                connection.request(method, path, body=payload, headers=sent_headers)
                response = connection.getresponse()
                data = response.read()
                now = time.perf_counter()
                answers[index] = Answer(response.status, data, now - started, finished=now - start[0])
                if response.getheader("Connection", "").lower() == "close":
                    connection.close()
            except (OSError, http.client.HTTPException) as exc:
                now = time.perf_counter()
                answers[index] = Answer(None, b"", now - started, f"{type(exc).__name__}: {exc}", now - start[0])
                connection.close()
        connection.close()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    start[0] = started = time.perf_counter()
    barrier.wait()
    for thread in threads:
        thread.join()
    return RushResult(answers=[a for a in answers if a is not None], wall_seconds=time.perf_counter() - started)

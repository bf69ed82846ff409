"""A TCP proxy that delays everything it forwards by a fixed time each way: a database on another host.

    .venv/bin/python bench/latency_proxy.py --listen 6543 --to 127.0.0.1:5432 --delay-ms 0.25

then point a benchmark at it (`--database-url postgres://postgres@127.0.0.1:6543/eventsaas_bench_rush`). Each
round trip to the database then costs about 2 x --delay-ms more, as across a data centre's network (0.2-1 ms),
where the benchmarks otherwise talk to a PostgreSQL on the same machine (about 0.05 ms). For comparing code
that makes more or fewer round trips; not part of the test suite. Ctrl+C stops it.

Threads, not asyncio: its event loop sleeps in whole milliseconds (epoll), which would turn 0.25 ms into 1 ms.
"""

import argparse
import queue
import socket
import socketserver
import threading
import time


def _forward(source: socket.socket, target: socket.socket, delay: float) -> None:
    """Everything read from `source` written to `target` `delay` after it arrived, in order."""
    pending: queue.SimpleQueue[tuple[float, bytes]] = queue.SimpleQueue()

    def send() -> None:
        while True:
            due, data = pending.get()
            if not data:
                target.shutdown(socket.SHUT_WR)
                return
            if (wait := due - time.monotonic()) > 0:
                time.sleep(wait)
            target.sendall(data)

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        while data := source.recv(65536):
            pending.put((time.monotonic() + delay, data))
    except OSError:
        pass
    pending.put((0.0, b""))
    sender.join()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    upstream: tuple[str, int]
    delay: float


class _Connection(socketserver.BaseRequestHandler):
    server: _Server

    def handle(self) -> None:
        client = self.request
        upstream = socket.create_connection(self.server.upstream)
        for sock in (client, upstream):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        back = threading.Thread(target=_forward, args=(upstream, client, self.server.delay), daemon=True)
        back.start()
        try:
            _forward(client, upstream, self.server.delay)
            back.join()
        except OSError:
            pass
        finally:
            upstream.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--listen", type=int, default=6543, help="port to listen on, on 127.0.0.1 (default 6543)")
    parser.add_argument("--to", default="127.0.0.1:5432", help="host:port to forward to (default 127.0.0.1:5432)")
    parser.add_argument("--delay-ms", type=float, default=0.25, help="added each way, in ms (default 0.25)")
    args = parser.parse_args()
    host, _, port = args.to.rpartition(":")
    server = _Server(("127.0.0.1", args.listen), _Connection)
    server.upstream, server.delay = (host, int(port)), args.delay_ms / 1000
    print(f"forwarding 127.0.0.1:{args.listen} -> {host}:{port}, {args.delay_ms:.3f} ms each way", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()

"""Django's PostgreSQL backend, with a health check that needs no round trip when the answer is plain.

With `CONN_HEALTH_CHECKS` Django asks a kept connection `SELECT 1` before the first query of every request:
one round trip to the server per request, about a tenth of a cheap request's time under load
(bench/guest_http.py). A connection the server has ended (a restart, a failover, `pg_terminate_backend`, an
idle timeout) leaves something to read on its socket while it is idle: the server's goodbye, or the end of
the stream. So an idle connection in good order with nothing to read is taken as usable without asking, and
any other state is left to Django's `SELECT 1`, as before. What neither check can see (a network cut without
a word from the server) fails the same way with both: the request's first query raises, and Django closes
the connection at the end of that request.
"""

import select

from django.db.backends.postgresql import base
from psycopg import pq


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        connection = self.connection
        if connection is None or connection.closed or connection.broken:
            return False
        if (
            connection.info.status == pq.ConnStatus.OK
            and connection.info.transaction_status == pq.TransactionStatus.IDLE
            and not _has_input(connection.pgconn.socket)
        ):
            return True
        return super().is_usable()


def _has_input(fd: int) -> bool:
    """Whether the server sent anything (or closed the stream) that nobody has read: a look, not a wait."""
    if hasattr(select, "poll"):  # select() cannot watch a descriptor numbered above 1023; poll() can
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    return bool(select.select([fd], [], [], 0)[0])  # Windows: no poll(), and a socket is not a small number

"""Activity tracking, best effort and batched (DESIGN.md "Activity", docs/workers.md).

- Producer: `track_activity(guest=..., kind=..., request=...)`, one line in a
  view or API. After commit it hands the event to the process's sender, a
  thread that every ACTIVITY_SEND_INTERVAL_MS publishes what gathered as small
  JSON messages to the `eventsaas.activity` queue on the Celery broker (a Redis
  list: one LPUSH for the lot), so no request waits for the broker (0: each is
  published in its request). It never writes to the database and never raises:
  a failed publish is logged, the events are dropped, and the process stops
  trying for ACTIVITY_BROKER_BACKOFF_SECONDS so an outage costs nothing per request.
  What a killed process had not sent yet is lost (at most one interval's worth;
  a process that exits normally sends it first).
- Consumer: `activity_flush()`, run by the periodic task `guests.activity_flush`
  (beat, every ACTIVITY_FLUSH_SECONDS). It drains the queue in batches and hands
  each batch to `guests.services.guest_activity_record_batch`: one row per
  event, one stamp update per guest. Messages are acknowledged after the batch
  is written; re-delivered ones are recognised by their event id.
- The embedded default works the same way: its broker is a folder (one small
  file per message) and bin/run starts the worker and beat that drain it.
- Only when tasks run eagerly (CELERY_TASK_ALWAYS_EAGER, e.g. the test suite)
  does `track_activity` write the event through the same service at once, as a
  batch of one: there is no worker to do it.
"""

import atexit
import base64
import dataclasses
import datetime
import json
import logging
import os
import threading
import time
import uuid
from functools import partial
from typing import Any

import redis
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.crypto import salted_hmac
from kombu import Exchange, Queue

from eventsaas.celery import app
from eventsaas.maintenance import maintenance_is_on
from eventsaas.tasks import TRANSIENT_ERRORS
from guests.models import GuestActivity
from guests.services import ActivityBatchResult, guest_activity_record_batch

logger = logging.getLogger(__name__)

ACTIVITY_EXCHANGE = Exchange("eventsaas.activity", type="direct", durable=True)
ACTIVITY_QUEUE = Queue("eventsaas.activity", ACTIVITY_EXCHANGE, routing_key="activity", durable=True)
MESSAGE_VERSION = 1


@dataclasses.dataclass(frozen=True)
class ActivityEvent:
    """One tracked event as it travels from the request to the consumer."""

    id: uuid.UUID
    tenant_id: uuid.UUID
    event_id: uuid.UUID
    guest_id: uuid.UUID
    kind: str
    at: datetime.datetime
    user_agent: str = ""
    client_hash: str = ""
    actor_user_id: uuid.UUID | None = None

    @property
    def is_guest_access(self) -> bool:
        return self.kind in GuestActivity.GUEST_KINDS

    @property
    def is_login(self) -> bool:
        return self.kind == GuestActivity.Kind.LOGIN

    def as_message(self) -> dict:
        return {
            "v": MESSAGE_VERSION,
            "id": str(self.id),
            "tenant_id": str(self.tenant_id),
            "event_id": str(self.event_id),
            "guest_id": str(self.guest_id),
            "kind": self.kind,
            "at": self.at.isoformat(),
            "user_agent": self.user_agent,
            "client_hash": self.client_hash,
            "actor_user_id": str(self.actor_user_id) if self.actor_user_id else None,
        }

    @classmethod
    def from_message(cls, body) -> "ActivityEvent":
        """Parse and check a message; ValueError when it is not one of ours."""
        try:
            if body.get("v") != MESSAGE_VERSION or body["kind"] not in GuestActivity.Kind.values:
                raise ValueError("unknown message version or kind")
            at = datetime.datetime.fromisoformat(body["at"])
            if timezone.is_naive(at):
                raise ValueError("naive timestamp")
            actor = body.get("actor_user_id")
            return cls(
                id=uuid.UUID(body["id"]),
                tenant_id=uuid.UUID(body["tenant_id"]),
                event_id=uuid.UUID(body["event_id"]),
                guest_id=uuid.UUID(body["guest_id"]),
                kind=body["kind"],
                at=at,
                user_agent=str(body.get("user_agent") or "")[: GuestActivity.USER_AGENT_MAX_LENGTH],
                client_hash=str(body.get("client_hash") or "")[:32],
                actor_user_id=uuid.UUID(actor) if actor else None,
            )
        except (AttributeError, KeyError, TypeError) as exc:
            raise ValueError(f"malformed activity message: {exc!r}") from exc


# --- producer ------------------------------------------------------------------------------


def track_activity(*, guest, kind: str, request=None, actor_user=None, at=None) -> None:
    """Record, best effort, that `guest` did `kind` (or, for organizer_view, that `actor_user` looked at them).

    Call it from a view or API once the guest is known, e.g.
    `track_activity(guest=guest, kind=GuestActivity.Kind.API_CALL, request=request)`.
    It returns at once and never raises: tracking must not cost a guest their page.
    """
    if not settings.ACTIVITY_TRACKING or maintenance_is_on():
        return
    try:
        event = ActivityEvent(
            id=uuid.uuid4(),
            tenant_id=guest.tenant_id,
            event_id=guest.event_id,
            guest_id=guest.pk,
            kind=kind,
            at=at or timezone.now(),
            user_agent=_user_agent(request),
            client_hash=_client_hash(request),
            # An account, or an API token's identity (its pk is the token's subject, a string).
            actor_user_id=uuid.UUID(str(actor_user.pk))
            if actor_user is not None and actor_user.is_authenticated
            else None,
        )
        # Published only if the request's transaction (if any) commits.
        transaction.on_commit(partial(_deliver, event))
    except Exception:
        logger.warning("Activity not tracked", exc_info=True)


def _user_agent(request) -> str:
    if request is None:
        return ""
    return request.headers.get("user-agent", "")[: GuestActivity.USER_AGENT_MAX_LENGTH]


def _client_hash(request) -> str:
    """A keyed hash of the client address (the key is SECRET_KEY): the same device is recognisable, the IP is not."""
    address = request.META.get("REMOTE_ADDR", "") if request is not None else ""
    if not address:
        return ""
    return salted_hmac("eventsaas.guests.activity.client", address, algorithm="sha256").hexdigest()[:32]


def _deliver(event: ActivityEvent) -> None:
    if app.conf.task_always_eager:
        # Tasks run in-process, so no worker drains a queue: the same service, a batch of one.
        try:
            guest_activity_record_batch(events=[event])
        except Exception:
            logger.warning("Activity not recorded", exc_info=True)
        return
    if settings.ACTIVITY_SEND_INTERVAL_MS > 0:
        _sender.add(event)
    else:
        _broker_gate.publish(event)


class _RedisListPublisher:
    """Publishes to a Redis broker with one LPUSH, in the envelope kombu's Redis transport writes.

    A Celery/kombu publish costs a pooled producer, a connection check and kombu's
    message preparation on every request; the consumer (`activity_flush`, through
    kombu) only needs the list entry. The envelope is kombu's own (virtual transport
    `prepare_message` plus the delivery info and tag it adds), so kombu reads,
    acknowledges and redelivers these messages like any other;
    tests/workers/test_redis_worker.py checks it against the installed kombu.
    """

    def __init__(self, url: str):
        # One connection pool per process (redis-py resets it after a fork); short timeouts: best effort.
        self.client = redis.Redis.from_url(url, socket_timeout=1, socket_connect_timeout=1)

    def publish(self, body: dict) -> None:
        self.publish_many([body])

    def publish_many(self, bodies: list[dict]) -> None:
        # Priority 0 is the queue's own key in kombu's Redis transport; one LPUSH for the lot (oldest read first).
        self.client.lpush(ACTIVITY_QUEUE.name, *(json.dumps(self._envelope(body)) for body in bodies))

    @staticmethod
    def _envelope(body: dict) -> dict:
        encoded = base64.b64encode(json.dumps(body).encode()).decode()
        return {
            "body": encoded,
            "content-encoding": "utf-8",
            "content-type": "application/json",
            "headers": {},
            "properties": {
                "delivery_mode": 2,
                "priority": 0,
                "body_encoding": "base64",
                "delivery_info": {"exchange": "", "routing_key": ACTIVITY_QUEUE.name},
                "delivery_tag": str(uuid.uuid4()),
            },
        }


class _KombuPublisher:
    """Publishes through Celery's producer pool: the folder broker, and Redis set-ups the LPUSH does not cover."""

    def publish(self, body: dict) -> None:
        self.publish_many([body])

    def publish_many(self, bodies: list[dict]) -> None:
        with app.producer_pool.acquire(block=True, timeout=1) as producer:
            # One quick connection attempt: never the minutes-long reconnect loop of a worker.
            producer.connection.ensure_connection(  # type: ignore[union-attr]  # a pooled producer has one
                max_retries=1, interval_start=0, interval_step=0, timeout=1
            )
            for body in bodies:
                producer.publish(
                    body,
                    # The default exchange routes by queue name: on Redis one LPUSH, no binding lookup.
                    exchange="",
                    routing_key=ACTIVITY_QUEUE.name,
                    declare=[ACTIVITY_QUEUE],
                    serializer="json",
                    delivery_mode="persistent",  # type: ignore[arg-type]  # kombu takes the name too
                    retry=False,
                )


def _publisher_for(broker_url: str, transport_options: dict) -> "_RedisListPublisher | _KombuPublisher":
    """The LPUSH for a plain Redis broker; kombu for what changes keys or connections (prefix, TLS, sentinel)."""
    plain_redis = broker_url.startswith("redis://") and not (
        transport_options.get("global_keyprefix") or app.conf.broker_use_ssl
    )
    return _RedisListPublisher(broker_url) if plain_redis else _KombuPublisher()


class _BrokerGate:
    """Publishes activity messages; after a failure, stops trying for a while (per process).

    While the broker is down each request would otherwise pay for a connection
    attempt and write a warning; instead the first failure is logged with the
    back-off, and the events dropped meanwhile are counted in the next warning.
    """

    def __init__(self):
        self.closed_until = 0.0
        self.dropped = 0
        self._publisher: tuple[str, _RedisListPublisher | _KombuPublisher] | None = None

    def publisher(self) -> "_RedisListPublisher | _KombuPublisher":
        url = str(app.conf.broker_url)
        if self._publisher is None or self._publisher[0] != url:  # built once per process
            self._publisher = (url, _publisher_for(url, app.conf.broker_transport_options or {}))
        return self._publisher[1]

    def publish(self, event: ActivityEvent) -> bool:
        return self.publish_many([event])

    def publish_many(self, events: list[ActivityEvent]) -> bool:
        now = time.monotonic()
        if now < self.closed_until:
            self.dropped += len(events)
            return False
        try:
            self.publisher().publish_many([event.as_message() for event in events])
        except Exception as exc:
            backoff = settings.ACTIVITY_BROKER_BACKOFF_SECONDS
            self.closed_until = now + backoff
            dropped, self.dropped = self.dropped + len(events), 0
            logger.warning(
                "Activity broker unreachable (%s: %s); %d event(s) dropped, not trying again for %d s",
                type(exc).__name__,
                exc,
                dropped,
                backoff,
            )
            return False
        return True

    def reset(self) -> None:
        """Forget the back-off and the publisher (tests and benchmarks switch brokers)."""
        self.closed_until, self.dropped = 0.0, 0
        self._publisher = None


_broker_gate = _BrokerGate()


class _Sender:
    """Publishes a process's tracked events from a thread of its own, every ACTIVITY_SEND_INTERVAL_MS.

    A request only appends to a list (microseconds); the thread takes what gathered and publishes it
    through the broker gate in one round trip, so the broker's latency, and its back-off, never reach a
    request. At most MAX_PENDING events wait: beyond that (a broker too slow for the traffic) new ones
    are dropped and counted. The thread is started by the first event of each process (a forked web
    worker starts its own, with nothing inherited), and what is left is sent when the process exits.
    """

    MAX_PENDING = 10_000

    def __init__(self) -> None:
        self._forked()

    def _forked(self) -> None:
        """Start afresh: in a new process (a fork copies the list and locks, held or not, but not the thread)."""
        self._lock = threading.Lock()  # guards the list
        self._sending = threading.Lock()  # one publish at a time; reset() waits for it
        self._pending: list[ActivityEvent] = []
        self._running: int | None = None  # the generation of the thread that should run, if any
        self._generation = 0
        self.overflowed = 0

    def add(self, event: ActivityEvent) -> None:
        with self._lock:
            if self._running is None:
                self._generation += 1
                self._running = self._generation
                threading.Thread(
                    target=self._run, args=(self._generation,), name="activity-sender", daemon=True
                ).start()
            if len(self._pending) >= self.MAX_PENDING:
                self.overflowed += 1
                return
            self._pending.append(event)

    def _run(self, generation: int) -> None:
        while self._running == generation:
            time.sleep(settings.ACTIVITY_SEND_INTERVAL_MS / 1000)
            if self._running == generation:
                self.send_now()

    def send_now(self) -> None:
        """Publish what gathered (the thread does it every interval; tests and the exit call it directly)."""
        with self._sending:
            with self._lock:
                events, self._pending = self._pending, []
                overflowed, self.overflowed = self.overflowed, 0
            if overflowed:
                logger.warning("Activity sender full: %d event(s) dropped", overflowed)
            if events:
                try:
                    _broker_gate.publish_many(events)
                except Exception:  # the gate logs broker failures; this keeps the thread alive whatever happens
                    logger.exception("Activity not sent")

    def reset(self) -> None:
        """Stop the thread and forget what waits, once a publish under way is done (tests switch brokers)."""
        with self._sending, self._lock:
            self._pending, self._running, self.overflowed = [], None, 0


_sender = _Sender()
os.register_at_fork(after_in_child=_sender._forked)
atexit.register(_sender.send_now)


# --- consumer ------------------------------------------------------------------------------


@dataclasses.dataclass
class FlushResult:
    messages: int = 0
    rows_inserted: int = 0
    guests_updated: int = 0
    dropped: int = 0


def activity_flush(*, batch_size: int | None = None, max_seconds: float = 60) -> FlushResult:
    """Drain the activity queue a batch at a time until it is empty (or `max_seconds` have passed).

    Each batch becomes one call of guest_activity_record_batch, then its
    messages are acknowledged. A transient error (database gone) puts the
    batch back on the queue for the next flush and raises; any other error
    writes the batch's events one by one, so one bad event cannot block the
    queue forever.
    """
    batch_size = batch_size or settings.ACTIVITY_FLUSH_BATCH
    deadline = time.monotonic() + max_seconds
    result = FlushResult()
    with app.connection_for_read() as connection:
        queue = ACTIVITY_QUEUE(connection.default_channel)
        queue.declare()
        while time.monotonic() < deadline:
            messages = _take(queue, batch_size)
            if not messages:
                break
            _write(messages, result)
            if len(messages) < batch_size:
                break
    return result


def _take(queue, count: int) -> list[Any]:
    messages: list[Any] = []
    while len(messages) < count:
        message = queue.get(no_ack=False, accept=["json"])
        if message is None:
            break
        messages.append(message)
    return messages


def _write(messages, result: FlushResult) -> None:
    result.messages += len(messages)
    parsed = []
    for message in messages:
        try:
            parsed.append((message, ActivityEvent.from_message(message.payload)))
        except Exception:
            # Not ours or not readable: no retry can fix it.
            logger.warning("Dropping a malformed activity message", exc_info=True)
            result.dropped += 1
            message.ack()
    events = [event for _message, event in parsed]
    try:
        written = guest_activity_record_batch(events=events)
    except TRANSIENT_ERRORS:
        for message, _event in parsed:
            message.requeue()
        raise
    except Exception:
        logger.exception("An activity batch failed; writing its %d events one by one", len(events))
        written = _write_one_by_one(events)
    for message, _event in parsed:
        message.ack()
    result.rows_inserted += written.rows_inserted
    result.guests_updated += written.guests_updated
    result.dropped += written.dropped


def _write_one_by_one(events):
    total = ActivityBatchResult()
    for event in events:
        try:
            one = guest_activity_record_batch(events=[event])
        except Exception:
            logger.exception("Dropping activity event %s that cannot be written", event.id)
            total.dropped += 1
            continue
        total.rows_inserted += one.rows_inserted
        total.guests_updated += one.guests_updated
        total.dropped += one.dropped
    return total

"""Activity on a Redis broker: one LPUSH per access, in the envelope kombu's Redis transport reads as its own.

Skipped without Redis unless REQUIRE_REDIS=1 (see conftest.py).
"""

import base64
import json
import os
import time
import uuid
from pathlib import Path

import pytest
from django.utils import timezone

from guests import activity
from guests.activity import ACTIVITY_QUEUE, ActivityEvent, activity_flush
from guests.models import GuestActivity
from tests.support.celery import celery_config

pytestmark = pytest.mark.redis
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis_broker(redis_client, redis_url):
    with celery_config(broker_url=redis_url, task_always_eager=False) as app:
        yield app


def _event(guest, kind=GuestActivity.Kind.PAGE_VIEW):
    return ActivityEvent(
        id=uuid.uuid4(),
        tenant_id=guest.tenant_id,
        event_id=guest.event_id,
        guest_id=guest.pk,
        kind=kind,
        at=timezone.now(),
        user_agent="Mozilla/5.0 (iPhone)",
    )


def test_a_plain_redis_broker_gets_one_lpush_per_access(redis_broker, redis_client, household, monkeypatch):
    anna, _lisa = household
    publisher = activity._broker_gate.publisher()
    assert isinstance(publisher, activity._RedisListPublisher)
    commands = []
    original = publisher.client.execute_command

    def counting(*args, **options):
        commands.append(args[0])
        return original(*args, **options)

    monkeypatch.setattr(publisher.client, "execute_command", counting)

    assert activity._broker_gate.publish(_event(anna))

    assert commands == ["LPUSH"]
    assert redis_client.llen(ACTIVITY_QUEUE.name) == 1


@pytest.mark.django_db(transaction=True)
def test_kombu_reads_the_pushed_message_like_its_own_and_the_flush_writes_both(redis_broker, redis_client, household):
    anna, lisa = household
    pushed, published = _event(anna, GuestActivity.Kind.LOGIN), _event(lisa)
    assert activity._broker_gate.publish(pushed)
    activity._KombuPublisher().publish(published.as_message())

    # LPUSH puts the newest at the head: kombu's message first, ours second.
    kombus, ours = (json.loads(raw) for raw in redis_client.lrange(ACTIVITY_QUEUE.name, 0, -1))
    assert ours.keys() == kombus.keys()
    assert ours["properties"].keys() == kombus["properties"].keys()
    for name in ("content-type", "content-encoding", "headers"):
        assert ours[name] == kombus[name]
    for name in ("body_encoding", "delivery_info", "delivery_mode", "priority"):
        assert ours["properties"][name] == kombus["properties"][name]
    assert json.loads(base64.b64decode(ours["body"])) == pushed.as_message()

    flushed = activity_flush(batch_size=10)

    assert (flushed.messages, flushed.rows_inserted, flushed.dropped) == (2, 2, 0)
    assert set(GuestActivity.objects.values_list("id", flat=True)) == {pushed.id, published.id}
    assert redis_client.llen(ACTIVITY_QUEUE.name) == 0
    anna.refresh_from_db()
    assert anna.last_login_at is not None


def test_a_key_prefix_or_tls_keeps_the_kombu_publish(redis_url):
    with celery_config(broker_url=redis_url, broker_transport_options={"global_keyprefix": "x:"}):
        assert isinstance(activity._broker_gate.publisher(), activity._KombuPublisher)
    with celery_config(broker_url=redis_url.replace("redis://", "rediss://")):
        assert isinstance(activity._broker_gate.publisher(), activity._KombuPublisher)
    with celery_config(broker_url="folder://localhost/"):
        assert isinstance(activity._broker_gate.publisher(), activity._KombuPublisher)


# --- the sender: a thread per process publishes what gathered, so no request waits for the broker -----


@pytest.fixture
def sending_in_the_background(redis_broker, settings):
    settings.ACTIVITY_SEND_INTERVAL_MS = 50
    activity._sender.reset()
    yield activity._sender
    activity._sender.reset()


def _commands_of(monkeypatch) -> list:
    """The Redis commands the publisher sends, with the thread that sent each."""
    import threading

    publisher = activity._broker_gate.publisher()
    sent = []
    original = publisher.client.execute_command

    def recording(*args, **options):
        sent.append((args[0], len(args) - 2, threading.current_thread().name))
        return original(*args, **options)

    monkeypatch.setattr(publisher.client, "execute_command", recording)
    return sent


def test_a_request_only_hands_its_event_over_and_the_sender_publishes_the_lot_at_once(
    sending_in_the_background, redis_client, household, monkeypatch
):
    anna, lisa = household
    sent = _commands_of(monkeypatch)

    for guest in (anna, lisa, anna):
        activity._deliver(_event(guest))
    assert not [command for command in sent if command[2] != "activity-sender"]  # nothing in the request

    deadline = time.monotonic() + 5
    while redis_client.llen(ACTIVITY_QUEUE.name) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)

    assert sent == [("LPUSH", 3, "activity-sender")]  # one round trip for the three, from the sender's thread
    assert redis_client.llen(ACTIVITY_QUEUE.name) == 3


@pytest.mark.django_db(transaction=True)
def test_what_the_sender_publishes_the_flush_writes_in_order(sending_in_the_background, redis_client, household):
    anna, lisa = household
    login, page = _event(anna, GuestActivity.Kind.LOGIN), _event(lisa)
    activity._deliver(login)
    activity._deliver(page)
    sending_in_the_background.send_now()

    flushed = activity_flush(batch_size=10)

    assert (flushed.messages, flushed.rows_inserted, flushed.dropped) == (2, 2, 0)
    assert set(GuestActivity.objects.values_list("id", flat=True)) == {login.id, page.id}


def test_a_full_sender_drops_new_events_and_says_how_many(
    sending_in_the_background, redis_client, household, monkeypatch, caplog
):
    monkeypatch.setattr(activity._Sender, "MAX_PENDING", 2)
    monkeypatch.setattr(activity._Sender, "_run", lambda self, generation: None)  # sent by hand below
    for _ in range(5):
        activity._deliver(_event(household[0]))

    sending_in_the_background.send_now()

    assert redis_client.llen(ACTIVITY_QUEUE.name) == 2
    assert "Activity sender full: 3 event(s) dropped" in caplog.text


def test_a_forked_process_never_sends_its_parents_events(
    sending_in_the_background, redis_client, household, monkeypatch
):
    monkeypatch.setattr(activity._Sender, "_run", lambda self, generation: None)
    activity._deliver(_event(household[0]))

    sending_in_the_background._forked()  # what os.register_at_fork runs in the child
    sending_in_the_background.send_now()

    assert redis_client.llen(ACTIVITY_QUEUE.name) == 0


def test_a_process_that_exits_sends_what_is_left(redis_url, redis_client, household):
    """A web worker stopping (gunicorn's graceful stop, max-requests) publishes before it goes: atexit."""
    import subprocess
    import sys

    script = (
        "import django, uuid; django.setup()\n"
        "from django.utils import timezone\n"
        "from guests import activity\n"
        "for n in range(3):\n"
        "    activity._deliver(activity.ActivityEvent(id=uuid.uuid4(), tenant_id=uuid.uuid4(), event_id=uuid.uuid4(),"
        " guest_id=uuid.uuid4(), kind='page_view', at=timezone.now()))\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "eventsaas.settings",
        "REDIS_URL": redis_url,
        "ACTIVITY_SEND_INTERVAL_MS": "60000",  # the thread would wait a minute: only the exit can send them
    }
    subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=60)

    assert redis_client.llen(ACTIVITY_QUEUE.name) == 3

"""Activity on a Redis broker: one LPUSH per access, in the envelope kombu's Redis transport reads as its own.

Skipped without Redis unless REQUIRE_REDIS=1 (see conftest.py).
"""

import base64
import json
import uuid

import pytest
from django.utils import timezone

from guests import activity
from guests.activity import ACTIVITY_QUEUE, ActivityEvent, activity_flush
from guests.models import GuestActivity
from tests.support.celery import celery_config

pytestmark = pytest.mark.redis


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

"""Copies of Redis keys kept in memory while Redis says they did not change (eventsaas/redis_watch.py), on the
real Redis of this machine: another client's write is seen by the very next read, without a sleep."""

import logging
import os
import uuid

import pytest
import redis
from django.core.cache import caches
from django.test import override_settings
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from events import guest_view_versions
from eventsaas.redis_watch import WatchedKeys

pytestmark = [pytest.mark.redis]


class CountedLoads:
    """The caller's own read of Redis, counted: a copy served from memory does not call it."""

    def __init__(self, client):
        self.client = client
        self.calls = 0

    def __call__(self, key):
        def load():
            self.calls += 1
            return self.client.get(key)

        return load


@pytest.fixture
def watch(redis_url):
    watched = WatchedKeys(url=redis_url, prefix="w:", max_age=60)
    yield watched
    watched.close()


def served_from_memory(watch, key, loads) -> bool:
    """Whether a second read of `key` was a copy. Another test's FLUSHDB (pytest-xdist runs them at once, each
    on its own Redis database) makes Redis tell every watch to drop everything: then it is tried again."""
    for _attempt in range(5):
        watch.read(key, loads(key))
        before = loads.calls
        watch.read(key, loads(key))
        if loads.calls == before:
            return True
    return False


def test_a_copy_is_served_from_memory_until_another_client_changes_the_key(watch, redis_client):
    loads = CountedLoads(redis_client)
    redis_client.set("w:a", "1")
    assert watch.read("w:a", loads("w:a")) == b"1"
    assert served_from_memory(watch, "w:a", loads)

    redis_client.set("w:a", "2")  # another process: no forget() here, only Redis's message
    before = loads.calls

    assert watch.read("w:a", loads("w:a")) == b"2"
    assert loads.calls == before + 1


def test_every_write_of_another_client_is_seen_by_the_next_read_without_waiting(watch, redis_client):
    # Redis sends the invalidation before the writer's reply: no read after a write may miss it.
    loads = CountedLoads(redis_client)
    for n in range(300):
        redis_client.set("w:race", str(n))
        assert watch.read("w:race", loads("w:race")) == str(n).encode()
        assert watch.read("w:race", loads("w:race")) == str(n).encode()
    assert loads.calls < 600  # the second read of each was a copy (but after another test's FLUSHDB)


def test_deleted_expired_and_flushed_keys_end_their_copies(watch, redis_client):
    loads = CountedLoads(redis_client)
    for key in ("w:gone", "w:expires", "w:flushed"):
        redis_client.set(key, "x")
        assert watch.read(key, loads(key)) == b"x"

    redis_client.delete("w:gone")
    assert watch.read("w:gone", loads("w:gone")) is None

    redis_client.pexpire("w:expires", 1)
    redis_client.set("w:other", "x")  # a command after the expiry, so Redis has noticed it
    while redis_client.exists("w:expires"):
        pass
    assert watch.read("w:expires", loads("w:expires")) is None

    redis_client.flushdb()
    redis_client.ping()  # Redis sends the flush's message at once, before its queued answers: one round trip on
    assert watch.read("w:flushed", loads("w:flushed")) is None


def test_keys_outside_the_prefix_are_never_kept(watch, redis_client):
    # Redis names only the prefix's keys: a copy of another key could outlive its change.
    loads = CountedLoads(redis_client)
    redis_client.set("elsewhere", "1")
    watch.read("elsewhere", loads("elsewhere"))
    watch.read("elsewhere", loads("elsewhere"))
    assert loads.calls == 2


def test_a_lost_connection_drops_every_copy_and_the_watch_comes_back(watch, redis_client):
    loads = CountedLoads(redis_client)
    redis_client.set("w:a", "1")
    watch.read("w:a", loads("w:a"))
    redis_client.client_kill_filter(_id=watch.client_id)  # Redis closes the watching connection

    redis_client.set("w:a", "2")  # a change the closed connection never carried
    assert watch.read("w:a", loads("w:a")) == b"2"
    assert served_from_memory(watch, "w:a", loads)  # watched again at once, on a new connection
    redis_client.set("w:a", "3")
    assert watch.read("w:a", loads("w:a")) == b"3"


def test_messages_just_before_the_connection_closed_do_not_hide_that_it_closed(watch, redis_client):
    loads = CountedLoads(redis_client)
    redis_client.set("w:a", "1")
    watch.read("w:a", loads("w:a"))
    redis_client.set("w:unrelated", "x")  # a message about another key waits on the socket...
    redis_client.client_kill_filter(_id=watch.client_id)  # ...then the connection closes

    redis_client.set("w:a", "2")
    assert watch.read("w:a", loads("w:a")) == b"2"


def test_without_redis_every_read_is_the_callers_and_nothing_fails(caplog):
    unreachable = WatchedKeys(url="redis://127.0.0.1:1/0", prefix="w:", timeout=0.2)
    calls = []
    with caplog.at_level(logging.WARNING, logger="eventsaas.redis_watch"):
        assert unreachable.read("w:a", lambda: calls.append(1) or "v") == "v"
        assert unreachable.read("w:a", lambda: calls.append(1) or "v") == "v"
    assert len(calls) == 2
    assert len(caplog.records) == 1  # said once, then retried only after retry_seconds


def test_a_forked_process_watches_on_its_own_connection_and_leaves_its_parents_open(watch, redis_client, redis_url):
    loads = CountedLoads(redis_client)
    redis_client.set("w:a", "1")
    watch.read("w:a", loads("w:a"))
    parents = watch.client_id

    pid = os.fork()
    if pid == 0:  # the child (a web worker forked by gunicorn): exits with what it saw, never returns
        ok = False
        try:
            client = redis.Redis.from_url(redis_url)
            ok = watch.read("w:a", lambda: b"read by the child") == b"read by the child"  # no copy of the parent's
            ok = ok and watch.client_id not in (None, parents)
            client.set("w:a", "2")
        finally:
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert watch.read("w:a", loads("w:a")) == b"2"  # told on its own connection, which the child left open
    assert watch.client_id == parents


def test_copies_are_kept_max_age_at_most(redis_url, redis_client):
    short = WatchedKeys(url=redis_url, prefix="w:", max_age=0)
    loads = CountedLoads(redis_client)
    short.read("w:a", loads("w:a"))
    short.read("w:a", loads("w:a"))
    short.close()
    assert loads.calls == 2


class ReadsSeeRedis(RuleBasedStateMachine):
    """Whatever other clients do to the keys, in any order, a read through the watch answers what Redis holds."""

    def __init__(self):
        super().__init__()
        self.watch = WatchedKeys(url=self.url, prefix="w:", max_age=60, retry_seconds=0)
        self.client.flushdb()

    keys = st.sampled_from(["w:1", "w:2", "w:3"])

    @rule(key=keys, value=st.integers(0, 3))
    def another_client_sets(self, key, value):
        self.client.set(key, value)

    @rule(keys=st.lists(keys, min_size=1, max_size=3), value=st.integers(0, 3))
    def another_client_sets_many(self, keys, value):
        self.client.mset({key: value for key in keys})

    @rule(key=keys)
    def another_client_deletes(self, key):
        self.client.delete(key)

    @rule()
    def redis_forgets_everything(self):
        self.client.flushdb()
        self.client.ping()  # the flush's message is sent at once, not ordered before the answer (redis_watch.py)

    @rule()
    def the_watch_connection_drops(self):
        if self.watch.client_id is not None:
            self.client.client_kill_filter(_id=self.watch.client_id)

    @rule(key=keys, value=st.integers(0, 3))
    def this_process_writes(self, key, value):
        self.watch.forget([key])
        self.client.set(key, value)

    @rule(key=keys)
    def read(self, key):
        assert self.watch.read(key, lambda: self.client.get(key)) == self.client.get(key)

    @invariant()
    def every_key_reads_as_redis_holds_it(self):
        for key in ("w:1", "w:2", "w:3"):
            assert self.watch.read(key, lambda key=key: self.client.get(key)) == self.client.get(key)

    def teardown(self):
        self.watch.close()


def test_reads_through_the_watch_always_answer_what_redis_holds(redis_url, redis_client):
    ReadsSeeRedis.url, ReadsSeeRedis.client = redis_url, redis_client
    run_state_machine_as_test(
        ReadsSeeRedis,
        settings=settings(max_examples=60, stateful_step_count=30, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow]),
    )  # fmt: skip


@pytest.mark.django_db
def test_a_guest_view_version_another_process_changed_is_read_again_at_once(redis_url, redis_client):
    with override_settings(CACHES={"default": {"BACKEND": "eventsaas.cache.RedisCache", "LOCATION": redis_url}}):
        event_id = uuid.uuid4()
        first = guest_view_versions.guest_view_version(event_id)
        assert guest_view_versions.guest_view_version(event_id) == first
        key = caches["default"].make_key(guest_view_versions._key(event_id))

        redis_client.delete(key)  # what another process's write does to the version (a new token)
        second = guest_view_versions.guest_view_version(event_id)

        assert second not in (None, first)
        assert redis_client.get(key) is not None


def test_a_process_far_behind_starts_afresh_instead_of_reading_every_message(watch, redis_client, monkeypatch):
    loads = CountedLoads(redis_client)
    redis_client.set("w:a", "1")
    watch.read("w:a", loads("w:a"))
    monkeypatch.setattr(WatchedKeys, "MAX_BEHIND_BYTES", 1000)
    redis_client.mset({f"w:other{n}": n for n in range(100)})  # about 1,500 bytes of messages while idle
    old_connection = watch.client_id

    redis_client.set("w:a", "2")
    assert watch.read("w:a", loads("w:a")) == b"2"
    assert served_from_memory(watch, "w:a", loads)
    assert watch.client_id != old_connection

"""The folder broker of the embedded default (eventsaas/broker.py): kombu's filesystem transport, taking messages
from one listing of the folder, never a half-written file, each message once among several consumers."""

import os
import threading
from pathlib import Path

import pytest
from kombu import Connection, Queue

from eventsaas import broker
from eventsaas.celery import app


@pytest.fixture
def folder(tmp_path):
    queue = tmp_path / "queue"
    queue.mkdir()
    (tmp_path / "control").mkdir()
    return tmp_path


def connect(folder) -> Connection:
    return Connection(
        "folder://localhost/",
        transport_options={
            "data_folder_in": str(folder / "queue"),
            "data_folder_out": str(folder / "queue"),
            "control_folder": str(folder / "control"),
        },
    )


def publish(folder, bodies, queue="work"):
    with connect(folder) as connection:
        producer = connection.Producer()
        for body in bodies:
            producer.publish(body, routing_key=queue, declare=[Queue(queue, routing_key=queue)], serializer="json")


def drain(folder, queue="work") -> list:
    taken = []
    with connect(folder) as connection:
        simple = Queue(queue, routing_key=queue)(connection.default_channel)
        while (message := simple.get(no_ack=False)) is not None:
            taken.append(message.payload)
            message.ack()
    return taken


def test_the_folder_scheme_is_this_transport_and_redis_urls_keep_theirs():
    assert type(connect(Path(".")).transport) is broker.Transport
    assert Connection("redis://127.0.0.1:9/0").transport_cls == "redis"
    assert broker.is_folder_broker("folder://localhost/") and broker.is_folder_broker("filesystem://")
    assert not broker.is_folder_broker("redis://127.0.0.1:6379/0") and not broker.is_folder_broker("memory://")


def test_messages_come_out_once_and_in_order(folder):
    publish(folder, [{"n": n} for n in range(50)])
    assert drain(folder) == [{"n": n} for n in range(50)]
    assert drain(folder) == []
    assert not os.listdir(folder / "queue")  # nothing left behind, not even claimed files


def test_draining_lists_the_folder_once_not_once_per_message(folder, monkeypatch):
    publish(folder, [{"n": n} for n in range(300)])
    listings = []
    real_listdir = os.listdir
    monkeypatch.setattr(os, "listdir", lambda path: listings.append(path) or real_listdir(path))

    assert len(drain(folder)) == 300

    # kombu's own transport lists (and sorts) the folder for each of the 300; here once, and once to find it empty.
    assert len(listings) == 2


def test_a_file_still_being_written_is_not_taken(folder):
    publish(folder, [{"n": 1}])
    (written,) = os.listdir(folder / "queue")
    # A publisher in another process, between opening its file and renaming it into place.
    (folder / "queue" / (written.replace("_", "9_", 1) + ".writing")).write_bytes(b"")

    assert drain(folder) == [{"n": 1}]
    assert [name for name in os.listdir(folder / "queue") if name.endswith(".writing")]


def test_a_rejected_message_goes_back_to_the_queue(folder):
    publish(folder, [{"n": 1}])
    with connect(folder) as connection:
        simple = Queue("work", routing_key="work")(connection.default_channel)
        message = simple.get(no_ack=False)
        message.requeue()
    assert drain(folder) == [{"n": 1}]


def test_consumers_in_parallel_take_each_message_exactly_once(folder):
    publish(folder, [{"n": n} for n in range(400)])
    taken, errors = [], []

    def consumer():
        try:
            taken.extend(drain(folder))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=consumer) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    assert sorted(body["n"] for body in taken) == list(range(400))


def test_the_activity_queue_drains_through_the_folder_broker(folder, household, django_capture_on_commit_callbacks):
    """What bin/run's worker does every ACTIVITY_FLUSH_SECONDS: requests publish, the flush writes the batch."""
    from guests.activity import activity_flush, track_activity
    from guests.models import GuestActivity
    from tests.support.celery import celery_config

    anna, _lisa = household
    options = {
        **app.conf.broker_transport_options,
        "data_folder_in": str(folder / "queue"),
        "data_folder_out": str(folder / "queue"),
        "control_folder": str(folder / "control"),
    }
    with celery_config(broker_url="folder://localhost/", broker_transport_options=options, task_always_eager=False):
        with django_capture_on_commit_callbacks(execute=True):
            for _ in range(3):
                track_activity(guest=anna, kind=GuestActivity.Kind.PAGE_VIEW)
        assert len([name for name in os.listdir(folder / "queue") if name.endswith(".msg")]) == 3
        anna.refresh_from_db()
        assert anna.last_access_at is None  # nothing written by the requests themselves

        result = activity_flush()

    assert (result.messages, result.rows_inserted, result.guests_updated) == (3, 3, 1)
    anna.refresh_from_db()
    assert anna.last_access_at is not None

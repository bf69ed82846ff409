"""The broker is down: requests that track activity still answer 200, the failure is logged once."""

import logging
import time

import pytest

from guests import activity
from guests.models import GuestActivity
from tests.rsvp.household_form import household_post, row
from tests.support.celery import celery_config

CLOSED_PORT_BROKER = "redis://127.0.0.1:9/0"  # the discard port: nothing listens, connections are refused


@pytest.fixture
def broker_down(db):
    with celery_config(broker_url=CLOSED_PORT_BROKER, task_always_eager=False) as app:
        yield app


@pytest.fixture
def anna_client(client, household):
    anna = household[0]
    client.post("/rsvp/", {"code": anna.code, "last_name": "Müller"})
    return client


def test_rsvp_page_and_login_answer_while_the_broker_is_down(
    broker_down, client, household, caplog, django_capture_on_commit_callbacks
):
    anna = household[0]
    with caplog.at_level(logging.WARNING, logger="guests.activity"):
        with django_capture_on_commit_callbacks(execute=True):
            login = client.post("/rsvp/", {"code": anna.code, "last_name": "Müller"})
            page = client.get("/rsvp/answer/")
            answer = client.post("/rsvp/answer/", household_post(row("no"), row("later")))

    assert (login.status_code, page.status_code, answer.status_code) == (302, 200, 302)
    assert not GuestActivity.objects.exists()  # the events are lost, which is accepted
    warnings = [r for r in caplog.records if "Activity broker unreachable" in r.getMessage()]
    assert len(warnings) == 1  # then the process stops trying for a while


def test_guest_api_answers_while_the_broker_is_down(broker_down, client, household, django_capture_on_commit_callbacks):
    anna = household[0]
    with django_capture_on_commit_callbacks(execute=True):
        login = client.post(
            "/api/v1/auth/guest-login", {"code": anna.code, "last_name": "Müller"}, content_type="application/json"
        )
        read = client.get("/api/v1/rsvp", HTTP_AUTHORIZATION=f"Bearer {login.json()['access']}")
        answer = client.put(
            "/api/v1/rsvp",
            {"attending": False},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {login.json()['access']}",
        )

    assert (login.status_code, read.status_code, answer.status_code) == (200, 200, 200)


def test_while_backing_off_a_request_does_not_touch_the_broker(
    broker_down, anna_client, monkeypatch, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        anna_client.get("/rsvp/answer/")  # first failure opens the gate (or the login's did, if it ran already)
    dropped_before = activity._broker_gate.dropped
    attempts = []
    monkeypatch.setattr(type(broker_down), "producer_pool", property(lambda self: attempts.append(1)))

    started = time.perf_counter()
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(5):
            assert anna_client.get("/rsvp/answer/").status_code == 200

    assert attempts == []
    assert activity._broker_gate.dropped - dropped_before == 5
    assert time.perf_counter() - started < 5


def test_publishing_is_tried_again_after_the_back_off(broker_down, household, settings, caplog):
    settings.ACTIVITY_BROKER_BACKOFF_SECONDS = 0
    event = activity.ActivityEvent(
        id=activity.uuid.uuid4(),
        tenant_id=household[0].tenant_id,
        event_id=household[0].event_id,
        guest_id=household[0].pk,
        kind=GuestActivity.Kind.LOGIN,
        at=activity.timezone.now(),
    )
    with caplog.at_level(logging.WARNING, logger="guests.activity"):
        assert activity._broker_gate.publish(event) is False
        assert activity._broker_gate.publish(event) is False

    assert len([r for r in caplog.records if "unreachable" in r.getMessage()]) == 2


def test_a_failed_publish_costs_little(broker_down, household):
    event = activity.ActivityEvent(
        id=activity.uuid.uuid4(),
        tenant_id=household[0].tenant_id,
        event_id=household[0].event_id,
        guest_id=household[0].pk,
        kind=GuestActivity.Kind.PAGE_VIEW,
        at=activity.timezone.now(),
    )
    started = time.perf_counter()
    activity._broker_gate.publish(event)
    assert time.perf_counter() - started < 1.5  # one refused connection, no reconnect loop

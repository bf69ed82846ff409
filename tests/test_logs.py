"""One log line per request (request id, tenant, user or guest, status, duration), JSON in production, and the
request id carried into the tasks the request enqueues."""

import io
import json
import logging
import uuid

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import OperationalError
from pythonjsonlogger.json import JsonFormatter

from eventsaas import health
from eventsaas.logs import RequestIdFilter
from rsvp.views import SESSION_CODE, SESSION_GUEST
from tenants.tokens import guest_access_token
from tests.factories import GuestFactory
from tests.rsvp.household_form import household_post, row
from tests.support.celery import celery_config

pytestmark = pytest.mark.django_db


@pytest.fixture
def request_lines(caplog):
    """The eventsaas.request records, with request_id added as the production handler adds it."""
    caplog.set_level(logging.INFO, logger="eventsaas.request")
    caplog.handler.addFilter(RequestIdFilter())

    def lines():
        return [record for record in caplog.records if record.name == "eventsaas.request"]

    return lines


def test_each_request_writes_one_line_with_its_id_status_and_duration(client, request_lines):
    response = client.get("/rsvp/")

    (line,) = request_lines()
    assert (line.method, line.path, line.status) == ("GET", "/rsvp/", 200)
    assert line.duration_ms >= 0
    assert uuid.UUID(line.request_id).hex == line.request_id  # a new id, as 32 hex digits
    assert response["X-Request-ID"] == line.request_id
    assert not {"tenant_id", "user_id", "guest_id"} & vars(line).keys()  # nobody is logged in


def test_a_valid_request_id_from_the_client_or_proxy_is_kept_and_anything_else_replaced(client, request_lines):
    given = str(uuid.uuid4())
    assert client.get("/rsvp/", HTTP_X_REQUEST_ID=given)["X-Request-ID"] == given
    replaced = client.get("/rsvp/", HTTP_X_REQUEST_ID="'; DROP TABLE--")["X-Request-ID"]
    assert replaced != "'; DROP TABLE--" and uuid.UUID(replaced)
    assert [line.request_id for line in request_lines()] == [given, replaced]


def test_a_guests_page_names_the_guest_and_their_tenant(client, event, request_lines):
    guest = GuestFactory(event=event)
    session = client.session
    session[SESSION_GUEST], session[SESSION_CODE] = str(guest.pk), guest.code
    session.save()

    client.get("/rsvp/answer/")

    (line,) = request_lines()
    assert (line.status, line.guest_id, line.tenant_id) == (200, str(guest.pk), str(guest.tenant_id))
    assert not hasattr(line, "user_id")


def test_an_organizer_page_names_the_user_and_the_tenant(owner_client, owner, tenant, event, request_lines):
    owner_client.get(f"/o/{tenant.slug}/events/{event.pk}/")

    (line,) = request_lines()
    assert (line.status, line.user_id, line.tenant_id) == (200, str(owner.pk), str(tenant.pk))


def test_an_api_call_names_the_token_holder(client, event, request_lines):
    guest = GuestFactory(event=event)
    client.get("/api/v1/rsvp", HTTP_AUTHORIZATION=f"Bearer {guest_access_token(guest)}")

    (line,) = request_lines()
    assert (line.status, line.guest_id, line.tenant_id) == (200, str(guest.pk), str(guest.tenant_id))


def test_server_errors_are_logged_as_errors(client, request_lines, monkeypatch):
    from rsvp import views

    monkeypatch.setattr(views, "GuestLoginForm", None)  # the page breaks
    client.raise_request_exception = False
    client.get("/rsvp/")

    (line,) = request_lines()
    assert (line.status, line.levelname) == (500, "ERROR")


@pytest.mark.parametrize("answer", ["maintenance", "not ready"])
def test_a_503_given_on_purpose_is_one_warning_not_an_error(client, request_lines, caplog, monkeypatch, answer):
    """Maintenance refusing a write and a probe told "not ready" are answers, not failures: an ERROR (twice, with
    Django's own django.request line) would page an operator for what they switched on or are already told."""
    if answer == "maintenance":
        call_command("maintenance", "on", stdout=io.StringIO())
        try:
            response = client.post("/rsvp/", {"code": "ABC", "last_name": "Doe"})
        finally:
            call_command("maintenance", "off", stdout=io.StringIO())
    else:
        monkeypatch.setattr(health, "check_database", lambda: (_ for _ in ()).throw(OperationalError("refused")))
        response = client.get("/readyz")

    assert response.status_code == 503
    assert [(line.status, line.levelname) for line in request_lines()] == [(503, "WARNING")]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_production_lines_are_json_objects(client, request_lines):
    client.get("/rsvp/", HTTP_X_REQUEST_ID="0f6f9f8e-5a4b-4c3d-9e2f-1a2b3c4d5e6f")
    (record,) = request_lines()
    options = settings.LOGGING["formatters"]["json"]
    formatter = JsonFormatter(options["format"], rename_fields=options["rename_fields"])

    line = json.loads(formatter.format(record))

    assert line["logger"] == "eventsaas.request" and line["level"] == "INFO"
    assert line["request_id"] == "0f6f9f8e-5a4b-4c3d-9e2f-1a2b3c4d5e6f"
    assert (line["method"], line["path"], line["status"]) == ("GET", "/rsvp/", 200)
    assert isinstance(line["duration_ms"], float)
    assert line["message"].startswith("GET /rsvp/ 200 ")


@pytest.mark.django_db(transaction=True)  # the task is published at the request's own commit, as in production
def test_a_task_published_by_a_request_carries_its_request_id(client, event):
    """The message's headers hold the id; django-guid sets it again in the worker (the production-install
    test sees it in the task's log lines)."""
    guest = GuestFactory(event=event, email="ana@example.com")
    given = str(uuid.uuid4())
    with celery_config(broker_url="memory://", task_always_eager=False) as app:
        with app.connection_for_read() as connection:
            queue = connection.SimpleQueue("celery")
            queue.clear()
            session = client.session
            session[SESSION_GUEST], session[SESSION_CODE] = str(guest.pk), guest.code
            session.save()
            response = client.post("/rsvp/answer/", household_post(row("no")), HTTP_X_REQUEST_ID=given)
            assert response.status_code in (200, 302), response.content
            message = queue.get(timeout=2)
            assert message.headers["task"] == "guests.confirmation_send"
            assert message.headers["X-Request-ID"] == given
            message.ack()
            queue.close()


def test_a_host_outside_allowed_hosts_is_one_request_line_not_an_error_with_a_traceback(client, request_lines, caplog):
    """Scanners send any Host header: each try is a 400 and its line, not an ERROR for the operator."""
    response = client.get("/", HTTP_HOST="scanner.example")

    assert response.status_code == 400
    assert [line.status for line in request_lines()] == [400]
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]


def test_a_worker_pool_process_that_died_is_logged_through_the_console_handler():
    """billiard (Celery's pool) logs "Process 'ForkPoolWorker-2' ... exited with 'signal 9 (SIGKILL)'" on the
    "multiprocessing" logger, which does not propagate: it needs the console handler (JSON in production)."""
    from billiard import util

    handler = next(h for h in util.get_logger().handlers if h.name == "console")
    stream = io.StringIO()
    previous = handler.setStream(stream)
    try:
        util.error("Process %r pid:%r exited with %r", "ForkPoolWorker-2", 25505, "signal 9 (SIGKILL)")
        util.info("chatter below WARNING")
    finally:
        handler.setStream(previous)

    (line,) = stream.getvalue().splitlines()
    assert "ERROR multiprocessing" in line and "exited with 'signal 9 (SIGKILL)'" in line

"""The maintenance switch (eventsaas/maintenance.py): reads work, writes get a 503, probes answer."""

import io

import pytest
from celery.exceptions import Retry
from django.core.management import call_command
from django.urls import reverse

from eventsaas.celery import app
from eventsaas.maintenance import maintenance_is_on
from eventsaas.tasks import task_by_name
from guests.models import Guest
from tests.factories import GuestFactory


@pytest.fixture
def guest(event):
    return GuestFactory(event=event, last_name="Müller")


@pytest.fixture
def maintenance():
    call_command("maintenance", "on", stdout=io.StringIO())
    yield
    call_command("maintenance", "off", stdout=io.StringIO())


def test_the_command_switches_maintenance_on_and_off():
    out = io.StringIO()
    call_command("maintenance", "on", stdout=out)
    assert maintenance_is_on()
    call_command("maintenance", "off", stdout=out)
    assert not maintenance_is_on()
    assert out.getvalue().splitlines() == ["Maintenance is on: writes are refused.", "Maintenance is off."]


@pytest.mark.django_db
def test_a_guest_login_is_refused_with_a_page_and_nothing_is_written(client, guest, maintenance):
    response = client.post(reverse("rsvp:login"), {"code": guest.code, "last_name": guest.last_name})

    assert response.status_code == 503
    assert response["Retry-After"] == "120"
    assert "Down for maintenance" in response.content.decode()
    assert Guest.objects.get(pk=guest.pk).last_login_at is None


@pytest.mark.django_db
def test_the_maintenance_page_is_translated(client, guest, maintenance):
    response = client.post(reverse("rsvp:login"), {"code": guest.code}, HTTP_ACCEPT_LANGUAGE="es")

    assert response.status_code == 503
    assert "mantenimiento" in response.content.decode().lower()


@pytest.mark.django_db
def test_the_api_answers_writes_with_a_json_503(client, maintenance):
    response = client.post("/api/v1/auth/guest-login", {"code": "X", "last_name": "Y"}, content_type="application/json")

    assert response.status_code == 503
    assert response["Retry-After"] == "120"
    assert response.json()["code"] == "maintenance"


@pytest.mark.django_db
def test_reads_and_probes_keep_working(client, maintenance):
    assert client.get(reverse("rsvp:login")).status_code == 200
    assert client.get("/healthz").status_code == 200
    ready = client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["maintenance"] is True


@pytest.mark.django_db
def test_control_without_maintenance_the_same_login_works(client, guest):
    response = client.post(reverse("rsvp:login"), {"code": guest.code, "last_name": guest.last_name})

    assert response.status_code == 302


@pytest.fixture
def published_tasks():
    """Tasks go to the (in-memory) broker instead of running in the caller, as with a real worker."""
    app.conf.task_always_eager = False
    yield
    app.conf.task_always_eager = True


@pytest.mark.django_db
@pytest.mark.parametrize("on", [True, False], ids=["maintenance", "control"])
def test_a_task_that_starts_during_maintenance_goes_back_to_the_broker(published_tasks, on):
    call_command("maintenance", "on" if on else "off", stdout=io.StringIO())
    task = task_by_name("guests.activity_flush")
    task.push_request(id="maintenance-test", retries=0, is_eager=False)
    try:
        if on:
            with pytest.raises(Retry):
                task()
        else:
            task()
    finally:
        task.pop_request()
        call_command("maintenance", "off", stdout=io.StringIO())

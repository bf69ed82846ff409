"""Staff cannot move a row to another owner from its change form: an event's organization and a guest's event
are fixed once created, because the rows below them (guests, ticket types, orders) copy the tenant."""

import datetime

import pytest
from django.urls import reverse

from events.models import Event
from guests.models import Guest
from tests.factories import EventFactory, GuestFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def _form_data(response):
    """The change form's current values, as the browser would post them back unchanged."""
    form = response.context["adminform"].form
    data = {}
    for name in form.fields:
        value = form[name].value()
        if value is None:
            continue
        if isinstance(value, datetime.datetime):  # the admin's split date and time inputs
            data[f"{name}_0"], data[f"{name}_1"] = value.date().isoformat(), value.time().isoformat()
            continue
        if isinstance(value, bool):
            if value:
                data[name] = "on"
            continue
        data[name] = value
    return data


def _post_change_form(client, url, **changes):
    """The admin change form posted back as the page shows it, with `changes`."""
    page = client.get(url)
    assert page.status_code == 200
    return client.post(url, {**_form_data(page), **{name: str(value) for name, value in changes.items()}})


def test_staff_cannot_move_an_event_to_another_organization(staff_client):
    event = EventFactory()
    GuestFactory(event=event)
    other = TenantFactory()
    response = _post_change_form(staff_client, reverse("admin:events_event_change", args=[event.pk]), tenant=other.pk)

    assert response.status_code == 302  # the rest of the form is saved
    event.refresh_from_db()
    assert event.tenant_id != other.pk
    assert Guest.objects.filter(event=event, tenant=event.tenant).count() == 1


def test_staff_cannot_move_a_guest_to_another_event(staff_client):
    guest = GuestFactory()
    elsewhere = EventFactory()
    response = _post_change_form(
        staff_client, reverse("admin:guests_guest_change", args=[guest.pk]), event=elsewhere.pk
    )

    assert response.status_code == 302
    guest.refresh_from_db()
    assert guest.event_id != elsewhere.pk
    assert Event.objects.filter(pk=guest.event_id, tenant_id=guest.tenant_id).exists()


def test_the_guest_search_help_is_in_the_staff_members_language(staff_client):
    GuestFactory()

    response = staff_client.get(reverse("admin:guests_guest_changelist"), HTTP_ACCEPT_LANGUAGE="es")

    page = response.content.decode()
    assert "Nombres y códigos sin tildes" in page
    assert "Names and codes without accents" not in page

"""Staff editing ticket types in Django admin get the services' rules as form errors, and cannot delete a type
whose seats are sold or held (a pending checkout would then pay for a type that no longer exists)."""

import pytest
from django.urls import reverse

from events.models import TicketType
from tests.factories import TicketTypeFactory, UserFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def staff_client(client):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def _post_data(ticket_type, **changes):
    data = {
        "name": ticket_type.name,
        "description": ticket_type.description,
        "price": ticket_type.price,
        "currency": ticket_type.currency,
        "capacity": ticket_type.capacity,
        "max_per_order": ticket_type.max_per_order,
        "access_code": ticket_type.access_code,
        "is_active": "on",
        "position": ticket_type.position,
    }
    data.update(changes)
    return data


def test_a_currency_change_after_sales_is_a_form_error_not_a_success(staff_client):
    ticket_type = TicketTypeFactory(currency="eur")
    TicketType.objects.filter(pk=ticket_type.pk).update(sold=2)
    url = reverse("admin:events_tickettype_change", args=[ticket_type.pk])

    response = staff_client.post(url, _post_data(ticket_type, currency="usd"), follow=True)

    page = response.content.decode()
    assert "The currency cannot change once tickets are sold or reserved." in page
    assert "was changed successfully" not in page
    assert TicketType.objects.get(pk=ticket_type.pk).currency == "eur"


def test_a_second_currency_in_one_event_is_a_form_error_on_add(staff_client):
    general = TicketTypeFactory(currency="eur")
    data = _post_data(general, name="VIP", currency="usd")
    data["event"] = str(general.event.pk)

    response = staff_client.post(reverse("admin:events_tickettype_add"), data, follow=True)

    page = response.content.decode()
    assert "This event sells in EUR; all its ticket types use it." in page
    assert "was added successfully" not in page
    assert TicketType.objects.filter(event_id=general.event_id).count() == 1


@pytest.mark.parametrize("counter", ["sold", "reserved"])
def test_a_ticket_type_with_seats_sold_or_held_cannot_be_deleted(staff_client, counter):
    ticket_type = TicketTypeFactory()
    TicketType.objects.filter(pk=ticket_type.pk).update(**{counter: 1})
    url = reverse("admin:events_tickettype_delete", args=[ticket_type.pk])

    assert staff_client.get(url).status_code == 403
    assert staff_client.post(url, {"post": "yes"}).status_code == 403
    staff_client.post(
        reverse("admin:events_tickettype_changelist"),
        {"action": "delete_selected", "_selected_action": [str(ticket_type.pk)], "post": "yes"},
    )
    assert TicketType.objects.filter(pk=ticket_type.pk).exists()


def test_an_unsold_ticket_type_is_deleted_through_the_service(staff_client):
    ticket_type = TicketTypeFactory()
    url = reverse("admin:events_tickettype_delete", args=[ticket_type.pk])

    response = staff_client.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert not TicketType.objects.filter(pk=ticket_type.pk).exists()

"""Staff editing ticket types in Django admin get the services' rules as form errors, and cannot delete a type
whose seats are sold or held (a pending checkout would then pay for a type that no longer exists)."""

import pytest
from django.contrib.admin.models import ADDITION, CHANGE, DELETION, LogEntry
from django.contrib.messages import ERROR, get_messages
from django.urls import reverse

from billing import services as billing_services
from events import services
from events.models import TicketType
from eventsaas.models import AuditLog
from tests.api.sweep_fixtures import paid_order
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
    response = staff_client.post(url, {"post": "yes"})
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:events_tickettype_change", args=[ticket_type.pk])
    staff_client.post(
        reverse("admin:events_tickettype_changelist"),
        {"action": "delete_selected", "_selected_action": [str(ticket_type.pk)], "post": "yes"},
    )
    assert TicketType.objects.filter(pk=ticket_type.pk).exists()


def test_a_type_whose_tickets_were_all_refunded_is_in_use_as_the_service_says(staff_client):
    """Its counters are back to 0, but its voided tickets stay on record: the admin applies the service's rule
    (events.services.ticket_type_is_in_use), not a copy of its counters' half."""
    ticket_type = TicketTypeFactory()
    order = paid_order(
        event=ticket_type.event, ticket_type=ticket_type, quantity=1, buyer_name="Pat", buyer_email="pat@example.com"
    )
    billing_services.order_refund(order=order, acting_user=None)
    ticket_type.refresh_from_db()
    assert (ticket_type.sold, ticket_type.reserved) == (0, 0)
    url = reverse("admin:events_tickettype_delete", args=[ticket_type.pk])

    assert staff_client.get(url).status_code == 403
    response = staff_client.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert _errors(response) == ["Tickets of this type were sold or are held; take it off sale instead."]
    assert TicketType.objects.filter(pk=ticket_type.pk).exists()


def test_an_unsold_ticket_type_is_deleted_through_the_service(staff_client):
    ticket_type = TicketTypeFactory()
    url = reverse("admin:events_tickettype_delete", args=[ticket_type.pk])

    response = staff_client.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert not TicketType.objects.filter(pk=ticket_type.pk).exists()
    # One admin log entry and one audit record, both naming the deleted row.
    assert list(LogEntry.objects.filter(action_flag=DELETION).values_list("object_id", flat=True)) == [
        str(ticket_type.pk)
    ]
    assert list(AuditLog.objects.filter(action="ticket_type.deleted").values_list("object_id", flat=True)) == [
        ticket_type.pk
    ]


def _errors(response) -> list[str]:
    return [m.message for m in get_messages(response.wsgi_request) if m.level == ERROR]


def _successes(response) -> list[str]:
    return [m.message for m in get_messages(response.wsgi_request) if m.level != ERROR]


def test_seats_sold_after_the_delete_page_loaded_give_a_message_not_a_deletion(staff_client):
    ticket_type = TicketTypeFactory()
    url = reverse("admin:events_tickettype_delete", args=[ticket_type.pk])
    assert staff_client.get(url).status_code == 200
    TicketType.objects.filter(pk=ticket_type.pk).update(sold=1)  # a buyer pays while staff read the page

    response = staff_client.post(url, {"post": "yes"})

    assert response.status_code == 302
    assert response["Location"] == reverse("admin:events_tickettype_change", args=[ticket_type.pk])
    assert _errors(response) == ["Tickets of this type were sold or are held; take it off sale instead."]
    assert _successes(response) == []
    assert TicketType.objects.filter(pk=ticket_type.pk).exists()
    assert not LogEntry.objects.filter(action_flag=DELETION).exists()
    assert not AuditLog.objects.filter(action="ticket_type.deleted").exists()


def test_seats_held_between_the_admin_checks_and_the_delete_are_refused_by_the_service(staff_client, monkeypatch):
    """The narrowest window: the type passes the admin's own checks, then a checkout holds a seat before the
    service deletes. The service refuses; the admin shows it and writes no "deleted" log entry."""
    ticket_type = TicketTypeFactory()
    url = reverse("admin:events_tickettype_delete", args=[ticket_type.pk])
    service_delete = services.ticket_type_delete

    def seat_held_first(**kwargs):
        TicketType.objects.filter(pk=ticket_type.pk).update(reserved=1)
        return service_delete(**kwargs)

    monkeypatch.setattr(services, "ticket_type_delete", seat_held_first)

    response = staff_client.post(url, {"post": "yes"}, follow=True)

    assert response.status_code == 200
    page = response.content.decode()
    assert "Tickets of this type were sold or are held; take it off sale instead." in page
    assert "was deleted successfully" not in page
    assert TicketType.objects.filter(pk=ticket_type.pk).exists()  # the simulated hold is rolled back with the rest
    assert not LogEntry.objects.filter(action_flag=DELETION).exists()
    assert not AuditLog.objects.filter(action="ticket_type.deleted").exists()


def test_capacity_lowered_below_seats_sold_after_the_form_loaded_shows_the_form_again_with_the_edits(
    staff_client, monkeypatch
):
    """The form checks the capacity against the counters it loaded; a sale before the service's conditional
    update is refused there, and the admin shows the same form again, with every value the staff member typed
    and the refusal, instead of "changed successfully" or a redirect that drops the edits."""
    ticket_type = TicketTypeFactory(capacity=10)
    url = reverse("admin:events_tickettype_change", args=[ticket_type.pk])
    assert staff_client.get(url).status_code == 200
    service_update = services.ticket_type_update

    def sold_out_first(**kwargs):
        TicketType.objects.filter(pk=ticket_type.pk).update(sold=5)
        return service_update(**kwargs)

    monkeypatch.setattr(services, "ticket_type_update", sold_out_first)

    response = staff_client.post(
        url, _post_data(ticket_type, capacity=3, name="Renamed", description="Front rows"), follow=True
    )

    assert response.status_code == 200
    assert response.redirect_chain == []
    form = response.context["adminform"].form
    assert form.errors == {"capacity": ["5 tickets are already sold or reserved; the capacity cannot be lower."]}
    assert (form["name"].value(), form["description"].value(), form["capacity"].value()) == (
        "Renamed",
        "Front rows",
        "3",
    )
    page = response.content.decode()
    assert "5 tickets are already sold or reserved; the capacity cannot be lower." in page
    assert 'value="Renamed"' in page
    assert "was changed successfully" not in page
    fresh = TicketType.objects.get(pk=ticket_type.pk)
    assert (fresh.capacity, fresh.name, fresh.description) == (10, ticket_type.name, ticket_type.description)
    assert not LogEntry.objects.filter(action_flag=CHANGE).exists()
    assert not AuditLog.objects.filter(action="ticket_type.updated").exists()


def test_a_refused_add_shows_the_add_form_again_with_the_edits_and_no_addition_logged(staff_client, monkeypatch):
    general = TicketTypeFactory(currency="eur")
    data = _post_data(general, name="VIP")
    data["event"] = str(general.event.pk)

    def other_currency_meanwhile(**kwargs):
        raise services.ValidationError({"currency": "This event sells in USD; all its ticket types use it."})

    monkeypatch.setattr(services, "ticket_type_create", other_currency_meanwhile)
    url = reverse("admin:events_tickettype_add")

    response = staff_client.post(url, data)

    assert response.status_code == 200
    form = response.context["adminform"].form
    assert form.errors == {"currency": ["This event sells in USD; all its ticket types use it."]}
    assert form["name"].value() == "VIP"
    assert _errors(response) == []
    assert TicketType.objects.filter(event_id=general.event_id).count() == 1
    assert not LogEntry.objects.filter(action_flag=ADDITION).exists()


def test_a_change_saved_through_the_admin_is_logged_once_and_audited_once(staff_client):
    ticket_type = TicketTypeFactory(capacity=10)
    url = reverse("admin:events_tickettype_change", args=[ticket_type.pk])

    response = staff_client.post(url, _post_data(ticket_type, capacity=12, name="Renamed"))

    assert response.status_code == 302
    fresh = TicketType.objects.get(pk=ticket_type.pk)
    assert (fresh.capacity, fresh.name) == (12, "Renamed")
    assert LogEntry.objects.filter(action_flag=CHANGE).count() == 1
    audit = AuditLog.objects.get(action="ticket_type.updated")
    assert audit.actor_user_id is not None and sorted(audit.data["fields"]) == ["capacity", "name"]


def test_the_ticket_type_admin_has_no_inlines_to_fail_after_its_form_saved():
    """TicketTypeAdminForm saves through the service as it validates; Django validates inlines after that,
    and the change list's editable rows would be built on the same form, without the acting user."""
    from events.admin import TicketTypeAdmin

    assert not TicketTypeAdmin.inlines
    assert not TicketTypeAdmin.list_editable

"""Ticketed events from the organizer's pages: the kind chosen at creation, ticket types, the event nav."""

import datetime as dt

import pytest
from django.urls import reverse

from events.models import Event, TicketType
from eventsaas.models import AuditLog
from tenants.models import Role
from tests.factories import EventFactory, TicketedEventFactory, TicketTypeFactory

UTC = dt.UTC


def _url(name, event, **kwargs):
    return reverse(name, kwargs={"tenant_slug": event.tenant.slug, "event_id": event.pk, **kwargs})


def _type_url(name, ticket_type):
    return _url(name, ticket_type.event, ticket_type_id=ticket_type.pk)


def _type_form(**overrides):
    data = {
        "name": "Early bird",
        "description": "",
        "price_amount": "25.00",
        "currency": "eur",
        "capacity": "100",
        "sales_start": "",
        "sales_end": "",
        "max_per_order": "10",
        "access_code": "",
        "is_active": "on",
        "position": "0",
    }
    data.update(overrides)
    return data


def _edit_form(ticket_type, **overrides):
    """The edit form as the page fills it in for `ticket_type`, with `overrides` typed over it."""
    current = {
        "name": ticket_type.name,
        "price_amount": f"{ticket_type.price // 100}.{ticket_type.price % 100:02d}",
        "currency": ticket_type.currency,
        "capacity": str(ticket_type.capacity),
    }
    return _type_form(**{**current, **overrides})


def _event_form(**overrides):
    data = {
        "name": "Spring concert",
        "description": "",
        "status": Event.Status.PUBLISHED,
        "starts_at": "2027-04-01T20:00",
        "ends_at": "",
        "timezone": "Europe/Madrid",
        "location": "Hall",
        "dress_code": "",
        "rsvp_deadline": "",
        "language": "en",
        "contact_email": "",
        "questions_text": "",
    }
    data.update(overrides)
    return data


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, timezone="Europe/Madrid")


@pytest.fixture
def general(concert):
    return TicketTypeFactory(event=concert, name="General", price=2500, capacity=100)


# --- the kind, chosen at creation -------------------------------------------------------------------


def test_create_page_makes_a_ticketed_event_when_that_kind_is_chosen(owner_client, tenant):
    response = owner_client.post(
        reverse("events:create", kwargs={"tenant_slug": tenant.slug}),
        _event_form(kind=Event.Kind.TICKETED, attendee_names_required="on"),
    )

    assert response.status_code == 302
    event = Event.objects.get(tenant=tenant, name="Spring concert")
    assert event.kind == Event.Kind.TICKETED
    assert event.attendee_names_required is True


def test_create_page_without_a_kind_makes_an_invite_only_event_that_asks_no_names(owner_client, tenant):
    response = owner_client.post(
        reverse("events:create", kwargs={"tenant_slug": tenant.slug}), _event_form(attendee_names_required="on")
    )

    assert response.status_code == 302
    event = Event.objects.get(tenant=tenant, name="Spring concert")
    assert event.kind == Event.Kind.INVITE_ONLY
    assert event.attendee_names_required is False


def test_create_page_refuses_an_unknown_kind(owner_client, tenant):
    response = owner_client.post(
        reverse("events:create", kwargs={"tenant_slug": tenant.slug}), _event_form(kind="festival")
    )

    assert response.status_code == 400
    assert "kind" in response.context["form"].errors
    assert not Event.objects.filter(tenant=tenant).exists()


def test_edit_page_of_a_ticketed_event_sets_attendee_names_but_never_the_kind(owner_client, concert):
    page = owner_client.get(_url("events:edit", concert))
    assert "attendee_names_required" in page.context["form"].fields
    assert "kind" not in page.context["form"].fields

    response = owner_client.post(
        _url("events:edit", concert),
        _event_form(name=concert.name, kind=Event.Kind.INVITE_ONLY, attendee_names_required="on"),
    )

    assert response.status_code == 302
    concert.refresh_from_db()
    assert concert.attendee_names_required is True
    assert concert.kind == Event.Kind.TICKETED


def test_edit_page_of_an_invite_only_event_has_no_ticket_settings(owner_client, event):
    form = owner_client.get(_url("events:edit", event)).context["form"]

    assert "attendee_names_required" not in form.fields
    assert "kind" not in form.fields


# --- the event nav ----------------------------------------------------------------------------------


def test_nav_of_a_ticketed_event_shows_tickets_orders_and_check_in_and_its_people(owner_client, concert):
    page = owner_client.get(_url("events:dashboard", concert)).content.decode()

    assert _url("events:ticket-types", concert) in page
    assert _url("billing_organizer:orders", concert) in page
    assert _url("billing_organizer:check-in", concert) in page
    # Ticket holders are guests of the event (#17): the dashboard's people section lists them.
    assert _url("guests:list", concert) in page
    assert "Ticket holders and guests" in page


def test_nav_of_an_invite_only_event_keeps_the_guest_pages(owner_client, event):
    page = owner_client.get(_url("events:dashboard", event)).content.decode()

    assert _url("guests:list", event) in page
    assert _url("guests:dietary", event) in page
    assert _url("billing_organizer:orders", event) not in page


@pytest.mark.parametrize(("role", "sees_check_in"), [(Role.DOOR, True), (Role.VIEWER, False), (Role.ADMIN, True)])
def test_nav_shows_check_in_to_the_roles_that_may_check_in(member_client, concert, role, sees_check_in):
    page = member_client(role).get(_url("events:dashboard", concert)).content.decode()

    assert (_url("billing_organizer:check-in", concert) in page) is sees_check_in


# --- ticket types: list and create --------------------------------------------------------------------


def test_list_shows_sold_reserved_and_remaining(member_client, concert, general):
    TicketType.objects.filter(pk=general.pk).update(sold=7, reserved=3)

    response = member_client(Role.VIEWER).get(_url("events:ticket-types", concert))

    assert response.status_code == 200
    page = response.content.decode()
    assert '<td data-col="sold" data-label="Sold">7</td>' in page
    assert '<td data-col="reserved" data-label="Reserved">3</td>' in page
    assert '<td data-col="remaining" data-label="Remaining">90</td>' in page
    assert "€25.00" in page


@pytest.mark.parametrize("role", [Role.OWNER, Role.ADMIN])
def test_editors_create_a_type_with_the_price_in_minor_units(member_client, concert, role):
    response = member_client(role).post(_url("events:ticket-type-create", concert), _type_form(price_amount="25.00"))

    assert response.status_code == 302
    created = TicketType.objects.get(event=concert)
    assert (created.name, created.price, created.currency, created.capacity) == ("Early bird", 2500, "eur", 100)
    assert (created.sold, created.reserved, created.tenant_id) == (0, 0, concert.tenant_id)
    assert AuditLog.objects.filter(action="ticket_type.created", object_id=created.pk).exists()


@pytest.mark.parametrize(
    ("typed", "currency", "stored"),
    [
        ("25", "eur", 2500),
        ("25.5", "usd", 2550),
        ("19,99", "eur", 1999),
        ("0", "eur", 0),
        ("0.10", "gbp", 10),
        ("1999999.99", "chf", 199999999),
        ("3000", "jpy", 3000),
    ],
)
def test_price_typed_as_a_decimal_is_stored_exactly(owner_client, concert, typed, currency, stored):
    response = owner_client.post(
        _url("events:ticket-type-create", concert), _type_form(price_amount=typed, currency=currency)
    )

    assert response.status_code == 302
    assert TicketType.objects.get(event=concert).price == stored


@pytest.mark.parametrize(
    ("typed", "currency"),
    [("25.001", "eur"), ("0.005", "usd"), ("-5", "eur"), ("abc", "eur"), ("1e3", "eur"), ("", "eur"), ("25.5", "jpy")],
)
def test_price_with_more_decimals_than_the_currency_has_or_not_a_number_is_refused(
    owner_client, concert, typed, currency
):
    response = owner_client.post(
        _url("events:ticket-type-create", concert), _type_form(price_amount=typed, currency=currency)
    )

    assert response.status_code == 400
    assert "price_amount" in response.context["form"].errors
    assert not TicketType.objects.filter(event=concert).exists()


def test_currency_must_be_one_of_the_list(owner_client, concert):
    response = owner_client.post(_url("events:ticket-type-create", concert), _type_form(currency="xyz"))

    assert response.status_code == 400
    assert "currency" in response.context["form"].errors


def test_sales_window_is_typed_in_the_event_time_zone(owner_client, concert):
    owner_client.post(
        _url("events:ticket-type-create", concert),
        _type_form(sales_start="2027-03-01T10:00", sales_end="2027-03-31T23:59"),
    )

    created = TicketType.objects.get(event=concert)
    assert created.sales_start == dt.datetime(2027, 3, 1, 9, 0, tzinfo=UTC)  # Madrid is UTC+1 in March
    assert created.sales_end == dt.datetime(2027, 3, 31, 21, 59, tzinfo=UTC)  # and UTC+2 after the 28th


def test_sales_ending_before_they_start_is_shown_on_the_field(owner_client, concert):
    response = owner_client.post(
        _url("events:ticket-type-create", concert),
        _type_form(sales_start="2027-03-10T10:00", sales_end="2027-03-01T10:00"),
    )

    assert response.status_code == 400
    assert "sales_end" in response.context["form"].errors


def test_duplicate_name_in_the_same_event_is_refused(owner_client, concert, general):
    response = owner_client.post(_url("events:ticket-type-create", concert), _type_form(name="General"))

    assert response.status_code == 400
    assert TicketType.objects.filter(event=concert).count() == 1


# --- edit ---------------------------------------------------------------------------------------------


def test_edit_page_shows_the_price_as_a_decimal(owner_client, general):
    form = owner_client.get(_type_url("events:ticket-type-edit", general)).context["form"]

    assert form.initial["price_amount"] == "25.00"


def test_editors_change_price_and_capacity(owner_client, general):
    response = owner_client.post(
        _type_url("events:ticket-type-edit", general), _edit_form(general, price_amount="30.50", capacity="120")
    )

    assert response.status_code == 302
    general.refresh_from_db()
    assert (general.price, general.capacity) == (3050, 120)
    entry = AuditLog.objects.get(action="ticket_type.updated", object_id=general.pk)
    assert set(entry.data["fields"]) == {"price", "capacity"}


def test_capacity_below_sold_and_reserved_is_refused_on_the_field(owner_client, general):
    TicketType.objects.filter(pk=general.pk).update(sold=40, reserved=5)

    response = owner_client.post(_type_url("events:ticket-type-edit", general), _edit_form(general, capacity="44"))

    assert response.status_code == 400
    assert "capacity" in response.context["form"].errors
    general.refresh_from_db()
    assert general.capacity == 100


def test_capacity_down_to_exactly_sold_and_reserved_is_accepted(owner_client, general):
    TicketType.objects.filter(pk=general.pk).update(sold=40, reserved=5)

    response = owner_client.post(_type_url("events:ticket-type-edit", general), _edit_form(general, capacity="45"))

    assert response.status_code == 302
    general.refresh_from_db()
    assert (general.capacity, general.sold, general.reserved) == (45, 40, 5)


def test_currency_cannot_change_once_tickets_are_sold(owner_client, general):
    TicketType.objects.filter(pk=general.pk).update(sold=1)

    response = owner_client.post(_type_url("events:ticket-type-edit", general), _edit_form(general, currency="usd"))

    assert response.status_code == 400
    assert "currency" in response.context["form"].errors
    general.refresh_from_db()
    assert general.currency == "eur"


# --- delete and off sale --------------------------------------------------------------------------------


def test_a_type_nobody_bought_is_deleted(owner_client, general):
    response = owner_client.post(_type_url("events:ticket-type-delete", general))

    assert response.status_code == 302
    assert not TicketType.objects.filter(pk=general.pk).exists()
    # The audit record names the deleted type (delete() clears the instance's pk; the record once had none).
    audit = AuditLog.objects.get(action="ticket_type.deleted")
    assert (audit.object_id, audit.event_id) == (general.pk, general.event_id)


def test_a_type_being_deleted_is_closed_to_new_seats_before_it_goes(owner_client, general, monkeypatch):
    """The delete is a compare-and-set on "nobody bought or holds a seat": a checkout that comes between it
    and the row's deletion finds the type sold out, instead of holding seats of a deleted type."""
    from events import services

    reserved_meanwhile = []
    real_delete = TicketType.delete

    def a_checkout_first(self, *args, **kwargs):
        reserved_meanwhile.append(services.seats_reserve(ticket_type_id=self.pk, quantity=1))
        return real_delete(self, *args, **kwargs)

    monkeypatch.setattr(TicketType, "delete", a_checkout_first)
    owner_client.post(_type_url("events:ticket-type-delete", general))

    assert reserved_meanwhile == [False]
    assert not TicketType.objects.filter(pk=general.pk).exists()


def test_a_type_whose_seat_was_taken_after_the_page_loaded_is_not_deleted(owner, general):
    from django.core.exceptions import ValidationError

    from events import services

    assert services.seats_reserve(ticket_type_id=general.pk, quantity=1)
    with pytest.raises(ValidationError):
        services.ticket_type_delete(ticket_type=general, acting_user=owner)

    general.refresh_from_db()
    assert (general.reserved, general.is_active, general.capacity) == (1, True, general.capacity)
    assert general.capacity > 0


def test_a_sold_type_cannot_be_deleted_and_the_page_offers_taking_it_off_sale(owner_client, general):
    TicketType.objects.filter(pk=general.pk).update(sold=2)

    response = owner_client.post(_type_url("events:ticket-type-delete", general))

    assert response.status_code == 400
    page = response.content.decode()
    assert "take it off sale instead" in page
    assert _type_url("events:ticket-type-off-sale", general) in page
    assert TicketType.objects.filter(pk=general.pk).exists()


def test_taking_a_type_off_sale_keeps_its_counters(owner_client, general):
    TicketType.objects.filter(pk=general.pk).update(sold=2)

    response = owner_client.post(_type_url("events:ticket-type-off-sale", general))

    assert response.status_code == 302
    general.refresh_from_db()
    assert (general.is_active, general.sold) == (False, 2)


# --- who may do what --------------------------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_viewers_and_door_staff_see_types_but_cannot_change_them(member_client, concert, general, role):
    client = member_client(role)

    assert client.get(_url("events:ticket-types", concert)).status_code == 200
    assert client.post(_url("events:ticket-type-create", concert), _type_form()).status_code == 403
    assert (
        client.post(_type_url("events:ticket-type-edit", general), _edit_form(general, capacity="5")).status_code == 403
    )
    assert client.post(_type_url("events:ticket-type-delete", general)).status_code == 403
    assert client.post(_type_url("events:ticket-type-off-sale", general)).status_code == 403
    general.refresh_from_db()
    assert (general.capacity, general.is_active) == (100, True)
    assert list(TicketType.objects.filter(event=concert)) == [general]


def test_another_organizations_event_and_types_are_404(owner_client, tenant, concert):
    foreign_type = TicketTypeFactory(name="Theirs")
    foreign_event = foreign_type.event

    assert owner_client.get(_url("events:ticket-types", foreign_event)).status_code == 404
    # Their event's id under our organization's address, and their type's id under our event:
    mixed_event = reverse("events:ticket-types", kwargs={"tenant_slug": tenant.slug, "event_id": foreign_event.pk})
    assert owner_client.get(mixed_event).status_code == 404
    mixed_type = _url("events:ticket-type-edit", concert, ticket_type_id=foreign_type.pk)
    assert owner_client.post(mixed_type, _edit_form(foreign_type, capacity="1")).status_code == 404
    assert (
        owner_client.post(_url("events:ticket-type-delete", concert, ticket_type_id=foreign_type.pk)).status_code == 404
    )
    foreign_type.refresh_from_db()
    assert foreign_type.capacity == 100


def test_a_type_of_another_event_of_the_same_organization_is_404_under_this_event(owner_client, tenant, concert):
    other = TicketTypeFactory(event=TicketedEventFactory(tenant=tenant))

    response = owner_client.get(_url("events:ticket-type-edit", concert, ticket_type_id=other.pk))

    assert response.status_code == 404


def test_invite_only_events_have_no_ticket_type_pages(owner_client, tenant):
    party = EventFactory(tenant=tenant)

    assert owner_client.get(_url("events:ticket-types", party)).status_code == 404
    assert owner_client.post(_url("events:ticket-type-create", party), _type_form()).status_code == 404
    assert not TicketType.objects.filter(event=party).exists()

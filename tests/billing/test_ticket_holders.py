"""Ticket holders are guests: each paid order's buyer becomes one guest of the event, whose answer follows the
tickets; they log in with their code and last name and see their tickets; refunds and voids update them."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from billing import services
from billing.models import Order, Ticket
from billing.selectors import order_holder
from billing.services import CheckoutItem, CheckoutRequest, holders
from billing.services.holders import order_holder_link
from events.selectors import event_list
from eventsaas.models import AuditLog
from guests.models import Guest
from guests.notifications import guests_not_yet_invited
from guests.services import guest_ticket_holder_get_or_create
from rsvp import services as rsvp_services
from tests.api.organizer_fixtures import api_client
from tests.factories import GuestFactory, TenantFactory, TicketedEventFactory, TicketTypeFactory
from tests.rsvp.household_form import household_post, row

pytestmark = pytest.mark.django_db

PRICE = 2500


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, name="Holder Concert")


@pytest.fixture
def general(concert):
    return TicketTypeFactory(event=concert, name="General", price=PRICE, capacity=20)


@pytest.fixture
def pay(django_capture_on_commit_callbacks):
    """Check out and pay in test-payment mode (through the webhook path); the paid order."""

    def paid(event, ticket_type, quantity, *, name="Ada Lovelace", email="ada@example.com", names=()):
        order = services.checkout_start(
            event=event,
            request=CheckoutRequest(
                items=[CheckoutItem(ticket_type_id=str(ticket_type.pk), quantity=quantity)],
                buyer_name=name,
                buyer_email=email,
                attendee_names=list(names),
            ),
        )
        with django_capture_on_commit_callbacks(execute=True):
            services.order_simulate_payment(order=order)
        return Order.objects.get(pk=order.pk)

    return paid


def holder_of(order) -> Guest:
    (guest,) = Guest.objects.filter(event_id=order.event_id, holder_key=f"order:{order.pk}")
    return guest


def text_of(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def log_in(client, code, last_name):
    return client.post(reverse("rsvp:login"), {"code": code, "last_name": last_name})


# --- Ticket -> guest ------------------------------------------------------------------------------


def test_a_ticket_holder_counts_as_invited_and_gets_no_invitation_email(concert, general, pay):
    """Their code came with the tickets email; "invite everyone not yet invited" must not email them again."""
    invited = GuestFactory(event=concert, email="inv@example.com", invited_at=None)
    holder = holder_of(pay(concert, general, 1))

    assert holder.invited_at is not None
    assert list(guests_not_yet_invited(event=concert)) == [invited]


def test_a_paid_order_makes_its_buyer_one_coming_guest_holding_every_ticket(concert, general, pay):
    order = pay(concert, general, 3, names=["Ada", "Bob", "Cy"])

    guest = holder_of(order)
    assert (guest.tenant_id, guest.event_id) == (concert.tenant_id, concert.pk)
    assert (guest.first_name, guest.last_name, guest.email) == ("Ada", "Lovelace", "ada@example.com")
    assert (guest.status, guest.num_guests, guest.expected_guests) == (Guest.Status.COMING, 3, 3)
    assert guest.answered_by_kind == Guest.AnsweredBy.TICKETS
    assert len(guest.code) >= 8 and guest.is_ticket_holder
    assert set(Ticket.objects.filter(order=order).values_list("guest_id", flat=True)) == {guest.pk}


def test_issuing_the_tickets_again_finds_the_same_guest_and_changes_nothing(concert, general, pay):
    order = pay(concert, general, 2)
    guest = holder_of(order)
    answers_before = AuditLog.objects.filter(object_id=guest.pk).count()

    for _retry in range(3):
        services.tickets_issue(order=order)
        order_holder_link(order=order)

    assert Guest.objects.filter(event=concert).count() == 1
    assert AuditLog.objects.filter(object_id=guest.pk).count() == answers_before
    assert AuditLog.objects.filter(action="guest.created", object_id=guest.pk).count() == 1
    assert (holder_of(order).status, holder_of(order).num_guests) == (Guest.Status.COMING, 2)


def test_a_second_order_with_the_same_email_is_a_guest_of_its_own(concert, general, pay):
    """Linking by the typed email would show one buyer another's tickets: one guest per order instead."""
    first = pay(concert, general, 1)
    second = pay(concert, general, 2)

    assert holder_of(first).pk != holder_of(second).pk
    assert {g.num_guests for g in Guest.objects.filter(event=concert)} == {1, 2}


def test_the_holder_key_is_unique_per_event_so_a_racing_insert_reads_the_winner(concert, monkeypatch):
    winner = guest_ticket_holder_get_or_create(
        tenant_id=concert.tenant_id,
        event_id=concert.pk,
        holder_key="order:x",
        full_name="Ada Lovelace",
        email="ada@example.com",
    )
    # A racer that looked before the winner stored its row: its insert fails on the constraint.
    first_lookup = iter([None])
    real_first = type(Guest.objects.all()).first

    def stale_first(queryset):
        if "holder_key" in str(queryset.query):
            try:
                return next(first_lookup)
            except StopIteration:
                pass
        return real_first(queryset)

    monkeypatch.setattr(type(Guest.objects.all()), "first", stale_first)
    loser = guest_ticket_holder_get_or_create(
        tenant_id=concert.tenant_id,
        event_id=concert.pk,
        holder_key="order:x",
        full_name="Ada Lovelace",
        email="ada@example.com",
    )

    assert loser.pk == winner.pk
    assert Guest.objects.filter(event=concert).count() == 1


def test_the_first_payment_stores_its_tickets_already_held_by_the_coming_guest(concert, general, pay, monkeypatch):
    """The delivery that makes the order paid inserts the guest coming for every seat, then the tickets pointing
    at it: no link or recount afterwards (the long way, order_holder_link, is not taken)."""

    def no_link(**kwargs):
        raise AssertionError("the first payment links no tickets afterwards")

    monkeypatch.setattr("billing.services.orders.order_holder_link", no_link)
    order = pay(concert, general, 3)

    guest = holder_of(order)
    assert (guest.status, guest.num_guests) == (Guest.Status.COMING, 3)
    assert Ticket.objects.filter(order=order, guest=guest).count() == 3
    entries = AuditLog.objects.filter(action="rsvp.coming", object_id=guest.pk)
    assert [(e.data["num_guests"], e.data["reason"]) for e in entries] == [(3, "issued")]
    # A void after that corrects the guest itself.
    assert services.ticket_void(ticket=Ticket.objects.filter(order=order).first()) is True
    guest.refresh_from_db()
    assert (guest.status, guest.num_guests) == (Guest.Status.COMING, 2)


def test_a_seat_stored_by_a_racing_delivery_sends_the_first_payment_the_long_way(concert, general, pay, monkeypatch):
    """Between the first payment's guest insert and its tickets, a redelivery (which found the order paid)
    stored a seat without a holder: the tickets' insert loses on (order, seat), and the long way stores the
    other seats, links every ticket to the guest and recounts."""
    real_create = holders.guests_services.guest_ticket_holder_create

    def create_then_another_issues_a_seat(**kwargs):
        created = real_create(**kwargs)
        order = Order.objects.get(pk=kwargs["holder_key"].removeprefix("order:"))
        line = order.lines[0]
        Ticket.objects.create(
            tenant_id=order.tenant_id,
            event_id=order.event_id,
            order_id=order.pk,
            ticket_type_id=line["ticket_type"],
            seat=2,
            price=line["unit_price"],
            currency=order.currency,
        )
        return created

    monkeypatch.setattr(holders.guests_services, "guest_ticket_holder_create", create_then_another_issues_a_seat)
    order = pay(concert, general, 3)

    guest = holder_of(order)
    assert sorted(Ticket.objects.filter(order=order, guest=guest).values_list("seat", flat=True)) == [1, 2, 3]
    assert (guest.status, guest.num_guests) == (Guest.Status.COMING, 3)


def test_the_first_payments_holder_insert_that_loses_to_another_reads_the_winner_and_follows_the_tickets(
    concert, general, pay, monkeypatch
):
    """Only the delivery that made the order paid inserts the holder without looking; should a guest with the
    key exist anyway, the insert fails on the constraint and that guest is linked and made to follow."""
    real_create = holders.guests_services.guest_ticket_holder_create

    def another_first(**kwargs):
        real_create(**{**kwargs, "full_name": "Someone Else", "coming": 0})
        return real_create(**kwargs)

    monkeypatch.setattr(holders.guests_services, "guest_ticket_holder_create", another_first)
    order = pay(concert, general, 2)

    guest = holder_of(order)
    assert (guest.last_name, guest.status, guest.num_guests) == ("Else", Guest.Status.COMING, 2)
    assert Ticket.objects.filter(order=order, guest=guest).count() == 2
    assert AuditLog.objects.filter(action="guest.created", object_id=guest.pk).count() == 1


def test_a_one_word_name_is_the_first_and_the_last_name(concert, general, pay):
    guest = holder_of(pay(concert, general, 1, name="Cher"))
    assert (guest.first_name, guest.last_name) == ("Cher", "Cher")


# --- The guest page -------------------------------------------------------------------------------


def test_the_holder_logs_in_with_code_and_last_name_and_sees_their_tickets(client, concert, general, pay):
    order = pay(concert, general, 2, names=["Ada", "Bob"])
    guest = holder_of(order)
    tickets = list(Ticket.objects.filter(order=order).order_by("seat"))

    assert log_in(client, guest.code, "lovelace").status_code == 302
    page = client.get(reverse("rsvp:answer"))

    assert page.status_code == 200
    text = text_of(page)
    for ticket in tickets:
        assert ticket.display_code in text
    assert "General" in text and "Seat 2 of your order" in text and "Valid" in text
    assert page.content.decode().count('data-testid="ticket"') == 2
    assert 'class="qr"' in page.content.decode()
    assert "Your answer follows your tickets" in text
    assert "Send my answer" not in text


def test_the_holder_cannot_answer_with_the_form_and_nor_can_the_organizer(client, concert, general, pay, owner):
    guest = holder_of(pay(concert, general, 2))
    log_in(client, guest.code, "Lovelace")

    response = client.post(reverse("rsvp:answer"), household_post(row("no")))

    assert response.status_code == 400
    fresh = Guest.objects.get(pk=guest.pk)
    assert (fresh.status, fresh.num_guests) == (Guest.Status.COMING, 2)
    with pytest.raises(ValidationError):
        rsvp_services.rsvp_record(guest=fresh, answer=rsvp_services.HouseholdAnswer(attending=False), acting_user=owner)
    assert Guest.objects.get(pk=guest.pk).status == Guest.Status.COMING


def test_other_guests_of_the_event_and_of_other_tenants_never_see_the_tickets(concert, general, pay, client):
    order = pay(concert, general, 1)
    other_order = pay(concert, general, 1, name="Grace Hopper", email="grace@example.com")
    invited = GuestFactory(event=concert, last_name="Invited")
    elsewhere = TicketedEventFactory(tenant=TenantFactory())
    elsewhere_order = pay(elsewhere, TicketTypeFactory(event=elsewhere, price=PRICE), 1, name="Ada Lovelace")
    code = Ticket.objects.get(order=order).display_code

    for guest, last_name in (
        (holder_of(other_order), "Hopper"),
        (invited, "Invited"),
        (holder_of(elsewhere_order), "Lovelace"),
    ):
        client.post(reverse("rsvp:logout"))
        assert log_in(client, guest.code, last_name).status_code == 302
        page = client.get(reverse("rsvp:answer"))
        assert page.status_code == 200
        assert code not in text_of(page)
    client.post(reverse("rsvp:logout"))
    log_in(client, invited.code, "Invited")
    assert 'data-testid="guest-tickets"' not in client.get(reverse("rsvp:answer")).content.decode()


def test_a_wrong_last_name_does_not_open_the_holders_page(client, concert, general, pay):
    guest = holder_of(pay(concert, general, 1))

    response = log_in(client, guest.code, "Byron")

    assert response.status_code == 400
    assert client.get(reverse("rsvp:answer")).status_code == 302


def test_the_order_page_and_the_email_tell_the_buyer_their_guest_code(client, concert, general, pay, mailoutbox):
    order = pay(concert, general, 1)
    guest = holder_of(order)

    page = client.get(services.order_page_path(order))
    (email,) = [m for m in mailoutbox if m.to == ["ada@example.com"]]

    assert guest.code in text_of(page) and "Lovelace" in text_of(page)
    assert f"/rsvp/?code={guest.code}" in page.content.decode()
    assert guest.code in email.body and "“Lovelace”" in email.body and f"/rsvp/?code={guest.code}" in email.body
    assert order_holder(order=order) == guest


# --- Refunds and voids ----------------------------------------------------------------------------


def test_a_partial_refund_counts_one_person_fewer_and_a_full_one_declines_with_the_reason(
    concert, general, pay, owner, owner_client
):
    order = pay(concert, general, 2)
    guest = holder_of(order)

    services.order_refund(order=order, acting_user=owner, amount=PRICE)
    after_one = Guest.objects.get(pk=guest.pk)
    services.order_refund(order=Order.objects.get(pk=order.pk), acting_user=owner)
    after_all = Guest.objects.get(pk=guest.pk)
    services.refunds_apply(Order.objects.get(pk=order.pk))  # applied again: nothing changes

    assert (after_one.status, after_one.num_guests, after_one.expected_guests) == (Guest.Status.COMING, 1, 1)
    assert (after_all.status, after_all.num_guests) == (Guest.Status.DECLINED, 0)
    assert after_all.answered_by_kind == Guest.AnsweredBy.TICKETS
    declines = AuditLog.objects.filter(action="rsvp.declined", object_id=guest.pk)
    assert [(e.data["reason"], e.data["via"]) for e in declines] == [("refunded", "tickets")]
    detail = owner_client.get(
        reverse(
            "guests:detail", kwargs={"tenant_slug": concert.tenant.slug, "event_id": concert.pk, "guest_id": guest.pk}
        )
    )
    assert "No valid tickets left (refunded or void)" in text_of(detail)


def test_voiding_a_ticket_updates_its_holder_once(concert, general, pay):
    order = pay(concert, general, 2)
    guest = holder_of(order)
    ticket = Ticket.objects.filter(order=order).first()

    assert services.ticket_void(ticket=ticket) is True
    assert services.ticket_void(ticket=ticket) is False

    fresh = Guest.objects.get(pk=guest.pk)
    assert (fresh.status, fresh.num_guests) == (Guest.Status.COMING, 1)
    entries = AuditLog.objects.filter(action="rsvp.coming", object_id=guest.pk).order_by("created_at")
    assert [e.data["reason"] for e in entries] == ["issued", "voided"]


def test_the_holders_page_shows_void_tickets_as_void(client, concert, general, pay, owner):
    order = pay(concert, general, 1)
    guest = holder_of(order)
    services.order_refund(order=order, acting_user=owner)
    log_in(client, guest.code, "Lovelace")

    page = client.get(reverse("rsvp:answer")).content.decode()

    assert 'data-status="void"' in page and 'data-testid="no-valid-tickets"' in page


# --- Numbers -------------------------------------------------------------------------------------


def test_the_events_list_and_dashboard_count_ticket_holders(owner_client, tenant, concert, general, pay, owner):
    pay(concert, general, 3)
    refunded = pay(concert, general, 1, name="Grace Hopper", email="grace@example.com")
    services.order_refund(order=refunded, acting_user=owner)

    (listed,) = [e for e in event_list(tenant=tenant) if e.pk == concert.pk]
    page = owner_client.get(reverse("events:list", kwargs={"tenant_slug": tenant.slug}))
    dashboard = owner_client.get(
        reverse("events:dashboard", kwargs={"tenant_slug": tenant.slug, "event_id": concert.pk})
    )

    assert {k: listed.numbers[k] for k in ("invited", "coming", "declined", "head_count")} == {
        "invited": 2,
        "coming": 1,
        "declined": 1,
        "head_count": 3,
    }
    assert page.status_code == 200
    stats = dashboard.context["stats"]
    assert (stats["invited"], stats["coming"], stats["head_count"]) == (2, 1, 3)
    assert dashboard.context["sales"].sold == 3
    assert 'data-stat="head_count">3<' in dashboard.content.decode()


def test_through_the_api_the_holder_logs_in_but_cannot_decline(concert, general, pay):
    guest = holder_of(pay(concert, general, 2))
    client = api_client()

    login = client.post("/api/v1/auth/guest-login", {"code": guest.code, "last_name": "Lovelace"}, format="json")
    assert login.status_code == 200
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {login.json()['access']}")
    declined = client.put("/api/v1/rsvp", {"attending": False}, format="json")

    assert declined.status_code == 400
    assert "follows the tickets" in str(declined.json())
    fresh = Guest.objects.get(pk=guest.pk)
    assert (fresh.status, fresh.num_guests) == (Guest.Status.COMING, 2)

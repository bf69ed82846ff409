"""The organizer's pages of a ticketed event: orders, refunds, check-in and the sales dashboard.

Orders are bought the way buyers buy them: checkout_start, then the test-payment
mode's signed event through the webhook code (its task runs on commit).
"""

import datetime as dt
import re
from dataclasses import dataclass

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from billing import services
from billing.models import LedgerEntry, Order, Ticket, WaitlistEntry
from billing.services import CheckoutItem, CheckoutRequest
from events.models import TicketType
from eventsaas.models import AuditLog
from tenants.models import Role
from tests.factories import (
    EventFactory,
    MembershipFactory,
    TenantFactory,
    TicketedEventFactory,
    TicketTypeFactory,
    UserFactory,
)
from tests.support.spreadsheets import download_text


def _url(name, event, **kwargs):
    return reverse(name, kwargs={"tenant_slug": event.tenant.slug, "event_id": event.pk, **kwargs})


def _order_url(name, order):
    return _url(name, order.event, order_id=order.pk)


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, name="Spring concert", timezone="Europe/Madrid")


@pytest.fixture
def general(concert):
    return TicketTypeFactory(event=concert, name="General", price=2500, capacity=50, position=1)


@pytest.fixture
def vip(concert):
    return TicketTypeFactory(event=concert, name="VIP", price=8000, capacity=5, position=2)


@pytest.fixture
def buy(django_capture_on_commit_callbacks):
    """buy(event, (type, n), ..., pay=True): an order as the shop makes it; paid through the test-payment webhook."""

    def buy(event, *items, buyer="Ann Lee", email="ann@example.com", pay=True, **extra):
        with django_capture_on_commit_callbacks(execute=True):
            order = services.checkout_start(
                event=event,
                request=CheckoutRequest(
                    items=[CheckoutItem(ticket_type_id=str(t.pk), quantity=n) for t, n in items],
                    buyer_name=buyer,
                    buyer_email=email,
                    **extra,
                ),
            )
            if pay:
                services.order_simulate_payment(order=order)
        order.refresh_from_db()
        return order

    return buy


def _tickets(order):
    return list(Ticket.objects.filter(order_id=order.pk).order_by("seat"))


def _result(response) -> str:
    match = re.search(r'<div class="check-in-result"[^>]*data-result="([a-z_]+)"', response.content.decode())
    return match.group(1) if match else ""


def _result_text(response) -> str:
    page = response.content.decode()
    start = page.index(">", page.index('data-testid="check-in-result"')) + 1
    return " ".join(re.sub(r"<[^>]+>", " ", page[start : page.index("</div>", start)]).split())


# --- orders list ---------------------------------------------------------------------------------------


def test_orders_list_newest_first_with_counts_per_status(owner_client, concert, general, buy):
    first = buy(concert, (general, 1), buyer="First Buyer")
    pending = buy(concert, (general, 2), buyer="Pending Buyer", pay=False)
    Order.objects.filter(pk=first.pk).update(created_at=timezone.now() - dt.timedelta(hours=1))

    response = owner_client.get(_url("billing_organizer:orders", concert))

    assert response.status_code == 200
    assert [o.pk for o in response.context["page"]] == [pending.pk, first.pk]
    counts = {f["value"]: f["count"] for f in response.context["filters"]}
    assert (counts[""], counts["paid"], counts["pending"], counts["refunded"], counts["attention"]) == (2, 1, 1, 0, 0)
    page = response.content.decode()
    assert "Pending Buyer" in page and "€50.00" in page


def test_orders_list_filters_by_status(owner_client, concert, general, buy):
    paid = buy(concert, (general, 1), buyer="Paid Buyer")
    buy(concert, (general, 1), buyer="Pending Buyer", pay=False)

    response = owner_client.get(_url("billing_organizer:orders", concert), {"status": "paid"})

    assert [o.pk for o in response.context["page"]] == [paid.pk]
    assert "Pending Buyer" not in response.content.decode()


def test_orders_needing_attention_are_filtered_and_highlighted(owner_client, concert, general, buy):
    buy(concert, (general, 1), buyer="Fine Buyer")
    odd = buy(concert, (general, 1), buyer="Odd Buyer", pay=False)
    services.order_payment_record(order=odd, payment_intent_id="pi_odd", amount=1, currency="eur")
    assert Order.objects.get(pk=odd.pk).status == Order.Status.NEEDS_REVIEW

    response = owner_client.get(_url("billing_organizer:orders", concert), {"status": "attention"})

    assert [o.pk for o in response.context["page"]] == [odd.pk]
    assert f'data-order="{odd.pk}" class="needs-attention"' in response.content.decode()
    dashboard = owner_client.get(_url("events:dashboard", concert)).content.decode()
    assert 'data-testid="attention"' in dashboard
    assert "1 order needs your attention" in dashboard


def test_orders_list_pages(owner_client, concert, general, buy, monkeypatch):
    monkeypatch.setattr("billing.organizer_views.ORDERS_PAGE_SIZE", 2)
    for n in range(3):
        buy(concert, (general, 1), buyer=f"Buyer {n}", pay=False)

    first = owner_client.get(_url("billing_organizer:orders", concert), {"status": "pending"})
    second = owner_client.get(_url("billing_organizer:orders", concert), {"status": "pending", "page": 2})

    assert len(first.context["page"]) == 2 and len(second.context["page"]) == 1
    assert "?status=pending&page=2" in first.content.decode()


def test_an_unknown_status_filter_shows_all_orders(owner_client, concert, general, buy):
    buy(concert, (general, 1))

    response = owner_client.get(_url("billing_organizer:orders", concert), {"status": "bogus"})

    assert response.status_code == 200
    assert len(response.context["page"]) == 1


# --- order detail ---------------------------------------------------------------------------------------


def test_order_page_shows_lines_attendees_answers_tickets_and_ledger(owner_client, concert, general, vip, buy):
    concert.questions = [{"key": "song", "label": "Favourite song?", "choices": []}]
    concert.save(update_fields=["questions"])
    order = buy(
        concert,
        (general, 1),
        (vip, 1),
        attendee_names=["Ann Lee", "Bo Chen"],
        dietary="Vegan, no nuts",
        answers={"song": "Blue Monday"},
    )

    response = owner_client.get(_order_url("billing_organizer:order", order))

    assert response.status_code == 200
    page = response.content.decode()
    for shown in ["Ann Lee", "Bo Chen", "VIP", "€80.00", "€105.00", "Vegan, no nuts", "Favourite song?"]:
        assert shown in page
    assert "Blue Monday" in page
    for ticket in _tickets(order):
        assert ticket.display_code in page
    payment = LedgerEntry.objects.get(order_id=order.pk)
    assert payment.stripe_object_id in page
    assert "order.paid" in page  # the audit trail


def test_viewers_and_door_staff_read_orders_without_a_refund_form(member_client, concert, general, buy):
    order = buy(concert, (general, 1))

    for role in (Role.VIEWER, Role.DOOR):
        response = member_client(role).get(_order_url("billing_organizer:order", order))
        assert response.status_code == 200
        assert 'data-testid="refund"' not in response.content.decode()


# --- refunds ---------------------------------------------------------------------------------------------


def test_full_refund_from_the_page_voids_every_ticket_and_frees_the_seats(owner_client, owner, concert, general, buy):
    order = buy(concert, (general, 2))
    assert TicketType.objects.get(pk=general.pk).sold == 2

    response = owner_client.post(_order_url("billing_organizer:order-refund", order), {"amount": "", "confirm": "on"})

    assert response.status_code == 302
    order.refresh_from_db()
    assert (order.status, order.refunded_amount) == (Order.Status.REFUNDED, 5000)
    assert [t.status for t in _tickets(order)] == [Ticket.Status.VOID, Ticket.Status.VOID]
    assert TicketType.objects.get(pk=general.pk).sold == 0
    refund = LedgerEntry.objects.get(order_id=order.pk, kind=LedgerEntry.Kind.REFUND)
    assert refund.amount == 5000
    assert AuditLog.objects.get(action="order.refunded", object_id=order.pk).actor_user == owner


@pytest.mark.parametrize("confirm", [None, "", "false"])
def test_a_refund_without_the_confirmation_box_refunds_nothing(owner_client, concert, general, buy, confirm):
    order = buy(concert, (general, 2))
    data = {"amount": ""} if confirm is None else {"amount": "", "confirm": confirm}

    response = owner_client.post(_order_url("billing_organizer:order-refund", order), data)

    assert response.status_code == 400
    assert response.context["refund_form"].errors["confirm"] == [
        "Tick the box to confirm the refund; nothing was refunded."
    ]
    assert "Tick the box to confirm the refund" in response.content.decode()
    order.refresh_from_db()
    assert (order.status, order.refunded_amount) == (Order.Status.PAID, 0)
    assert [t.status for t in _tickets(order)] == [Ticket.Status.VALID, Ticket.Status.VALID]
    assert TicketType.objects.get(pk=general.pk).sold == 2
    assert not LedgerEntry.objects.filter(order_id=order.pk, kind=LedgerEntry.Kind.REFUND).exists()


def test_the_order_page_asks_to_confirm_a_refund_with_a_required_box(owner_client, concert, general, buy):
    order = buy(concert, (general, 1))

    page = owner_client.get(_order_url("billing_organizer:order", order)).content.decode()

    box = re.search(r'<input type="checkbox" name="confirm"[^>]*>', page)
    assert box is not None and "required" in box.group(0)
    assert "Yes, refund: the money goes back to the buyer" in page


def test_the_tickets_email_can_be_sent_again_once_per_click(
    owner_client, owner, concert, general, buy, mailoutbox, django_capture_on_commit_callbacks
):
    order = buy(concert, (general, 2))
    assert [m.to for m in mailoutbox] == [["ann@example.com"]]
    page = owner_client.get(_order_url("billing_organizer:order", order)).content.decode()
    assert _order_url("billing_organizer:order-resend", order) in page

    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.post(_order_url("billing_organizer:order-resend", order))

    assert response.status_code == 302
    assert [m.to for m in mailoutbox] == [["ann@example.com"], ["ann@example.com"]]
    kinds = sorted(part.get_content_type() for part in mailoutbox[1].attachments)
    assert kinds == ["image/png", "image/png", "text/calendar"]  # one QR code per ticket, the event's .ics
    assert AuditLog.objects.get(action="order.confirmation_resent", object_id=order.pk).actor_user == owner


def test_an_unpaid_order_has_no_tickets_email_to_resend(owner_client, concert, general, buy, mailoutbox):
    order = buy(concert, (general, 1), pay=False)

    response = owner_client.post(_order_url("billing_organizer:order-resend", order), follow=True)

    assert "Only a paid order has tickets to send." in response.content.decode()
    assert mailoutbox == []


def test_partial_refund_typed_as_a_decimal_voids_the_tickets_it_covers(owner_client, concert, general, buy):
    order = buy(concert, (general, 2))

    response = owner_client.post(
        _order_url("billing_organizer:order-refund", order), {"amount": "25.00", "confirm": "on"}
    )

    assert response.status_code == 302
    order.refresh_from_db()
    assert (order.status, order.refunded_amount) == (Order.Status.PARTIALLY_REFUNDED, 2500)
    assert [t.status for t in _tickets(order)] == [Ticket.Status.VALID, Ticket.Status.VOID]


@pytest.mark.parametrize(
    ("typed", "message"),
    [
        ("25.001", "Use at most two decimals."),
        ("abc", "Enter an amount such as 25.00."),
        ("0", "Enter an amount above zero."),
        ("50.01", "Refund between €0.01 and €50.00."),  # the service's rule, shown on the field
    ],
)
def test_a_refund_amount_that_is_not_possible_is_refused_on_the_field(
    owner_client, concert, general, buy, typed, message
):
    order = buy(concert, (general, 2))

    response = owner_client.post(
        _order_url("billing_organizer:order-refund", order), {"amount": typed, "confirm": "on"}
    )

    assert response.status_code == 400
    assert response.context["refund_form"].errors["amount"] == [message]
    order.refresh_from_db()
    assert (order.status, order.refunded_amount) == (Order.Status.PAID, 0)
    assert not LedgerEntry.objects.filter(order_id=order.pk, kind=LedgerEntry.Kind.REFUND).exists()


def test_refunding_an_order_with_nothing_left_shows_the_service_error(owner_client, concert, general, buy):
    order = buy(concert, (general, 1))
    owner_client.post(_order_url("billing_organizer:order-refund", order), {"amount": "", "confirm": "on"})

    response = owner_client.post(_order_url("billing_organizer:order-refund", order), {"amount": "", "confirm": "on"})

    assert response.status_code == 400
    assert response.context["refund_form"].errors["amount"] == ["This order has nothing left to refund."]
    assert LedgerEntry.objects.filter(order_id=order.pk, kind=LedgerEntry.Kind.REFUND).count() == 1


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_viewers_and_door_staff_cannot_refund(member_client, concert, general, buy, role):
    order = buy(concert, (general, 1))

    response = member_client(role).post(
        _order_url("billing_organizer:order-refund", order), {"amount": "", "confirm": "on"}
    )

    assert response.status_code == 403
    order.refresh_from_db()
    assert (order.status, order.refunded_amount) == (Order.Status.PAID, 0)


def test_accepting_a_payment_under_review_issues_the_tickets(owner_client, concert, general, buy):
    order = buy(concert, (general, 2), pay=False)
    services.order_payment_record(order=order, payment_intent_id="pi_review", amount=4999, currency="eur")
    order.refresh_from_db()
    assert order.status == Order.Status.NEEDS_REVIEW and not _tickets(order)
    page = owner_client.get(_order_url("billing_organizer:order", order)).content.decode()
    assert _order_url("billing_organizer:order-accept", order) in page

    response = owner_client.post(_order_url("billing_organizer:order-accept", order))

    assert response.status_code == 302
    order.refresh_from_db()
    assert order.status == Order.Status.PAID
    assert [t.status for t in _tickets(order)] == [Ticket.Status.VALID, Ticket.Status.VALID]
    assert TicketType.objects.get(pk=general.pk).sold == 2


def test_accepting_an_order_that_needs_no_review_changes_nothing(owner_client, concert, general, buy):
    order = buy(concert, (general, 1))

    response = owner_client.post(_order_url("billing_organizer:order-accept", order), follow=True)

    assert "Only an order that needs review can be accepted." in response.content.decode()
    assert Order.objects.get(pk=order.pk).status == Order.Status.PAID


def test_viewers_cannot_accept_a_payment(member_client, concert, general, buy):
    order = buy(concert, (general, 1), pay=False)
    services.order_payment_record(order=order, payment_intent_id="pi_review", amount=1, currency="eur")

    response = member_client(Role.VIEWER).post(_order_url("billing_organizer:order-accept", order))

    assert response.status_code == 403
    assert Order.objects.get(pk=order.pk).status == Order.Status.NEEDS_REVIEW


# --- isolation ---------------------------------------------------------------------------------------------


def test_another_organizations_event_and_orders_are_404(owner_client, tenant, concert, general, buy):
    theirs = TicketedEventFactory()
    their_order = buy(theirs, (TicketTypeFactory(event=theirs), 1), buyer="Rival Buyer")
    their_event_under_our_slug = {"tenant_slug": tenant.slug, "event_id": theirs.pk}

    for name in ("billing_organizer:orders", "billing_organizer:check-in"):
        assert owner_client.get(_url(name, theirs)).status_code == 404
        assert owner_client.get(reverse(name, kwargs=their_event_under_our_slug)).status_code == 404
    # Their order's id under our own event:
    assert owner_client.get(_url("billing_organizer:order", concert, order_id=their_order.pk)).status_code == 404
    refund = owner_client.post(_url("billing_organizer:order-refund", concert, order_id=their_order.pk))
    assert refund.status_code == 404
    their_order.refresh_from_db()
    assert (their_order.status, their_order.refunded_amount) == (Order.Status.PAID, 0)


def test_an_order_of_another_event_of_the_same_organization_is_404_under_this_event(owner_client, tenant, concert, buy):
    other = TicketedEventFactory(tenant=tenant)
    order = buy(other, (TicketTypeFactory(event=other), 1))

    assert owner_client.get(_url("billing_organizer:order", concert, order_id=order.pk)).status_code == 404


def test_invite_only_events_have_no_orders_or_check_in_pages(owner_client, event):
    assert owner_client.get(_url("billing_organizer:orders", event)).status_code == 404
    assert owner_client.get(_url("billing_organizer:check-in", event)).status_code == 404


# --- check-in ------------------------------------------------------------------------------------------------


def test_check_in_page_has_a_big_autofocused_code_field(member_client, concert):
    response = member_client(Role.DOOR).get(_url("billing_organizer:check-in", concert))

    assert response.status_code == 200
    field = re.search(r'<input[^>]*name="code"[^>]*>', response.content.decode()).group(0)
    assert "autofocus" in field and 'autocomplete="off"' in field


def test_check_in_valid_then_already_checked_in_with_the_time(member_client, concert, general, buy):
    order = buy(concert, (general, 1), buyer="Ann Lee")
    ticket = _tickets(order)[0]
    client = member_client(Role.DOOR)

    first = client.post(_url("billing_organizer:check-in", concert), {"code": ticket.display_code.lower()})
    second = client.post(_url("billing_organizer:check-in", concert), {"code": ticket.code})

    assert first.status_code == 200
    assert _result(first) == "valid"
    assert _result_text(first).startswith("✓ Valid — General, Ann Lee")
    ticket.refresh_from_db()
    local = timezone.localtime(ticket.checked_in_at, concert.tzinfo)
    assert _result(second) == "already_checked_in"
    assert f"Already checked in at {local:%H:%M} {local.tzname()}" in _result_text(second)  # with the zone's label
    assert ticket.checked_in_by == first.wsgi_request.user


def test_check_in_on_an_earlier_day_says_which_day(owner_client, concert, general, buy):
    ticket = _tickets(buy(concert, (general, 1)))[0]
    earlier = timezone.now() - dt.timedelta(days=2)
    Ticket.objects.filter(pk=ticket.pk).update(checked_in_at=earlier)

    response = owner_client.post(_url("billing_organizer:check-in", concert), {"code": ticket.code})

    local = timezone.localtime(earlier, concert.tzinfo)
    assert _result(response) == "already_checked_in"
    assert f"Already checked in on {local:%m/%d/%Y} at {local:%H:%M} {local.tzname()}" in _result_text(response)


def test_check_in_names_the_attendee_printed_on_the_ticket(owner_client, concert, general, buy):
    order = buy(concert, (general, 2), buyer="Ann Lee", attendee_names=["Ann Lee", "Bo Chen"])

    response = owner_client.post(_url("billing_organizer:check-in", concert), {"code": _tickets(order)[1].code})

    assert _result_text(response).startswith("✓ Valid — General, Bo Chen")


def test_check_in_of_a_refunded_ticket_says_void(owner_client, concert, general, buy):
    order = buy(concert, (general, 1))
    owner_client.post(_order_url("billing_organizer:order-refund", order), {"amount": "", "confirm": "on"})

    response = owner_client.post(_url("billing_organizer:check-in", concert), {"code": _tickets(order)[0].code})

    assert _result(response) == "void"
    assert "Void (refunded)" in _result_text(response)
    assert _tickets(order)[0].checked_in_at is None


def test_check_in_of_a_ticket_of_another_event_of_the_organization_says_so(owner_client, tenant, concert, buy):
    other = TicketedEventFactory(tenant=tenant, name="Autumn concert")
    ticket = _tickets(buy(other, (TicketTypeFactory(event=other), 1)))[0]

    response = owner_client.post(_url("billing_organizer:check-in", concert), {"code": ticket.code})

    assert _result(response) == "wrong_event"
    assert "Ticket of another event: Autumn concert" in _result_text(response)
    ticket.refresh_from_db()
    assert ticket.checked_in_at is None


def test_check_in_of_another_organizations_ticket_is_an_unknown_code(owner_client, concert, general, buy):
    theirs = TicketedEventFactory()
    ticket = _tickets(buy(theirs, (TicketTypeFactory(event=theirs), 1)))[0]

    response = owner_client.post(_url("billing_organizer:check-in", concert), {"code": ticket.code})

    assert _result(response) == "unknown"
    assert "Unknown code" in _result_text(response)
    assert theirs.name not in response.content.decode()
    ticket.refresh_from_db()
    assert ticket.checked_in_at is None


def test_check_in_of_a_made_up_code_is_unknown_and_an_empty_one_asks_for_a_code(owner_client, concert):
    made_up = owner_client.post(_url("billing_organizer:check-in", concert), {"code": "ABCD-EFGH-JKLM-NPQR"})
    empty = owner_client.post(_url("billing_organizer:check-in", concert), {"code": "  "})

    assert _result(made_up) == "unknown"
    assert empty.status_code == 400
    assert _result(empty) == ""
    assert "Scan or type a ticket code." in empty.content.decode()


def test_check_in_page_counts_checked_in_of_sold(owner_client, concert, general, buy):
    order = buy(concert, (general, 3))
    owner_client.post(_url("billing_organizer:check-in", concert), {"code": _tickets(order)[0].code})

    response = owner_client.get(_url("billing_organizer:check-in", concert))

    assert response.context["counts"] == {"checked_in": 1, "sold": 3}
    assert '<strong data-count="checked_in">1</strong>' in response.content.decode()


@pytest.mark.parametrize(("role", "status"), [(Role.DOOR, 200), (Role.ADMIN, 200), (Role.VIEWER, 403)])
def test_who_may_check_in(member_client, concert, general, buy, role, status):
    ticket = _tickets(buy(concert, (general, 1)))[0]
    client = member_client(role)

    assert client.get(_url("billing_organizer:check-in", concert)).status_code == 200
    response = client.post(_url("billing_organizer:check-in", concert), {"code": ticket.code})

    assert response.status_code == status
    ticket.refresh_from_db()
    assert (ticket.checked_in_at is not None) is (status == 200)


# --- dashboard -------------------------------------------------------------------------------------------------


def test_dashboard_numbers_after_a_sale_and_a_partial_refund(owner_client, concert, general, vip, buy):
    order = buy(concert, (general, 2), (vip, 1))  # 2 x 25.00 + 80.00 = 130.00
    buy(concert, (general, 1), buyer="Still Paying", pay=False)
    # Refund one General ticket; the last seat (the VIP) stays valid because 25.00 does not cover it.
    owner_client.post(_order_url("billing_organizer:order-refund", order), {"amount": "25.00", "confirm": "on"})
    owner_client.post(_url("billing_organizer:check-in", concert), {"code": _tickets(order)[0].code})

    response = owner_client.get(_url("events:dashboard", concert))

    sales = response.context["sales"]
    assert (sales.captured, sales.refunded, sales.net) == (13000, 2500, 10500)
    assert (sales.orders_paid, sales.orders_pending, sales.orders_needing_attention) == (1, 1, 0)
    rows = {row.ticket_type.name: row for row in sales.types}
    general_row, vip_row = rows["General"], rows["VIP"]
    assert (general_row.sold, general_row.reserved, general_row.remaining) == (2, 1, 47)
    assert (vip_row.sold, vip_row.reserved, vip_row.remaining) == (1, 0, 4)
    assert [t.status for t in _tickets(order)] == [Ticket.Status.VALID, Ticket.Status.VALID, Ticket.Status.VALID]
    page = response.content.decode()
    assert '<span class="number" data-stat="captured">€130.00</span>' in page
    assert '<span class="number" data-stat="net">€105.00</span>' in page
    assert '<span class="number" data-stat="checked_in">1</span>' in page


def test_dashboard_revenue_refunded_and_checked_in_per_type(owner_client, concert, general, buy):
    order = buy(concert, (general, 2))
    owner_client.post(_order_url("billing_organizer:order-refund", order), {"amount": "25.00", "confirm": "on"})
    owner_client.post(_url("billing_organizer:check-in", concert), {"code": _tickets(order)[0].code})

    row = owner_client.get(_url("events:dashboard", concert)).context["sales"].types[0]

    assert (row.sold, row.revenue, row.refunded, row.checked_in) == (1, 5000, 2500, 1)
    assert (row.revenue_display, row.refunded_display) == ("€50.00", "€25.00")


def _dashboard_queries(client, event) -> int:
    with CaptureQueriesContext(connection) as queries:
        assert client.get(_url("events:dashboard", event)).status_code == 200
    return len(queries)


def test_dashboard_costs_the_same_queries_for_1_or_20_orders(owner_client, tenant, buy):
    one, twenty = TicketedEventFactory(tenant=tenant), TicketedEventFactory(tenant=tenant)
    for event, orders in ((one, 1), (twenty, 20)):
        types = [TicketTypeFactory(event=event, name="A"), TicketTypeFactory(event=event, name="B")]
        for n in range(orders):
            buy(event, (types[n % 2], 1 + n % 3), email=f"buyer{n}@example.com")
    owner_client.get(_url("events:dashboard", one))  # session and caches warm

    assert _dashboard_queries(owner_client, twenty) == _dashboard_queries(owner_client, one)


def test_invite_only_dashboard_keeps_its_guest_numbers(owner_client, tenant):
    party = EventFactory(tenant=tenant)

    response = owner_client.get(_url("events:dashboard", party))

    assert response.context["stats"]["invited"] == 0
    assert "sales" not in response.context


def test_dashboard_sales_are_per_event(owner_client, tenant, concert, general, buy):
    other = TicketedEventFactory(tenant=tenant)
    buy(other, (TicketTypeFactory(event=other), 3))

    sales = owner_client.get(_url("events:dashboard", concert)).context["sales"]

    assert (sales.captured, sales.sold, sales.orders_paid) == (0, 0, 0)


def test_staff_user_without_membership_gets_404(client, concert):
    client.force_login(UserFactory(is_staff=True))

    assert client.get(_url("billing_organizer:orders", concert)).status_code == 404


# --- isolation matrix ----------------------------------------------------------------------------------------
# The pages of ticketed events against every kind of visitor, in the manner of tests/test_isolation.py
# (whose world has no ticketed event): each case asserts the status and that refused requests change
# nothing, while allowed writes change the database and leave an audit entry.

ANONYMOUS, OTHER_TENANT, OTHER_TENANT_OWN_SLUG = "anonymous", "other_tenant_member", "other_tenant_member_own_slug"
MEMBER_ROLES = {"viewer": Role.VIEWER, "door": Role.DOOR, "admin": Role.ADMIN, "owner": Role.OWNER}
ACTORS = [ANONYMOUS, OTHER_TENANT, OTHER_TENANT_OWN_SLUG, *MEMBER_ROLES]

TYPE_FORM = {
    "name": "Balcony",
    "description": "",
    "price_amount": "12.50",
    "currency": "eur",
    "capacity": "30",
    "sales_start": "",
    "sales_end": "",
    "max_per_order": "10",
    "access_code": "",
    "is_active": "on",
    "position": "0",
}


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str  # under /o/<slug>/events/{concert}/
    data: object = None  # dict, or a function of the world returning one
    check_in: bool = False  # door staff may send it too
    ok_status: int = 302

    def url(self, world, slug: str) -> str:
        ids = {
            "general": world.general.pk,
            "spare": world.spare.pk,
            "order": world.order.pk,
            "review": world.review.pk,
            "csv": "csv",
            "xlsx": "xlsx",
        }
        return f"/o/{slug}/events/{world.concert.pk}/" + self.path.format(**ids)

    def payload(self, world) -> dict:
        return self.data(world) if callable(self.data) else dict(self.data or {})


CASES = [
    Case("ticket_types", "GET", "ticket-types/"),
    Case("ticket_type_create", "GET", "ticket-types/new/"),
    Case("ticket_type_create", "POST", "ticket-types/new/", TYPE_FORM),
    Case("ticket_type_edit", "GET", "ticket-types/{general}/"),
    Case("ticket_type_edit", "POST", "ticket-types/{general}/", {**TYPE_FORM, "name": "General", "price_amount": "25"}),
    Case("ticket_type_delete", "GET", "ticket-types/{spare}/delete/"),
    Case("ticket_type_delete", "POST", "ticket-types/{spare}/delete/"),
    Case("ticket_type_off_sale", "POST", "ticket-types/{general}/off-sale/"),
    Case("orders", "GET", "orders/"),
    Case("orders_export", "GET", "orders/export/{csv}/"),
    Case("orders_export", "GET", "orders/export/{xlsx}/"),
    Case("order", "GET", "orders/{order}/"),
    Case("order_refund", "POST", "orders/{order}/refund/", {"amount": "", "confirm": "on"}),
    Case("order_accept", "POST", "orders/{review}/accept/"),
    Case("order_resend", "POST", "orders/{order}/resend/"),
    Case("waitlist", "GET", "waitlist/"),
    Case("check_in", "GET", "check-in/"),
    Case("check_in", "POST", "check-in/", lambda w: {"code": w.ticket.code}, check_in=True, ok_status=200),
    Case("check_in_export", "GET", "check-in/export/{csv}/"),
    Case("check_in_export", "GET", "check-in/export/{xlsx}/"),
]

# tests/test_isolation.py checks that every organizer URL is in a matrix; these are in this one.
ROUTE_PARAMETERS = {
    "{general}": "<uuid:ticket_type_id>",
    "{spare}": "<uuid:ticket_type_id>",
    "{order}": "<uuid:order_id>",
    "{review}": "<uuid:order_id>",
    "{csv}": "<str:file_format>",
    "{xlsx}": "<str:file_format>",
}
TICKETED_ROUTES = {
    "o/<slug:tenant_slug>/events/<uuid:event_id>/"
    + re.sub(r"\{\w+\}", lambda m: ROUTE_PARAMETERS[m.group(0)], case.path)
    for case in CASES
}


@dataclass
class TicketedWorld:
    concert: object
    general: TicketType
    spare: TicketType
    order: Order
    ticket: Ticket
    review: Order
    rival_order: Order


@pytest.fixture
def world(db, buy):
    acme = TenantFactory(name="Acme", slug="acme")
    concert = TicketedEventFactory(tenant=acme, name="Acme summer concert")
    general = TicketTypeFactory(event=concert, name="General", price=2500, capacity=100)
    spare = TicketTypeFactory(event=concert, name="Spare", price=1000, capacity=10)
    order = buy(concert, (general, 1))
    review = buy(concert, (general, 1), buyer="Rev Iew", pay=False)
    services.order_payment_record(order=review, payment_intent_id="pi_review", amount=1, currency="eur")
    rival = TicketedEventFactory(tenant=TenantFactory(name="Rival", slug="rival"), name="Rival gala")
    rival_order = buy(
        rival, (TicketTypeFactory(event=rival, name="Rival seat"), 1), buyer="Rita", email="rita@rv.example"
    )
    # Someone waits for the rival's seat under the rival buyer's address: a leak would show it.
    WaitlistEntry.objects.create(
        tenant_id=rival.tenant_id,
        event_id=rival.pk,
        ticket_type_id=rival_order.lines[0]["ticket_type"],
        email=rival_order.buyer_email,
    )
    return TicketedWorld(concert, general, spare, order, _tickets(order)[0], review, rival_order)


def _snapshot() -> dict:
    rows = {
        model.__name__: sorted(model.objects.values(), key=lambda row: str(row["id"]))
        for model in (TicketType, Order, Ticket, LedgerEntry, WaitlistEntry)
    }
    return {**rows, "audit_log_count": AuditLog.objects.count()}


def _matrix_client(actor: str, world) -> Client:
    client = Client()
    if actor == ANONYMOUS:
        return client
    if actor in (OTHER_TENANT, OTHER_TENANT_OWN_SLUG):
        membership = MembershipFactory(tenant=world.rival_order.event.tenant, role=Role.OWNER)
    else:
        membership = MembershipFactory(tenant=world.concert.tenant, role=MEMBER_ROLES[actor])
    client.force_login(membership.user)
    return client


@pytest.mark.parametrize(
    ("case", "actor"),
    [pytest.param(c, a, id=f"{c.name}-{c.method}-{a}") for c in CASES for a in ACTORS],
)
def test_ticketed_isolation_matrix(world, case, actor, django_capture_on_commit_callbacks):
    client = _matrix_client(actor, world)
    slug = world.rival_order.event.tenant.slug if actor == OTHER_TENANT_OWN_SLUG else world.concert.tenant.slug
    url = case.url(world, slug)
    before = _snapshot()

    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(url) if case.method == "GET" else client.post(url, case.payload(world))

    after = _snapshot()
    may_write = actor in ("admin", "owner") or (case.check_in and actor == "door")
    allowed_write = case.method == "POST" and may_write
    if actor == ANONYMOUS:
        assert response.status_code == 302
        assert response.url.startswith("/login/?next=")
    elif actor in (OTHER_TENANT, OTHER_TENANT_OWN_SLUG):
        assert response.status_code == 404
    elif case.method == "GET":
        assert response.status_code == 200
        body = download_text(response)
        assert "Rival" not in body and world.rival_order.buyer_email not in body
    elif not allowed_write:
        assert response.status_code == 403
    else:
        assert response.status_code == case.ok_status

    if allowed_write:
        assert after != before
        assert after["audit_log_count"] > before["audit_log_count"]
        theirs = world.rival_order.tenant_id
        for model in ("TicketType", "Order", "Ticket", "LedgerEntry"):
            assert [r for r in after[model] if r["tenant_id"] == theirs] == [
                r for r in before[model] if r["tenant_id"] == theirs
            ]
    else:
        assert after == before

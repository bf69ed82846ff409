"""The buyer's side after the shop: the test checkout, the order page with its tickets, cancelling."""

import re
from datetime import timedelta
from urllib.parse import urlsplit

import pytest
from django.core import mail
from django.utils import timezone

from billing import services
from billing.models import Order, Ticket
from billing.qr import qr_svg
from events.models import Event, TicketType
from eventsaas.dates import format_event_range
from tests.factories import TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, name="Demo Concert", attendee_names_required=True)


@pytest.fixture
def general(concert):
    return TicketTypeFactory(event=concert, name="General", price=2500, capacity=200)


def text_of(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def path_of(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def start_order(client, event, ticket_type, quantity=2, names=("Ana García", "Ben Ruiz")) -> Order:
    response = client.post(
        f"/e/{event.pk}/",
        {
            "buyer_name": "Ana García",
            "buyer_email": "ana@example.com",
            f"qty_{ticket_type.pk}": str(quantity),
            **{f"attendee_{seat}": name for seat, name in enumerate(names[:quantity], start=1)},
            "code": "",
        },
    )
    assert response.status_code == 303, response.content.decode()[:2000]
    return Order.objects.get(pk=re.search(r"/orders/([0-9a-f-]{36})/", response["Location"]).group(1))


def pay(client, order, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(path_of(order.checkout_url), {"action": "pay"})
    order.refresh_from_db()
    return response


# --- The whole purchase -----------------------------------------------------------------------------


def test_buying_two_tickets_in_test_mode_end_to_end(client, concert, general, django_capture_on_commit_callbacks):
    shop = client.post(
        f"/e/{concert.pk}/",
        {
            "buyer_name": "Ana García",
            "buyer_email": "ana@example.com",
            f"qty_{general.pk}": "2",
            "attendee_1": "Ana García",
            "attendee_2": "Ben Ruiz",
            "code": "",
        },
    )
    assert shop.status_code == 303
    checkout_path = path_of(shop["Location"])
    assert checkout_path.endswith("/test-checkout/")

    checkout = client.get(checkout_path)
    assert checkout.status_code == 200
    page = text_of(checkout)
    assert "Test payment mode — no real money" in page
    assert "2 × General (€25.00) €50.00" in page and "Pay €50.00 (test)" in page

    with django_capture_on_commit_callbacks(execute=True):
        paid = client.post(checkout_path, {"action": "pay"})
    order = Order.objects.get()
    assert paid.status_code == 302
    assert paid["Location"] == services.order_page_path(order) + "?paid=1"

    order_page = client.get(paid["Location"])
    assert order_page.status_code == 200
    assert "Refresh" not in order_page  # paid already: nothing to wait for
    html = order_page.content.decode()
    tickets = list(Ticket.objects.filter(order=order).order_by("seat"))
    assert len(tickets) == 2
    assert html.count("<svg") == 2
    for ticket in tickets:
        assert ticket.display_code in html and f'data-code="{ticket.code}"' in html
        assert qr_svg(ticket.code) in html  # the QR code is of the ticket's own code
    page = text_of(order_page)
    assert "Order status: Paid" in page
    assert "Payment received, thank you!" in page and "ana@example.com" in page
    assert "Your 2 tickets" in page and "Ana García" in page and "Ben Ruiz" in page
    assert [t.attendee_name for t in tickets] == ["Ana García", "Ben Ruiz"]

    general.refresh_from_db()
    assert (general.sold, general.reserved) == (2, 0)
    assert len(mail.outbox) == 1
    email = mail.outbox[0]
    assert email.to == ["ana@example.com"] and "Demo Concert" in email.subject
    pngs = [part for part in email.attachments if part.get_content_type() == "image/png"]
    assert len(pngs) == 2
    assert all(part.get_payload(decode=True).startswith(b"\x89PNG") for part in pngs)
    assert {part["Content-ID"] for part in pngs} == {f"<ticket-{t.code}>" for t in tickets}
    html_part = email.alternatives[0][0]
    for ticket in tickets:
        assert ticket.display_code in email.body and f"cid:ticket-{ticket.code}" in html_part
    assert "Test payment mode — no real money" in email.body
    # The event's dates in its zone, with the zone's label, as on the pages.
    assert format_event_range(concert.starts_at, concert.ends_at, concert.timezone) in email.body


def test_test_checkout_can_let_the_order_expire(client, concert, general, django_capture_on_commit_callbacks):
    order = start_order(client, concert, general)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(path_of(order.checkout_url), {"action": "abandon"})

    order.refresh_from_db()
    general.refresh_from_db()
    assert response["Location"] == services.order_page_path(order)
    assert order.status == Order.Status.EXPIRED
    assert (general.sold, general.reserved) == (0, 0)
    assert "This order expired before it was paid. Nothing was charged." in text_of(client.get(response["Location"]))
    # No tickets; the buyer is told, as a real Stripe expiry would tell them (test payment mode shows the whole path).
    [email] = mail.outbox
    assert email.subject == f"Your order for {concert.name} expired" and "Test payment mode" in email.body


def test_test_checkout_of_a_paid_order_does_not_pay_twice(client, concert, general, django_capture_on_commit_callbacks):
    order = start_order(client, concert, general)
    pay(client, order, django_capture_on_commit_callbacks)

    again = client.get(path_of(order.checkout_url))
    pay(client, order, django_capture_on_commit_callbacks)

    assert "Order status: Paid" in text_of(again) and "Pay €50.00" not in text_of(again)
    assert Ticket.objects.filter(order=order).count() == 2
    general.refresh_from_db()
    assert general.sold == 2 and len(mail.outbox) == 1


# --- The order page ---------------------------------------------------------------------------------


def test_pending_order_page_refreshes_itself_only_after_paying(client, concert, general):
    order = start_order(client, concert, general)
    page_path = services.order_page_path(order)

    after_paying = client.get(page_path + "?paid=1")
    plain = client.get(page_path)

    assert after_paying["Refresh"] == "3"
    assert "Waiting for the payment confirmation; this page refreshes by itself." in text_of(after_paying)
    assert "Refresh" not in plain
    assert "This order is waiting for payment." in text_of(plain)
    assert order.checkout_url in plain.content.decode()
    assert "<svg" not in plain.content.decode()


def test_waiting_stops_once_the_hold_is_over(client, concert, general):
    order = start_order(client, concert, general)
    Order.objects.filter(pk=order.pk).update(expires_at=order.created_at.replace(year=2000))

    response = client.get(services.order_page_path(order) + "?paid=1")

    assert "Refresh" not in response


def test_order_page_summarises_lines_and_total(client, concert, general, django_capture_on_commit_callbacks):
    front = TicketTypeFactory(event=concert, name="Front row", price=6000, capacity=5)
    response = client.post(
        f"/e/{concert.pk}/",
        {
            "buyer_name": "Ana García",
            "buyer_email": "ana@example.com",
            f"qty_{general.pk}": "1",
            f"qty_{front.pk}": "1",
            "attendee_1": "Ana",
            "attendee_2": "Ben",
        },
    )
    order = Order.objects.get()
    assert response.status_code == 303

    page = text_of(client.get(services.order_page_path(order)))

    assert "1 × General (€25.00) €25.00" in page
    assert "1 × Front row (€60.00) €60.00" in page
    assert "Total €85.00" in page


def test_refunded_tickets_are_void_and_have_no_qr_code(
    client, concert, general, owner, django_capture_on_commit_callbacks
):
    order = start_order(client, concert, general)
    pay(client, order, django_capture_on_commit_callbacks)

    services.order_refund(order=order, acting_user=owner, amount=2500)  # one of the two tickets

    response = client.get(services.order_page_path(order))
    html = response.content.decode()
    valid, void = Ticket.objects.get(order=order, status="valid"), Ticket.objects.get(order=order, status="void")
    assert html.count("<svg") == 1
    assert re.search(rf'data-code="{void.code}" data-status="void">.*?This ticket was refunded', html, re.S)
    assert re.search(rf'data-code="{valid.code}" data-status="valid">\s*<header>.*?<svg', html, re.S)
    page = text_of(response)
    assert "Order status: Partially refunded" in page
    assert "Part of this order was refunded (€25.00)." in page


def test_fully_refunded_order_shows_only_void_tickets(
    client, concert, general, owner, django_capture_on_commit_callbacks
):
    order = start_order(client, concert, general)
    pay(client, order, django_capture_on_commit_callbacks)
    services.order_refund(order=order, acting_user=owner)

    response = client.get(services.order_page_path(order))

    assert "<svg" not in response.content.decode()
    assert text_of(response).count("This ticket was refunded and is no longer valid.") == 2
    assert "This order was refunded (€50.00). Its tickets are void." in text_of(response)


def test_checked_in_ticket_says_when(client, concert, general, owner, django_capture_on_commit_callbacks):
    order = start_order(client, concert, general)
    pay(client, order, django_capture_on_commit_callbacks)
    ticket = Ticket.objects.filter(order=order).order_by("seat").first()
    services.ticket_check_in(event=concert, code=ticket.code, acting_user=owner)

    assert text_of(client.get(services.order_page_path(order))).count("Checked in:") == 1


@pytest.mark.parametrize("status", [Order.Status.REFUND_DUE, Order.Status.NEEDS_REVIEW])
def test_payment_that_needs_the_organizer_tells_the_buyer_they_will_be_contacted(client, concert, general, status):
    order = start_order(client, concert, general)
    Order.objects.filter(pk=order.pk).update(status=status)

    page = text_of(client.get(services.order_page_path(order)))

    assert "Your payment arrived, but the tickets could not be issued automatically." in page
    assert "The organizer will contact you at ana@example.com" in page
    assert concert.contact_email in page


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (Order.Status.EXPIRED, "This order expired before it was paid. Nothing was charged."),
        (Order.Status.CANCELLED, "This order was cancelled. Nothing was charged."),
    ],
)
def test_closed_orders_say_nothing_was_charged(client, concert, general, status, words):
    order = start_order(client, concert, general)
    Order.objects.filter(pk=order.pk).update(status=status)
    assert words in text_of(client.get(services.order_page_path(order)))


def test_order_page_speaks_the_orders_language(client, concert, general):
    Event.objects.filter(pk=concert.pk).update(language="es")
    order = start_order(client, concert, general)
    assert order.language == "es"
    assert '<html lang="es">' in client.get(services.order_page_path(order)).content.decode()


# --- Links that are not yours --------------------------------------------------------------------------


@pytest.mark.parametrize("suffix", ["", "cancel/", "test-checkout/"])
def test_wrong_token_or_unknown_order_is_404(client, concert, general, suffix):
    order = start_order(client, concert, general)
    other_token = "x" * len(order.access_token)

    assert client.get(f"/orders/{order.pk}/{other_token}/{suffix}").status_code == 404
    if suffix:
        assert client.post(f"/orders/{order.pk}/{other_token}/{suffix}", {"action": "pay"}).status_code == 404
    assert client.get(f"/orders/00000000-0000-0000-0000-000000000000/{order.access_token}/{suffix}").status_code == 404
    order.refresh_from_db()
    assert order.status == Order.Status.PENDING


# --- Cancelling -------------------------------------------------------------------------------------


def test_cancel_page_asks_before_freeing_the_seats(client, concert, general):
    order = start_order(client, concert, general)

    response = client.get(services.order_cancel_path(order))

    assert response.status_code == 200
    page = text_of(response)
    assert "You left the payment page" in page and "Nothing was charged." in page
    assert "Back to payment" in page and "Cancel the order and free the seats" in page
    order.refresh_from_db()
    general.refresh_from_db()
    assert (order.status, general.reserved) == (Order.Status.PENDING, 2)


def test_cancel_frees_the_seats_once(client, concert, general):
    order = start_order(client, concert, general)
    other = start_order(client, concert, general, quantity=1)
    general.refresh_from_db()
    assert general.reserved == 3

    first = client.post(services.order_cancel_path(order))
    second = client.post(services.order_cancel_path(order))

    general.refresh_from_db()
    order.refresh_from_db()
    assert general.reserved == 1  # the other order still holds its seat
    assert order.status == Order.Status.CANCELLED
    assert first["Location"] == second["Location"] == services.order_page_path(order)
    page = text_of(client.get(first["Location"]))
    assert "This order was cancelled. Nothing was charged." in page
    assert page.count("Your order is cancelled and the seats are free again.") == 1
    other.refresh_from_db()
    assert other.status == Order.Status.PENDING


def test_cancel_after_paying_changes_nothing(client, concert, general, django_capture_on_commit_callbacks):
    order = start_order(client, concert, general)
    pay(client, order, django_capture_on_commit_callbacks)

    client.post(services.order_cancel_path(order))

    order.refresh_from_db()
    general.refresh_from_db()
    assert order.status == Order.Status.PAID and (general.sold, general.reserved) == (2, 0)
    assert "Order status: Paid" in text_of(client.get(services.order_cancel_path(order)))


# --- The test checkout outside test mode ---------------------------------------------------------------


def test_test_checkout_is_404_when_payments_are_off(client, concert, general, settings):
    order = start_order(client, concert, general)
    settings.TEST_PAYMENTS = False
    settings.STRIPE_SECRET_KEY = ""

    assert client.get(path_of(order.checkout_url)).status_code == 404
    assert client.post(path_of(order.checkout_url), {"action": "pay"}).status_code == 404
    order.refresh_from_db()
    assert order.status == Order.Status.PENDING and not Ticket.objects.exists()


def test_test_checkout_is_404_for_an_order_that_is_not_a_test(client, concert, general):
    order = start_order(client, concert, general)
    Order.objects.filter(pk=order.pk).update(is_test=False)

    assert client.get(path_of(order.checkout_url)).status_code == 404
    assert TicketType.objects.get(pk=general.pk).sold == 0


# --- After an order ended unpaid ----------------------------------------------------------------------


@pytest.mark.parametrize("status", [Order.Status.EXPIRED, Order.Status.CANCELLED])
def test_an_order_that_ended_unpaid_leads_back_to_the_tickets_while_the_event_sells(client, concert, general, status):
    order = start_order(client, concert, general)
    Order.objects.filter(pk=order.pk).update(status=status)

    response = client.get(services.order_page_path(order))

    assert f'href="/e/{concert.pk}/"' in response.content.decode()
    assert "Back to the tickets" in text_of(response)


@pytest.mark.parametrize("ended", ["archived", "past"])
def test_no_way_back_to_the_tickets_once_the_event_no_longer_sells(client, concert, general, ended):
    order = start_order(client, concert, general)
    Order.objects.filter(pk=order.pk).update(status=Order.Status.EXPIRED)
    if ended == "archived":
        Event.objects.filter(pk=concert.pk).update(status=Event.Status.ARCHIVED)
    else:
        Event.objects.filter(pk=concert.pk).update(starts_at=timezone.now() - timedelta(days=2), ends_at=None)

    response = client.get(services.order_page_path(order))

    assert response.status_code == 200
    assert "This order expired before it was paid." in text_of(response)
    assert "Back to the tickets" not in text_of(response)


def test_a_paid_order_has_no_way_back_to_the_tickets(client, concert, general, django_capture_on_commit_callbacks):
    order = start_order(client, concert, general)
    pay(client, order, django_capture_on_commit_callbacks)

    assert "Back to the tickets" not in text_of(client.get(services.order_page_path(order)))

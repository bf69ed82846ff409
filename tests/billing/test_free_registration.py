"""Free registration: an order whose total is 0 completes at once, without Stripe, in every payment mode
("off" included): paid, seats sold (capped like a paid order), tickets issued, the buyer a guest, emailed."""

import re

import pytest
from django.core.cache import cache

from billing import services
from billing.models import LedgerEntry, Order, Ticket
from billing.services import CheckoutItem, CheckoutRequest, SoldOut
from guests.models import Guest
from tests.api.organizer_fixtures import api_client
from tests.factories import TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db

MODES = ["off", "test", "stripe"]


@pytest.fixture(params=MODES)
def mode(request, settings):
    """Each payment mode; in "stripe" mode the API is unreachable, so any call to Stripe would fail."""
    settings.TEST_PAYMENTS = request.param == "test"
    settings.STRIPE_SECRET_KEY = "sk_test_unused" if request.param == "stripe" else ""
    settings.STRIPE_WEBHOOK_SECRET = "whsec_unused" if request.param == "stripe" else ""
    settings.STRIPE_API_BASE = "http://127.0.0.1:9"
    settings.STRIPE_MAX_NETWORK_RETRIES = 0
    return request.param


@pytest.fixture
def meetup(tenant):
    return TicketedEventFactory(tenant=tenant, name="Free Meetup")


@pytest.fixture
def entry(meetup):
    return TicketTypeFactory(event=meetup, name="Entry", price=0, capacity=3, max_per_order=3)


def register(event, ticket_type, quantity, *, email="ada@example.com"):
    return services.checkout_start(
        event=event,
        request=CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=str(ticket_type.pk), quantity=quantity)],
            buyer_name="Ada Lovelace",
            buyer_email=email,
        ),
    )


def text_of(response) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", response.content.decode()).split())


def test_a_free_order_is_paid_at_once_with_tickets_a_guest_and_an_email_in_every_mode(
    mode, meetup, entry, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        order = register(meetup, entry, 2)

    order = Order.objects.get(pk=order.pk)
    assert (order.status, order.total, order.paid_amount, order.is_test) == (Order.Status.PAID, 0, 0, False)
    assert order.paid_at is not None and order.checkout_url == "" and order.stripe_session_id == ""
    entry.refresh_from_db()
    assert (entry.sold, entry.reserved) == (2, 0)
    assert Ticket.objects.filter(order=order, status=Ticket.Status.VALID).count() == 2
    guest = Guest.objects.get(event=meetup)
    assert (guest.status, guest.num_guests) == (Guest.Status.COMING, 2)
    (email,) = mailoutbox
    assert email.to == ["ada@example.com"] and "you are registered for Free Meetup" in email.body
    assert "your payment of" not in email.body and "Test payment mode" not in email.body
    assert guest.code in email.body
    # Nothing was captured, so the ledger has no entry (no zero entry either).
    assert not LedgerEntry.objects.filter(order=order).exists()


def test_free_seats_are_capped_like_paid_ones(mode, meetup, entry):
    register(meetup, entry, 2)

    with pytest.raises(SoldOut):
        register(meetup, entry, 2, email="late@example.com")

    entry.refresh_from_db()
    assert (entry.sold, entry.reserved) == (2, 0)
    assert Order.objects.filter(event=meetup).count() == 1


def test_completing_a_free_order_again_changes_nothing(meetup, entry, mailoutbox, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        order = register(meetup, entry, 1)
        services.order_free_complete(order=Order.objects.get(pk=order.pk))

    entry.refresh_from_db()
    assert (entry.sold, entry.reserved) == (1, 0)
    assert Ticket.objects.filter(order=order).count() == 1
    assert Guest.objects.filter(event=meetup).count() == 1
    assert len(mailoutbox) == 1


def test_a_paid_order_still_needs_payments_when_they_are_off(settings, meetup, entry):
    settings.TEST_PAYMENTS, settings.STRIPE_SECRET_KEY = False, ""
    paid = TicketTypeFactory(event=meetup, name="Supporter", price=1000)

    with pytest.raises(services.PaymentsUnavailable):
        register(meetup, paid, 1)

    paid.refresh_from_db()
    assert (paid.sold, paid.reserved) == (0, 0)


# --- The page -------------------------------------------------------------------------------------


def test_the_shop_of_a_free_event_says_register_and_registers_without_payments(
    client, settings, meetup, entry, mailoutbox, django_capture_on_commit_callbacks
):
    settings.TEST_PAYMENTS, settings.STRIPE_SECRET_KEY = False, ""  # production without Stripe keys

    shown = client.get(f"/e/{meetup.pk}/")
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            f"/e/{meetup.pk}/",
            {"buyer_name": "Ana García", "buyer_email": "ana@example.com", f"qty_{entry.pk}": "1", "code": ""},
        )

    assert shown.status_code == 200
    assert 'data-testid="register"' in shown.content.decode()
    assert "Continue to payment" not in text_of(shown) and "not open yet" not in text_of(shown)
    order = Order.objects.get(event=meetup)
    assert response.status_code == 303
    assert response["Location"] == services.order_page_path(order)
    page = client.get(response["Location"])
    assert "You are registered" in text_of(page)
    # A free order was never paid: its status says what the visitor did.
    assert re.search(r'data-testid="order-status">\s*Registered\s*<', page.content.decode())
    assert Guest.objects.get(event=meetup).code in text_of(page)
    assert len(mailoutbox) == 1


def test_with_payments_off_only_the_free_types_of_a_mixed_event_can_be_chosen(client, settings, meetup, entry):
    settings.TEST_PAYMENTS, settings.STRIPE_SECRET_KEY = False, ""
    paid = TicketTypeFactory(event=meetup, name="Supporter", price=1000)

    shown = client.get(f"/e/{meetup.pk}/").content.decode()

    assert f'name="qty_{entry.pk}"' in shown
    assert f'name="qty_{paid.pk}"' not in shown
    assert "Paid tickets are not on sale yet: payments are not configured." in shown
    assert "Continue to payment" in shown  # a mixed event's button: the total decides at checkout


def test_free_registration_is_throttled_like_checkout(client, settings, meetup, entry):
    settings.TICKET_CHECKOUT_RATE_PER_CLIENT = "3/h"
    entry.__class__.objects.filter(pk=entry.pk).update(capacity=100, max_per_order=1)
    cache.clear()
    data = {"buyer_name": "Ana García", "buyer_email": "ana@example.com", f"qty_{entry.pk}": "1", "code": ""}

    statuses = [client.post(f"/e/{meetup.pk}/", data).status_code for _ in range(4)]
    api = api_client().post(
        f"/api/v1/events/{meetup.pk}/checkout",
        {"items": [{"ticket_type": str(entry.pk), "quantity": 1}], "buyer": {"name": "A B", "email": "a@example.com"}},
        format="json",
    )

    assert statuses == [303, 303, 303, 429]
    assert api.status_code == 429
    assert Order.objects.filter(event=meetup).count() == 3


# --- The API --------------------------------------------------------------------------------------


def test_the_api_returns_the_completed_order_without_a_checkout_url(
    mode, meetup, entry, mailoutbox, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = api_client().post(
            f"/api/v1/events/{meetup.pk}/checkout",
            {
                "items": [{"ticket_type": str(entry.pk), "quantity": 2}],
                "buyer": {"name": "Ada Lovelace", "email": "ada@example.com"},
            },
            format="json",
        )

    assert response.status_code == 201, response.content
    body = response.json()
    order = Order.objects.get(pk=body["order_id"])
    assert (body["status"], body["checkout_url"], body["total"]) == ("paid", None, 0)
    assert body["order_url"].endswith(services.order_page_path(order))
    assert Ticket.objects.filter(order=order).count() == 2
    assert len(mailoutbox) == 1


def test_the_api_refuses_more_free_seats_than_are_left(meetup, entry):
    body = {"items": [{"ticket_type": str(entry.pk), "quantity": 3}], "buyer": {"name": "A B", "email": "a@b.co"}}
    assert api_client().post(f"/api/v1/events/{meetup.pk}/checkout", body, format="json").status_code == 201

    again = api_client().post(f"/api/v1/events/{meetup.pk}/checkout", body, format="json", REMOTE_ADDR="10.0.0.2")

    assert again.status_code == 409 and again.json()["code"] == "sold_out"
    entry.refresh_from_db()
    assert (entry.sold, entry.reserved) == (3, 0)

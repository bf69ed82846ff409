"""Stripe webhooks with a real worker on Redis: the endpoint only stores and enqueues; the worker pays.

Skipped without Redis unless REQUIRE_REDIS=1 (see conftest.py).
"""

import pytest
from django.core import mail

from billing import services
from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
from events.models import Event
from tests.factories import TicketedEventFactory, TicketTypeFactory
from tests.support.stripe_server import FakeStripe
from tests.support.waiting import wait_for

pytestmark = pytest.mark.redis

WEBHOOK_URL = "/billing/stripe/webhook/"


def _deliver(client, body: bytes, secret: str):
    return client.post(
        WEBHOOK_URL, data=body, content_type="application/json", HTTP_STRIPE_SIGNATURE=FakeStripe.sign(body, secret)
    )


def test_a_paid_checkout_is_stored_by_the_endpoint_and_turned_into_tickets_once_by_the_worker(
    celery_worker, fake_stripe, client, settings
):
    event = TicketedEventFactory(status=Event.Status.PUBLISHED)
    general = TicketTypeFactory(event=event, capacity=5, price=2500)
    order = services.checkout_start(
        event=event,
        request=services.CheckoutRequest(
            items=[services.CheckoutItem(ticket_type_id=str(general.pk), quantity=2)],
            buyer_name="Ada Lovelace",
            buyer_email="ada@example.com",
        ),
    )
    body = FakeStripe.payload(fake_stripe.complete(order.stripe_session_id))

    # Stripe retries a delivery it thinks failed: the same bytes arrive three times.
    responses = [_deliver(client, body, settings.STRIPE_WEBHOOK_SECRET) for _ in range(3)]

    assert [r.status_code for r in responses] == [200, 200, 200]
    assert WebhookEvent.objects.count() == 1

    def paid_and_emailed():
        """the worker marked the order paid, issued its tickets and sent the email"""
        order.refresh_from_db()
        return order.status == Order.Status.PAID and order.confirmation_sent_at is not None

    wait_for(paid_and_emailed)
    wait_for(lambda: WebhookEvent.objects.filter(status=WebhookEvent.Status.PROCESSED).count() == 1)
    general.refresh_from_db()
    assert (general.sold, general.reserved) == (2, 0)
    assert sorted(Ticket.objects.filter(order=order).values_list("seat", flat=True)) == [1, 2]
    assert list(LedgerEntry.objects.filter(order=order).values_list("kind", "amount")) == [("payment", 5000)]
    assert [m.subject for m in mail.outbox].count(f"Your tickets for {event.name}") == 1

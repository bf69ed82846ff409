"""Organizers are emailed, once, when money arrives for an order that issued no tickets."""

from django.core import mail

from billing import notifications
from billing.models import Order
from tests.billing.conftest import buy, expired_event, fresh

ATTENTION_SUBJECT = "An order for {event} needs you"


def attention_emails(event) -> list:
    return [m for m in mail.outbox if m.subject == ATTENTION_SUBJECT.format(event=event.name)]


def test_a_payment_whose_seats_were_sold_meanwhile_emails_the_owners_and_the_event_contact(
    fake_stripe, owner, ticketed_event, vip, webhook
):
    late = buy(ticketed_event, (vip, 2), email="late@example.com")
    webhook(expired_event(fake_stripe.session(late.stripe_session_id)))
    quick = buy(ticketed_event, (vip, 2), email="quick@example.com")
    webhook(fake_stripe.complete(quick.stripe_session_id))

    completed = fake_stripe.complete(late.stripe_session_id)
    webhook(completed)
    webhook(completed)  # Stripe's retry: still one email

    [message] = attention_emails(ticketed_event)
    assert sorted(message.to) == sorted({owner.email, ticketed_event.contact_email})
    assert "late@example.com" in message.body and "€120.00" in message.body
    assert "sold to others" in message.body
    assert f"/events/{ticketed_event.pk}/orders/{late.pk}/" in message.body
    assert fresh(late).attention_notified_at is not None


def test_a_payment_of_another_amount_emails_the_organizers_to_review_it(
    fake_stripe, owner, ticketed_event, standard, webhook
):
    order = buy(ticketed_event, (standard, 1))

    webhook(fake_stripe.complete(order.stripe_session_id, amount_total=100))

    assert fresh(order).status == Order.Status.NEEDS_REVIEW
    [message] = attention_emails(ticketed_event)
    assert "another amount" in message.body and "€1.00" in message.body


def test_an_order_that_was_paid_normally_emails_nobody(fake_stripe, owner, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 1))

    webhook(fake_stripe.complete(order.stripe_session_id))

    assert fresh(order).status == Order.Status.PAID
    assert attention_emails(ticketed_event) == []
    assert notifications.order_attention_notify(order=fresh(order)) is False

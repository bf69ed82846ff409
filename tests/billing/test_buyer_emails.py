"""The buyer is emailed once per refund (amount, what is still paid, which tickets no longer admit anyone) and once
when an order expires or its payment fails (nothing charged, seats released, a link to try again), in the language
they ordered in; duplicate webhooks, two workers and a mail server hanging up send neither twice."""

import smtplib
from datetime import timedelta
from unittest import mock

import pytest
from django.core import mail
from django.test import override_settings
from django.utils import timezone

from billing import notifications, services
from billing.models import LedgerEntry, Order, Ticket
from billing.tasks import order_closed_notify_task, order_refund_emails_send_task
from tests.billing.conftest import STANDARD_PRICE, VIP_PRICE, buy, fresh, tickets_of
from tests.factories import TicketedEventFactory, TicketTypeFactory
from tests.support.backends import tasks_left_queued

pytestmark = pytest.mark.django_db

TOTAL = 2 * STANDARD_PRICE + VIP_PRICE


def refund_emails(to="ada@example.com") -> list:
    return [m for m in mail.outbox if m.subject.startswith("Your refund for") and m.to == [to]]


def closed_emails(to="ada@example.com") -> list:
    subjects = ("Your order for", "Your payment for")
    return [m for m in mail.outbox if m.subject.startswith(subjects) and m.to == [to]]


def calendars(message) -> list:
    return [a for a in message.attachments if not isinstance(a, tuple) and a.get_content_type() == "text/calendar"]


def html_of(message) -> str:
    [(html, mimetype)] = message.alternatives
    assert mimetype == "text/html"
    return html


@pytest.fixture
def paid_order(fake_stripe, ticketed_event, standard, vip, webhook):
    """Paid through Stripe: seats 1-2 standard, seat 3 VIP (voided first by a partial refund)."""
    order = buy(ticketed_event, (standard, 2), (vip, 1), names=["Ada", "Grace", "Alan"])
    webhook(fake_stripe.complete(order.stripe_session_id))
    order = fresh(order)
    assert order.status == Order.Status.PAID
    return order


@pytest.fixture
def run_on_commit(django_capture_on_commit_callbacks):
    """Run a service with its on-commit tasks, as a request or worker would after its transaction commits."""

    def run(function, **kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            return function(**kwargs)

    return run


# --- Refunds -----------------------------------------------------------------------------------------------------


def test_a_partial_refund_emails_the_amount_what_is_still_paid_and_the_voided_ticket_with_the_event_attached(
    paid_order, owner, run_on_commit, ticketed_event
):
    run_on_commit(services.order_refund, order=paid_order, acting_user=owner, amount=VIP_PRICE)

    [email] = refund_emails()
    vip_ticket, *standard_tickets = reversed(tickets_of(paid_order))
    assert vip_ticket.status == Ticket.Status.VOID
    assert email.subject == f"Your refund for {ticketed_event.name}"
    assert "€60.00 of your order" in email.body
    assert "Refunded in total: €60.00" in email.body and "Still paid: €50.00" in email.body
    cancelled, still_valid = email.body.split("These tickets are cancelled")[1].split("These tickets are still valid")
    assert vip_ticket.display_code in cancelled and "(Alan)" in cancelled
    assert all(t.display_code in still_valid and t.display_code not in cancelled for t in standard_tickets)
    assert vip_ticket.display_code in html_of(email) and "Still paid" in html_of(email)
    [ics] = calendars(email)  # tickets left to use: the event stays in the calendar
    assert b"BEGIN:VEVENT" in ics.get_payload(decode=True)
    assert ticketed_event.tenant.name in email.from_email  # in the organization's name, like the tickets email
    assert LedgerEntry.objects.get(kind="refund").buyer_notified_at is not None


def test_refunding_the_rest_emails_again_with_every_ticket_voided_and_no_calendar(paid_order, owner, run_on_commit):
    run_on_commit(services.order_refund, order=paid_order, acting_user=owner, amount=VIP_PRICE)
    run_on_commit(services.order_refund, order=fresh(paid_order), acting_user=owner)

    first, second = refund_emails()
    assert "€50.00 of your order" in second.body
    assert "Refunded in total: €110.00" in second.body and "Still paid: €0.00" in second.body
    assert "still valid" not in second.body
    assert all(t.display_code in second.body for t in tickets_of(paid_order))
    assert calendars(second) == []  # nothing left to attend
    assert "Still paid: €50.00" in first.body  # each email tells its own step


def test_a_refund_made_in_stripes_dashboard_is_emailed_once_however_often_the_webhook_comes(
    fake_stripe, paid_order, webhook
):
    fake_stripe.refund_outside(paid_order.stripe_payment_intent_id, STANDARD_PRICE)
    event = fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id)

    for _delivery in range(3):
        assert webhook(event).status_code == 200
    # A second event for the same charge (Stripe sends charge.refund.updated and friends too) books nothing new.
    webhook(fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id))

    [email] = refund_emails()
    assert "€25.00 of your order" in email.body and "Still paid: €85.00" in email.body
    assert "These tickets are cancelled" not in email.body  # €25 covers no ticket of the VIP seat (€60) voided first
    assert len(calendars(email)) == 1


def test_the_organizers_refund_is_not_emailed_again_when_stripe_reports_it(fake_stripe, paid_order, owner, webhook):
    services.order_refund(order=paid_order, acting_user=owner)  # on commit: sent here by the next line's task
    order_refund_emails_send_task.delay(order_id=str(paid_order.pk))

    webhook(fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id))
    webhook(fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id))

    [email] = refund_emails()
    assert "€110.00 of your order" in email.body and calendars(email) == []


def test_two_workers_send_one_email_per_refund(paid_order, owner):
    with tasks_left_queued():
        services.order_refund(order=paid_order, acting_user=owner, amount=1000)
        services.order_refund(order=fresh(paid_order), acting_user=owner, amount=2000)

    assert notifications.order_refund_emails_send(order=fresh(paid_order)) == 2
    assert notifications.order_refund_emails_send(order=fresh(paid_order)) == 0
    assert order_refund_emails_send_task.delay(order_id=str(paid_order.pk)).result == 0
    assert [m.body.count("€10.00 of your order") + m.body.count("€20.00 of your order") for m in refund_emails()] == [
        1,
        1,
    ]


def test_a_second_worker_running_while_the_first_is_sending_sends_nothing(paid_order, owner):
    with tasks_left_queued():
        services.order_refund(order=paid_order, acting_user=owner, amount=VIP_PRICE)
    real_send = mail.EmailMultiAlternatives.send
    second_worker = []

    def send_while_another_worker_runs(message, *args, **kwargs):
        if not second_worker:  # the first worker is inside its send: the task's duplicate runs now
            second_worker.append(notifications.order_refund_emails_send(order=fresh(paid_order)))
        return real_send(message, *args, **kwargs)

    with mock.patch.object(mail.EmailMultiAlternatives, "send", send_while_another_worker_runs):
        assert notifications.order_refund_emails_send(order=paid_order) == 1

    assert second_worker == [0]
    assert len(refund_emails()) == 1


def test_a_refund_claimed_by_a_running_worker_is_left_to_it_but_a_dead_workers_claim_is_taken_over(paid_order, owner):
    with tasks_left_queued():
        services.order_refund(order=paid_order, acting_user=owner, amount=1000)
    entry = LedgerEntry.objects.get(kind="refund")
    # Another worker won the compare-and-set a moment ago and is sending.
    LedgerEntry.objects.filter(pk=entry.pk).update(buyer_notice_claimed_at=timezone.now())
    assert notifications.order_refund_emails_send(order=paid_order) == 0
    assert refund_emails() == []

    # That worker died before sending (the task is redelivered): after a while its claim is stale.
    LedgerEntry.objects.filter(pk=entry.pk).update(buyer_notice_claimed_at=timezone.now() - timedelta(hours=1))
    assert notifications.order_refund_emails_send(order=paid_order) == 1
    assert notifications.order_refund_emails_send(order=paid_order) == 0
    assert len(refund_emails()) == 1


def test_a_mail_server_hanging_up_is_retried_and_the_refund_emailed_once(paid_order, owner):
    with tasks_left_queued():
        services.order_refund(order=paid_order, acting_user=owner, amount=VIP_PRICE)
    real_send = mail.EmailMultiAlternatives.send
    calls = []

    def flaky(message, *args, **kwargs):
        calls.append(message.subject)
        if len(calls) == 1:
            raise smtplib.SMTPServerDisconnected("gone")
        return real_send(message, *args, **kwargs)

    with mock.patch.object(mail.EmailMultiAlternatives, "send", flaky):
        with pytest.raises(smtplib.SMTPServerDisconnected):
            notifications.order_refund_emails_send(order=paid_order)
        entry = LedgerEntry.objects.get(kind="refund")
        assert entry.buyer_notice_claimed_at is None and entry.buyer_notified_at is None  # the claim was given back
        assert order_refund_emails_send_task.delay(order_id=str(paid_order.pk)).result == 1  # the retry
        assert order_refund_emails_send_task.delay(order_id=str(paid_order.pk)).result == 0  # a late duplicate

    assert len(calls) == 2 and len(refund_emails()) == 1


def test_the_task_retries_a_transient_mail_failure_by_itself(paid_order, owner):
    services.order_refund(order=paid_order, acting_user=owner, amount=VIP_PRICE)
    real_send = mail.EmailMultiAlternatives.send
    failures = iter([smtplib.SMTPServerDisconnected("gone")])

    def flaky(message, *args, **kwargs):
        error = next(failures, None)
        if error:
            raise error
        return real_send(message, *args, **kwargs)

    with mock.patch.object(mail.EmailMultiAlternatives, "send", flaky):
        result = order_refund_emails_send_task.apply(kwargs={"order_id": str(paid_order.pk)})

    assert result.successful()
    assert len(refund_emails()) == 1


def test_the_refund_email_is_in_the_buyers_language(paid_order, owner, run_on_commit, ticketed_event):
    Order.objects.filter(pk=paid_order.pk).update(language="es")  # bought on the Spanish shop page

    run_on_commit(services.order_refund, order=fresh(paid_order), acting_user=owner, amount=VIP_PRICE)

    [email] = [m for m in mail.outbox if m.to == ["ada@example.com"] and m.subject.startswith("Tu reembolso")]
    assert email.subject == f"Tu reembolso para {ticketed_event.name}"
    assert "60,00\xa0€" in email.body and "€60.00" not in email.body
    assert "Sigue pagado: 50,00\xa0€" in email.body
    assert "Estas entradas quedan anuladas" in email.body and "Estas entradas siguen siendo válidas" in email.body
    assert "Sigue pagado" in html_of(email)


def test_a_refund_of_another_organizations_order_emails_only_its_own_buyer(
    fake_stripe, paid_order, owner, run_on_commit, webhook
):
    other_event = TicketedEventFactory()
    other_type = TicketTypeFactory(event=other_event, price=1500)
    theirs = buy(other_event, (other_type, 1), email="bob@example.com")
    webhook(fake_stripe.complete(theirs.stripe_session_id))
    mail.outbox.clear()

    payment_intent = fresh(theirs).stripe_payment_intent_id
    fake_stripe.refund_outside(payment_intent)
    webhook(fake_stripe.charge_refunded(payment_intent))
    # Asking for our order's refund emails never reaches theirs.
    assert notifications.order_refund_emails_send(order=paid_order) == 0

    assert [m.to for m in mail.outbox] == [["bob@example.com"]]
    [email] = mail.outbox
    assert other_event.name in email.subject and other_event.tenant.name in email.from_email
    assert paid_order.event.name not in email.body
    assert LedgerEntry.objects.filter(order_id=paid_order.pk, kind="refund").count() == 0


# --- Expired or cancelled orders ------------------------------------------------------------------------------


def test_an_order_expired_by_the_sweep_tells_the_buyer_nothing_was_charged_once(
    fake_stripe, ticketed_event, standard, run_on_commit, webhook
):
    order = buy(ticketed_event, (standard, 2))
    later = order.expires_at + timedelta(hours=1)

    assert run_on_commit(services.orders_expire_due, now=later) == 1
    assert run_on_commit(services.orders_expire_due, now=later) == 0
    webhook(fake_stripe.expire_event(order.stripe_session_id))  # Stripe's own expiry, after the sweep's
    order_closed_notify_task.delay(order_id=str(order.pk), reason="sweep")  # a redelivered task

    [email] = closed_emails()
    assert email.subject == f"Your order for {ticketed_event.name} expired"
    assert "your order of €50.00" in email.body and "Nothing was charged" in email.body
    assert "seats held for you are released" in email.body
    assert "paid at the very last moment" in email.body  # a late payment is honoured or refunded, never lost
    assert f"/e/{ticketed_event.pk}/" in email.body and f"/e/{ticketed_event.pk}/" in html_of(email)
    assert calendars(email) == []  # no event to attend
    assert fresh(order).closed_notified_at is not None


def test_stripes_expired_event_delivered_twice_tells_the_buyer_once(fake_stripe, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 1))
    event = fake_stripe.expire_event(order.stripe_session_id)

    webhook(event)
    webhook(event)

    assert fresh(order).status == Order.Status.EXPIRED
    [email] = closed_emails()
    assert "expired" in email.subject


def test_a_failed_delayed_payment_tells_the_buyer_the_payment_failed(fake_stripe, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 1))
    webhook(fake_stripe.complete(order.stripe_session_id, paid=False))
    event = fake_stripe.async_payment_failed(order.stripe_session_id)

    webhook(event)
    webhook(event)

    assert fresh(order).status == Order.Status.CANCELLED
    [email] = closed_emails()
    assert email.subject == f"Your payment for {ticketed_event.name} failed"
    assert "your payment of €25.00" in email.body and "Nothing was charged" in email.body
    assert f"/e/{ticketed_event.pk}/" in email.body


def test_the_buyers_own_cancel_is_not_emailed(fake_stripe, ticketed_event, standard, run_on_commit):
    order = buy(ticketed_event, (standard, 1))

    assert run_on_commit(services.order_cancel_by_buyer, order=order) is True

    assert closed_emails() == []  # the order page said it: cancelled, nothing charged
    assert notifications.order_closed_notify(order=fresh(order), reason="buyer_cancelled") is False
    assert fresh(order).closed_notified_at is None


def test_an_expired_order_paid_late_before_the_email_went_out_gets_only_its_tickets(
    fake_stripe, ticketed_event, standard, webhook
):
    order = buy(ticketed_event, (standard, 1))
    paid = fake_stripe.complete(order.stripe_session_id)  # the buyer paid in the last second,
    with tasks_left_queued():
        services.orders_expire_due(now=order.expires_at + timedelta(hours=1))  # the sweep ran first; its email queued
    webhook(paid)
    assert fresh(order).status == Order.Status.PAID

    assert order_closed_notify_task.delay(order_id=str(order.pk), reason="sweep").result is False
    assert closed_emails() == []
    assert [m.subject for m in mail.outbox if m.to == ["ada@example.com"]] == [
        f"Your tickets for {ticketed_event.name}"
    ]


def test_the_expiry_email_is_in_the_buyers_language_and_retried_once_after_a_mail_failure(ticketed_event, standard):
    order = buy(ticketed_event, (standard, 2))
    Order.objects.filter(pk=order.pk).update(language="es")
    with tasks_left_queued():
        services.orders_expire_due(now=order.expires_at + timedelta(hours=1))
    order = Order.objects.select_related("event", "event__tenant").get(pk=order.pk)

    with mock.patch.object(mail.EmailMultiAlternatives, "send", side_effect=smtplib.SMTPServerDisconnected("x")):
        with pytest.raises(smtplib.SMTPServerDisconnected):
            notifications.order_closed_notify(order=order, reason="sweep")
    assert fresh(order).closed_notice_claimed_at is None and mail.outbox == []

    assert notifications.order_closed_notify(order=order, reason="sweep") is True
    assert notifications.order_closed_notify(order=order, reason="sweep") is False
    [email] = mail.outbox
    assert email.subject == f"Tu pedido para {ticketed_event.name} ha caducado"
    assert "50,00\xa0€" in email.body and "No se ha cobrado nada" in email.body


def test_an_expired_event_naming_another_organizations_order_emails_nobody(
    fake_stripe, ticketed_event, standard, webhook
):
    ours = buy(ticketed_event, (standard, 1))
    other_event = TicketedEventFactory()
    theirs = buy(other_event, (TicketTypeFactory(event=other_event, price=100), 1), email="bob@example.com")
    event = fake_stripe.expire_event(ours.stripe_session_id)
    session = event["data"]["object"]
    session["metadata"]["order_id"] = session["client_reference_id"] = str(theirs.pk)

    webhook(event)

    assert fresh(theirs).status == Order.Status.PENDING
    assert mail.outbox == []


@override_settings(LANGUAGE_CODE="en")
def test_the_waitlist_can_reuse_the_buyer_email_helper(paid_order):
    """buyer_email_send is the one door for buyer emails: language, sender, reply-to, optional .ics."""
    Order.objects.filter(pk=paid_order.pk).update(language="es")
    order = Order.objects.select_related("event", "event__tenant").get(pk=paid_order.pk)
    mail.outbox.clear()

    notifications.buyer_email_send(
        order=order,
        subject="Hola %(event)s",
        template="order_closed",
        context={"payment_failed": True, "total": "1"},
        calendar_link_label="x",
    )

    [email] = mail.outbox
    assert email.subject == f"Hola {order.event.name}" and email.to == ["ada@example.com"]
    assert email.reply_to == ([order.event.contact_email] if order.event.contact_email else [])
    assert "No se ha cobrado nada" in email.body and len(calendars(email)) == 1

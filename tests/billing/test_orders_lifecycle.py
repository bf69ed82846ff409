"""An order's life at the service level: the expiry sweep and Stripe's expiry racing, late payments, amounts that
do not match, the organizer's decisions, the tickets email, check-in, the buyer cancelling, and test-payment mode
going through the same webhook code as Stripe."""

from datetime import timedelta

import pytest
from django.core import mail
from django.core.exceptions import ValidationError

from billing import notifications, payments, services
from billing.models import LedgerEntry, Order, Ticket, WebhookEvent
from eventsaas.models import AuditLog
from tests.billing.conftest import (
    STANDARD_PRICE,
    VIP_PRICE,
    assert_money_matches,
    buy,
    fresh,
    ledger_of,
    png_attachments,
    seats,
    tickets_emails,
    tickets_of,
)
from tests.factories import TicketedEventFactory, TicketTypeFactory
from tests.support.stripe_fixtures import STRIPE_WEBHOOK_SECRET
from tests.support.stripe_server import FakeStripe

pytestmark = pytest.mark.django_db


# --- The expiry sweep -----------------------------------------------------------------------------------------


def test_the_sweep_expires_only_pending_orders_past_their_time_and_grace(
    fake_stripe, ticketed_event, standard, settings, webhook
):
    due = buy(ticketed_event, (standard, 2), email="due@example.com")
    paid = buy(ticketed_event, (standard, 1), email="paid@example.com")
    webhook(fake_stripe.complete(paid.stripe_session_id))
    later = buy(ticketed_event, (standard, 3), email="later@example.com")
    Order.objects.filter(pk=later.pk).update(expires_at=due.expires_at + timedelta(minutes=10))
    grace = timedelta(seconds=settings.ORDER_EXPIRY_GRACE_SECONDS)
    assert seats(standard) == (1, 5)

    assert services.orders_expire_due(now=due.expires_at + grace - timedelta(seconds=1)) == 0
    assert fresh(due).status == Order.Status.PENDING

    assert services.orders_expire_due(now=due.expires_at + grace) == 1

    assert [fresh(o).status for o in (due, paid, later)] == ["expired", "paid", "pending"]
    assert fresh(due).closed_at is not None
    assert seats(standard) == (1, 3)
    assert services.orders_expire_due(now=due.expires_at + grace) == 0  # nothing left to expire twice
    assert seats(standard) == (1, 3)
    assert AuditLog.objects.filter(action="order.expired", object_id=due.pk, data__reason="sweep").count() == 1


def _pair(ticketed_event, standard):
    """The order that expires, and a witness holding seats of the same type: a second release would take its."""
    order = buy(ticketed_event, (standard, 2), email="slow@example.com")
    witness = buy(ticketed_event, (standard, 3), email="witness@example.com")
    Order.objects.filter(pk=witness.pk).update(expires_at=order.expires_at + timedelta(days=1))
    return order, witness


def test_sweep_then_stripes_expired_event_release_the_seats_once(fake_stripe, ticketed_event, standard, webhook):
    order, witness = _pair(ticketed_event, standard)

    assert services.orders_expire_due(now=order.expires_at + timedelta(hours=1)) == 1
    assert seats(standard) == (0, 3)
    webhook(fake_stripe.expire_event(order.stripe_session_id))

    assert fresh(order).status == Order.Status.EXPIRED
    assert fresh(witness).status == Order.Status.PENDING
    assert seats(standard) == (0, 3)
    assert WebhookEvent.objects.get().status == WebhookEvent.Status.PROCESSED


def test_stripes_expired_event_then_sweep_release_the_seats_once(fake_stripe, ticketed_event, standard, webhook):
    order, witness = _pair(ticketed_event, standard)

    webhook(fake_stripe.expire_event(order.stripe_session_id))
    assert fresh(order).status == Order.Status.EXPIRED
    assert seats(standard) == (0, 3)

    assert services.orders_expire_due(now=order.expires_at + timedelta(hours=1)) == 0

    assert seats(standard) == (0, 3)
    assert fresh(witness).status == Order.Status.PENDING
    assert AuditLog.objects.filter(object_id=order.pk, action="order.expired").count() == 1


# --- Late payments --------------------------------------------------------------------------------------------


def test_a_payment_after_the_sweep_is_honoured_while_the_seats_are_free(
    fake_stripe, ticketed_event, standard, vip, webhook
):
    order = buy(ticketed_event, (standard, 1), (vip, 1))
    paid = fake_stripe.complete(order.stripe_session_id)  # the buyer paid in the last second,
    services.orders_expire_due(now=order.expires_at + timedelta(hours=1))  # the sweep ran before the event came
    assert seats(vip) == (0, 0)

    webhook(paid)

    order = fresh(order)
    assert order.status == Order.Status.PAID and order.attention == ""
    assert len(tickets_of(order)) == 2
    assert seats(standard) == (1, 0) and seats(vip) == (1, 0)
    assert_money_matches(order, fake_stripe)
    assert AuditLog.objects.get(action="order.paid", object_id=order.pk).data["late"] is True


def test_a_late_payment_honoured_clears_the_time_the_order_expired(fake_stripe, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 1))
    paid = fake_stripe.complete(order.stripe_session_id)
    services.orders_expire_due(now=order.expires_at + timedelta(hours=1))
    assert fresh(order).closed_at is not None

    webhook(paid)

    order = fresh(order)
    assert order.status == Order.Status.PAID and order.closed_at is None
    # The expiry stays on record in the audit log.
    assert AuditLog.objects.filter(action="order.expired", object_id=order.pk).count() == 1


def test_a_late_payment_whose_seats_are_gone_is_refunded_by_the_organizer_without_touching_seats(
    fake_stripe, ticketed_event, vip, webhook, owner
):
    late = buy(ticketed_event, (vip, 2), email="late@example.com")
    paid_late = fake_stripe.complete(late.stripe_session_id)  # its event arrives after the sweep and a new sale
    services.orders_expire_due(now=late.expires_at + timedelta(hours=1))
    other = buy(ticketed_event, (vip, 2), email="other@example.com")
    webhook(fake_stripe.complete(other.stripe_session_id))

    webhook(paid_late)
    late = fresh(late)
    assert (late.status, late.attention) == (Order.Status.REFUND_DUE, Order.Attention.SEATS_GONE)
    assert late.closed_at is not None  # it stays closed: its seats went back and were sold again
    assert late.paid_amount == 2 * VIP_PRICE and tickets_of(late) == []
    assert seats(vip) == (2, 0)

    late = services.order_refund(order=late, acting_user=owner)

    assert (late.status, late.refunded_amount) == (Order.Status.REFUNDED, 2 * VIP_PRICE)
    assert seats(vip) == (2, 0)  # the other buyer's seats stay sold
    assert assert_money_matches(late, fake_stripe) == 0
    assert {t.status for t in tickets_of(other)} == {"valid"}


# --- Amount mismatch: the organizer decides ----------------------------------------------------------------------


@pytest.fixture
def mismatched(fake_stripe, ticketed_event, standard, vip, webhook):
    order = buy(ticketed_event, (standard, 2), (vip, 1))
    webhook(fake_stripe.complete(order.stripe_session_id, amount_total=order.total - 500))
    order = fresh(order)
    assert (order.status, order.attention) == (Order.Status.NEEDS_REVIEW, Order.Attention.AMOUNT_MISMATCH)
    return order


def test_accepting_a_mismatched_payment_sells_the_held_seats_and_issues_tickets(
    fake_stripe, mismatched, owner, standard, vip, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        order = services.order_review_accept(order=mismatched, acting_user=owner)

    assert order.status == Order.Status.PAID
    assert [t.seat for t in tickets_of(order) if t.is_valid] == [1, 2, 3]
    assert seats(standard) == (2, 0) and seats(vip) == (1, 0)
    assert order.paid_amount == order.total - 500
    assert_money_matches(order, fake_stripe)
    (email,) = tickets_emails()
    assert len(png_attachments(email)) == 3
    assert AuditLog.objects.get(action="order.review_accepted").actor_user == owner

    with pytest.raises(ValidationError):
        services.order_review_accept(order=order, acting_user=owner)
    assert len(tickets_of(order)) == 3 and seats(standard) == (2, 0)


def test_refunding_a_mismatched_payment_releases_the_held_seats(fake_stripe, mismatched, owner, standard, vip):
    order = services.order_refund(order=mismatched, acting_user=owner)

    assert (order.status, order.refunded_amount) == (Order.Status.REFUNDED, order.total - 500)
    assert fake_stripe.refunds_created == 1
    assert tickets_of(order) == []
    assert seats(standard) == (0, 0) and seats(vip) == (0, 0)
    assert assert_money_matches(order, fake_stripe) == 0
    with pytest.raises(ValidationError):
        services.order_review_accept(order=order, acting_user=owner)
    assert seats(standard) == (0, 0)


def test_accepting_after_a_partial_refund_in_review_is_partially_refunded_and_voids_what_it_covers(
    fake_stripe, mismatched, owner, vip, django_capture_on_commit_callbacks
):
    services.order_refund(order=mismatched, acting_user=owner, amount=VIP_PRICE)
    assert fresh(mismatched).status == Order.Status.NEEDS_REVIEW

    with django_capture_on_commit_callbacks(execute=True):
        order = services.order_review_accept(order=fresh(mismatched), acting_user=owner)

    assert (order.status, order.refunded_amount) == (Order.Status.PARTIALLY_REFUNDED, VIP_PRICE)
    assert [t.status for t in tickets_of(order)] == ["valid", "valid", "void"]
    assert seats(vip) == (0, 0)


# --- The tickets email ------------------------------------------------------------------------------------------


def test_the_tickets_email_is_sent_once_with_a_qr_image_per_ticket(fake_stripe, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 3), names=["Ada", "Bob", "Cy"])
    webhook(fake_stripe.complete(order.stripe_session_id))

    (email,) = tickets_emails()
    order = fresh(order)
    tickets = tickets_of(order)
    assert [t.attendee_name for t in tickets] == ["Ada", "Bob", "Cy"]
    assert email.to == ["ada@example.com"]
    assert services.order_page_path(order) in email.body
    images = png_attachments(email)
    assert sorted(i["Content-ID"] for i in images) == sorted(f"<ticket-{t.code}>" for t in tickets)
    assert all(i.get_payload(decode=True).startswith(b"\x89PNG") for i in images)
    assert order.confirmation_sent_at is not None

    assert notifications.order_confirmation_send(order=order) is False
    assert len(tickets_emails()) == 1


def test_the_tickets_email_shows_the_total_in_the_buyers_language(fake_stripe, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 3))
    Order.objects.filter(pk=order.pk).update(language="es")  # bought on the Spanish shop page

    webhook(fake_stripe.complete(order.stripe_session_id))

    [email] = [m for m in mail.outbox if m.to == ["ada@example.com"]]
    assert email.subject.startswith("Tus entradas")
    assert "75,00\xa0€" in email.body and "€75.00" not in email.body


# --- Check-in --------------------------------------------------------------------------------------------------


def test_check_in_answers_for_every_kind_of_code(fake_stripe, tenant, ticketed_event, standard, owner, webhook):
    order = buy(ticketed_event, (standard, 2))
    webhook(fake_stripe.complete(order.stripe_session_id))
    first, second = tickets_of(order)

    scan = services.ticket_check_in(event=ticketed_event, code=first.code, acting_user=owner)
    assert (scan.result, scan.ticket.pk) == ("valid", first.pk)
    stored = fresh(first)
    assert stored.checked_in_at == scan.checked_in_at and stored.checked_in_by == owner

    again = services.ticket_check_in(event=ticketed_event, code=first.display_code.lower(), acting_user=owner)
    assert (again.result, again.checked_in_at) == ("already_checked_in", stored.checked_in_at)

    # Typed as printed, in lower case, with spaces: the same code.
    typed = " " + second.display_code.lower().replace("-", " - ") + " "
    assert services.ticket_check_in(event=ticketed_event, code=typed, acting_user=owner).result == "valid"

    other_event = TicketedEventFactory(tenant=tenant)
    wrong = services.ticket_check_in(event=other_event, code=second.code, acting_user=owner)
    assert (wrong.result, wrong.ticket.pk) == ("wrong_event", second.pk)

    foreign_event = TicketedEventFactory()
    foreign_type = TicketTypeFactory(event=foreign_event)
    foreign = buy(foreign_event, (foreign_type, 1), email="x@example.com")
    webhook(fake_stripe.complete(foreign.stripe_session_id))
    (foreign_ticket,) = tickets_of(foreign)
    for code in (foreign_ticket.code, "NOT-A-REAL-CODE", ""):
        answer = services.ticket_check_in(event=ticketed_event, code=code, acting_user=owner)
        assert (answer.result, answer.ticket) == ("unknown", None), code
    assert fresh(foreign_ticket).checked_in_at is None

    assert AuditLog.objects.filter(action="ticket.checked_in").count() == 2


def test_a_refunded_ticket_checks_in_as_void(fake_stripe, ticketed_event, standard, owner, webhook):
    order = buy(ticketed_event, (standard, 2))
    webhook(fake_stripe.complete(order.stripe_session_id))
    services.order_refund(order=order, acting_user=owner, amount=STANDARD_PRICE)
    kept, refunded = tickets_of(order)

    answer = services.ticket_check_in(event=ticketed_event, code=refunded.code, acting_user=owner)

    assert (answer.result, answer.ticket.pk) == ("void", refunded.pk)
    assert fresh(refunded).checked_in_at is None
    assert services.ticket_check_in(event=ticketed_event, code=kept.code, acting_user=owner).result == "valid"


# --- The buyer cancels ----------------------------------------------------------------------------------------


def test_buyer_cancelling_frees_the_seats_and_expires_the_stripe_session(
    fake_stripe, ticketed_event, standard, vip, webhook
):
    order = buy(ticketed_event, (standard, 2), (vip, 1))
    witness = buy(ticketed_event, (standard, 1), email="witness@example.com")

    assert services.order_cancel_by_buyer(order=order) is True

    assert fresh(order).status == Order.Status.CANCELLED
    assert seats(standard) == (0, 1) and seats(vip) == (0, 0)
    expire_path = f"/v1/checkout/sessions/{order.stripe_session_id}/expire"
    assert len(fake_stripe.calls("POST", expire_path)) == 1
    assert fake_stripe.session(order.stripe_session_id)["status"] == "expired"

    assert services.order_cancel_by_buyer(order=fresh(order)) is False
    assert len(fake_stripe.calls("POST", expire_path)) == 1
    # Stripe reports the expiry it was asked for: nothing is released twice.
    webhook(fake_stripe.expire_event(order.stripe_session_id))
    assert seats(standard) == (0, 1) and fresh(witness).status == Order.Status.PENDING


def test_buyer_cancelling_while_stripe_is_down_still_cancels_without_an_error(
    fake_stripe, no_backoff, ticketed_event, standard
):
    order = buy(ticketed_event, (standard, 2))
    fake_stripe.fail_next(3, 500)

    try:
        cancelled = services.order_cancel_by_buyer(order=order)
    except Exception as exc:  # noqa: BLE001 - the buyer's page would answer 500
        raise AssertionError(f"order_cancel_by_buyer raised {exc!r}") from exc

    assert cancelled is True
    assert fresh(order).status == Order.Status.CANCELLED
    assert seats(standard) == (0, 0)


def test_buyer_cancelling_after_paying_changes_nothing(fake_stripe, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 1))
    webhook(fake_stripe.complete(order.stripe_session_id))

    assert services.order_cancel_by_buyer(order=fresh(order)) is False

    assert fresh(order).status == Order.Status.PAID
    assert seats(standard) == (1, 0)
    assert fake_stripe.calls("POST", f"/v1/checkout/sessions/{order.stripe_session_id}/expire") == []


# --- Test-payment mode: no Stripe keys, the same webhook code --------------------------------------------------


@pytest.fixture
def test_mode(settings):
    assert (settings.STRIPE_SECRET_KEY, settings.TEST_PAYMENTS) == ("", True)  # the default test settings
    assert payments.payment_mode() == "test"


def test_test_payment_mode_sells_end_to_end_through_the_webhook_code(
    test_mode, ticketed_event, standard, vip, owner, settings, django_capture_on_commit_callbacks
):
    order = buy(ticketed_event, (standard, 2), (vip, 1))
    assert order.is_test is True
    assert order.stripe_session_id == f"cs_{payments.TEST_ID_PREFIX}{order.pk.hex}"
    assert order.checkout_url == settings.SITE_URL + services.test_checkout_path(order)
    assert seats(standard) == (0, 2)

    with django_capture_on_commit_callbacks(execute=True):
        row = services.order_simulate_payment(order=order)

    row = fresh(row)
    assert (row.type, row.status, row.is_test) == ("checkout.session.completed", "processed", True)
    order = fresh(order)
    assert order.status == Order.Status.PAID
    assert [t.ticket_type_id for t in tickets_of(order)] == [standard.pk, standard.pk, vip.pk]
    assert seats(standard) == (2, 0) and seats(vip) == (1, 0)
    assert ledger_of(order) == [
        ("payment", 2 * STANDARD_PRICE + VIP_PRICE, f"pi_{payments.TEST_ID_PREFIX}{order.pk.hex}")
    ]
    (email,) = tickets_emails()
    assert len(png_attachments(email)) == 3

    scan = services.ticket_check_in(event=ticketed_event, code=tickets_of(order)[0].code, acting_user=owner)
    assert scan.result == "valid"
    again = services.ticket_check_in(event=ticketed_event, code=tickets_of(order)[0].code, acting_user=owner)
    assert again.result == "already_checked_in"

    order = services.order_refund(order=order, acting_user=owner, amount=VIP_PRICE)
    assert (order.status, order.refunded_amount) == (Order.Status.PARTIALLY_REFUNDED, VIP_PRICE)
    assert [t.status for t in tickets_of(order)] == ["valid", "valid", "void"]
    assert LedgerEntry.objects.filter(kind="refund").get().stripe_object_id.startswith(f"re_{payments.TEST_ID_PREFIX}")


def test_the_test_checkout_page_pays_and_abandons_through_the_webhook_code(
    test_mode, client, ticketed_event, standard, django_capture_on_commit_callbacks
):
    paid = buy(ticketed_event, (standard, 1))
    abandoned = buy(ticketed_event, (standard, 2), email="bob@example.com")

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(services.test_checkout_path(paid), {"action": "pay"})
    assert response.status_code == 302
    assert response["Location"] == services.order_page_path(paid) + "?paid=1"
    with django_capture_on_commit_callbacks(execute=True):
        client.post(services.test_checkout_path(abandoned), {"action": "cancel"})

    assert fresh(paid).status == Order.Status.PAID and len(tickets_of(paid)) == 1
    assert fresh(abandoned).status == Order.Status.EXPIRED and tickets_of(abandoned) == []
    assert seats(standard) == (1, 0)
    assert WebhookEvent.objects.filter(is_test=True, status="processed").count() == 2
    page = client.get(services.order_page_path(paid))
    assert page.status_code == 200 and tickets_of(paid)[0].display_code in page.content.decode()


def test_a_test_mode_event_is_posted_to_the_same_endpoint(test_mode, ticketed_event, standard, webhook):
    order = buy(ticketed_event, (standard, 1))
    body, header = payments.simulated_payment_event(order=order)

    assert webhook(None, body=body, header=header).status_code == 200
    assert fresh(order).status == Order.Status.PAID and len(tickets_of(order)) == 1

    # Signed with Stripe's secret instead: refused while test mode is on.
    other = buy(ticketed_event, (standard, 1), email="bob@example.com")
    body, _ = payments.simulated_payment_event(order=other)
    assert webhook(None, body=body, header=FakeStripe.sign(body, STRIPE_WEBHOOK_SECRET)).status_code == 400
    assert fresh(other).status == Order.Status.PENDING
    assert WebhookEvent.objects.count() == 1


def test_a_test_mode_event_is_refused_once_stripe_keys_are_configured(
    test_mode, ticketed_event, standard, settings, webhook
):
    order = buy(ticketed_event, (standard, 1))
    body, header = payments.simulated_payment_event(order=order)
    settings.STRIPE_SECRET_KEY, settings.STRIPE_WEBHOOK_SECRET, settings.TEST_PAYMENTS = (
        "sk_test_fake",
        STRIPE_WEBHOOK_SECRET,
        False,
    )
    assert payments.payment_mode() == "stripe"

    assert webhook(None, body=body, header=header).status_code == 400

    assert WebhookEvent.objects.count() == 0
    assert fresh(order).status == Order.Status.PENDING
    assert Ticket.objects.count() == 0

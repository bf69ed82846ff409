"""Refunds through the stripe SDK (organizer) and from Stripe's dashboard (charge.refunded), booked once each,
voiding the tickets the refunded money covers; after every step the ledger equals what Stripe holds."""

import pytest
from django.core.exceptions import ValidationError

from billing import services
from billing.models import LedgerEntry, Order, Ticket
from tests.billing.conftest import (
    STANDARD_PRICE,
    VIP_PRICE,
    assert_money_matches,
    buy,
    fresh,
    ledger_of,
    seats,
    stripe_net,
    tickets_of,
)

pytestmark = pytest.mark.django_db

REFUNDS = "/v1/refunds"
TOTAL = 2 * STANDARD_PRICE + VIP_PRICE


@pytest.fixture
def paid_order(fake_stripe, ticketed_event, standard, vip, webhook):
    """Paid through Stripe: seats 1-2 standard, seat 3 VIP (voided first by a partial refund)."""
    order = buy(ticketed_event, (standard, 2), (vip, 1))
    webhook(fake_stripe.complete(order.stripe_session_id))
    order = fresh(order)
    assert order.status == Order.Status.PAID and order.paid_amount == TOTAL
    return order


def statuses(order) -> list[str]:
    return [t.status for t in tickets_of(order)]


def refund_ids(fake_stripe, order) -> list[str]:
    return sorted(
        r["id"] for r in fake_stripe.refunds.values() if r["payment_intent"] == order.stripe_payment_intent_id
    )


def test_partial_refunds_void_tickets_only_when_covered_last_seat_first(fake_stripe, paid_order, owner, standard, vip):
    order = services.order_refund(order=paid_order, acting_user=owner, amount=3000)

    calls = fake_stripe.calls("POST", REFUNDS)
    assert len(calls) == 1
    assert calls[0].params == {
        "payment_intent": order.stripe_payment_intent_id,
        "amount": "3000",
        "metadata": {"order_id": str(order.pk), "tenant_id": str(order.tenant_id)},
        # A destination charge (the factories give the organization an account): docs/payments.md.
        "reverse_transfer": "true",
        "refund_application_fee": "true",
    }
    assert calls[0].headers["Idempotency-Key"] == f"order-{order.pk}-refund-0-3000"
    (first,) = fake_stripe.refunds.values()
    assert ledger_of(order) == [("payment", TOTAL, order.stripe_payment_intent_id), ("refund", 3000, first["id"])]
    assert (order.status, order.refunded_amount) == (Order.Status.PARTIALLY_REFUNDED, 3000)
    assert statuses(order) == ["valid", "valid", "valid"]  # 30.00 does not cover the 60.00 VIP seat
    assert seats(vip) == (1, 0)
    assert assert_money_matches(order, fake_stripe) == TOTAL - 3000

    order = services.order_refund(order=order, acting_user=owner, amount=3000)

    assert fake_stripe.refunds_created == 2
    assert fake_stripe.calls("POST", REFUNDS)[-1].headers["Idempotency-Key"] == f"order-{order.pk}-refund-3000-3000"
    assert (order.status, order.refunded_amount) == (Order.Status.PARTIALLY_REFUNDED, 6000)
    assert statuses(order) == ["valid", "valid", "void"]  # now the VIP seat is covered
    assert seats(vip) == (0, 0) and seats(standard) == (2, 0)
    assert assert_money_matches(order, fake_stripe) == TOTAL - 6000

    order = services.order_refund(order=order, acting_user=owner)  # the rest

    assert fake_stripe.refunds_created == 3
    assert fake_stripe.calls("POST", REFUNDS)[-1].params["amount"] == str(TOTAL - 6000)
    assert (order.status, order.refunded_amount) == (Order.Status.REFUNDED, TOTAL)
    assert statuses(order) == ["void", "void", "void"]
    assert seats(standard) == (0, 0) and seats(vip) == (0, 0)
    assert assert_money_matches(order, fake_stripe) == 0
    assert sorted(e[2] for e in ledger_of(order) if e[0] == "refund") == refund_ids(fake_stripe, order)

    with pytest.raises(ValidationError) as caught:
        services.order_refund(order=order, acting_user=owner)
    assert "amount" in caught.value.message_dict
    assert fake_stripe.refunds_created == 3


def test_the_same_refund_sent_again_after_a_lost_answer_is_one_refund(
    fake_stripe, paid_order, owner, settings, standard
):
    settings.STRIPE_MAX_NETWORK_RETRIES = 0  # the SDK gives up at once; the organizer clicks again
    fake_stripe.drop_next(1)  # Stripe refunds, the answer is lost

    with pytest.raises(ValidationError) as caught:
        services.order_refund(order=paid_order, acting_user=owner, amount=STANDARD_PRICE)
    assert "amount" in caught.value.message_dict
    assert fake_stripe.refunds_created == 1
    assert LedgerEntry.objects.filter(kind="refund").count() == 0
    assert fresh(paid_order).status == Order.Status.PAID

    order = services.order_refund(order=paid_order, acting_user=owner, amount=STANDARD_PRICE)

    calls = fake_stripe.calls("POST", REFUNDS)
    assert len(calls) == 2 and calls[0].headers["Idempotency-Key"] == calls[1].headers["Idempotency-Key"]
    assert fake_stripe.refunds_created == 1
    assert ledger_of(order)[1:] == [("refund", STANDARD_PRICE, refund_ids(fake_stripe, order)[0])]
    assert (order.status, order.refunded_amount) == (Order.Status.PARTIALLY_REFUNDED, STANDARD_PRICE)
    assert assert_money_matches(order, fake_stripe) == TOTAL - STANDARD_PRICE


def test_the_sdk_retries_a_lost_refund_answer_with_the_same_key(fake_stripe, no_backoff, paid_order, owner):
    fake_stripe.drop_next(1)

    order = services.order_refund(order=paid_order, acting_user=owner, amount=1000)

    assert len(fake_stripe.calls("POST", REFUNDS)) == 2
    assert fake_stripe.refunds_created == 1
    assert order.refunded_amount == 1000 and len(ledger_of(order)) == 2
    assert assert_money_matches(order, fake_stripe) == TOTAL - 1000


@pytest.mark.parametrize("amount", [TOTAL + 1, 0, -100])
def test_a_refund_outside_zero_and_what_was_paid_is_refused_and_books_nothing(fake_stripe, paid_order, owner, amount):
    with pytest.raises(ValidationError) as caught:
        services.order_refund(order=paid_order, acting_user=owner, amount=amount)

    assert list(caught.value.message_dict) == ["amount"]
    assert fake_stripe.calls("POST", REFUNDS) == []
    assert LedgerEntry.objects.filter(kind="refund").count() == 0
    assert fresh(paid_order).status == Order.Status.PAID
    assert set(statuses(paid_order)) == {"valid"}


def test_stripe_refusing_the_refund_is_a_field_error_and_books_nothing(fake_stripe, paid_order, owner):
    fake_stripe.fail_next(1, 400)

    with pytest.raises(ValidationError) as caught:
        services.order_refund(order=paid_order, acting_user=owner, amount=1000)

    assert list(caught.value.message_dict) == ["amount"]
    assert LedgerEntry.objects.filter(kind="refund").count() == 0
    assert fresh(paid_order).refunded_amount == 0
    assert assert_money_matches(paid_order, fake_stripe) == TOTAL


def test_charge_refunded_for_the_organizers_own_refunds_books_nothing_twice(
    fake_stripe, paid_order, owner, standard, vip, webhook
):
    services.order_refund(order=paid_order, acting_user=owner, amount=VIP_PRICE)
    first = fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id)
    order = services.order_refund(order=paid_order, acting_user=owner)
    second = fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id)
    booked = ledger_of(order)

    for event in (first, second, first):
        assert webhook(event).status_code == 200

    order = fresh(order)
    assert ledger_of(order) == booked and len(booked) == 3
    assert (order.status, order.refunded_amount) == (Order.Status.REFUNDED, TOTAL)
    assert statuses(order) == ["void", "void", "void"]
    assert seats(standard) == (0, 0) and seats(vip) == (0, 0)  # released once, not below zero
    assert assert_money_matches(order, fake_stripe) == 0


def test_a_refund_made_in_the_stripe_dashboard_is_booked_once_from_charge_refunded(
    fake_stripe, paid_order, standard, vip, webhook
):
    pi = paid_order.stripe_payment_intent_id
    refund = fake_stripe.refund_outside(pi, VIP_PRICE)
    event = fake_stripe.charge_refunded(pi)
    # Stripe moved first; the ledger follows once the event is in.
    assert stripe_net(fake_stripe, pi) == TOTAL - VIP_PRICE
    assert fresh(paid_order).refunded_amount == 0

    webhook(event)
    webhook(event)  # a redelivery

    order = fresh(paid_order)
    assert ledger_of(order)[1:] == [("refund", VIP_PRICE, refund["id"])]
    assert (order.status, order.refunded_amount) == (Order.Status.PARTIALLY_REFUNDED, VIP_PRICE)
    assert statuses(order) == ["valid", "valid", "void"]
    assert seats(vip) == (0, 0) and seats(standard) == (2, 0)
    assert assert_money_matches(order, fake_stripe) == TOTAL - VIP_PRICE

    rest = fake_stripe.refund_outside(pi)
    webhook(fake_stripe.charge_refunded(pi))

    order = fresh(order)
    assert sorted(e[2] for e in ledger_of(order)[1:]) == sorted([refund["id"], rest["id"]])
    assert (order.status, order.refunded_amount) == (Order.Status.REFUNDED, TOTAL)
    assert statuses(order) == ["void", "void", "void"]
    assert seats(standard) == (0, 0)
    assert assert_money_matches(order, fake_stripe) == 0


def test_charge_refunded_for_a_payment_that_is_not_ours_is_ignored(fake_stripe, paid_order, webhook, ticketed_event):
    # A charge in the same Stripe account made by something else: no order has its payment intent or ids.
    stranger = fake_stripe.refund_outside(paid_order.stripe_payment_intent_id, 100)
    event = fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id)
    charge = event["data"]["object"]
    charge["payment_intent"] = "pi_not_ours"
    charge["metadata"] = {}

    assert webhook(event).status_code == 200

    assert fresh(paid_order).refunded_amount == 0
    assert not LedgerEntry.objects.filter(stripe_object_id=stranger["id"]).exists()
    assert Ticket.objects.filter(status="void").count() == 0

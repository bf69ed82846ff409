"""Destination charges through the real stripe SDK against the local Stripe server: the Checkout Session's
Connect parameters, the transfer and application fee Stripe makes on capture, the ledger's gross/fee/net,
refunds that reverse the transfer and refund the fee in proportion (compared with the server's own fee refunds),
and replayed webhooks that book nothing twice."""

import pytest
import stripe
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from billing import payments, services
from billing.models import ConnectedAccount, LedgerEntry, Order
from tests.billing.conftest import STANDARD_PRICE, VIP_PRICE, buy, fresh

pytestmark = pytest.mark.django_db

SESSIONS = "/v1/checkout/sessions"
REFUNDS = "/v1/refunds"
TOTAL = 2 * STANDARD_PRICE + VIP_PRICE  # 110.00
ACCOUNT = "acct_1OrganizerTest"


@pytest.fixture
def fee_settings(settings):
    settings.PLATFORM_FEE_BASIS_POINTS, settings.PLATFORM_FEE_FIXED = 250, 30
    return settings


@pytest.fixture
def account(tenant):
    # The factories give every ticketed organization a simulated account; this one is a real-looking destination.
    account, _created = ConnectedAccount.objects.update_or_create(
        tenant=tenant,
        defaults={"stripe_account_id": ACCOUNT, "is_test": False, "details_submitted": True, "charges_enabled": True},
    )
    return account


@pytest.fixture
def paid_order(fake_stripe, fee_settings, account, ticketed_event, standard, vip, webhook):
    order = buy(ticketed_event, (standard, 2), (vip, 1))
    webhook(fake_stripe.complete(order.stripe_session_id))
    order = fresh(order)
    assert order.status == Order.Status.PAID
    return order


def entries(order) -> list[tuple[str, int, int, int]]:
    return [
        (e.kind, e.amount, e.fee, e.net)
        for e in LedgerEntry.objects.filter(order_id=order.pk).order_by("created_at", "kind")
    ]


def server_fee_refunds(order) -> list[int]:
    """The application fee's refunds as the server holds them, read through the SDK, oldest first."""
    client = payments.stripe_client()
    charge = client.v1.charges.retrieve(
        client.v1.payment_intents.retrieve(order.stripe_payment_intent_id).latest_charge
    )
    refunds = client.v1.application_fees.refunds.list(charge.application_fee, params={"limit": 100})
    return [r.amount for r in reversed(refunds.data)]


def test_checkout_session_is_a_destination_charge_with_the_fee(
    fake_stripe, fee_settings, account, ticketed_event, standard, vip
):
    order = buy(ticketed_event, (standard, 2), (vip, 1))

    fee = (TOTAL * 250 + 5000) // 10000 + 30  # 2.5 % of 110.00 = 2.75, plus 0.30
    assert (order.stripe_account_id, order.application_fee) == (ACCOUNT, fee) == (ACCOUNT, 305)
    (call,) = fake_stripe.calls("POST", SESSIONS)
    assert call.params["payment_intent_data"]["application_fee_amount"] == "305"
    assert call.params["payment_intent_data"]["transfer_data"] == {"destination": ACCOUNT}
    assert "on_behalf_of" not in call.params["payment_intent_data"]


def test_checkout_reads_the_account_once_and_charges_the_account_it_checked(
    fake_stripe, fee_settings, account, ticketed_event, standard
):
    with CaptureQueriesContext(connection) as queries:
        order = buy(ticketed_event, (standard, 1))

    assert order.stripe_account_id == ACCOUNT
    assert sum("billing_connectedaccount" in query["sql"] for query in queries) == 1


def test_without_an_account_that_takes_charges_the_charge_is_the_platforms_and_carries_no_fee(
    fake_stripe, fee_settings, tenant, ticketed_event, standard
):
    ConnectedAccount.objects.update_or_create(
        tenant=tenant, defaults={"stripe_account_id": ACCOUNT, "charges_enabled": False}
    )
    with pytest.raises(ValidationError):  # paid types are not on sale without such an account (connect's gate)
        buy(ticketed_event, (standard, 1))
    assert fake_stripe.calls("POST", SESSIONS) == []


def test_organization_override_sets_the_fee_at_checkout(
    fake_stripe, fee_settings, account, tenant, ticketed_event, standard
):
    tenant.platform_fee_basis_points, tenant.platform_fee_fixed = 100, 0
    tenant.save()
    ticketed_event.refresh_from_db()
    order = buy(ticketed_event, (standard, 2))
    assert order.application_fee == 50  # 1 % of 50.00, no fixed part


def test_capture_makes_the_transfer_and_the_application_fee_and_the_ledger_books_gross_fee_net(fake_stripe, paid_order):
    charge = next(iter(fake_stripe.charges.values()))
    fee = fake_stripe.application_fees[charge["application_fee"]]
    transfer = fake_stripe.transfers[charge["transfer"]]
    assert (charge["application_fee_amount"], charge["transfer_data"]) == (
        305,
        {"destination": ACCOUNT, "amount": None},
    )
    assert (fee["object"], fee["amount"], fee["account"], fee["charge"]) == (
        "application_fee",
        305,
        ACCOUNT,
        charge["id"],
    )
    assert (transfer["object"], transfer["amount"], transfer["destination"]) == ("transfer", TOTAL - 305, ACCOUNT)

    assert entries(paid_order) == [("payment", TOTAL, 305, TOTAL - 305)]


def test_partial_then_full_refunds_reverse_the_transfer_and_give_back_the_fee_exactly(fake_stripe, paid_order, owner):
    order = services.order_refund(order=paid_order, acting_user=owner, amount=3000)
    call = fake_stripe.calls("POST", REFUNDS)[-1]
    assert (call.params["reverse_transfer"], call.params["refund_application_fee"]) == ("true", "true")
    order = services.order_refund(order=order, acting_user=owner, amount=3333)
    order = services.order_refund(order=order, acting_user=owner)  # the rest: 46.67

    # Cumulative, half up: 305 x 3000/11000 = 83.18 -> 83; x 6333/11000 = 175.6 -> 176; all: 305.
    assert entries(order) == [
        ("payment", TOTAL, 305, TOTAL - 305),
        ("refund", 3000, 83, 2917),
        ("refund", 3333, 93, 3240),
        ("refund", TOTAL - 6333, 129, TOTAL - 6333 - 129),
    ]
    assert server_fee_refunds(order) == [83, 93, 129]
    client = payments.stripe_client()
    fee = client.v1.application_fees.retrieve(next(iter(fake_stripe.application_fees)))
    assert (fee.amount_refunded, fee.refunded) == (305, True)
    transfer_id = next(iter(fake_stripe.transfers))
    reversals = client.v1.transfers.reversals.list(transfer_id, params={"limit": 100})
    assert sorted(r.amount for r in reversals.data) == [2917, 3240, TOTAL - 6333 - 129]
    transfer = client.v1.transfers.retrieve(transfer_id)
    assert (transfer.amount_reversed, transfer.reversed) == (TOTAL - 305, True)
    assert order.status == Order.Status.REFUNDED


def test_dashboard_refunds_are_booked_with_the_same_fee_parts_as_the_server(fake_stripe, paid_order, webhook):
    fake_stripe.refund_outside(paid_order.stripe_payment_intent_id, 1)
    fake_stripe.refund_outside(paid_order.stripe_payment_intent_id, 5000)
    event = fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id)
    webhook(event)
    webhook(event)  # the same delivery again
    fake_stripe.refund_outside(paid_order.stripe_payment_intent_id)
    webhook(fake_stripe.charge_refunded(paid_order.stripe_payment_intent_id))

    refunds = [(kind, amount, fee) for kind, amount, fee, _net in entries(paid_order) if kind == "refund"]
    assert sorted(fee for _k, _a, fee in refunds) == sorted(server_fee_refunds(paid_order))
    assert sum(fee for _k, _a, fee in refunds) == 305
    assert len(refunds) == 3


def test_replayed_payment_webhook_books_the_fee_once(
    fake_stripe, fee_settings, account, ticketed_event, standard, webhook
):
    order = buy(ticketed_event, (standard, 1))
    event = fake_stripe.complete(order.stripe_session_id)
    webhook(event)
    webhook(event)
    # Even processed again as a new delivery (another event id), the payment is one entry.
    services.order_payment_record(
        order=fresh(order),
        payment_intent_id=fresh(order).stripe_payment_intent_id,
        amount=STANDARD_PRICE,
        currency="eur",
    )
    assert entries(order) == [("payment", STANDARD_PRICE, 93, STANDARD_PRICE - 93)]


def test_local_server_refuses_a_fee_without_a_destination(fake_stripe):
    with pytest.raises(stripe.InvalidRequestError, match="application_fee_amount"):
        payments.stripe_client().v1.checkout.sessions.create(
            params={
                "mode": "payment",
                "line_items": [
                    {
                        "price_data": {"currency": "eur", "unit_amount": 100, "product_data": {"name": "x"}},
                        "quantity": 1,
                    }
                ],
                "success_url": "https://example.com/ok",
                "payment_intent_data": {"application_fee_amount": 10},
            }
        )

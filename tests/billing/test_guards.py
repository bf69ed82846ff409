"""Guards that must hold under `python -O` too: explicit exceptions, never `assert` (issue 14)."""

import pytest
from django.test import override_settings

from billing import payments, services
from billing.models import Order
from tests.billing.conftest import buy

pytestmark = pytest.mark.django_db


def test_a_simulated_payment_is_refused_outside_test_mode(ticketed_event, standard):
    order = buy(ticketed_event, (standard, 1))
    with override_settings(TEST_PAYMENTS=False, STRIPE_SECRET_KEY=""), pytest.raises(RuntimeError):
        payments.simulated_payment_event(order=order)
    # Control: in test mode the same call signs an event.
    payload, signature = payments.simulated_payment_event(order=order)
    assert payload and signature.startswith("t=")


def test_an_order_closes_only_as_expired_or_cancelled_and_a_refused_arrow_changes_nothing(ticketed_event, standard):
    order = buy(ticketed_event, (standard, 1))
    with pytest.raises(ValueError):
        services.order_close(order=order, to=Order.Status.PAID, reason="test")
    order.refresh_from_db()
    standard.refresh_from_db()
    assert (order.status, standard.reserved) == (Order.Status.PENDING, 1)
    # Control: the allowed arrow applies.
    assert services.order_close(order=order, to=Order.Status.CANCELLED, reason="test")

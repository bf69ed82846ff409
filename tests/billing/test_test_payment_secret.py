"""Test payments are signed with a secret of this installation, never one anyone can derive.

Before, the secret was an HMAC of SECRET_KEY, whose development default is in the
repository: anyone could sign a "paid" event for a server left on it.
"""

import hashlib
import hmac
import json
import os
import stat
import time
import uuid

import pytest
from django.conf import settings
from django.test import override_settings

from billing import payments, services
from billing.models import Order, WebhookEvent
from billing.services import CheckoutItem, CheckoutRequest
from tests.billing.test_payment_settings import refused
from tests.factories import TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db

REPOSITORY_DEFAULT_SECRET_KEY = "insecure-development-key-do-not-use-in-production"


@pytest.fixture
def pending_order(tenant):
    concert = TicketedEventFactory(tenant=tenant)
    ticket_type = TicketTypeFactory(event=concert, price=2500)
    return services.checkout_start(
        event=concert,
        request=CheckoutRequest(
            items=[CheckoutItem(ticket_type_id=str(ticket_type.pk), quantity=1)],
            buyer_name="Mallory",
            buyer_email="mallory@example.com",
        ),
    )


def forged_paid_event(order) -> bytes:
    """What an attacker builds: the shape payments.simulated_payment_event makes, from public ids."""
    session = {
        "id": order.stripe_session_id,
        "object": "checkout.session",
        "amount_total": order.total,
        "currency": order.currency,
        "client_reference_id": str(order.pk),
        "metadata": {"order_id": str(order.pk), "tenant_id": str(order.tenant_id), "event_id": str(order.event_id)},
        "payment_intent": f"pi_localtest_{order.pk.hex}",
        "payment_status": "paid",
        "status": "complete",
    }
    body = {
        "id": f"evt_localtest_{uuid.uuid4().hex}",
        "object": "event",
        "type": "checkout.session.completed",
        "created": int(time.time()),
        "livemode": False,
        "data": {"object": session},
    }
    return json.dumps(body).encode()


def post_signed(client, payload: bytes, secret: str):
    return client.post(
        "/billing/stripe/webhook/",
        data=payload,
        content_type="application/json",
        HTTP_STRIPE_SIGNATURE=payments.signature_header(payload, secret),
    )


@override_settings(SECRET_KEY=REPOSITORY_DEFAULT_SECRET_KEY)
def test_a_paid_event_signed_with_a_key_derived_from_the_default_secret_key_is_refused(client, pending_order):
    payload = forged_paid_event(pending_order)
    derived = hmac.new(REPOSITORY_DEFAULT_SECRET_KEY.encode(), b"eventsaas test payments", hashlib.sha256).hexdigest()

    for secret in (f"whsec_localtest_{derived}", derived, REPOSITORY_DEFAULT_SECRET_KEY):
        response = post_signed(client, payload, secret)
        assert response.status_code == 400

    pending_order.refresh_from_db()
    assert pending_order.status == Order.Status.PENDING
    assert not WebhookEvent.objects.exists()


def test_the_real_test_payment_still_pays(pending_order, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        services.webhook_event_process(webhook_event=services.order_simulate_payment(order=pending_order))
    pending_order.refresh_from_db()
    assert pending_order.status == Order.Status.PAID


def test_the_secret_is_random_per_installation_stored_privately_and_stable(tmp_path):
    first, second = tmp_path / "a" / "webhook-secret", tmp_path / "b" / "webhook-secret"
    with override_settings(TEST_PAYMENTS_SECRET_FILE=str(first)):
        secret_a = payments.webhook_secret()
        assert payments.webhook_secret() == secret_a  # the same on every call and after a restart
    with override_settings(TEST_PAYMENTS_SECRET_FILE=str(second)):
        secret_b = payments.webhook_secret()

    assert secret_a != secret_b
    assert len(secret_a) > 40
    assert stat.S_IMODE(os.stat(first).st_mode) == 0o600
    assert settings.SECRET_KEY not in secret_a
    with override_settings(TEST_PAYMENTS_SECRET_FILE=str(first), SECRET_KEY="something-else-entirely" * 3):
        assert payments.webhook_secret() == secret_a  # not derived from SECRET_KEY


def test_a_secret_from_the_environment_is_used_when_set(tmp_path, client, pending_order):
    configured = "x" * 48
    with override_settings(TEST_PAYMENTS_WEBHOOK_SECRET=configured, TEST_PAYMENTS_SECRET_FILE=str(tmp_path / "s")):
        assert payments.webhook_secret() == f"whsec_localtest_{configured}"
        assert not (tmp_path / "s").exists()
        response = post_signed(client, forged_paid_event(pending_order), f"whsec_localtest_{configured}")
    # Signed with the configured secret: accepted (stored and processed by the webhook code).
    assert response.status_code == 200


def test_a_short_secret_from_the_environment_is_refused_at_start():
    refused({"TEST_PAYMENTS_WEBHOOK_SECRET": "short"}, "TEST_PAYMENTS_WEBHOOK_SECRET must be at least 32")

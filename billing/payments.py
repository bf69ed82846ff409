"""The one module that talks to Stripe (through the official SDK), and the local test-payment mode.

Modes (settings.payment_mode):
- "stripe": STRIPE_SECRET_KEY is set. Checkout Sessions, refunds and webhook
  signatures go through the stripe SDK; STRIPE_API_BASE points it elsewhere
  (the tests' local Stripe server).
- "test": no Stripe keys and not production (the embedded default). Checkout
  sends the buyer to a clearly labelled local page; paying there builds a
  Stripe-shaped event, signs it with a local secret and hands it to the same
  webhook code a real Stripe event goes through.
- "off": production without keys: ticket sales are closed.
"""

import datetime
import hashlib
import hmac
import json
import logging
import time
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import stripe
from django.conf import settings

from eventsaas.local_secrets import local_secret
from eventsaas.tasks import TransientError

logger = logging.getLogger(__name__)

TEST_ID_PREFIX = "localtest_"


class PaymentProviderError(Exception):
    """Stripe refused or could not be reached; nothing was charged."""


def payment_mode() -> str:
    if settings.STRIPE_SECRET_KEY:
        return "stripe"
    if settings.TEST_PAYMENTS:
        return "test"
    return "off"


@cache
def _client(api_key: str, api_base: str, retries: int) -> stripe.StripeClient:
    return stripe.StripeClient(api_key, base_addresses={"api": api_base}, max_network_retries=retries)


def stripe_client() -> stripe.StripeClient:
    # Keyed by the settings so tests that point STRIPE_API_BASE elsewhere get their own client.
    return _client(settings.STRIPE_SECRET_KEY, settings.STRIPE_API_BASE, settings.STRIPE_MAX_NETWORK_RETRIES)


def _call(operation, *args, **kwargs):
    """Run an SDK call, sorting failures: worth retrying (TransientError) or not (PaymentProviderError)."""
    try:
        return operation(*args, **kwargs)
    except (stripe.APIConnectionError, stripe.RateLimitError) as exc:
        raise TransientError(str(exc)) from exc
    except stripe.APIError as exc:
        # 5xx from Stripe: the SDK already retried; the caller may try again later.
        raise TransientError(str(exc)) from exc
    except stripe.StripeError as exc:
        raise PaymentProviderError(exc.user_message or str(exc)) from exc


# Stripe keeps a Checkout Session open for 30 minutes at least (and 24 hours at most).
CHECKOUT_SESSION_MIN_LIFETIME = datetime.timedelta(minutes=30)
# Stripe counts from when it receives the request: a minute's margin covers the way there and clocks apart.
CHECKOUT_SESSION_MARGIN = datetime.timedelta(seconds=60)


def checkout_session_expires_at(order) -> datetime.datetime:
    """When the order's Checkout Session closes: the order's own expiry, or Stripe's minimum, plus the margin.

    The margin also lets Stripe's `checkout.session.expired` event arrive before the expiry sweep, which waits
    ORDER_EXPIRY_GRACE_SECONDS past the order's expiry. A hold shorter than Stripe's minimum is ended by the
    sweep, which expires the session itself (services.orders_expire_due).
    """
    return max(order.expires_at, order.created_at + CHECKOUT_SESSION_MIN_LIFETIME) + CHECKOUT_SESSION_MARGIN


def checkout_session_create(*, order, event, success_url: str, cancel_url: str) -> tuple[str, str]:
    """Create the Checkout Session of `order`; returns (session id, URL). Idempotent per order."""
    if payment_mode() == "test":
        session_id = f"cs_{TEST_ID_PREFIX}{order.pk.hex}"
        return session_id, ""
    params: dict[str, Any] = {
        "mode": "payment",
        "line_items": [
            {
                "price_data": {
                    "currency": order.currency,
                    "unit_amount": line["unit_price"],
                    "product_data": {"name": f"{event.name}: {line['name']}"},
                },
                "quantity": line["quantity"],
            }
            for line in order.lines
        ],
        "customer_email": order.buyer_email,
        "client_reference_id": str(order.pk),
        "metadata": {"order_id": str(order.pk), "tenant_id": str(order.tenant_id), "event_id": str(order.event_id)},
        "payment_intent_data": {
            "metadata": {"order_id": str(order.pk), "tenant_id": str(order.tenant_id), "event_id": str(order.event_id)}
        },
        "success_url": success_url,
        "cancel_url": cancel_url,
        "expires_at": int(checkout_session_expires_at(order).timestamp()),
        "locale": order.language if order.language in {"en", "es"} else "auto",
    }
    if order.stripe_account_id:
        # A destination charge (docs/payments.md): the platform charges, Stripe moves the total less the
        # application fee to the organization's connected account when the payment succeeds.
        params["payment_intent_data"]["application_fee_amount"] = order.application_fee
        params["payment_intent_data"]["transfer_data"] = {"destination": order.stripe_account_id}
    session = _call(
        stripe_client().v1.checkout.sessions.create,
        params=params,
        options={"idempotency_key": f"order-{order.pk}-checkout"},
    )
    return session.id, session.url


def checkout_session_expire(*, session_id: str) -> None:
    """Close a Checkout Session so it can no longer be paid. Best effort: it may be paid or expired already."""
    if payment_mode() != "stripe" or not session_id or TEST_ID_PREFIX in session_id:
        return
    try:
        _call(stripe_client().v1.checkout.sessions.expire, session_id)
    except (PaymentProviderError, TransientError) as exc:
        # The order is closed already; if this session is still paid, the late-payment path handles it.
        logger.info("Could not expire Checkout Session %s: %s", session_id, exc)


def refund_create(*, order, amount: int, idempotency_key: str) -> dict:
    """Refund `amount` of the order's payment; returns {"id", "amount", "currency"}."""
    if order.is_test:
        # Derived from the idempotency key, like Stripe: the same request twice is one refund.
        refund_id = hashlib.sha256(idempotency_key.encode()).hexdigest()[:24]
        return {"id": f"re_{TEST_ID_PREFIX}{refund_id}", "amount": amount, "currency": order.currency}
    params: dict[str, Any] = {
        "payment_intent": order.stripe_payment_intent_id,
        "amount": amount,
        "metadata": {"order_id": str(order.pk), "tenant_id": str(order.tenant_id)},
    }
    if order.stripe_account_id:
        # A destination charge: take the refund back from the organization's account (the transfer is
        # reversed in proportion) and give back the platform's fee in proportion (billing/services/fees.py).
        params["reverse_transfer"] = True
        params["refund_application_fee"] = True
    refund = _call(
        stripe_client().v1.refunds.create,
        params=params,
        options={"idempotency_key": idempotency_key},
    )
    return {"id": refund.id, "amount": refund.amount, "currency": refund.currency}


def refunds_list(*, payment_intent_id: str) -> list[dict]:
    """Every succeeded or pending refund of a payment, as Stripe records them."""
    if payment_mode() != "stripe" or TEST_ID_PREFIX in payment_intent_id:
        return []
    refunds = _call(stripe_client().v1.refunds.list, params={"payment_intent": payment_intent_id, "limit": 100})
    return [
        {"id": r.id, "amount": r.amount, "currency": r.currency}
        for r in refunds.auto_paging_iter()
        if r.status in {"succeeded", "pending"}
    ]


# --- Webhook signatures -----------------------------------------------------------


def webhook_secret() -> str:
    """The secret incoming events are verified with: Stripe's, or in test mode a local one."""
    if payment_mode() == "stripe":
        return settings.STRIPE_WEBHOOK_SECRET
    if payment_mode() == "test":
        return _test_webhook_secret()
    return ""


def _test_webhook_secret() -> str:
    """Test mode's secret: TEST_PAYMENTS_WEBHOOK_SECRET, or one made for this installation on first use.

    Never derived from SECRET_KEY: a server left on the repository's default key
    would otherwise accept "paid" events anyone can sign.
    """
    secret = settings.TEST_PAYMENTS_WEBHOOK_SECRET or local_secret(Path(settings.TEST_PAYMENTS_SECRET_FILE))
    return f"whsec_{TEST_ID_PREFIX}{secret}"


def event_verify(*, payload: bytes, signature: str) -> dict:
    """The event, if `signature` is Stripe's signature of `payload` with our secret and recent enough.

    Raises stripe.SignatureVerificationError (bad, missing or old signature) or
    ValueError (not JSON). The signature scheme and its check are the SDK's.
    """
    secret = webhook_secret()
    if not secret:
        raise stripe.SignatureVerificationError("Payments are not configured.", signature)
    return _verified_event(payload, signature, secret)


def _verified_event(payload: bytes, signature: str, secret: str) -> dict:
    """The SDK's signature check (as `stripe.Webhook.construct_event` makes it), then the JSON as a dict:
    we store and read the event as a dict, so the SDK's object built from it would only be turned back."""
    stripe.WebhookSignature.verify_header(payload, signature, secret, settings.STRIPE_WEBHOOK_TOLERANCE)
    event = json.loads(payload)
    if not isinstance(event, dict):
        raise ValueError("A Stripe event is a JSON object.")
    return event


def signature_header(payload: bytes, secret: str, timestamp: int | None = None) -> str:
    """A `Stripe-Signature` header value, computed the way Stripe documents it (for test payments)."""
    timestamp = int(time.time()) if timestamp is None else timestamp
    signed = f"{timestamp}.".encode() + payload
    mac = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={mac}"


def simulated_payment_event(*, order, event_type: str = "checkout.session.completed") -> tuple[bytes, str]:
    """A signed Stripe-shaped event for a test-mode order: (payload, Stripe-Signature)."""
    if payment_mode() != "test":
        # A signed payment nobody paid must never exist outside test mode, even under `python -O`.
        raise RuntimeError("Test payments are only built when test mode is on.")
    session = {
        "id": order.stripe_session_id,
        "object": "checkout.session",
        "amount_total": order.total,
        "currency": order.currency,
        "client_reference_id": str(order.pk),
        "metadata": {"order_id": str(order.pk), "tenant_id": str(order.tenant_id), "event_id": str(order.event_id)},
        "payment_intent": f"pi_{TEST_ID_PREFIX}{order.pk.hex}",
        "payment_status": "paid" if event_type == "checkout.session.completed" else "unpaid",
        "status": "complete" if event_type == "checkout.session.completed" else "expired",
    }
    body = {
        "id": f"evt_{TEST_ID_PREFIX}{uuid.uuid4().hex}",
        "object": "event",
        "type": event_type,
        "created": int(time.time()),
        "livemode": False,
        "data": {"object": session},
    }
    payload = json.dumps(body).encode()
    return payload, signature_header(payload, _test_webhook_secret())


# --- Stripe Connect (Express): organizations' own accounts -----------------------------------------------------------


def connect_webhook_secret() -> str:
    """The secret Connect events are verified with: the Connect endpoint's own, never the platform endpoint's."""
    if payment_mode() == "stripe":
        return settings.STRIPE_CONNECT_WEBHOOK_SECRET
    if payment_mode() == "test":
        return _test_connect_webhook_secret()
    return ""


def _test_connect_webhook_secret() -> str:
    """Test mode's Connect secret: made for this installation on first use, next to the payments secret.

    Its own file, so a simulated payment event is no valid account event and the other way round;
    never derived from SECRET_KEY (see _test_webhook_secret).
    """
    secret = local_secret(Path(settings.TEST_PAYMENTS_SECRET_FILE).with_name("connect-webhook-secret"))
    return f"whsec_{TEST_ID_PREFIX}connect_{secret}"


def connect_event_verify(*, payload: bytes, signature: str) -> dict:
    """As event_verify, for the Connect endpoint: signed with the Connect secret, recent enough."""
    secret = connect_webhook_secret()
    if not secret:
        raise stripe.SignatureVerificationError("Connect webhooks are not configured.", signature)
    return _verified_event(payload, signature, secret)


def connected_account_create(*, tenant_id, replacing: str = "") -> dict:
    """Create the organization's Express account; returns {"id", "is_test"}. Idempotent per organization.

    The parameters depend on the organization only (not on who clicked): Stripe refuses a reused idempotency
    key with other parameters, so two owners starting at once must send the same request. Stripe asks for
    the email during onboarding. `replacing`: the account this one replaces (the organization disconnected
    it), part of the key so a new account is made. In test mode the account is simulated, its id fixed per
    organization.
    """
    if payment_mode() == "test":
        suffix = hashlib.sha256(f"{tenant_id}:{replacing}".encode()).hexdigest()[:16]
        return {"id": f"acct_{TEST_ID_PREFIX}{suffix}", "is_test": True}
    params: dict = {
        "type": "express",
        "capabilities": {"card_payments": {"requested": True}, "transfers": {"requested": True}},
        "metadata": {"tenant_id": str(tenant_id)},
    }
    account = _call(
        stripe_client().v1.accounts.create,
        params=params,
        options={"idempotency_key": f"tenant-{tenant_id}-connect-account{'-after-' + replacing if replacing else ''}"},
    )
    return {"id": account.id, "is_test": False}


def account_link_create(*, account_id: str, refresh_url: str, return_url: str) -> str:
    """A one-time onboarding URL at Stripe for the account (it expires within minutes: make one per click)."""
    link = _call(
        stripe_client().v1.account_links.create,
        params={
            "account": account_id,
            "type": "account_onboarding",
            "refresh_url": refresh_url,
            "return_url": return_url,
        },
    )
    return link.url


def simulated_account_event(
    *, account, event_type: str = "account.updated", charges_enabled: bool = True
) -> tuple[bytes, str]:
    """A signed Connect event for a simulated account (test mode): (payload, Stripe-Signature).

    account.updated with the onboarding finished (or not, `charges_enabled=False`), or
    account.application.deauthorized.
    """
    if payment_mode() != "test" or not account.is_test:
        raise RuntimeError("Simulated accounts are only updated when test mode is on.")
    if event_type == "account.application.deauthorized":
        obj: dict = {"id": f"ca_{TEST_ID_PREFIX}platform", "object": "application", "name": "eventsaas"}
    else:
        obj = {
            "id": account.stripe_account_id,
            "object": "account",
            "type": "express",
            "country": account.country or "ES",
            "default_currency": account.default_currency or "eur",
            "details_submitted": charges_enabled,
            "charges_enabled": charges_enabled,
            "payouts_enabled": charges_enabled,
            "requirements": {
                "currently_due": [] if charges_enabled else ["external_account", "individual.verification.document"],
                "disabled_reason": None if charges_enabled else "requirements.past_due",
            },
            "metadata": {"tenant_id": str(account.tenant_id)},
        }
    body = {
        "id": f"evt_{TEST_ID_PREFIX}{uuid.uuid4().hex}",
        "object": "event",
        "type": event_type,
        "account": account.stripe_account_id,
        "created": int(time.time()),
        "livemode": False,
        "data": {"object": obj},
    }
    payload = json.dumps(body).encode()
    return payload, signature_header(payload, _test_connect_webhook_secret())

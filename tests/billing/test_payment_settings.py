"""Payment settings refuse unsafe combinations at start-up: test payments in production or next to Stripe keys,
Stripe keys without the webhook secrets (the platform's; in production the Connect endpoint's too), and order
holds outside 1 minute to 23 hours."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = {
    "DJANGO_ENV": "production",
    "SECRET_KEY": "k" * 20 + "Zx9-" * 10,
    "ALLOWED_HOSTS": "events.example.com",
    "DEFAULT_FROM_EMAIL": "Events <invitations@events.example.com>",
    "SITE_URL": "https://events.example.com",
}
STRIPE = {
    "STRIPE_SECRET_KEY": "sk_live_example",
    "STRIPE_WEBHOOK_SECRET": "whsec_example",
    "STRIPE_CONNECT_WEBHOOK_SECRET": "whsec_connect_example",
}
SCRIPT = "import eventsaas.settings as s; print(s.TEST_PAYMENTS, bool(s.STRIPE_SECRET_KEY), s.ORDER_HOLD_MINUTES)"


def load_settings(env: dict) -> subprocess.CompletedProcess:
    """Import the settings in a fresh interpreter with exactly this environment."""
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    return subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, env={**clean, **env}, capture_output=True, text=True
    )


def refused(env: dict, complaint: str) -> None:
    result = load_settings(env)
    assert result.returncode != 0, result.stdout
    assert "ImproperlyConfigured" in result.stderr and complaint in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("base", "env", "complaint"),
    [
        (PRODUCTION, {"TEST_PAYMENTS": "1"}, "TEST_PAYMENTS must be off in production"),
        (PRODUCTION, {"STRIPE_SECRET_KEY": "sk_live_example"}, "STRIPE_WEBHOOK_SECRET must be set"),
        ({}, {"STRIPE_SECRET_KEY": "sk_test_example"}, "STRIPE_WEBHOOK_SECRET must be set"),
        ({}, {**STRIPE, "TEST_PAYMENTS": "1"}, "TEST_PAYMENTS cannot be on while Stripe keys are configured"),
        # Organizations' accounts are mirrored from Connect webhooks: production verifies them with their own secret.
        (
            PRODUCTION,
            {"STRIPE_SECRET_KEY": "sk_live_example", "STRIPE_WEBHOOK_SECRET": "whsec_example"},
            "STRIPE_CONNECT_WEBHOOK_SECRET must be set",
        ),
        (
            PRODUCTION,
            {**STRIPE, "STRIPE_CONNECT_WEBHOOK_SECRET": "whsec_example"},
            "STRIPE_CONNECT_WEBHOOK_SECRET must differ from STRIPE_WEBHOOK_SECRET",
        ),
        (PRODUCTION, {**STRIPE, "ORDER_HOLD_MINUTES": "0"}, "ORDER_HOLD_MINUTES must be between 1 and 1380"),
        ({}, {"ORDER_HOLD_MINUTES": "-5"}, "ORDER_HOLD_MINUTES must be between 1 and 1380"),
    ],
)
def test_unsafe_payment_settings_refuse_to_start(base, env, complaint):
    # The same base starts without the offending variable, so the refusal is about it alone.
    assert load_settings(base).returncode == 0
    refused({**base, **env}, complaint)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, "True False 30"),  # the embedded default: test payments, clearly labelled
        (PRODUCTION, "False False 30"),  # production without keys: sales closed, never test payments
        ({**PRODUCTION, **STRIPE}, "False True 30"),
        (STRIPE, "False True 30"),  # keys switch test payments off by default in development too
        ({**PRODUCTION, **STRIPE, "ORDER_HOLD_MINUTES": "45"}, "False True 45"),
        # Shorter than a Checkout Session lives: the expiry sweep closes the session (test_checkout_stripe.py).
        ({**PRODUCTION, **STRIPE, "ORDER_HOLD_MINUTES": "10"}, "False True 10"),
        ({"ORDER_HOLD_MINUTES": "1"}, "True False 1"),
    ],
)
def test_safe_payment_settings_start(env, expected):
    result = load_settings(env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == expected


def test_an_order_hold_longer_than_a_checkout_session_can_live_is_refused():
    refused({**PRODUCTION, **STRIPE, "ORDER_HOLD_MINUTES": "1440"}, "ORDER_HOLD_MINUTES")

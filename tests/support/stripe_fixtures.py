"""pytest fixture for the fake Stripe API (tests/support/stripe_server.py).

Make it visible in a test module with ``fake_stripe = stripe_fixtures.fake_stripe`` (an import of the name would
trip ruff's F811 on every test taking it as an argument) or register this module as a plugin for the whole suite
(``pytest_plugins = ["tests.support.stripe_fixtures"]`` in tests/conftest.py).
"""

import pytest

from tests.support.stripe_server import FakeStripe

STRIPE_SECRET_KEY = "sk_test_fake"
STRIPE_WEBHOOK_SECRET = "whsec_test_fake"
STRIPE_CONNECT_WEBHOOK_SECRET = "whsec_test_fake_connect"


@pytest.fixture
def fake_stripe(settings):
    """A running FakeStripe; settings.STRIPE_SECRET_KEY, both webhook secrets and STRIPE_API_BASE point at it."""
    with FakeStripe(api_key=STRIPE_SECRET_KEY) as fake:
        settings.STRIPE_SECRET_KEY = STRIPE_SECRET_KEY
        settings.STRIPE_WEBHOOK_SECRET = STRIPE_WEBHOOK_SECRET
        settings.STRIPE_CONNECT_WEBHOOK_SECRET = STRIPE_CONNECT_WEBHOOK_SECRET
        settings.STRIPE_API_BASE = fake.base_url
        yield fake

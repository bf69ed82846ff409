"""The test-payment banner belongs on pages where something is paid: not on a free event's registration page."""

import pytest

from tests.factories import TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def test_payments(settings):
    settings.TEST_PAYMENTS = True
    settings.STRIPE_SECRET_KEY = ""
    settings.STRIPE_WEBHOOK_SECRET = ""


def test_free_only_shop_in_test_mode_has_no_payment_banner(client, tenant, test_payments):
    meetup = TicketedEventFactory(tenant=tenant, name="Free Meetup")
    TicketTypeFactory(event=meetup, name="Entry", price=0, capacity=50)

    response = client.get(f"/e/{meetup.pk}/")

    assert response.status_code == 200
    assert 'data-testid="test-mode"' not in response.content.decode()
    assert "Register" in response.content.decode()


def test_paid_shop_in_test_mode_keeps_the_payment_banner(client, tenant, test_payments):
    concert = TicketedEventFactory(tenant=tenant, name="Concert")
    TicketTypeFactory(event=concert, name="General", price=2500, capacity=50)

    response = client.get(f"/e/{concert.pk}/")

    assert response.status_code == 200
    assert 'data-testid="test-mode"' in response.content.decode()

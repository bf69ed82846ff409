"""The organizer's order page tells the order's history in words, in the page's language, not as audit codes."""

import re

import pytest
from django.urls import reverse

from billing import services
from tests.billing.conftest import buy
from tests.factories import TicketedEventFactory, TicketTypeFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def paid_order(tenant, django_capture_on_commit_callbacks):
    concert = TicketedEventFactory(tenant=tenant, name="Spring concert", timezone="Europe/Madrid")
    general = TicketTypeFactory(event=concert, name="General", price=2500, capacity=50)
    with django_capture_on_commit_callbacks(execute=True):
        order = buy(concert, (general, 1))
        services.order_simulate_payment(order=order)
    return order


def _history(client, order) -> list[str]:
    url = reverse(
        "billing_organizer:order",
        kwargs={"tenant_slug": order.tenant.slug, "event_id": order.event_id, "order_id": order.pk},
    )
    page = client.get(url).content.decode()
    items = re.search(r'<ul data-testid="audit">(.*?)</ul>', page, re.S).group(1)
    return [" ".join(re.sub(r"<[^>]+>", " ", li).split()) for li in re.findall(r"<li[^>]*>(.*?)</li>", items, re.S)]


def test_order_history_is_in_words(owner_client, paid_order):
    history = _history(owner_client, paid_order)

    assert [line.split(" CET ")[-1] for line in history] == ["Order placed", "Paid"]


def test_order_history_is_in_spanish_on_a_spanish_page(owner_client, paid_order, settings):
    owner_client.cookies[settings.LANGUAGE_COOKIE_NAME] = "es"

    history = _history(owner_client, paid_order)

    assert [line.split(" CET ")[-1] for line in history] == ["Pedido realizado", "Pagado"]

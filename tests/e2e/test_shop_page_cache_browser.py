"""A phone buys from the shop page another visitor's request rendered (billing/shop_page_cache.py).

The kept page must work in a browser as the rendered one does: its scripts run (the total and a name field
per ticket appear), its form carries this browser's CSRF token, and checkout takes the order.
"""

import re

import pytest
from django.core.cache import caches

from billing.models import Order
from tests.factories import TenantFactory, TicketedEventFactory, TicketTypeFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def concert(live_server, settings):
    settings.SITE_URL = live_server.url
    settings.SHOP_PAGE_CACHE_SECONDS = 60
    caches["pages"].clear()
    event = TicketedEventFactory(tenant=TenantFactory(name="Demo Events"), name="Demo Concert", language="en")
    TicketTypeFactory(event=event, name="General", price=2500, capacity=200, position=0)
    yield event
    caches["pages"].clear()


def test_a_phone_buys_two_tickets_from_the_page_another_visitor_had_rendered(live_server, concert, new_phone_page):
    from playwright.sync_api import expect

    url = f"{live_server.url}/e/{concert.pk}/"
    first = new_phone_page()
    first.goto(url)
    expect(first.locator('[data-ticket-type="General"]')).to_contain_text("200 left")
    assert caches["pages"].get(f"shop:{concert.pk}:event:test") is not None  # kept, in test-payment mode

    page = new_phone_page()  # another visitor: no cookies of the first
    page.goto(url)
    first_token = first.locator('form[data-shop-form] input[name="csrfmiddlewaretoken"]').input_value()
    own_token = page.locator('form[data-shop-form] input[name="csrfmiddlewaretoken"]').input_value()
    assert own_token and own_token != first_token
    page.get_by_label("Quantity: General").fill("2")
    page.get_by_label("Your name").fill("Ana García")
    page.get_by_label("Email").fill("ana@example.com")
    expect(page.get_by_test_id("shop-total")).to_have_text("Total: €50.00")  # the page's script ran
    page.get_by_role("button", name="Continue to test payment").click()

    expect(page).to_have_url(re.compile(r"/orders/[0-9a-f-]{36}/[^/]+/test-checkout/$"))
    page.get_by_role("button", name="Pay €50.00 (test)").click()
    expect(page.get_by_test_id("order-status")).to_have_text("Paid")
    assert Order.objects.get().buyer_email == "ana@example.com"

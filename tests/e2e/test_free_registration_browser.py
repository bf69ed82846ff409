"""A free registration on a phone with payments off (production without Stripe keys); the buyer then logs in
with the guest code the order page shows and sees the ticket on the guest page."""

import re

import pytest

from billing.models import Order
from guests.models import Guest
from tests.factories import TenantFactory, TicketedEventFactory, TicketTypeFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_free_registration_gives_tickets_at_once_and_a_guest_page_with_them(live_server, settings, new_phone_page):
    from playwright.sync_api import expect

    settings.SITE_URL = live_server.url
    settings.TEST_PAYMENTS, settings.STRIPE_SECRET_KEY = False, ""
    event = TicketedEventFactory(tenant=TenantFactory(), name="Demo Meetup")
    TicketTypeFactory(event=event, name="Free entry", price=0, capacity=50)

    page = new_phone_page()
    page.goto(f"{live_server.url}/e/{event.pk}/")
    expect(page.get_by_test_id("test-mode")).to_have_count(0)
    page.get_by_label("Quantity: Free entry").fill("2")
    page.get_by_label("Your name").fill("Ana García")
    page.get_by_label("Email").fill("ana@example.com")
    page.get_by_role("button", name="Register").click()

    expect(page).to_have_url(re.compile(r"/orders/[0-9a-f-]{36}/[^/]+/$"))
    expect(page.get_by_test_id("order-status")).to_have_text("Registered")
    expect(page.get_by_test_id("registered")).to_be_visible()
    expect(page.get_by_test_id("ticket")).to_have_count(2)
    guest = Guest.objects.get(event=event)
    expect(page.get_by_test_id("guest-code")).to_contain_text(guest.code)
    assert Order.objects.get(event=event).status == Order.Status.PAID

    page.get_by_role("link", name="Your guest page").click()
    page.get_by_label("Last name").fill("García")
    page.get_by_role("button", name="Continue").click()

    expect(page.get_by_test_id("guest-tickets")).to_be_visible()
    expect(page.get_by_test_id("guest-tickets").get_by_test_id("ticket")).to_have_count(2)
    expect(page.get_by_test_id("ticket-answer")).to_contain_text("2 people")

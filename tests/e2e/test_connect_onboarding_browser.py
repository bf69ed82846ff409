"""An owner on a phone connects the organization's (simulated) Stripe account in test-payment mode: paid tickets
are off sale until onboarding completes, then a buyer pays for one."""

import re

import pytest

from billing.models import ConnectedAccount, Order
from tenants.models import Role
from tests.factories import MembershipFactory, TenantFactory, TicketedEventFactory, TicketTypeFactory

PASSWORD = "correct horse battery"  # UserFactory's default

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def assert_fits_phone_width(page):
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"page is {widths[0]}px wide on a {widths[1]}px screen"


def test_owner_onboards_on_a_phone_and_paid_tickets_go_on_sale(live_server, settings, new_phone_page, screenshot):
    from playwright.sync_api import expect

    settings.SITE_URL = live_server.url
    tenant = TenantFactory(name="Demo Events")
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    event = TicketedEventFactory(tenant=tenant, name="Demo Concert", connected_account=False)
    TicketTypeFactory(event=event, name="General", price=2500, capacity=50, connected_account=False)
    TicketTypeFactory(event=event, name="Community", price=0, capacity=50, connected_account=False)

    buyer = new_phone_page()
    buyer.goto(f"{live_server.url}/e/{event.pk}/")
    expect(buyer.get_by_test_id("paid-not-on-sale")).to_be_visible()
    expect(buyer.locator('[data-ticket-type="General"]')).to_contain_text("Not on sale yet")
    expect(buyer.get_by_label("Quantity: Community")).to_be_visible()
    expect(buyer.get_by_label("Quantity: General")).to_have_count(0)

    page = new_phone_page()
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Email").fill(owner.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page).not_to_have_url(re.compile(r"/login/"))
    page.goto(f"{live_server.url}/o/{tenant.slug}/events/{event.pk}/ticket-types/")
    expect(page.get_by_test_id("payments-notice")).to_be_visible()
    page.get_by_test_id("payments-notice").get_by_role("link", name="Set up payments").click()

    expect(page.get_by_test_id("account-state")).to_have_attribute("data-state", "none")
    assert_fits_phone_width(page)
    page.get_by_role("button", name="Connect with Stripe").click()

    expect(page).to_have_url(re.compile(r"/payments/onboarding/simulated/$"))
    expect(page.get_by_test_id("test-mode")).to_be_visible()
    assert_fits_phone_width(page)
    screenshot(page, "connect-simulated-onboarding")
    page.get_by_role("button", name="Complete onboarding (test)").click()

    expect(page).to_have_url(re.compile(r"/payments/\?returned=1$"))
    expect(page.get_by_test_id("account-state")).to_have_attribute("data-state", "payouts")
    screenshot(page, "connect-payments-ready")
    assert ConnectedAccount.objects.get(tenant=tenant).charges_enabled

    buyer.reload()
    expect(buyer.get_by_test_id("paid-not-on-sale")).to_have_count(0)
    buyer.get_by_label("Quantity: General").fill("1")
    buyer.get_by_label("Your name").fill("Ana García")
    buyer.get_by_label("Email").fill("ana@example.com")
    buyer.get_by_role("button", name=re.compile("Continue to test payment")).click()
    buyer.get_by_role("button", name="Pay €25.00 (test)").click()
    expect(buyer.get_by_test_id("order-status")).to_have_text("Paid")
    assert Order.objects.get().total == 2500

"""The demo's money path in a browser, in test-payment mode: a paid order with the platform fee, a partial
refund that gives part of the fee back, and the organizer's earnings page reached from the navigation.

The organization's connected account is created directly here (simulated, as test mode's onboarding makes it)."""

import re

import pytest

from billing.models import ConnectedAccount
from tenants.models import Role
from tests.factories import MembershipFactory, TenantFactory, TicketedEventFactory, TicketTypeFactory

PASSWORD = "correct horse battery"  # UserFactory's default

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def scenario(live_server, settings):
    settings.SITE_URL = live_server.url
    settings.PLATFORM_FEE_BASIS_POINTS, settings.PLATFORM_FEE_FIXED = 250, 30
    tenant = TenantFactory(name="Demo Events")
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    ConnectedAccount.objects.update_or_create(
        tenant=tenant, defaults={"stripe_account_id": "acct_localtest_demo", "is_test": True, "charges_enabled": True}
    )
    event = TicketedEventFactory(tenant=tenant, name="Demo Concert", timezone="Europe/Madrid")
    TicketTypeFactory(event=event, name="General", price=2500, capacity=200, position=0)
    return {"tenant": tenant, "owner": owner, "event": event}


def test_paid_order_refund_and_the_fee_on_the_earnings_page(live_server, scenario, new_phone_page, screenshot):
    from playwright.sync_api import expect

    event = scenario["event"]
    page = new_phone_page()
    page.goto(f"{live_server.url}/e/{event.pk}/")
    page.get_by_label("Quantity: General").fill("2")
    page.get_by_label("Your name").fill("Ana García")
    page.get_by_label("Email").fill("ana@example.com")
    page.get_by_role("button", name="Continue to test payment").click()
    page.get_by_role("button", name="Pay €50.00 (test)").click()
    expect(page.get_by_test_id("order-status")).to_have_text("Paid")

    organizer = new_phone_page()
    organizer.goto(f"{live_server.url}/login/")
    organizer.get_by_label("Email").fill(scenario["owner"].email)
    organizer.get_by_label("Password").fill(PASSWORD)
    organizer.get_by_role("button", name="Log in").click()
    expect(organizer).not_to_have_url(re.compile(r"/login/"))

    # The order: 2.5 % of €50.00 = €1.25, plus €0.30.
    organizer.goto(f"{live_server.url}/o/{scenario['tenant'].slug}/events/{event.pk}/orders/")
    organizer.locator("[data-testid=orders] a").first.click()
    amounts = organizer.get_by_test_id("amounts")
    expect(amounts.locator('[data-amount="fee"]')).to_have_text("€1.55")
    expect(amounts.locator('[data-amount="net"]')).to_have_text("€48.45")
    organizer.get_by_label("Amount to refund").fill("10.00")
    organizer.get_by_label(re.compile("Yes, refund")).check()
    organizer.get_by_role("button", name="Refund", exact=True).click()
    # €10.00 of €50.00 gives back a fifth of the fee: €0.31.
    expect(amounts.locator('[data-amount="fee"]')).to_have_text("€1.24")
    expect(amounts.locator('[data-amount="net"]')).to_have_text("€38.76")

    earnings_url = f"/o/{scenario['tenant'].slug}/earnings/"
    expect(organizer.get_by_role("link", name="Earnings", exact=True)).to_have_attribute("href", earnings_url)
    organizer.goto(live_server.url + earnings_url)
    expect(organizer.get_by_role("heading", level=1)).to_have_text("Earnings")
    totals = organizer.get_by_test_id("earnings-totals")
    for amount, text in [
        ("gross", "€50.00"),
        ("fee", "€1.55"),
        ("net", "€48.45"),
        ("refunded", "€10.00"),
        ("fee_refunded", "€0.31"),
        ("net_after_refunds", "€38.76"),
    ]:
        expect(totals.locator(f'[data-amount="{amount}"]')).to_have_text(text)
    expect(organizer.get_by_test_id("earnings-events")).to_contain_text("Demo Concert")
    expect(organizer.get_by_test_id("earnings-months").locator("tbody tr")).to_have_count(1)
    widths = organizer.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"page is {widths[0]}px wide on a {widths[1]}px screen"
    screenshot(organizer, "earnings")

"""Every kind of page runs under the Content-Security-Policy in Chromium without a single violation.

The policy allows scripts and styles from this site only, so an inline script or
event handler left in a template would be blocked, and the page's JavaScript
would silently stop working. Each page here is opened in a real browser that
records every `securitypolicyviolation`, and its scripts are shown to run (the
language switcher submits, the print button appears, Swagger UI draws the API).
"""

import re

import pytest

from billing.services import order_page_path
from events.models import Event
from tenants.models import Role
from tests.api.sweep_fixtures import paid_order
from tests.factories import (
    EventFactory,
    GuestFactory,
    MembershipFactory,
    TenantFactory,
    TicketedEventFactory,
    TicketTypeFactory,
    UserFactory,
)

PASSWORD = "correct horse battery"  # UserFactory's default

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  const where = `${event.sourceFile}:${event.lineNumber}`;
  window.__cspViolations.push(`${event.violatedDirective} blocked ${event.blockedURI || "inline"} at ${where}`);
});
"""


@pytest.fixture
def scenario(live_server, settings):
    settings.SITE_URL = live_server.url
    tenant = TenantFactory(name="Policy Org")
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    event = EventFactory(tenant=tenant, name="Policy Party")
    guest = GuestFactory(event=event, first_name="Paula", last_name="Policy")
    concert = TicketedEventFactory(tenant=tenant, name="Policy Concert")
    seat = TicketTypeFactory(event=concert, name="Seat", price=1000, capacity=10)
    order = paid_order(event=concert, ticket_type=seat, quantity=1, buyer_name="Pat", buyer_email="pat@example.com")
    # From now on the shop asks a name per ticket, a field its script adds per ticket chosen.
    Event.objects.filter(pk=concert.pk).update(attendee_names_required=True)
    staff = UserFactory(email="staff@example.com", is_staff=True, is_superuser=True)
    return {
        "tenant": tenant,
        "owner": owner,
        "event": event,
        "guest": guest,
        "concert": concert,
        "order": order,
        "staff": staff,
    }


@pytest.fixture
def open_page(browser):
    """A desktop page that records CSP violations and console errors."""
    contexts, pages = [], []

    def make():
        context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US")
        context.set_default_timeout(10_000)
        context.add_init_script(RECORD_VIOLATIONS)
        contexts.append(context)
        page = context.new_page()
        page.console_errors = []
        page.on("console", lambda message: message.type == "error" and page.console_errors.append(message.text))
        pages.append(page)
        return page

    yield make
    for context in contexts:
        context.close()


def visit(page, url: str):
    response = page.goto(url)
    assert response.status < 400, (url, response.status)
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_load_state("networkidle")
    assert_no_violation(page, url)


def assert_no_violation(page, where: str):
    violations = page.evaluate("window.__cspViolations")
    refused = [text for text in page.console_errors if "Content Security Policy" in text]
    assert not violations and not refused, f"{where}: {violations or refused}"


def log_in(page, base: str, email: str, path: str = "/login/"):
    page.goto(base + path)
    page.get_by_label(re.compile("Email", re.I)).fill(email)
    page.get_by_label(re.compile("Password", re.I)).fill(PASSWORD)
    page.get_by_role("button", name=re.compile("Log in", re.I)).click()
    page.wait_for_load_state("networkidle")


def test_public_guest_and_buyer_pages_run_without_violations(live_server, scenario, open_page):
    from playwright.sync_api import expect

    base = live_server.url
    page = open_page()
    for path in ("/", "/login/", "/signup/", "/password-reset/", "/rsvp/", f"/e/{scenario['concert'].pk}/"):
        visit(page, base + path)

    # The language switcher (data-autosubmit in static/js/app.js) submits on change.
    page.goto(base + "/")
    with page.expect_navigation():
        page.select_option("#language-switch", "es")
    expect(page.locator("html")).to_have_attribute("lang", "es")
    assert_no_violation(page, "language switch")
    with page.expect_navigation():
        page.select_option("#language-switch", "en")
    expect(page.locator("html")).to_have_attribute("lang", "en")

    # The shop's script (static/js/shop.js) adds a name field per ticket and updates the total.
    page.goto(f"{base}/e/{scenario['concert'].pk}/")
    page.locator("[data-quantity]").first.fill("2")
    expect(page.locator("input[data-attendee]")).to_have_count(2)
    expect(page.locator("[data-shop-total]")).to_have_text("€20.00")
    assert_no_violation(page, "shop")

    # The order page's print button is shown by script.
    visit(page, base + order_page_path(scenario["order"]))
    expect(page.locator("[data-print]")).to_be_visible()

    # The guest's pages.
    guest = scenario["guest"]
    page.goto(base + "/rsvp/")
    page.get_by_label("Personal code").fill(guest.code)
    page.get_by_label("Last name").fill(guest.last_name)
    page.get_by_role("button", name="Continue").click()
    expect(page).to_have_url(re.compile(r"/rsvp/answer/$"))
    assert_no_violation(page, "rsvp answer")


def test_organizer_pages_run_without_violations(live_server, scenario, open_page):
    from playwright.sync_api import expect

    base, tenant = live_server.url, scenario["tenant"]
    page = open_page()
    log_in(page, base, scenario["owner"].email)
    event, concert = scenario["event"], scenario["concert"]
    for path in (
        f"/o/{tenant.slug}/",
        f"/o/{tenant.slug}/events/new/",
        f"/o/{tenant.slug}/events/{event.pk}/",
        f"/o/{tenant.slug}/events/{event.pk}/edit/",
        f"/o/{tenant.slug}/events/{event.pk}/guests/",
        f"/o/{tenant.slug}/events/{event.pk}/guests/{scenario['guest'].pk}/",
        f"/o/{tenant.slug}/events/{concert.pk}/",
        f"/o/{tenant.slug}/events/{concert.pk}/ticket-types/",
        f"/o/{tenant.slug}/events/{concert.pk}/orders/",
        f"/o/{tenant.slug}/events/{concert.pk}/check-in/",
        f"/o/{tenant.slug}/team/",
        "/app/account/",
    ):
        visit(page, base + path)

    # A confirmation question (data-confirm) guards removing a teammate; dismissing it keeps them.
    MembershipFactory(tenant=tenant, role=Role.VIEWER, user__email="mate@example.com")
    page.goto(f"{base}/o/{tenant.slug}/team/")
    page.once("dialog", lambda dialog: dialog.dismiss())
    page.locator('tr[data-member="mate@example.com"]').get_by_role("button", name="Remove").click()
    expect(page.locator('tr[data-member="mate@example.com"]')).to_be_visible()
    assert_no_violation(page, "team")


def test_django_admin_runs_without_violations(live_server, scenario, open_page):
    base = live_server.url
    page = open_page()
    log_in(page, base, scenario["staff"].email, path="/admin/login/")
    for path in (
        "/admin/",
        "/admin/tenants/tenant/",
        f"/admin/tenants/tenant/{scenario['tenant'].pk}/change/",
        "/admin/tenants/user/",
        f"/admin/tenants/user/{scenario['owner'].pk}/change/",
        "/admin/billing/order/",
    ):
        visit(page, base + path)


def test_swagger_ui_works_under_the_policy(live_server, scenario, open_page):
    from playwright.sync_api import expect

    page = open_page()
    visit(page, live_server.url + "/api/docs/")
    expect(page.get_by_text("eventsaas API").first).to_be_visible()
    expect(page.locator(".opblock").first).to_be_visible()
    assert page.locator(".opblock").count() > 20
    # Opening an operation renders its details (all from the schema fetched under connect-src 'self').
    page.locator(".opblock-summary").first.click()
    expect(page.locator(".opblock-body").first).to_be_visible()
    assert_no_violation(page, "/api/docs/")

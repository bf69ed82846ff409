"""A new event's time zone defaults to the organizer's browser zone (static/js/timezone.js, under the CSP)."""

import pytest

from events.models import Event
from tenants.models import Role
from tests.e2e.test_content_security_policy_browser import RECORD_VIOLATIONS, assert_no_violation, log_in
from tests.factories import EventFactory, MembershipFactory, TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _page_in_zone(browser, timezone_id: str):
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="en-US", timezone_id=timezone_id)
    context.set_default_timeout(10_000)
    context.add_init_script(RECORD_VIOLATIONS)
    page = context.new_page()
    page.console_errors = []
    page.on("console", lambda message: message.type == "error" and page.console_errors.append(message.text))
    return context, page


@pytest.mark.parametrize("browser_zone", ["Europe/Madrid", "America/Los_Angeles"])
def test_new_event_takes_the_browser_time_zone(live_server, browser, browser_zone):
    tenant = TenantFactory()
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    context, page = _page_in_zone(browser, browser_zone)
    try:
        log_in(page, live_server.url, owner.email)
        page.goto(f"{live_server.url}/o/{tenant.slug}/events/new/")
        page.wait_for_load_state("networkidle")

        assert page.locator("select[name=timezone]").input_value() == browser_zone
        assert_no_violation(page, "new event")

        page.locator("input[name=name]").fill("Browser zone party")
        page.locator("input[name=starts_at]").fill("2031-06-01T18:00")
        page.get_by_role("button", name="Save").click()
        page.wait_for_load_state("networkidle")
        assert Event.objects.get(name="Browser zone party").timezone == browser_zone
    finally:
        context.close()


def test_an_existing_events_zone_is_not_replaced_by_the_browsers(live_server, browser):
    tenant = TenantFactory()
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    event = EventFactory(tenant=tenant, timezone="Asia/Tokyo")
    context, page = _page_in_zone(browser, "Europe/Madrid")
    try:
        log_in(page, live_server.url, owner.email)
        page.goto(f"{live_server.url}/o/{tenant.slug}/events/{event.pk}/edit/")
        page.wait_for_load_state("networkidle")
        assert page.locator("select[name=timezone]").input_value() == "Asia/Tokyo"
    finally:
        context.close()

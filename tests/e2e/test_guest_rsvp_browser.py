"""A guest answers for a household in a real browser; the organizer then sees it on the dashboard."""

import re
import uuid

import pytest

from guests.models import Guest
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory

PASSWORD = "correct horse battery"  # UserFactory's default

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def assert_fits_phone_width(page):
    """Nothing sticks out sideways on a phone (a wide nav once pushed the page to 509px on a 390px screen)."""
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"page is {widths[0]}px wide on a {widths[1]}px screen"


@pytest.fixture
def scenario():
    tenant = TenantFactory(name="Müller Family Events")
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    event = EventFactory(tenant=tenant, name="Summer Garden Party")
    group_id = uuid.uuid4()
    anna = GuestFactory(event=event, first_name="Anna", last_name="Müller", group_id=group_id, expected_guests=1)
    lisa = GuestFactory(event=event, first_name="Lisa", last_name="Müller", group_id=group_id, expected_guests=1)
    return {"tenant": tenant, "owner": owner, "event": event, "anna": anna, "lisa": lisa}


def test_guest_answers_for_household_and_organizer_sees_it(live_server, scenario, new_phone_page, screenshot):
    from playwright.sync_api import expect

    anna, lisa, event = scenario["anna"], scenario["lisa"], scenario["event"]

    # --- the guest -------------------------------------------------------------------------------
    page = new_phone_page()
    page.goto(f"{live_server.url}/rsvp/")
    expect(page.get_by_role("heading", name="Answer your invitation")).to_be_visible()
    # Typed the way people do: lower case code, last name without the accent.
    page.get_by_label("Personal code").fill(anna.code.lower())
    page.get_by_label("Last name").fill("muller")
    page.get_by_role("button", name="Continue").click()

    expect(page).to_have_url(re.compile(r"/rsvp/answer/$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Summer Garden Party")
    expect(page.get_by_text("Hello Anna!")).to_be_visible()
    household = page.get_by_test_id("household")
    expect(household).to_contain_text("Anna Müller")
    expect(household).to_contain_text("Lisa Müller")

    page.get_by_role("group", name="Anna Müller (you)").get_by_label("Coming", exact=True).check()
    lisa_row = page.get_by_role("group", name="Lisa Müller")
    lisa_row.get_by_label("Not coming", exact=True).check()
    expect(page.locator("output[data-total]")).to_have_text("1")
    page.get_by_role("button", name="Send my answer").click()

    confirmation = page.get_by_test_id("confirmation")
    expect(confirmation).to_be_visible()
    expect(confirmation).to_contain_text("We expected 2 but you said 1.")
    expect(confirmation).to_contain_text("Is Lisa not coming?")
    # Nothing is saved before the guest confirms.
    assert set(Guest.objects.filter(pk__in=[anna.pk, lisa.pk]).values_list("status", flat=True)) == {"pending"}
    assert_fits_phone_width(page)
    screenshot(page, "rsvp-confirmation")

    confirmation.get_by_role("button", name="Confirm: 1 person is coming").click()

    expect(page).to_have_url(re.compile(r"/rsvp/answer/$"))
    expect(page.get_by_role("status").filter(has_text="Thank you! Your answer is saved.")).to_be_visible()
    expect(page.get_by_test_id("current-answer")).to_contain_text("Coming: 1 person")
    screenshot(page, "rsvp-thank-you")

    anna.refresh_from_db()
    lisa.refresh_from_db()
    assert (anna.status, anna.num_guests) == (Guest.Status.COMING, 1)
    assert (lisa.status, lisa.num_guests) == (Guest.Status.DECLINED, 0)
    assert anna.last_login_at is not None and anna.rsvp_at is not None

    # --- the organizer ---------------------------------------------------------------------------
    organizer = new_phone_page()
    organizer.goto(f"{live_server.url}/login/")
    organizer.get_by_label("Email").fill(scenario["owner"].email)
    organizer.get_by_label("Password").fill(PASSWORD)
    organizer.get_by_role("button", name="Log in").click()
    expect(organizer).not_to_have_url(re.compile(r"/login/"))

    organizer.goto(f"{live_server.url}/o/{scenario['tenant'].slug}/events/{event.pk}/")
    expect(organizer.get_by_role("heading", level=1)).to_contain_text("Summer Garden Party")
    stats = organizer.get_by_test_id("stats")

    def stat(name):
        return stats.locator(f'[data-stat="{name}"]')

    expect(stat("invited")).to_have_text("2")
    expect(stat("coming")).to_have_text("1")
    expect(stat("declined")).to_have_text("1")
    expect(stat("pending")).to_have_text("0")
    expect(stat("head_count")).to_have_text("1")
    expect(stat("never_logged_in")).to_have_text("1")  # Lisa never logged in herself
    assert_fits_phone_width(organizer)
    screenshot(organizer, "dashboard")

    counts = {status: Guest.objects.for_event(event).filter(status=status).count() for status in Guest.Status}
    assert counts == {Guest.Status.COMING: 1, Guest.Status.DECLINED: 1, Guest.Status.PENDING: 0}

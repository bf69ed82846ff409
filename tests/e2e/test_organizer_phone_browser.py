"""Organizer pages and the shop on a 390 px phone: lists as cards, checkboxes on their own line, the shop's
total and a name field per ticket, the refund's confirmation. Nothing scrolls sideways."""

import re
import uuid

import pytest

from billing.models import Order
from events.models import Event
from tenants.models import Role
from tests.factories import (
    EventFactory,
    GuestFactory,
    MembershipFactory,
    TenantFactory,
    TicketedEventFactory,
    TicketTypeFactory,
)

PASSWORD = "correct horse battery"  # UserFactory's default
PHONE_WIDTH = 390

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def assert_no_sideways_scroll(page):
    width = page.evaluate("() => document.documentElement.scrollWidth")
    assert width <= PHONE_WIDTH, f"the page is {width}px wide on a {PHONE_WIDTH}px phone"


@pytest.fixture
def organizer(live_server):
    tenant = TenantFactory(name="Garden Parties")
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    party = EventFactory(tenant=tenant, name="Summer Garden Party")
    household = uuid.uuid4()
    for first, last, group in [
        ("Olivia", "Müller-Lüdenscheidt", household),
        ("Jonas", "Müller-Lüdenscheidt", household),
        ("Ida", "Andersen", None),
        ("Iván", "Brown", None),
        ("Maya", "Costa", None),
    ]:
        GuestFactory(event=party, first_name=first, last_name=last, group_id=group, expected_guests=2)
    concert = TicketedEventFactory(tenant=tenant, name="Demo Concert", attendee_names_required=True)
    TicketTypeFactory(event=concert, name="General", price=2500, capacity=200, position=0)
    TicketTypeFactory(event=concert, name="Front row", price=6000, capacity=5, position=1)
    return {"tenant": tenant, "owner": owner, "party": party, "concert": concert}


def _log_in(page, base, user):
    page.goto(f"{base}/login/")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    from playwright.sync_api import expect

    expect(page).not_to_have_url(re.compile(r"/login/"))


def test_guest_list_on_a_phone_is_cards_with_plain_filters(live_server, organizer, new_phone_page, screenshot):
    from playwright.sync_api import expect

    page = new_phone_page()
    _log_in(page, live_server.url, organizer["owner"])
    page.goto(f"{live_server.url}/o/{organizer['tenant'].slug}/events/{organizer['party'].pk}/guests/")

    assert_no_sideways_scroll(page)
    cards = page.get_by_test_id("guest")
    expect(cards).to_have_count(5)
    expect(page.locator("table.cards thead")).to_be_hidden()
    first = cards.first
    expect(first).to_be_visible()
    expect(first.get_by_role("link", name="Andersen, Ida")).to_be_visible()
    # A card: the row is a block as wide as the screen allows, its cells stacked with their labels.
    box = first.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= PHONE_WIDTH
    assert first.evaluate("row => getComputedStyle(row).display") == "block"
    status = first.locator("td[data-label=Status]")
    assert status.evaluate("cell => getComputedStyle(cell, '::before').content") == '"Status"'
    expect(first.get_by_role("checkbox", name="Select Ida Andersen")).to_be_visible()

    # The filters: a labelled full-width select and search box, the checkbox beside its label.
    status_filter = page.get_by_label("Status")
    search = page.get_by_label("Search")
    for field in (status_filter, search):
        width = field.bounding_box()["width"]
        assert width > PHONE_WIDTH - 60, f"a filter is {width}px wide"
    checkbox = page.get_by_role("checkbox", name="Never logged in")
    label = page.locator("label", has=checkbox)
    assert abs(checkbox.bounding_box()["y"] - label.bounding_box()["y"]) < 20  # same line
    checkbox.check()
    page.get_by_role("button", name="Filter").click()
    expect(page).to_have_url(re.compile(r"never_logged_in=on"))
    expect(page.get_by_role("checkbox", name="Never logged in")).to_be_checked()
    screenshot(page, "guest-list-phone")


def test_ticket_lists_and_the_name_per_ticket_checkbox_fit_a_phone(live_server, organizer, new_phone_page, screenshot):
    from playwright.sync_api import expect

    page = new_phone_page()
    base = f"{live_server.url}/o/{organizer['tenant'].slug}/events/{organizer['concert'].pk}"
    _log_in(page, live_server.url, organizer["owner"])

    # The ticket types table was 863 px wide and scrolled the whole page.
    page.goto(f"{base}/ticket-types/")
    assert_no_sideways_scroll(page)
    expect(page.locator("table.cards tbody tr")).to_have_count(2)

    page.goto(f"{base}/edit/")
    assert_no_sideways_scroll(page)
    checkbox = page.get_by_role("checkbox", name="Ask for a name per ticket")
    expect(checkbox).to_be_checked()
    box = checkbox.bounding_box()
    label_box = page.locator("label", has=checkbox).bounding_box()
    next_label = page.locator("label[for=id_questions_text]").bounding_box()
    previous_input = page.locator("#id_contact_email").bounding_box()
    assert abs(box["y"] - label_box["y"]) < 20, "the checkbox is beside its label"
    assert box["y"] >= previous_input["y"] + previous_input["height"], "below the field before it"
    assert next_label["y"] >= label_box["y"] + label_box["height"], "the next field starts on a new line"
    checkbox.scroll_into_view_if_needed()
    screenshot(page, "event-form-phone")


def test_shop_on_a_phone_shows_the_total_before_continue_and_a_name_field_per_ticket(
    live_server, organizer, new_phone_page, settings
):
    from playwright.sync_api import expect

    settings.SITE_URL = live_server.url
    page = new_phone_page()
    page.goto(f"{live_server.url}/e/{organizer['concert'].pk}/")
    expect(page.get_by_test_id("shop-total")).to_have_text("Total: —")
    expect(page.locator("input[data-attendee]")).to_have_count(0)
    # The "Update" button is for pages without JavaScript; here the script does its work live.
    expect(page.get_by_role("button", name="Update the total and name fields")).to_have_count(0)

    page.get_by_label("Quantity: General").fill("2")
    page.get_by_label("Quantity: Front row").fill("1")
    expect(page.get_by_test_id("shop-total")).to_have_text("Total: €110.00")
    expect(page.locator("input[data-attendee]")).to_have_count(3)
    page.get_by_label("Quantity: General").fill("1")
    expect(page.get_by_test_id("shop-total")).to_have_text("Total: €85.00")
    expect(page.locator("input[data-attendee]")).to_have_count(2)
    expect(page.get_by_label("Name on ticket 2 (Front row)")).to_be_visible()

    total = page.get_by_test_id("shop-total").bounding_box()
    pay = page.get_by_role("button", name="Continue to test payment").bounding_box()
    assert total["y"] + total["height"] <= pay["y"], "the total is shown before Continue"
    assert_no_sideways_scroll(page)

    page.get_by_label("Your name").fill("Ana García")
    page.get_by_label("Email").fill("ana@example.com")
    page.get_by_label("Name on ticket 1 (General)").fill("Ana García")
    page.get_by_role("button", name="Continue to test payment").click()
    # One name missing: the page comes back with the error on that field, what was typed kept.
    expect(page.locator("#id_attendee_2_error")).to_have_text("Enter the name of the person for this ticket.")
    expect(page.get_by_label("Name on ticket 1 (General)")).to_have_value("Ana García")
    page.get_by_label("Name on ticket 2 (Front row)").fill("Ben Ruiz")
    page.get_by_role("button", name="Continue to test payment").click()
    expect(page).to_have_url(re.compile(r"/test-checkout/$"))
    order = Order.objects.get(event_id=organizer["concert"].pk)
    assert [attendee["name"] for attendee in order.attendees] == ["Ana García", "Ben Ruiz"]


def test_shop_without_javascript_updates_the_total_and_names_on_the_server(live_server, organizer, browser):
    from playwright.sync_api import expect

    Event.objects.filter(pk=organizer["concert"].pk).update(attendee_names_required=True)
    context = browser.new_context(
        viewport={"width": PHONE_WIDTH, "height": 844}, is_mobile=True, locale="en-US", java_script_enabled=False
    )
    try:
        page = context.new_page()
        page.goto(f"{live_server.url}/e/{organizer['concert'].pk}/")
        page.get_by_label("Quantity: General").fill("2")
        page.get_by_role("button", name="Update the total and name fields").click()
        expect(page.get_by_test_id("shop-total")).to_have_text("Total: €50.00")
        expect(page.locator("input[data-attendee]")).to_have_count(2)
        expect(page.get_by_label("Quantity: General")).to_have_value("2")
        assert_no_sideways_scroll(page)
    finally:
        context.close()

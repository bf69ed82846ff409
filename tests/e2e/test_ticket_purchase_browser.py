"""A buyer gets two tickets on a phone in test-payment mode; the door checks the first one in, once."""

import re

import pytest
from django.core import mail

from billing.models import Order, Ticket
from events.models import TicketType
from tenants.models import Role
from tests.factories import MembershipFactory, TenantFactory, TicketedEventFactory, TicketTypeFactory

PASSWORD = "correct horse battery"  # UserFactory's default
ORDER_SCREENSHOT = "/tmp/ticket-order.png"

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def assert_fits_phone_width(page):
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.documentElement.clientWidth]")
    assert widths[0] <= widths[1], f"page is {widths[0]}px wide on a {widths[1]}px screen"


@pytest.fixture
def scenario(live_server, settings):
    # The checkout and order links the services build start with SITE_URL: here, the live server.
    settings.SITE_URL = live_server.url
    tenant = TenantFactory(name="Demo Events")
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    event = TicketedEventFactory(
        tenant=tenant,
        name="Demo Concert",
        location="Sala Clamores, Madrid",
        attendee_names_required=True,
        questions=[{"key": "heard", "label": "How did you hear about us?", "choices": ["Friends", "Poster"]}],
    )
    general = TicketTypeFactory(event=event, name="General", price=2500, capacity=200, position=0)
    front_row = TicketTypeFactory(event=event, name="Front row", price=6000, capacity=5, position=1)
    return {"tenant": tenant, "owner": owner, "event": event, "general": general, "front_row": front_row}


def test_buyer_pays_two_tickets_on_a_phone_and_the_door_checks_one_in_once(
    live_server, scenario, new_phone_page, screenshot
):
    from playwright.sync_api import expect

    event, general = scenario["event"], scenario["general"]

    # --- the buyer -------------------------------------------------------------------------------
    page = new_phone_page()
    page.goto(f"{live_server.url}/e/{event.pk}/")
    expect(page.get_by_role("heading", level=1)).to_have_text("Demo Concert")
    expect(page.get_by_test_id("test-mode")).to_contain_text("Test payment mode — no real money")
    general_row = page.locator('[data-ticket-type="General"]')
    expect(general_row).to_contain_text("€25.00")
    expect(general_row).to_contain_text("200 left")
    expect(page.locator('[data-ticket-type="Front row"]')).to_contain_text("5 left")
    assert_fits_phone_width(page)

    page.get_by_label("Quantity: General").fill("2")
    page.get_by_label("Your name").fill("Ana García")
    page.get_by_label("Email").fill("ana@example.com")
    # A name field per ticket appears as the quantity changes (static/js/shop.js), and the total above Continue.
    expect(page.locator("input[data-attendee]")).to_have_count(2)
    expect(page.get_by_test_id("shop-total")).to_have_text("Total: €50.00")
    page.get_by_label("Name on ticket 1 (General)").fill("Ana García")
    page.get_by_label("Name on ticket 2 (General)").fill("Ben Ruiz")
    page.get_by_label("How did you hear about us?").select_option("Friends")
    screenshot(page, "ticket-shop")
    page.get_by_role("button", name="Continue to test payment").click()

    expect(page).to_have_url(re.compile(r"/orders/[0-9a-f-]{36}/[^/]+/test-checkout/$"))
    expect(page.get_by_test_id("test-mode")).to_be_visible()
    expect(page.get_by_text("2 × General")).to_be_visible()
    assert_fits_phone_width(page)
    page.get_by_role("button", name="Pay €50.00 (test)").click()

    expect(page).to_have_url(re.compile(r"/orders/[0-9a-f-]{36}/[^/]+/\?paid=1$"))
    expect(page.get_by_test_id("order-status")).to_have_text("Paid")
    tickets = page.get_by_test_id("ticket")
    expect(tickets).to_have_count(2)
    expect(page.locator("[data-testid=ticket] .qr svg")).to_have_count(2)
    expect(tickets.nth(0)).to_contain_text("Ana García")
    expect(tickets.nth(1)).to_contain_text("Ben Ruiz")
    for index in range(2):
        box = tickets.nth(index).locator(".qr svg").bounding_box()
        assert box["width"] >= 200 and abs(box["width"] - box["height"]) < 1, box  # big and square enough to scan
    assert_fits_phone_width(page)
    page.screenshot(path=ORDER_SCREENSHOT, full_page=True)
    screenshot(page, "ticket-order")
    # Printed, the tickets stand alone: no navigation, no buttons.
    page.emulate_media(media="print")
    expect(page.locator("body > header")).to_be_hidden()
    expect(page.get_by_role("button", name="Print tickets")).to_be_hidden()
    expect(page.locator("[data-testid=ticket] .qr svg").first).to_be_visible()
    screenshot(page, "ticket-order-print")
    page.emulate_media(media="screen")
    expect(page.get_by_role("button", name="Print tickets")).to_be_visible()

    order = Order.objects.get(event=event)
    db_tickets = list(Ticket.objects.filter(order=order).order_by("seat"))
    shown_codes = [tickets.nth(i).get_attribute("data-code") for i in range(2)]
    assert shown_codes == [t.code for t in db_tickets]
    expect(tickets.nth(0).get_by_test_id("ticket-code")).to_have_text(db_tickets[0].display_code)
    general.refresh_from_db()
    assert (order.status, general.sold, general.reserved) == (Order.Status.PAID, 2, 0)
    assert [m.to for m in mail.outbox] == [["ana@example.com"]]
    first_code = tickets.nth(0).get_by_test_id("ticket-code").inner_text()

    # --- the door --------------------------------------------------------------------------------
    door = new_phone_page()
    door.goto(f"{live_server.url}/login/")
    door.get_by_label("Email").fill(scenario["owner"].email)
    door.get_by_label("Password").fill(PASSWORD)
    door.get_by_role("button", name="Log in").click()
    expect(door).not_to_have_url(re.compile(r"/login/"))

    door.goto(f"{live_server.url}/o/{scenario['tenant'].slug}/events/{event.pk}/check-in/")
    door.get_by_label("Ticket code").fill(first_code)
    door.get_by_role("button", name="Check in").click()
    result = door.locator("[data-result]")
    expect(result).to_have_attribute("data-result", "valid")
    expect(result).to_contain_text("Ana García")

    door.get_by_label("Ticket code").fill(first_code.replace("-", "").lower())
    door.get_by_role("button", name="Check in").click()
    expect(result).to_have_attribute("data-result", "already_checked_in")
    expect(result).to_contain_text("Already checked in")
    assert_fits_phone_width(door)
    screenshot(door, "ticket-check-in")

    checked = {t.code: t.checked_in_at for t in Ticket.objects.filter(order=order)}
    assert checked[db_tickets[0].code] is not None and checked[db_tickets[1].code] is None
    assert TicketType.objects.get(pk=general.pk).sold == 2

    # The buyer's page now says when the ticket was used.
    page.reload()
    expect(tickets.nth(0)).to_contain_text("Checked in:")
    expect(tickets.nth(1)).not_to_contain_text("Checked in:")


def test_access_code_typed_on_the_shop_unlocks_the_hidden_type(live_server, scenario, new_phone_page):
    from playwright.sync_api import expect

    event = scenario["event"]
    TicketTypeFactory(event=event, name="Crew", price=1000, capacity=10, access_code="BACKSTAGE")
    page = new_phone_page()
    page.goto(f"{live_server.url}/e/{event.pk}/")
    expect(page.locator('[data-ticket-type="Crew"]')).to_have_count(0)

    page.get_by_text("Have an access code?").click()
    page.get_by_label("Access code").fill("BACKSTAGE")
    page.get_by_role("button", name="Show tickets").click()

    expect(page).to_have_url(re.compile(r"\?code=BACKSTAGE$"))
    expect(page.locator('[data-ticket-type="Crew"]')).to_contain_text("€10.00")
    # The code travels with the purchase form, so the hidden type can be bought.
    expect(page.locator("#id_code")).to_have_value("BACKSTAGE")

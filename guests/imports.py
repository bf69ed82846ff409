"""Guest import from a CSV or Excel file: read it, check every row (the preview), write it once confirmed.

The flow is a `GuestImport` job whose status moves forward by compare-and-set
(DESIGN.md, "Exactly once"): `guest_import_start` reads the file and stores its
rows; `guest_import_check` gives every row a verdict (new, update, unchanged or
refused, with the reasons) and nothing else; `guest_import_confirm` is the one
click that may start `guest_import_apply`, which checks the rows again against
the guests as they are then and writes them. A file of more than
GUEST_IMPORT_INLINE_MAX_ROWS rows is checked and written by guests.tasks while
the page polls the job's counters; a small one by the same functions within the
request.

Matching, so that importing a corrected file again updates rather than
duplicates: a row's external id names its guest; without one, its email (the
guest with that email, or, when a household shares one, the one with the row's
name); without either, its name, when exactly one guest of the event has it.
A row with an external id never matches a guest who has another one; a row
without one may match any guest. On an update an empty cell keeps what is
stored (an empty external id never erases a guest's).
"""

from __future__ import annotations

import codecs
import csv
import io
import logging
import uuid
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.template.defaultfilters import filesizeformat
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from events.models import Event
from eventsaas.services import audit_log_record
from eventsaas.spreadsheets import neutralise, strip_neutralising_quote
from eventsaas.tasks import enqueue_on_commit
from eventsaas.validators import has_control_character
from guests import services
from guests.codes import name_key, normalize_name, search_key
from guests.models import Guest, GuestImport
from tenants.models import ActingUser

logger = logging.getLogger(__name__)

#: The columns a file may have, each with the headers that mean it (compared without case,
#: accents, underscores or dashes): English, Spanish, and the party app's names.
COLUMN_HEADERS: dict[str, tuple[str, ...]] = {
    "external_id": ("external id", "externalid", "id", "guest id", "ref", "reference", "id externo", "referencia"),
    "first_name": ("first name", "firstname", "given name", "forename", "nombre"),
    "last_name": ("last name", "lastname", "surname", "family name", "apellido", "apellidos"),
    "email": ("email", "e mail", "email address", "mail", "correo", "correo electronico", "email personal"),
    "phone": ("phone", "telephone", "tel", "mobile", "phone number", "telefono", "movil", "celular"),
    "expected_guests": (
        "expected guests",
        "expectedguests",
        "expected",
        "people",
        "guests",
        "party size",
        "personas",
        "invitados",
        "invitados esperados",
        "personas esperadas",  # the Spanish export's header
    ),
    "dietary": ("dietary", "dietary needs", "diet", "allergies", "dieta", "alergias", "necesidades alimentarias"),
    "group": ("group", "household", "family", "group id", "groupid", "grupo", "familia", "hogar"),
}
#: The column names shown to organizers (and written in the error report of an unnamed column).
COLUMN_LABELS = {
    "external_id": gettext_lazy("external id"),
    "first_name": gettext_lazy("first name"),
    "last_name": gettext_lazy("last name"),
    "email": gettext_lazy("email"),
    "phone": gettext_lazy("phone"),
    "expected_guests": gettext_lazy("expected guests"),
    "dietary": gettext_lazy("dietary needs"),
    "group": gettext_lazy("group"),
}
REQUIRED_COLUMNS = ("first_name", "last_name")
MAX_LENGTHS = {"external_id": 100, "first_name": 100, "last_name": 100, "phone": 40, "group": 100}
MAX_EXPECTED_GUESTS = 100
#: An .xlsx file is a zip: more than this many times its size once unpacked is a zip bomb, not a guest list.
XLSX_MAX_EXPANSION = 50
WRITE_CHUNK_ROWS = 500
PROGRESS_EVERY_ROWS = 500
#: Fields a row writes to a guest (the group is resolved per household, see _household_ids).
GUEST_FIELDS = ("external_id", "first_name", "last_name", "email", "phone", "expected_guests", "dietary")


class ImportFileInvalid(ValidationError):
    """The file cannot be imported at all (type, size, encoding, columns); nothing was stored."""


def _header_key(text: str) -> str:
    return " ".join(normalize_name(text.replace("_", " ").replace("-", " ").replace(".", " ")).split())


_FIELD_BY_HEADER = {_header_key(header): field for field, headers in COLUMN_HEADERS.items() for header in headers}


# --- reading the file ----------------------------------------------------------------------------


@dataclass
class ParsedFile:
    #: per understood column: {"field": ..., "header": the file's own header}
    columns: list[dict[str, str]]
    ignored_columns: list[str]
    #: {"line": the line (or sheet row) number, "values": {field: text}}
    rows: list[dict[str, Any]]


def _csv_text(content: bytes) -> str:
    try:
        if content.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            # Excel's "Unicode Text" (tab-separated): its zero bytes are text, not binary data.
            return content.decode("utf-16")
        if b"\x00" in content[:8192]:
            raise ImportFileInvalid(_("This file is not a CSV file (it holds binary data)."), code="binary")
        return content.decode("utf-8-sig")  # with or without the BOM Excel writes
    except UnicodeDecodeError:
        raise ImportFileInvalid(
            _("This CSV file is not UTF-8 text. In Excel, save it as “CSV UTF-8”."), code="encoding"
        ) from None


def _csv_rows(content: bytes) -> Iterator[list[str]]:
    text = _csv_text(content)
    first_line = text.split("\n", 1)[0]
    # Spreadsheets in Spanish (and most of Europe) write semicolons, the rest commas.
    delimiter = max((";", ",", "\t"), key=first_line.count)
    # Strict: a quotation mark that is never closed would otherwise swallow the rest of the file into one cell
    # (a guest whose last name is every line below it).
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    row_start = 1
    try:
        for row in reader:
            yield row
            row_start = reader.line_num + 1
    except csv.Error as error:
        if "field limit" in str(error):
            raise ImportFileInvalid(
                _("This CSV file could not be read: %(error)s") % {"error": error}, code="csv"
            ) from None
        raise ImportFileInvalid(
            _(
                "This CSV file could not be read from line %(line)s on: a quotation mark there is never closed, "
                "or a cell goes on after its closing quotation mark."
            )
            % {"line": row_start},
            code="csv_quotes",
        ) from None


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))  # Excel stores 2 as 2.0
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)


def _xlsx_rows(content: bytes) -> Iterator[list[str]]:
    from openpyxl import load_workbook  # a few hundred milliseconds to import: only when an xlsx comes

    unreadable = _("This file could not be read as an Excel workbook (.xlsx).")
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            unpacked = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, ValueError):
        raise ImportFileInvalid(unreadable, code="xlsx") from None
    if unpacked > XLSX_MAX_EXPANSION * max(len(content), 1):
        raise ImportFileInvalid(unreadable, code="xlsx")
    try:
        # read_only streams the sheet; data_only gives a formula's last computed value, never the formula.
        workbook = load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except Exception:
        raise ImportFileInvalid(unreadable, code="xlsx") from None
    try:
        sheet = workbook.worksheets[0]
        for row in sheet.iter_rows(values_only=True):
            yield [_cell_text(value) for value in row]
    except Exception:
        raise ImportFileInvalid(unreadable, code="xlsx") from None
    finally:
        workbook.close()


def _understood_columns(header: list[str]) -> tuple[dict[int, str], list[dict[str, str]], list[str]]:
    by_index: dict[int, str] = {}
    columns: list[dict[str, str]] = []
    ignored: list[str] = []
    seen: dict[str, str] = {}
    for index, raw in enumerate(header):
        text = raw.strip()
        field = _FIELD_BY_HEADER.get(_header_key(text))
        if field is None:
            if text:
                ignored.append(text)
            continue
        if field in seen:
            raise ImportFileInvalid(
                _("Two columns mean the same thing (%(field)s): “%(first)s” and “%(second)s”. Keep one.")
                % {"field": COLUMN_LABELS[field], "first": seen[field], "second": text},
                code="duplicate_column",
            )
        seen[field] = text
        by_index[index] = field
        columns.append({"field": field, "header": text})
    return by_index, columns, ignored


def _columns_help() -> str:
    return ", ".join(str(label) for label in COLUMN_LABELS.values())


def guest_file_parse(*, file_name: str, content: bytes) -> ParsedFile:
    """Read a guest file (.csv in UTF-8, comma or semicolon, or .xlsx: its first sheet).

    The first non-empty row is the header; columns are matched by name
    (COLUMN_HEADERS), the others are listed as ignored. Raises ImportFileInvalid
    with a message for the organizer when the file cannot be imported at all.
    """
    if len(content) > settings.GUEST_IMPORT_MAX_BYTES:
        raise ImportFileInvalid(
            _("This file is too large: at most %(size)s.") % {"size": filesizeformat(settings.GUEST_IMPORT_MAX_BYTES)},
            code="too_large",
        )
    if not content.strip():
        raise ImportFileInvalid(_("This file is empty."), code="empty")
    extension = file_name.lower().rsplit(".", 1)[-1] if "." in file_name else ""
    if extension == "csv":
        table = _csv_rows(content)
    elif extension == "xlsx":
        table = _xlsx_rows(content)
    else:
        raise ImportFileInvalid(
            _("Upload a .csv or .xlsx file (an older .xls workbook: save it as .xlsx first)."), code="file_type"
        )
    header: list[str] | None = None
    by_index: dict[int, str] = {}
    parsed = ParsedFile(columns=[], ignored_columns=[], rows=[])
    for line, cells in enumerate(table, start=1):
        if not any(cell.strip() for cell in cells):
            continue
        if header is None:
            header = cells
            by_index, parsed.columns, parsed.ignored_columns = _understood_columns(header)
            continue
        if len(parsed.rows) >= settings.GUEST_IMPORT_MAX_ROWS:
            raise ImportFileInvalid(
                _("This file has more than %(max)s guests; split it into several files.")
                % {"max": settings.GUEST_IMPORT_MAX_ROWS},
                code="too_many_rows",
            )
        # A file this app wrote (an export, the error report) comes back without its neutralising quotes.
        values = {
            field: strip_neutralising_quote(cells[index].strip())
            for index, field in by_index.items()
            if index < len(cells)
        }
        parsed.rows.append({"line": line, "values": values})
    if header is None:
        raise ImportFileInvalid(_("This file is empty."), code="empty")
    understood = {column["field"] for column in parsed.columns}
    if not understood:
        raise ImportFileInvalid(
            _("None of this file's columns was understood. The first row must name the columns: %(columns)s.")
            % {"columns": _columns_help()},
            code="no_columns",
        )
    missing = [str(COLUMN_LABELS[field]) for field in REQUIRED_COLUMNS if field not in understood]
    if missing:
        raise ImportFileInvalid(
            _("This file has no column for: %(missing)s. Columns understood: %(understood)s.")
            % {
                "missing": ", ".join(missing),
                "understood": ", ".join(column["header"] for column in parsed.columns),
            },
            code="missing_columns",
        )
    if not parsed.rows:
        raise ImportFileInvalid(_("This file has a header row but no guests."), code="no_rows")
    return parsed


# --- checking the rows ---------------------------------------------------------------------------


@dataclass
class _Existing:
    """A guest already in the event, as the import compares rows with it."""

    pk: uuid.UUID
    code: str
    group_id: uuid.UUID | None
    fields: dict[str, Any]

    @property
    def name_key(self) -> str:
        return f"{name_key(self.fields['first_name'])}|{name_key(self.fields['last_name'])}"


class _EventGuests:
    """The event's guests, indexed the three ways a row can name one (external id, email, name)."""

    def __init__(self, event: Event):
        self.by_external_id: dict[str, _Existing] = {}
        self.by_email: dict[str, list[_Existing]] = defaultdict(list)
        self.by_name: dict[str, list[_Existing]] = defaultdict(list)
        self.group_ids: set[uuid.UUID] = set()
        rows = Guest.objects.for_event(event).values_list("pk", "code", "group_id", *GUEST_FIELDS)
        for pk, code, group_id, *values in rows.iterator(chunk_size=2000):
            guest = _Existing(pk=pk, code=code, group_id=group_id, fields=dict(zip(GUEST_FIELDS, values, strict=True)))
            if guest.fields["external_id"]:
                self.by_external_id[guest.fields["external_id"]] = guest
            if guest.fields["email"]:
                self.by_email[guest.fields["email"].lower()].append(guest)
            self.by_name[guest.name_key].append(guest)
            if group_id:
                self.group_ids.add(group_id)


def _field_errors(values: dict[str, str]) -> tuple[list[str], dict[str, Any]]:
    """The row's errors, and its cleaned values (only the cells that hold something)."""
    errors: list[str] = []
    cleaned: dict[str, Any] = {field: value for field, value in values.items() if value}
    if not values.get("first_name"):
        errors.append(_("First name is missing."))
    if not values.get("last_name"):
        errors.append(_("Last name is missing."))
    for field in ("first_name", "last_name"):
        # Checked here, not only by the model: an update is written without full_clean, and the row keeps its
        # cells for the error report either way.
        if has_control_character(values.get(field, "")):
            errors.append(
                _("%(field)s contains a tab, a line break or another control character.")
                % {"field": str(COLUMN_LABELS[field]).capitalize()}
            )
    for field, limit in MAX_LENGTHS.items():
        if len(values.get(field, "")) > limit:
            errors.append(
                _("%(field)s is longer than %(max)s characters.")
                % {"field": str(COLUMN_LABELS[field]).capitalize(), "max": limit}
            )
    if email := values.get("email"):
        try:
            validate_email(email)
        except ValidationError:
            errors.append(_("“%(value)s” is not a valid email address.") % {"value": email})
    if raw := values.get("expected_guests"):
        number = _whole_number(raw)
        if number is None or not 1 <= number <= MAX_EXPECTED_GUESTS:
            errors.append(
                _("Expected guests must be a whole number from 1 to %(max)s, not “%(value)s”.")
                % {"max": MAX_EXPECTED_GUESTS, "value": raw}
            )
        else:
            cleaned["expected_guests"] = number
    return errors, cleaned


def _whole_number(raw: str) -> int | None:
    text = raw.removesuffix(".0")  # a number cell that went through a spreadsheet
    return int(text) if text.isascii() and text.isdigit() else None


def _group_uuid(value: str) -> uuid.UUID | None:
    try:
        return uuid.UUID(value)
    except ValueError:
        return None


def _duplicate_key(cleaned: dict[str, Any]) -> tuple[str, ...]:
    """What makes two rows of one file the same guest: the external id, else email and name, else name and group."""
    name = f"{name_key(cleaned.get('first_name', ''))}|{name_key(cleaned.get('last_name', ''))}"
    if external_id := cleaned.get("external_id"):
        return ("external_id", external_id)
    if email := cleaned.get("email"):
        return ("email", email.lower(), name)
    return ("name", name, cleaned.get("group", "").casefold())


def _match(cleaned: dict[str, Any], existing: _EventGuests) -> tuple[_Existing | None, str]:
    """The guest this row names, or None for a new guest; or an error when several could be meant."""
    external_id = cleaned.get("external_id", "")
    if external_id and external_id in existing.by_external_id:
        return existing.by_external_id[external_id], ""

    def compatible(guest: _Existing) -> bool:
        # A guest who has another external id is another person; a row without one (a hand-made
        # line, an export of an older version) names nobody else, so it may match any guest.
        return not external_id or not guest.fields["external_id"] or guest.fields["external_id"] == external_id

    name = f"{name_key(cleaned.get('first_name', ''))}|{name_key(cleaned.get('last_name', ''))}"
    if email := cleaned.get("email", "").lower():
        with_email = [g for g in existing.by_email.get(email, []) if compatible(g)]
        if len(with_email) == 1:
            return with_email[0], ""
        same_name = [g for g in with_email if g.name_key == name]
        if len(same_name) == 1:
            return same_name[0], ""
        if same_name:
            return None, _("Several guests of this event have this email and name; add an external id column.")
    # A guest added by hand without the row's email or id, but with its name: the same person.
    by_name = [
        g
        for g in existing.by_name.get(name, [])
        if compatible(g) and (not email or not g.fields["email"] or g.fields["email"].lower() == email)
    ]
    if len(by_name) == 1:
        return by_name[0], ""
    if len(by_name) > 1:
        return None, _("Several guests of this event have this name; add an email or external id column.")
    return None, ""


def _changes(cleaned: dict[str, Any], guest: _Existing) -> list[str]:
    return [
        field
        for field in GUEST_FIELDS
        if field in cleaned
        and cleaned[field] != guest.fields[field]
        # an email differing only in case is the same address
        and not (field == "email" and cleaned[field].lower() == guest.fields[field].lower())
    ]


@dataclass
class _Plan:
    rows: list[dict[str, Any]]
    new: int = 0
    updated: int = 0
    unchanged: int = 0
    refused: int = 0

    def count(self, action: str) -> None:
        counter = {"new": "new", "update": "updated", "unchanged": "unchanged", "refused": "refused"}[action]
        setattr(self, counter, getattr(self, counter) + 1)


def _household_ids(rows: list[dict[str, Any]], existing: _EventGuests) -> None:
    """Give every accepted row its household: rows with the same group value share one group id.

    A group value that is a group id names that household of the event; another
    value is a label local to the file. A label keeps the household of the first
    of its guests that already has one, so re-importing with a new member adds
    them to it; a label of a single new row makes no household.
    """
    by_label: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        if row["action"] != "refused" and row["cleaned"].get("group"):
            by_label[row["cleaned"]["group"].casefold()].append(row)
    for label_rows in by_label.values():
        explicit = _group_uuid(label_rows[0]["cleaned"]["group"])
        current = [row["current_group_id"] for row in label_rows if row["current_group_id"]]
        group_id: uuid.UUID | None = explicit or (uuid.UUID(current[0]) if current else None)
        if group_id is None and len(label_rows) > 1:
            group_id = uuid.uuid4()
        for row in label_rows:
            row["group_id"] = str(group_id) if group_id else None


def _plan(event: Event, rows: list[dict[str, Any]], on_progress: Callable[[int], None]) -> _Plan:
    """Every row's verdict against the event's guests as they are now; nothing is written."""
    existing = _EventGuests(event)
    seen: dict[tuple[str, ...], int] = {}
    claimed: dict[uuid.UUID, int] = {}
    planned: list[dict[str, Any]] = []
    for index, row in enumerate(rows, start=1):
        errors, cleaned = _field_errors(row["values"])
        group = cleaned.get("group", "")
        if group and _group_uuid(group) and _group_uuid(group) not in existing.group_ids:
            errors.append(_("Unknown group “%(value)s”: no household of this event has this id.") % {"value": group})
        key = _duplicate_key(cleaned)
        if key in seen:
            errors.append(_("Duplicate of line %(line)s.") % {"line": seen[key]})
        else:
            seen[key] = row["line"]
        target, ambiguity = (None, "") if errors else _match(cleaned, existing)
        if ambiguity:
            errors.append(ambiguity)
        if target is not None and target.pk in claimed:
            errors.append(_("Line %(line)s already updates this guest.") % {"line": claimed[target.pk]})
        verdict: dict[str, Any] = {
            "line": row["line"],
            "values": row["values"],
            "cleaned": cleaned,
            "errors": errors,
            "guest_id": None,
            "current_group_id": None,
            "group_id": None,
            "changes": [],
        }
        if errors:
            verdict["action"] = "refused"
        elif target is None:
            verdict["action"] = "new"
        else:
            claimed[target.pk] = row["line"]
            verdict.update(
                action="update",
                guest_id=str(target.pk),
                code=target.code,
                current_group_id=str(target.group_id) if target.group_id else None,
                changes=_changes(cleaned, target),
            )
        planned.append(verdict)
        if index % PROGRESS_EVERY_ROWS == 0:
            on_progress(index)
    _household_ids(planned, existing)
    plan = _Plan(rows=planned)
    for row in planned:
        if row["action"] == "update":
            if row["cleaned"].get("group") and row["group_id"] != row["current_group_id"]:
                row["changes"].append("group")
            if not row["changes"]:
                row["action"] = "unchanged"
        plan.count(row["action"])
    return plan


def _stored(row: dict[str, Any]) -> dict[str, Any]:
    """What the job keeps of a checked row: the cells as uploaded and the verdict (the rest is recomputed)."""
    return {key: row[key] for key in ("line", "values", "action", "errors", "guest_id", "group_id", "changes")}


# --- writing -------------------------------------------------------------------------------------


def _new_guest(event: Event, row: dict[str, Any]) -> Guest:
    cleaned = row["cleaned"]
    guest = Guest(
        tenant_id=event.tenant_id,
        event=event,
        group_id=uuid.UUID(row["group_id"]) if row["group_id"] else None,
        **{field: cleaned[field] for field in GUEST_FIELDS if field in cleaned},
    )
    # The same model validation as guest_bulk_create, without per-row queries (the pk and code are fresh).
    guest.full_clean(exclude=["id", "code", "tenant", "event"], validate_unique=False, validate_constraints=False)
    return guest


def _refuse(row: dict[str, Any], error: ValidationError, plan: _Plan) -> None:
    row["action"] = "refused"
    row["errors"] = [message for messages in error.message_dict.values() for message in messages]
    plan.new -= 1
    plan.refused += 1


def _insert_new(event: Event, plan: _Plan, on_written: Callable[[int], None]) -> None:
    new_rows = [row for row in plan.rows if row["action"] == "new"]
    for start in range(0, len(new_rows), WRITE_CHUNK_ROWS):
        guests = []
        for row in new_rows[start : start + WRITE_CHUNK_ROWS]:
            try:
                guest = _new_guest(event, row)
            except ValidationError as error:
                _refuse(row, error, plan)
                continue
            row["guest_id"] = str(guest.pk)
            guests.append(guest)
        services.guests_insert_with_fresh_codes(guests=guests)
        on_written(len(new_rows[start : start + WRITE_CHUNK_ROWS]))


def _update_matched(event: Event, plan: _Plan, on_written: Callable[[int], None]) -> None:
    written = 0
    for row in plan.rows:
        if row["action"] != "update":
            continue
        cleaned = row["cleaned"]
        values: dict[str, Any] = {field: cleaned[field] for field in row["changes"] if field in GUEST_FIELDS}
        if "group" in row["changes"]:
            values["group_id"] = uuid.UUID(row["group_id"]) if row["group_id"] else None
        if "first_name" in values or "last_name" in values:
            first_name = cleaned.get("first_name", "")
            last_name = cleaned.get("last_name", "")
            values["search_key"] = search_key(first_name=first_name, last_name=last_name, code=row["code"])
        # One single-row update per guest; a guest deleted since the check is simply not there.
        Guest.objects.for_event(event).filter(pk=row["guest_id"]).update(**values)
        written += 1
        if written % PROGRESS_EVERY_ROWS == 0:
            on_written(PROGRESS_EVERY_ROWS)
    on_written(written % PROGRESS_EVERY_ROWS)


# --- the job -------------------------------------------------------------------------------------


def _user_id(acting_user: ActingUser) -> uuid.UUID | None:
    return acting_user.pk if acting_user is not None and acting_user.is_authenticated else None


def _move(import_id: uuid.UUID, from_status: str, to_status: str, **values: Any) -> bool:
    """Compare-and-set on the job's status: True for the one caller that moved it."""
    return GuestImport.objects.filter(pk=import_id, status=from_status).update(status=to_status, **values) == 1


def _progress(import_id: uuid.UUID) -> Callable[[int], None]:
    def report(done: int) -> None:
        GuestImport.objects.filter(pk=import_id).update(processed_rows=done)

    return report


def _fail(job: GuestImport, from_status: str) -> None:
    logger.exception("Guest import %s failed while %s", job.pk, from_status)
    _move(
        job.pk,
        from_status,
        GuestImport.Status.FAILED,
        error=_("The import stopped because of an unexpected error. Upload the file again to retry."),
        finished_at=timezone.now(),
    )


def _run(job: GuestImport, step: str) -> None:
    """Check or apply the job: within this request for a small file, else in a worker task (the same function)."""
    from guests.tasks import guest_import_apply_task, guest_import_check_task  # guests.tasks imports this module

    if job.total_rows <= settings.GUEST_IMPORT_INLINE_MAX_ROWS:
        (guest_import_check if step == "check" else guest_import_apply)(import_id=job.pk)
        return
    task = guest_import_check_task if step == "check" else guest_import_apply_task
    enqueue_on_commit(task, import_id=str(job.pk))


def guest_import_start(*, event: Event, file_name: str, content: bytes, acting_user: ActingUser) -> GuestImport:
    """Read an uploaded guest file and store it as an import job, then check its rows (no guest is written).

    Raises ImportFileInvalid when the file cannot be imported at all.
    """
    parsed = guest_file_parse(file_name=file_name, content=content)
    job = GuestImport.objects.create(
        tenant_id=event.tenant_id,
        event=event,
        created_by_user_id=_user_id(acting_user),
        file_name=file_name[:255],
        columns=parsed.columns,
        ignored_columns=parsed.ignored_columns,
        rows=parsed.rows,
        total_rows=len(parsed.rows),
    )
    audit_log_record(
        action="guest_import.uploaded",
        tenant_id=event.tenant_id,
        event_id=event.pk,
        actor_user=acting_user,
        object_id=job.pk,
        data={"file_name": job.file_name, "rows": job.total_rows},
    )
    _run(job, "check")
    return job


def _plan_results(plan: _Plan, job: GuestImport) -> dict[str, Any]:
    """What a checked or applied job stores: every row's verdict and the counts of the preview."""
    return {
        "rows": [_stored(row) for row in plan.rows],
        "processed_rows": job.total_rows,
        "new_count": plan.new,
        "updated_count": plan.updated,
        "unchanged_count": plan.unchanged,
        "refused_count": plan.refused,
    }


def guest_import_check(*, import_id: uuid.UUID) -> GuestImport | None:
    """Give every row of an uploaded job its verdict (the preview); None if another caller took the job."""
    if not _move(import_id, GuestImport.Status.UPLOADED, GuestImport.Status.CHECKING):
        return None
    job = GuestImport.objects.select_related("event").get(pk=import_id)
    try:
        plan = _plan(job.event, job.rows, _progress(job.pk))
    except Exception:
        _fail(job, GuestImport.Status.CHECKING)
        return None
    _move(
        job.pk,
        GuestImport.Status.CHECKING,
        GuestImport.Status.READY,
        **_plan_results(plan, job),
    )
    return job


def guest_import_confirm(*, job: GuestImport, acting_user: ActingUser) -> bool:
    """Write the checked rows: only the first confirmation of a ready job does (False for any other)."""
    if not _move(
        job.pk,
        GuestImport.Status.READY,
        GuestImport.Status.CONFIRMED,
        confirmed_by_user_id=_user_id(acting_user),
        confirmed_at=timezone.now(),
        processed_rows=0,
    ):
        return False
    audit_log_record(
        action="guest_import.confirmed",
        tenant_id=job.tenant_id,
        event_id=job.event_id,
        actor_user=acting_user,
        object_id=job.pk,
    )
    _run(job, "apply")
    return True


def guest_import_apply(*, import_id: uuid.UUID) -> GuestImport | None:
    """Check the confirmed job's rows again, against the guests as they are now, and write them.

    New guests go in by bulk inserts with fresh codes; matched guests get one
    update each with the cells that changed. Runs once per job (compare-and-set
    from confirmed); None if another caller took it.
    """
    if not _move(import_id, GuestImport.Status.CONFIRMED, GuestImport.Status.APPLYING):
        return None
    job = GuestImport.objects.select_related("event", "tenant").get(pk=import_id)
    written = 0

    def count_written(rows: int) -> None:
        nonlocal written
        written += rows
        _progress(job.pk)(written)

    try:
        plan = _plan(job.event, job.rows, lambda rows: None)
        count_written(plan.unchanged + plan.refused)
        _insert_new(job.event, plan, count_written)
        _update_matched(job.event, plan, count_written)
    except Exception:
        _fail(job, GuestImport.Status.APPLYING)
        return None
    _move(
        job.pk,
        GuestImport.Status.APPLYING,
        GuestImport.Status.APPLIED,
        **_plan_results(plan, job),
        finished_at=timezone.now(),
    )
    audit_log_record(
        action="guest.imported",
        tenant=job.tenant,
        event_id=job.event_id,
        object_id=job.pk,
        data={
            "file_name": job.file_name,
            "new": plan.new,
            "updated": plan.updated,
            "unchanged": plan.unchanged,
            "refused": plan.refused,
        },
    )
    return job


def guest_import_error_report(*, job: GuestImport) -> str:
    """The refused rows as CSV, the file's own columns first, then the line and the reasons.

    Fixed and uploaded again, it imports the corrected rows (the last two columns
    are ignored). Cells a spreadsheet would run as formulas are neutralised.
    """
    output = io.StringIO()
    writer = csv.writer(output)
    writer.writerow([neutralise(column["header"]) for column in job.columns] + [_("line"), _("problem")])
    for row in job.rows:
        if row.get("action") != "refused":
            continue
        cells = [row["values"].get(column["field"], "") for column in job.columns]
        writer.writerow([neutralise(cell) for cell in [*cells, row["line"], " ".join(row["errors"])]])
    # With a BOM, so Excel reads the file as UTF-8.
    return "\ufeff" + output.getvalue()

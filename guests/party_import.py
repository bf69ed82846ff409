"""Moving an invite-only event from the party app: its guest documents (a JSON export) become guests.

The party app kept one MongoDB document per guest:
`{_id, firstName, lastName, token, groupId, expectedGuests, rsvpStatus, numGuests,
dietary, lastLogin, lastAccess, isAdmin}` (and sometimes `email`). This module reads
an export of them (`mongoexport --jsonArray`, or one document per line) and
creates or updates the event's guests:

- the token becomes the guest's code (guests.codes.stored_code), so the code and
  last name the guest knows keep working;
- `groupId` becomes a household (one group id per old group, derived from the
  event and the old id, so a re-run gives the same one);
- status, head count, expected guests and dietary needs are the guest's answer;
  `lastLogin`/`lastAccess` are kept, and never move an existing stamp backwards;
- `isAdmin` documents with an email become teammate invitations
  (tenants.services.invitation_create).

Re-running is safe: each document is matched to the guest it made before, by the
mapping of old `_id` to guest id that the previous run wrote, else by its code and
last name in this event (what the guest logs in with), so nothing is duplicated.
The writes are one row at a time (MongoDB has no multi-document transaction to
lean on): a run that stops half way is completed by running it again.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.core.validators import validate_email
from django.db import IntegrityError, transaction
from django.db.models import F, Value
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from events.models import Event
from eventsaas.fields import MillisecondDateTimeField
from eventsaas.services import audit_log_record
from eventsaas.validators import has_control_character
from guests.codes import CODE_MAX_LENGTH, name_key, normalize_code, search_key, stored_code
from guests.models import Guest
from tenants.models import ActingUser, Invitation, Membership, Role
from tenants.services import invitation_create

MAX_FILE_BYTES = 5 * 1024 * 1024
MAX_DOCUMENTS = 20_000
#: Shorter tokens are too easy to guess to keep as codes.
MIN_TOKEN_LENGTH = 4
#: The most people one member may count for, as on the guest's own form.
MAX_PEOPLE_PER_MEMBER = 50
MAX_DIETARY_LENGTH = 1000
MAPPING_FORMAT = "eventsaas.party-import.mapping"
KNOWN_FIELDS = frozenset(
    {
        "_id",
        "firstName",
        "lastName",
        "token",
        "groupId",
        "expectedGuests",
        "rsvpStatus",
        "numGuests",
        "dietary",
        "lastLogin",
        "lastAccess",
        "isAdmin",
        "email",
    }
)
# Fixed: group ids derived from it must be the same on every run.
GROUP_NAMESPACE = uuid.UUID("6f1d3c52-8f0e-4b8e-9a57-2c1f0b5d7e41")
_QUERY_CHUNK = 500

CREATED, UPDATED, UNCHANGED, REFUSED = "created", "updated", "unchanged", "refused"
INVITED, WILL_INVITE, ALREADY_INVITED, ALREADY_MEMBER = "invited", "will_invite", "already_invited", "already_member"


OUTCOME_LABELS = {
    CREATED: gettext_lazy("created"),
    UPDATED: gettext_lazy("updated"),
    UNCHANGED: gettext_lazy("unchanged"),
    REFUSED: gettext_lazy("refused"),
}
INVITATION_LABELS = {
    INVITED: gettext_lazy("teammate invitation sent"),
    WILL_INVITE: gettext_lazy("will be invited as a teammate"),
    ALREADY_INVITED: gettext_lazy("already invited as a teammate"),
    ALREADY_MEMBER: gettext_lazy("already a teammate"),
    REFUSED: gettext_lazy("teammate invitation refused"),
}


class PartyImportError(ValidationError):
    """The file (or the mapping, or the event) cannot be imported at all; nothing was written."""

    #: the form field the error is about, when a page shows it ("file", "mapping")
    field: str | None = None


class _Refused(Exception):
    """One document cannot be imported; the message is the reason shown to the organizer."""


# --- reading the files ----------------------------------------------------------------------------


def _decoded(raw: bytes, *, what: str) -> str:
    if len(raw) > MAX_FILE_BYTES:
        raise PartyImportError(
            _("The %(what)s is larger than %(limit)s MB.") % {"what": what, "limit": MAX_FILE_BYTES // (1024 * 1024)}
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise PartyImportError(_("The %(what)s is not UTF-8 text.") % {"what": what}) from None


def _json_loads(text: str, *, what: str, line_offset: int = 0) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise PartyImportError(
            _("The %(what)s is not valid JSON (line %(line)s, column %(column)s: %(problem)s).")
            % {"what": what, "line": error.lineno + line_offset, "column": error.colno, "problem": error.msg}
        ) from None
    except RecursionError:
        raise PartyImportError(_("The %(what)s is nested too deeply.") % {"what": what}) from None


def party_documents_parse(raw: bytes) -> list[Any]:
    """The documents of an export: a JSON array (`--jsonArray`) or one JSON document per line (mongoexport's default).

    Raises PartyImportError with the reason for a file that is too large, not
    JSON, or not a list of documents. The documents themselves are checked one by
    one by party_import_run.
    """
    what = _("file")
    text = _decoded(raw, what=what).strip()
    if not text:
        raise PartyImportError(_("The file is empty."))
    if text.startswith("["):
        documents = _json_loads(text, what=what)
    elif text.startswith("{"):
        documents = [
            _json_loads(line, what=what, line_offset=number)
            for number, line in enumerate(text.splitlines())
            if line.strip()
        ]
    else:
        raise PartyImportError(_("The file must hold a JSON array of guest documents (mongoexport --jsonArray)."))
    if not isinstance(documents, list):
        raise PartyImportError(_("The file must hold a JSON array of guest documents (mongoexport --jsonArray)."))
    if not documents:
        raise PartyImportError(_("The file holds no guest documents."))
    if len(documents) > MAX_DOCUMENTS:
        raise PartyImportError(_("At most %(max)s guest documents can be imported at once.") % {"max": MAX_DOCUMENTS})
    return documents


def party_mapping_parse(raw: bytes, *, event: Event) -> dict[str, uuid.UUID]:
    """The previous run's mapping of old `_id` to guest id (as party_mapping_json writes it, or a plain object)."""
    what = _("mapping file")
    text = _decoded(raw, what=what).strip()
    if not text:
        return {}
    data = _json_loads(text, what=what)
    if isinstance(data, dict) and data.get("format") == MAPPING_FORMAT:
        if str(data.get("event_id", "")) != str(event.pk):
            raise PartyImportError(_("This mapping file belongs to another event."))
        data = data.get("guests")
    if not isinstance(data, dict):
        raise PartyImportError(_("The mapping file must be a JSON object of old ids to guest ids."))
    mapping: dict[str, uuid.UUID] = {}
    for old_id, guest_id in data.items():
        try:
            mapping[str(old_id)] = uuid.UUID(str(guest_id))
        except ValueError:
            raise PartyImportError(
                _("The mapping file names %(value)s, which is not a guest id.") % {"value": str(guest_id)[:60]}
            ) from None
    return mapping


def party_mapping_json(*, event: Event, mapping: dict[str, str]) -> str:
    """The mapping file a run writes: old `_id` to guest id, with the event it belongs to."""
    document = {"format": MAPPING_FORMAT, "event_id": str(event.pk), "guests": dict(sorted(mapping.items()))}
    return json.dumps(document, indent=2) + "\n"


# --- one document ---------------------------------------------------------------------------------


def _extended(value: Any, *keys: str) -> Any:
    """The value inside MongoDB extended JSON ({"$oid": ...}, {"$numberLong": ...}), or the value itself."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key in keys:
            return value[key]
    return value


def _old_id(value: Any) -> str:
    value = _extended(value, "$oid", "$numberInt", "$numberLong", "$uuid")
    if isinstance(value, str) and value.strip() and len(value) <= 200:
        value = value.strip()
        # An ObjectId's hex, written {"$oid": ...} or as a plain string, in either case: one key.
        is_object_id = len(value) == 24 and all(ch in "0123456789abcdefABCDEF" for ch in value)
        return value.lower() if is_object_id else value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise _Refused(_("It has no readable _id."))


def _text(document: dict[str, Any], key: str, *, max_length: int) -> str:
    value = document.get(key)
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        value = ", ".join(item.strip() for item in value if item.strip())
    if not isinstance(value, str):
        raise _Refused(_("%(field)s is not text.") % {"field": key})
    value = value.strip()
    if len(value) > max_length:
        raise _Refused(_("%(field)s is longer than %(max)s characters.") % {"field": key, "max": max_length})
    return value


def _integer(document: dict[str, Any], key: str) -> int | None:
    value = _extended(document.get(key), "$numberInt", "$numberLong", "$numberDouble")
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise _Refused(_("%(field)s is not a whole number.") % {"field": key})
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if not isinstance(value, int):
        raise _Refused(_("%(field)s is not a whole number.") % {"field": key})
    if not 0 <= value <= MAX_PEOPLE_PER_MEMBER:
        raise _Refused(_("%(field)s must be between 0 and %(max)s.") % {"field": key, "max": MAX_PEOPLE_PER_MEMBER})
    return value


def _parse_datetime(value: Any) -> datetime:
    value = _extended(value, "$date")
    value = _extended(value, "$numberLong")
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        value = int(value.strip())
    if isinstance(value, int) and not isinstance(value, bool):
        # The party app's dates are JavaScript dates: milliseconds since 1970.
        return datetime.fromtimestamp(value / 1000, tz=UTC)
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value.strip())
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise ValueError(value)


def _timestamp(document: dict[str, Any], key: str, *, now: datetime) -> datetime | None:
    value = document.get(key)
    if value is None or value == "":
        return None
    try:
        when = _parse_datetime(value)
    except (ValueError, OverflowError, OSError):
        raise _Refused(_('%(field)s is not a date (use an ISO date or {"$date": ...}).') % {"field": key}) from None
    if when > now + timedelta(days=1):
        raise _Refused(_("%(field)s is in the future.") % {"field": key})
    # Stored to the millisecond (eventsaas.fields): compared as stored, a re-run finds nothing changed.
    return when.astimezone(UTC).replace(microsecond=when.microsecond // 1000 * 1000)


@dataclass
class PartyGuest:
    """A document that can be imported, in this product's terms."""

    old_id: str
    first_name: str
    last_name: str
    code: str
    group_key: str | None
    expected_guests: int
    status: str
    num_guests: int
    dietary: str | None  # None: the document does not say
    email: str | None  # None: the document does not say
    last_login_at: datetime | None
    last_access_at: datetime | None
    is_admin: bool
    notes: list[str] = field(default_factory=list)

    @property
    def answered_at(self) -> datetime | None:
        """When the answer was given at the latest: the party app kept no answer time, only its stamps."""
        stamps = [s for s in (self.last_login_at, self.last_access_at) if s is not None]
        return max(stamps) if stamps and self.status != Guest.Status.PENDING else None


def _party_code(document: dict[str, Any], notes: list[str]) -> str:
    """The document's token as the guest's code: kept as typed, or its stand-in when longer than a code."""
    token = _extended(document.get("token"), "$numberInt", "$numberLong")
    if isinstance(token, int) and not isinstance(token, bool):
        token = str(token)
    if not isinstance(token, str) or not normalize_code(token):
        raise _Refused(_("It has no token."))
    if len(normalize_code(token)) < MIN_TOKEN_LENGTH:
        raise _Refused(
            _("Its token has fewer than %(min)s letters or digits: too easy to guess to keep as a code.")
            % {"min": MIN_TOKEN_LENGTH}
        )
    if len(normalize_code(token)) > 200:
        raise _Refused(_("Its token is too long."))
    code = stored_code(token)
    if len(normalize_code(token)) > CODE_MAX_LENGTH:
        notes.append(
            _("Its token is longer than %(max)s characters: it keeps working, and %(code)s works too.")
            % {"max": CODE_MAX_LENGTH, "code": code}
        )
    return code


def _party_counts(document: dict[str, Any], status: str, notes: list[str]) -> tuple[int, int]:
    """(expected_guests, num_guests): a coming guest counts at least one, a guest not coming counts nobody."""
    expected = _integer(document, "expectedGuests")
    counted = _integer(document, "numGuests")
    if expected == 0:
        raise _Refused(_("expectedGuests must be at least 1."))
    if status == Guest.Status.COMING:
        if not counted:
            counted = expected or 1
            notes.append(
                _("Coming without a head count: counted as %(count)s (its expected guests).") % {"count": counted}
            )
        num_guests = counted
    else:
        if counted:
            notes.append(_("Not coming, so its numGuests (%(count)s) counts nobody.") % {"count": counted})
        num_guests = 0
    return expected or max(num_guests, 1), num_guests


def _party_guest(document: dict[str, Any], *, old_id: str, now: datetime) -> PartyGuest:
    notes: list[str] = []
    first_name = _text(document, "firstName", max_length=100)
    last_name = _text(document, "lastName", max_length=100)
    if not first_name:
        raise _Refused(_("It has no first name."))
    if not last_name:
        raise _Refused(_("It has no last name (guests log in with their code and last name)."))
    for key, value in (("firstName", first_name), ("lastName", last_name)):
        # Refused, not cleaned: the organizer fixes the name in the party app's export and runs the import again.
        if has_control_character(value):
            raise _Refused(_("%(field)s contains a tab, a line break or another control character.") % {"field": key})
    code = _party_code(document, notes)
    group = document.get("groupId")
    group_key = None if group is None or group == "" else _group_key(group)

    status = document.get("rsvpStatus") or Guest.Status.PENDING
    if status not in Guest.Status.values:
        raise _Refused(
            _("Its rsvpStatus %(status)s is not pending, coming or declined.") % {"status": json.dumps(status)[:40]}
        )
    expected_guests, num_guests = _party_counts(document, status, notes)

    dietary = _text(document, "dietary", max_length=MAX_DIETARY_LENGTH) if "dietary" in document else None
    email = None
    if document.get("email") not in (None, ""):
        email = _text(document, "email", max_length=254).lower()
        try:
            validate_email(email)
        except ValidationError:
            raise _Refused(_("Its email %(email)s is not an email address.") % {"email": email[:60]}) from None
    is_admin = document.get("isAdmin", False)
    if is_admin is None:
        is_admin = False
    if not isinstance(is_admin, bool):
        raise _Refused(_("isAdmin must be true or false."))
    return PartyGuest(
        old_id=old_id,
        first_name=first_name,
        last_name=last_name,
        code=code,
        group_key=group_key,
        expected_guests=expected_guests,
        status=status,
        num_guests=num_guests,
        dietary=dietary,
        email=email,
        last_login_at=_timestamp(document, "lastLogin", now=now),
        last_access_at=_timestamp(document, "lastAccess", now=now),
        is_admin=is_admin,
        notes=notes,
    )


def _group_key(value: Any) -> str:
    value = _extended(value, "$oid", "$numberInt", "$numberLong", "$uuid")
    if isinstance(value, bool) or not isinstance(value, str | int) or len(str(value)) > 200:
        raise _Refused(_("Its groupId is not an id."))
    return str(value).strip()


# --- the report -----------------------------------------------------------------------------------


@dataclass
class PartyImportRow:
    """What happened to one document (position counts from 1, in the file's order)."""

    position: int
    old_id: str
    name: str
    outcome: str
    reason: str = ""
    changed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    guest_id: str = ""
    code: str = ""
    invitation: str = ""
    invitation_reason: str = ""

    @property
    def outcome_label(self) -> str:
        return str(OUTCOME_LABELS[self.outcome])

    @property
    def invitation_label(self) -> str:
        return str(INVITATION_LABELS[self.invitation]) if self.invitation else ""


@dataclass
class PartyImportReport:
    dry_run: bool
    rows: list[PartyImportRow] = field(default_factory=list)
    #: old _id -> guest id, this run's and the previous mapping's (what the mapping file holds)
    mapping: dict[str, str] = field(default_factory=dict)
    #: fields of the documents that this import does not keep
    ignored_fields: list[str] = field(default_factory=list)

    def count(self, outcome: str) -> int:
        return sum(1 for row in self.rows if row.outcome == outcome)

    @property
    def counts(self) -> dict[str, int]:
        return {outcome: self.count(outcome) for outcome in (CREATED, UPDATED, UNCHANGED, REFUSED)}

    @property
    def invitation_counts(self) -> dict[str, int]:
        counted = Counter(row.invitation for row in self.rows if row.invitation)
        return dict(counted)

    def summary(self) -> str:
        counts = self.counts
        text = _("%(created)s created, %(updated)s updated, %(unchanged)s unchanged, %(refused)s refused.") % counts
        invitations = self.invitation_counts
        if invitations:
            text += " " + _("Teammates: %(list)s.") % {
                "list": ", ".join(f"{n} {INVITATION_LABELS[kind]}" for kind, n in sorted(invitations.items()))
            }
        return text

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PartyImportReport:
        rows = [PartyImportRow(**row) for row in data.get("rows", [])]
        return cls(
            dry_run=data["dry_run"],
            rows=rows,
            mapping=dict(data.get("mapping", {})),
            ignored_fields=list(data.get("ignored_fields", [])),
        )


# --- the import -----------------------------------------------------------------------------------


@dataclass
class _Plan:
    """One importable document and what it will do."""

    row: PartyImportRow
    party: PartyGuest
    target: Guest | None = None
    values: dict[str, Any] = field(default_factory=dict)


def _chunks(values: list[Any]) -> Iterable[list[Any]]:
    for start in range(0, len(values), _QUERY_CHUNK):
        yield values[start : start + _QUERY_CHUNK]


def _group_id(event: Event, group_key: str | None) -> uuid.UUID | None:
    return uuid.uuid5(GROUP_NAMESPACE, f"{event.pk}/{group_key}") if group_key else None


def _later(stored: datetime | None, imported: datetime | None) -> datetime | None:
    if stored is None or imported is None:
        return stored or imported
    return max(stored, imported)


def _answer_values(party: PartyGuest, guest_id: uuid.UUID) -> dict[str, Any]:
    answered = party.status != Guest.Status.PENDING
    values: dict[str, Any] = {
        "status": party.status,
        "num_guests": party.num_guests,
        "answered_by_kind": Guest.AnsweredBy.SELF if answered else "",
        "answered_by_guest_id": guest_id if answered else None,
        "answered_by_user_id": None,
        "rsvp_at": party.answered_at,
    }
    if party.dietary is not None:
        values["dietary"] = party.dietary
    return values


def _new_guest_values(event: Event, party: PartyGuest, guest_id: uuid.UUID) -> dict[str, Any]:
    values: dict[str, Any] = {
        "first_name": party.first_name,
        "last_name": party.last_name,
        "email": party.email or "",
        "code": party.code,
        "group_id": _group_id(event, party.group_key),
        "expected_guests": party.expected_guests,
        "last_login_at": party.last_login_at,
        "last_access_at": party.last_access_at,
        **_answer_values(party, guest_id),
    }
    values["search_key"] = search_key(first_name=party.first_name, last_name=party.last_name, code=party.code)
    return values


def _changed_values(event: Event, party: PartyGuest, guest: Guest) -> tuple[dict[str, Any], list[str]]:
    """What the document changes on `guest`, and notes; an answer given here after the file's stays."""
    notes: list[str] = []
    wanted: dict[str, Any] = {
        "first_name": party.first_name,
        "last_name": party.last_name,
        "code": party.code,
        "group_id": _group_id(event, party.group_key),
        "expected_guests": party.expected_guests,
        "last_login_at": _later(guest.last_login_at, party.last_login_at),
        "last_access_at": _later(guest.last_access_at, party.last_access_at),
    }
    if party.email:
        wanted["email"] = party.email
    answer = _answer_values(party, guest.pk)
    answered_here_later = guest.rsvp_at is not None and (party.answered_at is None or guest.rsvp_at > party.answered_at)
    if not answered_here_later:
        wanted.update(answer)
    elif any(getattr(guest, name) != answer[name] for name in ("status", "num_guests", "dietary") if name in answer):
        notes.append(_("The answer given here later than the file's was kept."))
    changes = {name: value for name, value in wanted.items() if getattr(guest, name) != value}
    if {"first_name", "last_name", "code"} & set(changes):
        changes["search_key"] = search_key(first_name=party.first_name, last_name=party.last_name, code=party.code)
    return changes, notes


def _existing_guests(event: Event, plans: list[_Plan], previous_mapping: dict[str, uuid.UUID]) -> None:
    """Match each plan to the guest an earlier run made: by the mapping, else by code and last name in this event."""
    mapped_ids = [previous_mapping[p.party.old_id] for p in plans if p.party.old_id in previous_mapping]
    codes = [p.party.code for p in plans]
    by_pk: dict[uuid.UUID, Guest] = {}
    by_code: dict[str, Guest] = {}
    for chunk in _chunks(mapped_ids):
        by_pk.update((g.pk, g) for g in Guest.objects.for_event(event).filter(pk__in=chunk))
    for chunk in _chunks(codes):
        for guest in Guest.objects.for_event(event).filter(code__in=chunk):
            by_code[guest.code] = guest
            by_pk.setdefault(guest.pk, guest)
    # Codes are unique across the whole installation; another event's guest may hold one.
    taken_elsewhere: set[str] = set()
    for chunk in _chunks(codes):
        taken_elsewhere.update(
            Guest.objects.filter(code__in=chunk).exclude(event_id=event.pk).values_list("code", flat=True)
        )

    claimed: dict[uuid.UUID, str] = {}
    for plan in plans:
        party, row = plan.party, plan.row
        mapped = previous_mapping.get(party.old_id)
        target = by_pk.get(mapped) if mapped else None
        if mapped and target is None:
            row.notes.append(_("The guest of the previous mapping is no longer in this event."))
        if target is None and (holder := by_code.get(party.code)) is not None:
            # Without the mapping, a guest is the same when the code and last name agree, as at login.
            if name_key(holder.last_name) == name_key(party.last_name):
                target = holder
        if party.code in taken_elsewhere:
            _refuse(row, _("Its code %(code)s is already used by a guest of another event.") % {"code": party.code})
            continue
        holder = by_code.get(party.code)
        if holder is not None and (target is None or holder.pk != target.pk):
            _refuse(
                row,
                _("Its code %(code)s is already used by %(name)s in this event.")
                % {"code": party.code, "name": holder.full_name},
            )
            continue
        if target is not None:
            if target.pk in claimed:
                _refuse(
                    row,
                    _("It matches the same guest as the document %(other)s.") % {"other": claimed[target.pk]},
                )
                continue
            claimed[target.pk] = party.old_id
        plan.target = target


def _refuse(row: PartyImportRow, reason: str) -> None:
    row.outcome, row.reason = REFUSED, reason


def _plans(documents: list[Any], *, now: datetime) -> tuple[list[PartyImportRow], list[_Plan], list[str]]:
    """Every document checked: a row for each, a plan for the importable ones, and the fields not kept."""
    rows: list[PartyImportRow] = []
    plans: list[_Plan] = []
    ignored: set[str] = set()
    old_ids: list[str | None] = []
    for position, document in enumerate(documents, start=1):
        row = PartyImportRow(position=position, old_id="", name="", outcome=REFUSED)
        rows.append(row)
        if not isinstance(document, dict):
            row.reason = _("It is not a document (a JSON object).")
            old_ids.append(None)
            continue
        ignored.update(str(key)[:60] for key in document if key not in KNOWN_FIELDS)
        name = " ".join(str(document.get(key) or "") for key in ("firstName", "lastName")).strip()
        row.name = name[:201]
        try:
            row.old_id = _old_id(document.get("_id"))
        except _Refused as refused:
            row.reason = str(refused)
            old_ids.append(None)
            continue
        old_ids.append(row.old_id)
        try:
            party = _party_guest(document, old_id=row.old_id, now=now)
        except _Refused as refused:
            row.reason = str(refused)
            continue
        row.outcome, row.code, row.notes = "", party.code, list(party.notes)
        plans.append(_Plan(row=row, party=party))

    repeated_ids = {old_id for old_id, n in Counter(i for i in old_ids if i is not None).items() if n > 1}
    for row in rows:
        if row.old_id in repeated_ids:
            _refuse(row, _("Its _id appears more than once in the file."))
    repeated_codes = {code for code, n in Counter(p.party.code for p in plans if not p.row.outcome).items() if n > 1}
    for plan in plans:
        if not plan.row.outcome and plan.party.code in repeated_codes:
            _refuse(plan.row, _("Its token is also the token of another document in the file."))
    return rows, [p for p in plans if not p.row.outcome], sorted(ignored)


def _insert(guest: Guest, row: PartyImportRow) -> bool:
    try:
        # A savepoint, so PostgreSQL can go on after a code taken since it was checked.
        with transaction.atomic():
            guest.save(force_insert=True)
    except IntegrityError:
        _refuse(row, _("Its code %(code)s was taken while importing.") % {"code": guest.code})
        row.guest_id = ""
        return False
    return True


def _update(event: Event, plan: _Plan) -> bool:
    """One compare-and-set: the row is written only if it is still as it was read."""
    guest = plan.target
    assert guest is not None
    as_read = {
        name: getattr(guest, name)
        for name in (
            "status",
            "num_guests",
            "answered_by_kind",
            "rsvp_at",
            "group_id",
            "code",
            "last_name",
            "first_name",
        )
    }
    values: dict[str, Any] = dict(plan.values)
    for stamp, imported in (("last_login_at", plan.party.last_login_at), ("last_access_at", plan.party.last_access_at)):
        if stamp in values and imported is not None:
            # The later of the stored and the imported time, decided by the database: a login recorded
            # while this runs is not overwritten with an older time.
            value = Value(imported, output_field=MillisecondDateTimeField())
            values[stamp] = Greatest(Coalesce(F(stamp), value), value)
    try:
        with transaction.atomic():
            updated = Guest.objects.for_event(event).filter(pk=guest.pk, **as_read).update(**values)
    except IntegrityError:
        _refuse(plan.row, _("Its code %(code)s was taken while importing.") % {"code": plan.party.code})
        return False
    if not updated:
        _refuse(plan.row, _("The guest changed while importing; run the import again."))
        return False
    return True


def _write(event: Event, plans: list[_Plan]) -> None:
    for plan in plans:
        if plan.row.outcome == CREATED:
            guest_id = uuid.UUID(plan.row.guest_id)
            guest = Guest(id=guest_id, tenant_id=event.tenant_id, event=event, **plan.values)
            _insert(guest, plan.row)
        elif plan.row.outcome == UPDATED:
            _update(event, plan)


def _invite(
    *,
    event: Event,
    plans: list[_Plan],
    acting_membership: Membership | None,
    accept_url_builder: Callable[[Invitation], str] | None,
    dry_run: bool,
) -> None:
    """Teammate invitations for the party app's admins (owners invite, as on the team page)."""
    now = timezone.now()
    for plan in plans:
        party, row = plan.party, plan.row
        if not party.is_admin or row.outcome == REFUSED:
            continue
        if not party.email:
            row.invitation, row.invitation_reason = REFUSED, _("An admin without an email cannot be invited.")
        elif acting_membership is None or not acting_membership.can_manage_team or accept_url_builder is None:
            row.invitation, row.invitation_reason = REFUSED, _("Only an owner can invite teammates.")
        elif Membership.objects.for_tenant(event.tenant).filter(user__email__iexact=party.email).exists():
            row.invitation = ALREADY_MEMBER
        elif (
            Invitation.objects.for_tenant(event.tenant)
            .filter(email=party.email, accepted_at__isnull=True, expires_at__gt=now)
            .exists()
        ):
            row.invitation = ALREADY_INVITED
        elif dry_run:
            row.invitation = WILL_INVITE
        else:
            try:
                invitation_create(
                    tenant=event.tenant,
                    email=party.email,
                    role=Role.ADMIN,
                    acting_membership=acting_membership,
                    accept_url_builder=accept_url_builder,
                )
            except (ValidationError, PermissionDenied) as error:
                row.invitation = REFUSED
                row.invitation_reason = " ".join(error.messages if isinstance(error, ValidationError) else [str(error)])
            else:
                row.invitation = INVITED


def party_import_run(
    *,
    event: Event,
    documents: list[Any],
    previous_mapping: dict[str, uuid.UUID],
    acting_user: ActingUser,
    acting_membership: Membership | None,
    accept_url_builder: Callable[[Invitation], str] | None,
    dry_run: bool,
) -> PartyImportReport:
    """Import the party app's guest documents (party_documents_parse) into an invite-only event.

    Every document gets a row in the report: created, updated (with the fields),
    unchanged, or refused with the reason. A dry run decides the same and
    writes nothing. Writes are one row each (an insert, or a compare-and-set
    update), so a run cut short leaves whole guests and a re-run completes it;
    one audit entry records the run.
    """
    if event.is_ticketed:
        raise PartyImportError(_("Guests are imported into invite-only events; this event sells tickets."))
    if event.is_archived:
        raise PartyImportError(_("This event is archived."))
    now = timezone.now()
    rows, plans, ignored = _plans(documents, now=now)
    _existing_guests(event, plans, previous_mapping)
    plans = [p for p in plans if p.row.outcome != REFUSED]
    for plan in plans:
        row = plan.row
        if plan.target is None:
            guest_id = uuid.uuid4()
            row.outcome, row.guest_id = CREATED, str(guest_id)
            plan.values = _new_guest_values(event, plan.party, guest_id)
            continue
        row.guest_id = str(plan.target.pk)
        plan.values, notes = _changed_values(event, plan.party, plan.target)
        row.notes.extend(notes)
        row.changed = sorted(name for name in plan.values if name != "search_key")
        row.outcome = UPDATED if plan.values else UNCHANGED
    if not dry_run:
        _write(event, plans)
    _invite(
        event=event,
        plans=plans,
        acting_membership=acting_membership,
        accept_url_builder=accept_url_builder,
        dry_run=dry_run,
    )
    mapping = {old_id: str(guest_id) for old_id, guest_id in previous_mapping.items()}
    for row in rows:
        if dry_run and row.outcome == CREATED:
            row.guest_id = ""  # chosen for the plan only: the real run picks its own
        if row.outcome != REFUSED and row.guest_id:
            mapping[row.old_id] = row.guest_id
    report = PartyImportReport(dry_run=dry_run, rows=rows, mapping=mapping, ignored_fields=ignored)
    if not dry_run:
        audit_log_record(
            action="guest.party_imported",
            tenant=event.tenant,
            event_id=event.pk,
            actor_user=acting_user,
            data={
                **report.counts,
                "created_guests": [r.guest_id for r in rows if r.outcome == CREATED],
                "updated_guests": [r.guest_id for r in rows if r.outcome == UPDATED],
            },
        )
    return report

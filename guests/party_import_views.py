"""The organizer's page for moving from the party app: upload, preview (a dry run), confirm, download the mapping.

The uploaded files wait in the session between the preview and the confirmation
(compressed; sessions are shared by every web process, a local cache is not),
so the confirmation imports exactly what was previewed. The last result and its
mapping stay in the session for the download.
"""

import base64
import uuid
import zlib

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from events.selectors import event_get
from guests.forms import PartyImportForm
from guests.party_import import (
    PartyImportError,
    PartyImportReport,
    party_documents_parse,
    party_import_run,
    party_mapping_json,
    party_mapping_parse,
)

#: Rows shown (and kept for the result page); the command prints every row.
ROWS_SHOWN = 2000


def _pending_key(event) -> str:
    return f"party_import_pending:{event.pk}"


def _result_key(event) -> str:
    return f"party_import_result:{event.pk}"


def _pack(raw: bytes | None) -> str:
    return base64.b64encode(zlib.compress(raw)).decode() if raw else ""


def _unpack(packed: str) -> bytes | None:
    return zlib.decompress(base64.b64decode(packed)) if packed else None


def _back(request, event):
    return redirect("guests:import_party", tenant_slug=request.tenant.slug, event_id=event.pk)


def _parsed(event, *, raw_documents: bytes, raw_mapping: bytes | None) -> tuple[list, dict]:
    """The documents and the earlier mapping; PartyImportError carries the field it is about (`.field`)."""
    try:
        documents = party_documents_parse(raw_documents)
    except PartyImportError as error:
        error.field = "file"
        raise
    try:
        previous = party_mapping_parse(raw_mapping, event=event) if raw_mapping else {}
    except PartyImportError as error:
        error.field = "mapping"
        raise
    return documents, previous


def _run(request, event, *, raw_documents: bytes, raw_mapping: bytes | None, dry_run: bool) -> PartyImportReport:
    documents, previous = _parsed(event, raw_documents=raw_documents, raw_mapping=raw_mapping)
    return party_import_run(
        event=event,
        documents=documents,
        previous_mapping=previous,
        acting_user=request.user,
        acting_membership=request.membership,
        accept_url_builder=lambda invitation: request.build_absolute_uri(
            reverse("tenants:invitation_accept", args=[invitation.token])
        ),
        dry_run=dry_run,
    )


def _context(event, form, *, report=None, preview_token="", has_mapping=False):
    return {
        "event": event,
        "form": form,
        "report": report,
        "rows": report.rows[:ROWS_SHOWN] if report else [],
        "rows_hidden": max(0, len(report.rows) - ROWS_SHOWN) if report else 0,
        "preview_token": preview_token,
        "has_mapping": has_mapping,
    }


@require_http_methods(["GET", "POST"])
def party_import(request, event_id):
    """GET: the upload form (and the last result). POST: the preview, a dry run that writes nothing."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    form = PartyImportForm(request.POST, request.FILES) if request.method == "POST" else PartyImportForm()
    if request.method == "GET":
        stored = request.session.get(_result_key(event))
        report = PartyImportReport.from_dict(stored["report"]) if stored else None
        return render(
            request, "guests/party_import.html", _context(event, form, report=report, has_mapping=bool(stored))
        )
    if form.is_valid():
        raw_documents, raw_mapping = form.cleaned_data["file"], form.cleaned_data["mapping"]
        try:
            report = _run(request, event, raw_documents=raw_documents, raw_mapping=raw_mapping, dry_run=True)
        except PartyImportError as error:
            form.add_error(error.field, error)
        else:
            token = uuid.uuid4().hex
            request.session[_pending_key(event)] = {
                "token": token,
                "documents": _pack(raw_documents),
                "mapping": _pack(raw_mapping),
            }
            return render(
                request, "guests/party_import.html", _context(event, form, report=report, preview_token=token)
            )
    return render(request, "guests/party_import.html", _context(event, form), status=400)


@require_POST
def party_import_confirm(request, event_id):
    """Import what the preview showed; the result and the new mapping wait on the page."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    pending = request.session.get(_pending_key(event))
    if not pending or pending.get("token") != request.POST.get("token"):
        messages.error(request, _("Nothing to import: upload the file again and check the preview."))
        return _back(request, event)
    try:
        report = _run(
            request,
            event,
            raw_documents=_unpack(pending["documents"]) or b"",
            raw_mapping=_unpack(pending["mapping"]),
            dry_run=False,
        )
    except (PartyImportError, ValidationError) as error:
        messages.error(request, " ".join(error.messages))
        return _back(request, event)
    finally:
        request.session.pop(_pending_key(event), None)
    stored = report.as_dict()
    stored["rows"] = stored["rows"][:ROWS_SHOWN]
    request.session[_result_key(event)] = {
        "report": stored,
        "mapping": party_mapping_json(event=event, mapping=report.mapping),
    }
    messages.success(request, report.summary())
    return _back(request, event)


def party_import_mapping(request, event_id):
    """The mapping file of the last import from this page, to keep for the next one."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    stored = request.session.get(_result_key(event))
    if not stored:
        messages.error(request, _("No mapping to download yet: import the guests first."))
        return _back(request, event)
    response = HttpResponse(stored["mapping"], content_type="application/json")
    response["Content-Disposition"] = f'attachment; filename="party-mapping-{event.pk}.json"'
    return response

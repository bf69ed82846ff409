import uuid

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.utils.http import content_disposition_header
from django.utils.translation import gettext as _
from django.utils.translation import ngettext
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from events.selectors import event_get
from eventsaas.forms import add_service_errors
from eventsaas.spreadsheets import event_spreadsheet_response, file_format_or_404
from guests import exports, imports, notifications, selectors, services
from guests.activity import track_activity
from guests.filters import GuestFilterSet
from guests.forms import GroupConnectForm, GuestForm, GuestImportForm
from guests.models import GuestActivity
from tenants.services import OrganizationNotVerified


def _back_to_list(request, event):
    return redirect("guests:list", tenant_slug=request.tenant.slug, event_id=event.pk)


def _list_filters(request) -> tuple[GuestFilterSet, selectors.GuestFilters]:
    """The guest list's filters from the query string: the page's and its export's, so both list the same."""
    # The API's filters (GuestFilterSet); a bad value shows its error and everyone, rather than a 400.
    filterset = GuestFilterSet(request.GET or None)
    return filterset, filterset.guest_filters() if filterset.is_valid() else selectors.GuestFilters()


def guest_list(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    filterset, filters = _list_filters(request)
    guests = selectors.guest_list(event=event, filters=filters)
    page = Paginator(guests, settings.GUEST_LIST_PAGE_SIZE).get_page(request.GET.get("page"))
    groups = selectors.groups_of(event=event, group_ids=[g.group_id for g in page if g.group_id])
    for guest in page:
        guest.other_members = [m for m in groups.get(guest.group_id, []) if m.pk != guest.pk]
    query = request.GET.copy()
    query.pop("page", None)
    context = {"event": event, "page": page, "filter_form": filterset.form, "query": query.urlencode()}
    return render(request, "guests/guest_list.html", context)


# --- Exports ----------------------------------------------------------------------------------------
# Every member who can open a page can download it. Personal codes log in as their guest, and a file
# travels further than a page: only the roles that may send them (invitations, new codes) get them in
# a file. Viewers and door staff download the same list without the code column.


@require_safe
def guest_export(request, event_id, file_format):
    """The guest list as CSV or Excel, filtered as the page is (its query string)."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    chosen = file_format_or_404(file_format)
    _, filters = _list_filters(request)
    sheet = exports.guest_sheet(event=event, filters=filters, include_codes=request.membership.can_edit)
    return event_spreadsheet_response(sheet, event=event, what="guests", file_format=chosen)


@require_safe
def dietary_export(request, event_id, file_format):
    event = event_get(tenant=request.tenant, event_id=event_id)
    chosen = file_format_or_404(file_format)
    return event_spreadsheet_response(
        exports.dietary_sheet(event=event), event=event, what="dietary", file_format=chosen
    )


@require_safe
def question_export(request, event_id, file_format):
    event = event_get(tenant=request.tenant, event_id=event_id)
    chosen = file_format_or_404(file_format)
    return event_spreadsheet_response(
        exports.question_sheet(event=event), event=event, what="questions", file_format=chosen
    )


def _apply(form, call):
    try:
        return call()
    except ValidationError as error:
        add_service_errors(form, error)
    return None


@require_http_methods(["GET", "POST"])
def guest_create(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    form = GuestForm(request.POST if request.method == "POST" else None)
    if request.method == "POST" and form.is_valid():
        guest = _apply(form, lambda: services.guest_create(event=event, acting_user=request.user, **form.cleaned_data))
        if guest is not None:
            messages.success(
                request, _("%(name)s added with code %(code)s.") % {"name": guest.full_name, "code": guest.code}
            )
            if "add_another" in request.POST:
                return redirect("guests:create", tenant_slug=request.tenant.slug, event_id=event.pk)
            return _back_to_list(request, event)
    return render(request, "guests/guest_form.html", {"event": event, "form": form}, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def guest_detail(request, event_id, guest_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    guest = selectors.guest_get(event=event, guest_id=guest_id)
    form = GuestForm(request.POST if request.method == "POST" else None, instance=guest)
    if request.method == "POST" and form.is_valid():
        saved = _apply(form, lambda: services.guest_update(guest=guest, acting_user=request.user, **form.cleaned_data))
        if saved is not None:
            messages.success(request, _("Guest saved."))
            return redirect("guests:detail", tenant_slug=request.tenant.slug, event_id=event.pk, guest_id=guest.pk)
    if request.method == "GET":
        track_activity(guest=guest, kind=GuestActivity.Kind.ORGANIZER_VIEW, request=request, actor_user=request.user)
    context = {
        "event": event,
        "guest": guest,
        "form": form,
        "members": selectors.group_members(guest=guest),
        "answered_by": selectors.answered_by_name(guest=guest),
        "answer_history": selectors.guest_answer_history(guest=guest),
        "timeline": selectors.guest_activity_timeline(guest=guest),
        "sent_messages": selectors.guest_messages(guest=guest),
        "rsvp_link": request.build_absolute_uri(f"/rsvp/?code={guest.code}"),
    }
    return render(request, "guests/guest_detail.html", context, status=400 if form.errors else 200)


@require_http_methods(["GET", "POST"])
def guest_delete(request, event_id, guest_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    guest = selectors.guest_get(event=event, guest_id=guest_id)
    if request.method == "POST":
        services.guest_delete(guest=guest, acting_user=request.user)
        messages.success(request, _("%(name)s was removed from the guest list.") % {"name": guest.full_name})
        return _back_to_list(request, event)
    return render(request, "guests/guest_confirm_delete.html", {"event": event, "guest": guest})


@require_POST
def guest_code_regenerate(request, event_id, guest_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    guest = selectors.guest_get(event=event, guest_id=guest_id)
    services.guest_code_regenerate(guest=guest, acting_user=request.user)
    messages.success(
        request,
        _("New code for %(name)s: %(code)s. The old code no longer works.")
        % {"name": guest.full_name, "code": guest.code},
    )
    return redirect("guests:detail", tenant_slug=request.tenant.slug, event_id=event.pk, guest_id=guest.pk)


@require_POST
def guest_group_connect(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    form = GroupConnectForm(request.POST)
    if form.is_valid():
        try:
            group = services.guest_group_connect(
                event=event, guest_ids=form.cleaned_data["guests"], acting_user=request.user
            )
        except ValueError:
            messages.error(request, _("Choose at least two guests of this event."))
        else:
            messages.success(request, _("%(count)s guests are now one group.") % {"count": group.size})
    else:
        messages.error(request, " ".join(form.errors.get("guests", [_("Choose at least two guests.")])))
    return _back_to_list(request, event)


@require_POST
def guest_group_leave(request, event_id, guest_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    guest = selectors.guest_get(event=event, guest_id=guest_id)
    services.guest_group_leave(guest=guest, acting_user=request.user)
    messages.success(request, _("%(name)s is no longer in a group.") % {"name": guest.full_name})
    # Removing a member from another guest's page returns there (an id, never a URL: no open redirect).
    return_to = request.POST.get("return_to", "")
    back_to = return_to if _is_uuid(return_to) else guest.pk
    return redirect("guests:detail", tenant_slug=request.tenant.slug, event_id=event.pk, guest_id=back_to)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def dietary_report(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    return render(
        request, "guests/dietary_report.html", {"event": event, "report": selectors.dietary_report(event=event)}
    )


def question_report(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    return render(
        request, "guests/question_report.html", {"event": event, "report": selectors.question_report(event=event)}
    )


def activity(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    sort = request.GET.get("sort", "last_access")
    never = request.GET.get("never") == "1"
    page = Paginator(selectors.guest_activity(event=event, sort=sort, never_opened_only=never), 100).get_page(
        request.GET.get("page")
    )
    context = {
        "event": event,
        "page": page,
        "sort": sort,
        "never": never,
        "sorts": selectors.ACTIVITY_SORTS,
        "recent": selectors.event_recent_activity(event=event),
    }
    return render(request, "guests/activity.html", context)


def _invitations_queued_message(request, queued) -> None:
    messages.success(
        request,
        ngettext("%(count)s invitation is on its way.", "%(count)s invitations are on their way.", queued.queued)
        % {"count": queued.queued},
    )
    if queued.without_email:
        messages.warning(
            request,
            ngettext(
                "%(count)s guest has no email and was skipped.",
                "%(count)s guests have no email and were skipped.",
                queued.without_email,
            )
            % {"count": queued.without_email},
        )


@require_POST
def guest_invite(request, event_id, guest_id):
    """Send (or send again) the guest's invitation: each click is a new send."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    guest = selectors.guest_get(event=event, guest_id=guest_id)
    try:
        queued = notifications.guest_invitations_send(event=event, guests=[guest], acting_user=request.user)
    except OrganizationNotVerified as refusal:
        messages.error(request, str(refusal))
    else:
        _invitations_queued_message(request, queued)
    return redirect("guests:detail", tenant_slug=request.tenant.slug, event_id=event.pk, guest_id=guest.pk)


@require_POST
def guest_invite_many(request, event_id):
    """Invite the selected guests, or (not_yet_invited=1) everyone with an email not invited yet."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    first_only = bool(request.POST.get("not_yet_invited"))
    if first_only:
        guests = list(notifications.guests_not_yet_invited(event=event))
    else:
        ids = [value for value in request.POST.getlist("guests") if _is_uuid(value)]
        guests = selectors.guests_of_event(event=event, guest_ids=ids)
        if not guests:
            messages.error(request, _("Choose at least one guest."))
            return _back_to_list(request, event)
    try:
        queued = notifications.guest_invitations_send(
            event=event, guests=guests, acting_user=request.user, first_only=first_only
        )
    except OrganizationNotVerified as refusal:
        messages.error(request, str(refusal))
    else:
        _invitations_queued_message(request, queued)
    return _back_to_list(request, event)


def message_log(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    page = Paginator(selectors.event_messages(event=event), 100).get_page(request.GET.get("page"))
    return render(request, "guests/messages.html", {"event": event, "page": page})


# --- import from a spreadsheet (guests/imports.py) -----------------------------------------------


def _import_page(request, event, form, status=200):
    context = {
        "event": event,
        "form": form,
        "recent": selectors.guest_imports_recent(event=event),
        "columns": imports.COLUMN_LABELS.values(),
        "max_rows": settings.GUEST_IMPORT_MAX_ROWS,
        "max_size": settings.GUEST_IMPORT_MAX_BYTES,
    }
    return render(request, "guests/import.html", context, status=status)


@require_http_methods(["GET", "POST"])
def guest_import(request, event_id):
    """Upload a guest file: it is read and checked, and the preview follows; nothing is written yet."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    form = GuestImportForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        # One byte more than allowed is enough to refuse a file that is too large.
        content = upload.read(settings.GUEST_IMPORT_MAX_BYTES + 1)
        try:
            job = imports.guest_import_start(
                event=event, file_name=upload.name, content=content, acting_user=request.user
            )
        except imports.ImportFileInvalid as error:
            form.add_error("file", error)
        else:
            return redirect(
                "guests:import_detail", tenant_slug=request.tenant.slug, event_id=event.pk, import_id=job.pk
            )
    return _import_page(request, event, form, status=400 if form.errors else 200)


def guest_import_detail(request, event_id, import_id):
    """The import's preview (rows and their errors) before confirmation, its progress, or its result."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    job = selectors.guest_import_get(event=event, import_id=import_id)
    context = {
        "event": event,
        "job": job,
        "preview": selectors.guest_import_preview(job=job),
        "ignored_columns": job.ignored_columns,
        "understood_columns": [c["header"] for c in job.columns],
        "form": GuestImportForm(),
    }
    return render(request, "guests/import_detail.html", context)


@require_POST
def guest_import_confirm(request, event_id, import_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    job = selectors.guest_import_get(event=event, import_id=import_id)
    if not imports.guest_import_confirm(job=job, acting_user=request.user):
        messages.info(request, _("This import was already confirmed."))
    return redirect("guests:import_detail", tenant_slug=request.tenant.slug, event_id=event.pk, import_id=job.pk)


def guest_import_status(request, event_id, import_id):
    """The progress bar's numbers, polled by static/js/guest_import.js."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    job = selectors.guest_import_get(event=event, import_id=import_id, with_rows=False)
    return JsonResponse(
        {
            "status": job.status,
            "status_label": job.get_status_display(),
            "in_progress": job.is_in_progress,
            "processed": job.processed_rows,
            "total": job.total_rows,
            "percent": job.progress_percent,
        }
    )


def guest_import_errors(request, event_id, import_id):
    """The refused rows as CSV, to fix and upload again."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    job = selectors.guest_import_get(event=event, import_id=import_id)
    response = HttpResponse(imports.guest_import_error_report(job=job), content_type="text/csv; charset=utf-8")
    stem = job.file_name.rsplit(".", 1)[0]
    response["Content-Disposition"] = content_disposition_header(True, f"{stem}-errors.csv")
    return response

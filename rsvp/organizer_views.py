"""The organizer's side of answers: recording a guest's answer, and deciding change requests.

Under /o/<org>/events/<event>/: the tenancy gate (tenants.middleware) has already
refused non-members (404) and viewers' and door staff's changes (403).
"""

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_http_methods

from events.selectors import event_get
from guests.selectors import guest_get
from rsvp import selectors, services
from rsvp.forms import DecisionForm, household_formset
from rsvp.models import ChangeRequest
from rsvp.views import confirmation_context


@require_http_methods(["GET", "POST"])
def guest_answer_record(request, event_id, guest_id):
    """Record an answer for the guest's household, answering as this guest; allowed after the deadline."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    guest = guest_get(event=event, guest_id=guest_id)
    guest.event = event
    household = services.household_for(guest=guest)
    posted = request.POST if request.method == "POST" else None
    formset = household_formset(posted, members=household.everyone, questions=event.questions)
    confirmation = None
    status = 200
    if posted is not None and formset.is_valid():
        try:
            services.rsvp_record(
                guest=guest,
                answer=formset.answer(confirmed=request.POST.get("confirmed") == "on"),
                acting_user=request.user,
            )
        except services.RsvpNeedsConfirmation as needed:
            confirmation = confirmation_context(needed, formset.chosen())
            status = 409
        except services.RsvpConflict:
            messages.error(
                request, _("Someone answered for this household at the same moment. Check and record again.")
            )
            return redirect(
                "rsvp_organizer:record", tenant_slug=request.tenant.slug, event_id=event.pk, guest_id=guest.pk
            )
        except ValidationError as error:
            formset._non_form_errors = formset.error_class(error.messages)
            status = 400
        else:
            messages.success(request, _("Answer recorded for %(name)s's household.") % {"name": guest.full_name})
            return redirect("guests:detail", tenant_slug=request.tenant.slug, event_id=event.pk, guest_id=guest.pk)
    elif posted is not None:
        status = 400
    context = {
        "event": event,
        "guest": household.guest,
        "household": household,
        "formset": formset,
        "total": formset.total(),
        "confirmation": confirmation,
    }
    return render(request, "rsvp/organizer/record_answer.html", context, status=status)


@require_GET
def change_request_list(request, event_id):
    event = event_get(tenant=request.tenant, event_id=event_id)
    status = request.GET.get("status", ChangeRequest.Status.PENDING)
    if status not in ChangeRequest.Status.values:
        status = ""
    page = Paginator(selectors.change_request_list(event=event, status=status), 50).get_page(request.GET.get("page"))
    context = {"event": event, "page": page, "status": status, "statuses": ChangeRequest.Status.choices}
    return render(request, "rsvp/organizer/change_request_list.html", context)


def _no_longer_fits(error: Exception) -> str:
    """Why a proposed answer cannot be applied now: the rules' own message, or the household changed."""
    message = " ".join(error.messages) if isinstance(error, ValidationError) else ""
    return message or _("The household changed: this answer no longer fits it.")


def _change_request_decide(request, change: ChangeRequest, form: DecisionForm) -> str:
    """Approve or decline as posted; the problem to show when the answer no longer fits, else ""."""
    guest = change.guest
    decision = request.POST.get("decision")
    try:
        if decision == "approve":
            services.change_request_approve(
                request=change, acting_user=request.user, response=form.cleaned_data["response"]
            )
            messages.success(
                request,
                _("Approved: the answer is changed and %(name)s gets an email.") % {"name": guest.full_name},
            )
        elif decision == "decline":
            services.change_request_decline(
                request=change, acting_user=request.user, response=form.cleaned_data["response"]
            )
            messages.success(request, _("Declined: %(name)s gets an email.") % {"name": guest.full_name})
        else:
            raise ValidationError(_("Choose approve or decline."))
    except services.ChangeRequestAlreadyDecided:
        messages.warning(request, _("Someone decided this request already."))
    except (ValidationError, services.RsvpNeedsConfirmation, services.RsvpConflict) as error:
        return _no_longer_fits(error)
    return ""


def _change_request_preview(change: ChangeRequest) -> tuple[list, str]:
    """What approving would write now (the proposals), or why it no longer fits."""
    if not change.is_pending:
        return [], ""
    try:
        plan = services.rsvp_preview(guest=change.guest, answer=services.HouseholdAnswer.from_data(change.proposed))
    except (ValidationError, services.RsvpNeedsConfirmation) as error:
        return [], _no_longer_fits(error)
    return plan.proposals, ""


@require_http_methods(["GET", "POST"])
def change_request_detail(request, event_id, request_id):
    """A guest's request: what it would change now, the guest's message; approve or decline (once)."""
    event = event_get(tenant=request.tenant, event_id=event_id)
    change = selectors.change_request_get(event=event, request_id=request_id)
    guest = change.guest
    guest.event = event
    form = DecisionForm(request.POST if request.method == "POST" else None)
    status = 200
    problem = ""
    if request.method == "POST" and change.is_pending and form.is_valid():
        problem = _change_request_decide(request, change, form)
        if not problem:
            return redirect(
                "rsvp_organizer:change_request",
                tenant_slug=request.tenant.slug,
                event_id=event.pk,
                request_id=change.pk,
            )
        status = 400
    elif request.method == "POST":
        status = 400 if change.is_pending else 409
        if not change.is_pending:
            messages.warning(request, _("Someone decided this request already."))
    preview, preview_error = _change_request_preview(change)
    context = {
        "event": event,
        "change": change,
        "guest": guest,
        "form": form,
        "preview": preview,
        "preview_error": preview_error,
        "problem": problem,
    }
    return render(request, "rsvp/organizer/change_request.html", context, status=status)

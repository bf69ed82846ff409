"""The guest's pages: code + last name login and the household RSVP."""

import functools
import uuid

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_http_methods, require_POST

from eventsaas.forms import add_service_errors
from eventsaas.i18n import visitor_language
from eventsaas.logs import log_context
from guests.activity import track_activity
from guests.models import Guest, GuestActivity
from rsvp import services
from rsvp.forms import GuestLoginForm, RsvpForm
from rsvp.throttling import RETRY_AFTER_SECONDS, guest_login_is_throttled

SESSION_GUEST = "rsvp_guest_id"
SESSION_CODE = "rsvp_guest_code"


def current_guest(request) -> Guest | None:
    """The logged-in guest; a regenerated code ends the session at once."""
    guest_id, code = request.session.get(SESSION_GUEST), request.session.get(SESSION_CODE)
    if not guest_id or not code:
        return None
    try:
        guest = Guest.objects.select_related("event", "tenant").filter(pk=uuid.UUID(guest_id), code=code).first()
    except ValueError:
        return None
    if guest is not None:
        log_context(tenant_id=guest.tenant_id, guest_id=guest.pk)
    return guest


def guest_required(view):
    @functools.wraps(view)
    def wrapper(request, *args, **kwargs):
        guest = current_guest(request)
        if guest is None or guest.event.is_archived:
            return redirect("rsvp:login")
        track_activity(guest=guest, kind=GuestActivity.Kind.PAGE_VIEW, request=request)
        with translation.override(visitor_language(request, guest.event.language)):
            # Pages are rendered inside the override, so the guest sees the event's language.
            return view(request, guest, *args, **kwargs)

    return wrapper


@require_http_methods(["GET", "POST"])
def login(request):
    if request.method == "GET" and current_guest(request) is not None and "code" not in request.GET:
        return redirect("rsvp:answer")
    form = GuestLoginForm(
        request.POST if request.method == "POST" else None, initial={"code": request.GET.get("code", "")}
    )
    status = 200
    if request.method == "POST":
        if guest_login_is_throttled(request, request.POST.get("code", "")):
            form.is_valid()
            form.add_error(None, _("Too many attempts. Please wait a few minutes and try again."))
            status = 429
        elif form.is_valid():
            guest = services.guest_authenticate(**form.cleaned_data)
            if guest is not None:
                request.session.cycle_key()
                request.session[SESSION_GUEST] = str(guest.pk)
                request.session[SESSION_CODE] = guest.code
                track_activity(guest=guest, kind=GuestActivity.Kind.LOGIN, request=request)
                return redirect("rsvp:answer")
            form.add_error(
                None, _("We could not find an invitation with this code and last name. Check both and try again.")
            )
            status = 400
        else:
            status = 400
    response = render(request, "rsvp/login.html", {"form": form}, status=status)
    if status == 429:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


@require_POST
def logout(request):
    request.session.pop(SESSION_GUEST, None)
    request.session.pop(SESSION_CODE, None)
    return redirect("rsvp:login")


def _initial_answer(guest, household) -> dict:
    initial = {
        "attending": {Guest.Status.COMING: "yes", Guest.Status.DECLINED: "no"}.get(guest.status),
        "num_guests": guest.num_guests
        if guest.status == Guest.Status.COMING and guest.num_guests
        else household.expected_total,
        "dietary": guest.dietary,
    }
    for key, value in (guest.answers or {}).items():
        initial[f"q_{key}"] = value
    return initial


@guest_required
@require_http_methods(["GET", "POST"])
def answer(request, guest):
    event = guest.event
    household = services.household_for(guest=guest)
    is_open = event.is_rsvp_open()
    form = RsvpForm(
        request.POST if request.method == "POST" and is_open else None,
        initial=_initial_answer(guest, household),
        members=household.members,
        questions=event.questions,
    )
    confirmation = None
    status = 200
    if request.method == "POST" and not is_open:
        status = 403
    elif request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            services.rsvp_submit(
                guest=guest,
                attending=data["attending"] == "yes",
                num_guests=data["num_guests"] or 0,
                absent_member_ids=[uuid.UUID(pk) for pk in data["absent"]],
                confirmed=data["confirmed"],
                dietary=data["dietary"],
                answers=form.answers(),
            )
        except services.RsvpNeedsConfirmation as needed:
            confirmation = needed
            status = 409
        except services.RsvpClosed:
            is_open, status = False, 403
        except ValidationError as error:
            add_service_errors(form, error)
            status = 400
        else:
            track_activity(guest=guest, kind=GuestActivity.Kind.RSVP_SUBMITTED, request=request)
            messages.success(request, _("Thank you! Your answer is saved. You can change it until the deadline."))
            return redirect("rsvp:answer")
    elif request.method == "POST":
        status = 400
    context = {
        "guest": guest,
        "event": event,
        "household": household,
        "form": form,
        "is_open": is_open,
        "confirmation": confirmation,
    }
    return render(request, "rsvp/answer.html", context, status=status)

"""The guest's pages: code + last name login, the household answer, and change requests after the deadline."""

import functools
import uuid

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.template.response import SimpleTemplateResponse, TemplateResponse
from django.utils import translation
from django.utils.cache import patch_cache_control
from django.utils.translation import gettext as _
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from events.calendar import event_calendar, event_calendar_filename, google_calendar_url
from eventsaas.i18n import visitor_language
from eventsaas.logs import log_context
from guests.activity import track_activity
from guests.hooks import guest_page_sections
from guests.models import Guest, GuestActivity
from guests.notifications import rsvp_login_url
from rsvp import selectors, services
from rsvp.forms import ChangeRequestMessageForm, GuestLoginForm, household_formset
from rsvp.guest_page_cache import kept_while_unchanged
from rsvp.throttling import RETRY_AFTER_SECONDS, guest_login_is_throttled

SESSION_GUEST = "rsvp_guest_id"
SESSION_CODE = "rsvp_guest_code"


def guest_in_session(request) -> tuple[uuid.UUID, str] | None:
    """The guest id and code the session was given at login, or None."""
    guest_id, code = request.session.get(SESSION_GUEST), request.session.get(SESSION_CODE)
    if not guest_id or not code:
        return None
    try:
        return uuid.UUID(guest_id), code
    except ValueError:
        return None


def current_guest(request) -> Guest | None:
    """The logged-in guest; a regenerated code ends the session at once."""
    logged_in = guest_in_session(request)
    if logged_in is None:
        return None
    guest_id, code = logged_in
    guest = Guest.objects.select_related("event", "tenant").filter(pk=guest_id, code=code).first()
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
            response = view(request, guest, *args, **kwargs)
            return response.render() if isinstance(response, SimpleTemplateResponse) else response

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


def names_list(names: list[str]) -> str:
    """ "Lisa", "Lisa and Tom", "Ana, Lisa and Tom" in the page's language."""
    if len(names) <= 1:
        return "".join(names)
    return _("%(names)s and %(last)s") % {"names": ", ".join(names[:-1]), "last": names[-1]}


def confirmation_context(needed: services.RsvpNeedsConfirmation, chosen: dict) -> dict:
    """What the confirmation dialog says, naming the people concerned (see templates/rsvp/_confirmation.html)."""
    absent = [m.first_name for m in needed.concerned if not chosen.get(m.pk, (True, 0))[0]]
    fewer_people = [m.first_name for m in needed.concerned if chosen.get(m.pk, (False, 0))[0]]
    return {
        "needed": needed,
        "absent_names": names_list(absent),
        "absent_count": len(absent),
        "fewer_names": names_list(fewer_people),
        "declined_names": names_list([m.first_name for m in needed.declined_members]),
        "declined_count": len(needed.declined_members),
        "is_fewer": services.RsvpNeedsConfirmation.FEWER in needed.reasons,
        "is_more": services.RsvpNeedsConfirmation.MORE in needed.reasons,
        "overrides_decline": services.RsvpNeedsConfirmation.DECLINE_OVERRIDE in needed.reasons,
    }


# Private: the page is one guest's (their household, their answers), whichever way it was made.
@cache_control(private=True)
@kept_while_unchanged(guest_in_session)
@guest_required
@require_http_methods(["GET", "POST"])
def answer(request, guest):
    event = guest.event
    household = services.household_for(guest=guest)
    state = event.rsvp_state()
    posted = request.POST if request.method == "POST" and state == event.RSVP_OPEN else None
    formset = household_formset(posted, members=household.everyone, questions=event.questions)
    confirmation = None
    status = 200
    if request.method == "POST" and state != event.RSVP_OPEN:
        status = 403
    elif posted is not None and formset.is_valid():
        try:
            services.rsvp_submit(guest=guest, answer=formset.answer(confirmed=request.POST.get("confirmed") == "on"))
        except services.RsvpNeedsConfirmation as needed:
            confirmation = confirmation_context(needed, formset.chosen())
            status = 409
        except services.RsvpNotOpen:
            state, status = event.RSVP_NOT_OPEN_YET, 403
        except services.RsvpClosed:
            state, status = event.RSVP_CLOSED, 403
        except services.RsvpConflict:
            messages.error(request, _("Someone in your household answered at the same moment. Check and send again."))
            return redirect("rsvp:answer")
        except ValidationError as error:
            formset._non_form_errors = formset.error_class(error.messages)
            status = 400
        else:
            track_activity(guest=guest, kind=GuestActivity.Kind.RSVP_SUBMITTED, request=request)
            messages.success(request, _("Thank you! Your answer is saved. You can change it until the deadline."))
            return redirect("rsvp:answer")
    elif posted is not None:
        status = 400
    # A TemplateResponse: its context tells rsvp.guest_page_cache whether the page may be kept.
    context = _page_context(guest, household, formset, confirmation, state)
    return TemplateResponse(request, "rsvp/answer.html", context, status=status)


def _page_context(guest, household, formset, confirmation, state, message_form=None) -> dict:
    event = guest.event
    if state == event.RSVP_CLOSED and message_form is None:
        message_form = ChangeRequestMessageForm()
    return {
        "guest": household.guest,
        "event": event,
        "household": household,
        "formset": formset,
        "total": formset.total(),
        "confirmation": confirmation,
        "state": state,
        "is_open": state == event.RSVP_OPEN,
        "message_form": message_form,
        # Shown only once answers are closed (with the form to ask for a change).
        "change_request": selectors.change_request_latest(guest=guest) if state == event.RSVP_CLOSED else None,
        "google_calendar_url": google_calendar_url(event=event, link=rsvp_login_url()),
        # What other apps show this guest (a ticket holder's tickets, from billing).
        "sections": guest_page_sections(household.guest),
    }


@guest_required
@require_GET
def calendar(request, guest, event_id):
    """The guest's event as an .ics file ("add to calendar"); only for a guest of that event.

    The address names the event, never a code: the file comes with the guest's session, and links to
    the login page, so a calendar shared with others does not carry the code.
    """
    event = guest.event
    if event.pk != event_id:
        raise Http404
    content = event_calendar(event=event, link=rsvp_login_url(), link_label=_("Your invitation"))
    response = HttpResponse(content, content_type="text/calendar; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{event_calendar_filename(event)}"'
    patch_cache_control(response, private=True, no_store=True)
    return response


@guest_required
@require_POST
def change_request(request, guest):
    """After the deadline: ask the organizer to change the household's answer (the rows as proposed)."""
    event = guest.event
    household = services.household_for(guest=guest)
    state = event.rsvp_state()
    formset = household_formset(request.POST, members=household.everyone, questions=event.questions)
    message_form = ChangeRequestMessageForm(request.POST)
    status = 400
    if state != event.RSVP_CLOSED:
        return redirect("rsvp:answer")
    if formset.is_valid() and message_form.is_valid():
        try:
            services.change_request_create(
                guest=guest,
                answer=formset.answer(confirmed=True),
                message=message_form.cleaned_data["message"],
            )
        except (ValidationError, services.RsvpNeedsConfirmation) as error:
            reason = error.messages if isinstance(error, ValidationError) else []
            formset._non_form_errors = formset.error_class(reason or [_("This answer does not fit your household.")])
        except (services.ChangeRequestNotNeeded, services.RsvpConflict):
            return redirect("rsvp:answer")
        else:
            messages.success(
                request,
                _("Your request is with the organizer. You will get an email when they have decided."),
            )
            return redirect("rsvp:answer")
    context = _page_context(guest, household, formset, None, state, message_form=message_form)
    return render(request, "rsvp/answer.html", context, status=status)

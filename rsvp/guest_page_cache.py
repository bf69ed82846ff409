"""The guest's RSVP page kept in each web process while nothing it shows has changed (issue #15).

Guests open their page far more often than anything on it is written (they come back to check, to
show the dress code, to find the address), and rendering it (the household's rows as a form, in the
guest's language) was most of its time. So each process keeps the HTML of each guest's page, read
under the version its event had before the page's rows were read (events.guest_view_versions: every
write to the event or its guests' rows that a guest could see changes it), and serves it again while

- that version is still the event's (one cache read per request, as the guest API does),
- the session names the same guest with the same code (a regenerated code also changes the version),
- the page's language is the same (the switcher's cookie, else the event's),
- answers are still open, if they were (the deadline ends them without a write),

and for GUEST_API_CACHE_SECONDS at most (which bounds a write that changed no version: a data
migration, a version change lost while Redis was down). On only when versions are kept
(GUEST_API_CACHE_SECONDS > 0, which needs REDIS_URL); with the version unreadable, the page is rendered.

Only a page that depends on nothing else is kept: a plain GET (no query string) from a guest's session
with no organizer logged in (base.html then shows their account's notices) and no message waiting (in
its cookie or in the session); answers open or not open yet (a closed event's page shows the guest's
latest change request, a row no version follows); no section from another app (a ticket holder's
tickets: billing's rows follow no version). Everything else is rendered as before. A page served from
memory is tracked as a page view, as a rendered one is, and carries the request's own CSRF token
(eventsaas/kept_pages.py). A guest's first visit to a process costs one small query more (their event,
so that its version is read before the page's rows).
"""

import functools
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import NamedTuple

from django.conf import settings
from django.contrib.auth import SESSION_KEY as USER_SESSION_KEY
from django.contrib.messages.storage.cookie import CookieStorage
from django.contrib.messages.storage.session import SessionStorage
from django.http import HttpRequest, HttpResponse
from django.utils.timezone import now

from events.guest_view_versions import guest_view_version
from eventsaas import kept_pages
from eventsaas.i18n import visitor_language
from eventsaas.logs import log_context
from guests.activity import track_activity
from guests.models import Guest, GuestActivity
from rsvp import selectors

#: The guest id and code a session was given at login, or None (rsvp.views.guest_in_session).
GuestInSession = Callable[[HttpRequest], tuple[uuid.UUID, str] | None]


class _KeptPage(NamedTuple):
    version: str
    code: str
    tenant_id: uuid.UUID
    event_id: uuid.UUID
    event_language: str
    language: str
    open_until: datetime | None  # answers close at the deadline: the page changes then without a write
    html: str

    def serves(self, request: HttpRequest, version: str, code: str) -> bool:
        return (
            version == self.version
            and code == self.code
            and visitor_language(request, self.event_language) == self.language
            and (self.open_until is None or now() < self.open_until)
        )


def _page_key(guest_id: uuid.UUID) -> str:
    return f"guestpage:{guest_id}"


def _keepable(request: HttpRequest) -> bool:
    """Whether the page this request gets could be another request's (by the same guest)."""
    if settings.GUEST_API_CACHE_SECONDS <= 0 or request.method != "GET" or request.GET:
        return False
    if request.COOKIES.get(CookieStorage.cookie_name):
        return False  # a message to show once (a browser drops the emptied cookie; a test client sends it empty)
    session = request.session
    return USER_SESSION_KEY not in session and SessionStorage.session_key not in session


def _served(request: HttpRequest, guest_id: uuid.UUID, kept: _KeptPage) -> HttpResponse:
    guest = Guest(pk=guest_id, tenant_id=kept.tenant_id, event_id=kept.event_id)
    log_context(tenant_id=kept.tenant_id, guest_id=guest_id)
    track_activity(guest=guest, kind=GuestActivity.Kind.PAGE_VIEW, request=request)
    return kept_pages.with_token(request, kept.html)


def _keep(request: HttpRequest, guest_id: uuid.UUID, version: str, code: str, response: HttpResponse) -> None:
    """Keep the page just rendered, if it shows nothing that could change without a new version."""
    context = getattr(response, "context_data", None)
    if response.status_code != 200 or context is None or context["sections"]:
        return
    guest, event, state = context["guest"], context["event"], context["state"]
    if guest.pk != guest_id or guest.code != code or state not in (event.RSVP_OPEN, event.RSVP_NOT_OPEN_YET):
        return
    kept = _KeptPage(
        version=version,
        code=code,
        tenant_id=event.tenant_id,
        event_id=event.pk,
        event_language=event.language,
        language=visitor_language(request, event.language),
        open_until=event.rsvp_deadline if state == event.RSVP_OPEN else None,
        html=kept_pages.without_tokens(response),
    )
    kept_pages.pages().set(_page_key(guest_id), kept, settings.GUEST_API_CACHE_SECONDS)


def kept_while_unchanged(guest_in_session: GuestInSession):
    """The guest page view, serving a guest the page this process rendered for them while it is current.

    The view returns a rendered TemplateResponse, whose context says whether the page may be kept.
    """

    def decorator(view):
        @functools.wraps(view)
        def wrapper(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            logged_in = guest_in_session(request) if _keepable(request) else None
            if logged_in is None:
                return view(request, *args, **kwargs)
            guest_id, code = logged_in
            kept = kept_pages.pages().get(_page_key(guest_id))
            # The version is read before the page's rows, so a write after this read ends what is kept under it.
            event_id = kept.event_id if kept else selectors.guest_event_id(guest_id=guest_id, code=code)
            version = guest_view_version(event_id) if event_id is not None else None
            if version is None:
                return view(request, *args, **kwargs)
            if kept is not None and kept.serves(request, version, code):
                return _served(request, guest_id, kept)
            response = view(request, *args, **kwargs)
            _keep(request, guest_id, version, code, response)
            return response

        return wrapper

    return decorator

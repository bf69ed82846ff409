"""The public shop page, kept for a moment in each web process for visitors who bring no session.

A link to a shop goes out in a newsletter or a post, and thousands open it at once: each of them gets
the same page (the event, its ticket types, what is left), and building it took four queries and the
rendering of a form per ticket type. So a plain GET from a visitor with no session cookie and no
pending messages (nobody logged in, nothing personal on the page) is served, for
`SHOP_PAGE_CACHE_SECONDS` (default 2), from the HTML that the last such GET of the same event,
language and payment mode rendered in this process. Only the CSRF tokens differ per visitor: the page
is kept with a slot where each token was, and every visitor gets their own token in it (eventsaas/kept_pages.py).

What a kept page can show late, by at most those seconds: seats left, a ticket type that sold out or
came back, a sales window that opened or closed, an organizer's edit, an event unpublished. Nothing
is sold from the page: checkout reads every one of those afresh (and answers "sold out" with what is
left now). Anything else gets the page rendered for them: a query string (an access code unlocks
hidden types), a session (an organizer looking at their shop, a buyer with a message waiting), POSTs.

Per process on purpose (the "pages" cache, local memory): a page is cheap to build once a second per
process, and nothing has to be told about writes.
"""

import functools

from django.conf import settings
from django.contrib.messages.storage.cookie import CookieStorage
from django.http import HttpRequest, HttpResponse
from django.utils.cache import patch_vary_headers

from billing import payments
from eventsaas import kept_pages
from eventsaas.i18n import visitor_language

#: The key's language when the visitor chose none: the page is then in the event's own language.
EVENT_LANGUAGE = "event"


def shop_page_key(request: HttpRequest, event_id) -> str | None:
    """The key of the kept page this request may be served, or None when it must be rendered for it."""
    if settings.SHOP_PAGE_CACHE_SECONDS <= 0 or request.method != "GET" or request.GET:
        return None
    cookies = request.COOKIES
    if settings.SESSION_COOKIE_NAME in cookies or CookieStorage.cookie_name in cookies:
        return None  # logged in, or a guest, or a message to show: not the public's page
    # The page's language as the view picks it, without the event: the switcher's cookie, else the event's.
    language = visitor_language(request, EVENT_LANGUAGE)
    return f"shop:{event_id}:{language}:{payments.payment_mode()}"


def _kept(request: HttpRequest, key: str) -> HttpResponse | None:
    """The kept page with this visitor's CSRF token, or None."""
    html = kept_pages.pages().get(key)
    if html is None:
        return None
    response = kept_pages.with_token(request, html)
    # The rendered page read the (empty) session to know nobody is logged in, which makes it vary on Cookie.
    patch_vary_headers(response, ("Cookie",))
    return response


def _keep(key: str, response: HttpResponse) -> None:
    """Keep a page just rendered for the public, its CSRF tokens taken out."""
    if response.status_code != 200:
        return
    kept_pages.pages().set(key, kept_pages.without_tokens(response), settings.SHOP_PAGE_CACHE_SECONDS)


def kept_for_the_public(view):
    """The shop view, serving the public's plain GET the page this process rendered a moment ago."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, event_id) -> HttpResponse:
        key = shop_page_key(request, event_id)
        if key is None:
            return view(request, event_id)
        if (kept := _kept(request, key)) is not None:
            return kept
        response = view(request, event_id)
        _keep(key, response)
        return response

    return wrapper

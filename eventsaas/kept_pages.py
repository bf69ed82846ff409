"""Pages kept as HTML between requests, each visitor's CSRF token put back in on the way out.

Two views keep what they rendered: the public shop page (billing/shop_page_cache.py) and the guest's
RSVP page (rsvp/guest_page_cache.py). A kept page is stored with a slot where each CSRF token was,
and every request it serves gets its own token in the slot, so a kept page is as safe to post from as
a rendered one. They live in the "pages" cache: each process's memory (settings.CACHES).
"""

import re

from django.core.cache import caches
from django.http import HttpRequest, HttpResponse
from django.middleware.csrf import get_token

#: Where each visitor's CSRF token goes: no HTML the page renders contains it (escaping turns `<` into `&lt;`).
TOKEN_SLOT = "<csrf-token-slot>"
# The hidden input `{% csrf_token %}` renders (django.template.defaulttags.CsrfTokenNode).
CSRF_INPUT = re.compile(r'(<input type="hidden" name="csrfmiddlewaretoken" value=")[^"]*(">)')


def pages():
    """This process's kept pages."""
    return caches["pages"]


def without_tokens(response: HttpResponse) -> str:
    """The rendered page's HTML with a slot where each CSRF token was."""
    return CSRF_INPUT.sub(rf"\g<1>{TOKEN_SLOT}\g<2>", response.content.decode(response.charset))


def with_token(request: HttpRequest, html: str) -> HttpResponse:
    """A kept page for this request: one token in every form, as `{% csrf_token %}` gives within a request."""
    return HttpResponse(html.replace(TOKEN_SLOT, get_token(request)))

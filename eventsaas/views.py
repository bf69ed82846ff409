"""Small site-wide pages that belong to no app."""

from datetime import timedelta
from email.utils import parseaddr

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.views import defaults
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET


def security_contact() -> str:
    """SECURITY_CONTACT, or the sender address of the site's emails."""
    contact = settings.SECURITY_CONTACT or f"mailto:{parseaddr(settings.DEFAULT_FROM_EMAIL)[1]}"
    return contact if ":" in contact else f"mailto:{contact}"


@require_GET
@cache_control(public=True, max_age=86400)
def security_txt(request):
    """RFC 9116: where to report a vulnerability. Expires is kept half a year ahead (the RFC asks for < 1 year)."""
    expires = (timezone.now() + timedelta(days=180)).replace(hour=0, minute=0, second=0, microsecond=0)
    lines = [
        f"Contact: {security_contact()}",
        f"Expires: {expires.strftime('%Y-%m-%dT%H:%M:%SZ')}",
        "Preferred-Languages: en, es",
        f"Canonical: {settings.SITE_URL}/.well-known/security.txt",
    ]
    if settings.SECURITY_POLICY_URL:
        lines.append(f"Policy: {settings.SECURITY_POLICY_URL}")
    return HttpResponse("\n".join(lines) + "\n", content_type="text/plain; charset=utf-8")


# --- errors outside the API's views --------------------------------------------------------------
# DRF answers the API's errors as JSON (eventsaas.api.exception_handler), but a path that matches no view (a bad
# id in the path fails its converter) or an error outside a view reaches Django's handlers, which render HTML.
# The API's clients get the same JSON envelope there too.


def _is_api(request) -> bool:
    return request.path.startswith("/api/")


def page_not_found(request, exception):
    if _is_api(request):
        return JsonResponse({"code": "not_found", "detail": _("Not found.")}, status=404)
    return defaults.page_not_found(request, exception)


def server_error(request):
    if _is_api(request):
        detail = _("Something went wrong on our side; it has been logged. Try again later.")
        return JsonResponse({"code": "server_error", "detail": detail}, status=500)
    return defaults.server_error(request)

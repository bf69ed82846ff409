"""Site-wide middleware: response headers Django has no setting for, and input no view can handle."""

from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.http import HttpResponseBadRequest, JsonResponse
from django.http.multipartparser import MultiPartParserError
from django.template.loader import render_to_string
from django.utils.translation import gettext as _


class PermissionsPolicyMiddleware:
    """Permissions-Policy on every response: browser features the pages do not use are off.

    The camera stays allowed for this site's own pages (check-in scans QR codes).
    """

    def __init__(self, get_response):
        self.get_response = get_response
        self.value = ", ".join(f"{feature}={allow}" for feature, allow in settings.PERMISSIONS_POLICY.items())

    def __call__(self, request):
        response = self.get_response(request)
        response.headers.setdefault("Permissions-Policy", self.value)
        return response


class UnusableInputMiddleware:
    """A query string or form field holding a lone surrogate or NUL is a 400, before any view sees it.

    Browsers never send them, but a client can: a form body declared as UTF-7
    decodes to lone surrogates, which can be neither stored nor rendered back.
    JSON bodies get the same check in the API's parser (eventsaas.parsers.JSONParser).
    """

    FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if self._holds_unusable_characters(request):
            return self._refusal(request)
        return self.get_response(request)

    def _holds_unusable_characters(self, request) -> bool:
        from eventsaas.parsers import has_unusable_characters

        sources = [request.GET]
        try:
            if request.method == "POST" and request.content_type in self.FORM_TYPES:
                sources.append(request.POST)
        except (MultiPartParserError, SuspiciousOperation):
            return False  # Django answers these itself (400) when the view reads the form
        return any(
            has_unusable_characters(key) or any(has_unusable_characters(value) for value in values)
            for source in sources
            for key, values in source.lists()
            if isinstance(key, str)
        )

    def _refusal(self, request):
        detail = _("The request holds a character that text cannot hold (a lone surrogate or NUL).")
        if request.path.startswith("/api/"):
            return JsonResponse({"code": "parse_error", "detail": detail}, status=400)
        return HttpResponseBadRequest(render_to_string("400.html", {"detail": detail}, request=request))

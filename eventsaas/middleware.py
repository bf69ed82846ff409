"""Site-wide middleware: response headers Django has no setting for, and input no view can handle."""

import functools
import http

from csp.constants import HEADER, HEADER_REPORT_ONLY
from csp.middleware import CheckableLazyObject, CSPMiddleware
from csp.utils import build_policy
from django.conf import settings
from django.core.exceptions import SuspiciousOperation
from django.core.signals import setting_changed
from django.dispatch import receiver
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


# The enforced policy and the report-only one: response header, setting, and the flag of django-csp's exemption.
CSP_POLICIES = (
    (HEADER, "CONTENT_SECURITY_POLICY", "_csp_exempt"),
    (HEADER_REPORT_ONLY, "CONTENT_SECURITY_POLICY_REPORT_ONLY", "_csp_exempt_ro"),
)
CSP_DEBUG_PAGES = (http.HTTPStatus.INTERNAL_SERVER_ERROR, http.HTTPStatus.NOT_FOUND)


@functools.cache
def _policy_from_settings(setting: str) -> str:
    return build_policy(report_only=setting.endswith("_REPORT_ONLY"))


@receiver(setting_changed)
def _forget_policies(setting, **kwargs):
    if setting.startswith("CONTENT_SECURITY_POLICY"):
        _policy_from_settings.cache_clear()


class ContentSecurityPolicyMiddleware(CSPMiddleware):
    """django-csp's middleware, with the settings' policy built once per process instead of on every response.

    django-csp rebuilds the header from CONTENT_SECURITY_POLICY for each response, about a tenth of the guest
    API's request in a profile (issue #15). Our views change no policy and use no nonce; a response that does
    (django-csp's decorators, `request.csp_nonce`) still goes through django-csp's own code.
    """

    VIEW_POLICY = ("_csp_config", "_csp_update", "_csp_replace", "_csp_config_ro", "_csp_update_ro", "_csp_replace_ro")

    def process_response(self, request, response):
        if getattr(request, "_csp_nonce", None) is not None or any(hasattr(response, a) for a in self.VIEW_POLICY):
            return super().process_response(request, response)
        # What django-csp's process_response does for such a response, with the policies built once.
        if settings.DEBUG and response.status_code in CSP_DEBUG_PAGES:
            return response
        for header, setting, exempt in CSP_POLICIES:
            policy = _policy_from_settings(setting)
            if not policy or header in response or getattr(response, exempt, False):
                continue
            excluded = (getattr(settings, setting, None) or {}).get("EXCLUDE_URL_PREFIXES") or ()
            if not request.path_info.startswith(tuple(excluded)):
                response[header] = policy
        # As django-csp does: a nonce asked for after the header is written is an error, not a silent gap.
        request.csp_nonce = CheckableLazyObject(self._csp_nonce_post_response)
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

"""Security headers on every response, no inline script left in any page, and /.well-known/security.txt.

The browser side (the pages run under the policy with no violation, Swagger UI
included) is tests/e2e/test_content_security_policy_browser.py.
"""

import re
from pathlib import Path

import pytest
from csp.constants import NONCE
from csp.decorators import csp_update
from csp.middleware import CSPMiddleware
from django.http import HttpResponse
from django.test import RequestFactory, override_settings
from django.utils import timezone

from eventsaas.middleware import ContentSecurityPolicyMiddleware

ROOT = Path(__file__).resolve().parents[1]
PAGE_TEMPLATES = sorted(
    path for path in (ROOT / "templates").rglob("*.html") if "emails" not in path.parts and "email" not in path.parts
)


def policy(response) -> dict:
    directives = [part.strip().split() for part in response["Content-Security-Policy"].split(";") if part.strip()]
    return {name: values for name, *values in directives}


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/", "/login/", "/rsvp/", "/admin/login/", "/api/docs/", "/api/v1/rsvp"])
def test_every_response_carries_the_security_headers(client, path):
    response = client.get(path)

    csp = policy(response)
    assert csp["default-src"] == ["'self'"]
    assert csp["script-src"] == ["'self'"]  # no 'unsafe-inline', no 'unsafe-eval'
    assert csp["style-src"] == ["'self'"]
    assert csp["object-src"] == ["'none'"] and csp["frame-ancestors"] == ["'none'"]
    assert csp["form-action"] == ["'self'", "https://checkout.stripe.com"]
    assert response["Referrer-Policy"] == "same-origin"
    permissions = dict(item.split("=") for item in response["Permissions-Policy"].split(", "))
    assert permissions["camera"] == "(self)"
    assert permissions["geolocation"] == permissions["microphone"] == permissions["payment"] == "()"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"


def test_the_template_list_is_not_empty():
    assert len(PAGE_TEMPLATES) > 30


@pytest.mark.parametrize("template", PAGE_TEMPLATES, ids=lambda path: str(path.relative_to(ROOT / "templates")))
def test_no_page_template_has_inline_script_event_handler_or_style(template):
    html = template.read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "inline <script>: move it to static/js/"
    assert not re.search(r"\son[a-z]+\s*=", html, flags=re.I), "inline event handler: use static/js/app.js"
    assert not re.search(r"<style\b", html), "inline <style>: move it to static/css/"
    assert not re.search(r"\sstyle\s*=", html), "style attribute: use a class in static/css/app.css"
    assert "javascript:" not in html


@pytest.mark.django_db
def test_security_txt_says_where_to_report_and_stays_valid(client, settings):
    settings.SITE_URL = "https://events.example.com"
    response = client.get("/.well-known/security.txt")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    fields = dict(line.split(": ", 1) for line in response.content.decode().splitlines())
    assert fields["Contact"] == "mailto:noreply@localhost"  # DEFAULT_FROM_EMAIL's address by default
    expires = timezone.datetime.fromisoformat(fields["Expires"].replace("Z", "+00:00"))
    assert timezone.now() + timezone.timedelta(days=150) < expires < timezone.now() + timezone.timedelta(days=365)
    assert fields["Canonical"] == "https://events.example.com/.well-known/security.txt"
    assert fields["Preferred-Languages"] == "en, es"


@pytest.mark.django_db
@override_settings(SECURITY_CONTACT="security@example.com", SECURITY_POLICY_URL="https://example.com/security")
def test_security_txt_uses_the_configured_contact_and_policy(client):
    text = client.get("/.well-known/security.txt").content.decode()
    assert "Contact: mailto:security@example.com" in text
    assert "Policy: https://example.com/security" in text


# --- the policy built once per process (eventsaas.middleware.ContentSecurityPolicyMiddleware) ----------------


def csp_headers(response) -> tuple:
    return response.get("Content-Security-Policy"), response.get("Content-Security-Policy-Report-Only")


def django_csp_answer(request_path: str, response):
    """What django-csp's own middleware sets on this response."""

    return csp_headers(
        CSPMiddleware(lambda request: response).process_response(RequestFactory().get(request_path), response)
    )


@pytest.mark.parametrize(
    "policies",
    [
        pytest.param({}, id="as-configured"),
        pytest.param(
            {"CONTENT_SECURITY_POLICY_REPORT_ONLY": {"DIRECTIVES": {"default-src": ["'none'"], "report-uri": "/csp/"}}},
            id="with-report-only",
        ),
        pytest.param(
            {"CONTENT_SECURITY_POLICY": {"EXCLUDE_URL_PREFIXES": ["/api/"], "DIRECTIVES": {"default-src": ["'self'"]}}},
            id="api-excluded",
        ),
    ],
)
def test_the_policy_built_once_is_what_django_csp_builds(rf, policies):
    from django.http import HttpResponse

    from eventsaas.middleware import ContentSecurityPolicyMiddleware

    with override_settings(**policies):
        for path in ("/rsvp/", "/api/v1/rsvp"):
            ours = ContentSecurityPolicyMiddleware(lambda request: HttpResponse())
            ours.process_request(request := rf.get(path))
            assert csp_headers(ours.process_response(request, HttpResponse())) == django_csp_answer(
                path, HttpResponse()
            )


def test_a_view_with_its_own_policy_and_a_nonce_get_django_csps_answer(rf):
    @csp_update({"img-src": ["https://images.example.com"], "script-src": [NONCE]})
    def view(request):
        str(request.csp_nonce)  # as a template that uses the nonce does
        return HttpResponse()

    middleware = ContentSecurityPolicyMiddleware(view)
    middleware.process_request(request := rf.get("/"))
    response = middleware.process_response(request, view(request))

    csp = policy(response)
    assert "https://images.example.com" in csp["img-src"]
    assert f"'nonce-{request._csp_nonce}'" in csp["script-src"]


def test_a_changed_setting_changes_the_header_at_once(client):
    with override_settings(CONTENT_SECURITY_POLICY={"DIRECTIVES": {"default-src": ["'none'"]}}):
        assert policy(client.get("/rsvp/"))["default-src"] == ["'none'"]
    assert policy(client.get("/rsvp/"))["default-src"] == ["'self'"]

"""Limits on everything that takes an organizer's password or sends them an email.

Password checks (the login page, the admin's login and the API token endpoint)
all go through `django.contrib.auth.authenticate`, where django-axes counts
failures per client address and per account in the default cache (settings:
LOGIN_FAILURE_LIMIT, LOGIN_LOCKOUT_MINUTES). A lockout is short, tries during it
do not extend it, and the emailed password reset link ends it and logs the
person in, so an attacker who keeps an account locked cannot keep its owner out.

Password reset emails, sign-ups and verification emails are counted with
django-ratelimit, also in the default cache. Client addresses come from
eventsaas.client_ip (trusted proxies only).
"""

from django.conf import settings
from django.http import JsonResponse
from django.shortcuts import render
from django.utils.translation import gettext as _
from django_ratelimit.core import is_ratelimited

RETRY_AFTER_RESET_SECONDS = 3600


def login_username(request, credentials=None) -> str | None:
    """The account a login attempt is counted against: the email as accounts store it (lower case).

    Without this, "Admin@Example.com" and "admin@example.com" would be two counters for one account.
    """
    raw = (credentials or {}).get("username")
    if raw is None and request is not None:
        raw = request.POST.get("username")
    if not isinstance(raw, str):
        return None
    return raw.strip().lower() or None


def lockout_seconds() -> int:
    return settings.LOGIN_LOCKOUT_MINUTES * 60


def lockout_response(request, original_response=None, credentials=None):
    """What a locked-out login gets: a JSON error on the API, a page with the way back in elsewhere."""
    retry_after = str(lockout_seconds())
    if request.path.startswith("/api/"):
        response = JsonResponse(
            {
                "code": "throttled",
                "detail": _("Too many failed logins. Try again in %(minutes)d minutes.")
                % {"minutes": settings.LOGIN_LOCKOUT_MINUTES},
            },
            status=429,
        )
    else:
        response = render(
            request,
            "registration/locked_out.html",
            {"minutes": settings.LOGIN_LOCKOUT_MINUTES},
            status=429,
        )
    response["Retry-After"] = retry_after
    return response


def login_lockout_clear(*, email: str) -> None:
    """End the lockout of this account (not of any address): its owner proved they read its email."""
    from axes.utils import reset

    reset(username=login_username(None, {"username": email}))


def password_reset_is_throttled(request, email: str) -> bool:
    """Count a reset request against the client and the address asked for; True when either is over its rate.

    Per address, so nobody can flood one inbox with reset emails; per client, so
    nobody can probe or spam many addresses from one place.
    """
    by_client = is_ratelimited(
        request, group="password-reset-client", key="ip", rate=settings.PASSWORD_RESET_RATE_PER_CLIENT, increment=True
    )
    target = (email or "").strip().lower() or "-"
    by_email = is_ratelimited(
        request,
        group="password-reset-email",
        key=lambda group, request: target,
        rate=settings.PASSWORD_RESET_RATE_PER_EMAIL,
        increment=True,
    )
    return by_client or by_email


def signup_is_throttled(request) -> bool:
    """Count a sign-up (new organization or invitation) against the client address."""
    return is_ratelimited(
        request, group="signup-client", key="ip", rate=settings.SIGNUP_RATE_PER_CLIENT, increment=True
    )


def verification_email_is_throttled(request, user) -> bool:
    """Count a verification email against the account."""
    return is_ratelimited(
        request,
        group="verification-email-user",
        key=lambda group, request: str(user.pk),
        rate=settings.VERIFICATION_EMAIL_RATE_PER_USER,
        increment=True,
    )

"""Password guessing is limited everywhere a password is checked, per client address and per account.

/login/, /admin/login/ and POST /api/v1/auth/token share one count (django-axes,
in the default cache); password reset and sign-up have their own limits. A
lockout is short, does not grow while the attacker keeps trying, and the
emailed password reset link ends it.
"""

import re
import time
from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.contrib.auth import SESSION_KEY
from django.core import mail
from django.core.cache import cache
from django.test import override_settings
from django.urls import reverse

from tests.conftest import PASSWORD
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LIMIT = 10  # LOGIN_FAILURE_LIMIT's default
TOKEN_URL = "/api/v1/auth/token"
RESET_LINK = re.compile(r"https?://testserver(/reset/[^/\s]+/[^/\s]+/)")


@pytest.fixture(autouse=True)
def _one_rate_window(monkeypatch):
    """django-ratelimit counts in fixed windows of the clock: a test whose requests straddle a window's end
    would see its counter start again (a flake seen on PostgreSQL). Its clock stands still here."""
    import django_ratelimit.core

    now = int(time.time())
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: now))


@pytest.fixture
def organizer(db):
    return UserFactory(email="organizer@example.com")


@pytest.fixture
def staff(db):
    return UserFactory(email="staff@example.com", is_staff=True, is_superuser=True)


def page_login(client, email, password, path="/login/", **extra):
    return client.post(path, {"username": email, "password": password}, **extra)


def api_login(client, email, password, **extra):
    return client.post(TOKEN_URL, {"email": email, "password": password}, content_type="application/json", **extra)


def logged_in(client) -> bool:
    return SESSION_KEY in client.session


@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_thirty_wrong_passwords_on_a_login_page_lock_that_account_and_address(client, organizer, staff, path):
    email = staff.email if path.startswith("/admin") else organizer.email
    statuses = [page_login(client, email, f"wrong-{n}", path).status_code for n in range(30)]

    # The limit-th failure already answers the lockout; nothing after it checks a password.
    assert statuses[: LIMIT - 1] == [200] * (LIMIT - 1)
    assert statuses[LIMIT - 1 :] == [429] * (30 - LIMIT + 1)
    # Even the right password is refused while locked, and nobody is logged in.
    locked = page_login(client, email, PASSWORD, path)
    assert locked.status_code == 429
    assert int(locked["Retry-After"]) == 15 * 60
    assert "Forgot your password" in locked.content.decode() or "reset" in locked.content.decode().lower()
    assert not logged_in(client)


def test_the_account_is_locked_from_every_address_and_every_door(client, organizer):
    """Per account: guesses spread over 12 addresses and over page and API still count together."""
    for n in range(LIMIT):
        address = f"203.0.113.{n % 12 + 1}"
        if n % 2:
            assert api_login(client, organizer.email, f"wrong-{n}", REMOTE_ADDR=address).status_code in (401, 429)
        else:
            assert page_login(client, organizer.email, f"wrong-{n}", REMOTE_ADDR=address).status_code in (200, 429)

    # A fresh address, the right password: still locked, on the API and on the page.
    refused = api_login(client, organizer.email, PASSWORD, REMOTE_ADDR="198.51.100.77")
    assert refused.status_code == 429
    assert refused.json()["code"] == "throttled"
    assert int(refused["Retry-After"]) == 15 * 60
    assert page_login(client, organizer.email, PASSWORD, REMOTE_ADDR="198.51.100.78").status_code == 429
    # The same email typed another way is the same account.
    assert api_login(client, organizer.email.upper(), PASSWORD, REMOTE_ADDR="198.51.100.79").status_code == 429


def test_sixty_guesses_from_twelve_addresses_are_not_all_checked(client, organizer, monkeypatch):
    from django.contrib.auth.backends import ModelBackend

    checked = []
    original = ModelBackend.authenticate

    def counting(self, request, username=None, password=None, **kwargs):
        checked.append(password)
        return original(self, request, username=username, password=password, **kwargs)

    monkeypatch.setattr(ModelBackend, "authenticate", counting)
    answers = [
        api_login(client, organizer.email, f"wrong-{n}", REMOTE_ADDR=f"203.0.113.{n % 12 + 1}").status_code
        for n in range(60)
    ]

    assert len(checked) == LIMIT
    assert answers.count(401) == LIMIT - 1
    assert answers.count(429) == 60 - LIMIT + 1


def test_one_address_is_locked_for_every_account(client):
    users = [UserFactory(email=f"victim{n}@example.com") for n in range(LIMIT + 2)]
    answers = [api_login(client, user.email, "wrong", REMOTE_ADDR="203.0.113.50").status_code for user in users]

    assert answers[: LIMIT - 1] == [401] * (LIMIT - 1)
    assert set(answers[LIMIT - 1 :]) == {429}
    # Another address is not affected, and neither are the accounts (each failed only once).
    assert api_login(client, users[0].email, PASSWORD, REMOTE_ADDR="198.51.100.1").status_code == 200


def test_forwarded_for_headers_are_ignored_without_a_trusted_proxy(client):
    """Every guess claims another X-Forwarded-For address; the TCP peer is what counts."""
    users = [UserFactory(email=f"spoof{n}@example.com") for n in range(LIMIT + 5)]
    answers = [
        api_login(
            client, user.email, "wrong", REMOTE_ADDR="203.0.113.60", HTTP_X_FORWARDED_FOR=f"10.0.{n}.1"
        ).status_code
        for n, user in enumerate(users)
    ]

    assert answers[LIMIT - 1 :] == [429] * (len(users) - LIMIT + 1)


@override_settings(TRUSTED_PROXY_COUNT=1)
def test_behind_one_trusted_proxy_the_address_it_saw_counts_and_spoofed_hops_do_not(client):
    users = [UserFactory(email=f"proxied{n}@example.com") for n in range(LIMIT + 2)]
    # The client prepends fake hops; the proxy (REMOTE_ADDR) appends the real peer, 198.51.100.9.
    answers = [
        api_login(
            client,
            user.email,
            "wrong",
            REMOTE_ADDR="10.0.0.2",
            HTTP_X_FORWARDED_FOR=f"192.0.2.{n}, 198.51.100.9",
        ).status_code
        for n, user in enumerate(users)
    ]
    assert answers[LIMIT - 1 :] == [429] * (len(users) - LIMIT + 1)

    # Another real client behind the same proxy is not locked.
    other = api_login(client, users[0].email, PASSWORD, REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="198.51.100.10")
    assert other.status_code == 200


def test_counts_live_in_the_shared_cache(client, organizer):
    for n in range(3):
        page_login(client, organizer.email, f"wrong-{n}")

    counters = [key for key in cache._cache if "axes-" in key]  # LocMemCache here; Redis in production
    assert len(counters) == 2  # one for the address, one for the account
    assert sorted(cache.get(key.split(":", 2)[-1]) for key in counters) == [3, 3]


@override_settings(AXES_COOLOFF_TIME=timedelta(seconds=1))
def test_the_lockout_is_short_and_guessing_during_it_does_not_extend_it(client, organizer):
    for n in range(LIMIT):
        page_login(client, organizer.email, f"wrong-{n}")
    for n in range(5):  # the attacker keeps going during the lockout
        assert page_login(client, organizer.email, f"more-{n}").status_code == 429

    time.sleep(1.2)

    assert page_login(client, organizer.email, PASSWORD).status_code == 302
    assert logged_in(client)


def test_a_successful_login_resets_the_count(client, organizer):
    for n in range(LIMIT - 1):
        page_login(client, organizer.email, f"wrong-{n}")
    assert page_login(client, organizer.email, PASSWORD).status_code == 302
    client.post(reverse("logout"))

    for n in range(LIMIT - 1):
        assert page_login(client, organizer.email, f"again-{n}").status_code == 200


def test_the_emailed_reset_link_is_the_way_back_in_while_an_attacker_keeps_the_account_locked(client, organizer):
    attacker = type(client)()
    for n in range(LIMIT + 5):
        page_login(attacker, organizer.email, f"wrong-{n}", REMOTE_ADDR="203.0.113.66")
    assert page_login(client, organizer.email, PASSWORD).status_code == 429

    client.post(reverse("password_reset"), {"email": organizer.email})
    confirm = client.get(RESET_LINK.search(mail.outbox[-1].body).group(1))
    done = client.post(confirm.url, {"new_password1": "fresh-lantern-88", "new_password2": "fresh-lantern-88"})

    # The link logs the owner in, past the lockout, and ends the account's lockout.
    assert done.status_code == 302
    assert logged_in(client)
    client.post(reverse("logout"))
    assert page_login(client, organizer.email, "fresh-lantern-88").status_code == 302
    assert api_login(client, organizer.email, "fresh-lantern-88").status_code == 200


# --- password reset and sign-up ------------------------------------------------------------------


def test_password_reset_emails_are_limited_per_address_asked_for(client, organizer):
    answers = [
        client.post(reverse("password_reset"), {"email": organizer.email}, REMOTE_ADDR=f"203.0.113.{n}").status_code
        for n in range(1, 6)
    ]

    assert answers == [302, 302, 302, 429, 429]
    assert len(mail.outbox) == 3


def test_password_reset_requests_are_limited_per_client_address(client):
    answers = [
        client.post(reverse("password_reset"), {"email": f"someone{n}@example.com"}).status_code for n in range(7)
    ]

    assert answers == [302] * 5 + [429] * 2
    refused = client.post(reverse("password_reset"), {"email": "other@example.com"})
    assert refused["Retry-After"] == "3600"
    assert "Too many reset emails" in refused.content.decode()


def test_sign_ups_are_limited_per_client_address(client):
    def signup(n):
        return client.post(
            reverse("signup"),
            {
                "organization_name": f"Org {n}",
                "email": f"new{n}@example.com",
                "password": "velvet-otter-juggles-42",
            },
        )

    answers = []
    for n in range(12):
        answers.append(signup(n).status_code)
        client.post(reverse("logout"))

    assert answers == [302] * 10 + [429] * 2
    assert "Too many sign-ups" in signup(99).content.decode()


def test_staff_can_lift_a_lockout_from_the_command_line(client, organizer):
    from io import StringIO

    from django.core.management import call_command

    for n in range(LIMIT):
        page_login(client, organizer.email, f"wrong-{n}", REMOTE_ADDR="203.0.113.70")
    assert page_login(client, organizer.email, PASSWORD, REMOTE_ADDR="198.51.100.70").status_code == 429

    call_command("axes_reset_username", organizer.email, stdout=StringIO())

    assert page_login(client, organizer.email, PASSWORD, REMOTE_ADDR="198.51.100.70").status_code == 302


@pytest.mark.parametrize("door", ["page", "api"])
def test_guest_code_guesses_cannot_hide_behind_forged_forwarded_for_headers(client, door):
    """The guest code login (page and API) counts per client address (and per code) the same way."""

    def guess(n):
        headers = {"REMOTE_ADDR": "203.0.113.80", "HTTP_X_FORWARDED_FOR": f"10.1.{n}.1"}
        if door == "page":
            return client.post("/rsvp/", {"code": f"GUESS{n:03d}", "last_name": "x"}, **headers)
        return client.post(
            "/api/v1/auth/guest-login",
            {"code": f"GUESS{n:03d}", "last_name": "x"},
            content_type="application/json",
            **headers,
        )

    answers = [guess(n).status_code for n in range(12)]

    assert 429 not in answers[:10]
    assert answers[10:] == [429, 429]

"""API tokens end when the access they were given for ends, on every path that changes it.

Each trigger (removal from the organization, a new role, deactivation, a new
password, logout, a reused refresh token) is driven through the page, the
admin or the API exactly as people do it, and then the tokens the person held
before are tried again.
"""

import threading
from io import StringIO

import jwt
import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.core.cache import cache
from django.db import connection
from django.test import Client

from eventsaas.models import AuditLog
from tenants import tokens
from tenants.models import Membership, RefreshTokenFamily, Role
from tenants.token_state import organizer_access_is_current
from tests.conftest import PASSWORD
from tests.factories import MembershipFactory, UserFactory

pytestmark = pytest.mark.django_db

TOKEN_URL = "/api/v1/auth/token"
REFRESH_URL = "/api/v1/auth/token/refresh"
LOGOUT_URL = "/api/v1/auth/logout"
NEW_PASSWORD = "brand-new-lantern-77"


def api(client, method, url, token=None, body=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    if body is None:
        return getattr(client, method)(url, **headers)
    return getattr(client, method)(url, body, content_type="application/json", **headers)


def log_in(client, user, password=PASSWORD) -> dict:
    response = api(client, "post", TOKEN_URL, body={"email": user.email, "password": password})
    assert response.status_code == 200, response.content
    return response.json()


def refresh(client, refresh_token):
    return api(client, "post", REFRESH_URL, body={"refresh": refresh_token})


def create_guest(client, event, access):
    return api(client, "post", f"/api/v1/events/{event.pk}/guests", access, {"first_name": "Tok", "last_name": "En"})


def edit_event(client, event, access):
    return api(client, "patch", f"/api/v1/events/{event.pk}", access, {"location": "Somewhere else"})


def claims(token) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


@pytest.fixture
def admin_membership(tenant):
    return MembershipFactory(tenant=tenant, role=Role.ADMIN)


@pytest.fixture
def staff_client(db):
    staff = UserFactory(email="staff@example.com", is_staff=True, is_superuser=True)
    client = Client()
    client.force_login(staff)
    return client


def assert_revoked(client, event, access):
    for response in (create_guest(client, event, access), api(client, "get", f"/api/v1/events/{event.pk}", access)):
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "authentication_failed"


# --- removal from the organization ---------------------------------------------------------------


def test_a_removed_admins_token_no_longer_creates_guests_team_page(client, tenant, owner, event, admin_membership):
    pair = log_in(client, admin_membership.user)
    assert create_guest(client, event, pair["access"]).status_code == 201

    owner_page = Client()
    owner_page.force_login(owner)
    response = owner_page.post(f"/o/{tenant.slug}/team/{admin_membership.pk}/remove/")
    assert response.status_code == 302
    assert not Membership.objects.filter(pk=admin_membership.pk).exists()

    assert_revoked(client, event, pair["access"])
    # A refresh still works, but the new token no longer lists the organization.
    refreshed = refresh(client, pair["refresh"])
    assert refreshed.status_code == 200
    assert str(tenant.pk) not in claims(refreshed.json()["access"])["orgs"]
    assert api(client, "get", f"/api/v1/events/{event.pk}", refreshed.json()["access"]).status_code == 404
    assert AuditLog.objects.filter(action="membership.removed", object_id=admin_membership.pk).exists()


@pytest.mark.parametrize("how", ["membership page", "membership list action", "organization inline"])
def test_a_removed_admins_token_stops_when_staff_remove_them_in_the_admin(
    client, staff_client, tenant, event, admin_membership, how
):
    access = log_in(client, admin_membership.user)["access"]
    assert create_guest(client, event, access).status_code == 201

    if how == "membership page":
        response = staff_client.post(f"/admin/tenants/membership/{admin_membership.pk}/delete/", {"post": "yes"})
    elif how == "membership list action":
        response = staff_client.post(
            "/admin/tenants/membership/",
            {"action": "delete_selected", "_selected_action": [admin_membership.pk], "post": "yes"},
        )
    else:
        response = staff_client.post(
            f"/admin/tenants/tenant/{tenant.pk}/change/", _tenant_form(tenant, delete=admin_membership)
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    assert not Membership.objects.filter(pk=admin_membership.pk).exists()

    assert_revoked(client, event, access)


def _tenant_form(tenant, *, delete=None, role_of=None, role=None) -> dict:
    members = list(Membership.objects.filter(tenant=tenant).order_by("created_at"))
    data = {
        "name": tenant.name,
        "slug": tenant.slug,
        "memberships-TOTAL_FORMS": str(len(members)),
        "memberships-INITIAL_FORMS": str(len(members)),
        "memberships-MIN_NUM_FORMS": "0",
        "memberships-MAX_NUM_FORMS": "1000",
    }
    for n, member in enumerate(members):
        data[f"memberships-{n}-id"] = str(member.pk)
        data[f"memberships-{n}-tenant"] = str(tenant.pk)
        data[f"memberships-{n}-user"] = str(member.user_id)
        data[f"memberships-{n}-role"] = role if member == role_of else member.role
        if member == delete:
            data[f"memberships-{n}-DELETE"] = "on"
    return data


# --- role change ---------------------------------------------------------------------------------


def test_a_demoted_admin_no_longer_edits_the_event_team_page(client, tenant, owner, event, admin_membership):
    pair = log_in(client, admin_membership.user)
    assert edit_event(client, event, pair["access"]).status_code == 200

    owner_page = Client()
    owner_page.force_login(owner)
    response = owner_page.post(
        f"/o/{tenant.slug}/team/{admin_membership.pk}/role/", {f"{admin_membership.pk}-role": Role.VIEWER}
    )
    assert response.status_code == 302
    admin_membership.refresh_from_db()
    assert admin_membership.role == Role.VIEWER

    assert edit_event(client, event, pair["access"]).status_code == 401
    # Refreshing gives the new role: reading works, editing is refused.
    access = refresh(client, pair["refresh"]).json()["access"]
    assert claims(access)["orgs"][str(tenant.pk)]["role"] == Role.VIEWER
    assert api(client, "get", f"/api/v1/events/{event.pk}", access).status_code == 200
    assert edit_event(client, event, access).status_code == 403


@pytest.mark.parametrize("how", ["membership page", "organization inline"])
def test_a_demoted_admin_no_longer_edits_the_event_admin(client, staff_client, tenant, event, admin_membership, how):
    access = log_in(client, admin_membership.user)["access"]
    assert edit_event(client, event, access).status_code == 200

    if how == "membership page":
        response = staff_client.post(
            f"/admin/tenants/membership/{admin_membership.pk}/change/",
            {"tenant": tenant.pk, "user": admin_membership.user_id, "role": Role.VIEWER},
        )
    else:
        response = staff_client.post(
            f"/admin/tenants/tenant/{tenant.pk}/change/",
            _tenant_form(tenant, role_of=admin_membership, role=Role.VIEWER),
        )
    assert response.status_code == 302, response.content.decode()[:2000]
    admin_membership.refresh_from_db()
    assert admin_membership.role == Role.VIEWER

    assert edit_event(client, event, access).status_code == 401


def test_only_owners_change_roles_and_the_last_owner_is_not_changed_on_the_team_page(
    client, tenant, owner, admin_membership
):
    admin_page = Client()
    admin_page.force_login(admin_membership.user)
    owner_membership = Membership.objects.get(user=owner)

    assert admin_page.post(f"/o/{tenant.slug}/team/{owner_membership.pk}/remove/").status_code == 403
    owner_page = Client()
    owner_page.force_login(owner)
    owner_page.post(f"/o/{tenant.slug}/team/{owner_membership.pk}/remove/")
    owner_page.post(f"/o/{tenant.slug}/team/{owner_membership.pk}/role/", {f"{owner_membership.pk}-role": "viewer"})

    assert Membership.objects.get(pk=owner_membership.pk).role == Role.OWNER
    assert Membership.objects.get(pk=admin_membership.pk).role == Role.ADMIN


# --- deactivation --------------------------------------------------------------------------------


def test_a_deactivated_account_loses_its_access_and_refresh_tokens(client, staff_client, event, admin_membership):
    user = admin_membership.user
    pair = log_in(client, user)
    response = staff_client.post(
        f"/admin/tenants/user/{user.pk}/change/",
        {"email": user.email, "first_name": user.first_name, "last_name": "", "is_staff": "", "is_active": ""},
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    user.refresh_from_db()
    assert not user.is_active

    assert_revoked(client, event, pair["access"])
    assert refresh(client, pair["refresh"]).status_code == 401
    assert AuditLog.objects.filter(action="user.deactivated", object_id=user.pk).exists()


# --- password change: every path --------------------------------------------------------------


def _change_password_on_account_page(user):
    page = Client()
    page.force_login(user)
    response = page.post(
        "/app/account/",
        {"old_password": PASSWORD, "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    # The browser that changed it stays logged in.
    assert page.get("/app/organizations/").status_code == 200


def _change_password_with_the_reset_link(user):
    import re

    page = Client()
    page.post("/password-reset/", {"email": user.email})
    link = re.search(r"https?://testserver(/reset/[^/\s]+/[^/\s]+/)", mail.outbox[-1].body).group(1)
    confirm = page.get(link)
    response = page.post(confirm.url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD})
    assert response.status_code == 302


def _change_password_in_the_admin(user):
    staff = Client()
    staff.force_login(UserFactory(is_staff=True, is_superuser=True))
    response = staff.post(
        f"/admin/tenants/user/{user.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD, "usable_password": "true"},
    )
    assert response.status_code == 302, response.content.decode()[:2000]


def _change_password_with_manage_py(user):
    """Django's own `changepassword` command (its handle(): the migration check before it inspects tables raw)."""
    import getpass

    from django.contrib.auth.management.commands.changepassword import Command

    answers = iter([NEW_PASSWORD, NEW_PASSWORD])
    original = getpass.getpass
    getpass.getpass = lambda prompt="": next(answers)
    try:
        Command(stdout=StringIO()).handle(username=user.email, database="default")
    finally:
        getpass.getpass = original


@pytest.mark.parametrize(
    "change",
    [
        _change_password_on_account_page,
        _change_password_with_the_reset_link,
        _change_password_in_the_admin,
        _change_password_with_manage_py,
    ],
    ids=["account page", "reset link", "admin", "manage.py changepassword"],
)
def test_a_new_password_ends_every_token_from_before(client, event, admin_membership, change):
    user = admin_membership.user
    first, second = log_in(client, user), log_in(client, user)

    change(user)

    user.refresh_from_db()
    assert user.check_password(NEW_PASSWORD)
    for pair in (first, second):
        assert_revoked(client, event, pair["access"])
        refused = refresh(client, pair["refresh"])
        assert refused.status_code == 401
        assert refused.json()["code"] == "token_not_valid"
    # The new password gives working tokens.
    fresh = log_in(client, user, NEW_PASSWORD)
    assert create_guest(client, event, fresh["access"]).status_code == 201


# --- logout and refresh rotation ------------------------------------------------------------------


def test_logout_revokes_that_login_and_only_that_login(client, event, admin_membership):
    user = admin_membership.user
    phone, laptop = log_in(client, user), log_in(client, user)

    response = api(client, "post", LOGOUT_URL, body={"refresh": phone["refresh"]})
    assert response.status_code == 204

    assert_revoked(client, event, phone["access"])
    assert refresh(client, phone["refresh"]).status_code == 401
    # The other login is untouched.
    assert create_guest(client, event, laptop["access"]).status_code == 201
    assert refresh(client, laptop["refresh"]).status_code == 200
    # Logging out twice is harmless; garbage and access tokens are refused.
    assert api(client, "post", LOGOUT_URL, body={"refresh": phone["refresh"]}).status_code == 204
    assert api(client, "post", LOGOUT_URL, body={"refresh": "not.a.token"}).status_code == 401
    assert api(client, "post", LOGOUT_URL, body={"refresh": laptop["access"]}).status_code == 401


def test_refresh_rotates_and_the_used_token_cannot_refresh_again(client, event, admin_membership):
    first = log_in(client, admin_membership.user)
    second = refresh(client, first["refresh"]).json()

    assert set(second) == {"access", "refresh"}
    assert second["refresh"] != first["refresh"]
    assert claims(second["refresh"])["fam"] == claims(first["refresh"])["fam"]
    assert claims(second["refresh"])["gen"] == claims(first["refresh"])["gen"] + 1
    # The family keeps its first expiry: rotating does not stretch a login forever.
    assert claims(second["refresh"])["exp"] == claims(first["refresh"])["exp"]
    third = refresh(client, second["refresh"])
    assert third.status_code == 200
    assert create_guest(client, event, third.json()["access"]).status_code == 201


def test_a_reused_refresh_token_revokes_its_whole_family(client, event, admin_membership):
    user = admin_membership.user
    stolen = log_in(client, user)
    legit = refresh(client, stolen["refresh"]).json()  # the owner refreshes: `stolen` is used up
    other_login = log_in(client, user)

    replay = refresh(client, stolen["refresh"])

    assert replay.status_code == 401
    assert replay.json()["code"] == "token_reused"
    # Everything of that family is dead: the newest refresh token and the access tokens.
    assert refresh(client, legit["refresh"]).status_code == 401
    assert_revoked(client, event, legit["access"])
    assert_revoked(client, event, stolen["access"])
    # Another login of the same person is not affected.
    assert create_guest(client, event, other_login["access"]).status_code == 201
    family = RefreshTokenFamily.objects.get(pk=claims(stolen["refresh"])["fam"])
    assert family.revoked_reason == "reuse"
    assert AuditLog.objects.filter(action="tokens.refresh_reused", object_id=family.pk).exists()


@pytest.mark.django_db(transaction=True)
def test_two_refreshes_with_one_token_at_once_give_one_new_token(admin_membership):
    """The compare-and-set on the family's generation, from parallel connections."""
    pair = tokens.organizer_token_pair(admin_membership.user)
    barrier, results = threading.Barrier(6), []

    def race():
        try:
            barrier.wait()
            results.append(tokens.organizer_token_refresh(pair["refresh"]))
        except tokens.TokenError as exc:
            results.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=race) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sum(isinstance(result, dict) for result in results) <= 1
    assert RefreshTokenFamily.objects.get(pk=claims(pair["refresh"])["fam"]).generation <= 1


# --- cost ------------------------------------------------------------------------------------------


def test_the_check_costs_no_query_when_cached_and_two_when_not(django_assert_num_queries, admin_membership):
    access = tokens.organizer_token_pair(admin_membership.user)["access"]
    token_claims = claims(access)

    with django_assert_num_queries(0):
        assert organizer_access_is_current(token_claims)
    cache.clear()
    with django_assert_num_queries(2):
        assert organizer_access_is_current(token_claims)
    with django_assert_num_queries(0):
        assert organizer_access_is_current(token_claims)


def test_tokens_without_a_version_or_family_are_refused(client, event, admin_membership):
    """Tokens signed before versions existed (or forged without them) do not pass."""
    access = tokens.organizer_token_pair(admin_membership.user)["access"]
    token_claims = claims(access)
    for missing in ("ver", "fam"):
        stripped = {key: value for key, value in token_claims.items() if key != missing}
        assert api(client, "get", f"/api/v1/events/{event.pk}", tokens.sign(stripped)).status_code == 401
    assert not organizer_access_is_current({**token_claims, "ver": token_claims["ver"] + 1})
    assert not organizer_access_is_current({**token_claims, "ver": True})


def test_deleting_the_account_ends_its_tokens(client, staff_client, event, admin_membership):
    user = admin_membership.user
    access = log_in(client, user)["access"]
    assert create_guest(client, event, access).status_code == 201

    response = staff_client.post(f"/admin/tenants/user/{user.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not get_user_model().objects.filter(pk=user.pk).exists()

    assert_revoked(client, event, access)


def test_expired_families_are_cleaned_up_daily(admin_membership):
    from datetime import timedelta

    from django.conf import settings
    from django.utils import timezone

    from eventsaas.celery import app
    from tenants.tasks import token_families_cleanup_task

    live = tokens.organizer_token_pair(admin_membership.user)
    old = RefreshTokenFamily.objects.create(user=admin_membership.user, expires_at=timezone.now() - timedelta(hours=1))

    assert token_families_cleanup_task.delay().result == 1
    assert not RefreshTokenFamily.objects.filter(pk=old.pk).exists()
    assert RefreshTokenFamily.objects.filter(pk=claims(live["refresh"])["fam"]).exists()
    entry = settings.CELERY_BEAT_SCHEDULE["tenants.token_families_cleanup"]
    assert entry["task"] in app.tasks

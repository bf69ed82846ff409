"""Organizer accounts: sign up, log in and out, reset a forgotten password."""

import re

import pytest
from django.contrib.auth import SESSION_KEY
from django.core import mail
from django.urls import reverse

from tenants.models import Membership, Role, Tenant, User
from tests.conftest import PASSWORD
from tests.factories import MembershipFactory, TenantFactory, UserFactory

pytestmark = pytest.mark.django_db

STRONG_PASSWORD = "velvet-otter-juggles-42"


def signup_data(**overrides):
    data = {
        "organization_name": "Smith Wedding",
        "first_name": "Jane",
        "last_name": "Smith",
        "email": "jane@example.com",
        "password": STRONG_PASSWORD,
    }
    data.update(overrides)
    return data


def logged_in_user_id(client):
    return client.session.get(SESSION_KEY)


# --- sign up -----------------------------------------------------------------


def test_signup_creates_user_organization_and_owner_membership_and_logs_in(client):
    response = client.post(reverse("signup"), signup_data())

    user = User.objects.get(email="jane@example.com")
    tenant = Tenant.objects.get(name="Smith Wedding")
    assert tenant.slug == "smith-wedding"
    assert response.status_code == 302
    assert response.url == reverse("events:list", kwargs={"tenant_slug": "smith-wedding"})
    assert (user.first_name, user.last_name) == ("Jane", "Smith")
    assert user.check_password(STRONG_PASSWORD)
    membership = Membership.objects.get(user=user)
    assert membership.tenant == tenant
    assert membership.role == Role.OWNER
    # The new organizer is logged in and can open the organization right away.
    assert logged_in_user_id(client) == str(user.pk)
    page = client.get(response.url)
    assert page.status_code == 200
    assert page.context["request"].membership == membership


def test_signup_stores_email_in_lower_case(client):
    client.post(reverse("signup"), signup_data(email="Jane.Smith@Example.COM"))

    assert User.objects.filter(email="jane.smith@example.com").exists()


def test_two_organizations_with_the_same_name_get_different_slugs(client):
    client.post(reverse("signup"), signup_data(email="first@example.com"))
    client.post(reverse("logout"))
    client.post(reverse("signup"), signup_data(email="second@example.com"))

    tenants = Tenant.objects.filter(name="Smith Wedding")
    slugs = {t.slug for t in tenants}
    assert len(slugs) == 2
    assert "smith-wedding" in slugs
    first = Membership.objects.get(user__email="first@example.com").tenant
    second = Membership.objects.get(user__email="second@example.com").tenant
    assert first != second
    # Each owner lands in their own organization, not the namesake.
    assert client.get(reverse("events:list", kwargs={"tenant_slug": second.slug})).status_code == 200
    assert client.get(reverse("events:list", kwargs={"tenant_slug": first.slug})).status_code == 404


def test_signup_slug_does_not_take_an_existing_organizations_slug(client):
    existing = TenantFactory(name="Something else", slug="smith-wedding")

    client.post(reverse("signup"), signup_data())

    new = Tenant.objects.get(name="Smith Wedding")
    assert new.slug != existing.slug
    assert new.slug.startswith("smith-wedding")


def test_signup_with_duplicate_email_shows_field_error_and_creates_nothing(client, snapshot):
    UserFactory(email="jane@example.com")
    before = snapshot()

    response = client.post(reverse("signup"), signup_data(email="JANE@example.com", organization_name="Another org"))

    assert response.status_code == 400
    assert "email" in response.context["form"].errors
    assert "An account with this email already exists." in response.context["form"].errors["email"]
    assert re.search(r'<input[^>]*name="email"[^>]*aria-invalid="true"', response.content.decode())
    assert snapshot() == before
    assert not Tenant.objects.filter(name="Another org").exists()
    assert logged_in_user_id(client) is None


@pytest.mark.parametrize("weak_password", ["password", "12345678901", "short1!"])
def test_signup_with_weak_password_shows_error_on_password_and_creates_nothing(client, snapshot, weak_password):
    before = snapshot()

    response = client.post(reverse("signup"), signup_data(password=weak_password))

    assert response.status_code == 400
    form = response.context["form"]
    assert list(form.errors) == ["password"]
    assert re.search(r'<input[^>]*name="password"[^>]*aria-invalid="true"', response.content.decode())
    assert snapshot() == before
    assert logged_in_user_id(client) is None


def test_signup_that_cannot_create_the_organization_leaves_no_orphan_account(client, snapshot, monkeypatch):
    # Every slug candidate collides (as when sign-ups race): the organization cannot be
    # created, so the account must not be created either, or the email is burnt.
    TenantFactory(slug="taken")
    monkeypatch.setattr("tenants.services._unique_tenant_slug", lambda name: "taken")
    before = snapshot()

    response = client.post(reverse("signup"), signup_data())

    assert response.status_code == 400
    assert response.context["form"].non_field_errors()
    assert snapshot() == before
    assert logged_in_user_id(client) is None


def test_signup_missing_organization_name_is_a_field_error(client, snapshot):
    before = snapshot()

    response = client.post(reverse("signup"), signup_data(organization_name=""))

    assert response.status_code == 400
    assert "organization_name" in response.context["form"].errors
    assert snapshot() == before


# --- login / logout ------------------------------------------------------------


@pytest.fixture
def organizer(tenant):
    return MembershipFactory(tenant=tenant, role=Role.OWNER, user__email="organizer@example.com").user


def test_organizer_logs_in_with_email_and_password(client, organizer, tenant):
    response = client.post(reverse("login"), {"username": "organizer@example.com", "password": PASSWORD})

    assert response.status_code == 302
    assert response.url == reverse("tenants:home")
    assert logged_in_user_id(client) == str(organizer.pk)
    # With one organization, home goes straight to it.
    home = client.get(response.url)
    assert home.url == reverse("events:list", kwargs={"tenant_slug": tenant.slug})
    assert client.get(home.url).status_code == 200


def test_login_follows_next_to_the_page_that_asked_for_it(client, organizer, tenant):
    target = reverse("events:list", kwargs={"tenant_slug": tenant.slug})
    gate = client.get(target)
    assert gate.status_code == 302
    assert gate.url.startswith(reverse("login"))

    response = client.post(gate.url, {"username": "organizer@example.com", "password": PASSWORD, "next": target})

    assert response.status_code == 302
    assert response.url == target


def test_login_with_wrong_password_is_refused(client, organizer):
    response = client.post(reverse("login"), {"username": "organizer@example.com", "password": "not the password"})

    assert response.status_code == 200
    assert response.context["form"].non_field_errors()
    assert logged_in_user_id(client) is None


def test_login_with_unknown_email_is_refused(client, organizer):
    response = client.post(reverse("login"), {"username": "nobody@example.com", "password": PASSWORD})

    assert response.context["form"].non_field_errors()
    assert logged_in_user_id(client) is None


def test_organizer_can_log_in_with_the_email_as_typed_at_sign_up(client):
    # Sign-up stores the address in lower case; logging in with exactly what was typed must still work.
    client.post(reverse("signup"), signup_data(email="Jane.Smith@Example.com"))
    client.post(reverse("logout"))
    user = User.objects.get(email="jane.smith@example.com")

    response = client.post(reverse("login"), {"username": "Jane.Smith@Example.com", "password": STRONG_PASSWORD})

    assert response.status_code == 302
    assert logged_in_user_id(client) == str(user.pk)


def test_logout_by_post_ends_the_session(client, organizer, tenant):
    client.post(reverse("login"), {"username": "organizer@example.com", "password": PASSWORD})
    org_page = reverse("events:list", kwargs={"tenant_slug": tenant.slug})
    assert client.get(org_page).status_code == 200

    response = client.post(reverse("logout"))

    assert response.status_code == 302
    assert response.url == reverse("landing")
    assert logged_in_user_id(client) is None
    after = client.get(org_page)
    assert after.status_code == 302
    assert after.url.startswith(reverse("login"))


def test_logout_by_get_is_not_allowed(client, organizer):
    client.force_login(organizer)

    response = client.get(reverse("logout"))

    assert response.status_code == 405
    assert logged_in_user_id(client) == str(organizer.pk)


# --- password reset ------------------------------------------------------------

RESET_LINK = re.compile(r"https?://testserver(/reset/[^/\s]+/[^/\s]+/)")


def test_password_reset_email_link_sets_a_new_password_that_logs_in(client, organizer):
    response = client.post(reverse("password_reset"), {"email": "organizer@example.com"})
    assert response.status_code == 302
    assert response.url == reverse("password_reset_done")

    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["organizer@example.com"]
    link = RESET_LINK.search(message.body)
    assert link, message.body

    # The link redirects to a token-less URL that shows the new-password form.
    confirm = client.get(link.group(1))
    assert confirm.status_code == 302
    form_page = client.get(confirm.url)
    assert form_page.status_code == 200
    assert form_page.context["validlink"] is True

    new_password = "brand-new-lantern-77"
    done = client.post(confirm.url, {"new_password1": new_password, "new_password2": new_password})
    assert done.status_code == 302
    # The link also logs the person in (the way back in when an attacker keeps the login locked).
    assert done.url == reverse("tenants:home")
    assert logged_in_user_id(client) == str(organizer.pk)

    organizer.refresh_from_db()
    assert organizer.check_password(new_password)
    assert not organizer.check_password(PASSWORD)

    client.post(reverse("logout"))
    old = client.post(reverse("login"), {"username": "organizer@example.com", "password": PASSWORD})
    assert old.status_code == 200
    assert logged_in_user_id(client) is None
    new = client.post(reverse("login"), {"username": "organizer@example.com", "password": new_password})
    assert new.status_code == 302
    assert logged_in_user_id(client) == str(organizer.pk)


def test_password_reset_link_works_only_once(client, organizer):
    client.post(reverse("password_reset"), {"email": "organizer@example.com"})
    path = RESET_LINK.search(mail.outbox[0].body).group(1)
    confirm = client.get(path)
    client.post(confirm.url, {"new_password1": "brand-new-lantern-77", "new_password2": "brand-new-lantern-77"})

    again = client.get(path, follow=True)

    assert again.context["validlink"] is False
    organizer.refresh_from_db()
    assert organizer.check_password("brand-new-lantern-77")


def test_password_reset_rejects_a_weak_new_password(client, organizer):
    client.post(reverse("password_reset"), {"email": "organizer@example.com"})
    confirm = client.get(RESET_LINK.search(mail.outbox[0].body).group(1))

    response = client.post(confirm.url, {"new_password1": "password", "new_password2": "password"})

    assert response.status_code == 200
    assert response.context["form"].errors
    organizer.refresh_from_db()
    assert organizer.check_password(PASSWORD)


def test_password_reset_for_unknown_email_sends_nothing_but_looks_the_same(client, organizer):
    response = client.post(reverse("password_reset"), {"email": "stranger@example.com"})

    assert response.status_code == 302
    assert response.url == reverse("password_reset_done")
    assert mail.outbox == []

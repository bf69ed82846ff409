"""Teammate invitations: who may invite, the emailed link, accepting it once and in time."""

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.contrib.auth import SESSION_KEY
from django.core import mail
from django.core.exceptions import PermissionDenied, ValidationError
from django.urls import reverse
from django.utils import timezone

from eventsaas.models import AuditLog, FailedTask
from eventsaas.tasks import task_by_name
from tenants import services
from tenants.models import Invitation, Membership, Role, User
from tests.conftest import PASSWORD
from tests.factories import MembershipFactory, TenantFactory, UserFactory
from tests.support.commits import after_commit

pytestmark = pytest.mark.django_db

NEW_PASSWORD = "velvet-otter-juggles-42"
ACCEPT_LINK = re.compile(r"https?://testserver(/app/invitations/[^/\s]+/)")


def team_url(tenant):
    return reverse("tenants:team", kwargs={"tenant_slug": tenant.slug})


def accept_url(invitation):
    return reverse("tenants:invitation_accept", args=[invitation.token])


def org_url(tenant):
    return reverse("events:list", kwargs={"tenant_slug": tenant.slug})


# --- inviting -------------------------------------------------------------------


@pytest.mark.parametrize("role", [Role.ADMIN, Role.VIEWER])
def test_owner_invites_teammate_by_email_with_accept_link(owner_client, tenant, owner, role):
    with after_commit():
        response = owner_client.post(team_url(tenant), {"email": "Teammate@Example.com", "role": role})

    assert response.status_code == 302
    assert response.url == team_url(tenant)
    invitation = Invitation.objects.get(tenant=tenant)
    assert invitation.email == "teammate@example.com"
    assert invitation.role == role
    assert invitation.invited_by == owner
    assert invitation.accepted_at is None
    assert invitation.is_usable()

    assert len(mail.outbox) == 1
    message = mail.outbox[0]
    assert message.to == ["teammate@example.com"]
    assert tenant.name in message.subject
    link = ACCEPT_LINK.search(message.body)
    assert link, message.body
    assert link.group(1) == accept_url(invitation)
    assert AuditLog.objects.filter(tenant=tenant, action="invitation.created", object_id=invitation.pk).exists()

    # The team page lists the pending invitation.
    assert "teammate@example.com" in owner_client.get(team_url(tenant)).content.decode()


@pytest.mark.parametrize("role", [Role.ADMIN, Role.VIEWER])
def test_admin_and_viewer_cannot_invite(member_client, tenant, role, snapshot):
    client = member_client(role)
    before = snapshot()

    response = client.post(team_url(tenant), {"email": "teammate@example.com", "role": Role.ADMIN})

    assert response.status_code == 403
    assert not Invitation.objects.exists()
    assert mail.outbox == []
    assert snapshot() == before


@pytest.mark.parametrize("role", [Role.ADMIN, Role.VIEWER])
def test_admin_and_viewer_see_no_invite_form(member_client, tenant, role):
    response = member_client(role).get(team_url(tenant))

    assert response.status_code == 200
    assert 'name="role"' not in response.content.decode()


def test_owner_cannot_invite_someone_as_owner(owner_client, tenant, snapshot):
    before = snapshot()

    response = owner_client.post(team_url(tenant), {"email": "teammate@example.com", "role": Role.OWNER})

    assert response.status_code == 400
    assert "role" in response.context["form"].errors
    assert mail.outbox == []
    assert snapshot() == before


def test_owner_cannot_invite_an_existing_member(owner_client, tenant, snapshot):
    MembershipFactory(tenant=tenant, role=Role.VIEWER, user__email="already@example.com")
    before = snapshot()

    response = owner_client.post(team_url(tenant), {"email": "Already@example.com", "role": Role.ADMIN})

    assert response.status_code == 400
    assert "email" in response.context["form"].errors
    assert mail.outbox == []
    assert snapshot() == before


# --- accepting as a new person -----------------------------------------------------


@pytest.mark.parametrize("role", [Role.ADMIN, Role.VIEWER])
def test_accepting_as_new_person_creates_account_and_membership_with_invited_role(
    client, tenant, make_invitation, role
):
    invitation = make_invitation(email="newcomer@example.com", role=role)
    page = client.get(accept_url(invitation))
    assert page.status_code == 200
    assert page.context["usable"] is True

    response = client.post(accept_url(invitation), {"first_name": "Nina", "last_name": "New", "password": NEW_PASSWORD})

    assert response.status_code == 302
    assert response.url == org_url(tenant)
    user = User.objects.get(email="newcomer@example.com")
    assert (user.first_name, user.last_name) == ("Nina", "New")
    assert user.check_password(NEW_PASSWORD)
    membership = Membership.objects.get(user=user)
    assert membership.tenant == tenant
    assert membership.role == role
    invitation.refresh_from_db()
    assert invitation.accepted_at is not None
    assert invitation.accepted_by == user
    # Logged in as the new account, with the invited role's rights.
    assert client.session[SESSION_KEY] == str(user.pk)
    assert client.get(org_url(tenant)).status_code == 200
    new_event = client.post(reverse("events:create", kwargs={"tenant_slug": tenant.slug}), {"name": ""})
    assert new_event.status_code == (400 if role == Role.ADMIN else 403)


def test_full_invite_flow_from_the_email_link(owner_client, client, tenant):
    with after_commit():
        owner_client.post(team_url(tenant), {"email": "friend@example.com", "role": Role.VIEWER})
    owner_client.logout()
    link = ACCEPT_LINK.search(mail.outbox[0].body).group(1)

    response = client.post(link, {"password": NEW_PASSWORD})

    assert response.status_code == 302
    assert Membership.objects.get(user__email="friend@example.com").role == Role.VIEWER
    # And the new teammate can log in later with the password chosen.
    client.logout()
    login = client.post(reverse("login"), {"username": "friend@example.com", "password": NEW_PASSWORD})
    assert login.status_code == 302


def test_accepting_as_new_person_with_weak_password_creates_nothing(client, make_invitation, snapshot):
    invitation = make_invitation()
    before = snapshot()

    response = client.post(accept_url(invitation), {"password": "password"})

    assert response.status_code == 400
    assert "password" in response.context["form"].errors
    assert re.search(r'<input[^>]*name="password"[^>]*aria-invalid="true"', response.content.decode())
    assert snapshot() == before
    assert SESSION_KEY not in client.session


def test_accepting_anonymously_for_an_existing_account_asks_to_log_in(client, make_invitation, snapshot):
    UserFactory(email="newcomer@example.com")
    invitation = make_invitation(email="newcomer@example.com")
    before = snapshot()

    response = client.post(accept_url(invitation), {"password": NEW_PASSWORD})

    assert response.status_code == 400
    assert "log in to accept" in response.content.decode()
    assert snapshot() == before
    assert SESSION_KEY not in client.session


def test_signup_from_a_concurrently_used_invitation_leaves_no_orphan_account(make_invitation):
    invitation = make_invitation(email="newcomer@example.com")
    stale_copy = Invitation.objects.get(pk=invitation.pk)
    # Accepted meanwhile (another tab of the invited person, say).
    Invitation.objects.filter(pk=invitation.pk).update(accepted_at=timezone.now())

    # The stale copy still looks usable; the compare-and-set in the database refuses it.
    with pytest.raises(ValidationError):
        services.user_signup_from_invitation(invitation=stale_copy, password=NEW_PASSWORD)

    assert not User.objects.filter(email="newcomer@example.com").exists()


# --- accepting with an existing account ------------------------------------------------


def test_accepting_while_logged_in_adds_a_membership_to_the_existing_account(client, tenant, make_invitation):
    home_org = TenantFactory(name="Home Org")
    user = MembershipFactory(tenant=home_org, role=Role.OWNER).user
    invitation = make_invitation(email=user.email, role=Role.VIEWER)
    client.force_login(user)
    users_before = User.objects.count()

    page = client.get(accept_url(invitation))
    assert page.status_code == 200
    response = client.post(accept_url(invitation))

    assert response.status_code == 302
    assert response.url == org_url(tenant)
    assert User.objects.count() == users_before
    memberships = {m.tenant_id: m.role for m in Membership.objects.filter(user=user)}
    assert memberships == {home_org.pk: Role.OWNER, tenant.pk: Role.VIEWER}

    organizations = client.get(reverse("tenants:switch"))
    assert organizations.status_code == 200
    html = organizations.content.decode()
    assert tenant.name in html and org_url(tenant) in html
    assert home_org.name in html and org_url(home_org) in html
    assert client.get(org_url(tenant)).status_code == 200
    assert client.get(org_url(home_org)).status_code == 200
    # Each organization keeps its own role: viewer here, owner at home.
    assert client.post(reverse("events:create", kwargs={"tenant_slug": tenant.slug}), {"name": ""}).status_code == 403
    assert client.post(reverse("events:create", kwargs={"tenant_slug": home_org.slug}), {"name": ""}).status_code == 400


def test_another_organizations_owner_cannot_take_an_invitation_meant_for_someone_else(
    client, tenant, make_invitation, snapshot
):
    """The reported attack: logged in as B's owner, opening A's invitation for another address."""
    intruder = MembershipFactory(tenant=TenantFactory(name="Rival Org"), role=Role.OWNER).user
    invitation = make_invitation(email="invited@example.com", role=Role.ADMIN)
    client.force_login(intruder)
    before = snapshot()

    page = client.get(accept_url(invitation))
    response = client.post(accept_url(invitation))

    assert page.status_code == 200
    assert "sent to invited@example.com" in page.content.decode()
    assert 'data-testid="wrong-account"' in page.content.decode()
    assert response.status_code == 403
    assert snapshot() == before
    assert not Membership.objects.filter(user=intruder, tenant=tenant).exists()
    invitation.refresh_from_db()
    assert invitation.accepted_at is None
    # The service refuses too, whatever calls it.
    with pytest.raises(PermissionDenied):
        services.invitation_accept(invitation=invitation, user=intruder)


def test_the_invited_address_matches_in_any_case(client, tenant, make_invitation):
    user = UserFactory(email="mixed@example.com")
    invitation = make_invitation(email="Mixed@Example.com")
    client.force_login(user)

    assert client.post(accept_url(invitation)).status_code == 302
    assert Membership.objects.filter(user=user, tenant=tenant).exists()


def test_signing_up_from_an_invitation_uses_the_invited_address_and_counts_as_verified(client, make_invitation):
    invitation = make_invitation(email="newcomer@example.com")

    response = client.post(accept_url(invitation), {"password": NEW_PASSWORD, "email": "other@example.com"})

    assert response.status_code == 302
    user = User.objects.get(email="newcomer@example.com")
    assert user.is_email_verified
    assert not User.objects.filter(email="other@example.com").exists()


def test_home_with_two_organizations_offers_a_choice(client, tenant, make_invitation):
    user = MembershipFactory(role=Role.OWNER).user
    client.force_login(user)
    client.post(accept_url(make_invitation(email=user.email)))
    session = client.session
    session.pop("active_tenant", None)
    session.save()

    response = client.get(reverse("tenants:home"))

    assert response.status_code == 200
    assert len(response.context["memberships"]) == 2


# --- single use and expiry -------------------------------------------------------------


def test_invitation_cannot_be_used_twice(client, tenant, make_invitation, snapshot):
    invitation = make_invitation(email="newcomer@example.com", role=Role.ADMIN)
    assert client.post(accept_url(invitation), {"password": NEW_PASSWORD}).status_code == 302
    client.logout()

    # A second person with the link, logged in with their own account, cannot join with it.
    other = MembershipFactory(role=Role.OWNER).user
    client.force_login(other)
    before = snapshot()
    page = client.get(accept_url(invitation))
    response = client.post(accept_url(invitation))

    assert page.context["usable"] is False
    assert response.status_code != 302
    assert "expired or was already used" in response.content.decode()
    assert snapshot() == before
    assert not Membership.objects.filter(tenant=tenant, user=other).exists()
    assert client.get(org_url(tenant)).status_code == 404


def test_used_invitation_cannot_create_a_second_account(client, tenant, make_invitation, snapshot):
    invitation = make_invitation(email="newcomer@example.com")
    client.post(accept_url(invitation), {"password": NEW_PASSWORD})
    client.logout()
    before = snapshot()

    response = client.post(accept_url(invitation), {"password": "another-strong-pass-99"})

    assert response.status_code != 302
    assert "expired or was already used" in response.content.decode()
    assert snapshot() == before
    assert SESSION_KEY not in client.session


def test_service_refuses_a_used_invitation(make_invitation):
    invitation = make_invitation()
    invited = UserFactory(email=invitation.email)
    services.invitation_accept(invitation=invitation, user=invited)

    with pytest.raises(ValidationError):
        services.invitation_accept(invitation=invitation, user=invited)

    assert Membership.objects.filter(tenant=invitation.tenant, role=invitation.role).count() == 1


def test_expired_invitation_is_refused_to_a_new_person(client, make_invitation, snapshot):
    invitation = make_invitation(email="late@example.com", expires_in=-timedelta(minutes=1))
    before = snapshot()

    page = client.get(accept_url(invitation))
    response = client.post(accept_url(invitation), {"password": NEW_PASSWORD})

    assert page.status_code == 200
    assert page.context["usable"] is False
    assert "expired or was already used" in page.content.decode()
    assert response.status_code != 302
    assert snapshot() == before
    assert not User.objects.filter(email="late@example.com").exists()
    assert SESSION_KEY not in client.session


def test_expired_invitation_is_refused_to_a_logged_in_user(client, tenant, make_invitation, snapshot):
    user = UserFactory()
    invitation = make_invitation(email=user.email, expires_in=-timedelta(seconds=1))
    client.force_login(user)
    before = snapshot()

    response = client.post(accept_url(invitation))

    assert response.status_code != 302
    assert "expired or was already used" in response.content.decode()
    assert snapshot() == before
    assert client.get(org_url(tenant)).status_code == 404


def test_invitation_expires_after_seven_days(owner_client, tenant):
    owner_client.post(team_url(tenant), {"email": "teammate@example.com", "role": Role.ADMIN})
    invitation = Invitation.objects.get()

    assert invitation.is_usable(invitation.created_at + timedelta(days=6, hours=23))
    assert not invitation.is_usable(invitation.created_at + timedelta(days=7, minutes=1))


def test_unknown_invitation_token_is_404(client, db):
    assert client.get(reverse("tenants:invitation_accept", args=["no-such-token"])).status_code == 404


def test_login_link_on_invitation_page_returns_to_the_invitation(client, tenant, make_invitation):
    user = UserFactory(email="known@example.com")
    invitation = make_invitation(email="known@example.com")
    page = client.get(accept_url(invitation))
    login_link = f"{reverse('login')}?next={accept_url(invitation)}"
    assert login_link in page.content.decode()

    response = client.post(
        reverse("login"), {"username": "known@example.com", "password": PASSWORD, "next": accept_url(invitation)}
    )
    assert response.url == accept_url(invitation)
    client.post(response.url)

    assert Membership.objects.filter(tenant=tenant, user=user, role=Role.ADMIN).exists()


def test_a_mail_server_that_is_down_delays_the_invitation_and_does_not_fail_the_page(owner_client, tenant):
    refused = ConnectionRefusedError(111, "Connection refused")
    with mock.patch.object(mail.EmailMessage, "send", side_effect=refused), after_commit():
        response = owner_client.post(team_url(tenant), {"email": "mate@example.com", "role": Role.ADMIN})

    assert response.status_code == 302 and mail.outbox == []
    invitation = Invitation.objects.get(tenant=tenant, email="mate@example.com")
    failed = FailedTask.objects.get(task_name="tenants.invitation_email_send")

    task_by_name(failed.task_name).apply(kwargs=failed.kwargs)  # the mail server is back: retried
    [message] = mail.outbox
    assert message.to == ["mate@example.com"] and invitation.token in message.body

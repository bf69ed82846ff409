"""New organizers confirm their email before their organization emails guests or sells tickets.

Until then they set up events, guests and ticket types; inviting guests, the
reminders and confirmations, publishing a ticketed event and checkout are
refused with a message that says what to do, on the pages and in the API.
"""

import re
from datetime import timedelta
from unittest import mock

import pytest
from django.core import mail
from django.urls import reverse
from django.utils import timezone

from events.models import Event
from eventsaas.models import AuditLog, FailedTask
from eventsaas.tasks import task_by_name
from guests import notifications
from guests.models import Guest
from tenants.models import Tenant, User
from tenants.services import email_verification_token
from tenants.tokens import organizer_token_pair
from tests.factories import EventFactory, GuestFactory, TicketedEventFactory, TicketTypeFactory
from tests.support.commits import after_commit

pytestmark = pytest.mark.django_db

VERIFY_LINK = re.compile(r"https?://testserver(/app/account/verify/[^/\s]+/)")
STRONG_PASSWORD = "velvet-otter-juggles-42"


def sign_up(client, email="new@example.com"):
    with after_commit():
        response = client.post(
            reverse("signup"), {"organization_name": "Fresh Org", "email": email, "password": STRONG_PASSWORD}
        )
    assert response.status_code == 302
    return User.objects.get(email=email), Tenant.objects.get(name="Fresh Org")


def verification_link(message) -> str:
    return VERIFY_LINK.search(message.body).group(1)


@pytest.fixture
def unverified(client):
    """A new organizer, logged in, with an event that has a guest with an email."""
    user, tenant = sign_up(client)
    event = EventFactory(tenant=tenant)
    guest = GuestFactory(event=event, email="guest@example.com")
    mail.outbox.clear()
    return user, tenant, event, guest


def test_sign_up_sends_the_verification_link_and_verifying_lifts_the_limits(client):
    user, tenant = sign_up(client)

    assert not user.is_email_verified and not tenant.is_verified
    [message] = mail.outbox
    assert message.to == [user.email]
    assert "\n" not in message.subject and "Confirm your email" in message.subject
    page = client.get(reverse("events:list", kwargs={"tenant_slug": tenant.slug}))
    assert 'data-testid="verify-email"' in page.content.decode()

    response = client.get(verification_link(message))

    assert response.status_code == 302
    user.refresh_from_db()
    tenant.refresh_from_db()
    assert user.is_email_verified and tenant.is_verified
    assert AuditLog.objects.filter(action="user.email_verified", object_id=user.pk).count() == 1
    page = client.get(reverse("events:list", kwargs={"tenant_slug": tenant.slug}))
    assert 'data-testid="verify-email"' not in page.content.decode()
    # The link again: still fine, recorded once.
    assert client.get(verification_link(message)).status_code == 302
    assert AuditLog.objects.filter(action="user.email_verified", object_id=user.pk).count() == 1


def test_the_link_works_logged_out_and_bad_expired_or_outdated_links_do_not(client):
    user, _tenant = sign_up(client)
    link = verification_link(mail.outbox[0])
    client.post(reverse("logout"))

    token = link.rstrip("/").rsplit("/", 1)[-1]
    assert client.get(reverse("tenants:email_verify", args=[token[:-2] + "xx"])).status_code == 400
    # Issued for the address the account had: a changed address voids it.
    User.objects.filter(pk=user.pk).update(email="changed@example.com")
    assert client.get(link).status_code == 400
    User.objects.filter(pk=user.pk).update(email="new@example.com")
    # Older than three days.
    old = timezone.now() - timedelta(days=4)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("django.core.signing.time.time", lambda: old.timestamp())
        stale = email_verification_token(user=user)
    assert client.get(reverse("tenants:email_verify", args=[stale])).status_code == 400
    user.refresh_from_db()
    assert not user.is_email_verified

    assert client.get(link).status_code == 302
    user.refresh_from_db()
    assert user.is_email_verified


def test_the_link_can_be_sent_again_a_few_times(client, unverified):
    user, *_ = unverified
    with after_commit():
        answers = [client.post(reverse("tenants:email_verification_resend")).status_code for _ in range(4)]

    assert answers == [302] * 4
    assert len(mail.outbox) == 3  # VERIFICATION_EMAIL_RATE_PER_USER: 3 an hour
    assert all(message.to == [user.email] for message in mail.outbox)
    # The "next" it returns to stays on this site.
    response = client.post(reverse("tenants:email_verification_resend"), {"next": "https://evil.example/"})
    assert response["Location"] == reverse("tenants:account")


def test_an_unverified_organizer_sets_up_events_but_cannot_invite_guests_on_the_pages(client, unverified):
    _user, tenant, event, guest = unverified
    create = client.post(
        reverse("events:create", kwargs={"tenant_slug": tenant.slug}),
        {"name": "Set up", "status": "published", "starts_at": "2031-06-01T18:00", "timezone": "UTC", "language": "en"},
    )
    assert create.status_code == 302  # invite-only events can be set up and published

    base = f"/o/{tenant.slug}/events/{event.pk}/guests/"
    for url, data in [(f"{base}{guest.pk}/invite/", {}), (f"{base}invite/", {"not_yet_invited": "1"})]:
        response = client.post(url, data, follow=True)
        assert response.status_code == 200
        assert "Confirm your email address first" in response.content.decode()
    assert mail.outbox == []
    assert Guest.objects.get(pk=guest.pk).invited_at is None


def test_an_unverified_organizer_cannot_invite_guests_through_the_api(client, unverified):
    user, _tenant, event, guest = unverified
    headers = {"HTTP_AUTHORIZATION": f"Bearer {organizer_token_pair(user)['access']}"}

    one = client.post(f"/api/v1/events/{event.pk}/guests/{guest.pk}/invite", **headers)
    many = client.post(
        f"/api/v1/events/{event.pk}/invitations", {"not_yet_invited": True}, content_type="application/json", **headers
    )

    for response in (one, many):
        assert response.status_code == 403
        assert response.json()["code"] == "email_unverified"
        assert "Confirm your email address first" in response.json()["detail"]
    assert mail.outbox == []
    # Setting up still works through the API.
    created = client.post(
        f"/api/v1/events/{event.pk}/guests",
        {"first_name": "A", "last_name": "B"},
        content_type="application/json",
        **headers,
    )
    assert created.status_code == 201


def test_no_reminder_or_confirmation_goes_to_guests_of_an_unverified_organization(
    client, unverified, settings, django_capture_on_commit_callbacks
):
    _user, tenant, event, guest = unverified
    settings.REMINDER_DAYS_BEFORE_DEADLINE = 30
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() + timedelta(days=2))

    assert notifications.reminders_send() == 0
    with django_capture_on_commit_callbacks(execute=True):
        Guest.objects.filter(pk=guest.pk).update(rsvp_at=timezone.now())
        guest.refresh_from_db()
        notifications.guest_confirmation_enqueue(guest=guest)
    assert mail.outbox == []

    Tenant.objects.filter(pk=tenant.pk).update(verified_at=timezone.now())
    assert notifications.reminders_send() == 1


def test_an_unverified_organizer_cannot_publish_a_ticketed_event_or_sell(client, unverified):
    user, tenant, _event, _guest = unverified
    page = client.post(
        reverse("events:create", kwargs={"tenant_slug": tenant.slug}),
        {
            "name": "Concert",
            "kind": "ticketed",
            "status": "published",
            "starts_at": "2031-06-01T18:00",
            "timezone": "UTC",
            "language": "en",
        },
    )
    assert page.status_code == 400
    assert "not sell tickets" in " ".join(page.context["form"].errors["status"])

    headers = {"HTTP_AUTHORIZATION": f"Bearer {organizer_token_pair(user)['access']}"}
    draft = TicketedEventFactory(tenant=tenant, status=Event.Status.DRAFT)
    TicketTypeFactory(event=draft)  # ticket types can be set up
    api = client.patch(
        f"/api/v1/events/{draft.pk}", {"status": "published"}, content_type="application/json", **headers
    )
    assert api.status_code == 400
    assert "not sell tickets" in api.json()["errors"]["status"][0]

    # Published behind the rules' back (say by staff): the public still cannot buy.
    Event.objects.filter(pk=draft.pk).update(status=Event.Status.PUBLISHED)
    ticket_type = draft.ticket_types.get()
    assert client.get(f"/e/{draft.pk}/").status_code == 404
    checkout = client.post(
        f"/api/v1/events/{draft.pk}/checkout",
        {"items": [{"ticket_type": str(ticket_type.pk), "quantity": 1}], "buyer": {"name": "B", "email": "b@x.org"}},
        content_type="application/json",
    )
    assert checkout.status_code == 404

    # Once verified, the same event publishes and sells.
    client.get(verification_link_for(user))
    Event.objects.filter(pk=draft.pk).update(status=Event.Status.DRAFT)
    assert (
        client.patch(
            f"/api/v1/events/{draft.pk}", {"status": "published"}, content_type="application/json", **headers
        ).status_code
        == 200
    )
    assert client.get(f"/e/{draft.pk}/").status_code == 200


def verification_link_for(user) -> str:
    return reverse("tenants:email_verify", args=[email_verification_token(user=user)])


def test_the_password_reset_link_also_proves_the_address(client):
    user, tenant = sign_up(client)
    client.post(reverse("logout"))
    client.post(reverse("password_reset"), {"email": user.email})
    link = re.search(r"https?://testserver(/reset/[^/\s]+/[^/\s]+/)", mail.outbox[-1].body).group(1)
    confirm = client.get(link)
    client.post(confirm.url, {"new_password1": "fresh-lantern-88", "new_password2": "fresh-lantern-88"})

    user.refresh_from_db()
    tenant.refresh_from_db()
    assert user.is_email_verified and tenant.is_verified


def test_accounts_from_before_verification_existed_keep_working():
    """The migration marks existing accounts and organizations verified (tested on the migration's function)."""
    import importlib

    from django.apps import apps

    migration = importlib.import_module("tenants.migrations.0004_token_state_and_email_verification")
    old = User.objects.create_user(email="old@example.com", password="x")
    old_org = Tenant.objects.create(name="Old", slug="old")
    migration.existing_accounts_are_verified(apps, None)

    old.refresh_from_db()
    old_org.refresh_from_db()
    assert old.is_email_verified and old_org.is_verified


def test_a_mail_server_that_is_down_delays_the_email_and_does_not_fail_the_sign_up(client):
    """The account and organization are stored either way: a 500 would leave them, and "this email exists"."""
    refused = ConnectionRefusedError(111, "Connection refused")
    with mock.patch.object(mail.EmailMessage, "send", side_effect=refused) as send:
        user, tenant = sign_up(client)  # a 302 to the organization's events

    assert send.called and mail.outbox == []
    failed = FailedTask.objects.get(task_name="tenants.email_verification_send")
    assert "Connection refused" in failed.error

    task_by_name(failed.task_name).apply(kwargs=failed.kwargs)  # the mail server is back: retried
    [message] = mail.outbox
    assert message.to == [user.email] and verification_link(message)

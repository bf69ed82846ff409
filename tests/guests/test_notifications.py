"""Notifications: invitations, confirmations, reminders, digests; exactly once per window."""

import smtplib
import zoneinfo
from datetime import UTC, timedelta
from unittest import mock

import pytest
from django.core import mail
from django.utils import timezone

from events.models import Event
from events.services import event_rsvp_close_due
from guests import notifications
from guests.models import Guest, GuestActivity, GuestMessage
from guests.services import activity_cleanup
from guests.tasks import (
    guest_activity_cleanup_task,
    guest_digests_send_task,
    guest_invitation_send_task,
    guest_reminders_send_task,
)
from rsvp.services import HouseholdAnswer, rsvp_submit
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory, MembershipFactory


def _html(message) -> str:
    assert message.alternatives, "no HTML part"
    content, mimetype = message.alternatives[0]
    assert mimetype == "text/html"
    return content


@pytest.fixture
def ana(event):
    return GuestFactory(event=event, first_name="Ana", last_name="García", email="ana@example.com")


def test_invitation_has_text_and_html_parts_with_the_code_and_a_link_that_prefills_it(ana, settings):
    settings.SITE_URL = "https://rsvp.example.com"

    assert notifications.guest_invitation_send(guest=ana, window="send:1") is True

    [message] = mail.outbox
    assert message.to == ["ana@example.com"]
    link = f"https://rsvp.example.com/rsvp/?code={ana.code}"
    assert ana.code in message.body and link in message.body
    assert f'href="{link}"' in _html(message)
    ana.refresh_from_db()
    assert ana.invited_at is not None
    row = GuestMessage.objects.get()
    assert (row.kind, row.status, row.guest_id, row.sent_at is not None) == ("invitation", "sent", ana.pk, True)


def test_emails_are_in_the_event_language(ana, event):
    Event.objects.filter(pk=event.pk).update(language="es")
    ana.event.language = "es"

    notifications.guest_invitation_send(guest=ana, window="send:1")

    [message] = mail.outbox
    assert "Hola Ana" in message.body
    assert message.subject == f"Estás invitado: {event.name}"
    assert "Tu código personal" in message.body
    assert "Hola Ana" in _html(message)


def test_the_same_window_is_sent_once_even_when_the_task_runs_twice(ana):
    guest_invitation_send_task.delay(guest_id=str(ana.pk), window="send:1")
    guest_invitation_send_task.delay(guest_id=str(ana.pk), window="send:1")

    assert len(mail.outbox) == 1
    assert GuestMessage.objects.count() == 1


def test_a_resend_is_a_new_window(ana):
    notifications.guest_invitation_send(guest=ana, window="send:1")
    notifications.guest_invitation_send(guest=ana, window="send:2")

    assert len(mail.outbox) == 2


def test_a_retry_resends_only_what_failed(ana):
    with mock.patch.object(mail.EmailMultiAlternatives, "send", side_effect=smtplib.SMTPServerDisconnected("gone")):
        with pytest.raises(smtplib.SMTPServerDisconnected):
            notifications.guest_invitation_send(guest=ana, window="send:1")
    row = GuestMessage.objects.get()
    assert row.status == "failed" and "gone" in row.error
    ana.refresh_from_db()
    assert ana.invited_at is None

    assert notifications.guest_invitation_send(guest=ana, window="send:1") is True  # the retry
    assert notifications.guest_invitation_send(guest=ana, window="send:1") is False  # a late duplicate
    assert len(mail.outbox) == 1
    assert GuestMessage.objects.get().status == "sent"


def test_a_message_claimed_by_a_running_attempt_is_not_sent_again_but_a_dead_attempt_is_taken_over(ana, settings):
    row = notifications.message_claim(
        event=ana.event, guest=ana, recipient=ana.email, kind="invitation", window="send:1"
    )
    assert row is not None
    assert notifications.guest_invitation_send(guest=ana, window="send:1") is False
    assert mail.outbox == []

    GuestMessage.objects.filter(pk=row.pk).update(claimed_at=timezone.now() - timedelta(hours=1))
    assert notifications.guest_invitation_send(guest=ana, window="send:1") is True
    assert len(mail.outbox) == 1


def test_guests_without_email_get_nothing(event):
    guest = GuestFactory(event=event, email="")
    assert notifications.guest_invitation_send(guest=guest, window="send:1") is False
    queued = notifications.guest_invitations_send(event=event, guests=[guest], acting_user=None)
    assert (queued.queued, queued.without_email) == (0, 1)
    assert mail.outbox == [] and not GuestMessage.objects.exists()


def test_inviting_everyone_not_yet_invited_twice_sends_once(event, ana, django_capture_on_commit_callbacks):
    GuestFactory(event=event, email="")
    for _click in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            guests = list(notifications.guests_not_yet_invited(event=event))
            notifications.guest_invitations_send(event=event, guests=guests, acting_user=None, first_only=True)

    assert [m.to for m in mail.outbox] == [["ana@example.com"]]


def test_rsvp_confirmation_is_sent_after_the_answer_commits_and_says_what_and_for_whom(
    event, household, django_capture_on_commit_callbacks
):
    anna, lisa = household
    Guest.objects.filter(pk=anna.pk).update(email="anna@example.com")
    anna.email = "anna@example.com"

    with django_capture_on_commit_callbacks(execute=True):
        rsvp_submit(guest=anna, answer=HouseholdAnswer(attending=True, num_guests=2))

    [message] = mail.outbox
    assert message.to == ["anna@example.com"]
    assert "In total: 2 people." in message.body
    assert "Anna Müller: coming, 1 person" in message.body
    assert "Lisa Müller: coming, 1 person" in message.body
    assert "Lisa Müller: coming, 1 person" in _html(message)
    assert GuestMessage.objects.get().kind == "confirmation"


def test_no_confirmation_for_a_guest_without_email(event, household, django_capture_on_commit_callbacks):
    anna, _lisa = household
    with django_capture_on_commit_callbacks(execute=True):
        rsvp_submit(guest=anna, answer=HouseholdAnswer(attending=False))
    assert mail.outbox == []


def test_reminders_go_to_pending_guests_with_email_once_however_often_the_job_runs(tenant, settings):
    settings.REMINDER_DAYS_BEFORE_DEADLINE = 3
    soon = EventFactory(tenant=tenant, rsvp_deadline=timezone.now() + timedelta(days=2))
    later = EventFactory(tenant=tenant, rsvp_deadline=timezone.now() + timedelta(days=10))
    pending = GuestFactory(event=soon, email="pending@example.com")
    GuestFactory(event=soon, email="coming@example.com", status=Guest.Status.COMING)
    GuestFactory(event=soon, email="")
    GuestFactory(event=later, email="later@example.com")

    guest_reminders_send_task.delay()
    guest_reminders_send_task.delay()  # beat fired twice, or a late run

    assert [m.to for m in mail.outbox] == [["pending@example.com"]]
    assert pending.code in mail.outbox[0].body
    row = GuestMessage.objects.get()
    assert (row.kind, row.window) == ("reminder", notifications.reminder_window(soon))


def test_a_failed_reminder_is_taken_back_by_the_next_run(event, settings):
    settings.REMINDER_DAYS_BEFORE_DEADLINE = 30
    GuestFactory(event=event, email="a@example.com")
    with mock.patch.object(mail.EmailMultiAlternatives, "send", side_effect=smtplib.SMTPServerDisconnected("x")):
        assert notifications.reminders_send() == 0
    assert GuestMessage.objects.get().status == "failed"

    assert notifications.reminders_send() == 1
    assert notifications.reminders_send() == 0
    assert len(mail.outbox) == 1


def test_digest_only_when_something_is_new_once_a_day_to_owners_admins_and_the_contact(event, tenant):
    MembershipFactory(tenant=tenant, role=Role.OWNER, user__email="owner@example.com")
    MembershipFactory(tenant=tenant, role=Role.ADMIN, user__email="admin@example.com")
    MembershipFactory(tenant=tenant, role=Role.VIEWER, user__email="viewer@example.com")
    answered = GuestFactory(event=event, first_name="Eva", status=Guest.Status.COMING, num_guests=1)
    GuestFactory(event=event)

    assert guest_digests_send_task.delay().result == 0  # nothing answered since the event was created
    assert mail.outbox == []

    Guest.objects.filter(pk=answered.pk).update(rsvp_at=timezone.now(), dietary="vegan")
    assert notifications.digests_send() == 3
    assert notifications.digests_send() == 0  # same day: same window
    assert sorted(m.to[0] for m in mail.outbox) == ["admin@example.com", "host@example.com", "owner@example.com"]
    body = mail.outbox[0].body
    assert "Eva Doe: Coming" in body and "vegan" in body
    assert "Still pending: 1" in body and "Never logged in: 2" in body
    assert "Eva Doe" in _html(mail.outbox[0])

    tomorrow = timezone.now() + timedelta(days=1)
    assert notifications.digests_send(now=tomorrow) == 0  # nothing new since the last digest


def test_closing_rsvps_at_the_deadline_is_a_compare_and_set(tenant):
    past = EventFactory(
        tenant=tenant,
        starts_at=timezone.now() + timedelta(days=3),
        rsvp_deadline=timezone.now() - timedelta(hours=1),
    )
    future = EventFactory(tenant=tenant)

    assert event_rsvp_close_due() == 1
    assert event_rsvp_close_due() == 0
    past.refresh_from_db()
    future.refresh_from_db()
    assert past.rsvp_closed_at is not None and future.rsvp_closed_at is None
    assert not past.is_rsvp_open()


def test_the_dashboard_says_closed_once_closed(owner_client, tenant):
    event = EventFactory(
        tenant=tenant, starts_at=timezone.now() + timedelta(days=3), rsvp_deadline=timezone.now() - timedelta(hours=1)
    )
    event_rsvp_close_due()
    response = owner_client.get(f"/o/{tenant.slug}/events/{event.pk}/")
    assert "RSVP closed" in response.content.decode()


def test_activity_cleanup_deletes_only_records_older_than_the_retention(event, settings):
    settings.ACTIVITY_RETENTION_DAYS = 180
    guest = GuestFactory(event=event)
    now = timezone.now()
    for days in (200, 181, 10):
        GuestActivity.objects.create(
            tenant=event.tenant, event=event, guest=guest, kind="login", at=now - timedelta(days=days)
        )

    assert activity_cleanup() == 2
    assert guest_activity_cleanup_task.delay().result == 0
    assert GuestActivity.objects.count() == 1


def test_moving_the_deadline_later_reopens_a_closed_event(tenant, owner):
    from events.services import event_update

    event = EventFactory(
        tenant=tenant, starts_at=timezone.now() + timedelta(days=3), rsvp_deadline=timezone.now() - timedelta(hours=1)
    )
    event_rsvp_close_due()
    event.refresh_from_db()

    event_update(event=event, acting_user=owner, rsvp_deadline=timezone.now() + timedelta(days=1))

    event.refresh_from_db()
    assert event.rsvp_closed_at is None and event.is_rsvp_open()


def test_the_reminder_gives_the_deadline_in_the_event_zone_with_its_label(tenant, settings):
    settings.REMINDER_DAYS_BEFORE_DEADLINE = 3
    deadline = (timezone.now() + timedelta(days=2)).replace(second=0, microsecond=0)
    tokyo = EventFactory(tenant=tenant, timezone="Asia/Tokyo", language="en", rsvp_deadline=deadline)
    GuestFactory(event=tokyo, email="pending@example.com")

    assert notifications.reminders_send() == 1

    local, utc = deadline.astimezone(zoneinfo.ZoneInfo("Asia/Tokyo")), deadline.astimezone(UTC)
    message = mail.outbox[0]
    for text in (message.body, _html(message)):
        assert f"{local:%H:%M} JST" in text
        assert f"{utc:%H:%M}" not in text

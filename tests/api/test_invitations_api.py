"""Invitations from the organizer API: one guest, a selection, everyone not yet invited."""

# ruff: noqa: F811

import pytest
from django.core import mail

from guests.models import Guest, GuestMessage
from tests.api.organizer_fixtures import (  # noqa: F401
    admin_api,
    errors_of,
    other_event,
    other_guest,
    other_tenant,
    owner_api,
    viewer_api,
)
from tests.factories import GuestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def with_email(event):
    return GuestFactory(event=event, first_name="Ana", email="ana@example.com")


@pytest.fixture
def without_email(event):
    return GuestFactory(event=event, first_name="Sin", email="")


def test_inviting_one_guest_sends_after_commit_and_a_second_call_resends(
    admin_api, event, with_email, django_capture_on_commit_callbacks
):
    url = f"/api/v1/events/{event.pk}/guests/{with_email.pk}/invite"
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(url)
    assert response.status_code == 202, response.content
    assert response.json() == {"queued": 1, "without_email": 0}
    assert [m.to for m in mail.outbox] == [["ana@example.com"]]
    with_email.refresh_from_db()
    assert with_email.invited_at is not None

    with django_capture_on_commit_callbacks(execute=True):
        admin_api.post(url)
    assert len(mail.outbox) == 2  # a resend is explicit: a new window
    assert GuestMessage.objects.filter(guest=with_email, kind="invitation", status="sent").count() == 2


def test_inviting_a_selection_skips_guests_without_email(
    owner_api, event, with_email, without_email, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = owner_api.post(
            f"/api/v1/events/{event.pk}/invitations",
            {"guests": [str(with_email.pk), str(without_email.pk)]},
            format="json",
        )
    assert response.status_code == 202
    assert response.json() == {"queued": 1, "without_email": 1}
    assert len(mail.outbox) == 1


def test_inviting_everyone_not_yet_invited_twice_sends_once(
    owner_api, event, with_email, without_email, django_capture_on_commit_callbacks
):
    for _call in range(2):
        with django_capture_on_commit_callbacks(execute=True):
            response = owner_api.post(
                f"/api/v1/events/{event.pk}/invitations", {"not_yet_invited": True}, format="json"
            )
        assert response.status_code == 202
    assert len(mail.outbox) == 1


def test_a_selection_must_be_guests_of_this_event(owner_api, event, with_email, other_guest):
    response = owner_api.post(
        f"/api/v1/events/{event.pk}/invitations",
        {"guests": [str(with_email.pk), str(other_guest.pk)]},
        format="json",
    )
    assert "guests" in errors_of(response)
    assert mail.outbox == [] and not GuestMessage.objects.exists()


@pytest.mark.parametrize("body", [{}, {"guests": []}, {"guests": ["x"]}, {"not_yet_invited": False}])
def test_invitations_body_must_say_whom(owner_api, event, body):
    response = owner_api.post(f"/api/v1/events/{event.pk}/invitations", body, format="json")
    assert response.status_code == 400


def test_viewers_cannot_send_invitations(viewer_api, event, with_email, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        one = viewer_api.post(f"/api/v1/events/{event.pk}/guests/{with_email.pk}/invite")
        many = viewer_api.post(f"/api/v1/events/{event.pk}/invitations", {"not_yet_invited": True}, format="json")
    assert (one.status_code, many.status_code) == (403, 403)
    assert mail.outbox == []
    assert Guest.objects.get(pk=with_email.pk).invited_at is None

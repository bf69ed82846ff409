"""Invitations from the organizer pages, and the message log."""

import pytest
from django.core import mail

from guests.models import GuestMessage
from tenants.models import Role
from tests.factories import GuestFactory


@pytest.fixture
def ana(event):
    return GuestFactory(event=event, first_name="Ana", last_name="García", email="ana@example.com")


def _base(event):
    return f"/o/{event.tenant.slug}/events/{event.pk}"


def test_the_guest_page_sends_the_invitation_and_shows_it_in_the_message_log(
    member_client, event, ana, django_capture_on_commit_callbacks
):
    client = member_client(Role.ADMIN)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(f"{_base(event)}/guests/{ana.pk}/invite/")
    assert response.status_code == 302
    assert len(mail.outbox) == 1

    detail = client.get(f"{_base(event)}/guests/{ana.pk}/").content.decode()
    assert "Send invitation again" in detail
    assert 'data-testid="message"' in detail
    log = client.get(f"{_base(event)}/messages/").content.decode()
    assert "ana@example.com" in log and "Invitation" in log and "Sent" in log


def test_the_guest_list_invites_a_selection_or_everyone_not_yet_invited(
    member_client, event, ana, django_capture_on_commit_callbacks
):
    bea = GuestFactory(event=event, first_name="Bea", email="bea@example.com")
    client = member_client(Role.OWNER)
    page = client.get(f"{_base(event)}/guests/").content.decode()
    assert "Invite everyone not yet invited" in page and "Send invitations to selected guests" in page

    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"{_base(event)}/guests/invite/", {"guests": [str(bea.pk)]})
    assert [m.to for m in mail.outbox] == [["bea@example.com"]]

    with django_capture_on_commit_callbacks(execute=True):
        client.post(f"{_base(event)}/guests/invite/", {"not_yet_invited": "1"})
        client.post(f"{_base(event)}/guests/invite/", {"not_yet_invited": "1"})  # a double click
    assert sorted(m.to[0] for m in mail.outbox) == ["ana@example.com", "bea@example.com"]


def test_viewers_see_the_log_but_cannot_send(member_client, event, ana, django_capture_on_commit_callbacks):
    client = member_client(Role.VIEWER)
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(f"{_base(event)}/guests/{ana.pk}/invite/").status_code == 403
        assert client.post(f"{_base(event)}/guests/invite/", {"not_yet_invited": "1"}).status_code == 403
    assert mail.outbox == [] and not GuestMessage.objects.exists()
    assert client.get(f"{_base(event)}/messages/").status_code == 200
    assert "Send invitation" not in client.get(f"{_base(event)}/guests/{ana.pk}/").content.decode()


def test_another_tenants_guest_cannot_be_invited(member_client, event, ana):
    other = GuestFactory(email="x@example.com")
    client = member_client(Role.OWNER)
    assert client.post(f"{_base(event)}/guests/{other.pk}/invite/").status_code == 404
    client.post(f"{_base(event)}/guests/invite/", {"guests": [str(other.pk)]})
    assert mail.outbox == []

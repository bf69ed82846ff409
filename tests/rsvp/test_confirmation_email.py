"""The RSVP confirmation email: sent after an answer from the page or the API, never without an email."""

import pytest
from django.core import mail

from guests.models import Guest
from tests.rsvp.household_form import household_post, row

pytestmark = pytest.mark.django_db


@pytest.fixture
def anna(household):
    anna = household[0]
    Guest.objects.filter(pk=anna.pk).update(email="anna@example.com")
    anna.refresh_from_db()
    return anna


def test_the_page_answer_is_confirmed_by_email(client, anna, django_capture_on_commit_callbacks):
    client.post("/rsvp/", {"code": anna.code, "last_name": anna.last_name})
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/rsvp/answer/", household_post(row("no"), row("later")))
    assert response.status_code == 302
    [message] = mail.outbox
    assert message.to == ["anna@example.com"] and "Anna Müller: Declined" in message.body


def test_the_api_answer_is_confirmed_by_email(client, anna, django_capture_on_commit_callbacks):
    login = client.post(
        "/api/v1/auth/guest-login", {"code": anna.code, "last_name": anna.last_name}, content_type="application/json"
    )
    token = login.json()["access"]
    with django_capture_on_commit_callbacks(execute=True):
        response = client.put(
            "/api/v1/rsvp",
            {"attending": True, "num_guests": 2},
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {token}",
        )
    assert response.status_code == 200, response.content
    [message] = mail.outbox
    assert "In total: 2 people." in message.body and "Lisa Müller: coming, 1 person" in message.body


def test_a_refused_answer_sends_nothing(client, anna, event, django_capture_on_commit_callbacks):
    client.post("/rsvp/", {"code": anna.code, "last_name": anna.last_name})
    with django_capture_on_commit_callbacks(execute=True):
        # fewer than expected: asks first
        client.post("/rsvp/answer/", household_post(row("yes", 1), row("no")))
    assert mail.outbox == []

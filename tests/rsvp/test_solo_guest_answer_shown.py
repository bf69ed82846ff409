"""A guest invited alone who declined sees their answer on their page, as a household member does."""

import re

import pytest

from guests.models import Guest
from tests.factories import GuestFactory
from tests.rsvp.household_form import household_post, row

ANSWER_URL = "/rsvp/answer/"


def _current_answer(response) -> str:
    match = re.search(r'data-testid="current-answer">(.*?)</p>', response.content.decode(), re.S)
    return " ".join(re.sub(r"<[^>]+>", " ", match.group(1)).split()) if match else ""


@pytest.mark.django_db
def test_solo_guest_who_declined_sees_declined(client, event):
    solo = GuestFactory(event=event, first_name="Tom", last_name="Solo", expected_guests=2)
    assert client.post("/rsvp/", {"code": solo.code, "last_name": "Solo"}).status_code == 302

    assert client.post(ANSWER_URL, household_post(row("no"))).status_code == 302
    assert Guest.objects.get(pk=solo.pk).status == Guest.Status.DECLINED

    assert _current_answer(client.get(ANSWER_URL)) == "Declined"


@pytest.mark.django_db
def test_solo_guest_who_has_not_answered_sees_no_answer(client, event):
    solo = GuestFactory(event=event, first_name="Tom", last_name="Solo", expected_guests=2)
    assert client.post("/rsvp/", {"code": solo.code, "last_name": "Solo"}).status_code == 302

    assert _current_answer(client.get(ANSWER_URL)) == ""

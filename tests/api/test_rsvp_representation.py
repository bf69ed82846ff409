"""GET /api/v1/rsvp answers with plain dicts (rsvp.apis.invitation_data) for speed; they must stay what the
documented InvitationSerializer gives, byte for byte once rendered, and the household read must stay right when
the token's group hint is stale (the guest joined or left a household after logging in)."""

import datetime as dt
import uuid
import zoneinfo

import pytest
from django.utils import timezone
from rest_framework.renderers import JSONRenderer

from guests.models import Guest
from rsvp import selectors, services
from rsvp.apis import InvitationSerializer, invitation_data
from rsvp.models import ChangeRequest
from tests.factories import GuestFactory

RSVP_URL = "/api/v1/rsvp"
QUESTIONS = [
    {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]},
    {"key": "song", "label": "Which song gets you dancing?", "choices": []},
]


def _serializer_output(household):
    guest = household.guest
    return InvitationSerializer(
        {
            "guest": guest,
            "members": household.members,
            "expected_total": household.expected_total,
            "head_count": household.head_count,
            "event": guest.event,
            "rsvp_open": guest.event.is_rsvp_open(),
            "rsvp_state": guest.event.rsvp_state(),
            "change_request": selectors.change_request_latest(guest=guest),
        }
    ).data


def _both(guest):
    household = services.household_for(guest=Guest.objects.select_related("event", "tenant").get(pk=guest.pk))
    render = JSONRenderer().render
    return render(invitation_data(household)), render(_serializer_output(household))


@pytest.mark.django_db
def test_a_guest_alone_with_nothing_answered(event):
    guest = GuestFactory(event=event, group_id=None)
    ours, documented = _both(guest)
    assert ours == documented


@pytest.mark.django_db
@pytest.mark.parametrize("current_zone", ["UTC", "Europe/Madrid", "America/Argentina/Buenos_Aires"])
def test_a_household_with_answers_questions_and_a_decided_change_request(event, current_zone):
    event.questions = QUESTIONS
    event.ends_at = event.starts_at + dt.timedelta(hours=5, microseconds=123456)
    event.dress_code = "Black tie ✨"
    event.contact_email = "hosts@example.com"
    event.save()
    group = uuid.uuid4()
    answered = timezone.now().replace(microsecond=0)
    anna = GuestFactory(
        event=event,
        first_name="Anna",
        group_id=group,
        status=Guest.Status.COMING,
        num_guests=2,
        expected_guests=2,
        answered_by_kind=Guest.AnsweredBy.SELF,
        rsvp_at=answered,
        dietary="Vegetarian; no nuts",
        answers={"meal": "Fish", "song": "Ça plane pour moi"},
    )
    GuestFactory(
        event=event,
        first_name="Lisa",
        group_id=group,
        status=Guest.Status.DECLINED,
        num_guests=0,
        answered_by_kind=Guest.AnsweredBy.HOUSEHOLD,
        answered_by_guest_id=anna.pk,
        rsvp_at=answered,
    )
    ChangeRequest.objects.create(
        tenant_id=event.tenant_id,
        event_id=event.pk,
        guest=anna,
        proposed={"attending": True, "num_guests": 3, "absent": []},
        message="My cousin is coming after all",
        status=ChangeRequest.Status.DECLINED,
        decided_at=answered + dt.timedelta(days=1),
        response="Sorry, the venue is full",
    )

    with timezone.override(zoneinfo.ZoneInfo(current_zone)):
        ours, documented = _both(anna)

    assert ours == documented
    assert b"Lisa" in ours and b"Sorry, the venue is full" in ours


def _token(client, guest):
    response = client.post(
        "/api/v1/auth/guest-login", {"code": guest.code, "last_name": guest.last_name}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return {"HTTP_AUTHORIZATION": f"Bearer {response.json()['access']}"}


def _member_names(response):
    assert response.status_code == 200, response.content
    body = response.json()
    return body["guest"]["first_name"], sorted(m["first_name"] for m in body["members"]), body["expected_total"]


@pytest.mark.django_db
def test_the_household_read_is_one_query_while_the_token_group_is_current(
    client, event, django_assert_num_queries, settings
):
    # Only the reads: on MongoDB on_commit() runs at once, so eager tracking would write within the count.
    settings.ACTIVITY_TRACKING = False
    group = uuid.uuid4()
    anna = GuestFactory(event=event, first_name="Anna", group_id=group, expected_guests=2)
    GuestFactory(event=event, first_name="Lisa", group_id=group)
    GuestFactory(event=event, first_name="Other")
    auth = _token(client, anna)

    # The guest and household together; a guest who never asked for a change costs no lookup of requests.
    with django_assert_num_queries(1):
        response = client.get(RSVP_URL, **auth)

    assert _member_names(response) == ("Anna", ["Lisa"], 3)
    assert response.json()["change_request"] is None

    # Once they asked, the latest request is read too.
    ChangeRequest.objects.create(
        tenant_id=event.tenant_id, event_id=event.pk, guest=anna, proposed={"attending": False}, message="Sorry"
    )
    with django_assert_num_queries(2):
        response = client.get(RSVP_URL, **auth)

    assert response.json()["change_request"]["message"] == "Sorry"


@pytest.mark.django_db
def test_a_guest_who_left_or_joined_a_household_after_logging_in_sees_the_household_of_now(client, event):
    group, other_group = uuid.uuid4(), uuid.uuid4()
    anna = GuestFactory(event=event, first_name="Anna", group_id=group)
    lisa = GuestFactory(event=event, first_name="Lisa", group_id=group)
    GuestFactory(event=event, first_name="Mia", group_id=other_group)
    solo = GuestFactory(event=event, first_name="Solo", group_id=None)
    anna_auth, solo_auth = _token(client, anna), _token(client, solo)

    # Joining or leaving a household is one update of one guest.
    Guest.objects.filter(pk=anna.pk).update(group_id=None)
    assert _member_names(client.get(RSVP_URL, **anna_auth)) == ("Anna", [], 1)

    Guest.objects.filter(pk=anna.pk).update(group_id=other_group)
    assert _member_names(client.get(RSVP_URL, **anna_auth)) == ("Anna", ["Mia"], 2)

    Guest.objects.filter(pk=solo.pk).update(group_id=group)
    assert _member_names(client.get(RSVP_URL, **solo_auth)) == ("Solo", ["Lisa"], 2)
    assert lisa.pk  # Lisa stayed where she was

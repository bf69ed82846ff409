"""The guest's API end to end over HTTP: log in with code + last name, read the invitation, answer it."""

import datetime as dt
import uuid

import jwt
import pytest
from django.test import override_settings
from django.utils import timezone

from events.models import Event
from eventsaas.fields import now_as_stored
from eventsaas.models import AuditLog
from guests.models import Guest
from guests.services import guest_code_regenerate
from tenants.keys import keyring
from tenants.token_verification import verify
from tenants.tokens import organizer_token_pair
from tests.factories import GuestFactory

LOGIN_URL = "/api/v1/auth/guest-login"
RSVP_URL = "/api/v1/rsvp"
QUESTIONS = [
    {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]},
    {"key": "song", "label": "Which song gets you dancing?", "choices": []},
]
NOT_FOUND_BODY = {
    "code": "invalid_credentials",
    "detail": "We could not find an invitation with this code and last name.",
}


def _login(client, code, last_name, **extra):
    return client.post(LOGIN_URL, {"code": code, "last_name": last_name}, content_type="application/json", **extra)


def _bearer(token):
    return {"HTTP_AUTHORIZATION": f"Bearer {token}"}


def _put(client, token, body):
    return client.put(RSVP_URL, body, content_type="application/json", **_bearer(token))


def _typed(code: str) -> str:
    """The code as a person might type it: lower case, with spaces."""
    lower = code.lower()
    return f" {lower[:4]} {lower[4:]} "


def _household_state(*guests):
    """Everything an answer can change, for the whole household, plus the audit trail's length."""
    rows = Guest.objects.filter(pk__in=[g.pk for g in guests]).order_by("first_name")
    fields = ("first_name", "status", "num_guests", "dietary", "answers", "rsvp_at")
    return [tuple(getattr(row, name) for name in fields) for row in rows], AuditLog.objects.count()


def _statuses(*guests):
    return {g.first_name: (g.status, g.num_guests) for g in Guest.objects.filter(pk__in=[g.pk for g in guests])}


@pytest.fixture
def anna_lisa(household, event):
    Event.objects.filter(pk=event.pk).update(questions=QUESTIONS)
    return household


@pytest.fixture
def anna(anna_lisa):
    return anna_lisa[0]


@pytest.fixture
def lisa(anna_lisa):
    return anna_lisa[1]


@pytest.fixture
def token(client, anna):
    """Anna's access token, obtained through the login endpoint."""
    response = _login(client, anna.code, "Müller")
    assert response.status_code == 200, response.content
    return response.json()["access"]


# --- login ------------------------------------------------------------------------------------------


def test_login_with_code_in_lower_case_and_spaces_and_last_name_without_accents(client, anna, event, tenant):
    response = _login(client, _typed(anna.code), "muller")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == 12 * 60 * 60
    assert body["guest"]["id"] == str(anna.pk)
    assert body["guest"]["first_name"] == "Anna"
    assert body["guest"]["last_name"] == "Müller"
    assert body["guest"]["status"] == "pending"
    assert "code" not in body["guest"]

    header = jwt.get_unverified_header(body["access"])
    assert header["alg"] == "RS256"
    assert header["kid"] == keyring().signing_kid
    claims = verify(body["access"])
    assert claims["sub"] == str(anna.pk)
    assert claims["name"] == "Anna Müller"
    assert claims["tenant_id"] == str(tenant.pk)
    assert claims["event_id"] == str(event.pk)
    assert claims["role"] == "guest"
    assert claims["token_type"] == "access"
    assert claims["iss"] == "eventsaas"
    assert claims["aud"] == "eventsaas-api"
    assert 12 * 60 * 60 - 1 <= claims["exp"] - claims["iat"] <= 12 * 60 * 60  # two clock reads, a second apart at most
    assert anna.code not in str(claims), "the token must not carry the code itself"


def test_unknown_code_and_wrong_last_name_get_the_identical_answer(client, anna, lisa):
    unknown_code = _login(client, "ZZZZZZZZ", "Müller")
    wrong_name = _login(client, anna.code, "Schmidt")
    someone_elses_name = _login(client, anna.code, "Lisa Müller")

    for response in (unknown_code, wrong_name, someone_elses_name):
        assert response.status_code == 401
        assert response.json() == NOT_FOUND_BODY
        assert response["WWW-Authenticate"] == 'Bearer realm="api"'
    assert unknown_code.content == wrong_name.content == someone_elses_name.content
    assert Guest.objects.get(pk=anna.pk).last_login_at is None


def test_login_for_an_archived_event_gets_the_same_answer(client, anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    response = _login(client, anna.code, "Müller")

    assert response.status_code == 401
    assert response.json() == NOT_FOUND_BODY


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"code": "ABCDEFGH"}, "last_name"),
        ({"last_name": "Müller"}, "code"),
        ({"code": "ABCDEFGH", "last_name": "Müller", "role": "organizer"}, "role"),
        ({"code": "A" * 65, "last_name": "Müller"}, "code"),  # codes up to 64: long imported tokens
        ({"code": ["ABCDEFGH"], "last_name": "Müller"}, "code"),
    ],
)
def test_malformed_login_bodies_are_a_400_naming_the_field(client, anna, body, field):
    response = client.post(LOGIN_URL, body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert field in response.json()["errors"]


@pytest.mark.parametrize("body", ["not json", "[1, 2]", '"ABC"', "null"])
def test_login_bodies_that_are_not_an_object_are_a_400_never_a_500(client, anna, body):
    response = client.post(LOGIN_URL, body, content_type="application/json")

    assert response.status_code == 400


def test_login_needs_no_authorization_and_ignores_a_bad_one(client, anna):
    response = _login(client, anna.code, "Müller", HTTP_AUTHORIZATION="Bearer garbage")

    assert response.status_code == 200


def test_login_records_last_login_and_last_access(client, anna, django_capture_on_commit_callbacks):
    before = now_as_stored()

    # Activity is published after commit (written in-process on the embedded default; docs/workers.md).
    with django_capture_on_commit_callbacks(execute=True):
        _login(client, anna.code, "Müller")

    anna.refresh_from_db()
    assert anna.last_login_at is not None and anna.last_login_at >= before
    assert anna.last_access_at is not None and anna.last_access_at >= before


# --- throttling -------------------------------------------------------------------------------------
# Rates per hour: a window boundary in the middle of a test would reset the counters.


@override_settings(GUEST_LOGIN_RATE_PER_CLIENT="3/h", GUEST_LOGIN_RATE_PER_CODE="100/h")
def test_login_is_throttled_per_client(client, anna):
    for attempt in range(3):
        assert _login(client, f"WRONG{attempt}XX", "Müller").status_code == 401

    throttled = _login(client, anna.code, "Müller")

    assert throttled.status_code == 429
    assert throttled.json()["code"] == "throttled"
    assert int(throttled["Retry-After"]) > 0
    assert "access" not in throttled.json()
    assert Guest.objects.get(pk=anna.pk).last_login_at is None
    # another client is not affected
    assert _login(client, anna.code, "Müller", REMOTE_ADDR="203.0.113.7").status_code == 200


@override_settings(GUEST_LOGIN_RATE_PER_CLIENT="100/h", GUEST_LOGIN_RATE_PER_CODE="2/h")
def test_login_is_throttled_per_code_whatever_the_spelling_and_the_client(client, anna, lisa):
    assert _login(client, anna.code, "Wrong", REMOTE_ADDR="203.0.113.1").status_code == 401
    assert _login(client, _typed(anna.code), "Wrong", REMOTE_ADDR="203.0.113.2").status_code == 401

    throttled = _login(client, f"{anna.code[:4]}-{anna.code[4:]}".lower(), "Müller", REMOTE_ADDR="203.0.113.3")

    assert throttled.status_code == 429
    assert throttled.json()["code"] == "throttled"
    assert int(throttled["Retry-After"]) > 0
    assert Guest.objects.get(pk=anna.pk).last_login_at is None
    # another code is not affected
    assert _login(client, lisa.code, "Müller", REMOTE_ADDR="203.0.113.3").status_code == 200


# --- reading the invitation -------------------------------------------------------------------------


def test_get_rsvp_returns_the_guest_the_household_and_the_event(client, token, anna, lisa, event):
    response = client.get(RSVP_URL, **_bearer(token))

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["guest"]["id"] == str(anna.pk)
    assert body["guest"]["first_name"] == "Anna"
    assert body["guest"]["status"] == "pending"
    assert body["guest"]["answers"] == {}
    assert body["guest"]["rsvp_at"] is None
    assert [m["id"] for m in body["members"]] == [str(lisa.pk)]
    assert body["members"][0]["first_name"] == "Lisa"
    assert body["expected_total"] == 2
    assert body["rsvp_open"] is True
    assert body["event"]["id"] == str(event.pk)
    assert body["event"]["name"] == event.name
    assert body["event"]["location"] == "Garden"
    assert body["event"]["timezone"] == "Europe/Madrid"
    assert body["event"]["contact_email"] == "host@example.com"
    assert body["event"]["questions"] == QUESTIONS
    assert body["event"]["rsvp_deadline"] is not None
    for private in ("code", "email", "phone", "last_login_at", "tenant", "tenant_id"):
        assert private not in body["guest"]
        assert all(private not in member for member in body["members"])


def test_get_rsvp_counts_the_expected_guests_of_every_member(client, anna, lisa):
    Guest.objects.filter(pk=lisa.pk).update(expected_guests=3)  # Lisa brings two small children
    token = _login(client, anna.code, "Müller").json()["access"]

    body = client.get(RSVP_URL, **_bearer(token)).json()

    assert body["expected_total"] == 4
    assert body["members"][0]["expected_guests"] == 3


def test_get_rsvp_records_last_access_but_not_last_login(client, token, anna, django_capture_on_commit_callbacks):
    long_ago = now_as_stored() - dt.timedelta(days=3)
    Guest.objects.filter(pk=anna.pk).update(last_login_at=long_ago, last_access_at=long_ago)

    with django_capture_on_commit_callbacks(execute=True):
        assert client.get(RSVP_URL, **_bearer(token)).status_code == 200

    anna.refresh_from_db()
    assert anna.last_login_at == long_ago
    assert anna.last_access_at > long_ago


def test_put_rsvp_records_last_access(client, token, anna, django_capture_on_commit_callbacks):
    long_ago = timezone.now() - dt.timedelta(days=3)
    Guest.objects.filter(pk=anna.pk).update(last_access_at=long_ago)

    with django_capture_on_commit_callbacks(execute=True):
        assert _put(client, token, {"attending": False}).status_code == 200

    anna.refresh_from_db()
    assert anna.last_access_at > long_ago


def test_get_rsvp_shows_the_deadline_has_passed(client, token, event):
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(minutes=1))

    assert client.get(RSVP_URL, **_bearer(token)).json()["rsvp_open"] is False


def test_get_rsvp_without_a_token_is_a_401(client, anna):
    response = client.get(RSVP_URL)

    assert response.status_code == 401
    assert response.json()["code"] == "not_authenticated"
    assert response["WWW-Authenticate"] == 'Bearer realm="api"'


# --- answering: every path --------------------------------------------------------------------------


def test_decline_marks_only_the_guest(client, token, anna, lisa):
    response = _put(client, token, {"attending": False, "dietary": "  vegan  ", "answers": {"meal": "Fish"}})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["guest"]["status"] == "declined"
    assert body["guest"]["num_guests"] == 0
    assert body["guest"]["dietary"] == "vegan"
    assert body["guest"]["rsvp_at"] is not None
    assert _statuses(anna, lisa) == {"Anna": ("declined", 0), "Lisa": ("pending", 0)}
    assert AuditLog.objects.filter(action="rsvp.declined", object_id=anna.pk).count() == 1


def test_the_households_number_marks_everyone_coming_each_with_their_own_count(client, token, anna, lisa):
    response = _put(client, token, {"attending": True, "num_guests": 2, "answers": {"meal": "Meat", "song": "Abba"}})

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["guest"]["status"] == "coming"
    assert body["guest"]["num_guests"] == 1
    assert body["guest"]["answered_by"] == "self"
    assert body["guest"]["answers"] == {"meal": "Meat", "song": "Abba"}
    assert (body["members"][0]["status"], body["members"][0]["num_guests"]) == ("coming", 1)
    assert body["members"][0]["answered_by"] == "household"
    assert body["members"][0]["answered_by_guest_id"] == str(anna.pk)
    assert body["head_count"] == 2
    assert _statuses(anna, lisa) == {"Anna": ("coming", 1), "Lisa": ("coming", 1)}


def test_fewer_than_expected_without_naming_anyone_is_a_409_never_saved_even_confirmed(client, token, anna, lisa):
    before = _household_state(anna, lisa)

    for confirmed in (False, True):
        asked = _put(client, token, {"attending": True, "num_guests": 1, "confirmed": confirmed})

        assert asked.status_code == 409, asked.content
        body = asked.json()
        assert body["code"] == "needs_confirmation"
        assert body["reason"] == "fewer_than_expected"
        assert (body["expected"], body["answered"], body["confirmable"]) == (2, 1, False)
        assert [m["id"] for m in body["members"]] == [str(lisa.pk)]
        assert body["members"][0]["first_name"] == "Lisa"
    assert _household_state(anna, lisa) == before


def test_fewer_than_expected_saves_once_the_absent_member_is_named(client, token, anna, lisa):
    confirmed = _put(client, token, {"attending": True, "num_guests": 1, "absent": [str(lisa.pk)], "confirmed": True})

    assert confirmed.status_code == 200, confirmed.content
    assert confirmed.json()["guest"]["status"] == "coming"
    assert confirmed.json()["members"][0]["status"] == "declined"
    assert _statuses(anna, lisa) == {"Anna": ("coming", 1), "Lisa": ("declined", 0)}
    entry = AuditLog.objects.get(action="rsvp.declined", object_id=lisa.pk)
    assert (entry.actor_guest_id, entry.data["answered_by"]) == (anna.pk, "household")


def test_more_than_expected_must_be_confirmed_then_saves(client, token, anna, lisa):
    before = _household_state(anna, lisa)

    asked = _put(client, token, {"attending": True, "num_guests": 4})

    assert asked.status_code == 409, asked.content
    body = asked.json()
    assert body["code"] == "needs_confirmation"
    assert body["reason"] == "more_than_expected"
    assert (body["expected"], body["answered"], body["confirmable"]) == (2, 4, True)
    assert [m["id"] for m in body["members"]] == [str(lisa.pk)]
    assert [m["id"] for m in body["concerned"]] == [str(anna.pk)]
    assert _household_state(anna, lisa) == before

    confirmed = _put(client, token, {"attending": True, "num_guests": 4, "confirmed": True})

    assert confirmed.status_code == 200, confirmed.content
    assert _statuses(anna, lisa) == {"Anna": ("coming", 3), "Lisa": ("coming", 1)}


# --- answering: a choice per member --------------------------------------------------------------------


def test_a_choice_per_member_with_counts_and_details(client, token, anna, lisa):
    body = {
        "members": [
            {"id": str(anna.pk), "attending": True, "num_guests": 2, "dietary": "Vegan", "answers": {"meal": "Fish"}},
            {"id": str(lisa.pk), "attending": False, "dietary": "Coeliac"},
        ],
        "confirmed": True,
    }

    response = _put(client, token, body)

    assert response.status_code == 200, response.content
    data = response.json()
    assert (data["guest"]["num_guests"], data["guest"]["dietary"], data["guest"]["answers"]) == (
        2,
        "Vegan",
        {"meal": "Fish"},
    )
    assert (data["members"][0]["status"], data["members"][0]["dietary"]) == ("declined", "Coeliac")
    assert data["head_count"] == 2


def test_a_choice_per_member_asks_before_naming_someone_absent(client, token, anna, lisa):
    before = _household_state(anna, lisa)
    members = [{"id": str(anna.pk), "attending": True, "num_guests": 1}, {"id": str(lisa.pk), "attending": False}]

    asked = _put(client, token, {"members": members})

    assert asked.status_code == 409, asked.content
    body = asked.json()
    assert (body["reason"], body["expected"], body["answered"], body["confirmable"]) == (
        "fewer_than_expected",
        2,
        1,
        True,
    )
    assert [m["id"] for m in body["concerned"]] == [str(lisa.pk)]
    assert _household_state(anna, lisa) == before
    assert _put(client, token, {"members": members, "confirmed": True}).status_code == 200
    assert _statuses(anna, lisa) == {"Anna": ("coming", 1), "Lisa": ("declined", 0)}


def test_another_members_own_decline_changes_only_with_confirmation(client, token, anna, lisa):
    lisa_token = _login(client, lisa.code, "Müller").json()["access"]
    assert _put(client, lisa_token, {"attending": False}).status_code == 200
    members = [{"id": str(lisa.pk), "attending": True, "num_guests": 1}]

    asked = _put(client, token, {"members": members})

    assert asked.status_code == 409
    assert asked.json()["reason"] == "overrides_decline"
    assert [m["id"] for m in asked.json()["declined_members"]] == [str(lisa.pk)]
    assert _statuses(lisa) == {"Lisa": ("declined", 0)}
    assert _put(client, token, {"members": members, "confirmed": True}).status_code == 200
    assert _statuses(lisa) == {"Lisa": ("coming", 1)}


@pytest.mark.parametrize(
    ("members", "field"),
    [
        ([], "members"),
        ([{"id": "not-a-uuid", "attending": True}], "members"),
        ([{"attending": True}], "members"),
        ([{"id": "LISA", "attending": True, "status": "coming"}], "members"),
        ([{"id": "LISA", "attending": True, "num_guests": 51}], "members"),
        ([{"id": "LISA", "attending": False, "num_guests": 2}], "members"),
        ([{"id": "LISA", "attending": True}, {"id": "LISA", "attending": False}], "members"),
        ([{"id": "STRANGER", "attending": True}], "members"),
    ],
)
def test_malformed_per_member_bodies_are_a_400_and_change_nothing(client, token, anna, lisa, event, members, field):
    stranger = GuestFactory(event=event, first_name="Stranger")
    ids = {"LISA": str(lisa.pk), "STRANGER": str(stranger.pk)}
    members = [{**m, "id": ids.get(m["id"], m["id"])} if "id" in m else m for m in members]
    before = _household_state(anna, lisa, stranger)

    response = _put(client, token, {"members": members, "confirmed": True})

    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert _household_state(anna, lisa, stranger) == before


def test_the_two_shapes_cannot_be_mixed(client, token, anna, lisa):
    response = _put(client, token, {"members": [{"id": str(anna.pk), "attending": True}], "attending": True})

    assert response.status_code == 400
    assert "attending" in response.json()["errors"]


def test_a_guest_without_a_group_answers_for_themselves(client, event):
    solo = GuestFactory(event=event, first_name="Solo", last_name="Ñúñez")
    token = _login(client, _typed(solo.code), "nunez").json()["access"]

    response = _put(client, token, {"attending": True, "num_guests": 1})

    assert response.status_code == 200, response.content
    assert response.json()["members"] == []
    assert response.json()["expected_total"] == 1
    assert _statuses(solo) == {"Solo": ("coming", 1)}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"attending": True, "num_guests": 2, "status": "coming"}, "status"),
        ({"attending": True, "num_guests": 2, "group_id": str(uuid.uuid4())}, "group_id"),
        ({"attending": True, "num_guests": 2, "expected_guests": 9}, "expected_guests"),
        ({"num_guests": 2}, "attending"),
        ({"attending": True}, "num_guests"),
        ({"attending": True, "num_guests": 0}, "num_guests"),
        ({"attending": True, "num_guests": -1}, "num_guests"),
        ({"attending": True, "num_guests": 51}, "num_guests"),
        ({"attending": "perhaps", "num_guests": 2}, "attending"),
        ({"attending": True, "num_guests": 2, "absent": ["not-a-uuid"]}, "absent"),
        ({"attending": True, "num_guests": 2, "answers": ["Fish"]}, "answers"),
        ({"attending": True, "num_guests": 2, "dietary": "x" * 1001}, "dietary"),
    ],
)
def test_unknown_or_malformed_fields_are_a_400_and_change_nothing(client, token, anna, lisa, body, field):
    before = _household_state(anna, lisa)

    response = _put(client, token, body)

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid"
    assert field in response.json()["errors"]
    assert _household_state(anna, lisa) == before


@pytest.mark.parametrize(
    "answers",
    [{"shoe_size": "42"}, {"meal": "Tofu"}, {"meal": "Fish", "unknown": "x"}],
    ids=["unknown-question", "not-a-choice", "one-unknown-among-known"],
)
def test_answers_to_unknown_questions_are_a_400_and_change_nothing(client, token, anna, lisa, answers):
    before = _household_state(anna, lisa)

    response = _put(client, token, {"attending": True, "num_guests": 2, "answers": answers})

    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid"
    assert "answers" in response.json()["errors"]
    assert _household_state(anna, lisa) == before


def test_absent_ids_outside_the_group_are_a_400_and_change_nothing(client, token, anna, lisa, event):
    stranger = GuestFactory(event=event, first_name="Stranger", last_name="Müller")
    other_event_guest = GuestFactory(first_name="Elsewhere")
    before = _household_state(anna, lisa, stranger, other_event_guest)

    for absent in ([str(stranger.pk)], [str(other_event_guest.pk)], [str(uuid.uuid4())], [str(anna.pk)]):
        response = _put(client, token, {"attending": True, "num_guests": 1, "absent": absent, "confirmed": True})

        assert response.status_code == 400, (absent, response.content)
        assert response.json()["code"] == "invalid"
        assert "absent" in response.json()["errors"]
    assert _household_state(anna, lisa, stranger, other_event_guest) == before


def test_after_the_deadline_the_answer_is_refused_with_the_contact(client, token, anna, lisa, event):
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(minutes=1))
    before = _household_state(anna, lisa)

    for body in ({"attending": False}, {"attending": True, "num_guests": 2}, {"attending": True, "num_guests": 1}):
        response = _put(client, token, body)

        assert response.status_code == 403, response.content
        assert response.json()["code"] == "rsvp_closed"
        assert response.json()["contact_email"] == "host@example.com"
        assert "contact the organizer" in response.json()["detail"]
    assert _household_state(anna, lisa) == before


def test_a_regenerated_code_ends_the_old_token(client, token, anna, lisa, owner):
    guest_code_regenerate(guest=Guest.objects.get(pk=anna.pk), acting_user=owner)
    before = _household_state(anna, lisa)

    read = client.get(RSVP_URL, **_bearer(token))
    write = _put(client, token, {"attending": True, "num_guests": 2})

    for response in (read, write):
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "authentication_failed"
    assert _household_state(anna, lisa) == before
    # logging in again with the new code works
    anna.refresh_from_db()
    fresh = _login(client, anna.code, "Müller").json()["access"]
    assert client.get(RSVP_URL, **_bearer(fresh)).status_code == 200


def test_the_organizer_apis_code_regeneration_and_archiving_end_the_guests_token(client, token, anna, lisa, owner):
    """The same through HTTP, with the organizer's own token."""
    organizer = _bearer(organizer_token_pair(owner)["access"])
    lisa_token = _login(client, lisa.code, "Müller").json()["access"]

    regenerated = client.post(f"/api/v1/events/{anna.event_id}/guests/{anna.pk}/regenerate-code", **organizer)
    assert regenerated.status_code == 200, regenerated.content
    assert client.get(RSVP_URL, **_bearer(token)).status_code == 401
    assert client.get(RSVP_URL, **_bearer(lisa_token)).status_code == 200, "only Anna's code changed"

    archived = client.post(f"/api/v1/events/{anna.event_id}/archive", **organizer)
    assert archived.status_code == 200, archived.content
    response = client.get(RSVP_URL, **_bearer(lisa_token))
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_an_archived_event_ends_the_token(client, token, anna, lisa, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)
    before = _household_state(anna, lisa)

    read = client.get(RSVP_URL, **_bearer(token))
    write = _put(client, token, {"attending": False})

    for response in (read, write):
        assert response.status_code == 401, response.content
        assert response.json()["code"] == "authentication_failed"
    assert _household_state(anna, lisa) == before


def test_a_deleted_guest_ends_the_token(client, token, anna):
    Guest.objects.filter(pk=anna.pk).delete()

    response = client.get(RSVP_URL, **_bearer(token))

    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_the_whole_flow_through_http(client, anna, lisa):
    login = _login(client, _typed(anna.code), "MULLER")
    assert login.status_code == 200
    token = login.json()["access"]

    invitation = client.get(RSVP_URL, **_bearer(token)).json()
    assert invitation["expected_total"] == 2

    asked = _put(client, token, {"attending": True, "num_guests": 1})
    assert asked.status_code == 409 and asked.json()["confirmable"] is False
    missing = [m["id"] for m in asked.json()["members"]]

    answer = {"attending": True, "num_guests": 1, "absent": missing, "confirmed": True, "answers": {"meal": "Fish"}}
    saved = _put(client, token, answer)
    assert saved.status_code == 200

    again = client.get(RSVP_URL, **_bearer(token)).json()
    assert again["guest"]["status"] == "coming"
    assert again["guest"]["answers"] == {"meal": "Fish"}
    assert again["members"][0]["status"] == "declined"

    # Lisa, with her own code, sees Anna's answer and declines for herself only
    lisa_token = _login(client, lisa.code, "müller").json()["access"]
    lisa_view = client.get(RSVP_URL, **_bearer(lisa_token)).json()
    assert lisa_view["guest"]["id"] == str(lisa.pk)
    assert lisa_view["members"][0]["status"] == "coming"
    assert _put(client, lisa_token, {"attending": False}).status_code == 200
    assert _statuses(anna, lisa) == {"Anna": ("coming", 1), "Lisa": ("declined", 0)}

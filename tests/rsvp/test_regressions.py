"""The seven defects of issue 10, each through the API and through the pages, as a user meets them."""

import uuid

import pytest
from django.contrib.messages import get_messages
from django.urls import reverse

from events.models import Event
from guests.models import Guest
from guests.selectors import event_stats
from tests.api.organizer_fixtures import organizer_client
from tests.factories import GuestFactory
from tests.rsvp.household_form import household_post, row

ANSWER_URL = "/rsvp/answer/"


def _token(client, guest):
    response = client.post(
        "/api/v1/auth/guest-login", {"code": guest.code, "last_name": guest.last_name}, content_type="application/json"
    )
    assert response.status_code == 200, response.content
    return response.json()["access"]


def _put(client, token, body):
    return client.put("/api/v1/rsvp", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")


def _login(client, guest):
    assert client.post("/rsvp/", {"code": guest.code, "last_name": guest.last_name}).status_code == 302


def _answers(*guests):
    rows = Guest.objects.filter(pk__in=[g.pk for g in guests])
    return {g.first_name: (g.status, g.num_guests) for g in rows}


def _consistent(event):
    """The dashboard never shows more people coming than its head count, and the head count is the rows'."""
    stats = event_stats(event=event)
    rows = Guest.objects.for_event(event)
    assert stats["head_count"] == sum(g.num_guests for g in rows if g.status == "coming")
    assert stats["coming"] <= stats["head_count"]
    return stats


@pytest.fixture
def weber(event):
    """A household of four: Olivia, Jonas, Noah and Ida Weber."""
    group = uuid.uuid4()
    names = ("Olivia", "Jonas", "Noah", "Ida")
    return [GuestFactory(event=event, first_name=n, last_name="Weber", group_id=group) for n in names]


# 1. "Fewer than expected" was saved without naming anyone, and the whole household became "coming". ------


def test_1_api_fewer_without_naming_anyone_is_never_saved(client, event, weber):
    olivia = weber[0]

    response = _put(client, _token(client, olivia), {"attending": True, "num_guests": 1, "confirmed": True})

    assert response.status_code == 409
    assert (response.json()["reason"], response.json()["confirmable"]) == ("fewer_than_expected", False)
    assert set(_answers(*weber).values()) == {("pending", 0)}
    assert _consistent(event)["coming"] == 0


def test_1_page_one_person_answering_never_makes_the_others_coming_with_nobody(client, event, weber):
    olivia = weber[0]
    _login(client, olivia)

    tampered = client.post(ANSWER_URL, household_post(row("yes", 1), *[row("yes", 0)] * 3, confirmed=True))
    assert tampered.status_code == 400
    assert set(_answers(*weber).values()) == {("pending", 0)}

    response = client.post(ANSWER_URL, household_post(row("yes", 1), *[row("later")] * 3, confirmed=True))

    assert response.status_code == 302
    assert _answers(*weber) == {
        "Olivia": ("coming", 1),
        "Jonas": ("pending", 0),
        "Noah": ("pending", 0),
        "Ida": ("pending", 0),
    }
    stats = _consistent(event)
    assert (stats["coming"], stats["head_count"]) == (1, 1)


# 2. One member's answer overwrote another member's own decline. -------------------------------------------


def test_2_api_a_members_own_decline_survives_the_household_answer(client, event, weber):
    olivia, jonas = weber[0], weber[1]
    assert _put(client, _token(client, jonas), {"attending": False}).status_code == 200
    token = _token(client, olivia)

    counting_jonas = _put(client, token, {"attending": True, "num_guests": 4})
    assert counting_jonas.status_code == 409
    assert (counting_jonas.json()["reason"], counting_jonas.json()["expected"]) == ("more_than_expected", 3)

    assert _put(client, token, {"attending": True, "num_guests": 3}).status_code == 200
    assert _answers(jonas)["Jonas"] == ("declined", 0)

    switched = _put(client, token, {"members": [{"id": str(jonas.pk), "attending": True}]})
    assert switched.status_code == 409 and switched.json()["reason"] == "overrides_decline"
    assert _answers(jonas)["Jonas"] == ("declined", 0)
    _consistent(event)


def test_2_page_shows_the_decline_as_not_coming_and_asks_before_switching_it(client, event, weber):
    olivia, jonas, noah, ida = weber
    _login(client, jonas)
    assert (
        client.post(ANSWER_URL, household_post(row("no"), row("later"), row("later"), row("later"))).status_code == 302
    )
    client.post("/rsvp/logout/")
    _login(client, olivia)

    page = client.get(ANSWER_URL)
    rows = {f.member.first_name: f.initial["attending"] for f in page.context["formset"].forms}
    assert rows == {"Olivia": None, "Ida": "later", "Jonas": "no", "Noah": "later"}
    assert "Jonas answered “not coming”." in page.content.decode()

    # The household form as prefilled, with everyone else coming: Jonas stays declined.
    everyone_else = household_post(row("yes", 1), row("yes", 1), row("no"), row("yes", 1))  # Olivia, Ida, Jonas, Noah
    assert client.post(ANSWER_URL, everyone_else).status_code == 302
    assert _answers(*weber)["Jonas"] == ("declined", 0)

    switched = household_post(row("yes", 1), row("yes", 1), row("yes", 1), row("yes", 1))
    asked = client.post(ANSWER_URL, switched)
    assert asked.status_code == 409
    assert "Jonas answered “not coming”. Is Jonas coming after all?" in asked.content.decode()
    assert _answers(*weber)["Jonas"] == ("declined", 0)
    assert client.post(ANSWER_URL, {**switched, "confirmed": "on"}).status_code == 302
    assert _answers(*weber)["Jonas"] == ("coming", 1)
    _consistent(event)


# 3. The people ticked as absent were not reconciled with the number. ----------------------------------------


def test_3_api_absent_members_and_the_number_must_agree(client, event, weber):
    olivia, jonas, noah, _ida = weber
    Guest.objects.filter(pk=weber[3].pk).delete()  # a household of three
    token = _token(client, olivia)
    body = {"attending": True, "num_guests": 2, "absent": [str(jonas.pk), str(noah.pk)]}

    asked = _put(client, token, body)

    assert asked.status_code == 409
    assert (asked.json()["reason"], asked.json()["expected"], asked.json()["answered"]) == ("more_than_expected", 1, 2)
    assert set(_answers(olivia, jonas, noah).values()) == {("pending", 0)}
    assert _put(client, token, {**body, "num_guests": 1}).status_code == 200
    assert _answers(olivia, jonas, noah) == {"Olivia": ("coming", 1), "Jonas": ("declined", 0), "Noah": ("declined", 0)}
    assert _consistent(event)["head_count"] == 1


def test_3_page_the_total_is_the_sum_of_the_rows(client, event, weber):
    olivia = weber[0]
    _login(client, olivia)

    response = client.post(
        ANSWER_URL, household_post(row("yes", 2), row("no"), row("no"), row("yes", 1), confirmed=True)
    )

    assert response.status_code == 302
    assert sum(n for _status, n in _answers(*weber).values()) == 3
    assert _consistent(event)["head_count"] == 3


# 4. A member's decline after someone answered for the household left them in the head count. ----------------


def test_4_api_a_later_decline_leaves_the_head_count_at_once(client, event, weber):
    olivia, jonas = weber[0], weber[1]
    assert _put(client, _token(client, olivia), {"attending": True, "num_guests": 4}).status_code == 200
    assert _consistent(event)["head_count"] == 4

    assert _put(client, _token(client, jonas), {"attending": False}).status_code == 200

    assert _consistent(event)["head_count"] == 3
    assert client.get("/api/v1/rsvp", HTTP_AUTHORIZATION=f"Bearer {_token(client, olivia)}").json()["head_count"] == 3


def test_4_page_a_later_decline_leaves_the_head_count_at_once(client, event, weber):
    olivia, jonas = weber[0], weber[1]
    _login(client, olivia)
    client.post(ANSWER_URL, household_post(*[row("yes", 1)] * 4))
    client.post("/rsvp/logout/")
    _login(client, jonas)

    client.post(ANSWER_URL, household_post(row("no"), row("yes", 1), row("yes", 1), row("yes", 1)))

    assert _consistent(event)["head_count"] == 3
    assert "3 people" in client.get(ANSWER_URL).content.decode().split('data-testid="current-answer"', 1)[1]


# 5. Search needed exact accents; "obrien" did not log O'Brien in. -------------------------------------------


@pytest.fixture
def spanish_names(event):
    return {
        "perez": GuestFactory(event=event, first_name="Ana", last_name="Pérez"),
        "alvarez": GuestFactory(event=event, first_name="Luis", last_name="Álvarez"),
        "obrien": GuestFactory(event=event, first_name="Siobhán", last_name="O'Brien"),
    }


def test_5_page_search_forgives_accents_and_finds_codes(owner_client, tenant, event, spanish_names):
    url = reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})
    code = spanish_names["alvarez"].code

    for q, key in [("perez", "perez"), ("alvarez", "alvarez"), ("ana perez", "perez"), (code.lower(), "alvarez")]:
        assert [g.pk for g in owner_client.get(url, {"q": q}).context["page"]] == [spanish_names[key].pk], q


def test_5_api_search_and_obrien_login(client, owner, event, spanish_names):
    api = organizer_client(owner)
    for q, key in [("perez", "perez"), ("alvarez", "alvarez"), ("ana perez", "perez"), ("obrien", "obrien")]:
        results = api.get(f"/api/v1/events/{event.pk}/guests", {"q": q}).json()["results"]
        assert [r["id"] for r in results] == [str(spanish_names[key].pk)], q

    response = client.post(
        "/api/v1/auth/guest-login",
        {"code": spanish_names["obrien"].code, "last_name": "obrien"},
        content_type="application/json",
    )
    assert response.status_code == 200
    assert client.post("/rsvp/", {"code": spanish_names["obrien"].code, "last_name": "obrien"}).status_code == 302


# 6. Grouping Ana (with Luis) with Carmen said "2 guests are now one group" while 3 were. --------------------


def test_6_page_and_api_count_everyone_in_the_resulting_group(owner_client, owner, tenant, event):
    group = uuid.uuid4()
    ana = GuestFactory(event=event, first_name="Ana", group_id=group)
    GuestFactory(event=event, first_name="Luis", group_id=group)
    carmen = GuestFactory(event=event, first_name="Carmen")

    response = owner_client.post(
        reverse("guests:group_connect", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}),
        {"guests": [str(ana.pk), str(carmen.pk)]},
    )

    assert [m.message for m in get_messages(response.wsgi_request)] == ["3 guests are now one group."]
    dora = GuestFactory(event=event, first_name="Dora")
    api = organizer_client(owner).post(
        f"/api/v1/events/{event.pk}/groups", {"guests": [str(carmen.pk), str(dora.pk)]}, format="json"
    )
    assert sorted(m["first_name"] for m in api.json()["members"]) == ["Ana", "Carmen", "Dora", "Luis"]


# 7. A guest of a draft event with no deadline was told "The RSVP deadline has passed". -----------------------


def test_7_draft_event_is_not_open_yet_on_the_page_and_in_the_api(client, event, weber):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.DRAFT, rsvp_deadline=None)
    olivia = weber[0]
    token = _token(client, olivia)

    read = client.get("/api/v1/rsvp", HTTP_AUTHORIZATION=f"Bearer {token}").json()
    answered = _put(client, token, {"attending": False})
    _login(client, olivia)
    page = client.get(ANSWER_URL).content.decode()

    assert (read["rsvp_open"], read["rsvp_state"]) == (False, "not_open_yet")
    assert answered.status_code == 403 and answered.json()["code"] == "rsvp_not_open"
    assert "deadline" not in answered.json()["detail"].lower()
    assert "Answers are not open yet" in page and "deadline has passed" not in page
    assert set(_answers(*weber).values()) == {("pending", 0)}

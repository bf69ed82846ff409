"""The guest's RSVP page: what it shows and what answering through it does."""

import datetime as dt
import html
import re
import uuid

import pytest
from django.utils import timezone

from events.models import Event
from guests.models import Guest
from tests.factories import GuestFactory

ANSWER_URL = "/rsvp/answer/"
MEAL_QUESTION = {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]}


def _login(client, guest, last_name="Müller"):
    response = client.post("/rsvp/", {"code": guest.code, "last_name": last_name})
    assert response.status_code == 302, "guest login failed"
    return client


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _state(guest):
    guest = Guest.objects.get(pk=guest.pk)
    return guest.status, guest.num_guests, guest.rsvp_at


def _untouched(*guests):
    return all(_state(g) == (Guest.Status.PENDING, 0, None) for g in guests)


@pytest.fixture
def anna(household):
    return household[0]


@pytest.fixture
def lisa(household):
    return household[1]


@pytest.fixture
def anna_client(client, anna):
    return _login(client, anna)


# --- what the page shows --------------------------------------------------------------------------


def test_page_shows_event_details_in_the_event_timezone(client, event, household):
    anna, lisa = household
    Event.objects.filter(pk=event.pk).update(
        name="Anna & Ben's Wedding",
        starts_at=dt.datetime(2030, 6, 3, 16, 30, tzinfo=dt.UTC),  # 18:30 in Madrid (summer time)
        rsvp_deadline=dt.datetime(2030, 5, 1, 21, 59, tzinfo=dt.UTC),  # 23:59 in Madrid
        location="Finca El Olivar, Ronda",
        dress_code="Black tie",
        timezone="Europe/Madrid",
    )
    _login(client, anna)

    page = _text(client.get(ANSWER_URL))

    assert "Anna & Ben's Wedding" in page
    assert "Monday, June 3, 2030, 6:30 p.m." in page
    assert "4:30 p.m." not in page  # not UTC
    assert "Europe/Madrid" in page
    assert "Finca El Olivar, Ronda" in page
    assert "Black tie" in page
    assert "Please answer by" in page
    assert "May 1, 2030, 11:59 p.m." in page


def test_page_shows_winter_times_with_the_winter_offset(client, event, anna):
    Event.objects.filter(pk=event.pk).update(
        starts_at=dt.datetime(2030, 1, 15, 17, 0, tzinfo=dt.UTC),  # 18:00 in Madrid (UTC+1 in winter)
        rsvp_deadline=dt.datetime(2030, 1, 1, 11, 0, tzinfo=dt.UTC),
    )
    _login(client, anna)

    page = _text(client.get(ANSWER_URL))

    assert "Tuesday, Jan. 15, 2030, 6 p.m." in page
    assert "Jan. 1, 2030, noon" in page


def test_page_lists_group_members_and_the_expected_total(anna_client, anna, lisa):
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2)  # Anna brings her baby

    page = _text(anna_client.get(ANSWER_URL))

    household = re.search(r'<ul data-testid="household">(.*?)</ul>', page, re.S).group(1)
    assert "Anna Müller" in household
    assert "and 1 more" in household
    assert "Lisa Müller" in household
    assert "This invitation is for 3 people" in page


def test_page_of_a_guest_without_group_shows_expected_people(client, event):
    solo = GuestFactory(event=event, first_name="Tom", last_name="Solo", expected_guests=2)
    _login(client, solo, "Solo")

    page = _text(client.get(ANSWER_URL))

    assert "We are expecting 2 people." in page
    assert 'data-testid="household"' not in page


def test_page_does_not_show_other_households(anna_client, event):
    GuestFactory(event=event, first_name="Bob", last_name="Meier", group_id=uuid.uuid4())

    assert "Bob" not in _text(anna_client.get(ANSWER_URL))


def test_page_shows_the_custom_questions(anna_client, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    page = _text(anna_client.get(ANSWER_URL))

    assert "Main course" in page
    assert 'name="q_meal"' in page
    assert '<option value="Fish"' in page and '<option value="Meat"' in page


def test_page_prefills_the_current_answer(anna_client, anna):
    anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": 2, "dietary": "Lactose free"})

    page = _text(anna_client.get(ANSWER_URL))

    assert 'data-testid="current-answer"' in page
    assert "Lactose free" in page
    assert re.search(r'name="attending" value="yes"[^>]*checked', page)


# --- declining and coming -------------------------------------------------------------------------


def test_declining_marks_only_this_guest_declined(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, {"attending": "no"})

    assert response.status_code == 302
    assert response["Location"] == ANSWER_URL
    status, num, rsvp_at = _state(anna)
    assert (status, num) == (Guest.Status.DECLINED, 0)
    assert rsvp_at is not None
    assert _untouched(lisa)
    assert "Your answer is saved" in _text(anna_client.get(ANSWER_URL))


def test_coming_with_the_expected_number_marks_the_group_coming(
    anna_client, anna, lisa, settings, django_assert_num_queries
):
    # session, guest, household; then the service's five; the redirect does not re-read. Activity
    # tracking has its own counts (tests/guests/test_activity.py): on the embedded default it writes
    # a batch of one once no transaction is open, which here depends on the backend (SQL tests run
    # inside one, MongoDB has none).
    settings.ACTIVITY_TRACKING = False
    with django_assert_num_queries(8):
        response = anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "2"})

    assert response.status_code == 302
    a_status, a_num, a_at = _state(anna)
    l_status, l_num, l_at = _state(lisa)
    assert (a_status, a_num) == (Guest.Status.COMING, 2)
    assert (l_status, l_num) == (Guest.Status.COMING, 0)
    assert a_at is not None and a_at == l_at


def test_submit_query_count_does_not_depend_on_group_size(client, event, settings, django_assert_num_queries):
    group_id = uuid.uuid4()
    guests = GuestFactory.create_batch(7, event=event, last_name="Big", group_id=group_id)
    _login(client, guests[0], "Big")
    settings.ACTIVITY_TRACKING = False  # counted in tests/guests/test_activity.py

    with django_assert_num_queries(8):
        response = client.post(ANSWER_URL, {"attending": "yes", "num_guests": "7"})

    assert response.status_code == 302
    assert Guest.objects.filter(group_id=group_id, status=Guest.Status.COMING).count() == 7


def test_fewer_than_expected_asks_who_is_not_coming_and_saves_nothing(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "1", "dietary": "Vegan"})

    assert response.status_code == 409
    page = _text(response)
    assert "We expected 2 but you said 1." in page
    assert "Is Lisa not coming?" in page
    assert re.search(rf'<input type="checkbox" name="absent" value="{lisa.pk}"', page)
    assert 'data-reason="fewer_than_expected"' in page
    assert 'name="confirmed" value="on"' in page
    assert _untouched(anna, lisa)
    assert Guest.objects.get(pk=anna.pk).dietary == ""


def test_confirming_the_absent_member_saves_the_answer(anna_client, anna, lisa):
    anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "1"})

    response = anna_client.post(
        ANSWER_URL, {"attending": "yes", "num_guests": "1", "absent": [str(lisa.pk)], "confirmed": "on"}
    )

    assert response.status_code == 302
    assert _state(lisa)[:2] == (Guest.Status.DECLINED, 0)
    assert _state(anna)[:2] == (Guest.Status.COMING, 1)
    assert _state(lisa)[2] is not None


def test_fewer_than_expected_in_a_bigger_household_offers_every_member(client, event):
    group = uuid.uuid4()
    max_, mia, mo = (
        GuestFactory(event=event, first_name=name, last_name="Berg", group_id=group) for name in ("Max", "Mia", "Mo")
    )
    _login(client, max_, "Berg")

    response = client.post(ANSWER_URL, {"attending": "yes", "num_guests": "1"})

    assert response.status_code == 409
    page = _text(response)
    assert "We expected 3 but you said 1." in page
    assert "not coming?" not in page.replace("Who is not coming?", "")
    for member in (mia, mo):
        assert re.search(rf'<input type="checkbox" name="absent" value="{member.pk}"', page)
    assert _untouched(max_, mia, mo)

    done = client.post(
        ANSWER_URL, {"attending": "yes", "num_guests": "1", "absent": [str(mia.pk), str(mo.pk)], "confirmed": "on"}
    )

    assert done.status_code == 302
    assert _state(max_)[:2] == (Guest.Status.COMING, 1)
    assert _state(mia)[:2] == _state(mo)[:2] == (Guest.Status.DECLINED, 0)


def test_solo_guest_bringing_fewer_than_expected_confirms_the_number(client, event):
    solo = GuestFactory(event=event, first_name="Tom", last_name="Solo", expected_guests=3)
    _login(client, solo, "Solo")

    response = client.post(ANSWER_URL, {"attending": "yes", "num_guests": "2"})

    assert response.status_code == 409
    assert "We expected 3 but you said 2." in _text(response)
    assert "Confirm: 2 people are coming" in _text(response)
    assert _untouched(solo)

    assert client.post(ANSWER_URL, {"attending": "yes", "num_guests": "2", "confirmed": "on"}).status_code == 302
    assert _state(solo)[:2] == (Guest.Status.COMING, 2)


def test_more_than_expected_needs_an_explicit_yes(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "3"})

    assert response.status_code == 409
    page = _text(response)
    assert "We expected 2 but you said 3. Are you sure?" in page
    assert "Yes, we are 3" in page
    assert 'data-reason="more_than_expected"' in page
    assert _untouched(anna, lisa)

    confirmed = anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "3", "confirmed": "on"})

    assert confirmed.status_code == 302
    assert _state(anna)[:2] == (Guest.Status.COMING, 3)
    assert _state(lisa)[:2] == (Guest.Status.COMING, 0)


def test_coming_without_a_number_is_a_field_error(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": ""})

    assert response.status_code == 400
    assert "num_guests" in response.context["form"].errors
    assert _untouched(anna, lisa)


def test_missing_choice_is_a_field_error(anna_client, anna):
    response = anna_client.post(ANSWER_URL, {})

    assert response.status_code == 400
    assert "attending" in response.context["form"].errors
    assert _untouched(anna)


# --- dietary needs and custom questions -----------------------------------------------------------


def test_dietary_needs_and_question_answers_are_saved(anna_client, anna, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    response = anna_client.post(
        ANSWER_URL, {"attending": "yes", "num_guests": "2", "dietary": "  No nuts please ", "q_meal": "Fish"}
    )

    assert response.status_code == 302
    saved = Guest.objects.get(pk=anna.pk)
    assert saved.dietary == "No nuts please"
    assert saved.answers == {"meal": "Fish"}


def test_invalid_question_choice_is_a_field_error_and_saves_nothing(anna_client, anna, lisa, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    response = anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "2", "q_meal": "Pizza"})

    assert response.status_code == 400
    assert "q_meal" in response.context["form"].errors
    assert "Select a valid choice" in _text(response)
    assert _untouched(anna, lisa)
    assert Guest.objects.get(pk=anna.pk).answers == {}


# --- the deadline ---------------------------------------------------------------------------------


def test_after_the_deadline_post_changes_nothing(anna_client, anna, lisa, event):
    anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "2"})
    before = (_state(anna), _state(lisa))
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(minutes=1))

    response = anna_client.post(ANSWER_URL, {"attending": "no"})

    assert response.status_code == 403
    assert (_state(anna), _state(lisa)) == before
    assert "host@example.com" in _text(response)


def test_after_the_deadline_the_page_shows_the_organizer_contact(anna_client, event):
    Event.objects.filter(pk=event.pk).update(
        rsvp_deadline=timezone.now() - dt.timedelta(days=1), contact_email="bride@example.org"
    )

    response = anna_client.get(ANSWER_URL)

    assert response.status_code == 200
    page = _text(response)
    assert 'data-testid="rsvp-closed"' in page
    assert 'href="mailto:bride@example.org"' in page
    assert 'name="attending"' not in page


def test_before_the_deadline_the_guest_can_change_answers_many_times(anna_client, anna, lisa, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    answers = [
        {"attending": "yes", "num_guests": "2", "q_meal": "Fish"},
        {"attending": "no"},
        {"attending": "yes", "num_guests": "1", "absent": [str(lisa.pk)], "confirmed": "on"},
        {"attending": "yes", "num_guests": "2", "q_meal": "Meat", "dietary": "Halal"},
    ]
    for data in answers:
        assert anna_client.post(ANSWER_URL, data).status_code == 302

    saved = Guest.objects.get(pk=anna.pk)
    assert (saved.status, saved.num_guests, saved.answers, saved.dietary) == (
        Guest.Status.COMING,
        2,
        {"meal": "Meat"},
        "Halal",
    )
    assert _state(lisa)[:2] == (Guest.Status.COMING, 0)


def test_archived_event_guest_cannot_answer(anna_client, anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    response = anna_client.post(ANSWER_URL, {"attending": "no"})

    assert response.status_code == 302
    assert _untouched(anna)


# --- the household boundary -----------------------------------------------------------------------


def test_naming_someone_outside_the_group_as_absent_is_a_field_error(anna_client, anna, lisa, event):
    stranger = GuestFactory(event=event, first_name="Bob", last_name="Meier", group_id=uuid.uuid4())

    response = anna_client.post(
        ANSWER_URL, {"attending": "yes", "num_guests": "1", "absent": [str(stranger.pk)], "confirmed": "on"}
    )

    assert response.status_code == 400
    assert "absent" in response.context["form"].errors
    assert _untouched(anna, lisa, stranger)


def test_answering_never_changes_another_groups_guests(anna_client, anna, lisa, event):
    group = uuid.uuid4()
    bob = GuestFactory(event=event, first_name="Bob", last_name="Meier", group_id=group)
    eva = GuestFactory(event=event, first_name="Eva", last_name="Meier", group_id=group)

    anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "2"})
    anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "1", "absent": [str(lisa.pk)], "confirmed": "on"})
    anna_client.post(ANSWER_URL, {"attending": "yes", "num_guests": "1", "absent": [str(bob.pk)], "confirmed": "on"})

    assert _untouched(bob, eva)
    assert _state(anna)[:2] == (Guest.Status.COMING, 1)

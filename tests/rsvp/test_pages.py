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
from tests.rsvp.household_form import household_post, row

ANSWER_URL = "/rsvp/answer/"
MEAL_QUESTION = {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]}


def _login(client, guest, last_name="Müller"):
    response = client.post("/rsvp/", {"code": guest.code, "last_name": last_name})
    assert response.status_code == 302, "guest login failed"
    return client


def _text(response) -> str:
    return html.unescape(response.content.decode())


def _plain(response) -> str:
    """The page's text without tags, spaces collapsed: what a reader sees."""
    return " ".join(re.sub(r"<[^>]+>", " ", _text(response)).split())


def _state(guest):
    guest = Guest.objects.get(pk=guest.pk)
    return guest.status, guest.num_guests, guest.rsvp_at


def _untouched(*guests):
    return all(_state(g) == (Guest.Status.PENDING, 0, None) for g in guests)


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
    assert "Mon 3 Jun 2030, 18:30 CEST" in page
    assert "16:30" not in page  # not UTC
    assert "Finca El Olivar, Ronda" in page
    assert "Black tie" in page
    assert "Please answer by" in page
    assert "Wed 1 May 2030, 23:59 CEST" in page


def test_page_shows_winter_times_with_the_winter_offset(client, event, anna):
    Event.objects.filter(pk=event.pk).update(
        starts_at=dt.datetime(2030, 1, 15, 17, 0, tzinfo=dt.UTC),  # 18:00 in Madrid (UTC+1 in winter)
        rsvp_deadline=dt.datetime(2030, 1, 1, 11, 0, tzinfo=dt.UTC),
    )
    _login(client, anna)

    page = _text(client.get(ANSWER_URL))

    assert "Tue 15 Jan 2030, 18:00 CET" in page
    assert "Tue 1 Jan 2030, 12:00 CET" in page


def test_page_lists_group_members_and_the_expected_total(anna_client, anna, lisa):
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2)  # Anna brings her baby

    page = _text(anna_client.get(ANSWER_URL))

    household = re.search(r'<ul data-testid="household">(.*?)</ul>', page, re.S).group(1)
    assert "Anna Müller" in household
    assert "and 1 more" in household
    assert "Lisa Müller" in household
    assert "This invitation is for 3 people" in page


def test_the_form_has_a_row_per_member_prefilled_from_the_invitation(anna_client, anna, lisa):
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2)

    response = anna_client.get(ANSWER_URL)

    forms = response.context["formset"].forms
    assert [(f.member.first_name, f.initial["attending"], f.initial["num_guests"]) for f in forms] == [
        ("Anna", None, 2),  # the person answering chooses
        ("Lisa", "later", 1),  # never answered for unless the row says so
    ]
    page = _text(response)
    assert 'name="m-0-attending" value="later"' not in page
    assert re.search(r'name="m-1-attending" value="later"[^>]*checked', page)
    assert "Lisa answers later" in page


def test_page_of_a_guest_without_group_shows_expected_people(client, event):
    solo = GuestFactory(event=event, first_name="Tom", last_name="Solo", expected_guests=2)
    _login(client, solo, "Solo")

    page = _text(client.get(ANSWER_URL))

    assert "We are expecting 2 people." in page
    assert 'data-testid="household"' not in page


def test_page_does_not_show_other_households(anna_client, event):
    GuestFactory(event=event, first_name="Bob", last_name="Meier", group_id=uuid.uuid4())

    assert "Bob" not in _text(anna_client.get(ANSWER_URL))


def test_page_shows_the_custom_questions_for_every_member(anna_client, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    page = _text(anna_client.get(ANSWER_URL))

    assert "Main course" in page
    assert 'name="m-0-q_meal"' in page and 'name="m-1-q_meal"' in page
    assert '<option value="Fish"' in page and '<option value="Meat"' in page


def test_page_prefills_every_members_current_answer(anna_client, anna, lisa):
    anna_client.post(ANSWER_URL, household_post(row("yes", 1, dietary="Lactose free"), row("yes", 2), confirmed=True))

    page = _text(anna_client.get(ANSWER_URL))

    assert 'data-testid="current-answer"' in page
    assert "Lactose free" in page
    assert re.search(r'name="m-0-attending" value="yes"[^>]*checked', page)
    assert re.search(r'name="m-1-attending" value="yes"[^>]*checked', page)
    assert re.search(r'name="m-1-num_guests" value="2"', page)
    assert re.search(r'<output data-total aria-live="polite">3</output>', page)


# --- answering ------------------------------------------------------------------------------------


def _answers(*guests):
    rows = Guest.objects.filter(pk__in=[g.pk for g in guests])
    return {g.first_name: (g.status, g.num_guests, g.answered_by_kind) for g in rows}


def test_declining_marks_only_this_guest_declined(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row("no"), row("later")))

    assert response.status_code == 302
    assert response["Location"] == ANSWER_URL
    status, num, rsvp_at = _state(anna)
    assert (status, num) == (Guest.Status.DECLINED, 0)
    assert rsvp_at is not None
    assert _untouched(lisa)
    assert "Your answer is saved" in _text(anna_client.get(ANSWER_URL))


def test_coming_for_the_whole_household_gives_each_member_their_count(
    anna_client, anna, lisa, settings, django_assert_num_queries
):
    # session, guest, household; then the service's household read, update, audit, re-read (a savepoint
    # around the write); the redirect does not re-read. Activity tracking has its own counts
    # (tests/guests/test_activity.py): on the embedded default it writes a batch of one once no
    # transaction is open, which here depends on the backend (SQL tests run inside one, MongoDB has none).
    settings.ACTIVITY_TRACKING = False
    with django_assert_num_queries(9):
        response = anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("yes", 1)))

    assert response.status_code == 302
    assert _answers(anna, lisa) == {"Anna": ("coming", 1, "self"), "Lisa": ("coming", 1, "household")}
    assert _state(anna)[2] == _state(lisa)[2] is not None


def test_submit_query_count_does_not_depend_on_group_size(client, event, settings, django_assert_num_queries):
    group_id = uuid.uuid4()
    guests = GuestFactory.create_batch(7, event=event, last_name="Big", group_id=group_id)
    _login(client, guests[0], "Big")
    settings.ACTIVITY_TRACKING = False  # counted in tests/guests/test_activity.py

    with django_assert_num_queries(9):
        response = client.post(ANSWER_URL, household_post(*[row("yes", 1)] * 7))

    assert response.status_code == 302
    assert Guest.objects.filter(group_id=group_id, status=Guest.Status.COMING).count() == 7


def test_leaving_a_member_to_answer_later_does_not_answer_for_them(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("later", 1)))

    assert response.status_code == 302
    assert _state(anna)[:2] == ("coming", 1)
    assert _untouched(lisa)


def test_naming_a_member_not_coming_asks_is_lisa_not_coming_and_saves_nothing(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row("yes", 1, dietary="Vegan"), row("no", 1)))

    assert response.status_code == 409
    page = _text(response)
    assert "We expected 2 but you said 1." in page
    assert "Is Lisa not coming?" in page
    assert 'data-reason="fewer_than_expected"' in page
    assert 'name="confirmed" value="on"' in page
    assert "Confirm: 1 person is coming" in page
    # The rows keep what was posted.
    assert re.search(r'name="m-1-attending" value="no"[^>]*checked', page)
    assert _untouched(anna, lisa)
    assert Guest.objects.get(pk=anna.pk).dietary == ""


def test_confirming_saves_the_answer(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("no", 1), confirmed=True))

    assert response.status_code == 302
    assert _answers(anna, lisa) == {"Anna": ("coming", 1, "self"), "Lisa": ("declined", 0, "household")}


def test_several_members_not_coming_are_named_together(client, event):
    group = uuid.uuid4()
    max_, mia, mo = (
        GuestFactory(event=event, first_name=name, last_name="Berg", group_id=group) for name in ("Max", "Mia", "Mo")
    )
    _login(client, max_, "Berg")

    response = client.post(ANSWER_URL, household_post(row("yes", 1), row("no"), row("no")))

    assert response.status_code == 409
    assert "We expected 3 but you said 1. Are Mia and Mo not coming?" in _plain(response)
    assert _untouched(max_, mia, mo)

    done = client.post(ANSWER_URL, household_post(row("yes", 1), row("no"), row("no"), confirmed=True))

    assert done.status_code == 302
    assert _answers(max_, mia, mo) == {
        "Max": ("coming", 1, "self"),
        "Mia": ("declined", 0, "household"),
        "Mo": ("declined", 0, "household"),
    }


def test_solo_guest_bringing_fewer_than_expected_confirms_the_number(client, event):
    solo = GuestFactory(event=event, first_name="Tom", last_name="Solo", expected_guests=3)
    _login(client, solo, "Solo")

    response = client.post(ANSWER_URL, household_post(row("yes", 2)))

    assert response.status_code == 409
    text = _plain(response)
    assert "We expected 3 but you said 2. Are fewer people coming with Tom?" in text
    assert "Confirm: 2 people are coming" in text
    assert _untouched(solo)

    assert client.post(ANSWER_URL, household_post(row("yes", 2), confirmed=True)).status_code == 302
    assert _state(solo)[:2] == (Guest.Status.COMING, 2)


def test_more_than_expected_needs_an_explicit_yes(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row("yes", 2), row("yes", 1)))

    assert response.status_code == 409
    page = _text(response)
    assert "We expected 2 but you said 3. Are you sure?" in page
    assert "Confirm: 3 people are coming" in page
    assert 'data-reason="more_than_expected"' in page
    assert _untouched(anna, lisa)

    confirmed = anna_client.post(ANSWER_URL, household_post(row("yes", 2), row("yes", 1), confirmed=True))

    assert confirmed.status_code == 302
    assert _answers(anna, lisa) == {"Anna": ("coming", 2, "self"), "Lisa": ("coming", 1, "household")}


def test_coming_without_a_number_is_a_field_error(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row("yes", ""), row("yes", 0)))

    assert response.status_code == 400
    forms = response.context["formset"].forms
    assert "num_guests" in forms[0].errors and "num_guests" in forms[1].errors
    assert _untouched(anna, lisa)


def test_missing_choice_for_yourself_is_a_field_error(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row(""), row("later")))

    assert response.status_code == 400
    assert "attending" in response.context["formset"].forms[0].errors
    assert _untouched(anna, lisa)


def test_answering_later_is_not_offered_for_yourself(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, household_post(row("later"), row("later")))

    assert response.status_code == 400
    assert "attending" in response.context["formset"].forms[0].errors
    assert _untouched(anna, lisa)


def test_a_form_without_its_management_data_changes_nothing(anna_client, anna, lisa):
    response = anna_client.post(ANSWER_URL, {"m-0-attending": "no"})

    assert response.status_code == 400
    assert _untouched(anna, lisa)


# --- dietary needs and custom questions, per person -----------------------------------------------


def test_each_members_dietary_needs_and_answers_are_saved_on_that_member(anna_client, anna, lisa, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    response = anna_client.post(
        ANSWER_URL,
        household_post(
            row("yes", 1, dietary="  No nuts please ", q_meal="Fish"), row("yes", 1, dietary="Vegan", q_meal="Meat")
        ),
    )

    assert response.status_code == 302
    rows = {g.first_name: (g.dietary, g.answers) for g in Guest.objects.filter(pk__in=[anna.pk, lisa.pk])}
    assert rows == {"Anna": ("No nuts please", {"meal": "Fish"}), "Lisa": ("Vegan", {"meal": "Meat"})}


def test_invalid_question_choice_is_a_field_error_and_saves_nothing(anna_client, anna, lisa, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    response = anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("yes", 1, q_meal="Pizza")))

    assert response.status_code == 400
    assert "q_meal" in response.context["formset"].forms[1].errors
    assert "Select a valid choice" in _text(response)
    assert _untouched(anna, lisa)


# --- the deadline, and events not open yet -----------------------------------------------------------


def test_after_the_deadline_post_changes_nothing(anna_client, anna, lisa, event):
    anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("yes", 1)))
    before = (_state(anna), _state(lisa))
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(minutes=1))

    response = anna_client.post(ANSWER_URL, household_post(row("no"), row("no")))

    assert response.status_code == 403
    assert (_state(anna), _state(lisa)) == before
    assert "host@example.com" in _text(response)


def test_after_the_deadline_the_page_shows_the_organizer_contact_and_offers_a_change_request(anna_client, event):
    Event.objects.filter(pk=event.pk).update(
        rsvp_deadline=timezone.now() - dt.timedelta(days=1), contact_email="bride@example.org"
    )

    response = anna_client.get(ANSWER_URL)

    assert response.status_code == 200
    page = _text(response)
    assert 'data-testid="rsvp-closed"' in page
    assert "The RSVP deadline has passed." in page
    assert 'href="mailto:bride@example.org"' in page
    assert 'action="/rsvp/change-request/"' in page
    assert "Ask the organizer to change your answer" in page


def test_a_draft_event_says_answers_are_not_open_yet_never_that_the_deadline_passed(anna_client, anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.DRAFT, rsvp_deadline=None)

    page = _text(anna_client.get(ANSWER_URL))
    posted = anna_client.post(ANSWER_URL, household_post(row("no"), row("later")))

    assert 'data-testid="rsvp-not-open"' in page
    assert "Answers are not open yet" in page
    assert "deadline" not in page.lower()
    assert 'name="m-0-attending"' not in page
    assert posted.status_code == 403 and "deadline" not in _text(posted).lower()
    assert _untouched(anna)


def test_before_the_deadline_the_guest_can_change_answers_many_times(anna_client, anna, lisa, event):
    Event.objects.filter(pk=event.pk).update(questions=[MEAL_QUESTION])

    answers = [
        household_post(row("yes", 1, q_meal="Fish"), row("yes", 1)),
        household_post(row("no"), row("yes", 1)),
        household_post(row("yes", 1), row("no"), confirmed=True),
        household_post(row("yes", 2, q_meal="Meat", dietary="Halal"), row("no"), confirmed=True),
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
    assert _state(lisa)[:2] == (Guest.Status.DECLINED, 0)


def test_archived_event_guest_cannot_answer(anna_client, anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    response = anna_client.post(ANSWER_URL, household_post(row("no"), row("later")))

    assert response.status_code == 302
    assert _untouched(anna)


# --- the household boundary -----------------------------------------------------------------------


def test_more_rows_than_members_are_ignored(anna_client, anna, lisa, event):
    stranger = GuestFactory(event=event, first_name="Bob", last_name="Meier", group_id=uuid.uuid4())

    response = anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("later"), row("yes", 1)))

    assert response.status_code == 302
    assert _untouched(lisa, stranger)


def test_answering_never_changes_another_groups_guests(anna_client, anna, lisa, event):
    group = uuid.uuid4()
    bob = GuestFactory(event=event, first_name="Bob", last_name="Meier", group_id=group)
    eva = GuestFactory(event=event, first_name="Eva", last_name="Meier", group_id=group)

    anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("yes", 1)))
    anna_client.post(ANSWER_URL, household_post(row("yes", 1), row("no"), confirmed=True))

    assert _untouched(bob, eva)
    assert _state(anna)[:2] == (Guest.Status.COMING, 1)

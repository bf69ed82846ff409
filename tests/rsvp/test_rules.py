"""The household answer rules, called directly on rsvp.services (both body shapes)."""

import datetime as dt
import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import DatabaseError, connection
from django.db.models import Q
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from pymongo.errors import OperationFailure

from events.models import Event
from eventsaas.fields import truncate_to_milliseconds
from eventsaas.models import AuditLog
from guests import services as guest_services
from guests.models import Guest
from guests.selectors import event_stats
from guests.services import guest_code_regenerate
from rsvp import services as rsvp_services
from rsvp.services import (
    HouseholdAnswer,
    MemberChoice,
    RsvpClosed,
    RsvpConflict,
    RsvpNeedsConfirmation,
    RsvpNotOpen,
    guest_authenticate,
    household_for,
    rsvp_submit,
)
from tests.factories import EventFactory, GuestFactory
from tests.support.backends import statements

COMING, DECLINED, PENDING = Guest.Status.COMING, Guest.Status.DECLINED, Guest.Status.PENDING
SELF, HOUSEHOLD = Guest.AnsweredBy.SELF, Guest.AnsweredBy.HOUSEHOLD


def _fresh(guest):
    """The guest as the RSVP page loads it (event and tenant joined)."""
    return Guest.objects.select_related("event", "tenant").get(pk=guest.pk)


def _state(guest):
    guest = Guest.objects.get(pk=guest.pk)
    return guest.status, guest.num_guests, guest.rsvp_at


def _answer(guest, **kwargs):
    """The single-number body: attending, num_guests, absent, confirmed, dietary, answers."""
    now = kwargs.pop("now", None)
    if "absent" in kwargs:
        kwargs["absent"] = tuple(g.pk for g in kwargs["absent"])
    return rsvp_submit(guest=_fresh(guest), answer=HouseholdAnswer(**kwargs), now=now)


def _members(guest, *choices, confirmed=False, now=None):
    """The per-member body: choices are (member, attending, num_guests) or (member, attending)."""
    members = tuple(MemberChoice(m.pk, attending, *rest) for m, attending, *rest in choices)
    return rsvp_submit(guest=_fresh(guest), answer=HouseholdAnswer(members=members, confirmed=confirmed), now=now)


def _answers(*guests):
    """{first name: (status, num_guests, answered by)} as stored."""
    rows = Guest.objects.filter(pk__in=[g.pk for g in guests])
    return {g.first_name: (g.status, g.num_guests, g.answered_by_kind) for g in rows}


QUESTIONS = [
    {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]},
    {"key": "song", "label": "Which song gets you dancing?", "choices": []},
]


@pytest.fixture
def anna(household, event):
    Event.objects.filter(pk=event.pk).update(questions=QUESTIONS)
    return _fresh(household[0])


@pytest.fixture
def lisa(household):
    return household[1]


@pytest.fixture
def family(event):
    """Olivia, Jonas and Tom share a group; one person each."""
    group_id = uuid.uuid4()
    return [
        GuestFactory(event=event, first_name=name, last_name="Weber", group_id=group_id)
        for name in ("Olivia", "Jonas", "Tom")
    ]


# --- guest_authenticate ---------------------------------------------------------------------------


def test_authenticate_returns_the_guest_for_code_and_normalised_last_name(anna):
    found = guest_authenticate(code=f" {anna.code.lower()} ", last_name="  muller ")

    assert found == anna
    assert found.event.pk == anna.event_id


@pytest.mark.parametrize("typed", ["obrien", "OBRIEN", "O'Brien", "o brien", "O’Brien", "o-brien"])
def test_authenticate_forgives_punctuation_case_and_spaces_in_the_last_name(event, typed):
    guest = GuestFactory(event=event, first_name="Siobhan", last_name="O'Brien")

    assert guest_authenticate(code=guest.code, last_name=typed) == guest


def test_authenticate_forgives_accents_and_letters_without_a_decomposition(event):
    guest = GuestFactory(event=event, first_name="Søren", last_name="Ørsted-Pérez")

    assert guest_authenticate(code=guest.code, last_name="orsted perez") == guest
    assert guest_authenticate(code=guest.code, last_name="Orsted") is None


def test_authenticate_returns_none_for_wrong_code_or_wrong_name(anna):
    assert guest_authenticate(code="ZZZZZZZZ" if anna.code != "ZZZZZZZZ" else "YYYYYYYY", last_name="Müller") is None
    assert guest_authenticate(code=anna.code, last_name="Meier") is None
    assert guest_authenticate(code=anna.code, last_name="'-") is None
    assert guest_authenticate(code="", last_name="Müller") is None
    assert guest_authenticate(code="  - ", last_name="Müller") is None
    anna.refresh_from_db()
    assert anna.last_login_at is None


def test_authenticate_writes_nothing_the_login_is_tracked_by_the_caller(anna, django_assert_num_queries):
    with django_assert_num_queries(1):
        assert guest_authenticate(code=anna.code, last_name="Müller") == anna

    anna.refresh_from_db()
    assert anna.last_login_at is None and anna.last_access_at is None


def test_authenticate_refuses_guests_of_archived_events(anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    assert guest_authenticate(code=anna.code, last_name="Müller") is None


def test_authenticate_refuses_the_old_code_after_regeneration(anna, owner):
    old = anna.code
    guest_code_regenerate(guest=anna, acting_user=owner)

    assert guest_authenticate(code=old, last_name="Müller") is None
    assert guest_authenticate(code=anna.code, last_name="Müller") == anna


# --- household_for --------------------------------------------------------------------------------


def test_household_for_reads_everyone_fresh_and_sums_expected_and_head_count(anna, lisa, event):
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2, status=COMING, num_guests=2)
    GuestFactory(event=event, last_name="Other")  # not in the group

    household = household_for(guest=anna)  # `anna` in memory is stale: still pending

    assert household.guest == anna and household.guest.status == COMING
    assert [m.pk for m in household.members] == [lisa.pk]
    assert household.expected_total == 3
    assert household.head_count == 2


def test_household_of_a_guest_without_group_is_only_that_guest(event):
    solo = GuestFactory(event=event, expected_guests=3)
    GuestFactory(event=event)

    household = household_for(guest=solo)

    assert household.members == []
    assert household.expected_total == 3


def test_household_never_includes_guests_of_another_event_with_the_same_group_id(anna, lisa, tenant):
    GuestFactory(event=EventFactory(tenant=tenant), last_name="Müller", group_id=anna.group_id)

    assert [m.pk for m in household_for(guest=anna).members] == [lisa.pk]


# --- one number: declining ------------------------------------------------------------------------


def test_declining_marks_only_this_guest_declined(anna, lisa):
    now = timezone.now()

    _answer(anna, attending=False, now=now)

    assert _state(anna) == (DECLINED, 0, truncate_to_milliseconds(now))
    assert _state(lisa) == (PENDING, 0, None)
    saved = Guest.objects.get(pk=anna.pk)
    assert (saved.answered_by_kind, saved.answered_by_guest_id, saved.answered_by_user_id) == (SELF, anna.pk, None)
    entry = AuditLog.objects.get(action="rsvp.declined")
    assert (entry.object_id, entry.actor_guest_id, entry.actor_user) == (anna.pk, anna.pk, None)
    assert entry.data["previous_status"] == PENDING


def test_declining_after_coming_resets_the_number(anna, lisa):
    _answer(anna, attending=True, num_guests=2)

    _answer(anna, attending=False, num_guests=2)

    assert _answers(anna, lisa) == {"Anna": (DECLINED, 0, SELF), "Lisa": (COMING, 1, HOUSEHOLD)}


# --- one number: the household's expected number ------------------------------------------------------


def test_expected_number_marks_everyone_coming_each_with_their_own_count_in_one_update(anna, lisa):
    now = timezone.now()

    with CaptureQueriesContext(connection) as queries:
        household = _answer(anna, attending=True, num_guests=2, now=now)

    stored = truncate_to_milliseconds(now)  # every backend stores milliseconds (eventsaas/fields.py)
    assert _state(anna) == (COMING, 1, stored)
    assert _state(lisa) == (COMING, 1, stored)
    assert household.head_count == 2
    lisa_row = Guest.objects.get(pk=lisa.pk)
    assert (lisa_row.answered_by_kind, lisa_row.answered_by_guest_id) == (HOUSEHOLD, anna.pk)
    updates = statements(queries, "UPDATE", "guests_guest")
    assert len(updates) == 1, updates


@pytest.mark.parametrize("size", [2, 7])
def test_the_number_of_queries_does_not_grow_with_the_household(event, size, django_assert_num_queries):
    group_id = uuid.uuid4()
    first, *others = GuestFactory.create_batch(size, event=event, group_id=group_id)
    first = _fresh(first)

    # household read, one update and one audit insert (in a savepoint here), household re-read
    with django_assert_num_queries(6):
        rsvp_submit(guest=first, answer=HouseholdAnswer(attending=True, num_guests=size))

    assert set(Guest.objects.filter(group_id=group_id).values_list("status", "num_guests")) == {(COMING, 1)}


def test_people_without_their_own_code_are_counted_on_their_member(anna, lisa):
    Guest.objects.filter(pk=lisa.pk).update(expected_guests=3)  # Lisa and her two children

    household = _answer(anna, attending=True, num_guests=4)

    assert _answers(anna, lisa) == {"Anna": (COMING, 1, SELF), "Lisa": (COMING, 3, HOUSEHOLD)}
    assert household.head_count == 4


def test_a_member_who_answered_keeps_their_own_count(anna, lisa):
    Guest.objects.filter(pk=lisa.pk).update(expected_guests=1)
    _answer(lisa, attending=True, num_guests=3, confirmed=True)  # Lisa brings two friends
    assert _answers(lisa)["Lisa"] == (COMING, 2, SELF)  # Anna counted as 1 by Lisa's number

    _answer(anna, attending=True, num_guests=3)

    assert _answers(anna, lisa) == {"Anna": (COMING, 1, SELF), "Lisa": (COMING, 2, SELF)}


def test_guest_without_group_coming_alone(event):
    solo = GuestFactory(event=event)

    _answer(solo, attending=True, num_guests=1)

    assert _state(solo)[:2] == (COMING, 1)


def test_coming_needs_at_least_one_person(anna, lisa):
    with pytest.raises(ValidationError) as error:
        _answer(anna, attending=True, num_guests=0)

    assert "num_guests" in error.value.message_dict
    assert _state(anna) == (PENDING, 0, None)


# --- one number: fewer than expected ------------------------------------------------------------------


def test_fewer_than_expected_without_naming_anyone_is_never_saved_even_confirmed(anna, lisa):
    for confirmed in (False, True):
        with pytest.raises(RsvpNeedsConfirmation) as needed:
            _answer(anna, attending=True, num_guests=1, dietary="vegan", answers={"meal": "Fish"}, confirmed=confirmed)

        assert needed.value.reason == RsvpNeedsConfirmation.FEWER == "fewer_than_expected"
        assert (needed.value.expected, needed.value.answered, needed.value.confirmable) == (2, 1, False)
        assert [m.pk for m in needed.value.members] == [lisa.pk]
    for guest in (anna, lisa):
        saved = Guest.objects.get(pk=guest.pk)
        assert (saved.status, saved.num_guests, saved.rsvp_at, saved.dietary, saved.answers) == (
            PENDING,
            0,
            None,
            "",
            {},
        )
    assert not AuditLog.objects.filter(action__startswith="rsvp.").exists()


def test_fewer_when_the_shortfall_is_the_answerers_own_people_is_confirmed_then_saved(anna, lisa):
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2)  # Anna and her baby

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _answer(anna, attending=True, num_guests=2)
    assert (needed.value.reason, needed.value.expected, needed.value.confirmable) == ("fewer_than_expected", 3, True)
    assert [m.pk for m in needed.value.concerned] == [anna.pk]
    assert _state(anna) == (PENDING, 0, None)

    _answer(anna, attending=True, num_guests=2, confirmed=True)

    assert _answers(anna, lisa) == {"Anna": (COMING, 1, SELF), "Lisa": (COMING, 1, HOUSEHOLD)}


def test_confirmed_fewer_with_an_absent_member_declines_that_member(anna, lisa):
    now = timezone.now()

    _answer(anna, attending=True, num_guests=1, absent=[lisa], confirmed=True, now=now)

    stored = truncate_to_milliseconds(now)
    assert _state(anna) == (COMING, 1, stored)
    assert _state(lisa) == (DECLINED, 0, stored)
    assert Guest.objects.get(pk=lisa.pk).answered_by_kind == HOUSEHOLD
    assert AuditLog.objects.get(action="rsvp.declined").actor_guest_id == anna.pk


def test_naming_the_absent_member_with_the_matching_number_needs_no_question(anna, lisa):
    _answer(anna, attending=True, num_guests=1, absent=[lisa])

    assert _answers(anna, lisa) == {"Anna": (COMING, 1, SELF), "Lisa": (DECLINED, 0, HOUSEHOLD)}


def test_the_number_must_match_the_members_left_after_naming_absentees(family):
    olivia, jonas, tom = family

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _answer(olivia, attending=True, num_guests=2, absent=[jonas, tom])

    assert (needed.value.reason, needed.value.expected, needed.value.answered) == ("more_than_expected", 1, 2)
    assert {g.status for g in Guest.objects.filter(group_id=olivia.group_id)} == {PENDING}


# --- one number: more than expected -------------------------------------------------------------------


def test_more_than_expected_saves_nothing_until_confirmed_then_the_answerer_brings_them(anna, lisa):
    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _answer(anna, attending=True, num_guests=3)

    assert needed.value.reason == RsvpNeedsConfirmation.MORE == "more_than_expected"
    assert (needed.value.expected, needed.value.answered) == (2, 3)
    assert _state(anna) == (PENDING, 0, None) and _state(lisa) == (PENDING, 0, None)

    household = _answer(anna, attending=True, num_guests=3, confirmed=True)

    assert _answers(anna, lisa) == {"Anna": (COMING, 2, SELF), "Lisa": (COMING, 1, HOUSEHOLD)}
    assert household.head_count == 3


# --- a member's own decline ---------------------------------------------------------------------------


def test_one_number_never_overturns_a_members_own_decline(family):
    olivia, jonas, tom = family
    _answer(jonas, attending=False)

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _answer(olivia, attending=True, num_guests=3)  # counting Jonas
    assert (needed.value.reason, needed.value.expected) == ("more_than_expected", 2)

    _answer(olivia, attending=True, num_guests=2)

    assert _answers(*family) == {
        "Olivia": (COMING, 1, SELF),
        "Jonas": (DECLINED, 0, SELF),
        "Tom": (COMING, 1, HOUSEHOLD),
    }


def test_a_member_declining_after_the_household_answered_leaves_the_head_count_at_once(anna, lisa, event):
    _answer(anna, attending=True, num_guests=2)

    _answer(lisa, attending=False)

    assert household_for(guest=anna).head_count == 1
    assert event_stats(event=event)["head_count"] == 1
    assert event_stats(event=event)["coming"] == 1


# --- a choice per member ------------------------------------------------------------------------------


def test_per_member_answers_give_each_member_their_own_count(family):
    olivia, jonas, tom = family
    Guest.objects.filter(pk=tom.pk).update(expected_guests=2)

    household = _members(olivia, (olivia, True, 1), (jonas, True, 1), (tom, True, 2))

    assert _answers(*family) == {
        "Olivia": (COMING, 1, SELF),
        "Jonas": (COMING, 1, HOUSEHOLD),
        "Tom": (COMING, 2, HOUSEHOLD),
    }
    assert household.head_count == 4


def test_per_member_count_defaults_to_the_usual_one(family):
    olivia, jonas, tom = family
    Guest.objects.filter(pk=jonas.pk).update(expected_guests=2)

    _members(olivia, (olivia, True), (jonas, True))

    assert _answers(olivia, jonas) == {"Olivia": (COMING, 1, SELF), "Jonas": (COMING, 2, HOUSEHOLD)}
    assert _state(tom) == (PENDING, 0, None)  # not listed: untouched


def test_naming_someone_not_coming_asks_then_saves(family):
    olivia, jonas, tom = family

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _members(olivia, (olivia, True, 1), (jonas, False), (tom, True, 1))
    assert (needed.value.reason, needed.value.expected, needed.value.answered) == ("fewer_than_expected", 3, 2)
    assert [m.pk for m in needed.value.concerned] == [jonas.pk]
    assert needed.value.confirmable

    _members(olivia, (olivia, True, 1), (jonas, False), (tom, True, 1), confirmed=True)

    assert _answers(*family)["Jonas"] == (DECLINED, 0, HOUSEHOLD)


def test_lowering_a_members_count_asks_then_saves(family):
    olivia, jonas, tom = family
    Guest.objects.filter(pk=tom.pk).update(expected_guests=3)

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _members(olivia, (olivia, True, 1), (jonas, True, 1), (tom, True, 1))
    assert [m.pk for m in needed.value.concerned] == [tom.pk]

    _members(olivia, (olivia, True, 1), (jonas, True, 1), (tom, True, 1), confirmed=True)
    assert _answers(tom)["Tom"] == (COMING, 1, HOUSEHOLD)


def test_raising_a_count_asks_are_you_sure(family):
    olivia, jonas, tom = family

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _members(olivia, (olivia, True, 3))
    assert (needed.value.reason, [m.pk for m in needed.value.concerned]) == ("more_than_expected", [olivia.pk])

    _members(olivia, (olivia, True, 3), confirmed=True)
    assert _answers(olivia)["Olivia"] == (COMING, 3, SELF)


def test_switching_a_members_own_decline_needs_an_explicit_confirmed_choice(family):
    olivia, jonas, tom = family
    _answer(jonas, attending=False)

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        _members(olivia, (olivia, True, 1), (jonas, True, 1), (tom, True, 1))
    assert needed.value.reasons == ["overrides_decline"]
    assert [m.pk for m in needed.value.declined_members] == [jonas.pk]
    assert _answers(jonas)["Jonas"] == (DECLINED, 0, SELF)

    _members(olivia, (olivia, True, 1), (jonas, True, 1), (tom, True, 1), confirmed=True)

    row = Guest.objects.get(pk=jonas.pk)
    assert (row.status, row.num_guests, row.answered_by_kind, row.answered_by_guest_id) == (
        COMING,
        1,
        HOUSEHOLD,
        olivia.pk,
    )


def test_a_member_may_change_their_own_decline_without_a_question(family):
    olivia, jonas, tom = family
    _answer(jonas, attending=False)

    _members(jonas, (jonas, True, 1))

    assert _answers(jonas)["Jonas"] == (COMING, 1, SELF)


def test_declining_oneself_in_the_per_member_shape_needs_no_question_and_touches_nobody(family):
    olivia, jonas, tom = family

    _members(olivia, (olivia, False))

    assert _answers(*family) == {"Olivia": (DECLINED, 0, SELF), "Jonas": (PENDING, 0, ""), "Tom": (PENDING, 0, "")}


@pytest.mark.parametrize(
    "choices",
    [
        "stranger",
        "twice",
        "empty",
    ],
)
def test_per_member_answers_only_for_each_member_once(family, event, choices):
    olivia, jonas, tom = family
    stranger = GuestFactory(event=event, first_name="Stranger")
    members = {
        "stranger": ((olivia, True, 1), (stranger, True, 1)),
        "twice": ((olivia, True, 1), (olivia, False)),
        "empty": (),
    }[choices]

    with pytest.raises(ValidationError) as error:
        _members(olivia, *members, confirmed=True)

    assert "members" in error.value.message_dict
    assert _state(stranger) == (PENDING, 0, None)
    assert {g.status for g in Guest.objects.filter(group_id=olivia.group_id)} == {PENDING}


@pytest.mark.parametrize(("attending", "count"), [(True, 0), (False, 2), (True, 51)])
def test_per_member_counts_match_coming(family, attending, count):
    olivia, *_ = family

    with pytest.raises(ValidationError):
        _members(olivia, (olivia, attending, count), confirmed=True)

    assert _state(olivia) == (PENDING, 0, None)


# --- dietary needs and custom answers, per person --------------------------------------------------------


def test_one_number_saves_details_on_the_answering_guest_only(anna, lisa):
    _answer(anna, attending=True, num_guests=2, dietary="  No nuts  ", answers={"meal": "Fish", "song": "Abba"})

    saved = Guest.objects.get(pk=anna.pk)
    assert (saved.dietary, saved.answers) == ("No nuts", {"meal": "Fish", "song": "Abba"})
    assert (Guest.objects.get(pk=lisa.pk).dietary, Guest.objects.get(pk=lisa.pk).answers) == ("", {})


def test_details_left_out_stay_as_they_were(anna, lisa):
    _answer(anna, attending=True, num_guests=2, dietary="Vegan", answers={"meal": "Fish"})

    _answer(anna, attending=False)

    saved = Guest.objects.get(pk=anna.pk)
    assert (saved.dietary, saved.answers) == ("Vegan", {"meal": "Fish"})


def test_per_member_details_go_to_each_member(anna, lisa):
    members = (
        MemberChoice(anna.pk, True, 1, dietary="Vegan", answers={"meal": "Fish"}),
        MemberChoice(lisa.pk, True, 1, dietary="Coeliac", answers={"meal": "Meat"}),
    )
    rsvp_submit(guest=anna, answer=HouseholdAnswer(members=members))

    assert {g.first_name: (g.dietary, g.answers) for g in Guest.objects.filter(group_id=anna.group_id)} == {
        "Anna": ("Vegan", {"meal": "Fish"}),
        "Lisa": ("Coeliac", {"meal": "Meat"}),
    }
    lisa_entry = AuditLog.objects.get(object_id=lisa.pk)
    assert (lisa_entry.actor_guest_id, lisa_entry.data["dietary"]) == (anna.pk, "Coeliac")


def test_changing_only_a_members_details_keeps_who_answered(anna, lisa):
    _answer(lisa, attending=True, num_guests=2)
    before = Guest.objects.get(pk=lisa.pk)

    members = (MemberChoice(lisa.pk, True, 1, dietary="Vegan"),)
    rsvp_submit(guest=anna, answer=HouseholdAnswer(members=members))

    after = Guest.objects.get(pk=lisa.pk)
    assert after.dietary == "Vegan"
    assert (
        (after.answered_by_kind, after.rsvp_at) == (before.answered_by_kind, before.rsvp_at) == (SELF, before.rsvp_at)
    )
    assert AuditLog.objects.filter(object_id=lisa.pk).latest("created_at").action == "rsvp.details"


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"colour": "blue"}, "“colour” is not a question of this event."),
        ({"meal": "Tofu"}, "Choose one of the options for “Main course”."),
        ({"song": "x" * 501}, "must be text of at most 500 characters"),
    ],
)
def test_answers_outside_the_events_questions_are_refused_and_nothing_is_saved(anna, lisa, answers, message):
    with pytest.raises(ValidationError) as error:
        _answer(anna, attending=True, num_guests=2, answers=answers)
    assert message in " ".join(error.value.message_dict["answers"])

    with pytest.raises(ValidationError) as error:
        rsvp_submit(guest=anna, answer=HouseholdAnswer(members=(MemberChoice(lisa.pk, True, 1, answers=answers),)))
    assert message in " ".join(error.value.message_dict["members"])

    assert _state(anna) == (PENDING, 0, None) and _state(lisa) == (PENDING, 0, None)


# --- deadline and event state -----------------------------------------------------------------------


def test_after_the_deadline_nothing_changes(anna, lisa, event):
    _answer(anna, attending=True, num_guests=2)
    before = (_state(anna), _state(lisa))

    with pytest.raises(RsvpClosed):
        _answer(anna, attending=False, now=event.rsvp_deadline + dt.timedelta(seconds=1))
    with pytest.raises(RsvpClosed):
        _members(anna, (lisa, False), confirmed=True, now=event.rsvp_deadline)

    assert (_state(anna), _state(lisa)) == before


def test_just_before_the_deadline_the_answer_is_saved(anna, event):
    _answer(anna, attending=False, now=event.rsvp_deadline - dt.timedelta(seconds=1))

    assert _state(anna)[0] == DECLINED


def test_a_draft_event_is_not_open_yet_rather_than_closed(anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.DRAFT, rsvp_deadline=None)

    with pytest.raises(RsvpNotOpen):
        _answer(anna, attending=False)

    assert _state(anna) == (PENDING, 0, None)


def test_an_archived_event_refuses_answers(anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    with pytest.raises(RsvpClosed):
        _answer(anna, attending=False)

    assert _state(anna) == (PENDING, 0, None)


def test_answer_can_be_changed_many_times_before_the_deadline(anna, lisa):
    _answer(anna, attending=True, num_guests=2)
    _answer(anna, attending=False)
    _answer(anna, attending=True, num_guests=1, absent=[lisa], confirmed=True)
    _answer(anna, attending=True, num_guests=2, dietary="Fish only")

    assert _answers(anna, lisa) == {"Anna": (COMING, 1, SELF), "Lisa": (COMING, 1, HOUSEHOLD)}
    assert Guest.objects.get(pk=anna.pk).dietary == "Fish only"


# --- the household boundary -------------------------------------------------------------------------


def test_naming_someone_outside_the_group_as_absent_is_refused(anna, lisa, event):
    stranger = GuestFactory(event=event, last_name="Schmidt")

    with pytest.raises(ValidationError) as error:
        _answer(anna, attending=True, num_guests=1, absent=[stranger], confirmed=True)

    assert "absent" in error.value.message_dict
    assert _state(stranger) == (PENDING, 0, None)
    assert _state(anna) == (PENDING, 0, None)


def test_naming_yourself_or_another_groups_member_as_absent_is_refused(anna, lisa, event):
    other_group = uuid.uuid4()
    bob = GuestFactory(event=event, last_name="Meier", group_id=other_group)

    for absent in ([anna.pk], [lisa.pk, bob.pk], [uuid.uuid4()]):
        with pytest.raises(ValidationError):
            rsvp_submit(guest=anna, answer=HouseholdAnswer(attending=False, absent=tuple(absent)))

    assert _state(bob) == (PENDING, 0, None)
    assert _state(anna) == (PENDING, 0, None)


def test_answering_never_changes_another_groups_guests(anna, lisa, event, tenant):
    other_group = uuid.uuid4()
    bob = GuestFactory(event=event, last_name="Meier", group_id=other_group)
    eva = GuestFactory(event=event, last_name="Meier", group_id=other_group)
    loner = GuestFactory(event=event, last_name="Solo")
    elsewhere = GuestFactory(event=EventFactory(tenant=tenant), last_name="Müller", group_id=anna.group_id)

    _answer(anna, attending=True, num_guests=2)
    _answer(anna, attending=True, num_guests=1, absent=[lisa], confirmed=True)
    _members(anna, (anna, True, 2), (lisa, True, 1), confirmed=True)

    for untouched in (bob, eva, loner, elsewhere):
        assert _state(untouched) == (PENDING, 0, None)


def test_solo_guest_answer_touches_nobody_else(event):
    solo = GuestFactory(event=event)
    other = GuestFactory(event=event)

    _answer(solo, attending=True, num_guests=3, confirmed=True)

    assert _state(solo)[:2] == (COMING, 3)
    assert _state(other) == (PENDING, 0, None)


# --- two people answering at once ---------------------------------------------------------------------


def _answer_while_jonas_declines(olivia, jonas, monkeypatch):
    """Olivia's household answer is decided, then Jonas declines (another request), then Olivia's is written."""
    real_apply = rsvp_services.guest_answers_apply

    def jonas_declines_first(**kwargs):
        monkeypatch.setattr(rsvp_services, "guest_answers_apply", real_apply)
        rsvp_submit(guest=_fresh(jonas), answer=HouseholdAnswer(attending=False))
        return real_apply(**kwargs)

    monkeypatch.setattr(rsvp_services, "guest_answers_apply", jonas_declines_first)
    return rsvp_submit(guest=_fresh(olivia), answer=HouseholdAnswer(attending=True, num_guests=3))


def test_a_decline_given_while_another_member_answers_is_never_overwritten(family, monkeypatch):
    olivia, jonas, tom = family

    with pytest.raises(RsvpConflict):
        _answer_while_jonas_declines(olivia, jonas, monkeypatch)

    assert _answers(*family) == {"Olivia": (PENDING, 0, ""), "Jonas": (DECLINED, 0, SELF), "Tom": (PENDING, 0, "")}
    assert not AuditLog.objects.filter(actor_guest_id=olivia.pk).exists()


def test_control_without_the_compare_and_set_the_decline_would_be_lost(family, monkeypatch):
    """The same interleaving with the write matching rows by id alone: Jonas's decline is overwritten."""
    olivia, jonas, tom = family
    monkeypatch.setattr(guest_services, "_as_read", lambda write: Q(pk=write.guest.pk))

    _answer_while_jonas_declines(olivia, jonas, monkeypatch)

    assert _answers(jonas)["Jonas"] == (COMING, 1, HOUSEHOLD)


def test_a_write_conflict_on_mongodb_is_the_same_lost_race_and_keeps_nothing(family, monkeypatch):
    """MongoDB aborts a transaction that meets another member's concurrent answer (WriteConflict) instead of
    making it wait; the answer is refused as a conflict (409 on the API), never a server error."""
    olivia, jonas, tom = family

    def conflicting_audit(**kwargs):
        try:
            raise OperationFailure("WriteConflict", code=112, details={"errorLabels": ["TransientTransactionError"]})
        except OperationFailure as exc:
            raise DatabaseError("WriteConflict") from exc

    monkeypatch.setattr(guest_services, "audit_log_record_many", conflicting_audit)

    with pytest.raises(RsvpConflict):
        _answer(olivia, attending=True, num_guests=3)

    assert _answers(*family) == {"Olivia": (PENDING, 0, ""), "Jonas": (PENDING, 0, ""), "Tom": (PENDING, 0, "")}

"""The RSVP rules, called directly on rsvp.services."""

import datetime as dt
import re
import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from events.models import Event
from eventsaas.fields import truncate_to_milliseconds
from guests.models import Guest
from guests.services import guest_code_regenerate
from rsvp.services import (
    RsvpClosed,
    RsvpNeedsConfirmation,
    guest_authenticate,
    household_for,
    rsvp_submit,
)
from tenants.models import AuditLog
from tests.factories import EventFactory, GuestFactory
from tests.support.backends import statements


def _fresh(guest):
    """The guest as the RSVP page loads it (event and tenant joined)."""
    return Guest.objects.select_related("event", "tenant").get(pk=guest.pk)


def _state(guest):
    guest = Guest.objects.get(pk=guest.pk)
    return guest.status, guest.num_guests, guest.rsvp_at


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


# --- guest_authenticate ---------------------------------------------------------------------------


def test_authenticate_returns_the_guest_for_code_and_normalised_last_name(anna):
    found = guest_authenticate(code=f" {anna.code.lower()} ", last_name="  muller ")

    assert found == anna
    assert found.event.pk == anna.event_id


def test_authenticate_returns_none_for_wrong_code_or_wrong_name(anna):
    assert guest_authenticate(code="ZZZZZZZZ" if anna.code != "ZZZZZZZZ" else "YYYYYYYY", last_name="Müller") is None
    assert guest_authenticate(code=anna.code, last_name="Meier") is None
    assert guest_authenticate(code="", last_name="Müller") is None
    assert guest_authenticate(code="  - ", last_name="Müller") is None
    anna.refresh_from_db()
    assert anna.last_login_at is None


def test_authenticate_writes_nothing_the_login_is_tracked_by_the_caller(anna, django_assert_num_queries):
    # The page and the API track the login as activity (tests/guests/test_activity.py).
    with django_assert_num_queries(1):
        assert guest_authenticate(code=anna.code, last_name="Müller") == anna

    anna.refresh_from_db()
    assert anna.last_login_at is None and anna.last_access_at is None


def test_authenticate_refuses_guests_of_archived_events(anna, event):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    assert guest_authenticate(code=anna.code, last_name="Müller") is None
    anna.refresh_from_db()
    assert anna.last_login_at is None


def test_authenticate_refuses_the_old_code_after_regeneration(anna, owner):
    old = anna.code
    guest_code_regenerate(guest=anna, acting_user=owner)

    assert guest_authenticate(code=old, last_name="Müller") is None
    assert guest_authenticate(code=anna.code, last_name="Müller") == anna


# --- household_for --------------------------------------------------------------------------------


def test_household_for_lists_the_other_members_and_sums_expected_guests(anna, lisa, event):
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2)
    GuestFactory(event=event, last_name="Other")  # not in the group
    anna = _fresh(anna)

    household = household_for(guest=anna)

    assert household.guest == anna
    assert [m.pk for m in household.members] == [lisa.pk]
    assert household.expected_total == 3


def test_household_of_a_guest_without_group_is_only_that_guest(event):
    solo = GuestFactory(event=event, expected_guests=3)
    GuestFactory(event=event)

    household = household_for(guest=solo)

    assert household.members == []
    assert household.expected_total == 3


def test_household_never_includes_guests_of_another_event_with_the_same_group_id(anna, lisa, tenant):
    other_event = EventFactory(tenant=tenant)
    GuestFactory(event=other_event, last_name="Müller", group_id=anna.group_id)

    household = household_for(guest=anna)

    assert [m.pk for m in household.members] == [lisa.pk]


# --- declining ------------------------------------------------------------------------------------


def test_declining_marks_only_this_guest_declined(anna, lisa):
    now = timezone.now()

    rsvp_submit(guest=anna, attending=False, dietary="  ", now=now)

    anna.refresh_from_db()
    assert (anna.status, anna.num_guests, anna.rsvp_at) == (Guest.Status.DECLINED, 0, truncate_to_milliseconds(now))
    assert _state(lisa) == (Guest.Status.PENDING, 0, None)
    assert AuditLog.objects.filter(action="rsvp.declined", actor_guest_id=anna.pk).count() == 1


def test_declining_after_coming_resets_the_number(anna, lisa):
    rsvp_submit(guest=anna, attending=True, num_guests=2)

    rsvp_submit(guest=anna, attending=False, num_guests=2)

    anna.refresh_from_db()
    assert (anna.status, anna.num_guests) == (Guest.Status.DECLINED, 0)


# --- coming with the expected number --------------------------------------------------------------


def test_expected_number_marks_the_whole_group_coming_in_one_bulk_update(anna, lisa):
    now = timezone.now()

    with CaptureQueriesContext(connection) as queries:
        household = rsvp_submit(guest=anna, attending=True, num_guests=2, now=now)

    stored = truncate_to_milliseconds(now)  # every backend stores milliseconds (eventsaas/fields.py)
    assert _state(anna) == (Guest.Status.COMING, 2, stored)
    assert _state(lisa) == (Guest.Status.COMING, 0, stored)
    assert household.expected_total == 2
    status_updates = [q for q in statements(queries, "UPDATE", "guests_guest") if re.search("[\"']status[\"']", q)]
    assert len(status_updates) == 1, status_updates
    # Members read, bulk update, own fields, audit entry, members re-read: a fixed number whatever the size.
    assert len(queries.captured_queries) == 5, [q["sql"] for q in queries.captured_queries]


def test_bulk_update_query_count_does_not_grow_with_the_group(event, django_assert_num_queries):
    group_id = uuid.uuid4()
    first, *others = GuestFactory.create_batch(6, event=event, group_id=group_id)
    first = _fresh(first)

    with django_assert_num_queries(5):
        rsvp_submit(guest=first, attending=True, num_guests=6)

    assert Guest.objects.filter(group_id=group_id, status=Guest.Status.COMING).count() == 6
    assert sorted(Guest.objects.filter(group_id=group_id).values_list("num_guests", flat=True)) == [0] * 5 + [6]


def test_expected_total_counts_people_without_their_own_code(anna, lisa):
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2)  # Anna and her baby
    anna = _fresh(anna)

    rsvp_submit(guest=anna, attending=True, num_guests=3)

    assert _state(anna)[:2] == (Guest.Status.COMING, 3)
    assert _state(lisa)[:2] == (Guest.Status.COMING, 0)


def test_guest_without_group_coming_alone(event):
    solo = _fresh(GuestFactory(event=event))

    rsvp_submit(guest=solo, attending=True, num_guests=1)

    assert _state(solo)[:2] == (Guest.Status.COMING, 1)


def test_coming_needs_at_least_one_person(anna, lisa):
    with pytest.raises(ValidationError) as error:
        rsvp_submit(guest=anna, attending=True, num_guests=0)

    assert "num_guests" in error.value.message_dict
    assert _state(anna) == (Guest.Status.PENDING, 0, None)


# --- fewer than expected --------------------------------------------------------------------------


def test_fewer_than_expected_saves_nothing_and_asks_who_is_missing(anna, lisa):
    with pytest.raises(RsvpNeedsConfirmation) as needed:
        rsvp_submit(guest=anna, attending=True, num_guests=1, dietary="vegan", answers={"meal": "Fish"})

    assert needed.value.reason == RsvpNeedsConfirmation.FEWER == "fewer_than_expected"
    assert needed.value.expected == 2
    assert needed.value.answered == 1
    assert [m.pk for m in needed.value.members] == [lisa.pk]
    for guest in (anna, lisa):
        saved = Guest.objects.get(pk=guest.pk)
        assert (saved.status, saved.num_guests, saved.rsvp_at, saved.dietary, saved.answers) == (
            Guest.Status.PENDING,
            0,
            None,
            "",
            {},
        )
    assert not AuditLog.objects.filter(action__startswith="rsvp.").exists()


def test_confirmed_fewer_with_absent_member_declines_that_member(anna, lisa):
    now = timezone.now()

    rsvp_submit(guest=anna, attending=True, num_guests=1, absent_member_ids=[lisa.pk], confirmed=True, now=now)

    stored = truncate_to_milliseconds(now)
    assert _state(anna) == (Guest.Status.COMING, 1, stored)
    assert _state(lisa) == (Guest.Status.DECLINED, 0, stored)
    entry = AuditLog.objects.get(action="rsvp.coming")
    assert entry.data == {"num_guests": 1, "expected": 2, "absent": [str(lisa.pk)]}


def test_confirmed_fewer_without_naming_anyone_keeps_the_group_together(anna, lisa):
    rsvp_submit(guest=anna, attending=True, num_guests=1, confirmed=True)

    assert _state(anna)[:2] == (Guest.Status.COMING, 1)
    assert _state(lisa)[:2] == (Guest.Status.COMING, 0)


# --- more than expected ---------------------------------------------------------------------------


def test_more_than_expected_saves_nothing_until_confirmed(anna, lisa):
    with pytest.raises(RsvpNeedsConfirmation) as needed:
        rsvp_submit(guest=anna, attending=True, num_guests=3)

    assert needed.value.reason == RsvpNeedsConfirmation.MORE == "more_than_expected"
    assert (needed.value.expected, needed.value.answered) == (2, 3)
    assert [m.pk for m in needed.value.members] == [lisa.pk]
    assert _state(anna) == (Guest.Status.PENDING, 0, None)
    assert _state(lisa) == (Guest.Status.PENDING, 0, None)

    rsvp_submit(guest=anna, attending=True, num_guests=3, confirmed=True)

    assert _state(anna)[:2] == (Guest.Status.COMING, 3)
    assert _state(lisa)[:2] == (Guest.Status.COMING, 0)


# --- dietary needs and custom answers -------------------------------------------------------------


def test_dietary_needs_and_answers_are_saved_on_the_answering_guest(anna, lisa):
    rsvp_submit(
        guest=anna, attending=True, num_guests=2, dietary="  No nuts  ", answers={"meal": "Fish", "song": "Abba"}
    )

    saved = Guest.objects.get(pk=anna.pk)
    assert saved.dietary == "No nuts"
    assert saved.answers == {"meal": "Fish", "song": "Abba"}
    assert Guest.objects.get(pk=lisa.pk).answers == {}


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({"colour": "blue"}, "“colour” is not a question of this event."),
        ({"meal": "Tofu"}, "Choose one of the options for “Main course”."),
        ({"song": "x" * 501}, "must be text of at most 500 characters"),
    ],
)
def test_answers_outside_the_events_questions_are_refused_and_nothing_is_saved(anna, answers, message):
    with pytest.raises(ValidationError) as error:
        rsvp_submit(guest=anna, attending=True, num_guests=2, answers=answers)

    assert message in " ".join(error.value.message_dict["answers"])
    assert _state(anna) == (Guest.Status.PENDING, 0, None)


def test_declining_guest_can_still_leave_answers(anna):
    rsvp_submit(guest=anna, attending=False, dietary="Vegan", answers={"meal": "Meat"})

    saved = Guest.objects.get(pk=anna.pk)
    assert (saved.dietary, saved.answers) == ("Vegan", {"meal": "Meat"})


# --- deadline and event state ---------------------------------------------------------------------


def test_after_the_deadline_nothing_changes(anna, lisa, event):
    rsvp_submit(guest=anna, attending=True, num_guests=2)
    before = (_state(anna), _state(lisa))

    with pytest.raises(RsvpClosed):
        rsvp_submit(guest=anna, attending=False, now=event.rsvp_deadline + dt.timedelta(seconds=1))
    with pytest.raises(RsvpClosed):
        rsvp_submit(guest=anna, attending=True, num_guests=5, confirmed=True, now=event.rsvp_deadline)

    assert (_state(anna), _state(lisa)) == before


def test_just_before_the_deadline_the_answer_is_saved(anna, event):
    rsvp_submit(guest=anna, attending=False, now=event.rsvp_deadline - dt.timedelta(seconds=1))

    assert _state(anna)[0] == Guest.Status.DECLINED


@pytest.mark.parametrize("status", [Event.Status.ARCHIVED, Event.Status.DRAFT])
def test_archived_or_draft_event_refuses_answers(anna, event, status):
    Event.objects.filter(pk=event.pk).update(status=status)
    anna = _fresh(anna)

    with pytest.raises(RsvpClosed):
        rsvp_submit(guest=anna, attending=False)

    assert _state(anna) == (Guest.Status.PENDING, 0, None)


def test_answer_can_be_changed_many_times_before_the_deadline(anna, lisa):
    rsvp_submit(guest=anna, attending=True, num_guests=2)
    rsvp_submit(guest=anna, attending=False)
    rsvp_submit(guest=anna, attending=True, num_guests=1, absent_member_ids=[lisa.pk], confirmed=True)
    rsvp_submit(guest=anna, attending=True, num_guests=2, dietary="Fish only")

    assert _state(anna)[:2] == (Guest.Status.COMING, 2)
    assert _state(lisa)[:2] == (Guest.Status.COMING, 0)
    assert Guest.objects.get(pk=anna.pk).dietary == "Fish only"


# --- the household boundary -----------------------------------------------------------------------


def test_naming_someone_outside_the_group_as_absent_is_refused(anna, lisa, event):
    stranger = GuestFactory(event=event, last_name="Schmidt")

    with pytest.raises(ValidationError) as error:
        rsvp_submit(guest=anna, attending=True, num_guests=1, absent_member_ids=[stranger.pk], confirmed=True)

    assert "absent" in error.value.message_dict
    assert _state(stranger) == (Guest.Status.PENDING, 0, None)
    assert _state(anna) == (Guest.Status.PENDING, 0, None)
    assert _state(lisa) == (Guest.Status.PENDING, 0, None)


def test_naming_yourself_or_another_groups_member_as_absent_is_refused(anna, lisa, event):
    other_group = uuid.uuid4()
    bob = GuestFactory(event=event, last_name="Meier", group_id=other_group)
    GuestFactory(event=event, last_name="Meier", group_id=other_group)

    for absent in ([anna.pk], [lisa.pk, bob.pk], [uuid.uuid4()]):
        with pytest.raises(ValidationError):
            rsvp_submit(guest=anna, attending=False, absent_member_ids=absent)

    assert _state(bob) == (Guest.Status.PENDING, 0, None)
    assert _state(anna) == (Guest.Status.PENDING, 0, None)


def test_answering_never_changes_another_groups_guests(anna, lisa, event, tenant):
    other_group = uuid.uuid4()
    bob = GuestFactory(event=event, last_name="Meier", group_id=other_group)
    eva = GuestFactory(event=event, last_name="Meier", group_id=other_group)
    loner = GuestFactory(event=event, last_name="Solo")
    # Same group id in another event (e.g. a copied list) must not be touched either.
    elsewhere = GuestFactory(event=EventFactory(tenant=tenant), last_name="Müller", group_id=anna.group_id)

    rsvp_submit(guest=anna, attending=True, num_guests=2)
    rsvp_submit(guest=anna, attending=True, num_guests=1, absent_member_ids=[lisa.pk], confirmed=True)

    for untouched in (bob, eva, loner, elsewhere):
        assert _state(untouched) == (Guest.Status.PENDING, 0, None)


def test_solo_guest_answer_touches_nobody_else(event):
    solo = _fresh(GuestFactory(event=event))
    other = GuestFactory(event=event)

    rsvp_submit(guest=solo, attending=True, num_guests=3, confirmed=True)

    assert _state(solo)[:2] == (Guest.Status.COMING, 3)
    assert _state(other) == (Guest.Status.PENDING, 0, None)

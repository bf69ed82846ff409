"""The guest API's households kept in memory (rsvp/household_cache.py) and the versions that end them
(events/guest_view_versions.py).

That a kept household always equals the database under random sequences of the real services is the
seventh invariant of tests/rsvp/test_household_invariants.py; these tests pin the mechanics: what a
hit costs, which writes end an entry and which do not, and what happens when the cache cannot be read.
"""

import uuid
from unittest import mock

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from events import guest_view_versions
from events.guest_view_versions import event_ids_written_by, guest_view_version
from events.models import Event
from guests import services as guest_services
from guests.models import Guest
from rsvp import household_cache
from tenants.models import Tenant
from tests.factories import GuestFactory
from tests.support.backends import ON_MONGODB

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _empty_memory():
    household_cache.households_forget()
    yield
    household_cache.households_forget()


def read(guest: Guest, hint: uuid.UUID | None = None):
    return household_cache.household_with_hint(
        tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk, group_hint=hint or guest.group_id
    )


def queries_of(call) -> int:
    with CaptureQueriesContext(connection) as queries:
        call()
    return len(queries)


def test_a_kept_household_is_served_without_a_query(household):
    anna, lisa = household
    first = read(anna)

    assert queries_of(lambda: read(anna)) == 0
    assert read(anna) is first
    assert {m.pk for m in first.members} == {lisa.pk}
    assert all(member.event is first.guest.event for member in first.members)  # one event object kept, not one each


def test_the_workers_activity_stamps_keep_it_and_an_answer_ends_it(household):
    anna, lisa = household
    read(anna)
    version = guest_view_version(anna.event_id)

    # What activity tracking writes (guests.services.guest_activity_record_batch) and the invitation mail's stamp.
    Guest.objects.for_event(anna.event).filter(pk=lisa.pk).update(last_access_at=anna.created_at)
    Guest.objects.filter(pk=anna.pk).update(invited_at=anna.created_at)
    assert guest_view_version(anna.event_id) == version
    assert queries_of(lambda: read(anna)) == 0

    Guest.objects.filter(pk=lisa.pk).update(status="declined")
    assert guest_view_version(anna.event_id) != version
    assert [m.status for m in read(anna).members] == ["declined"]


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda anna, lisa: Guest.objects.filter(pk=lisa.pk).update(first_name="Liesl"), id="update"),
        pytest.param(lambda anna, lisa: (setattr(lisa, "dietary", "vegan"), lisa.save()), id="save"),
        pytest.param(
            lambda anna, lisa: (setattr(lisa, "num_guests", 0), Guest.objects.bulk_update([lisa], ["num_guests"])),
            id="bulk_update",
        ),
        pytest.param(
            lambda anna, lisa: Guest.objects.bulk_create(
                [GuestFactory.build(event=anna.event, group_id=anna.group_id)]
            ),
            id="bulk_create a new member",
        ),
        pytest.param(lambda anna, lisa: lisa.delete(), id="delete a member"),
        pytest.param(lambda anna, lisa: Guest.objects.filter(pk=lisa.pk).delete(), id="queryset delete"),
        pytest.param(
            lambda anna, lisa: Event.objects.filter(pk=anna.event_id).update(dress_code="Black tie"), id="event update"
        ),
        pytest.param(lambda anna, lisa: (setattr(anna.event, "name", "Renamed"), anna.event.save()), id="event save"),
        # Not scoped by event in the filter: the events are looked up before the write.
        pytest.param(lambda anna, lisa: Guest.objects.filter(last_name="Müller").update(dietary="none"), id="unscoped"),
    ],
)
def test_every_way_of_writing_ends_the_kept_household(household, write):
    anna, lisa = household
    kept = read(anna)

    write(anna, lisa)

    assert read(anna) is not kept
    fresh = household_cache.services.household_with_hint(
        tenant_id=anna.tenant_id, event_id=anna.event_id, guest_id=anna.pk, group_hint=anna.group_id
    )
    assert read(anna) == fresh


def test_a_regenerated_code_ends_the_kept_household_at_once(household, owner):
    anna, _lisa = household
    old_code = read(anna).guest.code

    guest_services.guest_code_regenerate(guest=anna, acting_user=owner)

    assert read(anna).guest.code != old_code


def test_deleting_an_organization_ends_its_events_households(household):
    anna, _lisa = household
    version = guest_view_version(anna.event_id)

    Tenant.objects.filter(pk=anna.tenant_id).delete()  # the events go in the cascade, never through Event.delete()

    assert guest_view_version(anna.event_id) != version
    assert read(anna) is None


def test_a_transactions_write_changes_the_version_again_when_it_commits(household, django_capture_on_commit_callbacks):
    anna, _lisa = household
    before = guest_view_version(anna.event_id)

    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        Guest.objects.filter(pk=anna.pk).update(dietary="vegan")
        at_once = guest_view_version(anna.event_id)

    if ON_MONGODB:  # no transaction: the write is visible at once, and the on-commit pass runs at once too
        assert before != at_once == guest_view_version(anna.event_id)
        return
    # A reader between the write and the commit read the old row under `at_once`: the commit ends that too.
    assert before != at_once != guest_view_version(anna.event_id)
    assert len(callbacks) == 1


def test_nothing_is_served_from_memory_while_the_cache_cannot_be_read(household):
    anna, _lisa = household
    read(anna)

    with mock.patch.object(cache, "get_or_set", side_effect=ConnectionError("redis down")):
        assert queries_of(lambda: read(anna)) == 1
        Guest.objects.filter(pk=anna.pk).update(first_name="Annie")  # its version change is lost, logged
        assert read(anna).guest.first_name == "Annie"


def test_a_household_is_kept_for_the_configured_seconds_at_most(household, settings):
    anna, _lisa = household
    settings.GUEST_API_CACHE_SECONDS = 30
    with mock.patch("rsvp.household_cache.time.monotonic", return_value=1000.0):
        read(anna)
    with mock.patch("rsvp.household_cache.time.monotonic", return_value=1029.0):
        assert queries_of(lambda: read(anna)) == 0
    with mock.patch("rsvp.household_cache.time.monotonic", return_value=1030.0):
        assert queries_of(lambda: read(anna)) == 1


def test_each_process_keeps_at_most_the_configured_number(event, settings):
    settings.GUEST_API_CACHE_ENTRIES = 2
    first, second, third = GuestFactory.create_batch(3, event=event)
    for guest in (first, second, third):
        read(guest)

    assert len(household_cache._households) == 2
    assert queries_of(lambda: read(third)) == 0
    assert queries_of(lambda: read(first)) == 1  # the least recently used went first


def test_off_means_a_query_every_time(household, settings):
    anna, _lisa = household
    settings.GUEST_API_CACHE_SECONDS = 0
    read(anna)

    assert queries_of(lambda: read(anna)) == 1
    assert len(household_cache._households) == 0


def test_a_guest_who_does_not_exist_is_never_kept(event):
    ghost = GuestFactory.build(event=event)

    assert read(ghost) is None
    GuestFactory(event=event, pk=ghost.pk, first_name="Late")
    assert read(ghost).guest.first_name == "Late"


def test_the_events_a_write_touches_come_from_its_filter_when_it_names_them(household, event):
    anna, _lisa = household
    scoped = Guest.objects.for_event(event).filter(status="pending")

    assert queries_of(lambda: event_ids_written_by(scoped, "event_id")) == 0
    assert event_ids_written_by(scoped, "event_id") == {event.pk}
    assert event_ids_written_by(Event.objects.filter(pk__in=[event.pk]), "id") == {event.pk}
    # Anything else (here an OR of two filters) is looked up: one query, never a guess.
    either = Guest.objects.filter(pk=anna.pk) | Guest.objects.filter(first_name="Nobody")
    assert queries_of(lambda: event_ids_written_by(either, "event_id")) == 1
    assert event_ids_written_by(either, "event_id") == {event.pk}


def test_a_version_change_that_fails_is_logged_and_never_fails_the_write(household, caplog):
    anna, _lisa = household
    with mock.patch.object(cache, "set_many", side_effect=ConnectionError("redis down")):
        assert Guest.objects.filter(pk=anna.pk).update(first_name="Annie") == 1

    assert "Guest view versions of 1 event(s) not changed" in caplog.text


def test_versions_are_tokens_no_restart_can_repeat(household):
    anna, _lisa = household
    version = guest_view_version(anna.event_id)
    cache.clear()  # Redis restarted or evicted the key

    assert guest_view_version(anna.event_id) not in (None, version)
    assert guest_view_versions.VERSION_TIMEOUT_SECONDS >= 24 * 3600


def test_with_nothing_kept_a_write_changes_no_version(household, settings):
    """The embedded default and deployments that turn it off pay no cache write per guest write."""
    anna, _lisa = household
    settings.GUEST_API_CACHE_SECONDS = 0
    with mock.patch.object(cache, "set_many") as written:
        Guest.objects.filter(pk=anna.pk).update(first_name="Annie")

    written.assert_not_called()


def test_an_event_id_written_as_text_names_the_same_version(household):
    anna, _lisa = household
    version = guest_view_version(anna.event_id)

    guest_view_versions.guest_view_changed([anna.event_id.hex])  # as a caller holding the id as text would

    assert guest_view_version(anna.event_id) != version

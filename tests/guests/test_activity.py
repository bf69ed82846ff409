"""Activity tracking: the batch consumer's logic, the producer, the pages that read activity.

The consumer is tested here without a broker (the service directly, and the
drain loop on Celery's in-memory transport); tests/workers/ runs it on a real
worker against Redis.
"""

import datetime as dt
import uuid

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from guests import activity
from guests.activity import ActivityEvent, activity_flush, track_activity
from guests.models import Guest, GuestActivity
from guests.services import guest_activity_record_batch
from tests.factories import GuestFactory
from tests.rsvp.household_form import household_post, row
from tests.support.backends import ON_COMMIT_AT_ONCE, statements
from tests.support.celery import celery_config

Kind = GuestActivity.Kind
T0 = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.UTC)


def _event(guest, kind=Kind.PAGE_VIEW, at=T0, **extra):
    return ActivityEvent(
        id=extra.pop("id", uuid.uuid4()),
        tenant_id=extra.pop("tenant_id", guest.tenant_id),
        event_id=extra.pop("event_id", guest.event_id),
        guest_id=guest.pk,
        kind=kind,
        at=at,
        **extra,
    )


def _stamps(guest):
    guest.refresh_from_db()
    return guest.last_login_at, guest.last_access_at


def _writes(queries, verb, table):
    return statements(queries, verb, table)  # SQL statements or MongoDB operations


# --- the consumer's logic (guests.services.guest_activity_record_batch) --------------------------


def test_many_events_of_one_guest_become_one_update_and_one_bulk_insert(household):
    anna, lisa = household
    events = [_event(anna, at=T0 + dt.timedelta(seconds=n)) for n in range(20)]
    events += [_event(lisa, kind=Kind.API_CALL, at=T0 + dt.timedelta(seconds=n)) for n in range(5)]

    with CaptureQueriesContext(connection) as queries:
        result = guest_activity_record_batch(events=events)

    assert len(_writes(queries, "UPDATE", "guests_guest")) == 2  # one per guest, not per event
    assert len(_writes(queries, "INSERT", "guests_guestactivity")) == 1
    assert (result.rows_inserted, result.guests_updated, result.dropped) == (25, 2, 0)
    assert GuestActivity.objects.filter(guest=anna).count() == 20
    assert _stamps(anna) == (None, T0 + dt.timedelta(seconds=19))
    assert _stamps(lisa) == (None, T0 + dt.timedelta(seconds=4))


def test_reads_and_updates_do_not_grow_with_the_number_of_events(household):
    anna, _lisa = household

    with CaptureQueriesContext(connection) as queries:
        guest_activity_record_batch(events=[_event(anna, at=T0 + dt.timedelta(seconds=n)) for n in range(300)])

    # the guests, the ids already stored, then one update; the bulk insert is split only by the
    # backend's parameter limit (SQLite: 999 per statement)
    assert len(_writes(queries, "SELECT", "")) == 2
    assert len(_writes(queries, "UPDATE", "guests_guest")) == 1
    assert GuestActivity.objects.count() == 300


def test_concurrent_flushes_update_guests_in_one_order_so_they_cannot_deadlock(event):
    # Two flushes running at once (a backlog after a worker restart, two workers) each update many of the
    # same guests in one transaction; in the order events arrived, PostgreSQL saw "deadlock detected" and
    # the flush failed. Every flush updates in primary-key order, so they wait for each other instead.
    guests = [GuestFactory(event=event) for _ in range(6)]
    arrival = sorted(guests, key=lambda g: g.pk, reverse=True)
    arrival = arrival[1::2] + arrival[::2]

    with CaptureQueriesContext(connection) as queries:
        guest_activity_record_batch(events=[_event(g, kind=Kind.LOGIN) for g in arrival])

    def guest_of(sql):
        return next(g.pk for g in guests if str(g.pk) in sql or g.pk.hex in sql)

    updated = [guest_of(sql) for sql in _writes(queries, "UPDATE", "guests_guest")]
    assert updated == sorted(g.pk for g in guests)


def test_a_login_moves_last_login_and_last_access_to_the_latest_event(household):
    anna, _lisa = household

    guest_activity_record_batch(
        events=[
            _event(anna, kind=Kind.LOGIN, at=T0),
            _event(anna, kind=Kind.PAGE_VIEW, at=T0 + dt.timedelta(minutes=5)),
            _event(anna, kind=Kind.LOGIN, at=T0 + dt.timedelta(minutes=1)),
        ]
    )

    assert _stamps(anna) == (T0 + dt.timedelta(minutes=1), T0 + dt.timedelta(minutes=5))


def test_events_arriving_late_never_move_time_backwards(household):
    anna, _lisa = household
    guest_activity_record_batch(events=[_event(anna, kind=Kind.LOGIN, at=T0)])

    # An older batch (a slow web process, a redelivered message) arrives afterwards.
    older = [_event(anna, kind=Kind.LOGIN, at=T0 - dt.timedelta(hours=h)) for h in (1, 2, 3)]
    result = guest_activity_record_batch(events=older)

    assert _stamps(anna) == (T0, T0)
    assert result.rows_inserted == 3  # the history is still recorded


def test_out_of_order_events_inside_one_batch_keep_the_latest(household):
    anna, _lisa = household
    times = [T0 + dt.timedelta(seconds=s) for s in (30, 10, 50, 20, 40)]

    guest_activity_record_batch(events=[_event(anna, kind=Kind.LOGIN, at=t) for t in times])

    assert _stamps(anna) == (T0 + dt.timedelta(seconds=50),) * 2


def test_a_duplicate_event_is_stored_once_and_changes_nothing(household):
    anna, _lisa = household
    event = _event(anna, kind=Kind.LOGIN)

    first = guest_activity_record_batch(events=[event, event])
    again = guest_activity_record_batch(events=[event])

    assert (first.rows_inserted, again.rows_inserted) == (1, 0)
    assert GuestActivity.objects.filter(pk=event.id).count() == 1
    assert _stamps(anna) == (T0, T0)


def test_events_of_missing_guests_or_another_tenant_are_dropped(household, tenant):
    anna, lisa = household
    ghost = GuestFactory()
    ghost_event = _event(ghost)
    ghost.delete()
    forged = _event(lisa, tenant_id=uuid.uuid4())

    result = guest_activity_record_batch(events=[ghost_event, forged, _event(anna)])

    assert (result.rows_inserted, result.dropped) == (1, 2)
    assert _stamps(lisa) == (None, None)


def test_organizer_views_are_recorded_without_stamping_the_guest(household, owner):
    anna, _lisa = household

    guest_activity_record_batch(events=[_event(anna, kind=Kind.ORGANIZER_VIEW, actor_user_id=owner.pk)])

    assert GuestActivity.objects.get(guest=anna).actor_user_id == owner.pk
    assert _stamps(anna) == (None, None)


def test_an_empty_batch_runs_no_query(db, django_assert_num_queries):
    with django_assert_num_queries(0):
        guest_activity_record_batch(events=[])


def test_messages_round_trip_and_foreign_messages_are_refused(household):
    anna, _lisa = household
    event = _event(anna, kind=Kind.LOGIN, user_agent="Firefox", client_hash="ab" * 16)

    assert ActivityEvent.from_message(event.as_message()) == event
    for bad in ({}, {"v": 1}, {**event.as_message(), "kind": "hack"}, {**event.as_message(), "at": "2026-06-01T12:00"}):
        with pytest.raises(ValueError):
            ActivityEvent.from_message(bad)


# --- the producer -------------------------------------------------------------------------------


def test_track_activity_on_the_embedded_default_writes_after_commit(household, rf, django_capture_on_commit_callbacks):
    anna, _lisa = household
    request = rf.get("/rsvp/answer/", HTTP_USER_AGENT="X" * 500, REMOTE_ADDR="203.0.113.7")

    with django_capture_on_commit_callbacks() as callbacks:
        track_activity(guest=anna, kind=Kind.LOGIN, request=request)
        # Nothing before commit; MongoDB has no transaction to wait for.
        assert GuestActivity.objects.exists() is ON_COMMIT_AT_ONCE.pick(sql=False, mongodb=True)
    for callback in callbacks:
        callback()

    row = GuestActivity.objects.get()
    assert (row.tenant_id, row.event_id, row.kind) == (anna.tenant_id, anna.event_id, Kind.LOGIN)
    assert row.user_agent == "X" * GuestActivity.USER_AGENT_MAX_LENGTH
    assert len(row.client_hash) == 32 and "203.0.113.7" not in row.client_hash
    assert _stamps(anna)[0] is not None


def test_the_client_hash_tells_devices_apart_without_the_address(household, rf, django_capture_on_commit_callbacks):
    anna, _lisa = household
    with django_capture_on_commit_callbacks(execute=True):
        for address in ("203.0.113.7", "203.0.113.7", "198.51.100.1"):
            track_activity(guest=anna, kind=Kind.PAGE_VIEW, request=rf.get("/", REMOTE_ADDR=address))

    hashes = list(GuestActivity.objects.order_by("at").values_list("client_hash", flat=True))
    assert hashes[0] == hashes[1] != hashes[2]


def test_tracking_can_be_switched_off(household, settings, django_capture_on_commit_callbacks):
    settings.ACTIVITY_TRACKING = False
    with django_capture_on_commit_callbacks(execute=True):
        track_activity(guest=household[0], kind=Kind.LOGIN)

    assert not GuestActivity.objects.exists()


def test_tracking_never_raises_even_if_the_write_fails(household, monkeypatch, django_capture_on_commit_callbacks):
    def broken(**kwargs):
        raise RuntimeError("database on fire")

    monkeypatch.setattr("guests.activity.guest_activity_record_batch", broken)
    with django_capture_on_commit_callbacks(execute=True):
        track_activity(guest=household[0], kind=Kind.LOGIN)  # no exception


# --- the drain loop on Celery's in-memory broker ------------------------------------------------


@pytest.fixture
def memory_broker():
    with celery_config(broker_url="memory://", task_always_eager=False) as app:
        with app.connection_for_write() as conn:
            activity.ACTIVITY_QUEUE(conn.default_channel).declare()
            activity.ACTIVITY_QUEUE(conn.default_channel).purge()
        yield app


def _publish_raw(app, body):
    with app.producer_pool.acquire(block=True) as producer:
        producer.publish(
            body,
            exchange=activity.ACTIVITY_EXCHANGE,
            routing_key="activity",
            declare=[activity.ACTIVITY_QUEUE],
            serializer="json",
        )


def _queued(app) -> int:
    with app.connection_for_read() as conn:
        return activity.ACTIVITY_QUEUE(conn.default_channel).queue_declare(passive=True).message_count


def test_requests_only_publish_and_the_flush_writes_in_batches(
    memory_broker, household, django_capture_on_commit_callbacks
):
    anna, lisa = household
    with django_capture_on_commit_callbacks(execute=True):
        for n in range(7):
            track_activity(guest=anna, kind=Kind.PAGE_VIEW, at=T0 + dt.timedelta(seconds=n))
        track_activity(guest=lisa, kind=Kind.LOGIN, at=T0)

    assert not GuestActivity.objects.exists() and _queued(memory_broker) == 8

    with CaptureQueriesContext(connection) as queries:
        result = activity_flush(batch_size=3)

    assert (result.messages, result.rows_inserted, result.dropped) == (8, 8, 0)
    assert len(_writes(queries, "UPDATE", "guests_guest")) == 4  # batches of 3, 3, 2: one update per guest each
    assert _stamps(anna) == (None, T0 + dt.timedelta(seconds=6))
    assert _stamps(lisa) == (T0, T0)
    assert _queued(memory_broker) == 0


def test_a_malformed_message_is_dropped_and_the_rest_is_written(memory_broker, household):
    anna, _lisa = household
    _publish_raw(memory_broker, {"hello": "world"})
    _publish_raw(memory_broker, _event(anna).as_message())

    result = activity_flush()

    assert (result.messages, result.rows_inserted, result.dropped) == (2, 1, 1)
    assert _queued(memory_broker) == 0


def test_a_transient_database_error_puts_the_batch_back_for_the_next_flush(memory_broker, household, monkeypatch):
    from django.db import OperationalError

    anna, _lisa = household
    _publish_raw(memory_broker, _event(anna).as_message())

    def database_gone(**kwargs):
        raise OperationalError("server closed the connection")

    with monkeypatch.context() as patch:
        patch.setattr("guests.activity.guest_activity_record_batch", database_gone)
        with pytest.raises(OperationalError):
            activity_flush()
    assert _queued(memory_broker) == 1

    assert activity_flush().rows_inserted == 1
    assert _queued(memory_broker) == 0


def test_one_unwritable_event_does_not_block_the_queue(memory_broker, household, monkeypatch):
    from guests import services

    anna, lisa = household
    _publish_raw(memory_broker, _event(anna).as_message())
    _publish_raw(memory_broker, _event(lisa).as_message())
    real = services.guest_activity_record_batch

    def fails_for_lisa(*, events):
        if any(e.guest_id == lisa.pk for e in events):
            raise ValueError("bug")
        return real(events=events)

    monkeypatch.setattr("guests.activity.guest_activity_record_batch", fails_for_lisa)
    result = activity_flush()

    assert (result.rows_inserted, result.dropped) == (1, 1)
    assert _queued(memory_broker) == 0


# --- what the organizer sees ------------------------------------------------------------------


def _detail_url(tenant, event, guest):
    return f"/o/{tenant.slug}/events/{event.pk}/guests/{guest.pk}/"


def test_organizer_guest_page_records_the_view_and_shows_the_timeline(
    owner_client, owner, tenant, event, household, django_capture_on_commit_callbacks
):
    anna, _lisa = household
    guest_activity_record_batch(
        events=[_event(anna, kind=Kind.LOGIN, at=T0), _event(anna, kind=Kind.RSVP_SUBMITTED, at=T0)]
    )

    with django_capture_on_commit_callbacks(execute=True):
        response = owner_client.get(_detail_url(tenant, event, anna))

    page = response.content.decode()
    assert response.status_code == 200
    assert "Recent activity" in page and "Logged in" in page and "Sent an answer" in page
    view = GuestActivity.objects.get(guest=anna, kind=Kind.ORGANIZER_VIEW)
    assert view.actor_user_id == owner.pk
    assert _stamps(anna) == (T0, T0)  # an organizer's look is not the guest's visit


def test_timeline_costs_the_same_queries_for_few_or_many_entries(
    owner_client, owner, tenant, event, household, django_assert_max_num_queries
):
    anna, lisa = household
    guest_activity_record_batch(events=[_event(anna, kind=Kind.ORGANIZER_VIEW, actor_user_id=owner.pk)])
    with CaptureQueriesContext(connection) as few:
        owner_client.get(_detail_url(tenant, event, anna))
    many = [T0 + dt.timedelta(seconds=n) for n in range(40)]
    guest_activity_record_batch(
        events=[_event(lisa, kind=Kind.ORGANIZER_VIEW, actor_user_id=owner.pk, at=at) for at in many]
    )
    with django_assert_max_num_queries(len(few)):
        owner_client.get(_detail_url(tenant, event, lisa))


def test_activity_page_lists_recent_activity_of_this_event_only(owner_client, tenant, event, household):
    anna, _lisa = household
    other = GuestFactory(first_name="Outsider")
    guest_activity_record_batch(events=[_event(anna, kind=Kind.LOGIN), _event(other, kind=Kind.LOGIN)])

    response = owner_client.get(f"/o/{tenant.slug}/events/{event.pk}/activity/")

    page = response.content.decode()
    assert response.status_code == 200
    assert "Anna Müller" in page and "Outsider" not in page


def test_guest_pages_and_api_track_their_kinds(client, household, django_capture_on_commit_callbacks):
    anna, _lisa = household
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/rsvp/", {"code": anna.code, "last_name": "Müller"})
        client.get("/rsvp/answer/")
        client.post("/rsvp/answer/", household_post(row("no"), row("later")))
        token = client.post(
            "/api/v1/auth/guest-login", {"code": anna.code, "last_name": "Müller"}, content_type="application/json"
        ).json()["access"]
        client.get("/api/v1/rsvp", HTTP_AUTHORIZATION=f"Bearer {token}")

    kinds = sorted(GuestActivity.objects.filter(guest=anna).values_list("kind", flat=True))
    assert kinds.count(Kind.LOGIN) == 2
    assert Kind.RSVP_SUBMITTED in kinds and Kind.PAGE_VIEW in kinds and Kind.API_CALL in kinds
    anna.refresh_from_db()
    assert anna.last_login_at is not None and anna.last_access_at >= anna.last_login_at
    assert Guest.objects.get(pk=anna.pk).status == Guest.Status.DECLINED


def test_staff_can_browse_activity_in_the_admin(client, household):
    from tests.factories import UserFactory

    guest_activity_record_batch(events=[_event(household[0], kind=Kind.LOGIN)])
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    response = client.get("/admin/guests/guestactivity/")

    assert response.status_code == 200 and "Logged in" in response.content.decode()


def test_organizer_guest_api_records_the_view(owner, household, django_capture_on_commit_callbacks):
    from tests.api.organizer_fixtures import organizer_client

    anna, _lisa = household
    api = organizer_client(owner)
    with django_capture_on_commit_callbacks(execute=True):
        response = api.get(f"/api/v1/events/{anna.event_id}/guests/{anna.pk}")
        missing = api.get(f"/api/v1/events/{anna.event_id}/guests/{uuid.uuid4()}")

    assert (response.status_code, missing.status_code) == (200, 404)
    view = GuestActivity.objects.get()
    assert (view.guest_id, view.kind, view.actor_user_id) == (anna.pk, Kind.ORGANIZER_VIEW, owner.pk)
    assert _stamps(anna) == (None, None)

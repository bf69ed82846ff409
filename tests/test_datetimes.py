"""Datetimes are stored to the millisecond on every backend (eventsaas/fields.py).

MongoDB keeps milliseconds, SQLite and PostgreSQL microseconds. The same
microsecond value must come back the same from all three, whichever way it
was written: save(), create() with a default, update(), bulk_create(), an
expression, and it must be found again by an equality filter.
"""

import datetime as dt
import uuid

import pytest
from django.apps import apps
from django.db import models

from eventsaas.fields import MillisecondDateTimeField, now_as_stored, truncate_to_milliseconds
from guests.activity import ActivityEvent
from guests.models import Guest, GuestActivity
from guests.services import guest_activity_record_batch
from tests.factories import GuestFactory

MICROS = dt.datetime(2026, 6, 1, 12, 0, 0, 123456, tzinfo=dt.UTC)
STORED = dt.datetime(2026, 6, 1, 12, 0, 0, 123000, tzinfo=dt.UTC)
OUR_APPS = ("eventsaas", "tenants", "events", "guests", "rsvp", "billing")


def test_truncation_drops_the_sub_millisecond_part_only():
    assert truncate_to_milliseconds(MICROS) == STORED
    assert truncate_to_milliseconds(STORED) is STORED
    assert truncate_to_milliseconds(None) is None
    assert truncate_to_milliseconds(dt.date(2026, 6, 1)) == dt.date(2026, 6, 1)
    assert now_as_stored().microsecond % 1000 == 0


def test_every_datetime_field_of_our_models_stores_milliseconds():
    """New fields too: a plain DateTimeField would store microseconds on SQL and read back differently on MongoDB."""
    plain = [
        f"{model._meta.label}.{field.name}"
        for app in OUR_APPS
        for model in apps.get_app_config(app).get_models()
        for field in model._meta.get_fields()
        if isinstance(field, models.DateTimeField) and not isinstance(field, MillisecondDateTimeField)
    ]
    assert plain == [], "use eventsaas.fields.MillisecondDateTimeField for " + ", ".join(plain)


def test_the_field_needs_no_migration_of_its_own():
    name, path, args, kwargs = Guest._meta.get_field("last_login_at").deconstruct()
    assert (name, path) == ("last_login_at", "django.db.models.DateTimeField")


def test_save_stores_milliseconds_and_the_instance_keeps_what_was_stored(event):
    guest = GuestFactory(event=event, last_login_at=MICROS)

    assert guest.last_login_at == STORED
    assert Guest.objects.get(pk=guest.pk).last_login_at == STORED


def test_a_default_now_is_stored_as_it_reads_back(event):
    guest = GuestFactory(event=event)

    assert guest.created_at.microsecond % 1000 == 0
    assert Guest.objects.get(pk=guest.pk).created_at == guest.created_at


def test_update_stores_milliseconds(event):
    guest = GuestFactory(event=event)

    Guest.objects.filter(pk=guest.pk).update(last_access_at=MICROS, invited_at="2026-06-01T12:00:00.123456+00:00")

    guest.refresh_from_db()
    assert (guest.last_access_at, guest.invited_at) == (STORED, STORED)


def test_bulk_create_stores_milliseconds(event):
    guest = GuestFactory(event=event)
    rows = [
        GuestActivity(tenant_id=guest.tenant_id, event_id=guest.event_id, guest=guest, kind="login", at=MICROS + n)
        for n in (dt.timedelta(0), dt.timedelta(microseconds=500))
    ]

    GuestActivity.objects.bulk_create(rows)

    assert [row.at for row in rows] == [STORED, STORED]
    assert list(GuestActivity.objects.filter(guest=guest).values_list("at", flat=True)) == [STORED, STORED]


def test_an_expression_stores_milliseconds(event):
    """The activity batch moves stamps with Greatest(Coalesce(field, value), value)."""
    guest = GuestFactory(event=event)

    guest_activity_record_batch(
        events=[
            ActivityEvent(
                id=uuid.uuid4(), tenant_id=guest.tenant_id, event_id=guest.event_id, guest_id=guest.pk,
                kind=GuestActivity.Kind.LOGIN, at=MICROS,
            )
        ]
    )  # fmt: skip

    guest.refresh_from_db()
    assert (guest.last_login_at, guest.last_access_at) == (STORED, STORED)


@pytest.mark.parametrize(
    "lookup",
    [{"last_login_at": MICROS}, {"last_login_at__in": [MICROS]}, {"last_login_at__range": (MICROS, MICROS)}],
    ids=["exact", "in", "range"],
)
def test_filters_find_a_stamp_by_the_value_it_was_written_with(event, lookup):
    guest = GuestFactory(event=event, last_login_at=MICROS)

    assert list(Guest.objects.filter(**lookup).values_list("pk", flat=True)) == [guest.pk]

"""Model fields that store the same value on SQLite, PostgreSQL and MongoDB."""

from datetime import datetime

from django.db import models
from django.utils import timezone


def truncate_to_milliseconds(value):
    """`value` without its sub-millisecond part (BSON dates hold milliseconds); anything else unchanged."""
    if isinstance(value, datetime) and value.microsecond % 1000:
        return value.replace(microsecond=value.microsecond - value.microsecond % 1000)
    return value


class MillisecondDateTimeField(models.DateTimeField):
    """A DateTimeField stored to the millisecond on every database.

    MongoDB keeps dates in milliseconds, SQLite and PostgreSQL in microseconds, so
    the same `timezone.now()` would read back differently per database and an
    equality filter on a stored stamp would match on one and miss on another.
    This field truncates (as BSON does) in the one place every write and lookup
    passes: `pre_save` for `save()`/`create()`/`bulk_create()` (the instance keeps
    what was stored) and `get_db_prep_value` for `update()`, filters and
    expressions. It deconstructs as Django's DateTimeField: nothing changes in
    the schema, so no migration is needed to adopt it.
    """

    def pre_save(self, model_instance, add):
        value = truncate_to_milliseconds(super().pre_save(model_instance, add))
        if value is not None:
            setattr(model_instance, self.attname, value)
        return value

    def get_db_prep_value(self, value, connection, prepared=False):
        if not prepared:
            value = self.get_prep_value(value)  # strings and dates become datetimes first
        return super().get_db_prep_value(truncate_to_milliseconds(value), connection, prepared=True)

    def deconstruct(self):
        name, _path, args, kwargs = super().deconstruct()
        return name, "django.db.models.DateTimeField", args, kwargs


def now_as_stored() -> datetime:
    """`timezone.now()` as a MillisecondDateTimeField stores it.

    For a service that writes a stamp with `update()` (which bypasses the instance)
    and also keeps or returns it: what it hands back equals what a later read gives.
    """
    return truncate_to_milliseconds(timezone.now())

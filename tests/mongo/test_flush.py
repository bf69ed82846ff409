"""The MongoDB pass's teardown (tests/support/mongo_flush.py) leaves what Django's full flush leaves."""

import subprocess
import sys

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.recorder import MigrationRecorder
from django.test import TransactionTestCase

from guests.models import GuestMessage
from tenants.models import Tenant
from tests.factories import GuestFactory
from tests.support.backends import ON_MONGODB

pytestmark = pytest.mark.skipif(not ON_MONGODB, reason="the teardown it checks exists only on MongoDB")

KEPT = {"django_content_type", "auth_permission", "django_migrations"}


def _non_empty_collections():
    database = connection.database
    names = [name for name in database.list_collection_names() if name not in KEPT and not name.startswith("system.")]
    return sorted(name for name in names if database[name].find_one({}, {"_id": 1}) is not None)


def _write_from_another_process(collection):
    """A write this process's listener cannot see, like a Celery worker's."""
    settings = connection.settings_dict
    code = (
        "import sys, pymongo; client = pymongo.MongoClient(sys.argv[1]);"
        "client[sys.argv[2]][sys.argv[3]].insert_one({'written_by': 'another process'})"
    )
    # HOST is the whole connection string (eventsaas/mongodb.py); NAME is the test database's.
    subprocess.run([sys.executable, "-c", code, settings["HOST"], settings["NAME"], collection], check=True, timeout=60)


def test_the_teardown_empties_what_this_test_and_another_process_wrote(db):
    teardown = TransactionTestCase("__init__")._fixture_teardown
    teardown()  # the first one in a process is a full flush; the next one is the fast path
    GuestFactory()  # tenant, event, guest: written by this process
    _write_from_another_process(GuestMessage._meta.db_table)  # a collection this process never wrote to
    content_types, permissions = ContentType.objects.count(), Permission.objects.count()
    assert GuestMessage._meta.db_table in _non_empty_collections()
    assert Tenant._meta.db_table in _non_empty_collections()

    teardown()

    assert _non_empty_collections() == []
    # What post_migrate would recreate after a full flush is there.
    assert (ContentType.objects.count(), Permission.objects.count()) == (content_types, permissions)


def test_the_teardown_keeps_the_migration_records_a_migration_test_wrote(db):
    """Django's flush leaves django_migrations; so must the fast path, or the next migration test on this
    worker finds nothing applied and tries to create every collection again."""
    teardown = TransactionTestCase("__init__")._fixture_teardown
    teardown()  # the first one in a process is a full flush; the next one is the fast path
    recorder = MigrationRecorder(connection)
    applied = set(recorder.applied_migrations())
    app, name = max(applied)
    recorder.record_unapplied(app, name)  # a migration test steps back...
    recorder.record_applied(app, name)  # ...and forward again

    teardown()

    assert set(MigrationRecorder(connection).applied_migrations()) == applied

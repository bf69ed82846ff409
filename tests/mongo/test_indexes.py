"""The MongoDB indexes our models define, as django-mongodb-backend's schema editor would create them.

The full listing is kept in docs/mongodb-indexes.txt so that any change to the
indexes shows up in review. Regenerate it with
    UPDATE_MONGODB_INDEXES=1 bin/test tests/mongo/test_indexes.py
"""

import os
import re
from pathlib import Path

import pytest
from django.apps import apps

from tests.support import mongo_shadow

LISTING = Path(__file__).resolve().parents[2] / "docs" / "mongodb-indexes.txt"
OUR_APPS = ("eventsaas", "tenants", "events", "guests", "rsvp", "billing")


@pytest.fixture(scope="module")
def index_operations() -> list[str]:
    """create_index operations, one line each, from the schema editor in collect mode (no server)."""
    connection = mongo_shadow.shadow_connection()
    connection.check_database_version_supported = lambda: None  # the only step that would need a server
    lines = []
    with connection.schema_editor(collect_sql=True, atomic=False) as editor:
        for app in OUR_APPS:
            for model in apps.get_app_config(app).get_models():
                editor.create_model(model)
    # User's many-to-many tables to auth's Group/Permission key on contrib ids,
    # whose type depends on the backend (ObjectId on MongoDB, integer here).
    m2m_tables = {"tenants_user_groups", "tenants_user_user_permissions"}
    for statement in editor.collected_sql:
        if "create_index" in statement and not any(f"db.{table}." in statement for table in m2m_tables):
            lines.append(re.sub(r"\s+", " ", statement))
    return sorted(lines)


def _index(lines, collection, name):
    # A name ending in "_" is a prefix (Django adds a hash to field index names).
    needle = f"name='{name}" if name.endswith("_") else f"name='{name}'"
    found = [line for line in lines if f"db.{collection}." in line and needle in line]
    assert found, f"no index {name} on {collection}:\n" + "\n".join(lines)
    return found[0]


def test_guest_code_is_unique_across_the_platform(index_operations):
    line = _index(index_operations, "guests_guest", "guests_guest_code_")
    assert "IndexModel({'code': 1}" in line and "unique=True" in line


def test_household_lookup_index_is_event_scoped(index_operations):
    # Not partial on purpose: see the comment on Guest.Meta.indexes.
    line = _index(index_operations, "guests_guest", "guest_event_group")
    assert "{'tenant_id': 1, 'event_id': 1, 'group_id': 1}" in line


@pytest.mark.parametrize(
    ("name", "keys"),
    [
        ("guest_event_status", "{'tenant_id': 1, 'event_id': 1, 'status': 1, 'last_name': 1}"),
        ("guest_event_status_dietary", "{'tenant_id': 1, 'event_id': 1, 'status': 1, 'dietary': 1}"),
        ("guest_event_last_login", "{'tenant_id': 1, 'event_id': 1, 'last_login_at': 1}"),
    ],
)
def test_guest_list_and_report_indexes_lead_with_tenant_and_event(index_operations, name, keys):
    assert keys in _index(index_operations, "guests_guest", name)


def test_event_slug_is_unique_per_tenant(index_operations):
    line = _index(index_operations, "events_event", "event_unique_slug_per_tenant")
    assert "{'tenant_id': 1, 'slug': 1}" in line and "unique=True" in line


def test_no_redundant_single_field_tenant_indexes(index_operations):
    """Composite indexes lead with tenant_id; a separate tenant_id index would only cost writes.

    A unique one is a constraint, not a lookup index (one connected account per organization).
    """
    singles = [
        line for line in index_operations if "IndexModel({'tenant_id': 1}," in line and "unique=True" not in line
    ]
    assert singles == []


def test_index_listing_is_reviewed(index_operations):
    listing = "\n".join(index_operations) + "\n"
    if os.environ.get("UPDATE_MONGODB_INDEXES"):
        LISTING.write_text(listing)
    assert LISTING.read_text() == listing, (
        "MongoDB indexes changed; review and regenerate docs/mongodb-indexes.txt "
        "with UPDATE_MONGODB_INDEXES=1 bin/test tests/mongo/test_indexes.py"
    )


def test_guest_external_id_is_unique_per_event_only_when_set(index_operations):
    line = _index(index_operations, "guests_guest", "guest_unique_external_id_per_event")
    assert "{'tenant_id': 1, 'event_id': 1, 'external_id': 1}" in line and "unique=True" in line
    assert "'external_id': {'$gt': ''" in line  # a guest without one is not constrained

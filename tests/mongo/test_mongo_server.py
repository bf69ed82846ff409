"""The MongoDB test server's launcher (tests/support/mongo_server.py) and the emulator bug it fixes.

The rewrite itself is tested here as a function (no server needed). The ORM
tests below run on every backend: on SQL they simply hold, on the MongoDB pass
they fail when the launcher's fix is missing (django-mongodb-backend emits the
nested field specs for exactly these queries).
"""

import re
from pathlib import Path

import pytest

from tenants.models import Membership, Role
from tests.factories import MembershipFactory, TenantFactory, UserFactory
from tests.support.mongo_server import REPLICA_SET, nested_fields_as_paths


@pytest.mark.parametrize(
    ("spec", "paths"),
    [
        ({"a": {"b": 1}}, {"a.b": 1}),
        ({"a": {"b": "$x", "c": {"d": 1, "e": {"$concat": ["$y", "!"]}}}, "f": 0},
         {"a.b": "$x", "a.c.d": 1, "a.c.e": {"$concat": ["$y", "!"]}, "f": 0}),
        ({"a": {"$literal": {"b": 1}}}, {"a": {"$literal": {"b": 1}}}),
        ({"a": {}}, {"a": {}}),
        ({"a": [{"b": 1}]}, {"a": [{"b": 1}]}),
        ({"a": {"b": 1, "$c": 2}}, {"a": {"b": 1, "$c": 2}}),  # invalid: left for the emulator to refuse
        ({"a.b": 1, "_id": 0}, {"a.b": 1, "_id": 0}),
    ],
    ids=["inclusion", "nested-expressions", "operator", "empty-object", "array", "mixed-keys", "already-dotted"],
)  # fmt: skip
def test_nested_field_specs_become_dotted_paths_as_mongod_reads_them(spec, paths):
    assert nested_fields_as_paths(spec) == paths
    assert list(nested_fields_as_paths(spec)) == list(paths)  # order kept: $project output follows it


def test_a_stage_that_is_not_an_object_is_left_for_the_emulator_to_refuse():
    assert nested_fields_as_paths("$a") == "$a"


def test_the_test_url_names_the_emulators_replica_set():
    script = (Path(__file__).resolve().parents[2] / "bin" / "test-mongo").read_text()
    assert f"replicaSet={REPLICA_SET}" in script


def test_the_gpl_server_stays_a_separate_test_tool():
    """SecantusDB (GPL-2.0) runs as a separate process from its own venv: nothing we ship installs or imports it."""
    root = Path(__file__).resolve().parents[2]
    for requirements in ("requirements.in", "requirements.txt", "requirements-dev.in", "requirements-dev.txt"):
        assert "secantus" not in (root / requirements).read_text().lower(), requirements
    sources = [
        path for top in root.iterdir() if top.is_dir() and not top.name.startswith(".") for path in top.rglob("*.py")
    ]
    importers = [
        str(path.relative_to(root))
        for path in sources
        if re.search(r"^\s*(from|import) secantus\b", path.read_text(encoding="utf-8"), re.M)
    ]
    assert importers == ["tests/support/mongo_server.py"]


@pytest.fixture
def memberships(db):
    zeta, alpha = TenantFactory(name="Zeta"), TenantFactory(name="Alpha")
    MembershipFactory(tenant=zeta, user=UserFactory(email="zoe@example.com"), role=Role.OWNER)
    MembershipFactory(tenant=alpha, user=UserFactory(email="al@example.com"), role=Role.VIEWER)


def test_select_related_ordered_by_a_joined_field_loads_the_related_rows(memberships):
    rows = list(Membership.objects.select_related("tenant", "user").order_by("tenant__name"))

    assert [(m.tenant.name, m.user.email) for m in rows] == [("Alpha", "al@example.com"), ("Zeta", "zoe@example.com")]


def test_values_list_across_a_join_gives_the_joined_values(memberships):
    emails = Membership.objects.order_by("user__email").values_list("user__email", "tenant__name")

    assert list(emails) == [("al@example.com", "Alpha"), ("zoe@example.com", "Zeta")]

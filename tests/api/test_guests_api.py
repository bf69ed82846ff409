"""The organizer's guest API: list, add (one or up to 1,000 at once), edit, remove, codes, households."""

# The organizer fixtures are imported; test arguments name them (ruff cannot tell).
# ruff: noqa: F811

import math
import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from eventsaas.models import AuditLog
from guests import services
from guests.models import Guest
from tests.api.organizer_fixtures import (  # noqa: F401
    admin_api,
    api_client,
    errors_of,
    guest_api,
    other_event,
    other_guest,
    other_tenant,
    owner_api,
    snapshot,
    stranger_api,
    viewer_api,
)
from tests.factories import EventFactory, GuestFactory

pytestmark = pytest.mark.django_db


def guests_url(event, suffix=""):
    return f"/api/v1/events/{event.pk}/guests{suffix}"


def guest_url(guest, suffix=""):
    return f"/api/v1/events/{guest.event_id}/guests/{guest.pk}{suffix}"


def groups_url(event):
    return f"/api/v1/events/{event.pk}/groups"


def rows(count, **fields):
    return [{"first_name": f"Guest{n}", "last_name": "Bulk", **fields} for n in range(count)]


def test_urls(event, household):
    anna, _lisa = household
    kwargs = {"event_id": event.pk, "guest_id": anna.pk}
    assert reverse("api:event-guests", kwargs={"event_id": event.pk}) == guests_url(event)
    assert reverse("api:guest-bulk-create", kwargs={"event_id": event.pk}) == guests_url(event, "/bulk")
    assert reverse("api:guest-detail", kwargs=kwargs) == guest_url(anna)
    assert reverse("api:guest-regenerate-code", kwargs=kwargs) == guest_url(anna, "/regenerate-code")
    assert reverse("api:guest-leave-group", kwargs=kwargs) == guest_url(anna, "/leave-group")
    assert reverse("api:group-connect", kwargs={"event_id": event.pk}) == groups_url(event)


# --- list ------------------------------------------------------------------------------------------


def test_guest_list_is_paginated_by_name(viewer_api, event, other_guest):
    zoe = GuestFactory(event=event, first_name="Zoe", last_name="Adams")
    bob = GuestFactory(event=event, first_name="Bob", last_name="Brown")
    amy = GuestFactory(event=event, first_name="Amy", last_name="Brown")

    response = viewer_api.get(guests_url(event), {"page_size": 2})

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [row["id"] for row in body["results"]] == [str(zoe.pk), str(amy.pk)]
    assert body["results"][0]["code"] == zoe.code
    second = viewer_api.get(guests_url(event), {"page_size": 2, "page": 2}).json()
    assert [row["id"] for row in second["results"]] == [str(bob.pk)]
    assert second["next"] is None


def test_guest_list_filters(viewer_api, event):
    coming = GuestFactory(event=event, first_name="Clara", last_name="Coming", status=Guest.Status.COMING)
    logged_in = GuestFactory(event=event, first_name="Lars", last_name="Login", last_login_at=timezone.now())
    emailed = GuestFactory(event=event, first_name="Eve", last_name="Mail", email="eve@clara.example")

    def ids(**params):
        return {row["id"] for row in viewer_api.get(guests_url(event), params).json()["results"]}

    assert ids(status="coming") == {str(coming.pk)}
    assert ids(status="pending") == {str(logged_in.pk), str(emailed.pk)}
    assert ids(never_logged_in="true") == {str(coming.pk), str(emailed.pk)}
    assert ids(q="clara") == {str(coming.pk), str(emailed.pk)}
    assert ids(q="clara coming") == {str(coming.pk)}
    assert ids(q="clara", status="pending", never_logged_in="1") == {str(emailed.pk)}
    assert ids(status="") == {str(coming.pk), str(logged_in.pk), str(emailed.pk)}


@pytest.mark.parametrize("params", [{"status": "maybe"}, {"never_logged_in": "sometimes"}, {"q": "x" * 101}], ids=str)
def test_guest_list_refuses_malformed_filters(viewer_api, event, params):
    assert errors_of(viewer_api.get(guests_url(event), params))


def test_guest_list_costs_the_same_queries_for_any_page_size(viewer_api, event):
    GuestFactory(event=event)
    with CaptureQueriesContext(connection) as one:
        viewer_api.get(guests_url(event))
    GuestFactory.create_batch(30, event=event)
    with CaptureQueriesContext(connection) as many:
        assert len(viewer_api.get(guests_url(event)).json()["results"]) == 31

    assert len(many) == len(one) == 3  # event, count, page


# --- create one ------------------------------------------------------------------------------------


def test_create_guest(owner_api, owner, event):
    response = owner_api.post(
        guests_url(event),
        {"first_name": "Anna", "last_name": "Müller", "email": "anna@example.com", "expected_guests": 2},
        format="json",
    )

    assert response.status_code == 201, response.content
    guest = Guest.objects.get(pk=response.json()["id"])
    assert (guest.event, guest.tenant_id, guest.full_name) == (event, event.tenant_id, "Anna Müller")
    assert guest.expected_guests == 2
    assert response.json()["code"] == guest.code
    assert response.json()["status"] == "pending"
    entry = AuditLog.objects.get(action="guest.created")
    assert (entry.actor_user, entry.object_id) == (owner, guest.pk)


def test_admin_adds_guests(admin_api, event):
    assert admin_api.post(guests_url(event), {"first_name": "A", "last_name": "B"}, format="json").status_code == 201


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"first_name": "Anna"}, "last_name"),
        ({"first_name": "Anna", "last_name": "   "}, "last_name"),
        ({"first_name": "Anna", "last_name": "x" * 101}, "last_name"),
        ({"first_name": "Anna", "last_name": "M", "expected_guests": 0}, "expected_guests"),
        ({"first_name": "Anna", "last_name": "M", "expected_guests": 10**30}, "expected_guests"),
        ({"first_name": "Anna", "last_name": "M", "expected_guests": "two"}, "expected_guests"),
        ({"first_name": "Anna", "last_name": "M", "expected_guests": 1.5}, "expected_guests"),
        ({"first_name": "Anna", "last_name": "M", "email": "anna"}, "email"),
        ({"first_name": {"a": 1}, "last_name": "M"}, "first_name"),
        ({"first_name": "Anna", "last_name": "M", "status": "coming"}, "status"),
        ({"first_name": "Anna", "last_name": "M", "code": "AAAAAAAA"}, "code"),
        ({"first_name": "Anna", "last_name": "M", "event": str(uuid.uuid4())}, "event"),
    ],
)
def test_create_guest_refuses_malformed_fields(owner_api, event, body, field):
    assert field in errors_of(owner_api.post(guests_url(event), body, format="json"))
    assert not Guest.objects.exists()


CONTROL_MESSAGE = "Remove the control characters (tabs, line breaks or invisible direction marks) from this text."


@pytest.mark.parametrize("field", ["first_name", "last_name"])
# NUL never gets this far: the JSON parser refuses it for the whole body (eventsaas/parsers.py).
@pytest.mark.parametrize("bad", ["Ann\tMarie", "Two\nLines", "Lee\x7f", "\u202eeeL", "Ann\x1b[2J"], ids=repr)
def test_create_guest_refuses_control_characters_in_a_name_on_the_field(owner_api, event, field, bad):
    body = {"first_name": "Anna", "last_name": "Lee", field: bad}

    errors = errors_of(owner_api.post(guests_url(event), body, format="json"))

    assert list(errors) == [field]
    assert errors[field] == [CONTROL_MESSAGE]
    assert not Guest.objects.exists()


def test_a_name_with_spaces_accents_and_joiners_is_accepted(owner_api, event):
    body = {"first_name": "Ana\u00a0María", "last_name": "می\u200cخواهم"}

    response = owner_api.post(guests_url(event), body, format="json")

    assert response.status_code == 201, response.content
    assert Guest.objects.get().first_name == "Ana\u00a0María"


def test_bulk_create_names_the_row_with_a_control_character_and_saves_none(owner_api, event, snapshot):
    body = {"guests": [*rows(2), {"first_name": "A", "last_name": "B\tC"}]}
    before = snapshot()

    errors = errors_of(owner_api.post(guests_url(event, "/bulk"), body, format="json"))

    assert errors == {"guests": {"2": {"last_name": [CONTROL_MESSAGE]}}}
    assert snapshot() == before


def test_update_guest_refuses_a_control_character_in_a_name(owner_api, household, snapshot):
    anna, _lisa = household
    before = snapshot()

    errors = errors_of(owner_api.patch(guest_url(anna), {"last_name": "M\u00fcller\r\nX"}, format="json"))

    assert errors == {"last_name": [CONTROL_MESSAGE]}
    assert snapshot() == before


def test_the_services_refuse_a_control_character_without_the_api(event, owner):
    with pytest.raises(ValidationError) as refused:
        services.guest_create(event=event, acting_user=owner, first_name="Ann", last_name="Lee\u2028")

    assert refused.value.error_dict["last_name"][0].code == "control_characters"
    assert not Guest.objects.exists()


@pytest.mark.parametrize("body", ["{", "[]", '"Anna"', "null", "1e999"])
def test_create_guest_refuses_a_body_that_is_not_an_object(owner_api, event, body):
    response = owner_api.generic("POST", guests_url(event), body, content_type="application/json")

    assert response.status_code == 400
    assert not Guest.objects.exists()


# --- bulk ------------------------------------------------------------------------------------------


def test_bulk_create_adds_every_guest_with_its_own_code(owner_api, owner, event):
    body = {"guests": [*rows(2), {"first_name": "Kid", "last_name": "Bulk", "expected_guests": 3, "dietary": "nuts"}]}

    response = owner_api.post(guests_url(event, "/bulk"), body, format="json")

    assert response.status_code == 201, response.content
    created = response.json()["guests"]
    assert [row["first_name"] for row in created] == ["Guest0", "Guest1", "Kid"]
    stored = {g.pk: g for g in Guest.objects.for_event(event)}
    assert {row["id"] for row in created} == {str(pk) for pk in stored}
    assert {row["code"] for row in created} == {g.code for g in stored.values()}
    assert len({g.code for g in stored.values()}) == 3
    kid = next(g for g in stored.values() if g.first_name == "Kid")
    assert (kid.expected_guests, kid.dietary, kid.tenant_id) == (3, "nuts", event.tenant_id)
    entry = AuditLog.objects.get(action="guest.bulk_created")
    assert entry.actor_user == owner
    assert entry.data["count"] == 3


def test_bulk_create_saves_nothing_when_a_row_is_invalid(owner_api, event, snapshot):
    body = {"guests": rows(5)}
    del body["guests"][3]["last_name"]
    body["guests"][1]["expected_guests"] = 0
    before = snapshot()

    response = owner_api.post(guests_url(event, "/bulk"), body, format="json")

    assert response.status_code == 400
    assert response.json() == {
        "code": "invalid",
        "errors": {
            "guests": {
                "1": {"expected_guests": ["Ensure this value is greater than or equal to 1."]},
                "3": {"last_name": ["This field is required."]},
            }
        },
    }
    assert snapshot() == before


@pytest.mark.parametrize(
    ("row", "field"),
    [
        ({"first_name": "A", "last_name": "B", "code": "AAAAAAAA"}, "code"),
        ({"first_name": "A", "last_name": "B", "email": "nope"}, "email"),
        ({"first_name": "A", "last_name": ["B"]}, "last_name"),
        ({"first_name": "A", "last_name": "B", "expected_guests": 99999999999999999999}, "expected_guests"),
    ],
)
def test_bulk_create_names_the_bad_field_of_the_bad_row(owner_api, event, row, field):
    body = {"guests": [*rows(2), row]}

    errors = errors_of(owner_api.post(guests_url(event, "/bulk"), body, format="json"))

    assert list(errors["guests"]) == ["2"]
    assert field in errors["guests"]["2"]
    assert not Guest.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        {"guests": []},
        {"guests": "Anna"},
        {"guests": {"first_name": "A", "last_name": "B"}},
        {"guests": [["A", "B"]]},
        {"guests": ["Anna"]},
        {"guests": [None]},
        {},
        {"guests": rows(1), "notify": True},
    ],
    ids=str,
)
def test_bulk_create_refuses_malformed_bodies(owner_api, event, body):
    assert errors_of(owner_api.post(guests_url(event, "/bulk"), body, format="json"))
    assert not Guest.objects.exists()


def test_bulk_create_takes_1000_rows_in_few_queries(owner_api, event):
    with CaptureQueriesContext(connection) as queries:
        response = owner_api.post(guests_url(event, "/bulk"), {"guests": rows(1000)}, format="json")

    assert response.status_code == 201
    assert len(response.json()["guests"]) == 1000
    assert Guest.objects.for_event(event).count() == 1000
    assert len(set(Guest.objects.for_event(event).values_list("code", flat=True))) == 1000
    # event, user, codes check, INSERT (batched on SQLite), savepoint, audit entry
    inserts = [q for q in queries.captured_queries if q["sql"].startswith("INSERT INTO")]
    assert len(queries) - len(inserts) <= 8
    # SQLite binds at most 999 values per statement: the rows go in as few statements as fit, plus the audit entry
    rows_per_statement = 999 // len(Guest._meta.concrete_fields)
    assert len(inserts) <= 1 + math.ceil(1000 / rows_per_statement)


def test_bulk_create_refuses_1001_rows(owner_api, event):
    errors = errors_of(owner_api.post(guests_url(event, "/bulk"), {"guests": rows(1001)}, format="json"))

    assert errors == {"guests": ["Ensure this field has no more than 1000 elements."]}
    assert not Guest.objects.exists()


def test_bulk_create_service_refuses_more_than_the_limit(event, owner):
    with pytest.raises(ValidationError):
        services.guest_bulk_create(event=event, rows=rows(1001), acting_user=owner)
    assert not Guest.objects.exists()


def test_bulk_create_service_validates_with_the_model_rules(event, owner):
    with pytest.raises(services.GuestRowsInvalid) as invalid:
        services.guest_bulk_create(
            event=event, rows=[*rows(1), {"first_name": "A", "last_name": "", "expected_guests": 0}], acting_user=owner
        )

    assert set(invalid.value.row_errors) == {1}
    assert set(invalid.value.row_errors[1]) == {"last_name", "expected_guests"}
    assert not Guest.objects.exists()


def test_bulk_codes_avoid_codes_already_taken(owner, event, other_guest, monkeypatch):
    """The first code drawn is another guest's, the third repeats the second: both are drawn again."""
    draws = iter([other_guest.code, "BBBBBBBB", "BBBBBBBB", "CCCCCCCC", "DDDDDDDD", "EEEEEEEE"])
    monkeypatch.setattr(services, "generate_code", lambda: next(draws))

    guests = services.guest_bulk_create(event=event, rows=rows(3), acting_user=owner)

    codes = {g.code for g in Guest.objects.for_event(event)}
    assert codes == {g.code for g in guests} == {"BBBBBBBB", "CCCCCCCC", "DDDDDDDD"}
    other_guest.refresh_from_db()
    assert other_guest.code not in codes


def test_bulk_codes_survive_a_concurrent_insert_of_the_same_code(owner, event, monkeypatch):
    """A code taken between the check and the INSERT: the unique index refuses it, the rows get new codes."""
    taken_codes = services._taken_codes
    checks = []

    def check_then_lose_the_race(codes):
        codes = list(codes)
        checks.append(codes)
        if len(checks) == 1:
            # Another request inserts a guest with our first code right after our check.
            GuestFactory(event=EventFactory(tenant=event.tenant), code=codes[0])
            return set()
        return taken_codes(codes)

    monkeypatch.setattr(services, "_taken_codes", check_then_lose_the_race)

    guests = services.guest_bulk_create(event=event, rows=rows(3), acting_user=owner)

    assert len(checks) == 2
    assert Guest.objects.for_event(event).count() == 3
    all_codes = list(Guest.objects.values_list("code", flat=True))
    assert len(all_codes) == len(set(all_codes)) == 4
    assert {g.code for g in guests} == set(Guest.objects.for_event(event).values_list("code", flat=True))
    assert AuditLog.objects.filter(action="guest.bulk_created").count() == 1


def test_bulk_insert_failing_for_another_reason_is_not_retried(owner, event, monkeypatch):
    monkeypatch.setattr(services, "_taken_codes", lambda codes: set())

    def insert_fails(objs, **kwargs):
        raise IntegrityError("some other constraint")

    monkeypatch.setattr(Guest.objects, "bulk_create", insert_fails)

    with pytest.raises(IntegrityError):
        services.guest_bulk_create(event=event, rows=rows(2), acting_user=owner)
    assert not AuditLog.objects.exists()


# --- one guest -------------------------------------------------------------------------------------


def test_read_guest_with_the_household(viewer_api, household):
    anna, lisa = household

    response = viewer_api.get(guest_url(anna))

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(anna.pk)
    assert body["code"] == anna.code
    assert body["group_id"] == str(anna.group_id)
    assert body["group_members"] == [
        {"id": str(lisa.pk), "first_name": "Lisa", "last_name": "Müller", "status": "pending", "num_guests": 0}
    ]


def test_guest_of_another_event_is_404_under_this_event(owner_api, tenant, event, other_guest):
    same_org_guest = GuestFactory(event=EventFactory(tenant=tenant))

    assert owner_api.get(f"/api/v1/events/{event.pk}/guests/{same_org_guest.pk}").status_code == 404
    assert owner_api.get(f"/api/v1/events/{event.pk}/guests/{other_guest.pk}").status_code == 404
    assert owner_api.get(f"/api/v1/events/{event.pk}/guests/{uuid.uuid4()}").status_code == 404


def test_update_guest(owner_api, owner, household):
    anna, _lisa = household

    response = owner_api.patch(guest_url(anna), {"dietary": "vegan", "expected_guests": 2}, format="json")

    assert response.status_code == 200, response.content
    anna.refresh_from_db()
    assert (anna.dietary, anna.expected_guests, anna.first_name) == ("vegan", 2, "Anna")
    assert response.json()["dietary"] == "vegan"
    assert AuditLog.objects.get(action="guest.updated").data == {"fields": ["expected_guests", "dietary"]}


@pytest.mark.parametrize(
    "body",
    [
        {"last_name": ""},
        {"last_name": None},
        {"expected_guests": -1},
        {"num_guests": 4},
        {"group_id": "5c6f2ad1-6b4e-4f0e-9d55-1f3c2a7b9e10"},
        {"answers": {"meal": "Fish"}},
    ],
    ids=str,
)
def test_update_guest_refuses_malformed_fields(owner_api, household, snapshot, body):
    anna, _lisa = household
    before = snapshot()

    assert errors_of(owner_api.patch(guest_url(anna), body, format="json"))
    assert snapshot() == before


def test_delete_guest(owner_api, household):
    anna, lisa = household

    response = owner_api.delete(guest_url(anna))

    assert response.status_code == 204
    assert list(Guest.objects.all()) == [lisa]
    assert AuditLog.objects.get(action="guest.deleted").data == {"name": "Anna Müller"}
    assert owner_api.delete(guest_url(anna)).status_code == 404


def test_regenerate_code(owner_api, household):
    anna, _lisa = household
    old_code = anna.code

    response = owner_api.post(guest_url(anna, "/regenerate-code"))

    assert response.status_code == 200
    anna.refresh_from_db()
    assert anna.code != old_code
    assert response.json()["code"] == anna.code
    assert AuditLog.objects.filter(action="guest.code_regenerated", object_id=anna.pk).exists()


# --- households ------------------------------------------------------------------------------------


def test_connect_guests_into_a_household(owner_api, event, household):
    anna, lisa = household
    carl = GuestFactory(event=event, first_name="Carl")

    response = owner_api.post(groups_url(event), {"guests": [str(carl.pk), str(anna.pk)]}, format="json")

    assert response.status_code == 200, response.content
    body = response.json()
    assert body["group_id"] == str(anna.group_id)  # the existing household is kept
    assert {m["id"] for m in body["members"]} == {str(anna.pk), str(lisa.pk), str(carl.pk)}
    carl.refresh_from_db()
    assert carl.group_id == anna.group_id


@pytest.mark.parametrize(
    "make_body",
    [
        lambda anna, other: {"guests": [str(anna.pk)]},
        lambda anna, other: {"guests": [str(anna.pk), str(anna.pk)]},
        lambda anna, other: {"guests": [str(anna.pk), str(other.pk)]},
        lambda anna, other: {"guests": [str(anna.pk), str(uuid.uuid4())]},
        lambda anna, other: {"guests": [str(anna.pk), "not-a-uuid"]},
        lambda anna, other: {"guests": [str(anna.pk), 12345]},
        lambda anna, other: {"guests": str(anna.pk)},
        lambda anna, other: {"guests": [str(uuid.uuid4()) for _ in range(101)]},
        lambda anna, other: {"guests": [str(anna.pk), str(other.pk)], "group_id": str(uuid.uuid4())},
    ],
    ids=["one", "twice the same", "another org's guest", "unknown", "bad uuid", "number", "not a list", "101", "extra"],
)
def test_connect_refuses_anything_but_two_or_more_guests_of_this_event(
    owner_api, event, household, other_guest, snapshot, make_body
):
    before = snapshot()

    assert errors_of(owner_api.post(groups_url(event), make_body(household[0], other_guest), format="json"))
    assert snapshot() == before


def test_connect_error_names_the_rule(owner_api, event, household, other_guest):
    body = {"guests": [str(household[0].pk), str(other_guest.pk)]}

    assert errors_of(owner_api.post(groups_url(event), body, format="json")) == {
        "guests": ["Choose at least two guests of this event."]
    }


def test_leave_group(owner_api, household):
    anna, lisa = household

    response = owner_api.post(guest_url(anna, "/leave-group"))

    assert response.status_code == 200
    assert response.json()["group_id"] is None
    anna.refresh_from_db()
    lisa.refresh_from_db()
    assert anna.group_id is None
    assert lisa.group_id is not None


# --- isolation: viewers, other organizations, guests -----------------------------------------------


def _reads(anna):
    event_id = anna.event_id
    return [
        ("get", f"/api/v1/events/{event_id}/guests", None),
        ("get", guest_url(anna), None),
    ]


def _writes(anna, lisa):
    event_id = anna.event_id
    return [
        ("post", f"/api/v1/events/{event_id}/guests", {"first_name": "Intruder", "last_name": "X"}),
        ("post", f"/api/v1/events/{event_id}/guests/bulk", {"guests": rows(2)}),
        ("patch", guest_url(anna), {"last_name": "Changed"}),
        ("delete", guest_url(anna), None),
        ("post", guest_url(anna, "/regenerate-code"), None),
        ("post", guest_url(anna, "/leave-group"), None),
        ("post", f"/api/v1/events/{event_id}/groups", {"guests": [str(anna.pk), str(lisa.pk)]}),
    ]


WRITE_NAMES = ["create", "bulk", "update", "delete", "regenerate-code", "leave-group", "connect"]


@pytest.mark.parametrize("index", range(len(WRITE_NAMES)), ids=WRITE_NAMES)
def test_viewer_cannot_change_guests(viewer_api, household, snapshot, index):
    method, url, body = _writes(*household)[index]
    before = snapshot()

    response = getattr(viewer_api, method)(url, body, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert snapshot() == before


@pytest.mark.parametrize("index", range(len(WRITE_NAMES) + 2), ids=[*WRITE_NAMES, "list", "read"])
def test_another_organizations_guests_do_not_exist(stranger_api, household, snapshot, index):
    method, url, body = [*_writes(*household), *_reads(household[0])][index]
    before = snapshot()

    response = getattr(stranger_api, method)(url, body, format="json")

    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Not found."}
    assert snapshot() == before


def test_another_organizations_guest_cannot_be_pulled_in_through_my_event(owner_api, event, other_guest, snapshot):
    before = snapshot()

    for method, suffix in [("get", ""), ("patch", ""), ("delete", ""), ("post", "/regenerate-code")]:
        url = f"/api/v1/events/{event.pk}/guests/{other_guest.pk}{suffix}"
        assert getattr(owner_api, method)(url, {"last_name": "Mine"}, format="json").status_code == 404
    assert snapshot() == before


@pytest.mark.parametrize("index", range(len(WRITE_NAMES) + 2), ids=[*WRITE_NAMES, "list", "read"])
def test_guests_and_anonymous_callers_are_refused(guest_api, household, snapshot, index):
    method, url, body = [*_writes(*household), *_reads(household[0])][index]
    before = snapshot()

    assert getattr(api_client(), method)(url, body, format="json").status_code == 401
    assert getattr(guest_api, method)(url, body, format="json").status_code == 403
    assert snapshot() == before

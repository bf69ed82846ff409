"""Automated tenant-isolation sweep over every operation of the OpenAPI schema.

Nothing here lists endpoints by hand: the operations come from the generated
schema (the same document /api/schema/ serves), each is classified by its
view's permission classes, and its path is filled with organization A's
objects. Then every kind of caller that must not reach A's data calls it:

    no token                        -> 401
    a guest (of A's event, of A's other event, of B's event) on an organizer endpoint -> 403
    B's owner                       -> 404 (another organization's object does not exist for them)
    A's viewer, on a write          -> 403
    A's owner with ids mixed across events/organizations -> 404

with a valid body (so that a missing check would succeed, not fail
validation) and with an invalid one (authorization is decided before
validation, so the answer must be the same). Each refused call must leave the
database exactly as it was and must not contain any of A's names, codes or
event names. A's owner (and A's viewer, for reads) get 2xx on the same calls,
so the sweep is known to be able to fail.

An operation the sweep cannot classify or fill fails
`test_every_operation_is_swept`: new endpoints cannot slip through.
"""

from __future__ import annotations

import json
import re

import jwt
import pytest
from django.test import Client
from django.urls import get_resolver

from tests.api.sweep_fixtures import (
    GUEST,
    ID_PARAMS,
    INVALID_BODY,
    ORGANIZER,
    PUBLIC,
    VALID_BODIES,
    Operation,
    auth_headers,
    build_world,
    classify,
    db_snapshot,
    example_body,
    example_value,
    operations,
    snapshot_diff,
    snapshot_of_tenant,
    takes_ids,
)
from tests.conftest import PASSWORD

OPERATIONS = operations()


def _params(kind: str):
    return [pytest.param(op, id=op.operation_id or op.label) for op in OPERATIONS if classify(op) == kind]


@pytest.fixture
def world(db):
    return build_world()


def call(op: Operation, values: dict, token: str | None, body=None):
    headers = auth_headers(token)
    if body is None and not op.is_write:
        return Client().generic(op.method, op.url(values), **headers)
    payload = b"" if body is None else json.dumps(body).encode()
    return Client().generic(op.method, op.url(values), payload, content_type="application/json", **headers)


def _describe(response) -> str:
    return f"{response.status_code} {response.content[:300]!r}"


class Sweep:
    """Runs calls that must be refused and collects every way they were not."""

    def __init__(self, world):
        self.world = world
        self.problems: list[str] = []

    def refused(self, op: Operation, who: str, values: dict, expected: int, body, *, label: str = ""):
        before = db_snapshot()
        response = call(op, values, self.world.tokens[who], body)
        after = db_snapshot()
        where = f"{op.label} as {who}{label} ({op.url(values)}, body={body!r})"
        if response.status_code != expected:
            self.problems.append(f"{where}: expected {expected}, got {_describe(response)}")
        text = response.content.decode(errors="replace")
        if leaked := self.world.leaked(text):
            self.problems.append(f"{where}: response shows A's data {leaked}: {text[:300]}")
        if after != before:
            self.problems.append(f"{where}: the database changed: {snapshot_diff(before, after)}")
        if 400 <= response.status_code < 500 and "code" not in _json(response):
            self.problems.append(f"{where}: error without a `code`: {text[:200]}")
        return response

    def check(self):
        assert not self.problems, f"{len(self.problems)} problem(s):\n" + "\n".join(self.problems)


def _json(response) -> dict:
    try:
        data = response.json()
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _bodies(op: Operation, world, values: dict) -> list[tuple[str, object]]:
    if not op.is_write:
        return [("", None)]
    return [(" [valid body]", example_body(op, world, values)), (" [invalid body]", INVALID_BODY)]


def _foreign_values(world) -> dict:
    """For each id parameter: objects that are not organization A's event/guest of the path."""
    return {
        "org_slug": [world.tenant_b.slug],
        "event_id": [world.event_a2.pk, world.event_b.pk],
        "guest_id": [world.sibling_guest.pk, world.guest_b.pk],
    }


# --- coverage ------------------------------------------------------------------------------------


def _api_routes() -> set[tuple[str, str]]:
    """(METHOD, /api/v1/path/{param}) for every view the URL resolver routes under /api/v1/."""
    found = set()

    def walk(patterns, prefix):
        for pattern in patterns:
            route = prefix + str(pattern.pattern)
            if hasattr(pattern, "url_patterns"):
                walk(pattern.url_patterns, route)
                continue
            if not route.startswith("api/v1/"):
                continue
            path = "/" + route.replace("^", "").replace("$", "")
            path = re.sub(r"<(?:\w+:)?(\w+)>", r"{\1}", path)
            cls = getattr(pattern.callback, "cls", None)
            methods = getattr(pattern.callback, "actions", None) or {}
            if cls is None:
                found.add(("?", path))  # a plain Django view: not in the schema, not swept
                continue
            names = methods.keys() if methods else [m for m in cls.http_method_names if hasattr(cls, m)]
            found.update((m.upper(), path) for m in names if m not in ("options", "head"))

    walk(get_resolver().url_patterns, "")
    return found


def test_every_operation_is_swept(client):
    """Each operation of the schema is classified and fillable; the schema lists every routed API view."""
    assert {op.operation_id for op in OPERATIONS} >= {"guest_login", "rsvp_read", "rsvp_answer", "organizer_token"}
    problems = []
    for op in OPERATIONS:
        kind = classify(op)
        if kind is None:
            problems.append(f"{op.label}: neither public (AllowAny, no authentication), IsGuest nor IsOrganizer")
        elif kind == ORGANIZER and not set(op.params) <= set(ID_PARAMS):
            problems.append(f"{op.label}: path parameters {op.params} the sweep cannot fill (knows {ID_PARAMS})")
        elif kind == GUEST and op.params:
            problems.append(f"{op.label}: a guest operation with path parameters needs its own sweep cases")
        elif kind == PUBLIC and op.operation_id not in PUBLIC_PROBES:
            problems.append(f"{op.label}: a public operation needs probes in PUBLIC_PROBES")
        if not op.operation_id:
            problems.append(f"{op.label}: no operationId")
    schema_ops = {(op.method, op.path) for op in OPERATIONS}
    for route in sorted(_api_routes() - schema_ops):
        problems.append(f"{route[0]} {route[1]}: routed under /api/v1/ but missing from the OpenAPI schema")
    stale = set(VALID_BODIES) - {op.operation_id for op in OPERATIONS}
    if stale:
        problems.append(f"VALID_BODIES names operations that no longer exist: {sorted(stale)}")
    assert not problems, "\n".join(problems)

    served = client.get("/api/schema/?format=json")
    assert served.status_code == 200
    served_ops = {
        (method.upper(), path)
        for path, item in served.json()["paths"].items()
        for method in item
        if method in ("get", "put", "post", "patch", "delete")
    }
    assert served_ops == schema_ops


# --- organizer operations ----------------------------------------------------------------------


@pytest.mark.parametrize("op", _params(ORGANIZER))
def test_organizer_operation_refuses_everyone_outside_organization_a(world, op):
    sweep = Sweep(world)
    values_a = world.values_a
    callers = [
        ("anonymous", 401),
        ("guest_a", 403),
        ("guest_a_other_event", 403),
        ("guest_b", 403),
        ("owner_b", 404),
    ]
    if op.is_write:
        callers.append(("viewer_a", 403))
    for label, body in _bodies(op, world, values_a):
        for who, expected in callers:
            sweep.refused(op, who, values_a, expected, body, label=label)

    # Ids mixed across events and organizations: the other object does not exist for this path.
    id_params = [p for p in op.params if p in ID_PARAMS]
    if len(id_params) > 1:
        for param in id_params:
            for foreign in _foreign_values(world)[param]:
                mixed = {**values_a, param: foreign}
                for label, body in _bodies(op, world, mixed):
                    sweep.refused(op, "owner_a", mixed, 404, body, label=f" with {param}={foreign}{label}")
            own_b = {**world.values_b, param: values_a[param]}
            for label, body in _bodies(op, world, own_b):
                sweep.refused(op, "owner_b", own_b, 404, body, label=f" on B's path with A's {param}{label}")
    sweep.check()


@pytest.mark.parametrize("op", _params(ORGANIZER))
def test_organization_a_itself_gets_through(world, op):
    """The positive control: the same calls succeed for A's owner (and A's viewer, for reads)."""
    values = world.values_a
    body = example_body(op, world, values)
    callers = ["owner_a"] if op.is_write else ["owner_a", "viewer_a"]
    for who in callers:
        before = db_snapshot()
        response = call(op, values, world.tokens[who], body)
        after = db_snapshot()
        assert 200 <= response.status_code < 300, (
            f"{op.label} as {who} with body {body!r}: {_describe(response)} "
            f"(add a body for {op.operation_id!r} to VALID_BODIES in tests/api/sweep_fixtures.py if it is invalid)"
        )
        if op.is_write:
            assert after != before, f"{op.label}: a successful write changed nothing the snapshot sees"
        else:
            assert after == before, f"{op.label} is a read but changed: {snapshot_diff(before, after)}"
        # Nothing of B's ever shows in A's answers.
        text = response.content.decode(errors="replace")
        for marker in (world.tenant_b.name, world.event_b.name, world.guest_b.code, world.guest_b2.code):
            assert marker not in text, f"{op.label} as {who} shows B's {marker!r}"


@pytest.mark.parametrize(
    "op", [p for p in _params(ORGANIZER) if p.values[0].is_write and takes_ids(p.values[0].request_schema)]
)
def test_ids_of_organization_a_in_a_body_change_nothing_of_a(world, op):
    """B's owner on B's own objects, with A's guest ids wherever the body takes ids: A is untouched."""
    values_b = world.values_b
    body = example_body(op, world, values_b, uuids=world.a_guest_ids_for_bodies)
    before = snapshot_of_tenant(db_snapshot(), world.tenant_a.pk)
    response = call(op, values_b, world.tokens["owner_b"], body)
    after = snapshot_of_tenant(db_snapshot(), world.tenant_a.pk)
    assert response.status_code < 500
    assert after == before, f"{op.label} with A's ids {body!r} changed A: {snapshot_diff(before, after)}"
    assert not world.leaked(response.content.decode(errors="replace")), _describe(response)


# --- guest operations --------------------------------------------------------------------------


@pytest.mark.parametrize("op", _params(GUEST))
def test_guest_operation_refuses_organizers_and_anonymous(world, op):
    sweep = Sweep(world)
    for label, body in _bodies(op, world, {}):
        for who, expected in [("anonymous", 401), ("owner_a", 403), ("viewer_a", 403), ("owner_b", 403)]:
            sweep.refused(op, who, {}, expected, body, label=label)
    sweep.check()


@pytest.mark.parametrize("op", _params(GUEST))
def test_guest_of_another_event_sees_and_changes_only_their_own(world, op):
    """Another event's guest gets their own invitation; A's ids in the body (if it takes ids) change nothing of A."""
    event_a = world.event_a.pk

    def event_a_rows(snapshot):
        return (
            [g for g in snapshot["guests"] if g["event_id"] == event_a],
            [e for e in snapshot["events"] if e["id"] == event_a],
        )

    bodies = [example_body(op, world, {})]
    if op.is_write and takes_ids(op.request_schema):
        injected = example_value(op.request_schema, uuids=list(world.a_guest_ids_for_bodies), full=True)
        bodies += [injected, _all_booleans(injected, True)]
    for who in ("guest_b", "guest_a_other_event"):
        for body in bodies:
            before = db_snapshot()
            response = call(op, {}, world.tokens[who], body)
            after = db_snapshot()
            where = f"{op.label} as {who} with {body!r}"
            assert response.status_code < 500, f"{where}: {_describe(response)}"
            if body is bodies[0]:
                assert 200 <= response.status_code < 300, f"{where}: {_describe(response)}"
            leaked = world.leaked(response.content.decode())
            # A's other event is A's data too, but only its own guest may show.
            allowed = (
                {world.sibling_guest.first_name, world.sibling_guest.last_name, world.sibling_guest.code}
                | {world.event_a2.name, world.sibling_guest.email}
                if who == "guest_a_other_event"
                else set()
            )
            assert set(leaked) <= allowed, f"{where}: shows {set(leaked) - allowed}"
            assert event_a_rows(after) == event_a_rows(before), f"{where}: {snapshot_diff(before, after)}"


def _all_booleans(value, flag: bool):
    if isinstance(value, dict):
        return {key: _all_booleans(item, flag) for key, item in value.items()}
    if isinstance(value, list):
        return [_all_booleans(item, flag) for item in value]
    return flag if isinstance(value, bool) else value


@pytest.mark.parametrize("op", _params(GUEST))
def test_guest_operation_positive_control(world, op):
    response = call(op, {}, world.tokens["guest_a"], example_body(op, world, {}))
    assert 200 <= response.status_code < 300, _describe(response)


# --- public operations -------------------------------------------------------------------------


def _claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def _login_probes(w):
    return [
        ("A's code, wrong last name", {"code": w.anna.code, "last_name": "Nobody"}, 401),
        ("B's code, A's last name", {"code": w.guest_b.code, "last_name": w.anna.last_name}, 401),
        ("A's code, last name of A's other guest", {"code": w.anna.code, "last_name": w.carl.last_name}, 401),
    ]


def _token_probes(w):
    return [
        ("A owner's email, wrong password", {"email": w.owner_a.email, "password": "wrong password"}, 401),
        ("unknown email", {"email": "nobody@example.com", "password": PASSWORD}, 401),
    ]


def _refresh_probes(w):
    return [
        ("an access token as refresh", {"refresh": w.tokens["owner_a"]}, 401),
        ("a guest token as refresh", {"refresh": w.tokens["guest_a"]}, 401),
        ("garbage", {"refresh": "not.a.token"}, 401),
    ]


# operation_id -> function(world) -> [(description, body, expected status)]: calls that must fail
# without a trace. Each public operation also gets the positive check in test_public_operation_succeeds.
PUBLIC_PROBES = {
    "guest_login": _login_probes,
    "organizer_token": _token_probes,
    "organizer_token_refresh": _refresh_probes,
}


@pytest.mark.parametrize("op", _params(PUBLIC))
def test_public_operation_refuses_wrong_credentials_without_a_trace(world, op):
    sweep = Sweep(world)
    for description, body, expected in PUBLIC_PROBES[op.operation_id](world):
        sweep.refused(op, "anonymous", {}, expected, body, label=f" [{description}]")
    sweep.check()


def test_organizer_tokens_list_only_the_callers_organizations(world, client):
    response = client.post(
        "/api/v1/auth/token", {"email": world.owner_b.email, "password": PASSWORD}, content_type="application/json"
    )
    assert response.status_code == 200
    for token in (response.json()["access"], response.json()["refresh"]):
        assert set(_claims(token)["orgs"]) == {str(world.tenant_b.pk)}
    refreshed = client.post(
        "/api/v1/auth/token/refresh", {"refresh": response.json()["refresh"]}, content_type="application/json"
    )
    assert refreshed.status_code == 200
    assert set(_claims(refreshed.json()["access"])["orgs"]) == {str(world.tenant_b.pk)}
    assert not world.leaked(refreshed.content.decode() + response.content.decode())


def test_guest_login_token_names_only_that_guest(world, client):
    response = client.post(
        "/api/v1/auth/guest-login",
        {"code": world.guest_b.code, "last_name": world.guest_b.last_name},
        content_type="application/json",
    )
    assert response.status_code == 200
    claims = _claims(response.json()["access"])
    assert (claims["sub"], claims["event_id"], claims["tenant_id"]) == (
        str(world.guest_b.pk),
        str(world.event_b.pk),
        str(world.tenant_b.pk),
    )
    assert not world.leaked(response.content.decode())


# --- the sweep can see a leak --------------------------------------------------------------------


def test_the_leak_detector_sees_organization_a_in_its_own_answers(world):
    """A's rightful callers do get A's names back, so their absence elsewhere means something."""
    seen = set()
    for op in OPERATIONS:
        if op.is_write:
            continue
        kind = classify(op)
        who = {ORGANIZER: "owner_a", GUEST: "guest_a"}.get(kind)
        if who:
            seen.update(world.leaked(call(op, world.values_a, world.tokens[who]).content.decode()))
    assert {world.anna.first_name, world.event_a.name} <= seen

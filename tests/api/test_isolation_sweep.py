"""Automated tenant-isolation sweep over every operation of the OpenAPI schema.

Nothing here lists endpoints by hand: the operations come from the generated
schema (the same document /api/schema/ serves), each is classified by its
view's permission classes, and its path is filled with organization A's
objects. Then every kind of caller that must not reach A's data calls it:

    no token                        -> 401
    a guest (of A's event, of A's other event, of B's event) on an organizer endpoint -> 403
    B's owner                       -> 404 (another organization's object does not exist for them)
    A's viewer, on a write          -> 403
    A's door staff, on a write other than a check-in -> 403
    A's owner with ids mixed across events/organizations -> 404

with a valid body (so that a missing check would succeed, not fail
validation) and with an invalid one (authorization is decided before
validation, so the answer must be the same). Each refused call must leave the
database exactly as it was and must not contain any of A's names, codes or
event names. A's owner (and A's viewer and door staff, for reads; door staff
for check-ins) get 2xx on the same calls, so the sweep is known to be able to fail.

Public operations (AllowAny) are probed with calls that must fail without a
trace (PUBLIC_PROBES: drafts, other events, other organizations' ticket types)
and get a positive control (PUBLIC_SUCCESS). One that still reads a token when
one is sent is probed again with the tokens of everyone who is not A's
organizer: a token must never open more than no token does.

An operation the sweep cannot classify or fill fails
`test_every_operation_is_swept`: new endpoints cannot slip through.
"""

from __future__ import annotations

import json
import re
import uuid

import jwt
import pytest
from django.test import Client
from django.urls import get_resolver

from tenants.tokens import organizer_token_pair
from tests.api.sweep_fixtures import (
    FOREIGN_BODIES,
    GUEST,
    ID_PARAMS,
    INVALID_BODY,
    ORGANIZER,
    PREPARE,
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
    prepare,
    reads_tokens,
    snapshot_diff,
    snapshot_of_tenant,
    takes_ids,
)
from tests.conftest import PASSWORD
from tests.factories import TicketTypeFactory

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
        "ticket_type_id": [world.draft_type_a.pk, world.type_b.pk],
        "order_id": [world.order_b.pk],
        "change_request_id": [world.change_request_a2.pk, world.change_request_b.pk],
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
            problems.append(f"{op.label}: neither public (AllowAny), IsGuest nor IsOrganizer")
        elif kind == ORGANIZER and not set(op.params) <= set(ID_PARAMS):
            problems.append(f"{op.label}: path parameters {op.params} the sweep cannot fill (knows {ID_PARAMS})")
        elif kind == GUEST and op.params:
            problems.append(f"{op.label}: a guest operation with path parameters needs its own sweep cases")
        elif kind == PUBLIC and not {op.operation_id} <= set(PUBLIC_PROBES) & set(PUBLIC_SUCCESS):
            problems.append(f"{op.label}: a public operation needs probes in PUBLIC_PROBES and PUBLIC_SUCCESS")
        if not op.operation_id:
            problems.append(f"{op.label}: no operationId")
    schema_ops = {(op.method, op.path) for op in OPERATIONS}
    for route in sorted(_api_routes() - schema_ops):
        problems.append(f"{route[0]} {route[1]}: routed under /api/v1/ but missing from the OpenAPI schema")
    for name, table in [("VALID_BODIES", VALID_BODIES), ("FOREIGN_BODIES", FOREIGN_BODIES), ("PREPARE", PREPARE)]:
        if stale := set(table) - {op.operation_id for op in OPERATIONS}:
            problems.append(f"{name} names operations that no longer exist: {sorted(stale)}")
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
    prepare(op, world)
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
        if not op.is_check_in:
            callers.append(("door_a", 403))
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


def _rightful_callers(op: Operation) -> list[str]:
    if not op.is_write:
        return ["owner_a", "viewer_a", "door_a"]
    return ["owner_a", "door_a"] if op.is_check_in else ["owner_a"]


def _rightful_params():
    # One test per caller: each starts from its own database, so no write needs rolling back
    # (on MongoDB nothing could roll it back: Django's atomic() opens no transaction there).
    return [
        pytest.param(p.values[0], who, id=f"{p.id}-{who}")
        for p in _params(ORGANIZER)
        for who in _rightful_callers(p.values[0])
    ]


@pytest.mark.parametrize(("op", "who"), _rightful_params())
def test_organization_a_itself_gets_through(world, op, who):
    """The positive control: the same calls succeed for A's owner (and A's viewer and door staff, for reads)."""
    prepare(op, world)
    values = world.values_a
    body = example_body(op, world, values)
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
    b_markers = [world.tenant_b.name, world.event_b.name, world.guest_b.code, world.guest_b2.code]
    b_markers += [world.type_b.name, world.order_b.buyer_email] + [t.code for t in world.tickets_b]
    for marker in b_markers:
        assert marker not in text, f"{op.label} as {who} shows B's {marker!r}"


@pytest.mark.parametrize(
    "op",
    [
        p
        for p in _params(ORGANIZER)
        if p.values[0].is_write
        and (takes_ids(p.values[0].request_schema) or p.values[0].operation_id in FOREIGN_BODIES)
    ],
)
def test_ids_of_organization_a_in_a_body_change_nothing_of_a(world, op):
    """B's owner on B's own objects, with A's guest ids (or A's ticket codes) in the body: A is untouched."""
    prepare(op, world)
    values_b = world.values_b
    if op.operation_id in FOREIGN_BODIES:
        body = FOREIGN_BODIES[op.operation_id](world)
    else:
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
    prepare(op, world)
    sweep = Sweep(world)
    for label, body in _bodies(op, world, {}):
        for who, expected in [("anonymous", 401), ("owner_a", 403), ("viewer_a", 403), ("owner_b", 403)]:
            sweep.refused(op, who, {}, expected, body, label=label)
    sweep.check()


@pytest.mark.parametrize("op", _params(GUEST))
def test_guest_of_another_event_sees_and_changes_only_their_own(world, op):
    """Another event's guest gets their own invitation; A's ids in the body (if it takes ids) change nothing of A."""
    prepare(op, world)
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
                | {world.event_a2.name, world.sibling_guest.email, world.change_request_a2.message}
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
    prepare(op, world)
    response = call(op, {}, world.tokens["guest_a"], example_body(op, world, {}))
    assert 200 <= response.status_code < 300, _describe(response)


# --- public operations -------------------------------------------------------------------------


def _claims(token: str) -> dict:
    return jwt.decode(token, options={"verify_signature": False})


def _login_probes(w):
    return [
        ("A's code, wrong last name", {}, {"code": w.anna.code, "last_name": "Nobody"}, 401),
        ("B's code, A's last name", {}, {"code": w.guest_b.code, "last_name": w.anna.last_name}, 401),
        ("A's code, last name of A's other guest", {}, {"code": w.anna.code, "last_name": w.carl.last_name}, 401),
    ]


def _token_probes(w):
    return [
        ("A owner's email, wrong password", {}, {"email": w.owner_a.email, "password": "wrong password"}, 401),
        ("unknown email", {}, {"email": "nobody@example.com", "password": PASSWORD}, 401),
    ]


def _refresh_probes(w):
    return [
        ("an access token as refresh", {}, {"refresh": w.tokens["owner_a"]}, 401),
        ("a guest token as refresh", {}, {"refresh": w.tokens["guest_a"]}, 401),
        ("garbage", {}, {"refresh": "not.a.token"}, 401),
    ]


def _ticket_type_list_probes(w):
    return [
        ("A's draft ticketed event", {"event_id": w.draft_event_a.pk}, None, 404),
        ("A's invite-only event", {"event_id": w.event_a2.pk}, None, 404),
        ("no such event", {"event_id": uuid.uuid4()}, None, 404),
    ]


def _checkout_body(ticket_type, **extra) -> dict:
    return {
        "items": [{"ticket_type": str(ticket_type.pk), "quantity": 1}],
        "buyer": {"name": "Sweepy Buyer", "email": "sweepy@example.com"},
        **extra,
    }


def _checkout_probes(w):
    on_sale = {"event_id": w.event_a.pk}
    return [
        ("A's draft ticketed event", {"event_id": w.draft_event_a.pk}, _checkout_body(w.draft_type_a), 404),
        ("A's invite-only event", {"event_id": w.event_a2.pk}, _checkout_body(w.spare_type_a), 404),
        ("B's ticket type on A's event", on_sale, _checkout_body(w.type_b), 400),
        ("A's draft event's type on A's event", on_sale, _checkout_body(w.draft_type_a), 400),
        ("A's hidden type without its code", on_sale, _checkout_body(w.hidden_type_a), 400),
        ("A's hidden type, a wrong code", on_sale, _checkout_body(w.hidden_type_a, access_code="BILBY"), 400),
        ("an unknown field", on_sale, _checkout_body(w.spare_type_a, seat_upgrade=True), 400),
    ]


def _waitlist_body(ticket_type, **extra) -> dict:
    return {"ticket_type": str(ticket_type.pk), "email": "sweepy@example.com", **extra}


def _waitlist_probes(w):
    on_sale = {"event_id": w.event_a.pk}
    return [
        ("A's draft ticketed event", {"event_id": w.draft_event_a.pk}, _waitlist_body(w.draft_type_a), 404),
        ("A's invite-only event", {"event_id": w.event_a2.pk}, _waitlist_body(w.spare_type_a), 404),
        ("B's ticket type on A's event", on_sale, _waitlist_body(w.type_b), 400),
        ("A's draft event's type on A's event", on_sale, _waitlist_body(w.draft_type_a), 400),
        ("A's hidden type without its code", on_sale, _waitlist_body(w.hidden_type_a), 400),
        ("A's hidden type, a wrong code", on_sale, _waitlist_body(w.hidden_type_a, access_code="BILBY"), 400),
        ("an unknown field", on_sale, _waitlist_body(w.spare_type_a, seat_upgrade=True), 400),
    ]


def _waitlist_success(w):
    """A sold-out type of A's event (created here: the world's types all have seats), joined without a token."""
    sold_out = TicketTypeFactory(event=w.event_a, name="Quokka Sold Out", capacity=0)
    return {"event_id": w.event_a.pk}, _waitlist_body(sold_out)


# operation_id -> function(world) -> [(description, path values, body, expected status)]: calls that must
# fail without a trace. Each public operation also gets the positive check in test_public_operation_succeeds.
PUBLIC_PROBES = {
    "guest_login": _login_probes,
    "organizer_token": _token_probes,
    "organizer_token_refresh": _refresh_probes,
    "organizer_logout": _refresh_probes,
    "ticket_type_list": _ticket_type_list_probes,
    "checkout_start": _checkout_probes,
    "waitlist_join": _waitlist_probes,
}

# operation_id -> function(world) -> (path values, body): a call that succeeds without a token.
PUBLIC_SUCCESS = {
    "guest_login": lambda w: ({}, {"code": w.anna.code, "last_name": w.anna.last_name}),
    "organizer_token": lambda w: ({}, {"email": w.owner_a.email, "password": PASSWORD}),
    "organizer_token_refresh": lambda w: ({}, {"refresh": organizer_token_pair(w.owner_a)["refresh"]}),
    "organizer_logout": lambda w: ({}, {"refresh": organizer_token_pair(w.owner_a)["refresh"]}),
    "ticket_type_list": lambda w: ({"event_id": w.event_a.pk}, None),
    "checkout_start": lambda w: ({"event_id": w.event_a.pk}, _checkout_body(w.spare_type_a)),
    "waitlist_join": _waitlist_success,
}

# Tokens of callers who are not organizers of A: on a public operation that reads tokens, each
# must get exactly what no token gets.
NOT_A_ORGANIZERS = ("owner_b", "guest_a", "guest_a_other_event", "guest_b")


@pytest.mark.parametrize("op", _params(PUBLIC))
def test_public_operation_refuses_wrong_credentials_without_a_trace(world, op):
    sweep = Sweep(world)
    callers = ["anonymous", *NOT_A_ORGANIZERS] if reads_tokens(op) else ["anonymous"]
    for description, values, body, expected in PUBLIC_PROBES[op.operation_id](world):
        for who in callers:
            sweep.refused(op, who, values, expected, body, label=f" [{description}]")
    sweep.check()


@pytest.mark.parametrize("op", _params(PUBLIC))
def test_public_operation_succeeds(world, op):
    """The positive control of the probes: the operation does answer its rightful public caller."""
    values, body = PUBLIC_SUCCESS[op.operation_id](world)
    response = call(op, values, None, body)
    assert 200 <= response.status_code < 300, _describe(response)
    text = response.content.decode(errors="replace")
    # Only what the public may see: no organizer's counters, nothing hidden or from a draft, nothing of B's.
    hidden = {world.hidden_type_a.name, world.hidden_type_a.access_code, world.draft_type_a.name}
    hidden |= {world.draft_event_a.name, world.type_b.name, world.order_a.buyer_email}
    assert not [marker for marker in hidden if marker in text], text[:300]
    assert '"sold"' not in text and '"capacity"' not in text, text[:300]


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

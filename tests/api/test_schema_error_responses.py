"""The schema documents the refusals the API really answers before a handler runs: 401, 403, 429.

Every operation of the generated schema (the document /api/schema/ serves) is called as each
kind of caller it must refuse: without a token, with a token that is no token, with a token of
the other kind (a guest's on an organizer endpoint, an organizer's on a guest endpoint), as
another organization's owner, and, on a change, as a viewer and as door staff. The status the
server answers must be the one expected and must be documented for that operation, in the error
envelope's component (`Error`), as schemathesis' status code check (ST103) expects. Operations
open to anonymous callers must not be documented as needing a token.

The 401/403/429 are added in one place (eventsaas.openapi.AutoSchema, from each view's
authentication, permission and throttle classes); the last tests check it on small views of
their own against what DRF answers for them (a throttle, a permission that admits any token).
"""

from __future__ import annotations

import json

import pytest
from django.test import Client
from django.urls import path
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.renderers import OpenApiJsonRenderer
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny, IsAuthenticated
from rest_framework.response import Response
from rest_framework.test import APIRequestFactory
from rest_framework.throttling import BaseThrottle
from rest_framework.views import APIView

from eventsaas.openapi import NOT_AUTHENTICATED, PERMISSION_DENIED
from tests.api.sweep_fixtures import (
    GUEST,
    ORGANIZER,
    PUBLIC,
    Operation,
    build_world,
    classify,
    example_body,
    operations,
    reads_tokens,
)

OPERATIONS = operations()
ERROR_SCHEMA = {"$ref": "#/components/schemas/Error"}
NOT_A_TOKEN = "not-a-token"


@pytest.fixture
def world(db):
    return build_world()


def _call(op: Operation, values: dict, token: str | None, body=None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token else {}
    if not op.is_write:
        return Client().generic(op.method, op.url(values), **headers)
    payload = json.dumps(body).encode() if body is not None else b""
    return Client().generic(op.method, op.url(values), payload, content_type="application/json", **headers)


def _error_problems(op: Operation, status: int) -> list[str]:
    """What is wrong with how `op` documents an error answer `status` (nothing: it is documented well)."""
    documented = op.spec["responses"].get(str(status))
    if documented is None:
        return [f"{op.label}: answers {status}, which its schema does not document"]
    schema = (documented.get("content") or {}).get("application/json", {}).get("schema")
    # A 404's body is the view's to document (a check-in's adds `result`); the refusals are the envelope.
    if status in (401, 403) and schema != ERROR_SCHEMA:
        return [f"{op.label}: {status} is documented with {schema!r}, not the error envelope {ERROR_SCHEMA}"]
    return []


def _refusals(op: Operation, world) -> list[tuple[str, str | None, int]]:
    """(who, token, the status the API answers them) for the callers `op` must refuse."""
    kind = classify(op)
    tokens = world.tokens
    callers = [("no token", None, 401), ("not a token", NOT_A_TOKEN, 401)]
    if kind == ORGANIZER:
        callers += [("a guest", tokens["guest_a"], 403), ("B's owner", tokens["owner_b"], 404)]
        if op.is_write:
            callers.append(("A's viewer", tokens["viewer_a"], 403))
            if not op.is_check_in:
                callers.append(("A's door staff", tokens["door_a"], 403))
    elif kind == GUEST:
        callers += [("an organizer", tokens["owner_a"], 403), ("a viewer", tokens["viewer_a"], 403)]
    return callers


def test_every_operation_is_classified():
    unknown = [op.label for op in OPERATIONS if classify(op) is None]
    assert not unknown, f"cannot tell who may call {unknown} (see tests/api/test_isolation_sweep.py)"
    assert {classify(op) for op in OPERATIONS} == {PUBLIC, GUEST, ORGANIZER}


def test_every_refusal_the_api_answers_is_documented(world):
    """The statuses the API answers to refused callers are the expected ones, and each is in the schema."""
    problems = []
    checked = 0
    for op in OPERATIONS:
        if classify(op) not in (ORGANIZER, GUEST):
            continue
        body = example_body(op, world, world.values_a) if op.is_write else None
        for who, token, expected in _refusals(op, world):
            response = _call(op, world.values_a, token, body)
            checked += 1
            if response.status_code != expected:
                problems.append(f"{op.label} as {who}: expected {expected}, got {response.status_code}")
                continue
            problems += [f"{problem} (as {who})" for problem in _error_problems(op, expected)]
            if "code" not in response.json():
                problems.append(f"{op.label} as {who}: {expected} without the envelope's `code`")
            if expected == 401 and not response.has_header("WWW-Authenticate"):
                problems.append(f"{op.label} as {who}: 401 without WWW-Authenticate")
    assert checked > 100
    assert not problems, f"{len(problems)} problem(s):\n" + "\n".join(problems)


def test_an_operation_that_needs_a_token_documents_401_and_403_with_their_codes():
    for op in OPERATIONS:
        if classify(op) not in (ORGANIZER, GUEST):
            continue
        responses = op.spec["responses"]
        assert "`not_authenticated`" in responses["401"]["description"], op.label
        assert "WWW-Authenticate" in responses["401"]["headers"], op.label
        # The permission class's own message names who the endpoint is for.
        who = "organizers" if classify(op) == ORGANIZER else "guests"
        assert f"This endpoint is for {who}." in responses["403"]["description"], op.label


def test_an_operation_documenting_its_own_403_keeps_its_description():
    archive = next(op for op in OPERATIONS if op.operation_id == "event_archive")
    description = archive.spec["responses"]["403"]["description"]
    assert description.startswith("Viewers can read this organization but not change it; ")
    assert PERMISSION_DENIED in description


def test_operations_open_to_anonymous_callers_gain_no_refusal(world):
    """Login, token, logout, the public ticket list, checkout and the waitlist need no token, and say so."""
    public = [op for op in OPERATIONS if classify(op) == PUBLIC]
    assert {"guest_login", "organizer_token", "ticket_type_list"} <= {op.operation_id for op in public}
    for op in public:
        for status, documented in op.spec["responses"].items():
            description = documented.get("description", "")
            assert NOT_AUTHENTICATED not in description and PERMISSION_DENIED not in description, (op.label, status)
        assert {} in op.spec.get("security", [{}]), op.label
        body = example_body(op, world, world.values_a) if op.is_write else None
        response = _call(op, world.values_a, None, body)
        assert response.status_code < 500, op.label
        if response.status_code == 401:  # a wrong login: documented by the view itself
            assert response.json()["code"] not in ("not_authenticated", "authentication_failed"), op.label
            assert not _error_problems(op, 401)
        if reads_tokens(op):  # a token is still checked when one is sent
            response = _call(op, world.values_a, NOT_A_TOKEN, body)
            assert response.status_code == 401, op.label
            assert not _error_problems(op, 401)


# --- the rules on views of their own ---------------------------------------------------------------


class AlwaysThrottled(BaseThrottle):
    def allow_request(self, request, view):
        return False

    def wait(self):
        return 30


class ThrottledProbeApi(APIView):
    permission_classes = [AllowAny]
    throttle_classes = [AlwaysThrottled]

    @extend_schema(operation_id="throttled_probe", responses={204: None})
    def get(self, request):
        return Response(status=204)


class AnyTokenProbeApi(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(operation_id="any_token_probe", responses={204: None})
    def get(self, request):
        return Response(status=204)


def _probe_schema() -> dict:
    patterns = [
        path("api/v1/throttled-probe", ThrottledProbeApi.as_view()),
        path("api/v1/any-token-probe", AnyTokenProbeApi.as_view()),
    ]
    raw = SchemaGenerator(patterns=patterns).get_schema(request=None, public=True)
    return json.loads(OpenApiJsonRenderer().render(raw, renderer_context={}))


def test_a_throttled_view_documents_the_429_it_answers():
    documented = _probe_schema()["paths"]["/api/v1/throttled-probe"]["get"]["responses"]
    response = ThrottledProbeApi.as_view()(APIRequestFactory().get("/api/v1/throttled-probe"))
    assert response.status_code == 429
    assert response.data["code"] == "throttled"
    assert response["Retry-After"] == "30"
    assert set(documented) == {"204", "429"}  # open to anyone: no 401 or 403
    assert documented["429"]["content"]["application/json"]["schema"] == ERROR_SCHEMA
    assert "Retry-After" in documented["429"]["headers"]


def test_a_view_admitting_any_token_documents_401_and_no_403(world):
    documented = _probe_schema()["paths"]["/api/v1/any-token-probe"]["get"]["responses"]
    assert set(documented) == {"204", "401"}
    view = AnyTokenProbeApi.as_view()
    assert view(APIRequestFactory().get("/api/v1/any-token-probe")).status_code == 401
    for token in (world.tokens["guest_a"], world.tokens["viewer_a"]):
        request = APIRequestFactory().get("/api/v1/any-token-probe", HTTP_AUTHORIZATION=f"Bearer {token}")
        assert view(request).status_code == 204

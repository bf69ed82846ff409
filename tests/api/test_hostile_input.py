"""Bodies built to crash the server get a clear 400 on every JSON operation of the schema, and on the pages.

The operations come from the generated OpenAPI schema (tests/api/sweep_fixtures.py),
so a new endpoint is covered without touching this file. Each is called by the
caller it is meant for (A's owner, a guest of A's event, or nobody), so the body
is really read, not refused before.
"""

import io
import json

import pytest
from django.test import Client, override_settings
from rest_framework.exceptions import ParseError

from eventsaas.parsers import BodyTooLarge, JSONParser
from tests.api.sweep_fixtures import (
    GUEST,
    ORGANIZER,
    PUBLIC,
    auth_headers,
    build_world,
    classify,
    db_snapshot,
    example_body,
    operations,
)

CALLER = {ORGANIZER: "owner_a", GUEST: "guest_a", PUBLIC: "anonymous"}
JSON_OPERATIONS = [op for op in operations() if op.request_schema is not None]
SURROGATES = ["\ud800", "\udfff", "a\udc80b"]


@pytest.fixture
def world(db, settings):
    # A guest's API call is recorded as activity after commit. The tests' transaction never commits on SQL,
    # but on MongoDB on_commit runs at once (ON_COMMIT_AT_ONCE) and would stamp last_access_at: not the
    # body's doing, so "nothing changed" is checked with tracking off on every backend.
    settings.ACTIVITY_TRACKING = False
    return build_world()


def send(op, world, raw: bytes | str, *, who: str | None = None, content_type="application/json"):
    token = world.tokens[who or CALLER[classify(op)]]
    payload = raw.encode() if isinstance(raw, str) else raw
    return Client().generic(
        op.method, op.url(world.values_a), payload, content_type=content_type, **auth_headers(token)
    )


def depth_bomb(levels: int) -> str:
    """About 2 KB of nested arrays (1,000 levels), the size of the reported crash."""
    return "[" * levels + "]" * levels


def assert_error(response, code: str):
    assert response.status_code == 400, (response.status_code, response.content[:300])
    body = response.json()
    assert body["code"] == code, body
    assert set(body) == {"code", "detail"} and body["detail"], body


def test_every_json_operation_is_covered():
    """The list is the schema's: it cannot silently shrink to nothing."""
    assert len(JSON_OPERATIONS) >= 15
    assert {"guest_login", "organizer_token", "organizer_token_refresh", "rsvp_answer", "checkout_start"} <= {
        op.operation_id for op in JSON_OPERATIONS
    }


@pytest.mark.parametrize("op", [pytest.param(op, id=op.operation_id) for op in JSON_OPERATIONS])
def test_a_depth_bomb_is_a_400_on_every_json_operation(world, op):
    before = db_snapshot()
    for bomb in (depth_bomb(1000), depth_bomb(40), '{"a":' * 1000 + "1" + "}" * 1000):
        assert_error(send(op, world, bomb), "parse_error")
    assert db_snapshot() == before
    # Anonymous callers of protected operations are refused before the body is read; never a 500.
    assert send(op, world, depth_bomb(1000), who="anonymous").status_code in (400, 401)


def _with_surrogates(body, surrogate: str):
    """Variants of a valid body: each string value replaced, and an extra key, by text holding `surrogate`."""
    variants = [{**body, surrogate: "x"}] if isinstance(body, dict) else []

    def replace(value, path):
        if isinstance(value, dict):
            for key, item in value.items():
                yield from replace(item, (*path, key))
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from replace(item, (*path, index))
        elif isinstance(value, str):
            yield path

    for path in replace(body, ()):
        variant = json.loads(json.dumps(body))
        target = variant
        for step in path[:-1]:
            target = target[step]
        target[path[-1]] = surrogate
        variants.append(variant)
    if not variants:  # a body of no strings at all: the surrogate as a stray field
        variants.append({surrogate: surrogate})
    return variants


@pytest.mark.parametrize("op", [pytest.param(op, id=op.operation_id) for op in JSON_OPERATIONS])
def test_a_lone_surrogate_anywhere_in_a_body_is_a_400_on_every_json_operation(world, op):
    body = example_body(op, world, world.values_a) or {}
    before = db_snapshot()
    tried = 0
    for surrogate in SURROGATES:
        for variant in _with_surrogates(body, surrogate):
            # json.dumps writes the surrogate as the escape "\ud800", exactly what a client sends.
            assert_error(send(op, world, json.dumps(variant)), "parse_error")
            tried += 1
        # NUL, which PostgreSQL cannot store in text, the same way.
        assert_error(
            send(op, world, json.dumps({**body, "x": "a\x00b"} if isinstance(body, dict) else "\x00")), "parse_error"
        )
    assert tried >= 3
    assert db_snapshot() == before


def test_the_surrogate_is_refused_in_nested_keys_and_list_items_too(world):
    op = next(op for op in JSON_OPERATIONS if op.operation_id == "event_update")
    for body in ({"questions": [{"key": "k", "label": "\ud800", "choices": []}]}, {"a": {"b": [{"\udc00": 1}]}}):
        assert_error(send(op, world, json.dumps(body)), "parse_error")


def test_a_surrogate_written_raw_in_a_utf7_body_is_refused(world):
    op = next(op for op in JSON_OPERATIONS if op.operation_id == "guest_login")
    raw = '{"code": "+2AA-", "last_name": "x"}'.encode("ascii")  # UTF-7 for a lone \ud800
    response = send(op, world, raw, content_type="application/json; charset=utf-7")
    assert response.status_code == 400, response.content


@override_settings(API_MAX_BODY_BYTES=4096)
def test_a_body_over_the_size_limit_is_a_400_without_being_parsed(world):
    op = next(op for op in JSON_OPERATIONS if op.operation_id == "guest_bulk_create")
    big = json.dumps({"guests": [{"first_name": "x" * 100, "last_name": "y"}] * 60})
    assert len(big) > 4096
    response = send(op, world, big)
    assert_error(response, "too_large")
    assert "4096" in response.json()["detail"]


def test_a_body_over_the_default_limits_is_the_apis_400_not_a_page(world):
    """3 MB: past API_MAX_BODY_BYTES and Django's DATA_UPLOAD_MAX_MEMORY_SIZE alike (both 2.5 MiB)."""
    op = next(op for op in JSON_OPERATIONS if op.operation_id == "guest_login")
    response = send(op, world, b"x" * 3_000_000)
    assert_error(response, "too_large")


def test_json_stays_strict(world):
    op = next(op for op in JSON_OPERATIONS if op.operation_id == "guest_login")
    for text in ('{"code": NaN, "last_name": "x"}', '{"code": Infinity}', "{'code': 1}", ""):
        response = send(op, world, text)
        assert response.status_code == 400, text
        assert response.json()["code"] in ("parse_error", "invalid"), text


@override_settings(API_MAX_BODY_BYTES=1024)
def test_the_size_limit_holds_without_a_content_length_too():
    parser = JSONParser()
    with pytest.raises(BodyTooLarge):
        parser.parse(io.BytesIO(b'["' + b"x" * 2000 + b'"]'), parser_context={})
    assert parser.parse(io.BytesIO(b'["ok"]'), parser_context={}) == ["ok"]


def test_depth_limit_is_exact():
    parser = JSONParser()
    assert parser.parse(io.BytesIO(depth_bomb(32).encode()), parser_context={}) is not None
    with pytest.raises(ParseError):
        parser.parse(io.BytesIO(depth_bomb(33).encode()), parser_context={})


def test_schema_documents_the_400_on_every_json_operation():
    missing = [op.label for op in JSON_OPERATIONS if "400" not in op.spec.get("responses", {})]
    assert not missing, f"operations without a documented 400: {missing}"


# --- query strings and form bodies (pages) -----------------------------------------------------------


def _utf7_form(fields: dict) -> bytes:
    return "&".join(f"{key}={value}" for key, value in fields.items()).encode("ascii")


PAGE_FORMS = [
    ("/login/", {"username": "+2AA-", "password": "x"}),
    ("/signup/", {"organization_name": "+2AA-", "email": "a@example.com", "password": "velvet-otter-juggles-42"}),
    ("/password-reset/", {"email": "+2AA-@example.com"}),
    ("/rsvp/", {"code": "+2AA-", "last_name": "x"}),
    ("/admin/login/", {"username": "+2AA-", "password": "x"}),
]


@pytest.mark.django_db
@pytest.mark.parametrize("path,fields", PAGE_FORMS, ids=[path for path, _ in PAGE_FORMS])
def test_a_lone_surrogate_in_a_form_body_is_a_400_on_the_pages(path, fields):
    client = Client()
    response = client.post(path, _utf7_form(fields), content_type="application/x-www-form-urlencoded; charset=utf-7")
    assert response.status_code == 400
    # In a field name too.
    response = client.post(path, b"+2AA-=x", content_type="application/x-www-form-urlencoded; charset=utf-7")
    assert response.status_code == 400
    # NUL in a UTF-8 form.
    response = client.post(path, {**fields, next(iter(fields)): "a\x00b"})
    assert response.status_code == 400


@pytest.mark.django_db
def test_raw_surrogate_bytes_in_a_utf8_form_are_replaced_not_a_crash(owner_client, tenant):
    """UTF-8 has no lone surrogates: the bytes of one decode to replacement characters, which are harmless."""
    response = owner_client.post(
        f"/o/{tenant.slug}/events/new/",
        b"name=%ED%A0%80party&status=draft&starts_at=2031-06-01T18:00&timezone=UTC&language=en&kind=invite_only",
        content_type="application/x-www-form-urlencoded",
    )
    assert response.status_code == 302
    assert owner_client.get(response["Location"]).status_code == 200


@pytest.mark.django_db
def test_a_lone_surrogate_in_a_query_string_is_a_400(world):
    op = next(op for op in operations() if op.operation_id == "guest_list")
    response = Client().get(
        op.url(world.values_a) + "?q=+2AA-",
        CONTENT_TYPE="text/plain; charset=utf-7",
        **auth_headers(world.tokens["owner_a"]),
    )
    assert_error(response, "parse_error")

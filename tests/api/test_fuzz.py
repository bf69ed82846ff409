"""Bounded property-based fuzzing of every API operation with schemathesis.

Requests are generated from the OpenAPI schema (the document /api/schema/
serves), sent in-process to the Django WSGI application and checked for server
errors and for conformance with the schema (status code, content type,
headers and body), with valid data and with data that violates the schema.

schemathesis' negative_data_rejection check is left out on purpose: DRF reads
input leniently where the schema is strict (a number for a text field becomes
text, surrounding spaces are trimmed before the length is checked, an empty
`?flag=` is the default), so it reports those as accepted invalid data.

Path parameters are organization A's real objects and the caller holds the
token the operation is meant for (A's owner, or a guest of A's event), so the
generated bodies and query strings reach the handlers instead of stopping at
a 404. Ids in bodies are often real guests or ticket types, and a `code` is
often a real ticket's (check-in). Each example runs in a savepoint that is
rolled back: a deleted guest or an archived event does not leak into the next
example. On MongoDB nothing is rolled back (tests/support/backends.py,
NO_ROLLBACK): the examples run one after another on the same data, and the
checks are the same.

The run is bounded and reproducible: a fixed number of examples per operation
and generation mode, derandomized, no example database.
"""

from __future__ import annotations

import functools
import os
import traceback
import uuid

import pytest
import schemathesis
from django.core.cache import cache
from django.core.signals import got_request_exception, request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections, transaction
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.api.sweep_fixtures import (
    GUEST,
    ORGANIZER,
    PUBLIC,
    api_schema,
    build_world,
    classify,
    operations,
    prepare,
)

# Examples per operation and generation mode: with 22 operations, 25 keeps the file at
# about a minute on two cores. FUZZ_EXAMPLES=200 searches deeper (about 5 minutes).
MAX_EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", 25))

CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]

CALLER = {ORGANIZER: "owner_a", GUEST: "guest_a", PUBLIC: "anonymous"}

OPERATIONS = operations()


def _with_client_address(app):
    """Werkzeug's test environ has no REMOTE_ADDR, which every real server sets (rate limits key on it)."""

    def wrapped(environ, start_response):
        environ.setdefault("REMOTE_ADDR", "127.0.0.1")
        return app(environ, start_response)

    return wrapped


@functools.cache
def loaded_schema():
    schema = schemathesis.openapi.from_dict(api_schema())
    schema.app = _with_client_address(get_wsgi_application())
    return schema


@pytest.fixture
def world(db):
    return build_world()


@pytest.fixture
def wsgi_in_test_transaction():
    """Keep the test's connection open across WSGI requests, as Django's test client does.

    The real handler closes connections at the end of each request, which would
    end the transaction pytest-django wraps the test in.
    """
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def server_tracebacks():
    """Tracebacks of exceptions the application turned into 500s, to show with a failure."""
    seen: list[str] = []

    def record(sender, request=None, **kwargs):
        seen.append(traceback.format_exc())

    got_request_exception.connect(record, weak=False)
    yield seen
    got_request_exception.disconnect(record)


def _swap_ids(value, draw, ids):
    """`value` with every uuid string replaced by one drawn from `ids`."""
    if isinstance(value, dict):
        return {key: _swap_ids(item, draw, ids) for key, item in value.items()}
    if isinstance(value, list):
        return [_swap_ids(item, draw, ids) for item in value]
    if isinstance(value, str):
        try:
            uuid.UUID(value)
        except ValueError:
            return value
        return draw(st.sampled_from(ids))
    return value


def _modes(operation) -> list[GenerationMode]:
    """Negative data needs something to violate: a body or a query parameter (path values are fixed)."""
    definition = operation.definition.raw
    can_be_wrong = "requestBody" in definition or any(p.get("in") == "query" for p in definition.get("parameters", []))
    return [GenerationMode.POSITIVE, GenerationMode.NEGATIVE] if can_be_wrong else [GenerationMode.POSITIVE]


def fuzz(operation, mode, *, path_parameters, headers, real_ids, real_codes, tracebacks, calls):
    """Run MAX_EXAMPLES generated cases of one operation in one generation mode; `calls` counts statuses."""
    strategy = operation.as_strategy(generation_mode=mode, path_parameters=path_parameters, headers=headers)

    @settings(
        max_examples=MAX_EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy, data=st.data())
    def run(case, data):
        if mode == GenerationMode.POSITIVE and isinstance(case.body, (dict, list)):
            # Ids in a body are real guests: of the path's event, or of any event (B's too), or random.
            ids = data.draw(st.sampled_from([*real_ids, None]))
            if ids:
                case.body = _swap_ids(case.body, data.draw, ids)
            if isinstance(case.body, dict) and isinstance(case.body.get("code"), str) and data.draw(st.booleans()):
                case.body["code"] = data.draw(st.sampled_from(real_codes))
        cache.clear()  # no rate limit carried over from earlier examples
        tracebacks.clear()
        with transaction.atomic():
            try:
                response = case.call()
                calls[response.status_code] = calls.get(response.status_code, 0) + 1
                try:
                    case.validate_response(response, checks=CHECKS)
                except Exception as failure:
                    for trace in tracebacks:
                        failure.add_note(f"Server traceback:\n{trace}")
                    raise
            finally:
                transaction.set_rollback(True)  # the next example starts from the same database

    run()


@pytest.mark.parametrize("op", [pytest.param(op, id=op.operation_id) for op in OPERATIONS])
def test_fuzz_operation(op, world, wsgi_in_test_transaction, server_tracebacks):
    if classify(op) not in CALLER:
        pytest.fail(f"{op.label}: cannot tell who may call it (see test_every_operation_is_swept)")
    operation = loaded_schema()[op.path][op.method]
    token = world.tokens[CALLER[classify(op)]]
    prepare(op, world)  # e.g. answers closed, so that a change request can be asked for
    calls: dict[int, int] = {}
    for mode in _modes(operation):
        fuzz(
            operation,
            mode,
            path_parameters={name: str(value) for name, value in world.values_a.items() if name in op.params},
            headers={"Authorization": f"Bearer {token}"} if token else {},
            real_ids=[
                [str(g.pk) for g in (world.anna, world.lisa, world.carl)],
                [str(g.pk) for g in (world.anna, world.lisa, world.carl, world.sibling_guest, world.guest_b)],
                [str(t.pk) for t in (world.sold_type_a, world.spare_type_a, world.hidden_type_a)],
                [str(t.pk) for t in (world.sold_type_a, world.spare_type_a, world.draft_type_a, world.type_b)],
            ],
            real_codes=[t.code for t in world.tickets_a] + [world.tickets_a[0].display_code, world.tickets_b[0].code],
            tracebacks=server_tracebacks,
            calls=calls,
        )
    # The fuzz reached the handlers: not everything was refused before them.
    if classify(op) != PUBLIC:
        assert any(200 <= status < 300 for status in calls), f"{op.label}: no 2xx among {calls}"

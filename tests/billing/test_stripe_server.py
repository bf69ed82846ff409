"""The fake Stripe API, driven through the real stripe SDK (16.1.0) exactly as the application will use it."""

import json
import threading
import time
import urllib.error
import urllib.request

import pytest
import stripe
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from tests.support import stripe_fixtures
from tests.support.stripe_server import FakeStripe, parse_params

fake_stripe = stripe_fixtures.fake_stripe  # the fixture, made visible to this module's tests


@pytest.fixture
def client(fake_stripe, settings):
    # What the application does (see the note at the top of tests/support/stripe_server.py).
    return stripe.StripeClient(
        settings.STRIPE_SECRET_KEY,
        base_addresses={"api": settings.STRIPE_API_BASE},
        max_network_retries=0,
    )


@pytest.fixture
def no_backoff(monkeypatch):
    """The SDK sleeps 0.5 s-5 s between retries; tests need not."""
    monkeypatch.setattr(stripe.HTTPClient, "INITIAL_DELAY", 0)
    monkeypatch.setattr(stripe.HTTPClient, "MAX_DELAY", 0)


def session_params(**overrides):
    params = {
        "mode": "payment",
        "line_items": [
            {
                "price_data": {"currency": "eur", "unit_amount": 2500, "product_data": {"name": "Early bird"}},
                "quantity": 2,
            },
            {
                "price_data": {"currency": "eur", "unit_amount": 1000, "product_data": {"name": "Workshop"}},
                "quantity": 1,
            },
        ],
        "customer_email": "ada@example.com",
        "client_reference_id": "order-42",
        "metadata": {"order_id": "42", "tenant": "acme"},
        "success_url": "https://shop.example/orders/42/paid?session={CHECKOUT_SESSION_ID}",
        "cancel_url": "https://shop.example/orders/42",
        "expires_at": int(time.time()) + 3600,
    }
    params.update(overrides)
    return params


def paid_session(client, fake, **overrides):
    session = client.v1.checkout.sessions.create(params=session_params(**overrides))
    event = fake.complete(session.id)
    return session, event["data"]["object"]["payment_intent"]


def raw_request(fake, method, path, *, headers=None, body=None):
    request = urllib.request.Request(fake.base_url + path, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


# --- wire format ---------------------------------------------------------------------------------------------------


def test_parse_params_decodes_stripe_form_keys():
    pairs = [
        ("line_items[0][price_data][unit_amount]", "2500"),
        ("line_items[0][quantity]", "2"),
        ("line_items[1][quantity]", "1"),
        ("metadata[order_id]", "42"),
        ("metadata[7]", "seven"),
        ("expand[0]", "line_items"),
        ("expand[]", "payment_intent"),
    ]
    assert parse_params(pairs) == {
        "line_items": [{"price_data": {"unit_amount": "2500"}, "quantity": "2"}, {"quantity": "1"}],
        "metadata": {"order_id": "42", "7": "seven"},
        "expand": ["line_items", "payment_intent"],
    }
    # Digit keys make an array, except in a metadata hash.
    assert parse_params([("metadata[1]", "a"), ("x[0]", "b")]) == {"metadata": {"1": "a"}, "x": ["b"]}


def test_create_and_retrieve_round_trip(client, fake_stripe):
    params = session_params()
    session = client.v1.checkout.sessions.create(params=params)

    assert isinstance(session, stripe.checkout.Session)
    assert session.id.startswith("cs_test_")
    assert session.object == "checkout.session"
    assert session.url == f"{fake_stripe.base_url}/pay/{session.id}"
    assert (session.status, session.payment_status, session.mode) == ("open", "unpaid", "payment")
    assert session.amount_total == 2 * 2500 + 1000
    assert session.currency == "eur"
    assert session.client_reference_id == "order-42"
    assert session.metadata.to_dict() == {"order_id": "42", "tenant": "acme"}
    assert session.expires_at == params["expires_at"]
    assert session.payment_intent is None
    assert session.customer_details.email == "ada@example.com"
    assert session.success_url == params["success_url"]

    # What went over the wire: Stripe's nested form encoding, the key, and an Idempotency-Key on the POST.
    method, path, sent, headers = fake_stripe.requests[-1]
    assert (method, path) == ("POST", "/v1/checkout/sessions")
    assert sent["line_items"][0]["price_data"]["unit_amount"] == "2500"
    assert sent["line_items"][1]["price_data"]["product_data"]["name"] == "Workshop"
    assert sent["metadata"]["order_id"] == "42"
    assert headers["Authorization"] == "Bearer sk_test_fake"
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert headers["Idempotency-Key"]
    assert headers["Stripe-Version"] == stripe.api_version

    fetched = client.v1.checkout.sessions.retrieve(session.id, params={"expand": ["line_items"]})
    assert fake_stripe.requests[-1].params == {"expand": ["line_items"]}
    assert fetched.id == session.id
    assert fetched.amount_total == 6000
    assert fetched.metadata["tenant"] == "acme"
    assert [(item.description, item.quantity, item.amount_total) for item in fetched.line_items.data] == [
        ("Early bird", 2, 5000),
        ("Workshop", 1, 1000),
    ]
    assert fake_stripe.sessions_created == 1


def test_unknown_session_is_resource_missing(client):
    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.checkout.sessions.retrieve("cs_test_nope")
    assert caught.value.http_status == 404
    assert caught.value.code == "resource_missing"
    assert "cs_test_nope" in caught.value.user_message


@pytest.mark.parametrize(
    "line_items, param, code",
    [
        (
            [
                {"price_data": {"currency": "eur", "unit_amount": 100, "product_data": {"name": "A"}}, "quantity": 1},
                {"price_data": {"currency": "usd", "unit_amount": 100, "product_data": {"name": "B"}}, "quantity": 1},
            ],
            "line_items[1][price_data][currency]",
            None,
        ),
        (
            [{"price_data": {"currency": "eur", "unit_amount": -1, "product_data": {"name": "A"}}, "quantity": 1}],
            "line_items[0][price_data][unit_amount]",
            "parameter_invalid_integer",
        ),
        (
            [{"price_data": {"currency": "eur", "unit_amount": "12.5", "product_data": {"name": "A"}}, "quantity": 1}],
            "line_items[0][price_data][unit_amount]",
            "parameter_invalid_integer",
        ),
        (
            [{"price_data": {"currency": "eur", "unit_amount": 100, "product_data": {"name": "A"}}, "quantity": 0}],
            "line_items[0][quantity]",
            "parameter_invalid_integer",
        ),
        (
            [{"price_data": {"currency": "eur", "unit_amount": 100, "product_data": {"name": "A"}}}],
            "line_items[0][quantity]",
            "parameter_missing",
        ),
        (
            [{"price_data": {"currency": "eur", "unit_amount": 100, "product_data": {}}, "quantity": 1}],
            "line_items[0][price_data][product_data][name]",
            "parameter_missing",
        ),
        (
            [{"price_data": {"currency": "eur", "amount": 100, "product_data": {"name": "A"}}, "quantity": 1}],
            "line_items[0][price_data][amount]",
            "parameter_unknown",
        ),
    ],
)
def test_invalid_line_items_are_refused(client, fake_stripe, line_items, param, code):
    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.checkout.sessions.create(params=session_params(line_items=line_items))
    assert caught.value.http_status == 400
    assert caught.value.param == param
    assert caught.value.code == code
    assert caught.value.json_body["error"]["type"] == "invalid_request_error"
    assert fake_stripe.sessions_created == 0


def test_other_invalid_session_params(client, fake_stripe):
    cases = [
        ({"expires_at": int(time.time()) + 60}, "expires_at"),
        ({"expires_at": int(time.time()) + 2 * 86400}, "expires_at"),
        ({"success_url": "not a url"}, "success_url"),
        ({"client_reference_id": ""}, "client_reference_id"),
        ({"customer_email": "nope"}, "customer_email"),
        ({"mode": "subscription"}, "mode"),
        ({"line_items": []}, "line_items"),
        ({"shiping": "typo"}, "shiping"),
    ]
    for overrides, param in cases:
        with pytest.raises(stripe.InvalidRequestError) as caught:
            client.v1.checkout.sessions.create(params=session_params(**overrides))
        assert caught.value.param == param, overrides
    assert fake_stripe.sessions_created == 0


# --- idempotency ---------------------------------------------------------------------------------------------------


def test_idempotent_replay_returns_the_same_session(client, fake_stripe):
    params = session_params()
    first = client.v1.checkout.sessions.create(params=params, options={"idempotency_key": "order-42-checkout"})
    second = client.v1.checkout.sessions.create(params=params, options={"idempotency_key": "order-42-checkout"})

    assert second.id == first.id
    assert second.url == first.url
    assert second.to_dict() == first.to_dict()
    assert fake_stripe.sessions_created == 1
    assert len(fake_stripe.sessions) == 1
    assert [r.headers["Idempotency-Key"] for r in fake_stripe.calls("POST")] == ["order-42-checkout"] * 2
    assert second.last_response.headers["Idempotent-Replayed"] == "true"
    assert "Idempotent-Replayed" not in first.last_response.headers
    assert second.last_response.idempotency_key == "order-42-checkout"

    # Another key is another session.
    third = client.v1.checkout.sessions.create(params=params, options={"idempotency_key": "order-43-checkout"})
    assert third.id != first.id
    assert fake_stripe.sessions_created == 2


def test_same_key_with_other_params_is_an_idempotency_error(client, fake_stripe):
    client.v1.checkout.sessions.create(params=session_params(), options={"idempotency_key": "k-1"})
    with pytest.raises(stripe.IdempotencyError) as caught:
        client.v1.checkout.sessions.create(
            params=session_params(client_reference_id="order-99"), options={"idempotency_key": "k-1"}
        )
    assert caught.value.http_status == 400
    assert caught.value.json_body["error"]["type"] == "idempotency_error"
    assert "same parameters" in caught.value.user_message
    assert fake_stripe.sessions_created == 1

    # ... and on another endpoint too.
    with pytest.raises(stripe.IdempotencyError):
        client.v1.refunds.create(params={"payment_intent": "pi_x"}, options={"idempotency_key": "k-1"})


def test_validation_errors_are_not_saved_under_the_key(client, fake_stripe):
    bad = session_params(line_items=[])
    with pytest.raises(stripe.InvalidRequestError):
        client.v1.checkout.sessions.create(params=bad, options={"idempotency_key": "k-2"})
    # Stripe saves no result when the parameters failed validation: the key is still free.
    session = client.v1.checkout.sessions.create(params=session_params(), options={"idempotency_key": "k-2"})
    assert session.status == "open"
    assert fake_stripe.sessions_created == 1


def test_concurrent_requests(client, fake_stripe):
    results, errors = [], []
    # Built once: session_params() reads the clock, and a retried key must carry the very same parameters.
    params = session_params()

    def create(key):
        try:
            results.append(client.v1.checkout.sessions.create(params=params, options={"idempotency_key": key}))
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(f"key-{i % 5}",)) for i in range(20)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(results) == 20
    assert len({s.id for s in results}) == 5
    assert fake_stripe.sessions_created == 5


# --- expiry ----------------------------------------------------------------------------------------------------------


def test_expire(client, fake_stripe):
    session = client.v1.checkout.sessions.create(params=session_params())
    expired = client.v1.checkout.sessions.expire(session.id)
    assert (expired.id, expired.status, expired.url) == (session.id, "expired", None)
    assert client.v1.checkout.sessions.retrieve(session.id).status == "expired"

    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.checkout.sessions.expire(session.id)
    assert caught.value.http_status == 400
    assert "expired" in caught.value.user_message

    event = fake_stripe.expire_event(session.id)
    assert event["type"] == "checkout.session.expired"
    assert event["data"]["object"]["status"] == "expired"
    with pytest.raises(ValueError):
        fake_stripe.complete(session.id)


def test_a_completed_session_cannot_be_expired(client, fake_stripe):
    session, _ = paid_session(client, fake_stripe)
    with pytest.raises(stripe.InvalidRequestError):
        client.v1.checkout.sessions.expire(session.id)
    with pytest.raises(ValueError):
        fake_stripe.expire_event(session.id)


# --- the buyer pays ----------------------------------------------------------------------------------------------


def test_complete_returns_a_completed_event(client, fake_stripe):
    session = client.v1.checkout.sessions.create(params=session_params())
    event = fake_stripe.complete(session.id)

    assert event["id"].startswith("evt_")
    assert event["object"] == "event"
    assert event["type"] == "checkout.session.completed"
    assert event["livemode"] is False
    assert isinstance(event["created"], int)
    assert event["api_version"] == stripe.api_version
    obj = event["data"]["object"]
    assert obj["id"] == session.id
    assert (obj["status"], obj["payment_status"]) == ("complete", "paid")
    assert obj["amount_total"] == 6000
    assert obj["metadata"] == {"order_id": "42", "tenant": "acme"}
    assert obj["client_reference_id"] == "order-42"
    assert obj["payment_intent"].startswith("pi_")

    fetched = client.v1.checkout.sessions.retrieve(session.id, params={"expand": ["payment_intent.latest_charge"]})
    assert fetched.status == "complete"
    assert fetched.url is None
    assert fetched.payment_intent.id == obj["payment_intent"]
    assert fetched.payment_intent.status == "succeeded"
    charge = fetched.payment_intent.latest_charge
    assert charge.id.startswith("ch_")
    assert (charge.amount, charge.amount_captured, charge.amount_refunded) == (6000, 6000, 0)
    assert fake_stripe.events[-1]["id"] == event["id"]


def test_complete_with_a_different_captured_amount(client, fake_stripe):
    session = client.v1.checkout.sessions.create(params=session_params())
    event = fake_stripe.complete(session.id, amount_total=100, currency="usd")
    obj = event["data"]["object"]
    assert (obj["amount_total"], obj["currency"]) == (100, "usd")
    pi = client.v1.payment_intents.retrieve(obj["payment_intent"])
    assert (pi.amount_received, pi.currency) == (100, "usd")


def test_delayed_payment(client, fake_stripe):
    session = client.v1.checkout.sessions.create(params=session_params())
    event = fake_stripe.complete(session.id, paid=False)
    assert (event["data"]["object"]["status"], event["data"]["object"]["payment_status"]) == ("complete", "unpaid")
    pi_id = event["data"]["object"]["payment_intent"]
    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.refunds.create(params={"payment_intent": pi_id})
    assert caught.value.code == "payment_intent_unexpected_state"

    succeeded = fake_stripe.async_payment_succeeded(session.id)
    assert succeeded["type"] == "checkout.session.async_payment_succeeded"
    assert succeeded["data"]["object"]["payment_status"] == "paid"
    assert client.v1.checkout.sessions.retrieve(session.id).payment_status == "paid"
    with pytest.raises(ValueError):
        fake_stripe.async_payment_failed(session.id)

    other = client.v1.checkout.sessions.create(params=session_params())
    fake_stripe.complete(other.id, paid=False)
    failed = fake_stripe.async_payment_failed(other.id)
    assert failed["type"] == "checkout.session.async_payment_failed"
    assert failed["data"]["object"]["payment_status"] == "unpaid"


# --- refunds ---------------------------------------------------------------------------------------------------------


def test_partial_then_full_refund(client, fake_stripe):
    _, pi_id = paid_session(client, fake_stripe)

    partial = client.v1.refunds.create(
        params={
            "payment_intent": pi_id,
            "amount": 1000,
            "metadata": {"order_id": "42"},
            "reason": "requested_by_customer",
        }
    )
    assert isinstance(partial, stripe.Refund)
    assert partial.id.startswith("re_")
    assert (partial.amount, partial.currency, partial.status) == (1000, "eur", "succeeded")
    assert partial.payment_intent == pi_id
    assert partial.charge.startswith("ch_")
    assert partial.metadata.to_dict() == {"order_id": "42"}
    assert partial.reason == "requested_by_customer"

    rest = client.v1.refunds.create(params={"payment_intent": pi_id})  # no amount: what remains
    assert rest.amount == 5000

    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.refunds.create(params={"payment_intent": pi_id, "amount": 1})
    assert caught.value.code == "charge_already_refunded"

    refunds = client.v1.refunds.list(params={"payment_intent": pi_id})
    assert isinstance(refunds, stripe.ListObject)
    assert [r.id for r in refunds.data] == [rest.id, partial.id]  # newest first
    assert refunds.has_more is False
    assert refunds.url == "/v1/refunds"
    assert fake_stripe.requests[-1].params == {"payment_intent": pi_id}
    assert fake_stripe.refunds_created == 2

    event = fake_stripe.charge_refunded(pi_id)
    assert event["type"] == "charge.refunded"
    charge = event["data"]["object"]
    assert charge["object"] == "charge"
    assert charge["id"] == partial.charge
    assert (charge["amount"], charge["amount_captured"], charge["amount_refunded"]) == (6000, 6000, 6000)
    assert charge["refunded"] is True
    assert charge["payment_intent"] == pi_id


def test_refund_too_large_is_refused(client, fake_stripe):
    _, pi_id = paid_session(client, fake_stripe)
    client.v1.refunds.create(params={"payment_intent": pi_id, "amount": 5000})
    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.refunds.create(params={"payment_intent": pi_id, "amount": 1001})
    assert caught.value.http_status == 400
    assert caught.value.code == "amount_too_large"
    assert caught.value.param == "amount"
    assert fake_stripe.refunds_created == 1

    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.refunds.create(params={"payment_intent": "pi_unknown"})
    assert (caught.value.http_status, caught.value.code) == (404, "resource_missing")
    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.refunds.create(params={"payment_intent": pi_id, "amount": 0})
    assert caught.value.param == "amount"


def test_refund_idempotency(client, fake_stripe):
    _, pi_id = paid_session(client, fake_stripe)
    params = {"payment_intent": pi_id, "amount": 700}
    first = client.v1.refunds.create(params=params, options={"idempotency_key": "refund-42-1"})
    again = client.v1.refunds.create(params=params, options={"idempotency_key": "refund-42-1"})
    assert again.id == first.id
    assert fake_stripe.refunds_created == 1
    with pytest.raises(stripe.IdempotencyError):
        client.v1.refunds.create(params={**params, "amount": 800}, options={"idempotency_key": "refund-42-1"})


def test_refund_made_in_the_dashboard(client, fake_stripe):
    _, pi_id = paid_session(client, fake_stripe)
    ours = client.v1.refunds.create(params={"payment_intent": pi_id, "amount": 1000})
    outside = fake_stripe.refund_outside(pi_id, 2000)
    assert outside["id"].startswith("re_")

    event = fake_stripe.charge_refunded(pi_id)
    charge = event["data"]["object"]
    assert charge["amount_refunded"] == 3000
    assert charge["refunded"] is False
    listed = client.v1.refunds.list(params={"payment_intent": pi_id})
    assert [r.id for r in listed.data] == [outside["id"], ours.id]
    with pytest.raises(ValueError):
        fake_stripe.refund_outside(pi_id, 3001)


# --- authentication, failures, latency ---------------------------------------------------------------------------


def test_missing_api_key_is_401(fake_stripe):
    status, headers, body = raw_request(fake_stripe, "GET", "/v1/checkout/sessions/cs_test_x")
    assert status == 401
    assert headers["Content-Type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["type"] == "invalid_request_error"
    assert "did not provide an API key" in error["message"]

    empty_key = stripe.StripeClient("", base_addresses={"api": fake_stripe.base_url})
    with pytest.raises(stripe.AuthenticationError) as caught:
        empty_key.v1.checkout.sessions.create(params=session_params())
    assert caught.value.http_status == 401


def test_wrong_api_key_is_authentication_error(fake_stripe):
    wrong = stripe.StripeClient("sk_test_wrong", base_addresses={"api": fake_stripe.base_url})
    with pytest.raises(stripe.AuthenticationError) as caught:
        wrong.v1.checkout.sessions.create(params=session_params())
    assert caught.value.http_status == 401
    assert "Invalid API Key" in caught.value.user_message
    assert fake_stripe.sessions_created == 0


def test_fail_next_gives_api_error(client, fake_stripe):
    fake_stripe.fail_next()
    with pytest.raises(stripe.APIError) as caught:
        client.v1.checkout.sessions.create(params=session_params())
    assert caught.value.http_status == 500
    assert caught.value.json_body["error"]["type"] == "api_error"
    assert fake_stripe.sessions_created == 0
    # Only the next call failed.
    assert client.v1.checkout.sessions.create(params=session_params()).status == "open"

    fake_stripe.fail_next(status=429)
    with pytest.raises(stripe.RateLimitError):
        client.v1.checkout.sessions.create(params=session_params())


def test_retries_reuse_the_idempotency_key(fake_stripe, no_backoff):
    client = stripe.StripeClient("sk_test_fake", base_addresses={"api": fake_stripe.base_url}, max_network_retries=2)
    fake_stripe.fail_next(2)
    session = client.v1.checkout.sessions.create(params=session_params())
    posts = fake_stripe.calls("POST", "/v1/checkout/sessions")
    assert len(posts) == 3
    assert len({r.headers["Idempotency-Key"] for r in posts}) == 1
    assert fake_stripe.sessions_created == 1
    assert session.status == "open"

    # Stripe-Should-Retry: false stops the SDK from retrying.
    fake_stripe.fail_next(1, should_retry=False)
    with pytest.raises(stripe.APIError):
        client.v1.checkout.sessions.create(params=session_params())
    assert len(fake_stripe.calls("POST", "/v1/checkout/sessions")) == 4


def test_stripe_client_does_not_retry_by_default(fake_stripe, no_backoff):
    client = stripe.StripeClient("sk_test_fake", base_addresses={"api": fake_stripe.base_url})
    fake_stripe.fail_next(1)
    with pytest.raises(stripe.APIError):
        client.v1.checkout.sessions.create(params=session_params())
    assert len(fake_stripe.requests) == 1


def test_lost_response_is_replayed_on_retry(fake_stripe, no_backoff):
    client = stripe.StripeClient("sk_test_fake", base_addresses={"api": fake_stripe.base_url}, max_network_retries=1)
    fake_stripe.drop_next()
    session = client.v1.checkout.sessions.create(params=session_params())
    assert fake_stripe.sessions_created == 1
    assert len(fake_stripe.requests) == 2
    assert session.last_response.headers["Idempotent-Replayed"] == "true"

    no_retry = stripe.StripeClient("sk_test_fake", base_addresses={"api": fake_stripe.base_url})
    fake_stripe.drop_next()
    with pytest.raises(stripe.APIConnectionError):
        no_retry.v1.checkout.sessions.create(params=session_params())
    assert fake_stripe.sessions_created == 2  # executed, answer lost


def test_latency(client, fake_stripe):
    fake_stripe.latency = 0.3
    started = time.monotonic()
    client.v1.checkout.sessions.create(params=session_params())
    assert time.monotonic() - started >= 0.3


# --- webhook signatures ----------------------------------------------------------------------------------------------


def test_signature_is_accepted_by_the_sdk(client, fake_stripe, settings):
    session = client.v1.checkout.sessions.create(params=session_params())
    payload = fake_stripe.payload(fake_stripe.complete(session.id))
    header = fake_stripe.sign(payload, settings.STRIPE_WEBHOOK_SECRET)

    event = stripe.Webhook.construct_event(payload, header, settings.STRIPE_WEBHOOK_SECRET)
    assert event.type == "checkout.session.completed"
    assert event.data.object.id == session.id
    assert event.data.object.metadata.order_id == "42"
    assert client.construct_event(payload, header, settings.STRIPE_WEBHOOK_SECRET).id == event.id

    # Byte-for-byte Stripe's own scheme.
    timestamp = int(header.split(",")[0][2:])
    assert header == stripe.WebhookSignature.generate_signature_header(
        payload.decode(), settings.STRIPE_WEBHOOK_SECRET, timestamp=timestamp
    )


def test_bad_signatures_are_refused(client, fake_stripe, settings):
    session = client.v1.checkout.sessions.create(params=session_params())
    body, header = fake_stripe.signed_payload(fake_stripe.complete(session.id), settings.STRIPE_WEBHOOK_SECRET)
    secret = settings.STRIPE_WEBHOOK_SECRET

    tampered = body.replace(b'"amount_total": 6000', b'"amount_total": 1')
    assert tampered != body
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(tampered, header, secret)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(body, header, "whsec_other")
    old = fake_stripe.sign(body, secret, timestamp=int(time.time()) - 301)
    with pytest.raises(stripe.SignatureVerificationError, match="tolerance"):
        stripe.Webhook.construct_event(body, old, secret)
    with pytest.raises(stripe.SignatureVerificationError):
        stripe.Webhook.construct_event(body, "", secret)
    # Within the tolerance it is still fine.
    recent = fake_stripe.sign(body, secret, timestamp=int(time.time()) - 200)
    assert stripe.Webhook.construct_event(body, recent, secret).type == "checkout.session.completed"


# --- hosted page, lifecycle --------------------------------------------------------------------------------------


def test_hosted_page_pays_and_redirects(client, fake_stripe):
    session = client.v1.checkout.sessions.create(params=session_params())
    status, _, page = raw_request(fake_stripe, "GET", f"/pay/{session.id}")
    assert status == 200
    assert b"60.00 EUR" in page

    opener = urllib.request.build_opener(_NoRedirect)
    request = urllib.request.Request(session.url, data=b"action=pay", method="POST")
    with pytest.raises(urllib.error.HTTPError) as caught:
        opener.open(request)
    assert caught.value.code == 303
    assert caught.value.headers["Location"] == f"https://shop.example/orders/42/paid?session={session.id}"
    assert fake_stripe.events[-1]["type"] == "checkout.session.completed"
    assert client.v1.checkout.sessions.retrieve(session.id).payment_status == "paid"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def test_unknown_route_and_stop():
    fake = FakeStripe().start()
    client = stripe.StripeClient("sk_test_fake", base_addresses={"api": fake.base_url})
    with pytest.raises(stripe.InvalidRequestError) as caught:
        client.v1.customers.create(params={"email": "a@example.com"})
    assert caught.value.http_status == 404
    assert "Unrecognized request URL" in caught.value.user_message
    fake.stop()
    fake.stop()  # idempotent
    with pytest.raises(stripe.APIConnectionError):
        client.v1.checkout.sessions.retrieve("cs_test_x")


# --- Connect: destination charges ----------------------------------------------------------------


def destination_params(fee=150, destination="acct_1Dest"):
    params = session_params()
    params["payment_intent_data"] = {
        "application_fee_amount": fee,
        "transfer_data": {"destination": destination},
        "metadata": {"order_id": "42"},
    }
    return params


def paid_destination_charge(fake_stripe, client, **kwargs):
    session = client.v1.checkout.sessions.create(params=destination_params(**kwargs))
    fake_stripe.complete(session.id)
    pi = client.v1.payment_intents.retrieve(fake_stripe.session(session.id)["payment_intent"])
    return client.v1.charges.retrieve(pi.latest_charge, params={"expand": ["application_fee", "transfer"]})


def test_destination_charge_has_its_transfer_and_application_fee_in_wire_format(fake_stripe, client):
    charge = paid_destination_charge(fake_stripe, client)

    assert isinstance(charge.application_fee, stripe.ApplicationFee)
    assert isinstance(charge.transfer, stripe.Transfer)
    assert (charge.application_fee_amount, charge.transfer_data.destination) == (150, "acct_1Dest")
    fee, transfer = charge.application_fee, charge.transfer
    assert fee.id.startswith("fee_") and (fee.amount, fee.account, fee.charge, fee.refunded) == (
        150,
        "acct_1Dest",
        charge.id,
        False,
    )
    assert transfer.id.startswith("tr_") and (transfer.amount, transfer.destination, transfer.source_transaction) == (
        6000 - 150,
        "acct_1Dest",
        charge.id,
    )
    listed = client.v1.application_fees.list(params={"charge": charge.id})
    assert [f.id for f in listed.data] == [fee.id]
    assert client.v1.transfers.retrieve(transfer.id).amount_reversed == 0


@pytest.mark.parametrize(
    ("pi_data", "param"),
    [
        ({"application_fee_amount": 10}, "payment_intent_data[application_fee_amount]"),  # no destination
        (
            {"application_fee_amount": 6001, "transfer_data": {"destination": "acct_1Dest"}},
            "payment_intent_data[application_fee_amount]",
        ),
        ({"application_fee_amount": 10, "transfer_data": {"destination": "nope"}}, None),
        ({"application_fee_amount": -1, "transfer_data": {"destination": "acct_1Dest"}}, None),
    ],
)
def test_bad_connect_parameters_are_refused_and_create_nothing(fake_stripe, client, pi_data, param):
    params = session_params()
    params["payment_intent_data"] = pi_data
    with pytest.raises(stripe.InvalidRequestError) as error:
        client.v1.checkout.sessions.create(params=params)
    if param:
        assert error.value.param == param
    assert fake_stripe.sessions_created == 0


def test_connect_refund_flags_on_a_plain_charge_are_refused(fake_stripe, client):
    session = client.v1.checkout.sessions.create(params=session_params())
    fake_stripe.complete(session.id)
    pi = fake_stripe.session(session.id)["payment_intent"]
    with pytest.raises(stripe.InvalidRequestError, match="not a destination charge"):
        client.v1.refunds.create(params={"payment_intent": pi, "amount": 100, "reverse_transfer": True})
    assert fake_stripe.refunds_created == 0


def test_unknown_application_fee_and_transfer_are_404(fake_stripe, client):
    with pytest.raises(stripe.InvalidRequestError) as fee_error:
        client.v1.application_fees.refunds.list("fee_nope")
    with pytest.raises(stripe.InvalidRequestError) as transfer_error:
        client.v1.transfers.reversals.list("tr_nope")
    assert fee_error.value.http_status == transfer_error.value.http_status == 404


@given(cuts=st.lists(st.integers(min_value=1, max_value=5999), max_size=5, unique=True))
@hypothesis_settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_fee_refunds_follow_the_apps_rule_and_sum_to_the_fee(fake_stripe, client, cuts):
    """Any partial refunds, then the rest: each fee refund is the app's `fee_refund_for`, the sum exactly the fee."""
    from billing.services.fees import fee_refund_for

    charge = paid_destination_charge(fake_stripe, client, fee=173)
    points = [*sorted(cuts), 6000]
    refunded, expected = 0, []
    for point in points:
        amount = point - refunded
        client.v1.refunds.create(
            params={
                "charge": charge.id,
                "amount": amount,
                "reverse_transfer": True,
                "refund_application_fee": True,
            }
        )
        expected.append(fee_refund_for(fee=173, charged=6000, refunded_before=refunded, amount=amount))
        refunded = point
    fee_refunds = client.v1.application_fees.refunds.list(charge.application_fee.id, params={"limit": 100})
    assert [r.amount for r in reversed(fee_refunds.data)] == expected
    assert sum(expected) == 173
    fee = client.v1.application_fees.retrieve(charge.application_fee.id)
    transfer = client.v1.transfers.retrieve(charge.transfer.id)
    assert (fee.amount_refunded, fee.refunded) == (173, True)
    assert (transfer.amount_reversed, transfer.reversed) == (6000 - 173, True)

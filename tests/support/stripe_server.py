"""A local fake of the Stripe REST API v1 for tests and benchmarks, driven by the real ``stripe`` SDK (16.1.0).

What the application must pass (checked against stripe 16.1.0): build ONE client as
``stripe.StripeClient(settings.STRIPE_SECRET_KEY, base_addresses={"api": settings.STRIPE_API_BASE},
max_network_retries=N)``. ``base_addresses`` is merged over the SDK's defaults, so only ``"api"`` is needed
(``"connect"``, ``"files"`` and ``"meter_events"`` keep pointing at Stripe but a Checkout shop never uses them);
the value is scheme + host[:port] with no trailing slash and no ``/v1`` (the SDK concatenates it with paths such as
``/v1/checkout/sessions``), e.g. ``https://api.stripe.com`` in production and ``FakeStripe.base_url`` in tests.
The global ``stripe.api_base`` / ``stripe.api_key`` are NOT read by a ``StripeClient``, so do not rely on them.
Calls go through ``client.v1.<resource>`` (``client.checkout`` etc. still work but are deprecated):
``client.v1.checkout.sessions.create(params={...}, options={"idempotency_key": "..."})``,
``client.v1.checkout.sessions.retrieve(id, params={"expand": [...]})``, ``client.v1.checkout.sessions.expire(id)``,
``client.v1.refunds.create(params={...}, options={...})``, ``client.v1.refunds.list(params={"payment_intent": ...})``;
``options`` is a ``stripe.RequestOptions`` dict (``idempotency_key``, ``max_network_retries``, ``api_key``, ...).
``max_network_retries`` defaults to 0 on a ``StripeClient`` (only the legacy global API defaults to 2); retries
happen on connection errors, 409 and >= 500 (unless the response says ``Stripe-Should-Retry: false``) after a
0.5 s-5 s jittered back-off (``stripe.HTTPClient.INITIAL_DELAY``/``MAX_DELAY``), reusing the request's
Idempotency-Key, which the SDK generates (uuid4) for every POST that has none, so an explicit key is only needed
to make the app's own retries (a re-submitted form, a Celery retry) idempotent. The HTTP client is
``stripe.RequestsClient`` (``requests`` is installed) with an 80 s timeout; to change it pass
``http_client=stripe.RequestsClient(timeout=...)`` (then ``proxy``/``verify_ssl_certs`` must not be passed). Plain
``http://`` base addresses work as they are. Webhooks are verified with ``stripe.Webhook.construct_event(raw_body,
request.headers["Stripe-Signature"], settings.STRIPE_WEBHOOK_SECRET)`` (or ``client.construct_event(...)``),
tolerance 300 s, on the raw request body bytes.

Connect (Express): POST /v1/accounts (type=express, capabilities, metadata), GET/POST /v1/accounts/{id}, POST
/v1/account_links (type=account_onboarding: a one-time ``url``, ``expires_at`` 5 minutes ahead; the page itself is
not served). An account starts with ``charges_enabled``/``payouts_enabled`` false and ``requirements.currently_due``
listing what onboarding asks; the driver :meth:`FakeStripe.complete_onboarding` fills them in and returns
``account.updated`` with ``account`` set, as Connect webhooks carry it; :meth:`FakeStripe.require_more` takes charges
away again and :meth:`FakeStripe.deauthorize` returns ``account.application.deauthorized``.

Emulated: POST/GET /v1/checkout/sessions, GET /v1/checkout/sessions/{id}[/line_items], POST
/v1/checkout/sessions/{id}/expire, POST/GET /v1/refunds, GET /v1/refunds/{id}, GET /v1/payment_intents/{id},
GET /v1/charges/{id}, ``expand``, Idempotency-Key (results are saved only once the endpoint ran: parameter
validation errors, 401s and injected failures are not saved, business errors such as ``amount_too_large`` are), and
a minimal hosted page at ``/pay/{id}`` (a form whose "Pay" button completes the session and redirects to
``success_url`` with ``{CHECKOUT_SESSION_ID}`` filled in; the event lands in ``FakeStripe.events``). Events are not
delivered over HTTP: the test-driver methods return them and tests post them to the app's webhook view themselves,
signed with :meth:`FakeStripe.sign` (or :meth:`FakeStripe.signed_payload`).
"""

from __future__ import annotations

import base64
import copy
import hashlib
import hmac
import html
import json
import re
import secrets
import socket
import string
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple
from urllib.parse import parse_qsl, urlsplit

from requests.structures import CaseInsensitiveDict

# The API version stripe 16.1.0 pins (stripe._api_version._ApiVersion.CURRENT); used in events.
API_VERSION = "2026-10-28.endive"

_ALPHANUM = string.ascii_letters + string.digits
_REFUND_REASONS = {"duplicate", "fraudulent", "requested_by_customer"}
_EXPANDABLE = {"payment_intent", "latest_charge", "charge", "line_items", "application_fee", "transfer"}


def _random_id(prefix: str, length: int = 24) -> str:
    return prefix + "".join(secrets.choice(_ALPHANUM) for _ in range(length))


def _money(amount: int, currency: str) -> str:
    return f"{amount / 100:.2f} {currency.upper()}"


class RecordedRequest(NamedTuple):
    """One API call as the server saw it; ``params`` is the decoded nested form body (or query), values are strings."""

    method: str
    path: str
    params: dict
    headers: CaseInsensitiveDict


class _Error(Exception):
    """An API error answered with Stripe's JSON error shape.

    ``saved``: whether an Idempotency-Key stores this answer (True once the endpoint has started executing).
    """

    def __init__(
        self,
        status: int,
        message: str,
        *,
        type: str = "invalid_request_error",
        code: str | None = None,
        param: str | None = None,
        saved: bool = False,
        headers: dict | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type
        self.code = code
        self.param = param
        self.saved = saved
        self.headers = headers or {}

    def body(self) -> dict:
        error: dict[str, Any] = {"type": self.type, "message": self.message}
        if self.code:
            error["code"] = self.code
            error["doc_url"] = f"https://stripe.com/docs/error-codes/{self.code.replace('_', '-')}"
        if self.param:
            error["param"] = self.param
        return {"error": error}


def _missing(param: str) -> _Error:
    return _Error(400, f"Missing required param: {param}.", code="parameter_missing", param=param)


def _no_such(kind: str, object_id: str, param: str | None = None) -> _Error:
    return _Error(404, f"No such {kind}: '{object_id}'", code="resource_missing", param=param)


# ---------------------------------------------------------------------------------------------------------------------
# Stripe's form encoding: a[b][0][c]=v, expand[]=x, expand[0]=x.


def _param_name(parts: list[str | int]) -> str:
    return str(parts[0]) + "".join(f"[{p}]" for p in parts[1:])


_KEY_RE = re.compile(r"^([^\[\]]+)((?:\[[^\[\]]*\])*)$")


def parse_params(pairs: list[tuple[str, str]]) -> dict:
    """Decode Stripe's nested form keys into dicts and lists (``metadata`` hashes stay dicts even with digit keys)."""
    root: dict = {}
    for key, value in pairs:
        match = _KEY_RE.match(key)
        if not match:
            raise _Error(400, f"Invalid parameter name: {key}", param=key)
        parts = [match.group(1), *re.findall(r"\[([^\[\]]*)\]", match.group(2))]
        node = root
        for depth, part in enumerate(parts):
            if part == "":
                part = str(len(node))
            if depth == len(parts) - 1:
                if isinstance(node.get(part), dict):
                    raise _Error(400, f"Invalid hash: {key} is both a hash and a value", param=key)
                node[part] = value
            else:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    raise _Error(400, f"Invalid hash: {_param_name(parts[: depth + 1])}", param=key)
                node = child
    return _listify(root, None)


def _listify(node: Any, key: str | None) -> Any:
    if not isinstance(node, dict):
        return node
    node = {k: _listify(v, k) for k, v in node.items()}
    if key != "metadata" and node and all(k.isdigit() for k in node):
        return [node[k] for k in sorted(node, key=int)]
    return node


# Accepted parameters. None: a scalar; HASH: free-form string map (metadata); ANY: accepted, not checked;
# [schema]: an array; {..}: a nested object.
HASH = "hash"
ANY = "any"
_METADATA_HOLDER = {"metadata": HASH}
_LINE_ITEM = {
    "quantity": None,
    "price": None,
    "price_data": {
        "currency": None,
        "unit_amount": None,
        "unit_amount_decimal": None,
        "tax_behavior": None,
        "product": None,
        "product_data": {"name": None, "description": None, "images": [None], "metadata": HASH, "tax_code": None},
    },
    "adjustable_quantity": ANY,
    "tax_rates": [None],
}
_SESSION_CREATE = {
    "mode": None,
    "line_items": [_LINE_ITEM],
    "customer_email": None,
    "client_reference_id": None,
    "metadata": HASH,
    "success_url": None,
    "cancel_url": None,
    "expires_at": None,
    "expand": [None],
    "payment_intent_data": {
        "metadata": HASH,
        "description": None,
        "receipt_email": None,
        "statement_descriptor": None,
        "statement_descriptor_suffix": None,
        # Connect: a destination charge (the application fee stays with the platform, the rest is transferred).
        "application_fee_amount": None,
        "transfer_data": {"destination": None, "amount": None},
        "on_behalf_of": None,
        "transfer_group": None,
    },
    # Accepted and ignored (they change the hosted page, not the objects emulated here).
    "locale": None,
    "payment_method_types": [None],
    "payment_method_options": ANY,
    "submit_type": None,
    "billing_address_collection": None,
    "allow_promotion_codes": None,
    "customer_creation": None,
    "phone_number_collection": ANY,
    "custom_text": ANY,
    "invoice_creation": ANY,
    "consent_collection": ANY,
}
_REFUND_CREATE = {
    "payment_intent": None,
    "charge": None,
    "amount": None,
    "metadata": HASH,
    "reason": None,
    "expand": [None],
    "instructions_email": None,
    "reverse_transfer": None,
    "refund_application_fee": None,
}
_CAPABILITY = {"requested": None}
_ACCOUNT_CREATE = {
    "type": None,
    "country": None,
    "email": None,
    "default_currency": None,
    "business_type": None,
    "capabilities": {"card_payments": _CAPABILITY, "transfers": _CAPABILITY},
    "metadata": HASH,
    "expand": [None],
    # Accepted and ignored (they prefill what onboarding asks).
    "business_profile": ANY,
    "company": ANY,
    "individual": ANY,
    "settings": ANY,
    "tos_acceptance": ANY,
}
_ACCOUNT_UPDATE = {"email": None, "metadata": HASH, "expand": [None], "business_profile": ANY, "settings": ANY}
_ACCOUNT_LINK_CREATE = {
    "account": None,
    "type": None,
    "refresh_url": None,
    "return_url": None,
    "collect": None,
    "collection_options": ANY,
    "expand": [None],
}
# What an Express account must give before it can take charges (requirements.currently_due until onboarding).
ONBOARDING_REQUIREMENTS = [
    "business_profile.url",
    "business_type",
    "external_account",
    "representative.first_name",
    "representative.last_name",
    "tos_acceptance.date",
    "tos_acceptance.ip",
]
_EXPAND_ONLY = {"expand": [None]}
_LIST = {"limit": None, "starting_after": None, "ending_before": None, "expand": [None]}
_SESSION_LIST = {**_LIST, "payment_intent": None, "status": None, "created": ANY}
_REFUND_LIST = {**_LIST, "payment_intent": None, "charge": None, "created": ANY}
_APPLICATION_FEE_LIST = {**_LIST, "charge": None, "created": ANY}


def _bool(value: str | None, param: str) -> bool:
    if value is None:
        return False
    if value not in {"true", "false"}:
        raise _Error(400, f"Invalid boolean: {value}", param=param)
    return value == "true"


def _round_half_up_div(numerator: int, denominator: int) -> int:
    return (2 * numerator + denominator) // (2 * denominator)


def _proportional(total: int, part: int, whole: int) -> int:
    """`total` x part / whole, half up: the cumulative share of an application fee (or a transfer) refunded.

    The same rule as billing/services/fees.py, so a test can compare the app's ledger with this server.
    """
    return _round_half_up_div(total * part, whole) if whole else 0


def _check_params(params: Any, schema: Any, path: list, *, empty_allowed: bool = False) -> None:
    """Reject unknown parameters, wrong shapes and empty strings as Stripe does."""
    if schema == ANY:
        return
    name = _param_name(path) if path else ""
    if schema is None:
        if isinstance(params, (dict, list)):
            raise _Error(400, f"Invalid value type: {{}} must be a string for {name}", param=name)
        if params == "" and not empty_allowed:
            raise _Error(
                400,
                f"You passed an empty string for '{name}'. We assume empty values are an attempt to unset a parameter; "
                f"however '{name}' cannot be unset. You should remove '{name}' from your request or supply a "
                "non-empty value.",
                code="parameter_invalid_empty",
                param=name,
            )
        return
    if schema == HASH:
        if not isinstance(params, dict):
            if params == "":  # metadata= clears everything: nothing to do on a create
                return
            raise _Error(400, f"Invalid object: {name} must be a hash of strings", param=name)
        for key, value in params.items():
            if isinstance(value, (dict, list)):
                raise _Error(400, f"Invalid value for {name}[{key}]: must be a string", param=f"{name}[{key}]")
        return
    if isinstance(schema, list):
        if not isinstance(params, list):
            raise _Error(400, f"Invalid array: {name}", param=name)
        for index, item in enumerate(params):
            _check_params(item, schema[0], [*path, index])
        return
    if not isinstance(params, dict):
        raise _Error(400, f"Invalid object: {name}", param=name)
    for key, value in params.items():
        if key not in schema:
            unknown = _param_name([*path, key])
            raise _Error(400, f"Received unknown parameter: {unknown}", code="parameter_unknown", param=unknown)
        _check_params(value, schema[key], [*path, key])


def _int(value: str | None, param: str, *, minimum: int | None = None, positive: bool = False) -> int | None:
    if value is None:
        return None
    if not re.fullmatch(r"-?\d+", value):
        kind = "positive integer" if positive else "integer"
        raise _Error(400, f"Invalid {kind}: {value}", code="parameter_invalid_integer", param=param)
    number = int(value)
    if minimum is not None and number < minimum:
        raise _Error(
            400,
            f"This value must be greater than or equal to {minimum}.",
            code="parameter_invalid_integer",
            param=param,
        )
    return number


def _metadata(value: Any, param: str = "metadata") -> dict:
    if not isinstance(value, dict):
        return {}
    clean = {k: v for k, v in value.items() if v != ""}
    if len(clean) > 50:
        raise _Error(400, "Metadata can have up to 50 keys.", param=param)
    for key, val in clean.items():
        if len(key) > 40:
            raise _Error(400, f"Metadata keys can have up to 40 characters: {key}", param=f"{param}[{key}]")
        if len(val) > 500:
            raise _Error(400, "Metadata values can have up to 500 characters.", param=f"{param}[{key}]")
    return clean


def _url(value: str | None, param: str) -> str | None:
    if value is None:
        return None
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise _Error(400, "Not a valid URL", code="url_invalid", param=param)
    return value


# ---------------------------------------------------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128  # concurrent clients (benchmarks) must not overflow the listen backlog
    fake: FakeStripe


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the SDK's requests session expects from Stripe
    server_version = "FakeStripe/1.0"
    server: _Server

    def log_message(self, format, *args):  # noqa: A002 - BaseHTTPRequestHandler's signature
        pass

    def setup(self):
        super().setup()
        self.server.fake._connections_opened(self.connection)

    def finish(self):
        try:
            super().finish()
        finally:
            self.server.fake._connections_closed(self.connection)

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw_body = self.rfile.read(length) if length else b""
        split = urlsplit(self.path)
        headers = CaseInsensitiveDict(self.headers.items())
        if split.path.startswith("/pay/"):
            status, out_headers, body = fake._handle_page(method, split.path, raw_body)
            drop = False
        else:
            status, out_headers, body, drop = fake._handle_api(method, split.path, split.query, raw_body, headers)
        if drop:  # the request was executed, the response is lost on the way (a network failure)
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.send_response(status)
        for name, value in out_headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method != "HEAD":
            self.wfile.write(body)


class FakeStripe:
    """An in-process Stripe API v1 (Checkout, refunds, destination charges subset) on 127.0.0.1, OS-chosen port.

    Use as ``with FakeStripe() as fake: ...`` or ``start()``/``stop()``. State is in memory behind one lock.
    Inspect ``requests`` (every API call), ``sessions``/``payment_intents``/``charges``/``refunds`` (objects by id),
    ``transfers``/``application_fees`` (a destination charge's, with their ``reversals``/``refunds`` lists),
    ``sessions_created``/``refunds_created`` (objects really created, idempotent replays excluded) and ``events``
    (every event a driver method or the /pay page produced).
    """

    def __init__(self, api_key: str = "sk_test_fake", *, latency: float = 0.0):
        self.api_key = api_key
        self.latency = latency  # seconds slept before answering each API call (benchmarks)
        self.base_url: str | None = None
        self.requests: list[RecordedRequest] = []
        self.events: list[dict] = []
        self.sessions: dict[str, dict] = {}
        self.payment_intents: dict[str, dict] = {}
        self.charges: dict[str, dict] = {}
        self.refunds: dict[str, dict] = {}
        # Connect: destination charges' transfers and application fees (with their reversals and refunds).
        self.transfers: dict[str, dict] = {}
        self.application_fees: dict[str, dict] = {}
        self._pi_connect: dict[str, dict] = {}
        self.accounts: dict[str, dict] = {}
        self.account_links: list[dict] = []
        self.accounts_created = 0
        self.sessions_created = 0
        self.refunds_created = 0
        self._line_items: dict[str, list[dict]] = {}
        self._pi_metadata: dict[str, dict] = {}
        self._idempotency: dict[str, dict] = {}
        self._failures: list[tuple[int, bool | None]] = []
        self._drops = 0
        self._lock = threading.RLock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._open_connections: set[socket.socket] = set()

    # --- lifecycle ---------------------------------------------------------------------------------------------------

    def start(self) -> FakeStripe:
        if self._server is not None:
            return self
        server = _Server(("127.0.0.1", 0), _Handler)
        server.fake = self
        self._server = server
        self.base_url = f"http://127.0.0.1:{server.server_address[1]}"
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.05}, name="FakeStripe", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        with self._lock:
            connections = list(self._open_connections)
        for conn in connections:  # idle keep-alive connections of the SDK's session
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeStripe:
        return self.start()

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def _connections_opened(self, conn: socket.socket) -> None:
        with self._lock:
            self._open_connections.add(conn)

    def _connections_closed(self, conn: socket.socket) -> None:
        with self._lock:
            self._open_connections.discard(conn)

    # --- failure injection -------------------------------------------------------------------------------------------

    def fail_next(self, n: int = 1, status: int = 500, *, should_retry: bool | None = None) -> None:
        """Answer the next ``n`` API calls with ``status`` before executing them (nothing created, nothing saved).

        5xx answers ``api_error`` (SDK: ``stripe.APIError``), 429 ``rate_limit`` (``stripe.RateLimitError``).
        ``should_retry`` sends ``Stripe-Should-Retry: true|false``, which the SDK obeys over the status.
        """
        with self._lock:
            self._failures.extend([(status, should_retry)] * n)

    def drop_next(self, n: int = 1) -> None:
        """Execute the next ``n`` API calls but close the connection instead of answering (a lost response).

        The SDK sees a connection error (``stripe.APIConnectionError``, retried when retries are on, with the same
        Idempotency-Key, so the retry gets the saved result instead of creating a second object).
        """
        with self._lock:
            self._drops += n

    # --- webhooks ----------------------------------------------------------------------------------------------------

    @staticmethod
    def sign(payload: bytes | str, secret: str, *, timestamp: int | None = None) -> str:
        """The ``Stripe-Signature`` header: ``t=<ts>,v1=<hex HMAC-SHA256(key=secret, msg="<ts>.<payload>")>``."""
        if isinstance(payload, str):
            payload = payload.encode("utf-8")
        ts = int(time.time()) if timestamp is None else int(timestamp)
        digest = hmac.new(secret.encode("utf-8"), f"{ts}.".encode() + payload, hashlib.sha256).hexdigest()
        return f"t={ts},v1={digest}"

    @staticmethod
    def payload(event: dict) -> bytes:
        """The event serialised as Stripe sends it (pretty-printed JSON)."""
        return json.dumps(event, indent=2).encode("utf-8")

    def signed_payload(self, event: dict, secret: str, *, timestamp: int | None = None) -> tuple[bytes, str]:
        """``(body, Stripe-Signature header)`` ready to POST to the app's webhook endpoint."""
        body = self.payload(event)
        return body, self.sign(body, secret, timestamp=timestamp)

    # --- test drivers: the customer and Stripe's side ----------------------------------------------------------------

    def complete(
        self,
        session_id: str,
        *,
        paid: bool = True,
        amount_total: int | None = None,
        currency: str | None = None,
        email: str | None = None,
    ) -> dict:
        """The buyer pays: returns ``checkout.session.completed``.

        ``paid=False`` is a delayed payment method (payment_status stays "unpaid" until
        :meth:`async_payment_succeeded`/:meth:`async_payment_failed`). ``amount_total``/``currency`` override what was
        captured (to simulate a mismatch with the order).
        """
        with self._lock:
            session = self._session_for_driver(session_id)
            if session["status"] != "open":
                raise ValueError(f"{session_id} is {session['status']}, only an open session can be completed")
            amount = session["amount_total"] if amount_total is None else amount_total
            cur = (currency or session["currency"]).lower()
            session.update(amount_total=amount, amount_subtotal=amount, currency=cur)
            buyer_email = email or session["customer_email"] or "customer@example.com"
            session["customer_details"]["email"] = buyer_email
            pi = {
                "id": _random_id("pi_"),
                "object": "payment_intent",
                "amount": amount,
                "amount_received": 0,
                "currency": cur,
                "status": "processing",
                "latest_charge": None,
                "metadata": copy.deepcopy(self._pi_metadata.get(session_id, {})),
                "application_fee_amount": self._pi_connect.get(session_id, {}).get("application_fee_amount"),
                "on_behalf_of": self._pi_connect.get(session_id, {}).get("on_behalf_of"),
                "transfer_data": copy.deepcopy(self._pi_connect.get(session_id, {}).get("transfer_data")),
                "transfer_group": self._pi_connect.get(session_id, {}).get("transfer_group"),
                "receipt_email": buyer_email,
                "created": int(time.time()),
                "livemode": False,
            }
            self.payment_intents[pi["id"]] = pi
            session.update(status="complete", payment_intent=pi["id"], url=None, payment_status="unpaid")
            if paid:
                self._capture(session, pi)
            return self._event("checkout.session.completed", session)

    def async_payment_succeeded(self, session_id: str) -> dict:
        """A delayed payment (``complete(paid=False)``) clears: ``checkout.session.async_payment_succeeded``."""
        with self._lock:
            session, pi = self._pending_async(session_id)
            self._capture(session, pi)
            return self._event("checkout.session.async_payment_succeeded", session)

    def async_payment_failed(self, session_id: str) -> dict:
        """A delayed payment fails: ``checkout.session.async_payment_failed`` (payment_status stays "unpaid")."""
        with self._lock:
            session, pi = self._pending_async(session_id)
            pi["status"] = "requires_payment_method"
            return self._event("checkout.session.async_payment_failed", session)

    def expire_event(self, session_id: str) -> dict:
        """The session times out (or was expired through the API): ``checkout.session.expired``."""
        with self._lock:
            session = self._session_for_driver(session_id)
            if session["status"] == "complete":
                raise ValueError(f"{session_id} is complete, it cannot expire")
            self._expire(session)
            return self._event("checkout.session.expired", session)

    def refund_outside(
        self,
        payment_intent_id: str,
        amount: int | None = None,
        *,
        reason: str | None = None,
        reverse_transfer: bool | None = None,
        refund_application_fee: bool | None = None,
    ) -> dict:
        """A refund made in the Stripe dashboard (not asked for by the app); returns the refund object.

        On a destination charge it reverses the transfer and refunds the application fee unless told otherwise.
        """
        with self._lock:
            pi = self._pi_for_driver(payment_intent_id)
            if not pi["latest_charge"]:
                raise ValueError(f"{payment_intent_id} has no successful charge")
            charge = self.charges[pi["latest_charge"]]
            remaining = charge["amount"] - charge["amount_refunded"]
            amount = remaining if amount is None else amount
            if not 0 < amount <= remaining:
                raise ValueError(f"cannot refund {amount}, {remaining} remains on {charge['id']}")
            connect = bool(charge["transfer_data"])
            return copy.deepcopy(
                self._refund(
                    charge,
                    amount,
                    {},
                    reason,
                    reverse_transfer=connect if reverse_transfer is None else reverse_transfer,
                    refund_fee=connect if refund_application_fee is None else refund_application_fee,
                )
            )

    def charge_refunded(self, payment_intent_id: str) -> dict:
        """``charge.refunded`` for the payment intent's charge (``amount_refunded`` is cumulative)."""
        with self._lock:
            pi = self._pi_for_driver(payment_intent_id)
            if not pi["latest_charge"]:
                raise ValueError(f"{payment_intent_id} has no successful charge")
            charge = self.charges[pi["latest_charge"]]
            if not charge["amount_refunded"]:
                raise ValueError(f"{charge['id']} has no refund")
            return self._event("charge.refunded", charge)

    def complete_onboarding(self, account_id: str, *, payouts: bool = True) -> dict:
        """The organizer finishes onboarding: returns ``account.updated`` (charges on; payouts too unless
        ``payouts=False``, which leaves ``external_account`` due)."""
        with self._lock:
            account = self._account_for_driver(account_id)
            due = [] if payouts else ["external_account"]
            account.update(details_submitted=True, charges_enabled=True, payouts_enabled=payouts)
            account["requirements"].update(currently_due=due, eventually_due=due, past_due=[], disabled_reason=None)
            for capability in account["capabilities"]:
                account["capabilities"][capability] = "active"
            return self._event("account.updated", account, account=account_id)

    def require_more(self, account_id: str, *requirements: str) -> dict:
        """Stripe asks for more (a verification document...): charges stop; returns ``account.updated``."""
        with self._lock:
            account = self._account_for_driver(account_id)
            account.update(charges_enabled=False, payouts_enabled=False)
            account["requirements"].update(
                currently_due=list(requirements), past_due=list(requirements), disabled_reason="requirements.past_due"
            )
            return self._event("account.updated", account, account=account_id)

    def deauthorize(self, account_id: str) -> dict:
        """The organization disconnects the platform from its account: ``account.application.deauthorized``."""
        with self._lock:
            self._account_for_driver(account_id)
            application = {"id": "ca_" + "fake" * 5, "object": "application", "name": "eventsaas (tests)"}
            return self._event("account.application.deauthorized", application, account=account_id)

    def _account_for_driver(self, account_id: str) -> dict:
        if account_id not in self.accounts:
            raise KeyError(f"FakeStripe: no account {account_id}")
        return self.accounts[account_id]

    def session(self, session_id: str) -> dict:
        """A copy of the session as ``GET /v1/checkout/sessions/{id}`` would return it."""
        with self._lock:
            return copy.deepcopy(self._session_for_driver(session_id))

    def calls(self, method: str | None = None, path: str | None = None) -> list[RecordedRequest]:
        """Recorded API calls, filtered by method and/or exact path."""
        with self._lock:
            return [
                r for r in self.requests if (method is None or r.method == method) and (path is None or r.path == path)
            ]

    # --- internals shared by drivers and endpoints -------------------------------------------------------------------

    def _session_for_driver(self, session_id: str) -> dict:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise ValueError(f"no such checkout session: {session_id}") from None

    def _pi_for_driver(self, payment_intent_id: str) -> dict:
        try:
            return self.payment_intents[payment_intent_id]
        except KeyError:
            raise ValueError(f"no such payment intent: {payment_intent_id}") from None

    def _pending_async(self, session_id: str) -> tuple[dict, dict]:
        session = self._session_for_driver(session_id)
        pi = self.payment_intents.get(session["payment_intent"] or "")
        if session["status"] != "complete" or pi is None or pi["status"] != "processing":
            raise ValueError(f"{session_id} has no pending delayed payment (use complete(..., paid=False) first)")
        return session, pi

    def _capture(self, session: dict, pi: dict) -> None:
        charge = {
            "id": _random_id("ch_"),
            "object": "charge",
            "amount": pi["amount"],
            "amount_captured": pi["amount"],
            "amount_refunded": 0,
            "captured": True,
            "currency": pi["currency"],
            "paid": True,
            "payment_intent": pi["id"],
            "refunded": False,
            "status": "succeeded",
            "metadata": copy.deepcopy(pi["metadata"]),
            "billing_details": {"email": session["customer_details"]["email"], "name": None},
            "receipt_email": pi["receipt_email"],
            "created": int(time.time()),
            "livemode": False,
            "application_fee": None,
            "application_fee_amount": pi["application_fee_amount"],
            "on_behalf_of": pi["on_behalf_of"],
            "transfer": None,
            "transfer_data": copy.deepcopy(pi["transfer_data"]),
            "transfer_group": pi["transfer_group"],
        }
        self.charges[charge["id"]] = charge
        self._destination_charge(charge)
        pi.update(status="succeeded", amount_received=pi["amount"], latest_charge=charge["id"])
        session["payment_status"] = "paid"

    def _expire(self, session: dict) -> None:
        session.update(status="expired", url=None)

    def _refund(
        self,
        charge: dict,
        amount: int,
        metadata: dict,
        reason: str | None,
        *,
        reverse_transfer: bool = False,
        refund_fee: bool = False,
    ) -> dict:
        refund = {
            "id": _random_id("re_"),
            "object": "refund",
            "amount": amount,
            "balance_transaction": None,
            "charge": charge["id"],
            "created": int(time.time()),
            "currency": charge["currency"],
            "metadata": metadata,
            "payment_intent": charge["payment_intent"],
            "reason": reason,
            "receipt_number": None,
            "status": "succeeded",
            "transfer_reversal": None,
        }
        self.refunds[refund["id"]] = refund
        self.refunds_created += 1
        self._refund_connect(charge, refund, reverse_transfer=reverse_transfer, refund_application_fee=refund_fee)
        charge["amount_refunded"] += amount
        charge["refunded"] = charge["amount_refunded"] >= charge["amount"]
        return refund

    def _event(self, event_type: str, obj: dict, *, account: str | None = None) -> dict:
        event = {
            "id": _random_id("evt_"),
            "object": "event",
            **({"account": account} if account else {}),
            "api_version": API_VERSION,
            "created": int(time.time()),
            "data": {"object": copy.deepcopy(obj)},
            "livemode": False,
            "pending_webhooks": 1,
            "request": {"id": None, "idempotency_key": None},
            "type": event_type,
        }
        self.events.append(event)
        return copy.deepcopy(event)

    def _lookup(self, object_id: str) -> dict | None:
        for store in (
            self.payment_intents,
            self.charges,
            self.refunds,
            self.sessions,
            self.transfers,
            self.application_fees,
        ):
            if object_id in store:
                return store[object_id]
        return None

    # --- HTTP API ----------------------------------------------------------------------------------------------------

    _ROUTES = [
        ("POST", re.compile(r"/v1/checkout/sessions"), "_create_session"),
        ("GET", re.compile(r"/v1/checkout/sessions"), "_list_sessions"),
        ("GET", re.compile(r"/v1/checkout/sessions/(?P<object_id>[^/]+)"), "_retrieve_session"),
        ("GET", re.compile(r"/v1/checkout/sessions/(?P<object_id>[^/]+)/line_items"), "_session_line_items"),
        ("POST", re.compile(r"/v1/checkout/sessions/(?P<object_id>[^/]+)/expire"), "_expire_session"),
        ("POST", re.compile(r"/v1/refunds"), "_create_refund"),
        ("GET", re.compile(r"/v1/refunds"), "_list_refunds"),
        ("GET", re.compile(r"/v1/refunds/(?P<object_id>[^/]+)"), "_retrieve_refund"),
        ("GET", re.compile(r"/v1/payment_intents/(?P<object_id>[^/]+)"), "_retrieve_payment_intent"),
        ("GET", re.compile(r"/v1/charges/(?P<object_id>[^/]+)"), "_retrieve_charge"),
        ("GET", re.compile(r"/v1/application_fees"), "_list_application_fees"),
        ("GET", re.compile(r"/v1/application_fees/(?P<object_id>[^/]+)"), "_retrieve_application_fee"),
        ("GET", re.compile(r"/v1/application_fees/(?P<object_id>[^/]+)/refunds"), "_list_fee_refunds"),
        ("GET", re.compile(r"/v1/transfers/(?P<object_id>[^/]+)"), "_retrieve_transfer"),
        ("GET", re.compile(r"/v1/transfers/(?P<object_id>[^/]+)/reversals"), "_list_transfer_reversals"),
        ("POST", re.compile(r"/v1/accounts"), "_create_account"),
        ("GET", re.compile(r"/v1/accounts/(?P<object_id>[^/]+)"), "_retrieve_account"),
        ("POST", re.compile(r"/v1/accounts/(?P<object_id>[^/]+)"), "_update_account"),
        ("POST", re.compile(r"/v1/account_links"), "_create_account_link"),
    ]

    def _handle_api(
        self, method: str, path: str, query: str, raw_body: bytes, headers: CaseInsensitiveDict
    ) -> tuple[int, dict, bytes, bool]:
        request_id = _random_id("req_", 14)
        out_headers = {
            "Content-Type": "application/json",
            "Request-Id": request_id,
            "Stripe-Version": headers.get("Stripe-Version") or API_VERSION,
        }
        key = headers.get("Idempotency-Key") if method == "POST" else None
        if key:
            out_headers["Idempotency-Key"] = key
        params: dict = {}
        injected = False
        try:
            try:
                pairs = parse_qsl(query, keep_blank_values=True)
                if method == "POST":
                    pairs += parse_qsl(raw_body.decode("utf-8"), keep_blank_values=True)
                params = parse_params(pairs)
            finally:
                with self._lock:
                    self.requests.append(RecordedRequest(method, path, params, headers))
            if self.latency:
                time.sleep(self.latency)
            with self._lock:
                if self._failures:
                    injected = True
                    status, should_retry = self._failures.pop(0)
                    raise self._injected_failure(status, should_retry)
                self._authenticate(headers)
                handler, kwargs = self._route(method, path)
                if key and key in self._idempotency:
                    status, body = self._replay(key, method, path, params)
                    out_headers.update({"Idempotent-Replayed": "true", "Original-Request": body.pop("_request")})
                else:
                    try:
                        status, body = 200, handler(params, **kwargs)
                    except _Error as error:
                        if key and error.saved:
                            self._save(key, method, path, params, error.status, error.body(), request_id)
                        raise
                    if key:
                        self._save(key, method, path, params, status, body, request_id)
        except _Error as error:
            status, body = error.status, error.body()
            out_headers.update(error.headers)
        drop = False
        if not injected:
            with self._lock:
                if self._drops:
                    self._drops -= 1
                    drop = True
        return status, out_headers, json.dumps(body, indent=2).encode("utf-8"), drop

    def _injected_failure(self, status: int, should_retry: bool | None) -> _Error:
        headers = {} if should_retry is None else {"Stripe-Should-Retry": "true" if should_retry else "false"}
        if status == 429:
            return _Error(
                429,
                "Too many requests hit the API too quickly. (FakeStripe.fail_next)",
                code="rate_limit",
                headers=headers,
            )
        if status >= 500:
            return _Error(
                status,
                "Something went wrong on Stripe's end. (FakeStripe.fail_next)",
                type="api_error",
                headers=headers,
            )
        return _Error(status, f"Injected failure {status} (FakeStripe.fail_next)", headers=headers)

    def _authenticate(self, headers: CaseInsensitiveDict) -> None:
        auth = headers.get("Authorization") or ""
        scheme, _, credential = auth.partition(" ")
        if scheme.lower() == "basic":
            try:
                credential = base64.b64decode(credential).decode("utf-8").partition(":")[0]
            except ValueError:
                credential = ""
        elif scheme.lower() != "bearer":
            credential = ""
        credential = credential.strip()
        if not credential:
            raise _Error(
                401,
                "You did not provide an API key. You need to provide your API key in the Authorization header, "
                "using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See "
                "https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
            )
        if not hmac.compare_digest(credential, self.api_key):
            masked = credential[:8] + "*" * max(len(credential) - 12, 0) + credential[-4:]
            raise _Error(401, f"Invalid API Key provided: {masked}")

    def _route(self, method: str, path: str):
        for route_method, pattern, name in self._ROUTES:
            match = pattern.fullmatch(path)
            if match and route_method == method:
                return getattr(self, name), match.groupdict()
        raise _Error(
            404,
            f"Unrecognized request URL ({method}: {path}). Please see https://stripe.com/docs or we can help at "
            "https://support.stripe.com/.",
        )

    def _save(self, key: str, method: str, path: str, params: dict, status: int, body: dict, request_id: str) -> None:
        self._idempotency[key] = {
            "method": method,
            "path": path,
            "params": copy.deepcopy(params),
            "status": status,
            "body": copy.deepcopy(body),
            "request_id": request_id,
        }

    def _replay(self, key: str, method: str, path: str, params: dict) -> tuple[int, dict]:
        saved = self._idempotency[key]
        if (saved["method"], saved["path"]) != (method, path):
            raise _Error(
                400,
                f"Keys for idempotent requests can only be used for the same endpoint they were first used for "
                f"('{method} {path}' vs '{saved['method']} {saved['path']}'). Try using a key other than '{key}' if "
                "you meant to execute a different request.",
                type="idempotency_error",
            )
        if saved["params"] != params:
            raise _Error(
                400,
                f"Keys for idempotent requests can only be used with the same parameters they were first used with. "
                f"Try using a key other than '{key}' if you meant to execute a different request.",
                type="idempotency_error",
            )
        body = copy.deepcopy(saved["body"])
        body["_request"] = saved["request_id"]
        return saved["status"], body

    def _expand(self, obj: dict, params: dict) -> dict:
        """Apply ``expand`` (dotted paths; ``data.`` for lists) to a copy of ``obj``."""
        obj = copy.deepcopy(obj)
        for index, path in enumerate(params.get("expand") or []):
            param = f"expand[{index}]"
            if not isinstance(path, str):
                raise _Error(400, f"Invalid value for {param}", param=param)
            if obj.get("object") == "list":
                segments = path.split(".")
                if segments[0] != "data" or len(segments) < 2:
                    raise _Error(400, f"This property cannot be expanded ({path}).", param=param)
                for item in obj["data"]:
                    self._expand_path(item, segments[1:], path, param)
            else:
                self._expand_path(obj, path.split("."), path, param)
        return obj

    def _expand_path(self, obj: dict, segments: list[str], path: str, param: str) -> None:
        field, rest = segments[0], segments[1:]
        if field == "line_items" and obj.get("object") == "checkout.session" and not rest:
            obj["line_items"] = self._line_item_list(obj["id"], {})
            return
        if field not in _EXPANDABLE or field not in obj:
            raise _Error(400, f"This property cannot be expanded ({path}).", param=param)
        value = obj[field]
        if isinstance(value, str):
            target = self._lookup(value)
            value = obj[field] = copy.deepcopy(target) if target is not None else value
        if rest and isinstance(value, dict):
            self._expand_path(value, rest, path, param)

    def _list(self, items: list[dict], params: dict, url: str) -> dict:
        limit = _int(params.get("limit"), "limit", minimum=1)
        limit = 10 if limit is None else limit
        if limit > 100:
            raise _Error(400, "This value must be less than or equal to 100.", param="limit")
        ids = [item["id"] for item in items]
        for param in ("starting_after", "ending_before"):
            if params.get(param) and params[param] not in ids:
                raise _no_such("object", params[param], param)
        if params.get("starting_after"):
            items = items[ids.index(params["starting_after"]) + 1 :]
            page, has_more = items[:limit], len(items) > limit
        elif params.get("ending_before"):
            items = items[: ids.index(params["ending_before"])]
            page, has_more = items[-limit:], len(items) > limit
        else:
            page, has_more = items[:limit], len(items) > limit
        return self._expand({"object": "list", "data": copy.deepcopy(page), "has_more": has_more, "url": url}, params)

    # --- endpoints ---------------------------------------------------------------------------------------------------

    def _create_session(self, params: dict) -> dict:
        _check_params(params, _SESSION_CREATE, [])
        mode = params.get("mode")
        if mode is None:
            raise _missing("mode")
        if mode != "payment":
            raise _Error(400, f"FakeStripe only emulates mode=payment, not {mode!r}.", param="mode")
        raw_items = params.get("line_items")
        if not raw_items:
            raise _Error(
                400, "`line_items` is required in `payment` mode.", code="parameter_missing", param="line_items"
            )
        currency = None
        line_items = []
        amount_total = 0
        for index, item in enumerate(raw_items):
            prefix = f"line_items[{index}]"
            if "price" in item:
                raise _no_such("price", item["price"], f"{prefix}[price]")
            price_data = item.get("price_data")
            if price_data is None:
                raise _missing(f"{prefix}[price_data]")
            line_currency = price_data.get("currency")
            if line_currency is None:
                raise _missing(f"{prefix}[price_data][currency]")
            if not re.fullmatch(r"[A-Za-z]{3}", line_currency):
                raise _Error(400, f"Invalid currency: {line_currency}", param=f"{prefix}[price_data][currency]")
            line_currency = line_currency.lower()
            if currency is None:
                currency = line_currency
            elif line_currency != currency:
                raise _Error(
                    400,
                    f"All line items must use the same currency: line_items[0] uses {currency}, {prefix} uses "
                    f"{line_currency}.",
                    param=f"{prefix}[price_data][currency]",
                )
            if price_data.get("unit_amount") is None:
                raise _missing(f"{prefix}[price_data][unit_amount]")
            unit_amount = _int(price_data["unit_amount"], f"{prefix}[price_data][unit_amount]", minimum=0)
            product_data = price_data.get("product_data")
            if price_data.get("product") is not None:
                raise _no_such("product", price_data["product"], f"{prefix}[price_data][product]")
            if not product_data or product_data.get("name") is None:
                raise _missing(f"{prefix}[price_data][product_data][name]")
            if item.get("quantity") is None:
                raise _Error(
                    400,
                    f"Quantity is required. Add `quantity` to `{prefix}`",
                    code="parameter_missing",
                    param=f"{prefix}[quantity]",
                )
            quantity = _int(item["quantity"], f"{prefix}[quantity]", minimum=1)
            if quantity > 999_999:
                raise _Error(400, "This value must be less than or equal to 999999.", param=f"{prefix}[quantity]")
            _metadata(product_data.get("metadata"), f"{prefix}[price_data][product_data][metadata]")
            amount = unit_amount * quantity
            amount_total += amount
            line_items.append(
                {
                    "id": _random_id("li_"),
                    "object": "item",
                    "amount_discount": 0,
                    "amount_subtotal": amount,
                    "amount_tax": 0,
                    "amount_total": amount,
                    "currency": line_currency,
                    "description": product_data["name"],
                    "price": {
                        "id": _random_id("price_"),
                        "object": "price",
                        "currency": line_currency,
                        "product": _random_id("prod_", 14),
                        "type": "one_time",
                        "unit_amount": unit_amount,
                    },
                    "quantity": quantity,
                }
            )
        if amount_total > 99_999_999:
            raise _Error(400, "The total amount due must be no more than 999,999.99.", param="line_items")
        now = int(time.time())
        expires_at = _int(params.get("expires_at"), "expires_at")
        if expires_at is None:
            expires_at = now + 24 * 3600
        elif expires_at < now + 30 * 60 - 5:
            raise _Error(
                400,
                "The `expires_at` timestamp must be at least 30 minutes from Checkout Session creation.",
                param="expires_at",
            )
        elif expires_at > now + 24 * 3600 + 5:
            raise _Error(
                400,
                "The `expires_at` timestamp must be less than 24 hours from Checkout Session creation.",
                param="expires_at",
            )
        email = params.get("customer_email")
        if email is not None and not re.fullmatch(r"[^@\s]+@[^@\s]+\.[^@\s]+", email):
            raise _Error(400, f"Invalid email address: {email}", code="email_invalid", param="customer_email")
        client_reference_id = params.get("client_reference_id")
        if client_reference_id is not None and len(client_reference_id) > 200:
            raise _Error(400, "client_reference_id can be at most 200 characters.", param="client_reference_id")
        success_url = _url(params.get("success_url"), "success_url")
        cancel_url = _url(params.get("cancel_url"), "cancel_url")
        metadata = _metadata(params.get("metadata"))
        pi_metadata = _metadata(
            (params.get("payment_intent_data") or {}).get("metadata"), "payment_intent_data[metadata]"
        )
        connect = self._connect_params(params.get("payment_intent_data") or {}, amount_total)
        self._check_expand(params, {"payment_intent", "line_items"})

        session_id = _random_id("cs_test_", 58)
        session = {
            "id": session_id,
            "object": "checkout.session",
            "amount_subtotal": amount_total,
            "amount_total": amount_total,
            "cancel_url": cancel_url,
            "client_reference_id": client_reference_id,
            "created": now,
            "currency": currency,
            "customer": None,
            "customer_details": {
                "address": None,
                "email": email,
                "name": None,
                "phone": None,
                "tax_exempt": "none",
                "tax_ids": [],
            },
            "customer_email": email,
            "expires_at": expires_at,
            "livemode": False,
            "locale": params.get("locale"),
            "metadata": metadata,
            "mode": "payment",
            "payment_intent": None,
            "payment_method_types": params.get("payment_method_types") or ["card"],
            "payment_status": "unpaid",
            "status": "open",
            "success_url": success_url,
            "ui_mode": "hosted",
            "url": f"{self.base_url}/pay/{session_id}",
        }
        self.sessions[session_id] = session
        self._line_items[session_id] = line_items
        self._pi_metadata[session_id] = pi_metadata
        self._pi_connect[session_id] = connect
        self.sessions_created += 1
        return self._expand(session, params)

    def _check_expand(self, params: dict, allowed: set[str]) -> None:
        for index, path in enumerate(params.get("expand") or []):
            if path.split(".")[0] not in allowed:
                raise _Error(400, f"This property cannot be expanded ({path}).", param=f"expand[{index}]")

    def _get_session(self, session_id: str) -> dict:
        try:
            return self.sessions[session_id]
        except KeyError:
            raise _no_such("checkout.session", session_id) from None

    def _retrieve_session(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        return self._expand(self._get_session(object_id), params)

    def _list_sessions(self, params: dict) -> dict:
        _check_params(params, _SESSION_LIST, [])
        items = list(reversed(self.sessions.values()))
        if params.get("payment_intent"):
            items = [s for s in items if s["payment_intent"] == params["payment_intent"]]
        if params.get("status"):
            items = [s for s in items if s["status"] == params["status"]]
        return self._list(items, params, "/v1/checkout/sessions")

    def _line_item_list(self, session_id: str, params: dict) -> dict:
        return self._list(self._line_items[session_id], params, f"/v1/checkout/sessions/{session_id}/line_items")

    def _session_line_items(self, params: dict, object_id: str) -> dict:
        _check_params(params, _LIST, [])
        self._get_session(object_id)
        return self._line_item_list(object_id, params)

    def _expire_session(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        session = self._get_session(object_id)
        if session["status"] != "open":
            raise _Error(
                400,
                f'Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a '
                f'status of "{session["status"]}".',
                saved=True,
            )
        self._expire(session)
        return self._expand(session, params)

    def _create_refund(self, params: dict) -> dict:
        _check_params(params, _REFUND_CREATE, [])
        pi_id, charge_id = params.get("payment_intent"), params.get("charge")
        if pi_id is None and charge_id is None:
            raise _Error(
                400,
                "One of the following params should be provided for this request: payment_intent or charge.",
                code="parameter_missing",
            )
        if charge_id is not None:
            charge = self.charges.get(charge_id)
            if charge is None:
                raise _no_such("charge", charge_id, "charge")
            if pi_id is not None and charge["payment_intent"] != pi_id:
                raise _Error(400, f"Charge {charge_id} does not belong to {pi_id}.", param="charge")
        else:
            pi = self.payment_intents.get(pi_id)
            if pi is None:
                raise _no_such("payment_intent", pi_id, "payment_intent")
            charge = self.charges.get(pi["latest_charge"] or "")
            if charge is None:
                raise _Error(
                    400,
                    f"This PaymentIntent ({pi_id}) does not have a successful charge to refund.",
                    code="payment_intent_unexpected_state",
                    param="payment_intent",
                    saved=True,
                )
        amount = _int(params.get("amount"), "amount", minimum=1, positive=True)
        reason = params.get("reason")
        if reason is not None and reason not in _REFUND_REASONS:
            raise _Error(
                400,
                f"Invalid reason: must be one of {', '.join(sorted(_REFUND_REASONS))}",
                param="reason",
            )
        metadata = _metadata(params.get("metadata"))
        self._check_expand(params, {"charge", "payment_intent"})
        remaining = charge["amount"] - charge["amount_refunded"]
        if remaining <= 0:
            raise _Error(
                400,
                f"Charge {charge['id']} has already been refunded.",
                code="charge_already_refunded",
                saved=True,
            )
        if amount is None:
            amount = remaining
        if amount > remaining:
            raise _Error(
                400,
                f"Refund amount ({_money(amount, charge['currency'])}) is greater than unrefunded amount on charge "
                f"({_money(remaining, charge['currency'])})",
                code="amount_too_large",
                param="amount",
                saved=True,
            )
        reverse_transfer = _bool(params.get("reverse_transfer"), "reverse_transfer")
        refund_fee = _bool(params.get("refund_application_fee"), "refund_application_fee")
        if (reverse_transfer or refund_fee) and not charge["transfer_data"]:
            param = "reverse_transfer" if reverse_transfer else "refund_application_fee"
            raise _Error(
                400, f"The charge {charge['id']} is not a destination charge: {param} cannot be set.", param=param
            )
        refund = self._refund(
            charge, amount, metadata, reason, reverse_transfer=reverse_transfer, refund_fee=refund_fee
        )
        return self._expand(refund, params)

    def _list_refunds(self, params: dict) -> dict:
        _check_params(params, _REFUND_LIST, [])
        items = list(reversed(self.refunds.values()))  # newest first
        if params.get("payment_intent"):
            items = [r for r in items if r["payment_intent"] == params["payment_intent"]]
        if params.get("charge"):
            items = [r for r in items if r["charge"] == params["charge"]]
        return self._list(items, params, "/v1/refunds")

    def _retrieve_refund(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        if object_id not in self.refunds:
            raise _no_such("refund", object_id)
        return self._expand(self.refunds[object_id], params)

    def _retrieve_payment_intent(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        if object_id not in self.payment_intents:
            raise _no_such("payment_intent", object_id)
        return self._expand(self.payment_intents[object_id], params)

    def _retrieve_charge(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        if object_id not in self.charges:
            raise _no_such("charge", object_id)
        return self._expand(self.charges[object_id], params)

    # --- Connect: destination charges ----------------------------------------------------------------------------

    def _connect_params(self, pi_data: dict, amount_total: int) -> dict:
        """Check a session's Connect parameters (payment_intent_data[...]) as Stripe does; the PaymentIntent's."""
        fee = _int(pi_data.get("application_fee_amount"), "payment_intent_data[application_fee_amount]", minimum=0)
        transfer_data = pi_data.get("transfer_data")
        on_behalf_of = pi_data.get("on_behalf_of")
        destination = None
        if transfer_data is not None:
            destination = transfer_data.get("destination")
            if destination is None:
                raise _missing("payment_intent_data[transfer_data][destination]")
            if not re.fullmatch(r"acct_\w+", destination):
                raise _no_such("account", destination, "payment_intent_data[transfer_data][destination]")
            if transfer_data.get("amount") is not None and fee is not None:
                raise _Error(
                    400,
                    "You cannot specify both application_fee_amount and transfer_data[amount].",
                    param="payment_intent_data[application_fee_amount]",
                )
        if fee is not None:
            if destination is None and on_behalf_of is None:
                raise _Error(
                    400,
                    "Can only apply an application_fee_amount when the PaymentIntent is attempting a direct payment "
                    "(using an OAuth key or Stripe-Account header) or destination payment (using "
                    "`transfer_data[destination]`).",
                    param="payment_intent_data[application_fee_amount]",
                )
            if fee > amount_total:
                raise _Error(
                    400,
                    "The application fee amount cannot be greater than the amount of the payment.",
                    param="payment_intent_data[application_fee_amount]",
                )
        return {
            "application_fee_amount": fee,
            "on_behalf_of": on_behalf_of,
            "transfer_data": {"destination": destination, "amount": None} if destination else None,
            "transfer_group": pi_data.get("transfer_group"),
        }

    def _destination_charge(self, charge: dict) -> None:
        """On capture: the transfer of the amount less the fee to the destination, and the application fee."""
        if not charge["transfer_data"]:
            return
        now = int(time.time())
        destination = charge["transfer_data"]["destination"]
        fee_amount = charge["application_fee_amount"] or 0
        transfer_id = _random_id("tr_")
        transfer = {
            "id": transfer_id,
            "object": "transfer",
            "amount": charge["amount"] - fee_amount,
            "amount_reversed": 0,
            "balance_transaction": _random_id("txn_"),
            "created": now,
            "currency": charge["currency"],
            "description": None,
            "destination": destination,
            "destination_payment": _random_id("py_"),
            "livemode": False,
            "metadata": {},
            "reversals": {
                "object": "list",
                "data": [],
                "has_more": False,
                "total_count": 0,
                "url": f"/v1/transfers/{transfer_id}/reversals",
            },
            "reversed": False,
            "source_transaction": charge["id"],
            "source_type": "card",
            "transfer_group": charge["transfer_group"] or f"group_{charge['payment_intent']}",
        }
        self.transfers[transfer_id] = transfer
        charge["transfer"] = transfer_id
        if charge["application_fee_amount"] is not None:
            fee_id = _random_id("fee_")
            self.application_fees[fee_id] = {
                "id": fee_id,
                "object": "application_fee",
                "account": destination,
                "amount": fee_amount,
                "amount_refunded": 0,
                "application": "ca_" + "fakestripe",
                "balance_transaction": _random_id("txn_"),
                "charge": charge["id"],
                "created": now,
                "currency": charge["currency"],
                "fee_source": {"charge": charge["id"], "type": "charge"},
                "livemode": False,
                "originating_transaction": None,
                "refunded": False,
                "refunds": {
                    "object": "list",
                    "data": [],
                    "has_more": False,
                    "total_count": 0,
                    "url": f"/v1/application_fees/{fee_id}/refunds",
                },
            }
            charge["application_fee"] = fee_id

    def _refund_connect(
        self, charge: dict, refund: dict, *, reverse_transfer: bool, refund_application_fee: bool
    ) -> None:
        """A refund of a destination charge: the fee given back and the transfer reversed, each in proportion.

        Cumulative over the charge's refunds, half up (billing/services/fees.py): after refunds totalling R of a
        charge A with fee F, F x R / A of the fee is refunded in all, so a full refund gives back exactly F. With
        both flags the reversal is the refund less the fee part (the connected account pays what it received).
        """
        before, after, whole = charge["amount_refunded"], charge["amount_refunded"] + refund["amount"], charge["amount"]
        fee_part = 0
        fee = self.application_fees.get(charge["application_fee"] or "")
        if refund_application_fee and fee is not None:
            fee_part = _proportional(fee["amount"], after, whole) - _proportional(fee["amount"], before, whole)
            fee_refund = {
                "id": _random_id("fr_"),
                "object": "fee_refund",
                "amount": fee_part,
                "balance_transaction": _random_id("txn_"),
                "created": int(time.time()),
                "currency": fee["currency"],
                "fee": fee["id"],
                "metadata": {},
            }
            fee["refunds"]["data"].insert(0, fee_refund)
            fee["refunds"]["total_count"] += 1
            fee["amount_refunded"] += fee_part
            fee["refunded"] = fee["amount_refunded"] >= fee["amount"]
        transfer = self.transfers.get(charge["transfer"] or "")
        if reverse_transfer and transfer is not None:
            if refund_application_fee and fee is not None:
                reversed_amount = refund["amount"] - fee_part
            else:
                reversed_amount = _proportional(transfer["amount"], after, whole) - _proportional(
                    transfer["amount"], before, whole
                )
            reversal = {
                "id": _random_id("trr_"),
                "object": "transfer_reversal",
                "amount": reversed_amount,
                "balance_transaction": _random_id("txn_"),
                "created": int(time.time()),
                "currency": transfer["currency"],
                "destination_payment_refund": _random_id("pyr_"),
                "metadata": {},
                "source_refund": refund["id"],
                "transfer": transfer["id"],
            }
            transfer["reversals"]["data"].insert(0, reversal)
            transfer["reversals"]["total_count"] += 1
            transfer["amount_reversed"] += reversed_amount
            transfer["reversed"] = transfer["amount_reversed"] >= transfer["amount"]
            refund["transfer_reversal"] = reversal["id"]

    def _get_application_fee(self, fee_id: str) -> dict:
        if fee_id not in self.application_fees:
            raise _no_such("application_fee", fee_id)
        return self.application_fees[fee_id]

    def _list_application_fees(self, params: dict) -> dict:
        _check_params(params, _APPLICATION_FEE_LIST, [])
        items = list(reversed(self.application_fees.values()))
        if params.get("charge"):
            items = [fee for fee in items if fee["charge"] == params["charge"]]
        return self._list(items, params, "/v1/application_fees")

    def _retrieve_application_fee(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        return self._expand(self._get_application_fee(object_id), params)

    def _list_fee_refunds(self, params: dict, object_id: str) -> dict:
        _check_params(params, _LIST, [])
        fee = self._get_application_fee(object_id)
        return self._list(fee["refunds"]["data"], params, f"/v1/application_fees/{object_id}/refunds")

    def _get_transfer(self, transfer_id: str) -> dict:
        if transfer_id not in self.transfers:
            raise _no_such("transfer", transfer_id)
        return self.transfers[transfer_id]

    def _retrieve_transfer(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        return self._expand(self._get_transfer(object_id), params)

    def _list_transfer_reversals(self, params: dict, object_id: str) -> dict:
        _check_params(params, _LIST, [])
        transfer = self._get_transfer(object_id)
        return self._list(transfer["reversals"]["data"], params, f"/v1/transfers/{object_id}/reversals")

    def _create_account(self, params: dict) -> dict:
        _check_params(params, _ACCOUNT_CREATE, [])
        account_type = params.get("type")
        if account_type is None:
            raise _missing("type")
        if account_type not in {"express", "standard", "custom"}:
            raise _Error(
                400, f"Invalid type: must be one of express, standard, or custom ({account_type}).", param="type"
            )
        if account_type != "express":
            raise _Error(400, f"FakeStripe only emulates Express accounts, not {account_type!r}.", param="type")
        capabilities = {}
        for name, wanted in (params.get("capabilities") or {}).items():
            if wanted.get("requested") not in {"true", "false"}:
                raise _Error(400, "Invalid boolean", param=f"capabilities[{name}][requested]")
            if wanted["requested"] == "true":
                capabilities[name] = "inactive"
        if "card_payments" in capabilities and "transfers" not in capabilities:
            raise _Error(
                400,
                "Accounts with the card_payments capability must also request the transfers capability.",
                param="capabilities",
            )
        country = (params.get("country") or "US").upper()
        account = {
            "id": _random_id("acct_", 16),
            "object": "account",
            "type": "express",
            "business_profile": {"mcc": None, "name": None, "url": None},
            "business_type": None,
            "capabilities": capabilities,
            "charges_enabled": False,
            "country": country,
            "created": int(time.time()),
            "default_currency": (params.get("default_currency") or ("eur" if country != "US" else "usd")).lower(),
            "details_submitted": False,
            "email": params.get("email"),
            "external_accounts": {
                "object": "list",
                "data": [],
                "has_more": False,
                "url": "/v1/accounts/x/external_accounts",
            },
            "metadata": _metadata(params.get("metadata")),
            "payouts_enabled": False,
            "requirements": {
                "currently_due": list(ONBOARDING_REQUIREMENTS),
                "eventually_due": list(ONBOARDING_REQUIREMENTS),
                "past_due": [],
                "pending_verification": [],
                "current_deadline": None,
                "disabled_reason": "requirements.past_due",
                "errors": [],
            },
            "settings": {"payouts": {"schedule": {"interval": "daily", "delay_days": 7}}},
            "tos_acceptance": {"date": None, "ip": None},
        }
        account["external_accounts"]["url"] = f"/v1/accounts/{account['id']}/external_accounts"
        self.accounts[account["id"]] = account
        self.accounts_created += 1
        return self._expand(account, params)

    def _retrieve_account(self, params: dict, object_id: str) -> dict:
        _check_params(params, _EXPAND_ONLY, [])
        if object_id not in self.accounts:
            raise _Error(
                403,
                f"The provided key does not have access to account '{object_id}' (or that account does not exist). "
                "Application access may have been revoked.",
                type="invalid_request_error",
                code="account_invalid",
            )
        return self._expand(self.accounts[object_id], params)

    def _update_account(self, params: dict, object_id: str) -> dict:
        _check_params(params, _ACCOUNT_UPDATE, [])
        account = self.accounts.get(object_id)
        if account is None:
            raise _no_such("account", object_id)
        if "email" in params:
            account["email"] = params["email"]
        if "metadata" in params:
            account["metadata"] = {**account["metadata"], **_metadata(params["metadata"])}
            account["metadata"] = {k: v for k, v in account["metadata"].items() if v != ""}
        return self._expand(account, params)

    def _create_account_link(self, params: dict) -> dict:
        _check_params(params, _ACCOUNT_LINK_CREATE, [])
        for required in ("account", "type"):
            if not params.get(required):
                raise _missing(required)
        if params["account"] not in self.accounts:
            raise _no_such("account", params["account"], "account")
        if params["type"] not in {"account_onboarding", "account_update"}:
            raise _Error(400, f"Invalid type: {params['type']}", param="type")
        if params["type"] == "account_update":
            raise _Error(
                400, "You cannot create `account_update` type Account Links for Express accounts.", param="type"
            )
        _url(params.get("refresh_url"), "refresh_url")
        _url(params.get("return_url"), "return_url")
        token = _random_id("", 32)
        link = {
            "object": "account_link",
            "created": int(time.time()),
            "expires_at": int(time.time()) + 300,
            "url": f"{self.base_url}/onboard/{token}",
        }
        self.account_links.append(
            {
                **link,
                "account": params["account"],
                "refresh_url": params.get("refresh_url"),
                "return_url": params.get("return_url"),
                "used": False,
            }
        )
        return link

    # --- hosted payment page -----------------------------------------------------------------------------------------

    def _handle_page(self, method: str, path: str, raw_body: bytes) -> tuple[int, dict, bytes]:
        session_id = path[len("/pay/") :].strip("/")
        with self._lock:
            session = copy.deepcopy(self.sessions.get(session_id))
            line_items = copy.deepcopy(self._line_items.get(session_id, []))
        if session is None:
            return self._page(404, "Not found", "<p>Unknown Checkout Session.</p>")
        if method == "POST":
            action = dict(parse_qsl(raw_body.decode("utf-8"))).get("action")
            if session["status"] != "open":
                return self._page(409, "Inactive", f"<p>This Checkout Session is {session['status']}.</p>")
            if action == "pay":
                self.complete(session_id)
                target = session["success_url"]
            elif action == "cancel":
                target = session["cancel_url"]
            else:
                return self._page(400, "Bad request", "<p>Unknown action.</p>")
            if not target:
                return self._page(200, "Done", f"<p>{html.escape(action)}: done.</p>")
            target = target.replace("{CHECKOUT_SESSION_ID}", session_id)
            return 303, {"Location": target, "Content-Type": "text/plain"}, b""
        rows = "".join(
            f"<li>{item['quantity']} &times; {html.escape(item['description'])}: "
            f"{_money(item['amount_total'], item['currency'])}</li>"
            for item in line_items
        )
        body = f"<ul>{rows}</ul><p id='total'>Total: {_money(session['amount_total'], session['currency'])}</p>"
        if session["status"] == "open":
            body += (
                "<form method='post'><button name='action' value='pay'>Pay</button>"
                "<button name='action' value='cancel'>Cancel</button></form>"
            )
        else:
            body += f"<p>This Checkout Session is {session['status']}.</p>"
        return self._page(200, "FakeStripe Checkout", body)

    @staticmethod
    def _page(status: int, title: str, body: str) -> tuple[int, dict, bytes]:
        page = f"<!doctype html><html><head><title>{title}</title></head><body><h1>{title}</h1>{body}</body></html>"
        return status, {"Content-Type": "text/html; charset=utf-8"}, page.encode("utf-8")

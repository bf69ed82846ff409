"""A production install, as the Dockerfile and docs/deployment.md make one: requirements.txt alone, production
settings, gunicorn + one Celery worker + beat, PostgreSQL and Redis, then used over HTTP.

- The virtualenv is built with `pip install --require-hashes -r requirements.txt` and nothing else (its package
  list must equal the lock, so no development package can hide a missing dependency). It is cached, keyed by the
  lock's hash and the Python version, in PRODINSTALL_VENV_CACHE (default ~/.cache/eventsaas/prodinstall): CI
  rebuilds it only when requirements.txt changes.
- The code is the checkout's tracked files, copied into a temporary folder (what `COPY . .` ships).
- `manage.py check --deploy` passes with the production settings a deployment sets (docs/deployment.md).
- Payments go through Stripe's API as production's do (test keys, Stripe's test mode): the SDK talks to the
  local Stripe server of the tests (tests/support/stripe_server.py), and the payment's event is delivered to
  the webhook signed with the configured webhook secret, exactly as Stripe signs it. Production still refuses
  the local test-payment mode (TEST_PAYMENTS).
- Checked over HTTP: a paid order's tickets email (file email backend); a guest's login stamped by the worker;
  an unpaid order's seats released by beat's expiry job after a one-minute hold (ORDER_HOLD_MINUTES=1, the
  sweep every 3 s through BEAT_INTERVALS), its Checkout Session expired at Stripe; and JSON log lines in which
  the webhook request's id appears in the lines of the tasks it caused.

PostgreSQL: PRODINSTALL_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/eventsaas_prodinstall; the
database is dropped and created). Redis: TEST_REDIS_SERVER (default redis://127.0.0.1:6379), database 7,
flushed. Skipped when either is unreachable, unless REQUIRE_PRODINSTALL=1.
"""

import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support.stripe_server import FakeStripe
from tests.system.conftest import ROOT, answers, call, free_port, person_env, require, wait_for

pytestmark = pytest.mark.prodinstall

DATABASE_URL = os.environ.get("PRODINSTALL_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/eventsaas_prodinstall")
REDIS_URL = os.environ.get("TEST_REDIS_SERVER", "redis://127.0.0.1:6379").rstrip("/") + "/7"
VENV_CACHE = Path(os.environ.get("PRODINSTALL_VENV_CACHE", "~/.cache/eventsaas/prodinstall")).expanduser()
STRIPE_KEY, WEBHOOK_SECRET = "sk_test_prodinstall", "whsec_prodinstall_" + "x" * 24
CONNECT_WEBHOOK_SECRET = "whsec_prodinstall_connect_" + "y" * 24
HTTPS = {"X-Forwarded-Proto": "https"}  # a TLS-terminating proxy in front (BEHIND_TLS_PROXY=1)


def locked_packages() -> dict[str, str]:
    from packaging.utils import canonicalize_name

    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        if line and not line.startswith((" ", "#")) and "==" in line:
            name, version = line.split("==")
            pins[canonicalize_name(name)] = version.split()[0]
    return pins


@pytest.fixture(scope="module")
def production_venv() -> Path:
    """A virtualenv of requirements.txt alone; built once per lock and Python version."""
    python = shutil.which("python3.11") or sys.executable
    version = subprocess.run([python, "-c", "import sys; print(sys.version)"], capture_output=True, text=True).stdout
    key = hashlib.sha256((ROOT / "requirements.txt").read_bytes() + version.encode()).hexdigest()[:16]
    venv = VENV_CACHE / f"venv-{key}"
    if not (venv / ".complete").exists():
        shutil.rmtree(venv, ignore_errors=True)
        venv.parent.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        subprocess.run([python, "-m", "venv", str(venv)], check=True)
        install = subprocess.run(
            [venv / "bin/python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
            + ["--require-hashes", "-r", ROOT / "requirements.txt"],
            capture_output=True,
            text=True,
        )
        assert install.returncode == 0, install.stdout + install.stderr
        (venv / ".complete").write_text(key)
        print(f"\nbuilt the production virtualenv from requirements.txt in {time.monotonic() - started:.0f} s")
    freeze = subprocess.run([venv / "bin/python", "-m", "pip", "freeze"], capture_output=True, text=True, check=True)
    from packaging.utils import canonicalize_name

    installed = {canonicalize_name(n): v for n, v in (line.split("==") for line in freeze.stdout.split())}
    assert installed == locked_packages(), "the production virtualenv differs from requirements.txt"
    return venv


@pytest.fixture(scope="module")
def services():
    """PostgreSQL (a fresh database) and Redis (an emptied database), or a skip."""
    import psycopg
    import redis

    parts = urlsplit(DATABASE_URL)
    name = parts.path.lstrip("/")
    assert name.startswith("eventsaas"), f"refusing to drop {name!r}: not a test database of eventsaas"
    try:
        with psycopg.connect(DATABASE_URL.replace(parts.path, "/postgres"), autocommit=True, connect_timeout=3) as pg:
            pg.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            pg.execute(f'CREATE DATABASE "{name}"')
    except psycopg.OperationalError as exc:
        require("PRODINSTALL", f"PostgreSQL is not reachable at {DATABASE_URL} ({exc})")
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1)
    try:
        client.flushdb()
    except redis.exceptions.RedisError as exc:
        require("PRODINSTALL", f"Redis is not reachable at {REDIS_URL} ({exc})")
    yield
    client.flushdb()
    client.close()


@pytest.fixture(scope="module")
def shipped_code(tmp_path_factory) -> Path:
    """The checkout's tracked files, as `COPY . .` ships them (no .venv, no local database, no var/)."""
    target = tmp_path_factory.mktemp("prodinstall") / "app"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = ROOT / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


class Deployment:
    def __init__(self, venv: Path, app: Path, folder: Path, stripe: FakeStripe):
        self.venv, self.app, self.folder = venv, app, folder
        self.port = free_port()
        self.address = f"http://127.0.0.1:{self.port}"
        self.emails = folder / "emails"
        key = folder / "jwt-signing.pem"
        key.write_bytes(_rsa_key_pem())
        key.chmod(0o600)
        self.env = person_env(
            DJANGO_ENV="production",
            SECRET_KEY=secrets.token_urlsafe(64),
            ALLOWED_HOSTS="127.0.0.1,localhost",
            BEHIND_TLS_PROXY=1,
            SECURE_HSTS_SECONDS=31536000,
            SECURE_HSTS_INCLUDE_SUBDOMAINS=1,
            SECURE_HSTS_PRELOAD=1,
            DATABASE_URL=DATABASE_URL,
            # Connections kept by web processes and the worker alike, as docs/deployment.md recommends.
            DB_CONN_MAX_AGE=60,
            REDIS_URL=REDIS_URL,
            JWT_PRIVATE_KEY_FILES=key,
            STRIPE_SECRET_KEY=STRIPE_KEY,
            STRIPE_WEBHOOK_SECRET=WEBHOOK_SECRET,
            STRIPE_CONNECT_WEBHOOK_SECRET=CONNECT_WEBHOOK_SECRET,
            STRIPE_API_BASE=stripe.base_url,
            EMAIL_BACKEND="django.core.mail.backends.filebased.EmailBackend",
            EMAIL_FILE_PATH=self.emails,
            SITE_URL=self.address,
            DEFAULT_FROM_EMAIL="Events <invitations@events.example.com>",
            ORDER_HOLD_MINUTES=1,
            ORDER_EXPIRY_GRACE_SECONDS=0,
            BEAT_INTERVALS="billing.orders_expire_due=3,guests.activity_flush=2",
            CELERY_BEAT_SCHEDULE_FILENAME=folder / "celerybeat-schedule",
            WEB_CONCURRENCY=2,
        )
        self.processes: dict[str, subprocess.Popen] = {}

    def manage(self, *args) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.venv / "bin/python", "manage.py", *args], cwd=self.app, env=self.env, capture_output=True, text=True
        )

    def start(self, name: str, *command):
        log = open(self.folder / f"{name}.log", "wb")  # noqa: SIM115 - the process writes it until stop()
        self.processes[name] = subprocess.Popen(
            [self.venv / "bin" / command[0], *command[1:]],
            cwd=self.app,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()

    def log_lines(self, name: str) -> list[dict]:
        """The process's log lines, each of which must be a JSON object."""
        lines = []
        for raw in (self.folder / f"{name}.log").read_text(errors="replace").splitlines():
            if raw.strip():
                try:
                    lines.append(json.loads(raw))
                except ValueError:
                    raise AssertionError(f"{name} wrote a line that is not JSON: {raw!r}") from None
        return lines

    def stop(self):
        for process in self.processes.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes.values():
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            try:
                os.killpg(process.pid, signal.SIGKILL)  # whatever the leader left behind
            except ProcessLookupError:
                pass

    def call(self, method, path, body=None, **kwargs):
        return call(method, self.address + path, body, headers={**HTTPS, **kwargs.pop("headers", {})}, **kwargs)


def _rsa_key_pem() -> bytes:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def test_web_worker_and_beat_from_requirements_txt_alone(production_venv, services, shipped_code, tmp_path):
    with FakeStripe(api_key=STRIPE_KEY) as stripe:
        deployment = Deployment(production_venv, shipped_code, tmp_path, stripe)
        try:
            run_deployment(deployment, stripe)
        finally:
            deployment.stop()


def run_deployment(deployment: Deployment, stripe: FakeStripe):
    demo = deployment_serving(deployment, stripe)

    concert = demo["ticketed_event"]
    general, front_row = concert["ticket_types"]
    unpaid = checkout(deployment, concert["id"], front_row["id"], 2, "late@example.com")  # left to expire

    # A buyer pays: Stripe delivers checkout.session.completed, signed with the endpoint's secret.
    paid = checkout(deployment, concert["id"], general["id"], 1, "buyer@example.com")
    request_id = str(uuid.uuid4())
    payload, signature = stripe.signed_payload(stripe.complete(session_of(paid)), WEBHOOK_SECRET)
    status, _, _ = webhook(deployment, payload, signature, request_id)
    assert status == 200
    email = wait_for(
        lambda: tickets_email(deployment, "buyer@example.com"), timeout=60, what="the tickets email written"
    )
    assert "Subject: Your tickets for Demo Concert" in email

    # A guest logs in; the worker's activity flush stamps last_login_at.
    guest = demo["featured_guests"][0]
    status, login, _ = deployment.call(
        "POST", "/api/v1/auth/guest-login", {"code": guest["code"], "last_name": guest["last_name"]}
    )
    assert status == 200, login
    token = organizer_token(deployment, demo)
    guest_path = f"/api/v1/events/{demo['event']['id']}/guests/{login['guest']['id']}"
    wait_for(
        lambda: deployment.call("GET", guest_path, token=token)[1].get("last_login_at"),
        timeout=60,
        what="last_login_at set by the worker",
    )

    # Both web processes keep the guest's household in memory (#15); an answer given through one of them, and
    # then a regenerated code, are seen by the very next reads, whichever process serves them.
    guest_reads = [deployment.call("GET", "/api/v1/rsvp", token=login["access"]) for _ in range(20)]
    assert {status for status, _, _ in guest_reads} == {200}
    status, answered, _ = deployment.call("PUT", "/api/v1/rsvp", {"attending": False}, token=login["access"])
    assert status == 200, answered
    after_answer = [deployment.call("GET", "/api/v1/rsvp", token=login["access"]) for _ in range(20)]
    assert {(status, body["guest"]["status"]) for status, body, _ in after_answer} == {(200, "declined")}
    status, _, _ = deployment.call("POST", f"{guest_path}/regenerate-code", token=token)
    assert status == 200
    after_new_code = [deployment.call("GET", "/api/v1/rsvp", token=login["access"])[0] for _ in range(20)]
    assert set(after_new_code) == {401}

    # Both web processes keep the concert's ticket types and the organization's account in memory (#15); the
    # organizer's new price, given through one of them, is what the very next checkouts charge, whichever process
    # serves them, and a type taken off sale is refused at once. Stripe's sessions say what was charged.
    warm = [checkout(deployment, concert["id"], general["id"], 1, f"warm{n}@example.com") for n in range(4)]
    assert {stripe.session(session_of(order))["amount_total"] for order in warm} == {general["price"]}
    new_price = general["price"] + 1500
    status, changed, _ = deployment.call(
        "PATCH", f"/api/v1/ticket-types/{general['id']}", {"price": new_price}, token=token
    )
    assert status == 200, changed
    repriced = [checkout(deployment, concert["id"], general["id"], 1, f"new{n}@example.com") for n in range(4)]
    assert {(order["total"], stripe.session(session_of(order))["amount_total"]) for order in repriced} == {
        (new_price, new_price)
    }
    status, changed, _ = deployment.call(
        "PATCH", f"/api/v1/ticket-types/{general['id']}", {"is_active": False}, token=token
    )
    assert status == 200, changed
    refused = [
        deployment.call(
            "POST", f"/api/v1/events/{concert['id']}/checkout", checkout_body(general["id"], 1, "x@example.com")
        )
        for _ in range(2)
    ]
    assert [status for status, _, _ in refused] == [400, 400], refused

    # The unpaid order's hold ends; beat's expiry job gives its seats back and closes its Checkout Session.
    expires_at = unpaid["expires_at"]
    wait_for(
        lambda: seats(deployment, token, concert["id"], front_row["id"])["reserved"] == 0,
        timeout=60 + 60,
        interval=1,
        what=f"the unpaid order's seats released (its hold ended at {expires_at})",
    )
    status, order, _ = deployment.call("GET", f"/api/v1/orders/{unpaid['order_id']}", token=token)
    assert order["status"] == "expired"
    assert stripe.session(session_of(unpaid))["status"] == "expired"

    # Logs: JSON lines; the webhook request's id is in its own line and in the lines of the tasks it caused.
    web = deployment.log_lines("web")
    (request_line,) = [line for line in web if line.get("request_id") == request_id and "status" in line]
    assert (request_line["method"], request_line["path"], request_line["status"]) == (
        "POST",
        "/billing/stripe/webhook/",
        200,
    )
    assert request_line["duration_ms"] > 0
    tasks = {line.get("task_name") for line in deployment.log_lines("worker") if line.get("request_id") == request_id}
    assert {"billing.webhook_event_process", "billing.order_confirmation_send"} <= tasks, tasks
    guest_lines = [line for line in web if line.get("path") == guest_path]
    assert guest_lines and guest_lines[0]["tenant_id"] and guest_lines[0]["user_id"]
    deployment.log_lines("beat")  # JSON too


def deployment_serving(deployment: Deployment, stripe: FakeStripe) -> dict:
    """Checked, migrated, seeded with the demo and serving (web, worker, beat), its organization taking charges
    through a Connect account onboarded at the local Stripe; the demo's data (seed_demo --json)."""
    check = deployment.manage("check", "--deploy", "--fail-level", "WARNING")
    assert check.returncode == 0, check.stdout + check.stderr
    for step in (("migrate", "--noinput"), ("collectstatic", "--noinput")):
        result = deployment.manage(*step)
        assert result.returncode == 0, result.stdout + result.stderr
    refused = deployment.manage("seed_demo", "--json")
    assert refused.returncode != 0 and "--allow-production" in refused.stderr
    demo = json.loads(deployment.manage("seed_demo", "--json", "--allow-production").stdout)

    deployment.start("web", "gunicorn", "--config", "gunicorn.conf.py", "--bind", f"127.0.0.1:{deployment.port}")
    # --quiet: no banner, so every line is JSON (docker-compose.yml runs them the same way).
    deployment.start("worker", "celery", "-A", "eventsaas", "--quiet", "worker", "--concurrency", "2")
    deployment.start("beat", "celery", "-A", "eventsaas", "--quiet", "beat")
    wait_for(lambda: answers(f"{deployment.address}/readyz"), timeout=60, what="/readyz answering 200")
    status, ready, _ = deployment.call("GET", "/readyz")
    assert ready["checks"] == {
        "database": "ok",
        "migrations": "ok",
        "broker": "ok",
        "static_files": "ok",
        "signing_key": "ok",
    }

    # With real keys the demo organization has no account yet, so its paid tickets wait (#17). The organizer
    # starts onboarding, Stripe creates the Express account, and its account.updated (signed with the Connect
    # endpoint's own secret) reaches the worker, which opens the sales.
    assert demo["connected_account"] is None
    started = deployment.manage(
        "shell",
        "-c",
        "from billing import services; from tenants.models import Tenant; "
        f"print(services.connect_onboarding_start(tenant=Tenant.objects.get(slug={demo['organizer']['organization']!r}),"
        f" acting_user=None, site_url={deployment.address!r}))",
    )
    assert started.returncode == 0, started.stdout + started.stderr
    (account_id,) = stripe.accounts
    payload, signature = stripe.signed_payload(stripe.complete_onboarding(account_id), CONNECT_WEBHOOK_SECRET)
    status, _, _ = webhook(deployment, payload, signature, str(uuid.uuid4()), path="/billing/stripe/connect-webhook/")
    assert status == 200
    wait_for(
        lambda: charges_enabled(deployment, account_id),
        timeout=60,
        what="the organization's account taking charges",
    )
    return demo


def charges_enabled(deployment, account_id: str) -> bool:
    result = deployment.manage(
        "shell",
        "-c",
        "from billing.models import ConnectedAccount; "
        f"account = ConnectedAccount.objects.get(stripe_account_id={account_id!r}); "
        "print('charges_enabled=' + str(account.charges_enabled))",
    )
    # Other lines (JSON logs) may share stdout.
    return "charges_enabled=True" in result.stdout.split()


def webhook(
    deployment, payload: bytes, signature: str, request_id: str, *, path: str = "/billing/stripe/webhook/"
) -> tuple[int, dict, dict]:
    import urllib.error
    import urllib.request

    request = urllib.request.Request(
        f"{deployment.address}{path}",
        data=payload,
        method="POST",
        headers={
            **HTTPS,
            "Content-Type": "application/json",
            "Stripe-Signature": signature,
            "X-Request-ID": request_id,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, {}, dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, {}, dict(error.headers)


def checkout_body(ticket_type_id, quantity, email, *, name: str = "Prod Buyer") -> dict:
    """A checkout of `quantity` seats that the demo concert takes (attendee names, its custom question answered)."""
    return {
        "items": [{"ticket_type": ticket_type_id, "quantity": quantity}],
        "buyer": {"name": name, "email": email},
        "attendees": [{"name": f"Guest {n}"} for n in range(quantity)],
        "answers": {"heard": "Friends"},
    }


def checkout(deployment, event_id, ticket_type_id, quantity, email) -> dict:
    status, order, _ = deployment.call(
        "POST", f"/api/v1/events/{event_id}/checkout", checkout_body(ticket_type_id, quantity, email)
    )
    assert status == 201, order
    return order


def session_of(order: dict) -> str:
    return order["checkout_url"].rstrip("/").rsplit("/", 1)[-1]


def tickets_email(deployment, address: str) -> str:
    for path in sorted(deployment.emails.glob("*.log")) if deployment.emails.exists() else []:
        text = path.read_text(errors="replace")
        if f"To: {address}" in text and "Your tickets" in text:
            return text
    return ""


def organizer_token(deployment, demo) -> str:
    status, body, _ = deployment.call(
        "POST",
        "/api/v1/auth/token",
        {"email": demo["organizer"]["email"], "password": demo["organizer"]["password"]},
    )
    assert status == 200, body
    return body["access"]


def seats(deployment, token, event_id, ticket_type_id) -> dict:
    status, sales, _ = deployment.call("GET", f"/api/v1/events/{event_id}/sales", token=token)
    assert status == 200, sales
    return next(t for t in sales["ticket_types"] if t["id"] == ticket_type_id)

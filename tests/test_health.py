"""/healthz says the process answers; /readyz says it can serve: database, migrations, broker, static files, signing
key (503 otherwise)."""

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.management import call_command
from django.db import OperationalError
from django.db.migrations.migration import Migration

from eventsaas import health
from tests.support.celery import celery_config

pytestmark = pytest.mark.django_db

ALL_OK = {"static_files": "ok", "signing_key": "ok"}


@pytest.fixture(autouse=True)
def _recheck_migrations():
    health._migrations_complete = False
    yield
    health._migrations_complete = False


def test_healthz_answers_without_touching_the_database(client, django_assert_num_queries):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200 and response.json() == {"status": "ok"}


@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_probes_need_no_allowed_host_no_https_and_open_no_session(client, settings, path):
    settings.SECURE_SSL_REDIRECT = True
    # An orchestrator probes the container's own address, which is not a public host name.
    response = client.get(path, HTTP_HOST="10.1.2.3:8000")
    assert response.status_code == 200
    assert not response.cookies


def test_readyz_checks_the_database_and_migrations(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    # Tests run tasks in-process: there is no broker to check.
    assert response.json() == {"status": "ready", "checks": {**ALL_OK, "database": "ok", "migrations": "ok"}}


def test_readyz_is_503_while_a_migration_is_not_applied(client, monkeypatch):
    on_disk = health._migrations_on_disk()
    monkeypatch.setattr(
        health,
        "_migrations_on_disk",
        lambda: {**on_disk, ("guests", "0099_not_yet"): Migration("0099_not_yet", "guests")},
    )
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"] == {**ALL_OK, "database": "ok", "migrations": "failed"}


def test_readyz_is_503_when_the_database_does_not_answer(client, monkeypatch, caplog):
    def refused():
        raise OperationalError("could not connect to server: Connection refused")

    monkeypatch.setattr(health, "check_database", refused)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["database"] == "failed"
    # The reason is logged for the operator, not told to whoever asks.
    assert "Connection refused" not in response.content.decode()
    assert "Connection refused" in caplog.text


def test_readyz_checks_a_broker_server_when_one_is_configured(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:9/0"  # nothing listens on port 9
    with celery_config(broker_url=settings.CELERY_BROKER_URL, task_always_eager=False):
        response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"] == {**ALL_OK, "database": "ok", "migrations": "ok", "broker": "failed"}


def test_readyz_checks_the_folder_broker_is_there(client, settings, tmp_path):
    settings.CELERY_BROKER_URL = "folder://localhost/"
    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"data_folder_out": str(tmp_path / "queue")}
    with celery_config(task_always_eager=False):
        assert client.get("/readyz").json()["checks"]["broker"] == "failed"
        (tmp_path / "queue").mkdir()
        response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json()["checks"]["broker"] == "ok"


def test_readyz_is_503_while_the_static_files_manifest_is_missing(client, settings, tmp_path):
    """Production names static files through collectstatic's manifest: without it every page is a 500."""
    settings.STATIC_ROOT = tmp_path  # collectstatic has not run here
    settings.STORAGES = {
        **settings.STORAGES,
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["static_files"] == "failed"

    call_command("collectstatic", interactive=False, verbosity=0)
    settings.STORAGES = {**settings.STORAGES}  # a new process: the storage reads the manifest again
    assert client.get("/readyz").json()["checks"]["static_files"] == "ok"


def test_readyz_is_503_without_a_signing_key(client, monkeypatch):
    """Production without a readable JWT_PRIVATE_KEY_FILES: every token and the JWKS would be a 500."""

    def missing():
        raise ImproperlyConfigured("Set JWT_PRIVATE_KEY_FILES in production")

    monkeypatch.setattr("tenants.keys.keyring", missing)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["signing_key"] == "failed"

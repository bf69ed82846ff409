"""The MongoDB configuration, checked without a MongoDB server."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import models

from eventsaas.mongodb import mongodb_database_settings
from tests.support import mongo_shadow

ROOT = Path(__file__).resolve().parents[2]
MONGODB_URL = "mongodb://127.0.0.1:27017/eventsaas"


def run(*args, url=MONGODB_URL):
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        env={**clean, "DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "eventsaas.settings"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_system_checks_pass_with_mongodb_settings():
    # --database runs the backend's own checks (no AutoField, supported indexes) without connecting.
    result = run("manage.py", "check", "--database", "default", "--fail-level", "WARNING")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_mongodb_settings_use_object_ids_for_contrib_apps():
    code = (
        "import django; django.setup(); from django.conf import settings; from django.apps import apps;"
        "print(settings.DATABASES['default']['ENGINE']);"
        "print(apps.get_model('auth', 'Permission')._meta.pk.__class__.__name__);"
        "print(apps.get_model('guests', 'Guest')._meta.pk.__class__.__name__)"
    )
    result = run("-c", code)
    assert result.stdout.split() == ["django_mongodb_backend", "ObjectIdAutoField", "UUIDField"], result.stderr


def test_backend_rejects_auto_fields_so_the_check_can_fail():
    field = models.AutoField(primary_key=True)
    errors = mongo_shadow.shadow_connection().validation.check_field_type(field, "int")
    assert [e.id for e in errors] == ["mongodb.E001"]


@pytest.mark.parametrize("url", [MONGODB_URL, "sqlite:///unused.sqlite3"])
def test_migrations_match_the_models_on_each_backend(url):
    result = run("scripts/check_migrations_offline.py", url=url)
    assert result.returncode == 0, result.stdout + result.stderr


def test_database_name_comes_from_the_url_or_is_required():
    assert mongodb_database_settings("mongodb+srv://u:p@cluster.example.net/events?retryWrites=true") == {
        "ENGINE": "django_mongodb_backend",
        "HOST": "mongodb+srv://u:p@cluster.example.net/events?retryWrites=true",
        "NAME": "events",
    }
    from django.core.exceptions import ImproperlyConfigured

    with pytest.raises(ImproperlyConfigured):
        mongodb_database_settings("mongodb://127.0.0.1:27017/")


def test_atomic_helper_uses_the_backends_transaction_on_mongodb(monkeypatch):
    from django_mongodb_backend.transaction import Atomic as MongoAtomic

    from eventsaas import db

    monkeypatch.setattr(db, "is_mongodb", lambda using="default": True)
    assert isinstance(db.atomic(), MongoAtomic)
    monkeypatch.setattr(db, "is_mongodb", lambda using="default": False)
    assert not isinstance(db.atomic(), MongoAtomic)

"""Production mode refuses unsafe configuration; development defaults are safe."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD_KEY = "k" * 20 + "Zx9-" * 10


def load_settings(env: dict) -> subprocess.CompletedProcess:
    """Import the settings in a fresh interpreter with exactly this environment."""
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import eventsaas.settings as s; print(s.DEBUG, s.ALLOWED_HOSTS, s.DATABASES['default']['ENGINE'])",
        ],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
    )


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"ALLOWED_HOSTS": "events.example.com"}, "SECRET_KEY"),
        (
            {"SECRET_KEY": "insecure-development-key-do-not-use-in-production", "ALLOWED_HOSTS": "x.example"},
            "SECRET_KEY",
        ),
        ({"SECRET_KEY": "short", "ALLOWED_HOSTS": "events.example.com"}, "SECRET_KEY"),
        ({"SECRET_KEY": GOOD_KEY}, "ALLOWED_HOSTS"),
        ({"SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "*"}, "ALLOWED_HOSTS"),
        ({"SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "events.example.com", "DEBUG": "1"}, "DEBUG"),
    ],
)
def test_production_refuses_to_start_with_unsafe_settings(env, complaint):
    result = load_settings({"DJANGO_ENV": "production", **env})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and complaint in result.stderr


def test_production_starts_with_safe_settings():
    result = load_settings({"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "events.example.com"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "False"


def test_development_defaults_are_safe_and_embedded():
    result = load_settings({})
    assert result.returncode == 0, result.stderr
    debug, *_rest, engine = result.stdout.split()
    assert debug == "False"
    assert engine == "django.db.backends.sqlite3"


def test_database_url_selects_postgresql():
    result = load_settings({"DATABASE_URL": "postgres://u@127.0.0.1:5432/x"})
    assert result.stdout.split()[-1] == "django.db.backends.postgresql"


def test_malformed_boolean_is_a_clear_error():
    result = load_settings({"DEBUG": "maybe"})
    assert result.returncode != 0 and "DEBUG must be a boolean" in result.stderr


CELERY_SETTINGS_SCRIPT = "import eventsaas.settings as s; print(s.CELERY_BROKER_URL, s.CELERY_TASK_ALWAYS_EAGER)"


def _celery_settings(env: dict) -> list[str]:
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    result = subprocess.run(
        [sys.executable, "-c", CELERY_SETTINGS_SCRIPT],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.split()


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, ["memory://", "True"]),  # embedded default: tasks run in-process
        ({"REDIS_URL": "redis://127.0.0.1:6379/0"}, ["redis://127.0.0.1:6379/0", "False"]),
        ({"CELERY_BROKER_URL": "redis://broker:6379/1"}, ["redis://broker:6379/1", "False"]),
        (
            {"REDIS_URL": "redis://cache:6379/0", "CELERY_BROKER_URL": "redis://broker:6379/1"},
            ["redis://broker:6379/1", "False"],
        ),
        ({"REDIS_URL": "redis://r:6379/0", "CELERY_TASK_ALWAYS_EAGER": "1"}, ["redis://r:6379/0", "True"]),
    ],
)
def test_celery_uses_a_broker_server_when_one_is_configured_and_runs_tasks_in_process_otherwise(env, expected):
    assert _celery_settings(env) == expected

"""Production mode refuses unsafe configuration; development defaults are safe."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
GOOD_KEY = "k" * 20 + "Zx9-" * 10
SENDER = "Events <invitations@events.example.com>"
SITE = "https://events.example.com"


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
        # Mail from localhost or a bare host name is refused by receiving servers: invitations would not arrive.
        ({"SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "events.example.com"}, "DEFAULT_FROM_EMAIL"),
        (
            {"SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "events.example.com", "DEFAULT_FROM_EMAIL": "a@mailhost"},
            "DEFAULT_FROM_EMAIL",
        ),
        (
            {"SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "x.example", "DEFAULT_FROM_EMAIL": "E <e@mail.localhost>"},
            "DEFAULT_FROM_EMAIL",
        ),
    ],
)
def test_production_refuses_to_start_with_unsafe_settings(env, complaint):
    result = load_settings({"DJANGO_ENV": "production", **env})
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and complaint in result.stderr


@pytest.mark.parametrize("site", [None, "events.example.com", "https://", "http://127.0.0.1:8000 x"])
def test_production_refuses_to_start_without_the_sites_public_address(site):
    """Links in guests' and buyers' emails start with SITE_URL: unset, they would point at this machine."""
    env = {
        "DJANGO_ENV": "production",
        "SECRET_KEY": GOOD_KEY,
        "ALLOWED_HOSTS": "x.example",
        "DEFAULT_FROM_EMAIL": SENDER,
    }
    result = load_settings({**env, **({"SITE_URL": site} if site is not None else {})})
    assert result.returncode != 0 and "SITE_URL must be the site's public address" in result.stderr, result.stderr


def test_production_starts_with_safe_settings():
    result = load_settings(
        {
            "DJANGO_ENV": "production",
            "SECRET_KEY": GOOD_KEY,
            "ALLOWED_HOSTS": "events.example.com",
            "DEFAULT_FROM_EMAIL": SENDER,
            "SITE_URL": SITE,
        }
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[0] == "False"


@pytest.mark.parametrize("value", ["noreply", "a@example.com, b@example.com", "Name <no address>"])
def test_a_sender_address_that_is_not_one_address_is_a_clear_error(value):
    result = load_settings({"DEFAULT_FROM_EMAIL": value})
    assert result.returncode != 0 and "DEFAULT_FROM_EMAIL must be one email address" in result.stderr, result.stderr


def test_development_defaults_are_safe_and_embedded():
    result = load_settings({})
    assert result.returncode == 0, result.stderr
    debug, *_rest, engine = result.stdout.split()
    assert debug == "False"
    assert engine == "django.db.backends.sqlite3"


def test_database_url_selects_postgresql():
    result = load_settings({"DATABASE_URL": "postgres://u@127.0.0.1:5432/x"})
    assert result.stdout.split()[-1] == "eventsaas.db_backends.postgresql"


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
        ({}, ["folder://localhost/", "False"]),  # embedded default: a folder broker, read by bin/run's worker
        ({"CELERY_BROKER_URL": "memory://"}, ["memory://", "True"]),  # no other process can read it
        ({"REDIS_URL": "redis://127.0.0.1:6379/0"}, ["redis://127.0.0.1:6379/0", "False"]),
        ({"CELERY_BROKER_URL": "redis://broker:6379/1"}, ["redis://broker:6379/1", "False"]),
        (
            {"REDIS_URL": "redis://cache:6379/0", "CELERY_BROKER_URL": "redis://broker:6379/1"},
            ["redis://broker:6379/1", "False"],
        ),
        ({"REDIS_URL": "redis://r:6379/0", "CELERY_TASK_ALWAYS_EAGER": "1"}, ["redis://r:6379/0", "True"]),
    ],
)
def test_celery_uses_a_broker_server_when_one_is_configured_and_a_folder_otherwise(env, expected):
    assert _celery_settings(env) == expected


def _settings_value(env: dict, expression: str) -> str:
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    result = subprocess.run(
        [sys.executable, "-c", f"import eventsaas.settings as s; print({expression})"],
        cwd=ROOT,
        env={**clean, **env},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_sqlite_is_set_for_concurrent_writers():
    options = _settings_value({}, "sorted(s.DATABASES['default']['OPTIONS'].items())")
    assert "('init_command', 'PRAGMA journal_mode=WAL;')" in options
    assert "('timeout', 20)" in options
    assert "('transaction_mode', 'IMMEDIATE')" in options


def test_the_folder_broker_keeps_its_files_under_var():
    folder = _settings_value({}, "s.CELERY_BROKER_TRANSPORT_OPTIONS['data_folder_in']")
    assert folder == str(ROOT / "var" / "celery" / "queue")
    moved = _settings_value(
        {"CELERY_BROKER_FOLDER": "/srv/broker"}, "s.CELERY_BROKER_TRANSPORT_OPTIONS['control_folder']"
    )
    assert moved == "/srv/broker/control"
    # A broker server needs none of them.
    redis_options = _settings_value({"REDIS_URL": "redis://r:6379/0"}, "sorted(s.CELERY_BROKER_TRANSPORT_OPTIONS)")
    assert "data_folder_in" not in redis_options and "visibility_timeout" in redis_options


def test_beat_intervals_shorten_named_jobs_only():
    schedule = "[(n, e['schedule'], e['options']['expires']) for n, e in sorted(s.CELERY_BEAT_SCHEDULE.items())]"
    value = _settings_value({"BEAT_INTERVALS": "billing.orders_expire_due=5, guests.reminders_send=30"}, schedule)
    assert "('billing.orders_expire_due', 5, 5)" in value
    assert "('guests.reminders_send', 30, 30)" in value
    assert "('events.rsvp_close_due', 300, 300)" in value  # untouched


@pytest.mark.parametrize(
    ("value", "complaint"),
    [
        ("billing.orders_expire_due", "name=seconds"),
        ("billing.orders_expire_due=0", "name=seconds"),
        ("billing.orders_expire_due=soon", "name=seconds"),
        ("billing.no_such_job=5", "no scheduled job is called 'billing.no_such_job'"),
    ],
)
def test_malformed_beat_intervals_are_a_clear_error(value, complaint):
    result = load_settings({"BEAT_INTERVALS": value})
    assert result.returncode != 0 and complaint in result.stderr, result.stderr


@pytest.mark.parametrize(
    ("env", "formatter"),
    [
        ({}, "text"),
        (
            {
                "DJANGO_ENV": "production",
                "SECRET_KEY": GOOD_KEY,
                "ALLOWED_HOSTS": "events.example.com",
                "DEFAULT_FROM_EMAIL": SENDER,
                "SITE_URL": SITE,
            },
            "json",
        ),
        ({"LOG_FORMAT": "json"}, "json"),
    ],
)
def test_production_logs_json_lines(env, formatter):
    assert _settings_value(env, "s.LOGGING['handlers']['console']['formatter']") == formatter


def test_every_setting_read_from_the_environment_is_documented_in_env_example():
    import re

    root = Path(__file__).resolve().parents[1]
    read = set(
        re.findall(
            r'env_(?:str|int|bool|list|percent_basis_points)\(\s*"([A-Z0-9_]+)"',
            (root / "eventsaas/settings.py").read_text(),
        )
    )
    documented = set(re.findall(r"^#?\s*([A-Z0-9_]+)=", (root / ".env.example").read_text(), flags=re.M))
    # RATELIMIT_IP_META_KEY is CLIENT_IP_HEADER's old name, read for old deployments only.
    assert read - documented - {"RATELIMIT_IP_META_KEY"} == set()


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        ({"PLATFORM_FEE_PERCENT": "250"}, "PLATFORM_FEE_PERCENT"),
        ({"PLATFORM_FEE_PERCENT": "2,5"}, "PLATFORM_FEE_PERCENT"),
        ({"PLATFORM_FEE_PERCENT": "0.125"}, "PLATFORM_FEE_PERCENT"),
        ({"PLATFORM_FEE_FIXED": "-30"}, "PLATFORM_FEE_FIXED"),
    ],
)
def test_a_platform_fee_that_makes_no_sense_stops_the_start(env, complaint):
    """In production and in development alike: a fee typed wrong is never silently some other fee."""
    production = {"DJANGO_ENV": "production", "SECRET_KEY": GOOD_KEY, "ALLOWED_HOSTS": "x.example", "SITE_URL": SITE}
    for mode in (production, {}):
        result = load_settings({**mode, "DEFAULT_FROM_EMAIL": SENDER, **env})
        assert result.returncode != 0
        assert "ImproperlyConfigured" in result.stderr and complaint in result.stderr


def test_platform_fee_settings_are_read_exactly():
    clean = {k: v for k, v in os.environ.items() if k in {"PATH", "HOME", "LANG"}}
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "import eventsaas.settings as s; print(s.PLATFORM_FEE_BASIS_POINTS, s.PLATFORM_FEE_FIXED)",
        ],
        cwd=ROOT,
        env={**clean, "PLATFORM_FEE_PERCENT": "4.35", "PLATFORM_FEE_FIXED": "30"},
        capture_output=True,
        text=True,
    )
    assert result.stdout.split() == ["435", "30"]  # int(4.35 * 100) with floats is 434


def test_the_guest_api_cache_is_on_with_redis_only():
    assert _settings_value({}, "s.GUEST_API_CACHE_SECONDS") == "0"
    assert _settings_value({"REDIS_URL": "redis://r:6379/0"}, "s.GUEST_API_CACHE_SECONDS") == "30"
    assert (
        _settings_value({"REDIS_URL": "redis://r:6379/0", "GUEST_API_CACHE_SECONDS": "0"}, "s.GUEST_API_CACHE_SECONDS")
        == "0"
    )


@pytest.mark.parametrize(
    ("env", "complaint"),
    [
        # Each process would keep households no other process's write could end: stale answers, live revoked tokens.
        ({"GUEST_API_CACHE_SECONDS": "30"}, "GUEST_API_CACHE_SECONDS needs REDIS_URL"),
        ({"REDIS_URL": "redis://r:6379/0", "GUEST_API_CACHE_ENTRIES": "0"}, "GUEST_API_CACHE_ENTRIES"),
    ],
)
def test_a_guest_api_cache_that_cannot_work_stops_the_start(env, complaint):
    result = load_settings(env)
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and complaint in result.stderr


def test_the_shop_page_is_kept_two_seconds_per_process_by_default_with_or_without_redis():
    assert _settings_value({}, "s.SHOP_PAGE_CACHE_SECONDS") == "2"
    assert _settings_value({"REDIS_URL": "redis://r:6379/0"}, "s.SHOP_PAGE_CACHE_SECONDS") == "2"
    assert _settings_value({"SHOP_PAGE_CACHE_SECONDS": "0"}, "s.SHOP_PAGE_CACHE_SECONDS") == "0"
    # Per process on purpose: the kept pages never go to Redis, whatever the default cache is.
    backend = _settings_value({"REDIS_URL": "redis://r:6379/0"}, "s.CACHES['pages']['BACKEND']")
    assert backend == "django.core.cache.backends.locmem.LocMemCache"


def test_a_negative_shop_page_time_stops_the_start():
    result = load_settings({"SHOP_PAGE_CACHE_SECONDS": "-1"})
    assert result.returncode != 0
    assert "SHOP_PAGE_CACHE_SECONDS" in result.stderr


def test_the_dockerfiles_collectstatic_step_passes_the_production_checks():
    """The image is built with DJANGO_ENV=production (its ENV line) and collectstatic loads the settings with
    throwaway values: each production check must be satisfied there, or `docker build` stops at that step."""
    dockerfile = (ROOT / "Dockerfile").read_text()
    image_env = {}
    for line in re.findall(r"^ENV (.+)$", dockerfile, re.MULTILINE):
        image_env.update(item.split("=", 1) for item in shlex.split(line))
    step = re.search(r"^RUN ((?:.*\\\n)*.*manage\.py collectstatic.*)$", dockerfile, re.MULTILINE)
    assert step is not None and image_env["DJANGO_ENV"] == "production"
    command = step.group(1).replace("\\\n", " ") + " --dry-run"  # as written, but copying nothing
    clean = {k: v for k, v in os.environ.items() if k in {"HOME", "LANG"}}
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"  # `python` is this interpreter

    result = subprocess.run(
        ["bash", "-c", command], cwd=ROOT, env={**clean, **image_env, "PATH": path}, capture_output=True, text=True
    )

    assert result.returncode == 0, result.stderr

"""Settings for eventsaas, read from environment variables.

Every variable is documented in `.env.example`. Development defaults are safe
(DEBUG off unless asked, SQLite, console email); `DJANGO_ENV=production`
refuses to start with an unsafe configuration.
"""

import logging
import re
from datetime import timedelta
from email.utils import getaddresses
from pathlib import Path
from typing import Any

import dj_database_url
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured
from django.utils.translation import gettext_lazy as _
from django_guid.integrations import CeleryIntegration

from eventsaas.broker import is_folder_broker
from eventsaas.env import env_bool, env_int, env_list, env_percent_basis_points, env_seconds_map, env_str
from eventsaas.mongodb import MONGODB_APP_CONFIGS, mongodb_database_settings

BASE_DIR = Path(__file__).resolve().parent.parent

DJANGO_ENV = env_str("DJANGO_ENV", "development")
IS_PRODUCTION = DJANGO_ENV == "production"
if DJANGO_ENV not in {"development", "test", "production"}:
    raise ImproperlyConfigured("DJANGO_ENV must be development, test or production")

_DEV_SECRET_KEY = "insecure-development-key-do-not-use-in-production"
SECRET_KEY = env_str("SECRET_KEY", "" if IS_PRODUCTION else _DEV_SECRET_KEY)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", [] if IS_PRODUCTION else ["127.0.0.1", "localhost", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

if IS_PRODUCTION:
    problems = []
    if not SECRET_KEY or SECRET_KEY == _DEV_SECRET_KEY or len(SECRET_KEY) < 50:
        problems.append("SECRET_KEY must be set to a random value of at least 50 characters")
    if not ALLOWED_HOSTS or "*" in ALLOWED_HOSTS:
        problems.append("ALLOWED_HOSTS must list the real host names (no '*')")
    if DEBUG:
        problems.append("DEBUG must be off")
    if problems:
        raise ImproperlyConfigured("Unsafe production settings: " + "; ".join(problems))

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    # Form widget templates for FORM_RENDERER, which reads templates/ too (templates/forms/field.html).
    "django.forms",
    "axes",
    "csp",
    "rest_framework",
    # No models: installed for its message catalogue (a refresh token's errors in Spanish).
    "rest_framework_simplejwt",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_filters",
    "django_guid",
    "eventsaas",
    "tenants",
    "events",
    "guests",
    "rsvp",
    "billing",
]

MIDDLEWARE = [
    # The request id first, then the request's log line (it times everything below), then the probes,
    # which need no allowed host, HTTPS or session (eventsaas/health.py).
    "django_guid.middleware.guid_middleware",
    "eventsaas.logs.RequestLogMiddleware",
    "eventsaas.health.HealthCheckMiddleware",
    # Before anything that writes (sessions, logins, views): maintenance refuses writes (eventsaas/maintenance.py).
    "eventsaas.maintenance.MaintenanceMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "eventsaas.middleware.ContentSecurityPolicyMiddleware",
    "eventsaas.middleware.PermissionsPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    "eventsaas.middleware.UnusableInputMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "tenants.middleware.TenantMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into the lockout answer.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "eventsaas.urls"
WSGI_APPLICATION = "eventsaas.wsgi.application"
ASGI_APPLICATION = "eventsaas.asgi.application"

FORM_RENDERER = "eventsaas.forms.FormRenderer"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.i18n",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "tenants.context_processors.tenancy",
            ],
        },
    },
]

# SQLite is the embedded default; DATABASE_URL switches to PostgreSQL or, with a
# mongodb:// or mongodb+srv:// URL, to MongoDB through django-mongodb-backend.
# MONGODB_URI is accepted as another name for a MongoDB DATABASE_URL.
DATABASE_URL = env_str("DATABASE_URL") or env_str("MONGODB_URI") or f"sqlite:///{BASE_DIR / 'db.sqlite3'}"
USES_MONGODB = DATABASE_URL.startswith(("mongodb://", "mongodb+srv://"))
if USES_MONGODB:
    DATABASES: dict[str, Any] = {"default": mongodb_database_settings(DATABASE_URL, env_str("MONGODB_NAME", ""))}
    # Django's contrib apps get ObjectId keys through AppConfig subclasses and
    # their own migrations (mongo_migrations/); our apps use UUID keys everywhere.
    DEFAULT_AUTO_FIELD = "django_mongodb_backend.fields.ObjectIdAutoField"
    INSTALLED_APPS = [MONGODB_APP_CONFIGS.get(app, app) for app in INSTALLED_APPS] + ["django_mongodb_backend"]
    MIGRATION_MODULES = {
        "admin": "mongo_migrations.admin",
        "auth": "mongo_migrations.auth",
        "contenttypes": "mongo_migrations.contenttypes",
        "axes": "mongo_migrations.axes",
    }
else:
    DATABASES = {
        "default": dj_database_url.parse(
            DATABASE_URL,
            conn_max_age=env_int("DB_CONN_MAX_AGE", 0),
            # A kept connection is checked before its first use in a request, so a database restart costs a
            # reconnect rather than the next request's 500 (docs/deployment.md, "Server settings for a deployment").
            conn_health_checks=env_bool("DB_CONN_HEALTH_CHECKS", True),
        )
    }
    DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
    if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
        # Django's backend, whose health check asks the server only when the connection's socket says that
        # something happened (eventsaas/db_backends/postgresql/base.py).
        DATABASES["default"]["ENGINE"] = "eventsaas.db_backends.postgresql"
        if env_bool("DB_SERVER_SIDE_BINDING", False):
            # psycopg 3 binds parameters on the server and prepares a query after 5 runs on one connection;
            # measured in bench/guest_http.py; not behind a transaction-pooling PgBouncer older than 1.21.
            DATABASES["default"].setdefault("OPTIONS", {})["server_side_binding"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The embedded default serves many threads and a worker at once (docs/deployment.md, "Embedded default"):
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            # WAL: readers never wait for the writer, and the writer never waits for readers.
            "init_command": "PRAGMA journal_mode=WAL;",
            # Busy timeout (seconds): a writer waits its turn for the lock instead of failing at once
            # with "database is locked".
            "timeout": env_int("SQLITE_BUSY_TIMEOUT", 20),
            # BEGIN IMMEDIATE takes the write lock when a transaction starts. A deferred transaction that
            # read first and then writes cannot wait for the lock (its snapshot is stale) and fails at once.
            "transaction_mode": "IMMEDIATE",
        }
    )

AUTH_USER_MODEL = "tenants.User"
# django-axes first: every password check (login page, admin, API token) passes its lockout.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "tenants:home"
LOGOUT_REDIRECT_URL = "landing"

LANGUAGE_CODE = "en"
LANGUAGES = [("en", _("English")), ("es", _("Spanish"))]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if IS_PRODUCTION
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
# Serve static files from the finders when collectstatic has not run (development).
WHITENOISE_USE_FINDERS = not IS_PRODUCTION
# Files served at the site's root by WhiteNoise: /favicon.ico, which browsers and crawlers ask for whatever the
# pages link (templates/base.html links static/img/favicon.svg and its PNG fallback).
WHITENOISE_ROOT = BASE_DIR / "static" / "root"

REDIS_URL = env_str("REDIS_URL", "")
if REDIS_URL:
    CACHES: dict[str, dict[str, Any]] = {"default": {"BACKEND": "eventsaas.cache.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "eventsaas"}}
# Pages kept per process (eventsaas/kept_pages.py: the shop's, the guests'): local memory on purpose, never shared.
CACHES["pages"] = {
    "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
    "LOCATION": "eventsaas-pages",
    "OPTIONS": {"MAX_ENTRIES": 1_000},
}

EMAIL_BACKEND = env_str(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if IS_PRODUCTION
    else "django.core.mail.backends.console.EmailBackend",
)
# The file backend (django.core.mail.backends.filebased.EmailBackend) writes each email into this folder.
EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH", "") or str(BASE_DIR / "var" / "emails")
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "") or "eventsaas <noreply@localhost>"
# Every email leaves from this address; guests' and buyers' emails carry the organization's name
# in front of it (eventsaas.mail.sender_in_name_of). One address, optionally with a name. In
# production its domain must be one that sends the site's mail: receiving servers refuse or file
# as spam mail from localhost, a bare host name or a reserved test domain (RFC 2606, RFC 6761).
_sender_addresses = getaddresses([DEFAULT_FROM_EMAIL])
_sender_domain = _sender_addresses[0][1].rpartition("@")[2].lower().rstrip(".") if _sender_addresses else ""
if len(_sender_addresses) != 1 or _sender_addresses[0][1].count("@") != 1 or not _sender_domain:
    raise ImproperlyConfigured("DEFAULT_FROM_EMAIL must be one email address, optionally with a name: Name <a@b.org>")
if IS_PRODUCTION and (
    "." not in _sender_domain or _sender_domain.rsplit(".", 1)[1] in {"localhost", "local", "invalid", "test"}
):
    raise ImproperlyConfigured(
        "Unsafe production settings: DEFAULT_FROM_EMAIL must be an address at a domain that sends this "
        "site's mail (receiving servers refuse mail from localhost)"
    )

# --- Hostile clients: throttling (docs/deployment.md, "Throttling") ----------------------------
# Whom to believe about the client's address (eventsaas/client_ip.py). By default the
# TCP peer (REMOTE_ADDR); X-Forwarded-For is ignored unless TRUSTED_PROXY_COUNT proxies
# in front of the app each append to it. CLIENT_IP_HEADER instead names a header (META
# key, e.g. HTTP_X_REAL_IP) that the proxy overwrites; RATELIMIT_IP_META_KEY is its old name.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
CLIENT_IP_HEADER = env_str("CLIENT_IP_HEADER", "") or env_str("RATELIMIT_IP_META_KEY", "")
if TRUSTED_PROXY_COUNT < 0:
    raise ImproperlyConfigured("TRUSTED_PROXY_COUNT must be 0 or more")
RATELIMIT_IP_META_KEY = "eventsaas.client_ip.client_ip"
# Guest code login: attempts allowed per client address and per code.
GUEST_LOGIN_RATE_PER_CLIENT = env_str("GUEST_LOGIN_RATE_PER_CLIENT", "10/m")
GUEST_LOGIN_RATE_PER_CODE = env_str("GUEST_LOGIN_RATE_PER_CODE", "5/m")
# Organizer passwords (login page, admin, API token): django-axes counts failures per
# client address and, separately, per account, in the default cache (Redis in production).
# LOGIN_FAILURE_LIMIT failures lock that address or account for LOGIN_LOCKOUT_MINUTES;
# tries during the lockout do not extend it, and a password reset (emailed link) ends it.
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10)
LOGIN_LOCKOUT_MINUTES = env_int("LOGIN_LOCKOUT_MINUTES", 15)
AXES_HANDLER = "axes.handlers.cache.AxesCacheHandler"
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = timedelta(minutes=LOGIN_LOCKOUT_MINUTES)
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_CLIENT_IP_CALLABLE = "eventsaas.client_ip.client_network"
# The login forms' field and authenticate()'s keyword are both "username" (holding the email).
AXES_USERNAME_FORM_FIELD = "username"
AXES_USERNAME_CALLABLE = "tenants.throttling.login_username"
AXES_LOCKOUT_CALLABLE = "tenants.throttling.lockout_response"
# The cache handler keeps nothing in the database: no admin pages over empty tables.
AXES_ENABLE_ADMIN = False
AXES_DISABLE_ACCESS_LOG = True
AXES_VERBOSE = False
# Password reset emails per client address and per address asked for; sign-ups
# (and invitation sign-ups) per client address; verification emails per account.
PASSWORD_RESET_RATE_PER_CLIENT = env_str("PASSWORD_RESET_RATE_PER_CLIENT", "5/h")
PASSWORD_RESET_RATE_PER_EMAIL = env_str("PASSWORD_RESET_RATE_PER_EMAIL", "3/h")
SIGNUP_RATE_PER_CLIENT = env_str("SIGNUP_RATE_PER_CLIENT", "10/h")
VERIFICATION_EMAIL_RATE_PER_USER = env_str("VERIFICATION_EMAIL_RATE_PER_USER", "3/h")
# Ticket checkouts (shop page and API together) per client address.
TICKET_CHECKOUT_RATE_PER_CLIENT = env_str("TICKET_CHECKOUT_RATE_PER_CLIENT", "20/m")
# Access codes of hidden ticket types that unlock nothing, per client address (events/throttling.py).
TICKET_ACCESS_CODE_RATE_PER_CLIENT = env_str("TICKET_ACCESS_CODE_RATE_PER_CLIENT", "10/m")
# django-ratelimit and django-axes warn about LocMemCache: it is per process, which is
# what the single-process embedded default runs; production sets REDIS_URL.
SILENCED_SYSTEM_CHECKS = [] if REDIS_URL else ["django_ratelimit.E003", "django_ratelimit.W001", "axes.W001"]
if USES_MONGODB:
    # MongoDB does not enforce CheckConstraint; the same rules are field
    # validators that the services run (full_clean) before saving.
    SILENCED_SYSTEM_CHECKS.append("models.W027")

# --- Celery (docs/workers.md) ---------------------------------------------------
# With a broker server (REDIS_URL or CELERY_BROKER_URL) tasks go to workers through it.
# The embedded default has none: messages are files in CELERY_BROKER_FOLDER (eventsaas/broker.py,
# kombu's filesystem transport), read by the worker and beat that bin/run starts next to the web server.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "") or REDIS_URL or "folder://localhost/"
CELERY_BROKER_FOLDER = Path(env_str("CELERY_BROKER_FOLDER", "") or BASE_DIR / "var" / "celery")
# Eager (tasks run inside the caller) only on request, or with kombu's in-process memory broker, which no
# other process can read.
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", CELERY_BROKER_URL.startswith("memory://"))
# Eager task errors stay in the task (recorded as FailedTask), as they would on a worker.
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TIMEZONE = TIME_ZONE
CELERY_ENABLE_UTC = True
# Tasks change the database and return nothing worth storing: no result backend.
CELERY_TASK_IGNORE_RESULT = True
# Reliability. Every task is idempotent (STYLE.md), so a message is acknowledged
# only after the task ran and is delivered again if the worker dies mid-task.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
# One message at a time per process: late acks plus a deep prefetch would park
# tasks behind a slow one (and redeliver them all if that worker dies).
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Celery's Django fixup closes every database connection around every task whatever CONN_MAX_AGE says; with this it
# does so every 1,000 tasks, and eventsaas/celery.py keeps them between as a web request does (DB_CONN_MAX_AGE).
CELERY_DB_REUSE_MAX = 1_000
CELERY_TASK_SOFT_TIME_LIMIT = env_int("CELERY_TASK_SOFT_TIME_LIMIT", 120)
CELERY_TASK_TIME_LIMIT = env_int("CELERY_TASK_TIME_LIMIT", 150)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_TIMEOUT = 2
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, Any] = {
    # Redis redelivers an unacknowledged message after this long. It must exceed
    # the hard time limit and the longest retry countdown (BaseTask caps backoff
    # at 10 minutes), or a task still running or waiting would run twice.
    "visibility_timeout": 3600,
    "socket_connect_timeout": 2,
    # Publishing while the broker is down fails in about a second instead of hanging.
    "max_retries": 3,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
if is_folder_broker(CELERY_BROKER_URL):
    # The embedded default: one folder of message files shared by every process, polled by the
    # worker every 0.1 s; the exchange tables live next to it (eventsaas/celery.py creates both).
    # kombu also waits one interval whenever the worker's processes are all busy (prefetch 1), so the
    # interval bounds throughput too: at 1 s the worker took two tasks a second, and a rush's hundred
    # expiry emails held the next expiry sweep back for half a minute (docs/workers.md).
    CELERY_BROKER_TRANSPORT_OPTIONS.update(
        {
            "data_folder_in": str(CELERY_BROKER_FOLDER / "queue"),
            "data_folder_out": str(CELERY_BROKER_FOLDER / "queue"),
            "control_folder": str(CELERY_BROKER_FOLDER / "control"),
            "polling_interval": 0.1,
        }
    )
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 3, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_BEAT_SCHEDULER = "eventsaas.celery:BeatScheduler"
CELERY_BEAT_SCHEDULE_FILENAME = env_str("CELERY_BEAT_SCHEDULE_FILENAME", str(BASE_DIR / "var" / "celerybeat-schedule"))

# Activity tracking (guests/activity.py): requests publish small messages that a
# periodic task writes in batches. ACTIVITY_TRACKING=0 switches recording off.
ACTIVITY_TRACKING = env_bool("ACTIVITY_TRACKING", True)
ACTIVITY_FLUSH_SECONDS = env_int("ACTIVITY_FLUSH_SECONDS", 5)
ACTIVITY_FLUSH_BATCH = env_int("ACTIVITY_FLUSH_BATCH", 500)
# After a failed publish, a web process drops activity for this long instead of
# trying the broker on every request.
ACTIVITY_BROKER_BACKOFF_SECONDS = env_int("ACTIVITY_BROKER_BACKOFF_SECONDS", 30)
# A web process hands tracked events to a thread of its own that sends what gathered every this many
# milliseconds, in one broker round trip, so no request waits for the broker; 0 sends each in its request.
ACTIVITY_SEND_INTERVAL_MS = env_int("ACTIVITY_SEND_INTERVAL_MS", 50)
if ACTIVITY_SEND_INTERVAL_MS < 0:
    raise ImproperlyConfigured("ACTIVITY_SEND_INTERVAL_MS must be 0 (send in the request) or more")

# Activity records older than this are deleted by the daily cleanup.
ACTIVITY_RETENTION_DAYS = env_int("ACTIVITY_RETENTION_DAYS", 180)

# Notifications (guests/notifications.py): links in emails start with SITE_URL.
SITE_URL = env_str("SITE_URL", "" if IS_PRODUCTION else "http://127.0.0.1:8000").rstrip("/")
if IS_PRODUCTION and not re.fullmatch(r"https?://[^/\s]+(/\S*)?", SITE_URL):
    # Without it every guest's invitation and every buyer's tickets link to this machine's loopback address.
    raise ImproperlyConfigured("SITE_URL must be the site's public address, e.g. https://events.example.com")
REMINDER_DAYS_BEFORE_DEADLINE = env_int("REMINDER_DAYS_BEFORE_DEADLINE", 3)

# Static schedule (django-celery-beat needs SQL tables). Every job is safe to run
# twice and late: message windows are unique, closing is a compare-and-set.
# `expires` drops runs that piled up while no worker was there.
CELERY_BEAT_SCHEDULE = {
    "guests.activity_flush": {
        "task": "guests.activity_flush",
        "schedule": ACTIVITY_FLUSH_SECONDS,
        # A flush that waited longer than one window is superseded by the next one.
        "options": {"expires": ACTIVITY_FLUSH_SECONDS},
    },
    "guests.reminders_send": {
        "task": "guests.reminders_send",
        "schedule": crontab(minute=5),
        "options": {"expires": 3600},
    },
    "guests.digests_send": {
        "task": "guests.digests_send",
        "schedule": crontab(hour=7, minute=0),
        "options": {"expires": 6 * 3600},
    },
    "events.rsvp_close_due": {
        "task": "events.rsvp_close_due",
        "schedule": 300,
        "options": {"expires": 300},
    },
    "billing.waitlist_sweep": {
        "task": "billing.waitlist_sweep",
        "schedule": 60,
        "options": {"expires": 60},
    },
    "billing.orders_expire_due": {
        "task": "billing.orders_expire_due",
        "schedule": 60,
        "options": {"expires": 60},
    },
    "billing.webhook_events_requeue_stale": {
        "task": "billing.webhook_events_requeue_stale",
        "schedule": 300,
        "options": {"expires": 300},
    },
    "guests.activity_cleanup": {
        "task": "guests.activity_cleanup",
        "schedule": crontab(hour=3, minute=30),
        "options": {"expires": 6 * 3600},
    },
    "tenants.token_families_cleanup": {
        "task": "tenants.token_families_cleanup",
        "schedule": crontab(hour=3, minute=45),
        "options": {"expires": 6 * 3600},
    },
}
# Trying it out, and the tests of what bin/run and a production install run, shorten the jobs' intervals:
# BEAT_INTERVALS="billing.orders_expire_due=5,guests.reminders_send=30" runs those jobs every 5 and 30 seconds.
for _job, _seconds in env_seconds_map("BEAT_INTERVALS").items():
    if _job not in CELERY_BEAT_SCHEDULE:
        raise ImproperlyConfigured(
            f"BEAT_INTERVALS: no scheduled job is called {_job!r} (jobs: {', '.join(CELERY_BEAT_SCHEDULE)})"
        )
    CELERY_BEAT_SCHEDULE[_job] = {**CELERY_BEAT_SCHEDULE[_job], "schedule": _seconds, "options": {"expires": _seconds}}

# --- Ticketed events: Stripe (billing/payments.py, docs/payments.md) -------------------
STRIPE_SECRET_KEY = env_str("STRIPE_SECRET_KEY", "")
STRIPE_WEBHOOK_SECRET = env_str("STRIPE_WEBHOOK_SECRET", "")
# Connect webhooks (organizations' accounts: account.updated, ...) come from their own Stripe endpoint,
# signed with their own secret (docs/payments.md "Onboarding and account state").
STRIPE_CONNECT_WEBHOOK_SECRET = env_str("STRIPE_CONNECT_WEBHOOK_SECRET", "")
# Where the SDK sends API calls; only tests and local Stripe emulators change it.
STRIPE_API_BASE = env_str("STRIPE_API_BASE", "https://api.stripe.com")
STRIPE_MAX_NETWORK_RETRIES = env_int("STRIPE_MAX_NETWORK_RETRIES", 2)
# Webhook signatures older than this many seconds are refused (replays).
STRIPE_WEBHOOK_TOLERANCE = env_int("STRIPE_WEBHOOK_TOLERANCE", 300)
# Test-payment mode: a labelled local checkout, on only without Stripe keys and never in production.
TEST_PAYMENTS = env_bool("TEST_PAYMENTS", not IS_PRODUCTION and not STRIPE_SECRET_KEY)
# The secret test payments are signed and verified with. Unset: a random one made on first
# use in TEST_PAYMENTS_SECRET_FILE (mode 0600, git-ignored), like the development JWT key.
# Several web processes on different machines must share it: set it, or share the file.
TEST_PAYMENTS_WEBHOOK_SECRET = env_str("TEST_PAYMENTS_WEBHOOK_SECRET", "")
TEST_PAYMENTS_SECRET_FILE = env_str(
    "TEST_PAYMENTS_SECRET_FILE", str(BASE_DIR / "var" / "test-payments" / "webhook-secret")
)
# How long a pending order holds its seats. Stripe's Checkout Session lives as long, but 30 minutes at least:
# an order that holds its seats for less is closed by the expiry sweep, which expires the session too.
ORDER_HOLD_MINUTES = env_int("ORDER_HOLD_MINUTES", 30)
# The sweep waits this long past an order's expiry, so Stripe's own expired/completed event usually comes first.
ORDER_EXPIRY_GRACE_SECONDS = env_int("ORDER_EXPIRY_GRACE_SECONDS", 120)
# How long a waitlist offer holds its seat for the person it was offered to (docs/waitlist.md).
WAITLIST_OFFER_HOLD_MINUTES = env_int("WAITLIST_OFFER_HOLD_MINUTES", 60)

# The platform's application fee on each paid order (billing/services/fees.py, docs/payments.md):
# PLATFORM_FEE_PERCENT of the total (a decimal string, "2.5" = 2.5 %, at most two decimals, read exactly
# as basis points) plus PLATFORM_FEE_FIXED in the order currency's minor units, never more than the total.
# Staff override both per organization in the admin. The fixed part defaults to 0 because one number of
# minor units means different money in each currency (30 is 0.30 EUR but 30 JPY).
PLATFORM_FEE_BASIS_POINTS = env_percent_basis_points("PLATFORM_FEE_PERCENT", "2.5")
PLATFORM_FEE_FIXED = env_int("PLATFORM_FEE_FIXED", 0)

_payment_problems = []
if STRIPE_SECRET_KEY and not STRIPE_WEBHOOK_SECRET:
    _payment_problems.append("STRIPE_WEBHOOK_SECRET must be set with STRIPE_SECRET_KEY (webhooks are verified)")
if STRIPE_SECRET_KEY and IS_PRODUCTION and not STRIPE_CONNECT_WEBHOOK_SECRET:
    _payment_problems.append(
        "STRIPE_CONNECT_WEBHOOK_SECRET must be set with STRIPE_SECRET_KEY in production (organizations' accounts "
        "are mirrored from Connect webhooks)"
    )
if STRIPE_CONNECT_WEBHOOK_SECRET and STRIPE_CONNECT_WEBHOOK_SECRET == STRIPE_WEBHOOK_SECRET:
    _payment_problems.append("STRIPE_CONNECT_WEBHOOK_SECRET must differ from STRIPE_WEBHOOK_SECRET (two endpoints)")
if TEST_PAYMENTS and STRIPE_SECRET_KEY:
    _payment_problems.append("TEST_PAYMENTS cannot be on while Stripe keys are configured")
if TEST_PAYMENTS and IS_PRODUCTION:
    _payment_problems.append("TEST_PAYMENTS must be off in production")
if TEST_PAYMENTS_WEBHOOK_SECRET and len(TEST_PAYMENTS_WEBHOOK_SECRET) < 32:
    _payment_problems.append("TEST_PAYMENTS_WEBHOOK_SECRET must be at least 32 random characters")
if not 1 <= ORDER_HOLD_MINUTES <= 1380:
    _payment_problems.append(
        "ORDER_HOLD_MINUTES must be between 1 and 1380 (a Stripe Checkout Session lives 24 hours at most)"
    )
if PLATFORM_FEE_FIXED < 0:
    _payment_problems.append("PLATFORM_FEE_FIXED must be 0 or more (minor units of the order's currency)")
if not 5 <= WAITLIST_OFFER_HOLD_MINUTES <= 10080:
    _payment_problems.append("WAITLIST_OFFER_HOLD_MINUTES must be between 5 and 10080 (a week)")
if _payment_problems:
    raise ImproperlyConfigured("Unsafe payment settings: " + "; ".join(_payment_problems))

# With Redis, sessions are read from the cache and written through to the
# database, so any web process can serve any request.
SESSION_ENGINE = env_str(
    "SESSION_ENGINE",
    "django.contrib.sessions.backends.cached_db" if REDIS_URL else "django.contrib.sessions.backends.db",
)
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", IS_PRODUCTION)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", IS_PRODUCTION)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", IS_PRODUCTION)
# HSTS: off until the operator is sure every host (and, with INCLUDE_SUBDOMAINS, every subdomain) is HTTPS
# only; `manage.py check --deploy` passes once all three are set (docs/deployment.md).
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# No address of ours (guest links carry the personal code) leaves the site in a Referer header.
SECURE_REFERRER_POLICY = "same-origin"
# Browser features the pages may use (eventsaas/middleware.py): only the camera, for check-in scans.
PERMISSIONS_POLICY = {
    "accelerometer": "()",
    "camera": "(self)",
    "geolocation": "()",
    "gyroscope": "()",
    "magnetometer": "()",
    "microphone": "()",
    "payment": "()",
    "usb": "()",
}
# Content-Security-Policy (django-csp): scripts and styles from this site only, so no
# inline script or event handler runs (templates keep none: static/js/ has them).
# Forms may post here and send the buyer on to Stripe Checkout.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "font-src": ["'self'"],
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'", "https://checkout.stripe.com"],
    },
}
# /.well-known/security.txt (RFC 9116): where to report vulnerabilities. Default: the
# sender address of the site's emails (DEFAULT_FROM_EMAIL); set a real inbox in production.
SECURITY_CONTACT = env_str("SECURITY_CONTACT", "")
SECURITY_POLICY_URL = env_str("SECURITY_POLICY_URL", "")

# Logs (eventsaas/logs.py): one line per request, every line with the request id, which follows the
# request into the tasks it enqueues. JSON lines in production (LOG_FORMAT=json), text for people.
LOG_FORMAT = env_str("LOG_FORMAT", "json" if IS_PRODUCTION else "text")
if LOG_FORMAT not in {"json", "text"}:
    raise ImproperlyConfigured("LOG_FORMAT must be json or text")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"request_id": {"()": "eventsaas.logs.RequestIdFilter"}},
    "formatters": {
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "format": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
        },
        "text": {"format": "%(asctime)s %(levelname)s %(name)s [%(request_id)s] %(message)s"},
    },
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": LOG_FORMAT, "filters": ["request_id"]},
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # The request line (eventsaas.request) says what django.request would repeat for every 4xx;
        # server errors still come with their traceback.
        "django.request": {"level": "ERROR"},
        # django-guid reports at INFO whether each request brought an id.
        "django_guid": {"level": "WARNING"},
        # A Host header outside ALLOWED_HOSTS is answered 400 and its request line logged; Django would also
        # log every scanner's try as an ERROR with a traceback.
        "django.security.DisallowedHost": {"level": "CRITICAL", "propagate": False},
        # The worker's pool (billiard) reports a process that died (killed, out of memory) on this logger, which
        # it stops from propagating: with no handler, Python printed it as bare text among the JSON lines.
        "multiprocessing": {"handlers": ["console"], "level": "WARNING", "propagate": False},
    },
}
if LOG_FORMAT == "json":
    # Python's warnings (a deprecation, Celery's word about running as root) become JSON lines too.
    logging.captureWarnings(True)
# X-Request-ID: a client's (or proxy's) UUID is kept, anything else is replaced by a new one.
DJANGO_GUID = {
    "GUID_HEADER_NAME": "X-Request-ID",
    "VALIDATE_GUID": True,
    "RETURN_HEADER": True,
    "EXPOSE_HEADER": False,
    "INTEGRATIONS": [CeleryIntegration(use_django_logging=True)],
}
# Workers log through LOGGING too (CeleryIntegration above), not through Celery's own format.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

GUEST_LIST_PAGE_SIZE = 50
# Guest import (guests/imports.py, README "Importing guests"): the largest file and the most rows
# one upload may hold; files of more than GUEST_IMPORT_INLINE_MAX_ROWS rows are checked and
# written by a worker task while the page shows a progress bar (smaller ones within the request).
GUEST_IMPORT_MAX_BYTES = env_int("GUEST_IMPORT_MAX_BYTES", 2 * 1024 * 1024)
GUEST_IMPORT_MAX_ROWS = env_int("GUEST_IMPORT_MAX_ROWS", 20_000)
GUEST_IMPORT_INLINE_MAX_ROWS = env_int("GUEST_IMPORT_INLINE_MAX_ROWS", 200)

# Maintenance (eventsaas/maintenance.py, `manage.py maintenance on|off`): writes are refused while
# MAINTENANCE_MODE=1 or while the flag file exists; the file reaches every running process at once.
MAINTENANCE_MODE = env_bool("MAINTENANCE_MODE", False)
MAINTENANCE_FLAG_FILE = env_str("MAINTENANCE_FLAG_FILE", str(BASE_DIR / "var" / "maintenance"))
# Retry-After of the 503 answers, and how long a task waits before it tries again.
MAINTENANCE_RETRY_SECONDS = env_int("MAINTENANCE_RETRY_SECONDS", 120)

# --- API (DRF) and tokens -------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["tenants.authentication.JWTAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_PARSER_CLASSES": ["eventsaas.parsers.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "eventsaas.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "eventsaas.api.Pagination",
    "PAGE_SIZE": 50,
    "EXCEPTION_HANDLER": "eventsaas.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
# Limits of every JSON body the API reads (eventsaas.parsers.JSONParser): a larger or deeper one is a 400.
API_MAX_BODY_BYTES = env_int("API_MAX_BODY_BYTES", 2_621_440)
API_MAX_JSON_DEPTH = env_int("API_MAX_JSON_DEPTH", 32)
JWT_ISSUER = env_str("JWT_ISSUER", "eventsaas")
JWT_AUDIENCE = env_str("JWT_AUDIENCE", "eventsaas-api")
# PEM files, newest first: the first signs, all are published in the JWKS.
JWT_PRIVATE_KEY_FILES = env_list("JWT_PRIVATE_KEY_FILES", [])
# Public keys of retired signing keys, published until their tokens have expired.
JWT_RETIRED_PUBLIC_KEY_FILES = env_list("JWT_RETIRED_PUBLIC_KEY_FILES", [])
JWT_DEVELOPMENT_KEY_FILE = env_str("JWT_DEVELOPMENT_KEY_FILE", str(BASE_DIR / "var" / "jwt" / "signing-key.pem"))
JWT_GUEST_TOKEN_LIFETIME = timedelta(minutes=env_int("JWT_GUEST_TOKEN_MINUTES", 12 * 60))
# How long a process may trust its cached copy of an organizer's token version and
# refresh family (tenants/token_state.py). Revocations write the cache at once; this
# bounds how late a process without a shared cache (no REDIS_URL) notices one.
TOKEN_STATE_CACHE_SECONDS = env_int("TOKEN_STATE_CACHE_SECONDS", 30)
# The guest API keeps the households it read, and the guest page the pages it rendered, in each process's
# memory, checked against a version of the event in the shared cache on every request
# (rsvp/household_cache.py, rsvp/guest_page_cache.py): on with REDIS_URL only,
# since a per-process cache cannot tell one process about another's writes. The seconds bound how
# long anything is kept (and so a change that missed its version); 0 turns it off.
GUEST_API_CACHE_SECONDS = env_int("GUEST_API_CACHE_SECONDS", 30 if REDIS_URL else 0)
GUEST_API_CACHE_ENTRIES = env_int("GUEST_API_CACHE_ENTRIES", 5_000)
if GUEST_API_CACHE_SECONDS > 0 and not REDIS_URL:
    raise ImproperlyConfigured("GUEST_API_CACHE_SECONDS needs REDIS_URL: each process would keep stale households")
if GUEST_API_CACHE_ENTRIES < 1:
    raise ImproperlyConfigured("GUEST_API_CACHE_ENTRIES must be 1 or more")
# The public shop page is kept this many seconds in each web process for visitors without a session
# (billing/shop_page_cache.py): what it shows (seats left, an edit) can be that late; checkout never is.
# Checkout's event is kept (under its version, events/on_sale_cache.py) at most as long. 0 turns both off.
SHOP_PAGE_CACHE_SECONDS = env_int("SHOP_PAGE_CACHE_SECONDS", 2)
if SHOP_PAGE_CACHE_SECONDS < 0:
    raise ImproperlyConfigured("SHOP_PAGE_CACHE_SECONDS must be 0 (off) or more")
SIMPLE_JWT: dict[str, Any] = {
    "ALGORITHM": "RS256",
    "ACCESS_TOKEN_LIFETIME": timedelta(minutes=env_int("JWT_ACCESS_TOKEN_MINUTES", 10)),
    "REFRESH_TOKEN_LIFETIME": timedelta(days=env_int("JWT_REFRESH_TOKEN_DAYS", 1)),
    # Rotation and reuse detection are ours (tenants/token_state.py: one family row per
    # login, compare-and-set); simplejwt's blacklist app needs SQL tables that MongoDB lacks.
    "ROTATE_REFRESH_TOKENS": False,
    "UPDATE_LAST_LOGIN": False,
    "USER_ID_FIELD": "id",
    "USER_ID_CLAIM": "sub",
    "SIGNING_KEY": None,
    "AUTH_HEADER_TYPES": ("Bearer",),
}
SPECTACULAR_SETTINGS = {
    "TITLE": "eventsaas API",
    "DESCRIPTION": (
        "Organizer and guest API. Authenticate with `Authorization: Bearer <token>`: guests get a token "
        "from `POST /api/v1/auth/guest-login`, organizers from `POST /api/v1/auth/token`. Tokens are RS256 "
        "JWTs; the public keys are at `/.well-known/jwks.json`."
    ),
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    # Events and guests both have a `status`: name the two enums apart.
    "ENUM_NAME_OVERRIDES": {
        "EventStatusEnum": "events.models.Event.Status",
        "GuestStatusEnum": "guests.models.Guest.Status",
        "GuestAnsweredByEnum": "guests.models.Guest.AnsweredBy",
        "ChangeRequestStatusEnum": "rsvp.models.ChangeRequest.Status",
        "OrderStatusEnum": "billing.models.Order.Status",
        "TicketStatusEnum": "billing.models.Ticket.Status",
    },
}

"""Test overrides: fast hashing, in-memory email and cache. DATABASE_URL still chooses the database."""

from eventsaas.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests"},
    "pages": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "tests-pages"},
}
# Off: tests read the shop page right after a sale or an edit; tests/billing/test_shop_page_cache.py turns it on.
SHOP_PAGE_CACHE_SECONDS = 0
# On, as with Redis: the suite is one process, so the in-memory cache is shared, and every test that writes
# and then reads the guest API checks that the write changed the event's version (rsvp/household_cache.py).
GUEST_API_CACHE_SECONDS = 30
SILENCED_SYSTEM_CHECKS = ["django_ratelimit.E003", "django_ratelimit.W001", "axes.W001"]
CELERY_TASK_ALWAYS_EAGER = True
# Tests that publish activity to a broker see it sent in the request; tests/workers/test_activity_publish.py
# turns the background sender on.
ACTIVITY_SEND_INTERVAL_MS = 0
CELERY_BROKER_URL = "memory://"
# The folder broker's options (settings.py adds them without REDIS_URL) mean nothing to the brokers tests use.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    key: value
    for key, value in CELERY_BROKER_TRANSPORT_OPTIONS.items()  # noqa: F405
    if key not in {"data_folder_in", "data_folder_out", "control_folder", "polling_interval"}
}
LANGUAGE_CODE = "en"
# Each test process has its own switch: a developer's var/maintenance never reaches the suite.
MAINTENANCE_FLAG_FILE = __import__("os").path.join(
    __import__("tempfile").gettempdir(), f"eventsaas-test-maintenance-{__import__('os').getpid()}"
)
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file rather than in-memory: the Redis worker tests (tests/workers/) run a
    # Celery worker in another thread, which must see the same database with
    # normal locking (WAL). pytest-xdist appends _gw0, _gw1, ... per process.
    import os
    import tempfile

    DATABASES["default"]["TEST"] = {  # noqa: F405
        "NAME": os.path.join(tempfile.gettempdir(), f"eventsaas-test-{os.getpid()}.sqlite3")
    }

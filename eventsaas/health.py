"""Health endpoints for load balancers, orchestrators and `docker compose` (docs/deployment.md).

- `GET /healthz`: the process is up and answering (liveness). Touches nothing else.
- `GET /readyz`: this process can serve traffic (readiness): the database answers, every migration on disk
  is applied, the broker accepts connections when one is configured, the static files' manifest is there when
  the pages need one (production: `collectstatic` has run) and the API's signing key loads. 200 when all pass,
  503 otherwise; the body names each check and whether it passed, never the error (it is logged).

They are answered by a middleware ahead of the others, so a probe needs no Host header from ALLOWED_HOSTS,
is not redirected to HTTPS, opens no session and writes nothing.
"""

import logging
import os
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.http import JsonResponse

from eventsaas.broker import is_folder_broker
from eventsaas.logs import answered_on_purpose
from eventsaas.maintenance import maintenance_is_on

logger = logging.getLogger(__name__)

# Once every migration on disk was found applied, later probes only check the database answers: this
# process's code cannot gain migrations while it runs.
_migrations_complete = False


def check_database() -> None:
    """One small ORM query (no raw SQL, so MongoDB answers it too)."""
    MigrationRecorder.Migration.objects.using(DEFAULT_DB_ALIAS).exists()


def check_migrations() -> None:
    """Every migration on disk is recorded as applied (a squashed one counts when all it replaces are)."""
    global _migrations_complete
    if _migrations_complete:
        return
    applied = set(MigrationRecorder.Migration.objects.using(DEFAULT_DB_ALIAS).values_list("app", "name"))
    pending = [
        key
        for key, migration in _migrations_on_disk().items()
        if key not in applied and not (migration.replaces and set(migration.replaces) <= applied)
    ]
    if pending:
        app_label, name = sorted(pending)[0]
        raise RuntimeError(f"{len(pending)} migration(s) not applied, e.g. {app_label}.{name}")
    _migrations_complete = True


def _migrations_on_disk() -> dict:
    # Without a connection the loader reads the migration files only (no introspection queries).
    return MigrationLoader(None, ignore_no_migrations=True).disk_migrations


def check_broker() -> None:
    """A connection to the Celery broker (Redis answers a PING); for the folder broker, its folder is writable."""
    from eventsaas.celery import app

    options: dict[str, Any] = settings.CELERY_BROKER_TRANSPORT_OPTIONS  # numbers, and paths for the folder broker
    folder = options.get("data_folder_out")
    if is_folder_broker(settings.CELERY_BROKER_URL):
        if not (folder and os.path.isdir(folder) and os.access(folder, os.W_OK)):
            raise RuntimeError(f"broker folder {folder} is missing or not writable")
        return
    with app.connection_for_write() as connection:
        connection.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=2)


def check_static_files() -> None:
    """With hashed names (production), every page links files through collectstatic's manifest: without it
    each page, the error page too, fails. Read by this process at start, so a later collectstatic needs a restart."""
    from django.contrib.staticfiles.storage import ManifestFilesMixin, staticfiles_storage

    if isinstance(staticfiles_storage, ManifestFilesMixin):
        staticfiles_storage.stored_name("img/favicon.svg")  # ValueError without the manifest (or the file)


# Checks that only an app can make, added by its AppConfig.ready() (the platform imports no app): tenants adds
# "signing_key", the key the API signs tokens and publishes its JWKS with.
_app_checks: dict[str, Callable[[], None]] = {}


def readiness_check_register(name: str, check: Callable[[], None]) -> None:
    """Run `check` in every /readyz; it raises when this process cannot serve."""
    _app_checks[name] = check


def broker_configured() -> bool:
    from eventsaas.celery import app

    return not app.conf.task_always_eager and not settings.CELERY_BROKER_URL.startswith("memory://")


def readiness() -> dict[str, str]:
    checks = {"database": check_database, "migrations": check_migrations}
    if broker_configured():
        checks["broker"] = check_broker
    checks.update(static_files=check_static_files, **_app_checks)
    results = {}
    for name, check in checks.items():
        try:
            check()
        except Exception as exc:
            logger.warning("Readiness check %s failed: %s: %s", name, type(exc).__name__, exc)
            results[name] = "failed"
        else:
            results[name] = "ok"
    return results


class HealthCheckMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.path == "/healthz":
            return JsonResponse({"status": "ok"})
        if request.path == "/readyz":
            checks = readiness()
            ready = all(result == "ok" for result in checks.values())
            body = {"status": "ready" if ready else "unavailable", "checks": checks}
            if maintenance_is_on():
                # Still ready: reads are served, so a load balancer keeps sending them (eventsaas/maintenance.py).
                body["maintenance"] = True
            # Not ready is the answer a probe asks for, not a failure of the request: the failed check is logged.
            return answered_on_purpose(JsonResponse(body, status=200 if ready else 503))
        return self.get_response(request)

"""Logs: one line per request, and a request id that follows the work into Celery tasks (docs/deployment.md).

- django-guid's middleware gives each request an id (the client's `X-Request-ID` when it is a UUID, else a new
  one), returns it in the response's `X-Request-ID` header and keeps it in a context variable. Its Celery
  integration copies it into the headers of every task the request publishes and sets it again in the
  worker while that task runs (a beat job gets a fresh one).
- `RequestIdFilter` puts that id on every log record (and the task's name and id in a worker), so the web
  process's lines and the task's lines of one request share `request_id`.
- `RequestLogMiddleware` writes the one line per request: method, path, status, duration, and who asked
  (tenant, user or guest) as far as the request established it. The views that resolve a guest or a
  tenant say so with `log_context(...)`; nothing is looked up only for the log. A 5xx is an ERROR unless
  the product gave it on purpose (`answered_on_purpose`: maintenance, payments not available, not ready).
- settings.LOGGING formats records as JSON (python-json-logger) when LOG_FORMAT=json, the production default,
  or as text for a person watching bin/run.
"""

import logging
import time
from contextvars import ContextVar

from django.http.response import HttpResponseBase
from django.utils.functional import empty
from django_guid import get_guid

request_logger = logging.getLogger("eventsaas.request")

# Who the current request is for, as far as the views have established it.
_context: ContextVar[dict | None] = ContextVar("eventsaas_log_context", default=None)

# Probes ask every few seconds; their answers are logged only when they are not 200.
QUIET_PATHS = frozenset({"/healthz", "/readyz"})


def log_context(*, tenant_id=None, guest_id=None, user_id=None) -> None:
    """Name the tenant, guest or user of the current request in its log line (values are stored as strings)."""
    context = _context.get()
    if context is None:
        return
    for key, value in (("tenant_id", tenant_id), ("guest_id", guest_id), ("user_id", user_id)):
        if value is not None:
            context[key] = str(value)


class RequestIdFilter(logging.Filter):
    """Adds `request_id` to every record, and `task_name`/`task_id` inside a Celery task."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = get_guid()
        task = _current_task()
        if task is not None:
            record.task_name = task.name
            record.task_id = task.request.id
        return True


def _current_task():
    from celery import current_task

    task = current_task._get_current_object() if current_task else None
    if task is None or getattr(task.request, "id", None) is None:
        return None
    return task


def answered_on_purpose(response: HttpResponseBase) -> HttpResponseBase:
    """Mark a 5xx the product gives on purpose (maintenance, payments not available, not ready yet).

    Its request line is a WARNING, not an ERROR, and Django's django.request does not add an error of its own:
    nothing broke, and what caused it (a provider's failure, a readiness check) is logged where it was found.
    """
    response._answered_on_purpose = True  # type: ignore[attr-defined]
    response._has_been_logged = True  # type: ignore[attr-defined]  # Django's flag: django.request skips it
    return response


class RequestLogMiddleware:
    """One log line per request; first in the chain after django-guid's, so it times and sees everything."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        started = time.perf_counter()
        token = _context.set({})
        try:
            response = self.get_response(request)
            duration_ms = (time.perf_counter() - started) * 1000
            if response.status_code != 200 or request.path not in QUIET_PATHS:
                self._log(request, response, duration_ms, _context.get())
            return response
        finally:
            _context.reset(token)

    @staticmethod
    def _log(request, response, duration_ms: float, context: dict) -> None:
        fields = {
            "method": request.method,
            "path": request.path,
            "status": response.status_code,
            "duration_ms": round(duration_ms, 1),
            **_who(request),
            **context,
        }
        level = logging.INFO
        if response.status_code >= 500:
            level = logging.WARNING if getattr(response, "_answered_on_purpose", False) else logging.ERROR
        request_logger.log(
            level,
            "%s %s %s %.1fms",
            request.method,
            request.path,
            response.status_code,
            duration_ms,
            extra=fields,
        )


def _who(request) -> dict:
    """Tenant, user and guest that the request's own processing already loaded (never a query for the log)."""
    who = {}
    tenant = getattr(request, "tenant", None)
    if tenant is not None:
        who["tenant_id"] = str(tenant.pk)
    user = request.__dict__.get("user")
    if user is not None and getattr(user, "_wrapped", None) is not empty:
        # An API token's identity (DRF sets it on the request), or a session user that was loaded.
        role = getattr(user, "role", None)
        if role == "guest":
            who["guest_id"] = str(user.pk)
            if tenant_id := user.claims.get("tenant_id"):
                who["tenant_id"] = str(tenant_id)
        elif getattr(user, "is_authenticated", False):
            who["user_id"] = str(user.pk)
    return who

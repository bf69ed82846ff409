"""The maintenance switch: while it is on, the site answers reads and refuses every write.

For moving the data to another database (`manage.py db_move`, docs/deployment.md): nothing may be
written to the old database once the copy has started. It is on while MAINTENANCE_MODE=1, or while
the flag file exists (settings.MAINTENANCE_FLAG_FILE, `manage.py maintenance on|off`): a file, so that
every web process and worker of a running installation sees the switch at once, without a restart.

- Pages: a POST (any method but GET, HEAD, OPTIONS) gets a 503 page saying why, with Retry-After.
- API: a 503 JSON error with Retry-After; GETs keep working.
- Stripe webhooks get the same 503, which Stripe retries for three days.
- Health probes answer as before (they run first); /readyz names the switch.
- Celery tasks wait: a task that starts during maintenance is sent again after MAINTENANCE_RETRY_SECONDS,
  and activity tracking records nothing (it is best effort).
"""

import os
from pathlib import Path

from django.conf import settings
from django.http import HttpResponse, JsonResponse
from django.template.loader import render_to_string
from django.utils import translation
from django.utils.translation import gettext as _

from eventsaas.logs import answered_on_purpose

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def maintenance_is_on() -> bool:
    return settings.MAINTENANCE_MODE or os.path.exists(settings.MAINTENANCE_FLAG_FILE)


def maintenance_switch(*, on: bool) -> None:
    """Create or remove the flag file."""
    flag = Path(settings.MAINTENANCE_FLAG_FILE)
    if on:
        flag.parent.mkdir(parents=True, exist_ok=True)
        flag.touch()
    else:
        flag.unlink(missing_ok=True)


class MaintenanceMiddleware:
    """Refuses writes while maintenance is on; placed after the health probes, before sessions."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        if request.method in SAFE_METHODS or not maintenance_is_on():
            return self.get_response(request)
        # Before LocaleMiddleware, which runs only for requests that go on: the answer picks its own language.
        with translation.override(translation.get_language_from_request(request)):
            return self._refusal(request)

    def _refusal(self, request):
        if request.path.startswith("/api/"):
            message = _("The site is in maintenance: nothing can be changed right now. Try again in a few minutes.")
            response = JsonResponse({"detail": message, "code": "maintenance"}, status=503)
        else:
            response = HttpResponse(render_to_string("maintenance.html", request=request), status=503)
        response["Retry-After"] = str(settings.MAINTENANCE_RETRY_SECONDS)
        return answered_on_purpose(response)

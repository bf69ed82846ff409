"""The organizer API's event gate: the event is resolved once, before the handler runs.

`OrganizerEventApi` is the base of every organizer endpoint under `events/<event_id>/`: after DRF's
authentication, permission and throttle checks it looks the event up among the token's organizations
(another organization's event is a 404, never a 403) and checks the caller's role for the method
(reads for safe methods, a writer's role for the others, door staff where `check_in_methods` says so).
The handler finds it in `self.event` and never repeats the lookup (pretix's `EventPermissionRequiredMixin`,
Sentry's `convert_args`).
"""

from rest_framework import exceptions
from rest_framework.permissions import SAFE_METHODS
from rest_framework.views import APIView

from events.models import Event
from eventsaas.logs import log_context
from tenants.permissions import IsOrganizer, check_role


def organizer_event(request, event_id, *, write: bool = False, check_in: bool = False) -> Event:
    """The event of one of the token's organizations; `check_in` admits door staff (and editors), not viewers."""
    event = Event.objects.select_related("tenant").filter(pk=event_id, tenant_id__in=request.user.tenant_ids).first()
    if event is None:
        raise exceptions.NotFound()
    check_role(request.user, event.tenant_id, write=write, check_in=check_in)
    log_context(tenant_id=event.tenant_id)
    return event


class OrganizerEventApi(APIView):
    """Base of the organizer endpoints whose URL carries `event_id`; sets `self.event`."""

    permission_classes = [IsOrganizer]
    #: Methods door staff may call (check-in); every other unsafe method needs a writer's role.
    check_in_methods: frozenset[str] = frozenset()

    event: Event

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if self._handles(request.method):
            self.resolve(request, **kwargs)

    def _handles(self, method: str) -> bool:
        # OPTIONS and methods the view does not implement keep DRF's own answers (metadata, 405).
        return method != "OPTIONS" and method.lower() in self.http_method_names and hasattr(self, method.lower())

    def resolve(self, request, **kwargs) -> None:
        """Resolve the URL's objects; subclasses resolving more (a guest) call this first."""
        method = request.method
        check_in = method in self.check_in_methods
        write = method not in SAFE_METHODS and not check_in
        self.event = organizer_event(request, kwargs["event_id"], write=write, check_in=check_in)

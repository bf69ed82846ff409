"""The organizer API's guest gate: event and guest resolved once, before the handler (see events.permissions)."""

from events.permissions import OrganizerEventApi
from guests.models import Guest
from guests.selectors import guest_get


class OrganizerGuestApi(OrganizerEventApi):
    """Base of the organizer endpoints under `events/<event_id>/guests/<guest_id>`; sets `self.event`,
    then `self.guest` (a guest of another event is a 404)."""

    guest: Guest

    def resolve(self, request, **kwargs) -> None:
        super().resolve(request, **kwargs)
        self.guest = guest_get(event=self.event, guest_id=kwargs["guest_id"])

"""The change request list's query string (the organizer API's list)."""

import django_filters

from eventsaas.filters import ListFilterSet
from rsvp.models import ChangeRequest


class ChangeRequestFilterSet(ListFilterSet):
    status = django_filters.ChoiceFilter(
        choices=ChangeRequest.Status.choices, help_text="Default: pending (oldest first); others newest first"
    )

    defaults = {"status": ChangeRequest.Status.PENDING.value}

    class Meta:
        model = ChangeRequest
        fields: list[str] = []

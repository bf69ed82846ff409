"""The event lists' query strings (the API's event list and ticket type list)."""

import django_filters

from events.models import Event, TicketType
from eventsaas.filters import ListFilterSet, StrictBooleanFilter


class EventFilterSet(ListFilterSet):
    include_archived = StrictBooleanFilter()

    defaults = {"include_archived": False}

    class Meta:
        model = Event
        fields: list[str] = []


class TicketTypeFilterSet(ListFilterSet):
    access_code = django_filters.CharFilter(max_length=40, help_text="Also list the types hidden behind this code")

    class Meta:
        model = TicketType
        fields: list[str] = []

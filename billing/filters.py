"""The order list's query string (the organizer API's order list)."""

import django_filters

from billing.models import Order
from eventsaas.filters import ListFilterSet


class OrderFilterSet(ListFilterSet):
    status = django_filters.ChoiceFilter(choices=Order.Status.choices)

    class Meta:
        model = Order
        fields: list[str] = []

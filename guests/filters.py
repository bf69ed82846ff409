"""The guest lists' query strings: the organizer's guest list (its page and the API) and the activity list."""

import django_filters
from django.utils.translation import gettext_lazy as _

from eventsaas.filters import ListFilterSet, StrictBooleanFilter
from guests.models import Guest
from guests.selectors import ACTIVITY_SORTS, GuestFilters


class GuestFilterSet(ListFilterSet):
    """The guest list's filters; the page renders its form (a select, a checkbox, a search box)."""

    status = django_filters.ChoiceFilter(label=_("Status"), choices=Guest.Status.choices, empty_label=_("All"))
    never_logged_in = StrictBooleanFilter(label=_("Never logged in"))
    q = django_filters.CharFilter(
        label=_("Search"),
        help_text=_("Words found in names, codes or email; accents, case and punctuation do not matter."),
        max_length=100,
    )

    defaults = {"never_logged_in": False}

    class Meta:
        model = Guest
        fields: list[str] = []

    def guest_filters(self) -> GuestFilters:
        """The values for selectors.guest_list; only after `is_valid()`."""
        values = self.values()
        return GuestFilters(status=values["status"], never_logged_in=values["never_logged_in"], search=values["q"])


class GuestActivityFilterSet(ListFilterSet):
    sort = django_filters.ChoiceFilter(choices=[(sort, sort) for sort in ACTIVITY_SORTS])
    never_opened = StrictBooleanFilter(help_text="Only guests who never logged in")

    defaults = {"sort": "last_access", "never_opened": False}

    class Meta:
        model = Guest
        fields: list[str] = []

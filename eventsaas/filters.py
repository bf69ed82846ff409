"""The lists' query strings, read by django-filter: one FilterSet per list, shared by its page and its API.

Each list's FilterSet lives in the app that owns the list (`guests/filters.py`, `events/filters.py`, ...).
It reads and checks the query string and hands the cleaned values, with the list's defaults for what was
left out (`ListFilterSet.values()`), to the selector, which builds the query as before. `filterset.qs` is
not used, on purpose: half of the lists are not a narrowing of one queryset (the event list adds headline
numbers after its query, an access code shows a buyer more ticket types rather than fewer, a change
request's status picks the order), and the selectors are where the page and the API already share their
queries and their query counts. A FilterSet never holds a queryset, so no filter value can reach past the
tenant and event the selector is given.

The API side (a bad value is a 400 naming the parameter; the OpenAPI parameters come from the FilterSet)
is `eventsaas.api.FilteredListApi`.
"""

from typing import Any, ClassVar

import django_filters
from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext_lazy as _
from django_filters.constants import EMPTY_VALUES
from rest_framework.fields import BooleanField as ApiBooleanField


def parse_boolean(value: Any) -> bool | None:
    """True or False for the words the API has always taken (DRF's: true/false, 1/0, yes/no, on/off, ...);
    None for anything else."""
    if value in ApiBooleanField.TRUE_VALUES:
        return True
    if value in ApiBooleanField.FALSE_VALUES:
        return False
    return None


class BooleanCheckbox(forms.CheckboxInput):
    """A checkbox on a page; the raw value goes to the field, so "false" or "0" in a URL mean no, as in the API.

    (Django's own checkbox takes any value but "false" as ticked.)
    """

    def __init__(self, attrs=None):
        super().__init__(attrs, check_test=lambda value: parse_boolean(value) is True)

    def value_from_datadict(self, data, files, name):
        return data.get(name)


class StrictBooleanField(forms.Field):
    """Yes or no; left out or blank is None (the list's default), a word that is neither is an error."""

    widget = BooleanCheckbox
    default_error_messages = {"invalid": _("Give true or false.")}

    def to_python(self, value):
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return value
        parsed = parse_boolean(value)
        if parsed is None:
            raise ValidationError(self.error_messages["invalid"], code="invalid")
        return parsed


class StrictBooleanFilter(django_filters.BooleanFilter):
    """A yes/no filter that refuses other words (django-filter's own reads them as "not given")."""

    field_class = StrictBooleanField


class ListFilterSet(django_filters.FilterSet):
    """A list's query string: declared filters only (`Meta.fields = []`), cleaned values for the selector."""

    #: The value of a filter that is left out or blank, as the selector expects it.
    defaults: ClassVar[dict[str, Any]] = {}

    def values(self) -> dict[str, Any]:
        """The cleaned values, a left-out one replaced by its default; only after `is_valid()`."""
        return {
            name: self.defaults.get(name, value) if value in EMPTY_VALUES else value
            for name, value in self.form.cleaned_data.items()
        }

"""Every list of the API reads its query string through its FilterSet (django-filter): a bad value is a 400
that names the parameter, and the OpenAPI parameters are the FilterSet's filters."""

# The organizer fixtures are imported; test arguments name them (ruff cannot tell).
# ruff: noqa: F811

import pytest

from billing.filters import OrderFilterSet
from events.filters import EventFilterSet, TicketTypeFilterSet
from guests.filters import GuestActivityFilterSet, GuestFilterSet
from rsvp.filters import ChangeRequestFilterSet
from tests.api.organizer_fixtures import errors_of, owner_api  # noqa: F401
from tests.api.sweep_fixtures import api_schema
from tests.factories import TicketedEventFactory

pytestmark = pytest.mark.django_db

# operation id, path (event or organization filled in), FilterSet, a bad value of one parameter
LISTS = [
    ("guest_list", "/api/v1/events/{event}/guests", GuestFilterSet, {"status": "maybe"}),
    ("guest_list", "/api/v1/events/{event}/guests", GuestFilterSet, {"never_logged_in": "sometimes"}),
    ("guest_list", "/api/v1/events/{event}/guests", GuestFilterSet, {"q": "x" * 101}),
    ("event_activity", "/api/v1/events/{event}/activity", GuestActivityFilterSet, {"sort": "shoe_size"}),
    ("event_activity", "/api/v1/events/{event}/activity", GuestActivityFilterSet, {"never_opened": "perhaps"}),
    ("event_list", "/api/v1/orgs/{org}/events", EventFilterSet, {"include_archived": "maybe"}),
    ("ticket_type_list", "/api/v1/events/{event}/ticket-types", TicketTypeFilterSet, {"access_code": "x" * 41}),
    ("order_list", "/api/v1/events/{event}/orders", OrderFilterSet, {"status": "lost"}),
    ("change_request_list", "/api/v1/events/{event}/change-requests", ChangeRequestFilterSet, {"status": "maybe"}),
]
LIST_IDS = [f"{operation}-{next(iter(bad))}" for operation, _path, _filterset, bad in LISTS]


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant, status="published")


@pytest.mark.parametrize(("operation", "path", "filterset", "bad"), LISTS, ids=LIST_IDS)
def test_a_bad_filter_value_is_a_400_naming_only_that_parameter(
    owner_api, tenant, concert, operation, path, filterset, bad
):
    url = path.format(event=concert.pk, org=tenant.slug)
    # The other filters are left out (their defaults apply): only the bad parameter is named.
    response = owner_api.get(url, bad)

    errors = errors_of(response)
    assert list(errors) == list(bad)
    assert all(isinstance(message, str) and message for message in errors[next(iter(bad))])


@pytest.mark.parametrize(("operation", "path", "filterset", "bad"), LISTS, ids=LIST_IDS)
def test_a_lists_documented_query_parameters_are_its_filtersets(operation, path, filterset, bad):
    schema = api_schema()
    operations = [op for methods in schema["paths"].values() for op in methods.values() if isinstance(op, dict)]
    (listed,) = [op for op in operations if op.get("operationId") == operation]
    documented = {p["name"] for p in listed["parameters"] if p["in"] == "query"} - {"page", "page_size"}

    assert documented == set(filterset.base_filters)


def test_documented_defaults_and_limits_come_from_the_filtersets():
    schema = api_schema()
    guests = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/events/{event_id}/guests"]["get"]["parameters"]}
    activity = {
        p["name"]: p["schema"] for p in schema["paths"]["/api/v1/events/{event_id}/activity"]["get"]["parameters"]
    }

    assert guests["never_logged_in"] == {"type": "boolean", "default": False}
    assert guests["q"] == {"type": "string", "maxLength": 100}
    assert sorted(guests["status"]["enum"]) == ["coming", "declined", "pending"]
    assert activity["sort"]["default"] == "last_access"

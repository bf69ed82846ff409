"""The guest list's filters are one FilterSet (guests/filters.py): the organizer's page and the API read the
same query string the same way, and the page renders the FilterSet's form."""

import pytest
from django.urls import reverse
from django.utils import timezone

from guests.apis import EventGuestsApi
from guests.filters import GuestFilterSet
from guests.models import Guest
from tests.api.organizer_fixtures import organizer_client
from tests.factories import EventFactory, GuestFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def crowd(event):
    now = timezone.now()
    return [
        GuestFactory(event=event, first_name="Ada", last_name="Lovelace", status=Guest.Status.COMING, num_guests=1),
        GuestFactory(
            event=event, first_name="Bob", last_name="Builder", status=Guest.Status.DECLINED, last_login_at=now
        ),
        GuestFactory(event=event, first_name="Cyd", last_name="Charisse", last_login_at=now),
        GuestFactory(event=event, first_name="Dan", last_name="Lovejoy", email="dan@lovely.example"),
    ]


QUERIES = [
    {},
    {"status": "coming"},
    {"status": ""},
    {"never_logged_in": "on"},
    {"never_logged_in": "true"},
    # "0" and "false" mean no on both sides (a plain Django checkbox would read "0" as ticked).
    {"never_logged_in": "0"},
    {"never_logged_in": "false"},
    {"q": "love"},
    {"q": "  LOVE  lace "},
    {"q": "lovely.example"},
    {"status": "pending", "never_logged_in": "1", "q": "lov"},
]


@pytest.mark.parametrize("query", QUERIES, ids=str)
def test_the_page_and_the_api_list_the_same_guests_for_the_same_query(owner_client, owner, tenant, event, crowd, query):
    GuestFactory(event=EventFactory(tenant=tenant), first_name="Elsewhere", last_name="Lovelace")
    page = owner_client.get(reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}), query)
    api = organizer_client(owner).get(f"/api/v1/events/{event.pk}/guests", query)

    assert page.status_code == api.status_code == 200
    on_page = [str(guest.pk) for guest in page.context["page"]]
    in_api = [row["id"] for row in api.json()["results"]]
    assert on_page == in_api
    assert on_page  # every query above finds someone: an empty list would prove nothing


def test_the_api_and_the_page_use_the_guest_filterset(owner_client, tenant, event):
    response = owner_client.get(reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}))

    assert EventGuestsApi.filterset_class is GuestFilterSet
    assert (
        list(response.context["filter_form"].fields)
        == list(GuestFilterSet.base_filters)
        == [
            "status",
            "never_logged_in",
            "q",
        ]
    )


def test_the_page_renders_the_filters_as_a_select_a_checkbox_and_a_search_box(owner_client, tenant, event):
    url = reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    blank = owner_client.get(url).content.decode()
    ticked = owner_client.get(url, {"never_logged_in": "on", "status": "coming", "q": "ada"}).content.decode()

    assert '<select name="status"' in blank and '<option value="" selected>All</option>' in blank
    assert '<input type="checkbox" name="never_logged_in"' in blank
    assert '<input type="text" name="q" maxlength="100"' in blank
    assert 'name="never_logged_in" value="on"' not in blank
    assert '<option value="coming" selected>Coming</option>' in ticked
    assert 'type="checkbox" name="never_logged_in" value="on"' in ticked and " checked" in ticked
    assert 'value="ada"' in ticked


def test_a_bad_value_on_the_page_names_the_field_and_lists_everyone(owner_client, tenant, event, crowd):
    url = reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    response = owner_client.get(url, {"never_logged_in": "sometimes", "status": "coming"})

    assert response.status_code == 200
    assert response.context["filter_form"].errors == {"never_logged_in": ["Give true or false."]}
    assert len(response.context["page"]) == 4


def test_a_filter_never_reaches_another_organizations_guests(owner, tenant, event, crowd):
    rival = EventFactory()
    GuestFactory(event=rival, first_name="Rita", last_name="Lovelace", status=Guest.Status.COMING)

    found = organizer_client(owner).get(f"/api/v1/events/{event.pk}/guests", {"q": "lovelace", "status": "coming"})
    other = organizer_client(owner).get(f"/api/v1/events/{rival.pk}/guests", {"q": "lovelace"})

    assert [row["first_name"] for row in found.json()["results"]] == ["Ada"]
    assert other.status_code == 404

"""The organizer's guest list and guest pages."""

import datetime as dt
import re
import uuid

import pytest
from django.db import connection
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from guests.models import Guest
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory


def _list_url(tenant, event):
    return reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})


def _listed_ids(response) -> list[str]:
    """Guest ids in the order the list shows them (the selection checkboxes carry them)."""
    return [str(g.pk) for g in response.context["page"]]


def _names(response) -> set[str]:
    return {g.first_name for g in response.context["page"]}


@pytest.fixture
def crowd(event):
    now = timezone.now()
    return {
        "ada": GuestFactory(
            event=event,
            first_name="Ada",
            last_name="Lovelace",
            status=Guest.Status.COMING,
            num_guests=1,
            last_login_at=now,
        ),
        "bob": GuestFactory(
            event=event, first_name="Bob", last_name="Builder", status=Guest.Status.DECLINED, last_login_at=now
        ),
        "cyd": GuestFactory(event=event, first_name="Cyd", last_name="Charisse"),
        "dan": GuestFactory(event=event, first_name="Dan", last_name="Lovejoy", email="dan@lovely.example"),
    }


def test_list_shows_every_guest_of_the_event_only(owner_client, tenant, event, crowd):
    GuestFactory(event=EventFactory(tenant=tenant), first_name="Elsewhere")

    response = owner_client.get(_list_url(tenant, event))

    assert response.status_code == 200
    assert _names(response) == {"Ada", "Bob", "Cyd", "Dan"}
    page = response.content.decode()
    assert "Lovelace, Ada" in page
    assert "Elsewhere" not in page
    assert crowd["ada"].code in page
    assert "4 guests" in page


def test_list_is_sorted_by_last_name(owner_client, tenant, event, crowd):
    response = owner_client.get(_list_url(tenant, event))

    assert _listed_ids(response) == [str(crowd[k].pk) for k in ("bob", "cyd", "dan", "ada")]


@pytest.mark.parametrize(
    "status, expected",
    [("coming", {"Ada"}), ("declined", {"Bob"}), ("pending", {"Cyd", "Dan"}), ("", {"Ada", "Bob", "Cyd", "Dan"})],
)
def test_list_filters_by_status(owner_client, tenant, event, crowd, status, expected):
    response = owner_client.get(_list_url(tenant, event), {"status": status})

    assert _names(response) == expected


def test_list_filters_guests_who_never_logged_in(owner_client, tenant, event, crowd):
    response = owner_client.get(_list_url(tenant, event), {"never_logged_in": "on"})

    assert _names(response) == {"Cyd", "Dan"}


def test_list_filters_combine(owner_client, tenant, event, crowd):
    response = owner_client.get(_list_url(tenant, event), {"never_logged_in": "on", "status": "pending", "q": "love"})

    assert _names(response) == {"Dan"}


@pytest.mark.parametrize(
    "q, expected",
    [
        ("love", {"Ada", "Dan"}),
        ("LOVE", {"Ada", "Dan"}),
        ("ada", {"Ada"}),
        ("ada lovelace", {"Ada"}),
        ("  cyd  ", {"Cyd"}),
        ("nobody", set()),
    ],
)
def test_list_searches_names(owner_client, tenant, event, crowd, q, expected):
    response = owner_client.get(_list_url(tenant, event), {"q": q})

    assert _names(response) == expected


def test_list_with_no_match_says_so(owner_client, tenant, event, crowd):
    # 0 and 1 are never in a code (guests.codes.CODE_ALPHABET) nor in a name; "zzz" matched a random code now and then.
    page = owner_client.get(_list_url(tenant, event), {"q": "1001"}).content.decode()

    assert "No guests match." in page


def test_invalid_filter_value_shows_everyone(owner_client, tenant, event, crowd):
    response = owner_client.get(_list_url(tenant, event), {"status": "bogus"})

    assert response.status_code == 200
    assert len(_names(response)) == 4


@override_settings(GUEST_LIST_PAGE_SIZE=10)
def test_list_is_paginated(owner_client, tenant, event):
    guests = [GuestFactory(event=event, first_name="G", last_name=f"Name{n:02d}") for n in range(25)]

    first = owner_client.get(_list_url(tenant, event))
    third = owner_client.get(_list_url(tenant, event), {"page": 3})
    beyond = owner_client.get(_list_url(tenant, event), {"page": 99})

    assert _listed_ids(first) == [str(g.pk) for g in guests[:10]]
    assert "Page 1 of 3" in first.content.decode()
    assert "25 guests" in first.content.decode()
    assert _listed_ids(third) == [str(g.pk) for g in guests[20:]]
    assert "Page 3 of 3" in third.content.decode()
    assert _listed_ids(beyond) == _listed_ids(third)


@override_settings(GUEST_LIST_PAGE_SIZE=2)
def test_page_links_keep_the_filters(owner_client, tenant, event):
    for n in range(5):
        GuestFactory(event=event, first_name=f"P{n}", last_name=f"Pending{n}")
    GuestFactory(event=event, status=Guest.Status.COMING)

    response = owner_client.get(_list_url(tenant, event), {"status": "pending", "page": 2})

    page = response.content.decode().replace("&amp;", "&")
    assert "?status=pending&page=3" in page
    assert "?status=pending&page=1" in page
    assert _names(response) == {"P2", "P3"}


def test_list_shows_the_other_members_of_each_guests_group(owner_client, tenant, event, household):
    response = owner_client.get(_list_url(tenant, event))

    by_name = {g.first_name: g for g in response.context["page"]}
    assert [m.first_name for m in by_name["Anna"].other_members] == ["Lisa"]
    assert [m.first_name for m in by_name["Lisa"].other_members] == ["Anna"]


def _populate(event, count):
    """`count` guests, a third of them in households of three, some answered, some logged in."""
    now = timezone.now()
    guests = []
    for n in range(count):
        guests.append(
            Guest(
                tenant_id=event.tenant_id,
                event=event,
                first_name=f"First{n}",
                last_name=f"Last{n:03d}",
                group_id=uuid.uuid5(uuid.NAMESPACE_OID, f"{event.pk}-{n // 3}") if n % 9 < 3 else None,
                status=[Guest.Status.PENDING, Guest.Status.COMING, Guest.Status.DECLINED][n % 3],
                num_guests=1 if n % 3 == 1 else 0,
                last_login_at=now if n % 2 else None,
            )
        )
    Guest.objects.bulk_create(guests)


def _count_queries(client, url, params=None) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url, params or {})
    assert response.status_code == 200
    return len(queries.captured_queries)


@pytest.mark.parametrize("params", [{}, {"status": "coming"}, {"never_logged_in": "on", "q": "First"}])
def test_list_uses_the_same_number_of_queries_for_5_and_120_guests(owner_client, tenant, params):
    small, big = EventFactory(tenant=tenant), EventFactory(tenant=tenant)
    _populate(small, 5)
    _populate(big, 120)
    owner_client.get(_list_url(tenant, small))  # warm up the session and the membership

    small_count = _count_queries(owner_client, _list_url(tenant, small), params)
    big_count = _count_queries(owner_client, _list_url(tenant, big), params)

    assert small_count == big_count
    assert big_count <= 10


def test_viewer_sees_the_list_without_edit_controls(member_client, tenant, event, crowd):
    client = member_client(Role.VIEWER)

    response = client.get(_list_url(tenant, event))

    assert response.status_code == 200
    page = response.content.decode()
    assert 'name="guests"' not in page
    assert "Add guest" not in page


def test_add_guest_page_creates_a_guest_with_a_code(owner_client, tenant, event):
    url = reverse("guests:create", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    response = owner_client.post(
        url, {"first_name": "Zoe", "last_name": "Zander", "email": "", "phone": "", "expected_guests": 2}
    )

    assert response.status_code == 302
    guest = Guest.objects.get(event=event, first_name="Zoe")
    assert guest.tenant_id == tenant.pk
    assert guest.expected_guests == 2
    assert re.fullmatch(r"[23456789ABCDEFGHJKMNPQRSTUVWXYZ]{8,}", guest.code)
    assert guest.status == Guest.Status.PENDING


def test_add_guest_page_refuses_zero_expected_guests(owner_client, tenant, event):
    url = reverse("guests:create", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    response = owner_client.post(url, {"first_name": "Zoe", "last_name": "Zander", "expected_guests": 0})

    assert response.status_code == 400
    assert not Guest.objects.filter(first_name="Zoe").exists()


@pytest.mark.parametrize("field", ["first_name", "last_name"])
def test_add_guest_page_refuses_a_control_character_in_a_name_on_the_field(owner_client, tenant, event, field):
    url = reverse("guests:create", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})
    data = {"first_name": "Zoe", "last_name": "Zander", "expected_guests": 1, field: "Zo\u202eeZ\tX"}

    response = owner_client.post(url, data)

    assert response.status_code == 400
    assert response.context["form"].errors[field] == [
        "Remove the control characters (tabs, line breaks or invisible direction marks) from this text."
    ]
    assert not Guest.objects.for_event(event).exists()


def test_guest_detail_refuses_a_line_break_in_a_name_and_keeps_the_stored_one(owner_client, tenant, event, household):
    anna, _lisa = household
    url = reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk})

    response = owner_client.post(url, {"first_name": "Anna", "last_name": "Mül\nler", "expected_guests": 1})

    assert response.status_code == 400
    assert "last_name" in response.context["form"].errors
    assert Guest.objects.get(pk=anna.pk).last_name == anna.last_name


def test_guest_detail_shows_code_link_and_group(owner_client, tenant, event, household):
    anna, _lisa = household
    url = reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk})

    page = owner_client.get(url).content.decode()

    assert f'data-testid="guest-code">{anna.code}<' in page
    assert f"/rsvp/?code={anna.code}" in page
    assert "Lisa Müller" in page


def test_guest_detail_saves_edits(owner_client, tenant, event, household):
    anna, _lisa = household
    url = reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk})

    response = owner_client.post(
        url,
        {
            "first_name": "Anna",
            "last_name": "Müller-Roth",
            "email": "anna@example.com",
            "expected_guests": 2,
            "dietary": "Vegan",
        },
    )

    assert response.status_code == 302
    anna.refresh_from_db()
    assert (anna.last_name, anna.email, anna.expected_guests, anna.dietary) == (
        "Müller-Roth",
        "anna@example.com",
        2,
        "Vegan",
    )
    assert anna.code == Guest.objects.get(pk=anna.pk).code  # editing keeps the code


def test_activity_stamps_show_on_detail(owner_client, tenant, event):
    guest = GuestFactory(event=event, last_login_at=timezone.now() - dt.timedelta(days=1))
    url = reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": guest.pk})

    page = owner_client.get(url).content.decode()

    assert "Last access: never" in page
    assert "Last login: never" not in page


def test_guest_detail_refuses_zero_expected_guests_with_a_field_error(owner_client, tenant, event, household):
    anna, _lisa = household
    url = reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk})

    response = owner_client.post(url, {"first_name": "Anna", "last_name": "Müller", "expected_guests": 0})

    assert response.status_code == 400
    assert "expected_guests" in response.context["form"].errors
    assert Guest.objects.get(pk=anna.pk).expected_guests == 1

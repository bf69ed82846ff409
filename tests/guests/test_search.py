"""Search and login forgive accents, case and punctuation: the stored search key, on every write path."""

import pytest
from django.urls import reverse

from eventsaas.models import AuditLog
from guests import services
from guests.codes import name_key, search_key
from guests.models import Guest
from rsvp.services import guest_authenticate
from tests.api.organizer_fixtures import organizer_client
from tests.factories import EventFactory, GuestFactory, UserFactory


def _key(guest) -> str:
    return Guest.objects.values_list("search_key", flat=True).get(pk=guest.pk)


def _expected_key(guest) -> str:
    guest = Guest.objects.get(pk=guest.pk)
    return search_key(first_name=guest.first_name, last_name=guest.last_name, code=guest.code)


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ("Pérez", "perez"),
        ("ÁLVAREZ", "alvarez"),
        ("O'Brien", "obrien"),
        ("O’Brien", "obrien"),
        ("Pérez-García", "perezgarcia"),
        ("de la Cruz", "delacruz"),
        ("Søren Ærø", "sorenaero"),
        ("Łukasz Straße", "lukaszstrasse"),
        ("  ", ""),
    ],
)
def test_name_key_drops_case_accents_spaces_and_punctuation(raw, key):
    assert name_key(raw) == key


def test_search_key_holds_first_last_full_name_and_code_apart():
    assert search_key(first_name="Ana", last_name="Pérez García", code="K9SCVN4X") == (
        "ana perezgarcia anaperezgarcia k9scvn4x"
    )


# --- every write path keeps the key ------------------------------------------------------------------------


def test_create_update_and_code_regeneration_keep_the_key(event, owner):
    guest = services.guest_create(event=event, acting_user=owner, first_name="Ana", last_name="Pérez")
    assert _key(guest) == _expected_key(guest) and "perez" in _key(guest)

    services.guest_update(guest=guest, acting_user=owner, last_name="Álvarez")
    assert _key(guest) == _expected_key(guest) and "alvarez" in _key(guest) and "perez" not in _key(guest)

    old_code = guest.code
    services.guest_code_regenerate(guest=guest, acting_user=owner)
    assert _key(guest) == _expected_key(guest)
    assert old_code.lower() not in _key(guest) and guest.code.lower() in _key(guest)


def test_an_update_that_changes_no_name_leaves_the_key_alone(event, owner, django_assert_num_queries):
    guest = services.guest_create(event=event, acting_user=owner, first_name="Ana", last_name="Pérez")

    services.guest_update(guest=guest, acting_user=owner, dietary="Vegan")

    assert _key(guest) == _expected_key(guest)


def test_bulk_create_keys_every_row(event, owner):
    rows = [{"first_name": f"Zoë{n}", "last_name": "Nuñez"} for n in range(30)]

    guests = services.guest_bulk_create(event=event, rows=rows, acting_user=owner)

    assert all(_key(g) == _expected_key(g) and "nunez" in _key(g) for g in guests)


def test_bulk_create_keys_follow_codes_changed_by_a_collision(event, owner, monkeypatch):
    taken = GuestFactory(event=event).code
    codes = iter([taken, "ABCDEFGH", "HGFEDCBA"])
    monkeypatch.setattr(services, "generate_code", lambda: next(codes))

    [guest] = services.guest_bulk_create(event=event, rows=[{"first_name": "A", "last_name": "B"}], acting_user=owner)

    assert guest.code != taken and _key(guest) == _expected_key(guest)


@pytest.fixture
def staff_client(client, db):
    client.force_login(UserFactory(is_staff=True, is_superuser=True))
    return client


def test_admin_edits_keep_the_key_validate_and_audit(staff_client, event):
    guest = GuestFactory(event=event, first_name="Ana", last_name="Lopez")
    url = reverse("admin:guests_guest_change", args=[guest.pk])
    form = {
        "event": str(event.pk),
        "first_name": "Ana",
        "last_name": "López-O'Neill",
        "email": "",
        "phone": "",
        "group_id": "",
        "expected_guests": "1",
        "dietary": "",
        "answers": "{}",
    }

    response = staff_client.post(url, form)

    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    assert "lopezoneill" in _key(guest) and _key(guest) == _expected_key(guest)
    entry = AuditLog.objects.get(action="guest.updated", object_id=guest.pk)
    assert entry.data["via"] == "admin" and "last_name" in entry.data["fields"]

    refused = staff_client.post(url, {**form, "expected_guests": "0"})
    assert refused.status_code == 200 and Guest.objects.get(pk=guest.pk).expected_guests == 1


def test_admin_cannot_edit_answers(staff_client, event):
    guest = GuestFactory(event=event, status=Guest.Status.COMING, num_guests=2)

    page = staff_client.get(reverse("admin:guests_guest_change", args=[guest.pk])).content.decode()

    assert 'name="status"' not in page and 'name="num_guests"' not in page


def test_admin_search_forgives_accents_and_punctuation(staff_client, event):
    perez = GuestFactory(event=event, first_name="Ana", last_name="Pérez")
    GuestFactory(event=event, first_name="Luis", last_name="Alvarado")

    for term in ("perez", "PÉREZ", "ana perez", perez.code.lower()):
        changelist = staff_client.get(reverse("admin:guests_guest_changelist"), {"q": term}).context["cl"]
        assert [g.pk for g in changelist.result_list] == [perez.pk], term


# --- the organizer's search, page and API -------------------------------------------------------------


@pytest.fixture
def names(event):
    return {
        "perez": GuestFactory(event=event, first_name="Ana", last_name="Pérez García"),
        "alvarez": GuestFactory(event=event, first_name="Íñigo", last_name="Álvarez"),
        "obrien": GuestFactory(event=event, first_name="Siobhán", last_name="O'Brien", email="sio@example.com"),
        "other": GuestFactory(event=event, first_name="Luis", last_name="Santos"),
    }


SEARCHES = [
    ("perez", {"perez"}),
    ("PEREZ", {"perez"}),
    ("pérez", {"perez"}),
    ("alvarez", {"alvarez"}),
    ("ana perez", {"perez"}),
    ("perez garcia", {"perez"}),
    ("perez-garcia", {"perez"}),
    ("anaperez", {"perez"}),
    ("inigo", {"alvarez"}),
    ("obrien", {"obrien"}),
    ("o'brien", {"obrien"}),
    ("siobhan o brien", {"obrien"}),
    ("sio@example", {"obrien"}),
    ("garcia santos", set()),  # words of two different guests
    ("'", {"perez", "alvarez", "obrien", "other"}),  # nothing to search for
]


@pytest.mark.parametrize(("q", "expected"), SEARCHES)
def test_guest_list_page_search(owner_client, tenant, event, names, q, expected):
    response = owner_client.get(
        reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}), {"q": q}
    )

    assert {g.pk for g in response.context["page"]} == {names[key].pk for key in expected}


@pytest.mark.parametrize(("q", "expected"), SEARCHES)
def test_guest_list_api_search(owner, event, names, q, expected):
    response = organizer_client(owner).get(f"/api/v1/events/{event.pk}/guests", {"q": q})

    assert response.status_code == 200
    assert {r["id"] for r in response.json()["results"]} == {str(names[key].pk) for key in expected}


def test_search_finds_a_guest_by_code_typed_any_way(owner_client, tenant, event, names):
    code = names["other"].code
    url = reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    for typed in (code, code.lower(), f"{code[:4]}-{code[4:]}".lower(), f"{code[:4]} {code[4:]}"):
        assert [g.pk for g in owner_client.get(url, {"q": typed}).context["page"]] == [names["other"].pk], typed


def test_search_stays_in_the_event(owner_client, tenant, event, names):
    twin = GuestFactory(event=EventFactory(tenant=tenant), first_name="Ana", last_name="Pérez García")
    url = reverse("guests:list", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    found = {g.pk for g in owner_client.get(url, {"q": "perez"}).context["page"]}

    assert found == {names["perez"].pk} and twin.pk not in found


# --- the login uses the same rule ---------------------------------------------------------------------


@pytest.mark.parametrize("typed", ["obrien", "O'BRIEN", "o brien"])
def test_login_page_lets_obrien_in(client, names, typed):
    response = client.post("/rsvp/", {"code": names["obrien"].code.lower(), "last_name": typed})

    assert response.status_code == 302 and response["Location"] == "/rsvp/answer/"


def test_login_api_lets_perez_garcia_in_without_accents_or_hyphen(client, names):
    response = client.post(
        "/api/v1/auth/guest-login",
        {"code": names["perez"].code, "last_name": "perez garcia"},
        content_type="application/json",
    )

    assert response.status_code == 200
    assert guest_authenticate(code=names["perez"].code, last_name="Garcia") is None

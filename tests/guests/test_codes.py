"""Personal guest codes: format, uniqueness, regeneration."""

import pytest
from django.urls import reverse

from eventsaas.models import AuditLog
from guests import services
from guests.codes import CODE_ALPHABET, CODE_LENGTH, generate_code, normalize_code, normalize_name, stored_code
from guests.models import Guest
from rsvp.services import guest_authenticate
from tenants.models import Role
from tests.factories import GuestFactory

LOOK_ALIKES = set("0O1IL")


def test_alphabet_has_no_look_alike_characters():
    assert not LOOK_ALIKES & set(CODE_ALPHABET)
    assert not LOOK_ALIKES & set(CODE_ALPHABET.lower())
    assert CODE_ALPHABET == CODE_ALPHABET.upper()
    assert len(set(CODE_ALPHABET)) == len(CODE_ALPHABET) >= 30


def test_generated_codes_have_the_documented_format():
    codes = [generate_code() for _ in range(500)]

    assert CODE_LENGTH >= 8
    for code in codes:
        assert len(code) == CODE_LENGTH
        assert set(code) <= set(CODE_ALPHABET), code
        assert not LOOK_ALIKES & set(code)
    assert len(set(codes)) == len(codes)  # 31^8 possibilities: no repeat in 500 draws


def test_normalize_code_accepts_what_people_type():
    assert normalize_code(" abcd efgh ") == "ABCDEFGH"
    assert normalize_code("abcd-efgh") == "ABCDEFGH"
    assert normalize_code("") == ""
    assert normalize_code(None) == ""


def test_normalize_name_ignores_case_accents_and_spaces():
    assert normalize_name("  Müller ") == normalize_name("muller") == "muller"
    assert normalize_name("GARCÍA  López") == "garcia lopez"
    assert normalize_name("Müller") != normalize_name("Miller")


def test_created_guest_gets_a_valid_unique_code(event, owner):
    guests = [
        services.guest_create(event=event, acting_user=owner, first_name=f"G{n}", last_name="X") for n in range(30)
    ]

    codes = [g.code for g in guests]
    assert len(set(codes)) == 30
    for guest in guests:
        stored = Guest.objects.get(pk=guest.pk).code
        assert stored == guest.code
        assert len(stored) >= 8 and set(stored) <= set(CODE_ALPHABET)


def _codes(monkeypatch, *values):
    """Make guests.services.generate_code return `values` in order (the last one forever); returns the calls."""
    calls = []

    def fake():
        code = values[min(len(calls), len(values) - 1)]
        calls.append(code)
        return code

    monkeypatch.setattr(services, "generate_code", fake)
    return calls


def test_create_retries_when_the_code_is_already_taken(event, owner, monkeypatch):
    taken = GuestFactory(event=event).code
    fresh = "FRESH234"
    calls = _codes(monkeypatch, taken, taken, taken, fresh)

    guest = services.guest_create(event=event, acting_user=owner, first_name="New", last_name="Guest")

    assert guest.code == fresh
    assert Guest.objects.get(pk=guest.pk).code == fresh
    assert Guest.objects.filter(code=taken).count() == 1
    assert calls[-1] == fresh and calls.count(taken) >= 2  # at least one save hit the taken code


def test_regenerate_retries_when_the_code_is_already_taken(event, owner, monkeypatch):
    guest = GuestFactory(event=event)
    taken = GuestFactory(event=event).code
    fresh = "NEWCDE78"
    calls = _codes(monkeypatch, taken, fresh)

    services.guest_code_regenerate(guest=guest, acting_user=owner)

    assert calls == [taken, fresh]
    assert guest.code == fresh
    assert Guest.objects.get(pk=guest.pk).code == fresh
    assert Guest.objects.filter(code=taken).count() == 1


def test_code_from_another_tenant_also_counts_as_taken(event, owner, monkeypatch):
    taken = GuestFactory().code  # a guest of some other organization
    _codes(monkeypatch, taken, taken, "UNIQ2345")

    guest = services.guest_create(event=event, acting_user=owner, first_name="New", last_name="Guest")

    assert guest.code == "UNIQ2345"


def test_giving_up_after_too_many_collisions_leaves_the_old_code(event, owner, monkeypatch):
    guest = GuestFactory(event=event)
    old = guest.code
    taken = GuestFactory(event=event).code
    _codes(monkeypatch, taken)

    with pytest.raises(RuntimeError):
        services.guest_code_regenerate(guest=guest, acting_user=owner)

    assert Guest.objects.get(pk=guest.pk).code == old


def test_regeneration_changes_the_code_and_the_old_one_stops_working(household, owner):
    anna, _lisa = household
    old = anna.code

    services.guest_code_regenerate(guest=anna, acting_user=owner)

    stored = Guest.objects.get(pk=anna.pk).code
    assert stored == anna.code != old
    assert len(stored) >= 8 and set(stored) <= set(CODE_ALPHABET)
    assert not Guest.objects.filter(code=old).exists()
    assert guest_authenticate(code=old, last_name="Müller") is None
    assert guest_authenticate(code=stored, last_name="Müller") == anna
    assert AuditLog.objects.filter(action="guest.code_regenerated", object_id=anna.pk).count() == 1


def test_regeneration_only_changes_that_guest(household, owner):
    anna, lisa = household
    lisa_code = lisa.code

    services.guest_code_regenerate(guest=anna, acting_user=owner)

    assert Guest.objects.get(pk=lisa.pk).code == lisa_code


def test_regenerate_button_gives_a_new_code(client, owner, tenant, event, household):
    anna, _ = household
    old = anna.code
    client.force_login(owner)
    url = reverse(
        "guests:regenerate_code", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk}
    )

    response = client.post(url, follow=True)

    new = Guest.objects.get(pk=anna.pk).code
    assert new != old
    page = response.content.decode()
    assert f"New code for Anna Müller: {new}" in page
    assert f'data-testid="guest-code">{new}<' in page
    assert client.post("/rsvp/", {"code": old, "last_name": "Müller"}).status_code == 400


def test_regenerate_needs_post(owner_client, tenant, event, household):
    anna, _ = household
    url = reverse(
        "guests:regenerate_code", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk}
    )

    assert owner_client.get(url).status_code == 405
    assert Guest.objects.get(pk=anna.pk).code == anna.code


def test_viewer_cannot_regenerate_a_code(member_client, tenant, event, household):
    anna, _ = household
    client = member_client(Role.VIEWER)
    url = reverse(
        "guests:regenerate_code", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk}
    )

    assert client.post(url).status_code == 403
    assert Guest.objects.get(pk=anna.pk).code == anna.code


def test_stored_code_keeps_codes_that_fit_and_shortens_longer_ones_the_same_way_every_time():
    assert stored_code(" abcd-efgh ") == "ABCDEFGH"
    assert stored_code("a" * 16) == "A" * 16
    long_token = "3f2b8c1e-9d4a-4b7e-8f00-1a2b3c4d5e6f"
    shortened = stored_code(long_token)
    assert len(shortened) == 16 and set(shortened) <= set(CODE_ALPHABET)
    # Typed in any case, with or without dashes, the long code stands for the same stored one.
    assert stored_code(long_token.upper().replace("-", " ")) == shortened
    assert stored_code(long_token[:-1] + "0") != shortened
    # The stand-in typed as a code is itself: it fits the column.
    assert stored_code(shortened.lower()) == shortened

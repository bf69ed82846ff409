"""Guest login at /rsvp/ with personal code + last name."""

import datetime as dt

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from events.models import Event
from eventsaas.fields import now_as_stored
from guests.models import Guest
from guests.services import guest_code_regenerate
from rsvp.views import SESSION_CODE, SESSION_GUEST
from tests.factories import GuestFactory
from tests.rsvp.household_form import household_post, row

LOGIN_URL = "/rsvp/"
ANSWER_URL = "/rsvp/answer/"
NOT_FOUND_MESSAGE = "We could not find an invitation with this code and last name. Check both and try again."


def _login(client, code, last_name, **extra):
    return client.post(LOGIN_URL, {"code": code, "last_name": last_name}, **extra)


def _non_field_errors(response):
    return list(response.context["form"].non_field_errors())


def test_urls_are_where_the_invitation_says():
    assert reverse("rsvp:login") == LOGIN_URL
    assert reverse("rsvp:answer") == ANSWER_URL


def test_login_with_exact_code_and_last_name_opens_the_rsvp_page(client, anna):
    response = _login(client, anna.code, "Müller")

    assert response.status_code == 302
    assert response["Location"] == ANSWER_URL
    assert client.session[SESSION_GUEST] == str(anna.pk)
    assert client.session[SESSION_CODE] == anna.code
    page = client.get(ANSWER_URL)
    assert page.status_code == 200
    assert "Hello Anna!" in page.content.decode()


@pytest.mark.parametrize(
    "last_name",
    ["  muller ", "MULLER", "Muller", "müller", "MÜLLER", "\tMüller\n", "  mu\u0308ller"],
)
def test_last_name_is_case_accent_and_space_insensitive(client, anna, last_name):
    response = _login(client, anna.code, last_name)

    assert response.status_code == 302, _non_field_errors(response)
    assert client.session[SESSION_GUEST] == str(anna.pk)


def test_code_typed_in_lowercase_with_spaces_matches(client, anna):
    typed = f"  {anna.code[:4].lower()} {anna.code[4:].lower()} "

    response = _login(client, typed, "  muller ")

    assert response.status_code == 302
    assert client.session[SESSION_GUEST] == str(anna.pk)


def test_code_typed_with_dashes_matches(client, anna):
    typed = f"{anna.code[:4]}-{anna.code[4:]}".lower()

    assert _login(client, typed, "Müller").status_code == 302


def test_each_guest_of_a_household_logs_in_with_their_own_code(client, household):
    anna, lisa = household
    assert anna.code != lisa.code

    _login(client, lisa.code, "Müller")

    assert client.session[SESSION_GUEST] == str(lisa.pk)


def test_wrong_code_and_wrong_last_name_look_the_same(client, anna):
    other_code = "ZZZZ9999" if anna.code != "ZZZZ9999" else "YYYY8888"

    wrong_code = _login(client, other_code, "Müller")
    wrong_name = _login(client, anna.code, "Meier")

    assert wrong_code.status_code == wrong_name.status_code == 400
    assert _non_field_errors(wrong_code) == _non_field_errors(wrong_name) == [NOT_FOUND_MESSAGE]
    assert NOT_FOUND_MESSAGE in wrong_code.content.decode()
    assert NOT_FOUND_MESSAGE in wrong_name.content.decode()
    assert SESSION_GUEST not in client.session
    anna.refresh_from_db()
    assert anna.last_login_at is None


def test_another_guests_code_with_my_last_name_does_not_log_me_in(client, event, anna):
    stranger = GuestFactory(event=event, last_name="Schmidt")

    response = _login(client, stranger.code, "Müller")

    assert response.status_code == 400
    assert SESSION_GUEST not in client.session


def test_empty_fields_are_refused(client, anna):
    response = _login(client, "", "")

    assert response.status_code == 400
    assert SESSION_GUEST not in client.session


@override_settings(GUEST_LOGIN_RATE_PER_CLIENT="3/d", GUEST_LOGIN_RATE_PER_CODE="1000/d")
def test_repeated_failures_from_one_client_are_refused_with_429(client, event, anna):
    for attempt in range(3):
        response = _login(client, f"WRNG{attempt}234", "Müller")
        assert response.status_code == 400

    refused = _login(client, "WRNG5234", "Müller")

    assert refused.status_code == 429
    assert int(refused["Retry-After"]) > 0
    assert "Too many attempts" in refused.content.decode()


@override_settings(GUEST_LOGIN_RATE_PER_CLIENT="3/d", GUEST_LOGIN_RATE_PER_CODE="1000/d")
def test_throttled_client_cannot_log_in_even_with_the_right_code(client, anna):
    for _ in range(3):
        _login(client, anna.code, "Wrong")

    response = _login(client, anna.code, "Müller")

    assert response.status_code == 429
    assert SESSION_GUEST not in client.session
    anna.refresh_from_db()
    assert anna.last_login_at is None


@override_settings(GUEST_LOGIN_RATE_PER_CLIENT="3/d", GUEST_LOGIN_RATE_PER_CODE="1000/d")
def test_throttling_one_client_does_not_lock_out_other_clients(client, anna):
    for _ in range(4):
        _login(client, anna.code, "Wrong", REMOTE_ADDR="203.0.113.9")

    response = _login(client, anna.code, "Müller", REMOTE_ADDR="198.51.100.7")

    assert response.status_code == 302


@override_settings(GUEST_LOGIN_RATE_PER_CLIENT="1000/d", GUEST_LOGIN_RATE_PER_CODE="3/d")
def test_guessing_one_code_from_many_addresses_is_refused(client, anna):
    for n in range(3):
        response = _login(client, anna.code, f"Guess{n}", REMOTE_ADDR=f"203.0.113.{n + 1}")
        assert response.status_code == 400

    # The same code, typed differently, from yet another address.
    refused = _login(client, anna.code.lower(), "Müller", REMOTE_ADDR="203.0.113.200")

    assert refused.status_code == 429
    assert refused.has_header("Retry-After")
    assert SESSION_GUEST not in client.session


def test_default_rates_do_not_block_a_few_typos(client, anna):
    for _ in range(3):
        assert _login(client, anna.code, "Mueller-typo").status_code == 400

    assert _login(client, anna.code, "Müller").status_code == 302


def test_successful_login_sets_last_login_at(client, anna, django_capture_on_commit_callbacks):
    before = now_as_stored()

    # Tracking is published after commit; on the embedded default it is written then, in-process.
    with django_capture_on_commit_callbacks(execute=True):
        _login(client, anna.code, "Müller")

    anna.refresh_from_db()
    assert anna.last_login_at is not None
    assert anna.last_login_at >= before


def test_visiting_the_rsvp_page_sets_last_access_at(client, anna, django_capture_on_commit_callbacks):
    _login(client, anna.code, "Müller")
    long_ago = now_as_stored() - dt.timedelta(days=3)
    Guest.objects.filter(pk=anna.pk).update(last_access_at=long_ago, last_login_at=long_ago)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.get(ANSWER_URL)

    assert response.status_code == 200
    anna.refresh_from_db()
    assert anna.last_access_at > long_ago + dt.timedelta(days=2)
    # Only the access time moves; opening the page is not a new login.
    assert anna.last_login_at == long_ago


def test_rsvp_page_without_login_redirects_to_login(client, anna):
    response = client.get(ANSWER_URL)

    assert response.status_code == 302
    assert response["Location"] == LOGIN_URL
    anna.refresh_from_db()
    assert anna.last_access_at is None


def test_logged_in_guest_is_sent_from_login_to_rsvp_page(client, anna):
    _login(client, anna.code, "Müller")

    assert client.get(LOGIN_URL)["Location"] == ANSWER_URL


def test_logout_ends_the_guest_session(client, anna):
    _login(client, anna.code, "Müller")

    client.post(reverse("rsvp:logout"))

    assert client.get(ANSWER_URL)["Location"] == LOGIN_URL


def test_regenerated_code_logs_the_guest_out_at_once(client, owner, anna):
    _login(client, anna.code, "Müller")
    assert client.get(ANSWER_URL).status_code == 200
    old_code = anna.code

    guest_code_regenerate(guest=anna, acting_user=owner)

    assert anna.code != old_code
    response = client.get(ANSWER_URL)
    assert response.status_code == 302
    assert response["Location"] == LOGIN_URL
    # POSTing an answer with the stale session changes nothing either.
    client.post(ANSWER_URL, household_post(row("no"), row("later")))
    assert Guest.objects.get(pk=anna.pk).status == Guest.Status.PENDING


def test_old_code_no_longer_logs_in_after_regeneration(client, owner, anna):
    old_code = anna.code
    guest_code_regenerate(guest=anna, acting_user=owner)

    old = _login(client, old_code, "Müller")

    assert old.status_code == 400
    assert _non_field_errors(old) == [NOT_FOUND_MESSAGE]
    new = _login(client, anna.code, "Müller")
    assert new.status_code == 302


def test_regenerating_from_the_organizer_page_logs_the_guest_out(client, owner, tenant, event, anna):
    _login(client, anna.code, "Müller")
    organizer = Client()
    organizer.force_login(owner)
    url = reverse(
        "guests:regenerate_code", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": anna.pk}
    )

    assert organizer.post(url).status_code == 302

    assert client.get(ANSWER_URL)["Location"] == LOGIN_URL


def test_archived_event_guests_cannot_log_in(client, event, anna):
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    response = _login(client, anna.code, "Müller")

    assert response.status_code == 400
    assert _non_field_errors(response) == [NOT_FOUND_MESSAGE]
    assert SESSION_GUEST not in client.session
    anna.refresh_from_db()
    assert anna.last_login_at is None


def test_archiving_logs_out_a_guest_who_is_already_in(client, event, anna):
    _login(client, anna.code, "Müller")
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    response = client.get(ANSWER_URL)

    assert response.status_code == 302
    assert response["Location"] == LOGIN_URL
    client.post(ANSWER_URL, household_post(row("yes", 1), row("yes", 1)))
    anna.refresh_from_db()
    assert anna.status == Guest.Status.PENDING

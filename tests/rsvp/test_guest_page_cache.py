"""The guest's page kept in each process while nothing it shows has changed (rsvp/guest_page_cache.py).

What must hold: a kept page is the page a fresh render gives (but for the CSRF tokens, each request's
own and valid); every write a guest could see, the deadline passing and a change of language end it at
once; nothing personal to someone else (an organizer's navigation, a message, another guest's page) is
ever kept or served; and a page served from memory is still tracked.
"""

import datetime as dt
import json
import re
import time
import uuid
from unittest import mock

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import MessageEncoder
from django.core.cache import cache, caches
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from events.models import Event
from guests import activity
from guests import services as guest_services
from guests.models import Guest, GuestActivity
from tests.factories import GuestFactory, MembershipFactory, TicketedEventFactory
from tests.rsvp.household_form import household_post, row

pytestmark = pytest.mark.django_db

ANSWER_URL = "/rsvp/answer/"
TOKEN = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


@pytest.fixture(autouse=True)
def kept_pages(settings):
    # Tracking off: its writes would run in the request where on-commit hooks run at once (MongoDB), and
    # count as the page's queries; that a page from memory is still tracked is a test of its own below.
    settings.ACTIVITY_TRACKING = False
    caches["pages"].clear()
    yield
    caches["pages"].clear()


def logged_in(guest: Guest, last_name: str = "Müller", **client_options) -> Client:
    """A guest's phone: logged in with code and last name, CSRF checked as in production."""
    client = Client(enforce_csrf_checks=True, **client_options)
    page = client.get("/rsvp/")
    token = TOKEN.search(page.content.decode()).group(1)
    response = client.post("/rsvp/", {"code": guest.code, "last_name": last_name, "csrfmiddlewaretoken": token})
    assert response.status_code == 302, "guest login failed"
    return client


def page(client: Client, **query):
    """The guest's page and how many queries it cost besides reading the session (a database one in tests)."""
    with CaptureQueriesContext(connection) as queries:
        response = client.get(ANSWER_URL, query)
    response.queries = sum("django_session" not in q["sql"] for q in queries)
    return response


def html(response) -> str:
    return TOKEN.sub('name="csrfmiddlewaretoken" value=""', response.content.decode())


def kept(client: Client):
    """The page once it is kept: the first view renders and keeps it (the second on a process's first visit)."""
    page(client)
    page(client)
    served = page(client)
    assert served.queries == 0, "the page was not served from memory"
    return served


def test_the_page_is_served_from_memory_as_it_was_rendered_with_the_requests_own_token(anna):
    client = logged_in(anna)

    rendered = page(client)
    served = kept(client)

    assert rendered.queries > 0 and served.status_code == 200
    assert html(served) == html(rendered)
    assert "Anna" in html(served)
    tokens = TOKEN.findall(served.content.decode())
    assert len(tokens) >= 2 and len(set(tokens)) == 1  # every form of the page has the request's token
    per_request = {"X-Request-ID"}
    assert {k: v for k, v in served.headers.items() if k not in per_request} == {
        k: v for k, v in rendered.headers.items() if k not in per_request
    }
    assert served.cookies.keys() == rendered.cookies.keys() == {"csrftoken"}
    assert served["Cache-Control"] == "private"  # one guest's page: no shared cache keeps it


def test_the_kept_pages_token_sends_the_answer(anna, lisa):
    client = logged_in(anna)
    served = kept(client)
    token = TOKEN.search(served.content.decode()).group(1)

    response = client.post(
        ANSWER_URL, household_post(row("yes", 1), row("yes", 1), csrfmiddlewaretoken=token, confirmed=True)
    )

    assert response.status_code == 302
    assert Guest.objects.get(pk=lisa.pk).status == Guest.Status.COMING
    # The answer changed the event's version: the next page shows it (and the message that it was saved).
    after = page(client)
    assert after.queries > 0
    assert "Thank you! Your answer is saved." in html(after)
    assert 'data-testid="current-answer"' in html(after)
    assert "Thank you!" not in html(kept(client))  # a message shows once, and its page is never kept


def test_a_page_served_from_memory_is_tracked_as_a_page_view(anna, settings):
    client = logged_in(anna)
    kept(client)
    settings.ACTIVITY_TRACKING = True

    with mock.patch.object(activity, "_deliver") as deliver, mock.patch("django.db.transaction.on_commit") as later:
        later.side_effect = lambda callback, *args, **kwargs: callback()
        assert page(client).queries == 0

    tracked = deliver.call_args.args[0]
    assert (tracked.guest_id, tracked.event_id, tracked.tenant_id) == (anna.pk, anna.event_id, anna.tenant_id)
    assert tracked.kind == GuestActivity.Kind.PAGE_VIEW


@pytest.mark.parametrize(
    "write",
    [
        pytest.param(lambda anna, lisa: Event.objects.filter(pk=anna.event_id).update(name="Summer ball"), id="event"),
        pytest.param(lambda anna, lisa: Guest.objects.filter(pk=lisa.pk).update(first_name="Liz"), id="member"),
        pytest.param(lambda anna, lisa: GuestFactory(event=anna.event, group_id=anna.group_id), id="new-member"),
        pytest.param(lambda anna, lisa: guest_services.guest_group_leave(guest=lisa, acting_user=None), id="regrouped"),
        pytest.param(lambda anna, lisa: Guest.objects.get(pk=lisa.pk).delete(), id="member-deleted"),
    ],
)
def test_every_write_the_guest_could_see_ends_the_kept_page(anna, lisa, write):
    client = logged_in(anna)
    before = html(kept(client))

    write(anna, lisa)
    after = page(client)

    assert after.queries > 0
    assert html(after) != before


def test_a_regenerated_code_sends_the_guest_to_log_in_at_once(anna, owner):
    client = logged_in(anna)
    kept(client)

    guest_services.guest_code_regenerate(guest=anna, acting_user=owner)

    assert page(client)["Location"] == "/rsvp/"


def test_an_archived_event_sends_the_guest_to_log_in(anna):
    client = logged_in(anna)
    kept(client)

    Event.objects.filter(pk=anna.event_id).update(status=Event.Status.ARCHIVED)

    assert page(client)["Location"] == "/rsvp/"


def test_the_deadline_passing_ends_the_kept_page_without_any_write(anna, event):
    deadline = timezone.now() + dt.timedelta(hours=1)
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=deadline)
    client = logged_in(anna)
    assert 'data-testid="rsvp-closed"' not in html(kept(client))

    later = deadline + dt.timedelta(seconds=1)
    with (
        mock.patch("rsvp.guest_page_cache.now", return_value=later),
        mock.patch("events.models.now", return_value=later),
    ):
        closed = page(client)

    assert 'data-testid="rsvp-closed"' in html(closed)
    assert "Will you be there?" not in html(closed)


def test_a_closed_events_page_is_rendered_every_time(anna, event):
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(days=1))
    client = logged_in(anna)
    page(client)

    assert page(client).queries > 0  # it shows the latest change request, which no version follows


def test_the_page_follows_the_language_switch(anna):
    client = logged_in(anna)
    assert "Will you be there?" in html(kept(client))

    client.cookies["django_language"] = "es"
    spanish = page(client)

    assert spanish.queries > 0
    assert "Will you be there?" not in html(spanish)
    assert html(kept(client)) == html(spanish)


def test_another_guest_never_gets_the_page_of_the_first(anna, lisa):
    anna_phone = logged_in(anna)
    kept(anna_phone)

    lisa_page = page(logged_in(lisa))

    assert lisa_page.queries > 0
    assert "Hello Lisa!" in html(lisa_page)


def test_an_organizer_logged_in_on_the_same_browser_gets_the_page_rendered(anna, tenant):
    client = logged_in(anna)
    kept(client)
    organizer = MembershipFactory(tenant=tenant).user
    organizer.email_verified_at = None
    organizer.save()
    client.force_login(organizer)

    with_account = page(client)

    assert with_account.queries > 0
    assert organizer.email in html(with_account)  # "confirm your email address": theirs, for no other request


def test_a_page_asked_for_with_a_query_string_is_rendered(anna):
    client = logged_in(anna)
    kept(client)

    assert page(client, utm_source="newsletter").queries > 0


def test_a_ticket_holders_page_is_rendered_every_time(tenant):
    holder = GuestFactory(event=TicketedEventFactory(tenant=tenant), last_name="Berg", holder_key="berg@example.org")
    client = logged_in(holder, "Berg")
    page(client)
    page(client)

    assert page(client).queries > 0  # their tickets come from billing, whose rows follow no version


def test_nothing_is_served_from_memory_while_the_version_cannot_be_read(anna):
    client = logged_in(anna)
    kept(client)

    with mock.patch.object(cache, "get_or_set", side_effect=ConnectionError("redis down")):
        assert page(client).queries > 0


def test_off_means_rendered_every_time(anna, settings):
    settings.GUEST_API_CACHE_SECONDS = 0
    client = logged_in(anna)
    page(client)
    page(client)

    assert page(client).queries > 0


def test_a_page_is_kept_for_the_configured_seconds_at_most(anna, settings):
    settings.GUEST_API_CACHE_SECONDS = 30
    client = logged_in(anna)
    kept(client)

    with mock.patch("time.time", return_value=time.time() + 31):  # the local-memory cache's clock
        assert page(client).queries > 0


def test_a_session_that_names_no_guest_is_sent_to_log_in(client):
    session = client.session
    session["rsvp_guest_id"], session["rsvp_guest_code"] = str(uuid.uuid4()), "NOPE"
    session.save()

    assert client.get(ANSWER_URL)["Location"] == "/rsvp/"


def test_a_message_kept_in_the_session_is_shown_on_a_rendered_page(anna, settings):
    settings.MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"
    client = logged_in(anna)
    kept(client)
    session = client.session  # a message left by a page that changed nothing the guest sees
    session["_messages"] = json.dumps([Message(constants.INFO, "See you there!")], cls=MessageEncoder)
    session.save()

    assert "See you there!" in html(page(client))
    assert "See you there!" not in html(page(client))  # shown once

"""Published ticketed events kept in process memory for the public (events/on_sale_cache.py).

What must hold: a kept event is exactly what the database read gives, a change to the event is seen by the
very next request, a change to its organization within SHOP_PAGE_CACHE_SECONDS, ids nobody knows make nothing
in the cache, and no caller's change to its copy reaches another request.
"""

import time
import uuid

import pytest
from django.core.cache import cache
from django.http import Http404
from hypothesis import strategies as st
from hypothesis.extra.django import TestCase
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from events import on_sale_cache, selectors
from events.guest_view_versions import _key
from events.models import Event
from tenants.models import Tenant
from tests.factories import TicketedEventFactory, TicketTypeFactory
from tests.support.backends import ON_MONGODB
from tests.support.machines import machine_settings

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def kept(settings):
    settings.SHOP_PAGE_CACHE_SECONDS = 60
    on_sale_cache.kept_events_forget()
    yield
    on_sale_cache.kept_events_forget()


@pytest.fixture
def concert(tenant):
    return TicketedEventFactory(tenant=tenant)


def on_sale(event_id):
    return selectors.event_on_sale(event_id=event_id)


def test_an_event_is_kept_from_its_first_read(concert, django_assert_num_queries):
    with django_assert_num_queries(1):
        on_sale(concert.pk)
    with django_assert_num_queries(0):
        kept = on_sale(concert.pk)
    assert (kept.pk, kept.name, kept.tenant_id, kept.tenant.name) == (
        concert.pk, concert.name, concert.tenant_id, concert.tenant.name,
    )  # fmt: skip


def test_a_version_made_for_a_read_keeps_from_the_next_one(concert, django_assert_num_queries):
    cache.delete(_key(concert.pk))  # evicted, or never made: the read makes it, after the row
    with django_assert_num_queries(1):
        on_sale(concert.pk)
    with django_assert_num_queries(1):
        on_sale(concert.pk)
    with django_assert_num_queries(0):
        on_sale(concert.pk)


@pytest.mark.parametrize(
    "change",
    [
        {"status": Event.Status.DRAFT},
        {"status": Event.Status.ARCHIVED},
        {"kind": Event.Kind.INVITE_ONLY},
    ],
)
def test_an_event_taken_off_sale_is_a_404_at_the_next_request(concert, change):
    for _ in range(3):
        on_sale(concert.pk)
    Event.objects.filter(pk=concert.pk).update(**change)

    with pytest.raises(Http404):
        on_sale(concert.pk)


def test_an_edit_saved_on_the_event_is_seen_at_the_next_request(concert):
    for _ in range(3):
        on_sale(concert.pk)
    concert.attendee_names_required = True
    concert.save()

    assert on_sale(concert.pk).attendee_names_required is True


def test_another_process_writing_the_event_changes_the_version_this_one_reads(concert, django_assert_num_queries):
    for _ in range(3):
        on_sale(concert.pk)
    cache.set(_key(concert.pk), "changed elsewhere")  # what another process's write leaves in the shared cache

    with django_assert_num_queries(1):
        on_sale(concert.pk)


def test_an_organization_change_reaches_the_public_within_the_seconds(concert, settings, monkeypatch):
    for _ in range(3):
        on_sale(concert.pk)
    Tenant.objects.filter(pk=concert.tenant_id).update(platform_fee_basis_points=750)
    assert on_sale(concert.pk).tenant.platform_fee_basis_points != 750  # the kept one, for now

    later = time.monotonic() + settings.SHOP_PAGE_CACHE_SECONDS + 1
    monkeypatch.setattr(time, "monotonic", lambda: later)
    assert on_sale(concert.pk).tenant.platform_fee_basis_points == 750


def test_unknown_ids_are_404s_that_make_no_key(concert):
    keys_before = set(cache._cache)  # LocMemCache's keys: the suite's cache
    for _ in range(20):
        with pytest.raises(Http404):
            on_sale(uuid.uuid4())

    assert set(cache._cache) == keys_before


def test_a_callers_change_to_its_event_stays_its_own(concert):
    for _ in range(3):
        on_sale(concert.pk)
    mine = on_sale(concert.pk)
    mine.name = "Changed by one request"

    assert on_sale(concert.pk).name == concert.name


def test_off_without_versions_or_with_zero_seconds(concert, settings, django_assert_num_queries):
    settings.SHOP_PAGE_CACHE_SECONDS = 0
    for _ in range(3):
        with django_assert_num_queries(1):
            on_sale(concert.pk)


def test_a_rushs_late_buyer_costs_one_query(client, concert, django_assert_num_queries):
    sold_out = TicketTypeFactory(event=concert, price=2500, capacity=1, sold=1)
    body = {"items": [{"ticket_type": str(sold_out.pk), "quantity": 1}], "buyer": {"name": "Ada", "email": "a@x.org"}}
    url = f"/api/v1/events/{concert.pk}/checkout"
    assert client.post(url, body, content_type="application/json").status_code == 409

    with django_assert_num_queries(1):  # the ticket types: the event is kept, the account is not needed
        assert client.post(url, body, content_type="application/json").status_code == 409


MACHINE_SETTINGS = machine_settings(ci_examples=6 if ON_MONGODB else 25, steps=15)


class OnSaleMachine(RuleBasedStateMachine):
    """Whatever happens to the event, in any order, the public gets what the database says."""

    def __init__(self):
        super().__init__()
        on_sale_cache.kept_events_forget()
        self.event = TicketedEventFactory()

    @rule(status=st.sampled_from(list(Event.Status)))
    def status_changes(self, status):
        Event.objects.filter(pk=self.event.pk).update(status=status)

    @rule(kind=st.sampled_from(list(Event.Kind)))
    def kind_changes_through_save(self, kind):
        event = Event.objects.get(pk=self.event.pk)
        event.kind = kind
        event.save()

    @rule(name=st.sampled_from(["Harbour", "Garden", "Hall"]))
    def renamed(self, name):
        Event.objects.filter(pk=self.event.pk).update(name=name)

    @rule()
    def read(self):
        self.what_the_public_gets_is_the_database()

    @invariant()
    def what_the_public_gets_is_the_database(self):
        def seen(read):
            try:
                event = read(self.event.pk)
            except Http404:
                return None
            return event.status, event.kind, event.name

        assert seen(on_sale) == seen(selectors._event_on_sale_read)


class OnSaleInvariantsTest(TestCase):
    def test_the_public_always_gets_what_the_database_says(self):
        with self.settings(SHOP_PAGE_CACHE_SECONDS=60):
            run_state_machine_as_test(OnSaleMachine, settings=MACHINE_SETTINGS)


class UnversionedControlTest(TestCase):
    def test_events_kept_without_their_version_are_caught(self):
        """The machine can fail: keep events under a version no write changes, and it finds the stale one."""
        with self.settings(SHOP_PAGE_CACHE_SECONDS=60):
            original = on_sale_cache.guest_view_version_if_set
            on_sale_cache.guest_view_version_if_set = lambda event_id: "never changes"
            try:
                with self.assertRaises(AssertionError):
                    run_state_machine_as_test(OnSaleMachine, settings=MACHINE_SETTINGS)
            finally:
                on_sale_cache.guest_view_version_if_set = original

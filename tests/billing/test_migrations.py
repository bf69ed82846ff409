"""billing.0009: ticket types that already have a waitlist get events' mark (events.0005): seats stay held back.
billing.0010: offers made before it keep their emailed link as the link that buys the held seat."""

import datetime as dt

import pytest
from django.utils import timezone

from tests.support.migrations import latest_migrations, migrate_to

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def before_the_mark():
    yield migrate_to([("billing", "0008_waitlist_entry"), ("events", "0005_ticket_type_waitlist_started_at")])
    migrate_to(latest_migrations())


def _old_concert(apps):
    """A ticketed event stored with the models of `apps` (the migration state under test), and those models."""
    TicketType = apps.get_model("events", "TicketType")
    WaitlistEntry = apps.get_model("billing", "WaitlistEntry")
    tenant = apps.get_model("tenants", "Tenant").objects.create(name="Old", slug="old")
    event = apps.get_model("events", "Event").objects.create(
        tenant=tenant, name="Old concert", slug="old-concert", kind="ticketed", starts_at=timezone.now()
    )
    return tenant, event, TicketType, WaitlistEntry


def test_types_with_waitlist_entries_are_marked_from_their_first_entry(before_the_mark):
    tenant, event, TicketType, WaitlistEntry = _old_concert(before_the_mark)
    waited, nobody = (
        TicketType.objects.create(tenant=tenant, event=event, name=name, price=1000, capacity=2)
        for name in ("Front row", "Standing")
    )
    first = timezone.now().replace(microsecond=0) - dt.timedelta(days=2)
    for n, status in enumerate(["left", "waiting"]):  # the earliest entry has left since: still the start
        WaitlistEntry.objects.create(
            tenant=tenant, event=event, ticket_type=waited, email=f"w{n}@example.com", status=status,
            created_at=first + dt.timedelta(hours=n),
        )  # fmt: skip

    migrate_to(latest_migrations())

    from events.models import TicketType as CurrentTicketType

    assert CurrentTicketType.objects.get(pk=waited.pk).waitlist_started_at == first
    assert CurrentTicketType.objects.get(pk=nobody.pk).waitlist_started_at is None


@pytest.fixture
def before_offer_tokens():
    yield migrate_to([("billing", "0009_mark_ticket_types_with_a_waitlist")])
    migrate_to(latest_migrations())


def test_an_offer_made_before_offer_tokens_keeps_its_emailed_link(before_offer_tokens):
    tenant, event, TicketType, WaitlistEntry = _old_concert(before_offer_tokens)
    seat = TicketType.objects.create(tenant=tenant, event=event, name="Front row", price=1000, capacity=2)
    offered, waiting = (
        WaitlistEntry.objects.create(tenant=tenant, event=event, ticket_type=seat, email=f"{s}@example.com", status=s)
        for s in ("offered", "waiting")
    )

    migrate_to(latest_migrations())

    from billing.models import WaitlistEntry as CurrentWaitlistEntry

    assert CurrentWaitlistEntry.objects.get(pk=offered.pk).offer_token == offered.token  # the emailed link buys
    assert CurrentWaitlistEntry.objects.get(pk=waiting.pk).offer_token == ""

"""billing.0009: ticket types that already have a waitlist get events' mark (events.0005): seats stay held back."""

import datetime as dt

import pytest
from django.utils import timezone

from tests.support.migrations import latest_migrations, migrate_to

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def before_the_mark():
    yield migrate_to([("billing", "0008_waitlist_entry"), ("events", "0005_ticket_type_waitlist_started_at")])
    migrate_to(latest_migrations())


def test_types_with_waitlist_entries_are_marked_from_their_first_entry(before_the_mark):
    apps = before_the_mark
    Tenant = apps.get_model("tenants", "Tenant")
    Event = apps.get_model("events", "Event")
    TicketType = apps.get_model("events", "TicketType")
    WaitlistEntry = apps.get_model("billing", "WaitlistEntry")
    tenant = Tenant.objects.create(name="Old", slug="old")
    event = Event.objects.create(
        tenant=tenant, name="Old concert", slug="old-concert", kind="ticketed", starts_at=timezone.now()
    )
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

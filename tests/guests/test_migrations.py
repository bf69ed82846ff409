"""guests.0005: existing guests get their search key, and the old rule's answers are reconciled.

The rows are written with the historical models before the data migration,
as the old rule left them (the answerer carried the household's number, every
other coming member 0), then the real migrations run forward.
"""

import uuid

import pytest
from django.utils import timezone

from tests.support.migrations import latest_migrations, migrate_to

# billing.0007 and later point at guests (a ticket's guest), so billing steps back too.
BEFORE = [("guests", "0004_household_answers"), ("rsvp", None), ("billing", "0006_connectedaccount_deauthorized_at")]

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def old_rows():
    """Migrate back to before the data migration and write what the old rule wrote; migrate forward after."""
    apps = migrate_to(BEFORE)
    yield apps
    migrate_to(latest_migrations())


def test_legacy_households_are_reconciled_and_keyed(old_rows):
    apps = old_rows
    Tenant = apps.get_model("tenants", "Tenant")
    Event = apps.get_model("events", "Event")
    Guest = apps.get_model("guests", "Guest")
    tenant = Tenant.objects.create(name="Old", slug="old")
    event = Event.objects.create(tenant=tenant, name="Old party", slug="old-party", starts_at=timezone.now())
    answered_at = timezone.now()

    def guest(first, last, group=None, **fields):
        return Guest.objects.create(
            tenant=tenant, event=event, first_name=first, last_name=last, code=uuid.uuid4().hex[:8].upper(),
            group_id=group, **fields,
        )  # fmt: skip

    # "2 of us" for a household of 3 with Tom named absent: Anna carried 2, Lisa 0, Tom declined.
    muller = uuid.uuid4()
    anna = guest("Anna", "Müller", muller, status="coming", num_guests=2, rsvp_at=answered_at)
    lisa = guest("Lisa", "Müller", muller, status="coming", num_guests=0, rsvp_at=answered_at)
    tom = guest("Tom", "Müller", muller, status="declined", num_guests=0, rsvp_at=answered_at)
    # "Confirm: 1 person" with nobody named in a household of 3 (the defect): all coming, total 1.
    weber = uuid.uuid4()
    olivia = guest("Olivia", "Weber", weber, status="coming", num_guests=1, rsvp_at=answered_at)
    jonas = guest("Jonas", "Weber", weber, status="coming", num_guests=0, rsvp_at=answered_at)
    noah = guest("Noah", "Weber", weber, status="coming", num_guests=0, rsvp_at=answered_at)
    # Ida (with a baby) answered 4 for herself and Leo, whose own decline came later; a stale number.
    ida = guest("Ida", "O'Brien", status="coming", num_guests=3, expected_guests=2, rsvp_at=answered_at)
    stale = guest("Ana", "Pérez", status="declined", num_guests=4, rsvp_at=answered_at)
    pending = guest("Zoë", "Ñúñez")

    migrate_to(latest_migrations())

    from guests.models import Guest as CurrentGuest

    rows = {g.pk: g for g in CurrentGuest.objects.all()}

    def answer(g):
        row = rows[g.pk]
        return row.status, row.num_guests, row.answered_by_kind, row.answered_by_guest_id

    assert answer(anna) == ("coming", 1, "self", anna.pk)
    assert answer(lisa) == ("coming", 1, "household", anna.pk)
    assert answer(tom) == ("declined", 0, "household", anna.pk)
    assert [answer(g)[:2] for g in (olivia, jonas, noah)] == [("coming", 1)] * 3  # each at least one person
    assert answer(ida) == ("coming", 3, "self", ida.pk)
    assert answer(stale) == ("declined", 0, "self", stale.pk)
    assert answer(pending) == ("pending", 0, "", None)
    assert rows[ida.pk].search_key == f"ida obrien idaobrien {ida.code.lower()}"
    assert rows[stale.pk].search_key.startswith("ana perez anaperez ")
    assert rows[pending.pk].search_key.startswith("zoe nunez zoenunez ")
    for row in rows.values():
        row.full_clean(exclude=["code"])  # coming <=> num_guests >= 1 holds for every row

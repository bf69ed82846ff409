"""rsvp.0002: guests who asked for a change before Guest.change_requested_at existed get it (their latest request's
time), so their page and API still find their request; guests who never asked keep null and skip the lookup."""

import datetime as dt
import uuid

import pytest
from django.utils import timezone

from guests.models import Guest
from rsvp import selectors
from tests.support.migrations import latest_migrations, migrate_to

pytestmark = pytest.mark.django_db(transaction=True)

BEFORE = [("guests", "0008_guest_holder_key"), ("rsvp", "0001_change_requests")]


def test_guests_who_asked_before_the_flag_existed_get_it_from_their_latest_request():
    apps = migrate_to(BEFORE)
    try:
        Tenant = apps.get_model("tenants", "Tenant")
        Event = apps.get_model("events", "Event")
        OldGuest = apps.get_model("guests", "Guest")
        OldChangeRequest = apps.get_model("rsvp", "ChangeRequest")
        tenant = Tenant.objects.create(name="Old", slug="old")
        event = Event.objects.create(tenant=tenant, name="Old party", slug="old-party", starts_at=timezone.now())

        def guest(name):
            return OldGuest.objects.create(
                tenant=tenant, event=event, first_name=name, last_name="X", code=uuid.uuid4().hex[:8].upper()
            )

        asked_twice, asked_once, never = guest("Anna"), guest("Ben"), guest("Cleo")
        first = (timezone.now() - dt.timedelta(days=2)).replace(microsecond=0)  # whole ms: as MongoDB keeps it
        asked = [(asked_twice, first, "declined"), (asked_twice, first + dt.timedelta(days=1), "pending")]
        for who, at, status in [*asked, (asked_once, first, "approved")]:
            OldChangeRequest.objects.create(
                tenant=tenant, event=event, guest=who, proposed={"attending": True}, created_at=at, status=status
            )
    finally:
        migrate_to(latest_migrations())

    flags = dict(Guest.objects.filter(event_id=event.pk).values_list("first_name", "change_requested_at"))
    assert flags == {"Anna": first + dt.timedelta(days=1), "Ben": first, "Cleo": None}
    anna = Guest.objects.get(pk=asked_twice.pk)
    assert selectors.change_request_latest(guest=anna).status == "pending"
    assert selectors.change_request_latest(guest=Guest.objects.get(pk=never.pk)) is None

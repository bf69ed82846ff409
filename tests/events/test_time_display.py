"""Times shown to organizers and guests: in the event's zone, with its label, both dates past midnight."""

import datetime as dt
import html

import pytest
from django.utils import timezone, translation

from billing.models import Ticket
from events.forms import EventForm
from events.models import Event
from eventsaas.dates import canonical_time_zones, format_event_datetime, format_event_range
from guests.models import Guest
from rsvp.models import ChangeRequest
from tests.api.sweep_fixtures import paid_order
from tests.factories import EventFactory, GuestFactory, TicketedEventFactory, TicketTypeFactory

UTC = dt.UTC
# 17:30 UTC on a December Saturday: 18:30 in Madrid (CET, UTC+1).
WINTER_MOMENT = dt.datetime(2026, 12, 5, 17, 30, tzinfo=UTC)
WINTER_TEXT = "Sat 5 Dec 2026, 18:30 CET"


# --- the helpers ---------------------------------------------------------------------------------


def test_a_range_that_crosses_midnight_shows_both_dates():
    text = format_event_range(
        dt.datetime(2026, 12, 5, 21, 0, tzinfo=UTC), dt.datetime(2026, 12, 6, 1, 0, tzinfo=UTC), "Europe/Madrid"
    )
    assert text == "Sat 5 Dec 2026, 22:00 – Sun 6 Dec, 02:00 CET"


def test_a_range_within_one_day_names_the_date_once():
    text = format_event_range(
        dt.datetime(2026, 12, 5, 17, 0, tzinfo=UTC), dt.datetime(2026, 12, 5, 22, 0, tzinfo=UTC), "Europe/Madrid"
    )
    assert text == "Sat 5 Dec 2026, 18:00 – 23:00 CET"


def test_midnight_in_utc_is_not_midnight_at_the_event():
    """21:00-23:30 UTC is 06:00-08:30 the next day in Tokyo: one date, the local one."""
    text = format_event_range(
        dt.datetime(2026, 12, 5, 21, 0, tzinfo=UTC), dt.datetime(2026, 12, 5, 23, 30, tzinfo=UTC), "Asia/Tokyo"
    )
    assert text == "Sun 6 Dec 2026, 06:00 – 08:30 JST"


def test_a_range_across_new_year_names_both_years():
    text = format_event_range(
        dt.datetime(2026, 12, 31, 21, 0, tzinfo=UTC), dt.datetime(2027, 1, 1, 2, 0, tzinfo=UTC), "Europe/Madrid"
    )
    assert text == "Thu 31 Dec 2026, 22:00 – Fri 1 Jan 2027, 03:00 CET"


def test_a_range_across_the_autumn_clock_change_labels_each_end():
    """Madrid goes from CEST to CET at 03:00 on 25 Oct 2026: 22:00 CEST to 02:00 CET is five hours."""
    text = format_event_range(
        dt.datetime(2026, 10, 24, 20, 0, tzinfo=UTC), dt.datetime(2026, 10, 25, 1, 0, tzinfo=UTC), "Europe/Madrid"
    )
    assert text == "Sat 24 Oct 2026, 22:00 CEST – Sun 25 Oct, 02:00 CET"


def test_the_repeated_hour_of_the_autumn_change_shows_which_one():
    """01:30 UTC and 00:30 UTC on 25 Oct are both 02:30 in Madrid; the label tells them apart."""
    first = format_event_datetime(dt.datetime(2026, 10, 25, 0, 30, tzinfo=UTC), "Europe/Madrid")
    second = format_event_datetime(dt.datetime(2026, 10, 25, 1, 30, tzinfo=UTC), "Europe/Madrid")
    assert (first, second) == ("Sun 25 Oct 2026, 02:30 CEST", "Sun 25 Oct 2026, 02:30 CET")


def test_the_spring_clock_change_skips_the_missing_hour():
    text = format_event_range(
        dt.datetime(2027, 3, 28, 0, 30, tzinfo=UTC), dt.datetime(2027, 3, 28, 1, 30, tzinfo=UTC), "Europe/Madrid"
    )
    assert text == "Sun 28 Mar 2027, 01:30 CET – 03:30 CEST"


def test_a_zone_with_only_a_numeric_abbreviation_shows_its_name():
    assert format_event_datetime(WINTER_MOMENT, "Europe/Istanbul") == "Sat 5 Dec 2026, 20:30 (Europe/Istanbul)"


def test_names_follow_the_active_language():
    with translation.override("es"):
        assert format_event_datetime(WINTER_MOMENT, "Europe/Madrid").startswith("sáb 5")


def test_spanish_writes_the_month_in_lower_case_as_in_a_sentence():
    """Django capitalises "M" ("Dic"); Spanish writes "5 dic 2026", English keeps "5 Dec 2026"."""
    with translation.override("es"):
        assert format_event_datetime(WINTER_MOMENT, "Europe/Madrid") == "sáb 5 dic 2026, 18:30 CET"
    with translation.override("en"):
        assert format_event_datetime(WINTER_MOMENT, "Europe/Madrid") == "Sat 5 Dec 2026, 18:30 CET"


# --- the picker ----------------------------------------------------------------------------------


def _offered(form) -> list[str]:
    values = []
    for value, label in form.fields["timezone"].choices:
        values.extend(name for name, _ in label) if isinstance(label, list | tuple) else values.append(value)
    return values


def test_the_picker_offers_canonical_zones_only_and_utc_first():
    offered = _offered(EventForm())
    assert offered[0] == "UTC"
    assert "Europe/Madrid" in offered and "America/Los_Angeles" in offered and "Asia/Kolkata" in offered
    for alias in ("US/Pacific", "Asia/Calcutta", "GB", "Etc/GMT+5", "Europe/Kiev"):
        assert alias not in offered
    assert set(offered) == set(canonical_time_zones())
    assert 300 < len(offered) < 500  # not the ~600 names of every alias


def test_the_picker_groups_zones_by_region():
    groups = [label for _, label in EventForm().fields["timezone"].choices[1:]]
    regions = [value for value, _ in EventForm().fields["timezone"].choices[1:]]
    assert "Europe" in regions and "America" in regions
    assert all(isinstance(group, list) for group in groups)


@pytest.mark.django_db
def test_a_new_event_cannot_choose_an_alias(tenant):
    form = EventForm(data={"name": "x", "status": "draft", "starts_at": "2031-06-01T18:00", "timezone": "US/Pacific"})
    assert not form.is_valid()
    assert "timezone" in form.errors


@pytest.mark.django_db
def test_an_existing_event_with_an_alias_keeps_validating(tenant):
    event = EventFactory(tenant=tenant, timezone="US/Pacific")
    form = EventForm(
        instance=event,
        data={
            "name": "x",
            "status": "draft",
            "starts_at": "2031-06-01T18:00",
            "timezone": "US/Pacific",
            "language": "en",
        },
    )
    assert "US/Pacific" in _offered(form)
    assert "timezone" not in form.errors


# --- the pages -----------------------------------------------------------------------------------


def _text(response) -> str:
    assert response.status_code == 200
    return html.unescape(response.content.decode())


@pytest.fixture
def madrid_event(tenant):
    return EventFactory(
        tenant=tenant,
        timezone="Europe/Madrid",
        starts_at=dt.datetime(2027, 1, 9, 21, 0, tzinfo=UTC),
        ends_at=dt.datetime(2027, 1, 10, 1, 0, tzinfo=UTC),
        rsvp_deadline=WINTER_MOMENT,
    )


def _event_url(event, suffix=""):
    return f"/o/{event.tenant.slug}/events/{event.pk}/{suffix}"


@pytest.mark.django_db
def test_activity_page_says_its_zone_and_labels_every_time(owner_client, madrid_event):
    guest = GuestFactory(event=madrid_event)
    Guest.objects.filter(pk=guest.pk).update(last_login_at=WINTER_MOMENT, last_access_at=WINTER_MOMENT)

    page = _text(owner_client.get(_event_url(madrid_event, "activity/")))

    assert "Times are shown in the event's time zone, Europe/Madrid" in page
    assert WINTER_TEXT in page
    assert "17:30" not in page  # not the stored UTC


@pytest.mark.django_db
def test_dashboard_shows_the_range_past_midnight_and_the_labelled_deadline(owner_client, madrid_event):
    Event.objects.filter(pk=madrid_event.pk).update(status=Event.Status.PUBLISHED, rsvp_deadline=None)
    page = _text(owner_client.get(_event_url(madrid_event)))
    assert "Sat 9 Jan 2027, 22:00 – Sun 10 Jan, 02:00 CET" in page


@pytest.mark.django_db
def test_change_requests_show_labelled_times(owner_client, madrid_event):
    guest = GuestFactory(event=madrid_event)
    change = ChangeRequest.objects.create(
        tenant_id=madrid_event.tenant_id, event_id=madrid_event.pk, guest=guest, proposed={"attending": False}
    )
    ChangeRequest.objects.filter(pk=change.pk).update(created_at=WINTER_MOMENT)

    assert WINTER_TEXT in _text(owner_client.get(_event_url(madrid_event, "change-requests/")))
    assert WINTER_TEXT in _text(owner_client.get(_event_url(madrid_event, f"change-requests/{change.pk}/")))


@pytest.mark.django_db
def test_orders_and_check_ins_show_labelled_times(owner_client, tenant):
    concert = TicketedEventFactory(tenant=tenant, timezone="Europe/Madrid")
    seat = TicketTypeFactory(event=concert, price=1000, capacity=5)
    order = paid_order(event=concert, ticket_type=seat, quantity=1, buyer_name="Pat", buyer_email="pat@example.com")
    type(order).objects.filter(pk=order.pk).update(created_at=WINTER_MOMENT)
    Ticket.objects.filter(order=order).update(checked_in_at=WINTER_MOMENT + dt.timedelta(hours=1))

    assert WINTER_TEXT in _text(owner_client.get(_event_url(concert, "orders/")))
    detail = _text(owner_client.get(_event_url(concert, f"orders/{order.pk}/")))
    assert WINTER_TEXT in detail and "Sat 5 Dec 2026, 19:30 CET" in detail


@pytest.mark.django_db
def test_the_guest_page_shows_the_range_and_the_labelled_deadline(client, madrid_event):
    Event.objects.filter(pk=madrid_event.pk).update(
        status=Event.Status.PUBLISHED, rsvp_deadline=timezone.now() + dt.timedelta(days=3)
    )
    madrid_event.refresh_from_db()
    guest = GuestFactory(event=madrid_event, last_name="Solo")
    assert client.post("/rsvp/", {"code": guest.code, "last_name": "Solo"}).status_code == 302

    page = _text(client.get("/rsvp/answer/"))

    assert "Sat 9 Jan 2027, 22:00 – Sun 10 Jan, 02:00 CET" in page
    assert format_event_datetime(madrid_event.rsvp_deadline, "Europe/Madrid") in page

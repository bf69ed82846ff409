"""The organizer's numbers: dashboard, events list, dietary report, activity."""

import datetime as dt
import re
import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from guests.models import Guest
from guests.selectors import dietary_report, event_headline_numbers_by_event, event_stats
from rsvp.services import HouseholdAnswer, rsvp_submit
from tests.factories import EventFactory, GuestFactory
from tests.support.backends import NO_CHECK_CONSTRAINTS

COMING, DECLINED, PENDING = Guest.Status.COMING, Guest.Status.DECLINED, Guest.Status.PENDING


def _url(name, tenant, event=None, **kwargs):
    if event is not None:
        kwargs["event_id"] = event.pk
    return reverse(name, kwargs={"tenant_slug": tenant.slug, **kwargs})


@pytest.fixture
def mixed(tenant, event):
    """Five guests of `event` in every state, plus guests elsewhere that must never be counted."""
    now = timezone.now()
    group = uuid.uuid4()
    guests = {
        "anna": GuestFactory(
            event=event, first_name="Anna", last_name="Alpha", status=COMING, num_guests=2, expected_guests=2,
            dietary="Vegan", group_id=group, last_login_at=now, invited_at=now,
        ),
        "ben": GuestFactory(
            event=event, first_name="Ben", last_name="Alpha", status=COMING, num_guests=1, group_id=group,
            last_login_at=now,
        ),
        "cara": GuestFactory(event=event, first_name="Cara", last_name="Cole", status=DECLINED, dietary="Nuts"),
        "dora": GuestFactory(event=event, first_name="Dora", last_name="Diaz", expected_guests=3, dietary="Halal"),
        "emil": GuestFactory(
            event=event, first_name="Emil", last_name="Eng", status=COMING, num_guests=1, dietary=" vegan ",
            last_login_at=now,
        ),
    }  # fmt: skip
    GuestFactory(event=EventFactory(tenant=tenant), status=COMING, num_guests=5, dietary="Vegan")
    GuestFactory(status=COMING, num_guests=7, dietary="Vegan")  # another tenant
    return guests


EXPECTED_STATS = {
    "invited": 5,
    "coming": 3,
    "declined": 1,
    "pending": 1,
    "never_logged_in": 2,
    "invitations_sent": 1,
    "head_count": 4,
    "expected_head_count": 8,
    "dietary_needs": 2,
}


def test_event_stats_numbers_are_correct_in_one_query(event, mixed, django_assert_num_queries):
    with django_assert_num_queries(1):
        stats = event_stats(event=event)

    assert stats == EXPECTED_STATS


def test_event_stats_of_an_event_without_guests_are_zero(event, django_assert_num_queries):
    with django_assert_num_queries(1):
        stats = event_stats(event=event)

    assert stats == dict.fromkeys(EXPECTED_STATS, 0)


def test_head_count_only_counts_coming_guests(event):
    GuestFactory(event=event, status=COMING, num_guests=2)
    GuestFactory(event=event, status=DECLINED)
    GuestFactory(event=event, status=PENDING, expected_guests=3)

    stats = event_stats(event=event)

    assert stats["head_count"] == 2
    assert stats["expected_head_count"] == 5


def _recount(guests: list[Guest]) -> dict[str, int]:
    """The headline numbers counted one guest at a time, as an organizer would by hand."""
    return {
        "invited": len(guests),
        "coming": sum(g.status == COMING for g in guests),
        "declined": sum(g.status == DECLINED for g in guests),
        "pending": sum(g.status == PENDING for g in guests),
        "never_logged_in": sum(g.last_login_at is None for g in guests),
        "invitations_sent": sum(g.invited_at is not None for g in guests),
        "head_count": sum(g.num_guests for g in guests if g.status == COMING),
        "expected_head_count": sum(g.expected_guests for g in guests),
        "dietary_needs": sum(g.status == COMING and g.dietary != "" for g in guests),
    }


_guest_rows = st.lists(
    st.fixed_dictionaries(
        {
            "event": st.sampled_from(["first", "second", "elsewhere"]),
            "answer": st.sampled_from([(PENDING, 0), (DECLINED, 0), (COMING, 1), (COMING, 2), (COMING, 5)]),
            "expected_guests": st.integers(1, 6),
            "dietary": st.sampled_from(["", "Vegan", "No nuts"]),
            "logged_in": st.booleans(),
            "invited": st.booleans(),
        }
    ),
    max_size=12,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=_guest_rows)
def test_headline_numbers_equal_a_recount_of_the_guests(tenant, rows):
    """Grouped by status in the database, folded in Python: every number, for one event and for many at once."""
    Guest.objects.filter(tenant=tenant).delete()
    events = {name: EventFactory(tenant=tenant) for name in ("first", "second", "empty", "elsewhere")}
    now = timezone.now()
    for row in rows:
        status, num_guests = row["answer"]
        GuestFactory(
            event=events[row["event"]], status=status, num_guests=num_guests, expected_guests=row["expected_guests"],
            dietary=row["dietary"], last_login_at=now if row["logged_in"] else None,
            invited_at=now if row["invited"] else None,
        )  # fmt: skip
    recounts = {name: _recount(list(Guest.objects.filter(event=event))) for name, event in events.items()}

    for name, event in events.items():
        assert event_stats(event=event) == recounts[name]
    wanted = [events[name].pk for name in ("first", "second", "empty")]
    by_event = event_headline_numbers_by_event(tenant=tenant, event_ids=wanted)
    assert by_event == {
        events[name].pk: recounts[name] for name in ("first", "second") if recounts[name]["invited"]
    }  # an event without guests has no row; the events list shows it with zeros


@pytest.mark.parametrize(("status", "num_guests"), [(COMING, 0), (DECLINED, 4), (PENDING, 3)])
def test_a_count_that_contradicts_the_status_is_refused(event, status, num_guests):
    """coming <=> num_guests >= 1: the model's clean() on every database."""
    guest = GuestFactory.build(event=event, tenant=event.tenant, status=status, num_guests=num_guests)

    with pytest.raises(ValidationError) as error:
        guest.full_clean()
    assert "num_guests" in error.value.message_dict


@NO_CHECK_CONSTRAINTS.skip
@pytest.mark.parametrize(("status", "num_guests"), [(COMING, 0), (DECLINED, 4), (PENDING, 3)])
def test_a_count_that_contradicts_the_status_is_refused_by_sql_databases_too(event, status, num_guests):
    """The check constraint: a second guard for code that saves without full_clean()."""
    guest = GuestFactory.build(event=event, tenant=event.tenant, status=status, num_guests=num_guests)

    with pytest.raises(IntegrityError), transaction.atomic():
        guest.save()


def test_event_stats_follow_real_answers(event, household):
    anna, lisa = household
    Guest.objects.filter(pk=anna.pk).update(expected_guests=2)
    anna = Guest.objects.select_related("event", "tenant").get(pk=anna.pk)

    answer = HouseholdAnswer(attending=True, num_guests=2, absent=(lisa.pk,), confirmed=True, dietary="Fish")
    rsvp_submit(guest=anna, answer=answer)

    stats = event_stats(event=event)
    assert (stats["coming"], stats["declined"], stats["pending"]) == (1, 1, 0)
    assert stats["head_count"] == 2
    assert stats["expected_head_count"] == 3
    assert stats["dietary_needs"] == 1


def test_dashboard_page_shows_the_numbers(owner_client, tenant, event, mixed):
    response = owner_client.get(_url("events:dashboard", tenant, event))

    assert response.status_code == 200
    page = response.content.decode()
    shown = dict(re.findall(r'data-stat="(\w+)">(\d+)<', page))
    assert shown == {
        name: str(EXPECTED_STATS[name])
        for name in ("invited", "coming", "declined", "pending", "never_logged_in", "head_count", "dietary_needs")
    }
    assert "Head count (of 8 expected)" in page
    assert event.name in page


def test_dashboard_page_says_when_rsvp_is_closed(owner_client, tenant, event):
    event.rsvp_deadline = timezone.now() - dt.timedelta(hours=1)
    event.save()

    assert "RSVP closed" in owner_client.get(_url("events:dashboard", tenant, event)).content.decode()


def test_dashboard_query_count_does_not_depend_on_guest_count(owner_client, tenant):
    small, big = EventFactory(tenant=tenant), EventFactory(tenant=tenant)
    GuestFactory.create_batch(2, event=small)
    GuestFactory.create_batch(40, event=big, status=COMING, num_guests=1)
    owner_client.get(_url("events:dashboard", tenant, small))

    counts = []
    for ev in (small, big):
        with CaptureQueriesContext(connection) as queries:
            assert owner_client.get(_url("events:dashboard", tenant, ev)).status_code == 200
        counts.append(len(queries))

    assert counts[0] == counts[1]


# --- events list ----------------------------------------------------------------------------------


def _row(page: str, name: str) -> list[str]:
    """The cells of the events-list row whose link text is `name`."""
    for row in re.findall(r"<tr>(.*?)</tr>", page, re.S):
        if f">{name}</a>" in row:
            return [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    raise AssertionError(f"no row for {name}")


def test_events_list_shows_headline_numbers_per_event(owner_client, tenant, event, mixed):
    empty = EventFactory(tenant=tenant, name="Empty Event")

    response = owner_client.get(_url("events:list", tenant))

    page = response.content.decode()
    # invited, coming, declined, pending, head count are the last five cells
    assert _row(page, event.name)[-5:] == ["5", "3", "1", "1", "4"]
    assert _row(page, empty.name)[-5:] == ["0", "0", "0", "0", "0"]
    numbers = {e.pk: e.numbers for e in response.context["events"]}
    assert numbers[event.pk]["expected_head_count"] == 8
    assert numbers[event.pk]["dietary_needs"] == 2


def test_events_list_uses_a_constant_number_of_queries(owner_client, tenant):
    def count():
        with CaptureQueriesContext(connection) as queries:
            assert owner_client.get(_url("events:list", tenant)).status_code == 200
        return len(queries)

    first = EventFactory(tenant=tenant)
    GuestFactory.create_batch(3, event=first)
    owner_client.get(_url("events:list", tenant))
    one_event = count()
    for _ in range(6):
        GuestFactory.create_batch(4, event=EventFactory(tenant=tenant), status=COMING, num_guests=1)
    seven_events = count()

    assert one_event == seven_events


def test_events_list_shows_only_this_tenants_events(owner_client, tenant, event):
    foreign = EventFactory(name="Someone Else's Party")

    page = owner_client.get(_url("events:list", tenant)).content.decode()

    assert event.name in page
    assert foreign.name not in page


def test_events_list_shows_dates_in_each_events_timezone(owner_client, tenant):
    EventFactory(tenant=tenant, name="Tokyo Launch", timezone="Asia/Tokyo",
                 starts_at=dt.datetime(2030, 6, 3, 1, 0, tzinfo=dt.UTC))  # fmt: skip

    page = owner_client.get(_url("events:list", tenant)).content.decode()

    assert _row(page, "Tokyo Launch")[1] == "Mon 3 Jun 2030, 10:00 JST"


# --- dietary report -------------------------------------------------------------------------------


def test_dietary_report_groups_coming_guests_needs(event, mixed):
    report = dietary_report(event=event)

    assert [entry["dietary"].casefold() for entry in report] == ["vegan"]
    vegan = report[0]
    assert sorted(g["first_name"] for g in vegan["guests"]) == ["Anna", "Emil"]
    assert (vegan["persons"], vegan["with_others"]) == (2, 1)  # Anna and Emil; Anna brings one more


def test_dietary_report_counts_persons_most_first(event):
    GuestFactory(event=event, first_name="Gus", status=COMING, num_guests=1, dietary="Gluten free")
    GuestFactory(event=event, first_name="Gil", status=COMING, num_guests=3, dietary="GLUTEN  FREE")
    GuestFactory(event=event, first_name="Gwen", status=COMING, num_guests=1, dietary="gluten free")
    GuestFactory(event=event, first_name="Lou", status=COMING, num_guests=1, dietary="Lactose")
    GuestFactory(event=event, first_name="Pia", status=PENDING, dietary="Lactose")

    report = dietary_report(event=event)

    assert [(e["dietary"].casefold().replace("  ", " "), e["persons"], e["with_others"]) for e in report] == [
        ("gluten free", 3, 2),
        ("lactose", 1, 0),
    ]
    assert sorted(g["first_name"] for g in report[0]["guests"]) == ["Gil", "Gus", "Gwen"]


def test_dietary_report_page_shows_needs_names_and_head_counts(owner_client, tenant, event, mixed):
    response = owner_client.get(_url("guests:dietary", tenant, event))

    assert response.status_code == 200
    page = response.content.decode()
    assert re.search(r"<h3>vegan <small[^>]*>· <span data-persons>2 people</span>", page, re.I)
    assert "(+1 coming with them without a code)" in page
    assert "Anna Alpha (with 1 more)" in page
    assert "Emil Eng" in page
    assert "Nuts" not in page  # Cara declined
    assert "Halal" not in page  # Dora has not answered


def test_dietary_report_page_without_needs(owner_client, tenant, event):
    GuestFactory(event=event, status=COMING, num_guests=1)

    page = owner_client.get(_url("guests:dietary", tenant, event)).content.decode()

    assert "No coming guest has dietary needs so far." in page


# --- activity -------------------------------------------------------------------------------------


@pytest.fixture
def activity_guests(event):
    now = timezone.now()
    return {
        "old": GuestFactory(event=event, first_name="Olga", last_name="Old", last_login_at=now - dt.timedelta(days=9),
                            last_access_at=now - dt.timedelta(hours=1)),
        "new": GuestFactory(event=event, first_name="Nina", last_name="New", last_login_at=now - dt.timedelta(days=1),
                            last_access_at=now - dt.timedelta(days=1)),
        "never": GuestFactory(event=event, first_name="Vera", last_name="Never"),
        "never2": GuestFactory(event=event, first_name="Abe", last_name="Absent"),
    }  # fmt: skip


def _activity_names(response):
    return [g.first_name for g in response.context["page"]]


def _html_order(response, names):
    page = response.content.decode()
    return sorted(names, key=page.index)


@pytest.mark.parametrize(
    "sort, expected",
    [
        ("last_login", ["Nina", "Olga", "Abe", "Vera"]),
        ("last_access", ["Olga", "Nina", "Abe", "Vera"]),
        ("name", ["Abe", "Vera", "Nina", "Olga"]),
        ("never", ["Abe", "Vera", "Olga", "Nina"]),
        ("bogus", ["Olga", "Nina", "Abe", "Vera"]),
    ],
)
def test_activity_page_sorts(owner_client, tenant, event, activity_guests, sort, expected):
    response = owner_client.get(_url("guests:activity", tenant, event), {"sort": sort})

    assert response.status_code == 200
    assert _activity_names(response) == expected
    assert _html_order(response, [f"{n}" for n in expected]) == expected


def test_activity_page_filters_guests_who_never_opened_the_invitation(owner_client, tenant, event, activity_guests):
    response = owner_client.get(_url("guests:activity", tenant, event), {"sort": "name", "never": "1"})

    assert _activity_names(response) == ["Abe", "Vera"]
    page = response.content.decode()
    assert "Olga" not in page and "Nina" not in page
    assert "Show everyone" in page


def test_activity_page_reflects_a_real_guest_login(
    client, owner, tenant, event, activity_guests, django_capture_on_commit_callbacks
):
    vera = activity_guests["never"]
    with django_capture_on_commit_callbacks(execute=True):
        client.post("/rsvp/", {"code": vera.code, "last_name": "Never"})
    client.force_login(owner)

    response = client.get(_url("guests:activity", tenant, event), {"sort": "last_login"})

    assert _activity_names(response)[0] == "Vera"
    never = client.get(_url("guests:activity", tenant, event), {"never": "1"})
    assert _activity_names(never) == ["Abe"]

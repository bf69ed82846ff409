"""The organizer's event API: list, create, read, update, archive, stats, dietary report, activity."""

# The organizer fixtures are imported; test arguments name them (ruff cannot tell).
# ruff: noqa: F811

import datetime as dt
import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from events import services
from events.models import Event
from eventsaas.models import AuditLog
from guests.models import Guest
from guests.selectors import question_report
from tests.api.organizer_fixtures import (  # noqa: F401
    admin_api,
    api_client,
    errors_of,
    guest_api,
    other_event,
    other_guest,
    other_tenant,
    owner_api,
    snapshot,
    stranger_api,
    viewer_api,
)
from tests.factories import EventFactory, GuestFactory

pytestmark = pytest.mark.django_db

NEW_EVENT = {
    "name": "Summer wedding",
    "starts_at": "2031-06-01T18:00:00+02:00",
    "ends_at": "2031-06-02T02:00:00+02:00",
    "rsvp_deadline": "2031-05-01T23:59:00+02:00",
    "timezone": "Europe/Madrid",
    "location": "Barn",
    "questions": [
        {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]},
        {"key": "song", "label": "Which song gets you dancing?"},
    ],
}


def events_url(slug):
    return reverse("api:org-events", kwargs={"org_slug": slug})


def event_url(event, suffix=""):
    return f"/api/v1/events/{event.pk}{suffix}"


def later(**delta):
    return timezone.now() + dt.timedelta(**delta)


# --- list ------------------------------------------------------------------------------------------


def test_urls(event, tenant):
    assert events_url(tenant.slug) == f"/api/v1/orgs/{tenant.slug}/events"
    assert reverse("api:event-detail", kwargs={"event_id": event.pk}) == event_url(event)
    assert reverse("api:event-activity", kwargs={"event_id": event.pk}) == event_url(event, "/activity")


def test_event_list_has_the_organizations_active_events_with_headline_numbers(owner_api, tenant, event, other_event):
    GuestFactory(event=event, status=Guest.Status.COMING, num_guests=3)
    GuestFactory(event=event, status=Guest.Status.DECLINED)
    GuestFactory(event=event)
    empty = EventFactory(tenant=tenant, starts_at=later(days=60))
    EventFactory(tenant=tenant, status=Event.Status.ARCHIVED)

    response = owner_api.get(events_url(tenant.slug))

    assert response.status_code == 200
    rows = response.json()
    assert [row["id"] for row in rows] == [str(empty.pk), str(event.pk)]  # newest first
    assert rows[1]["numbers"] == {"invited": 3, "coming": 1, "declined": 1, "pending": 1, "head_count": 3}
    assert rows[0]["numbers"] == {"invited": 0, "coming": 0, "declined": 0, "pending": 0, "head_count": 0}
    assert rows[1]["name"] == event.name
    assert rows[1]["timezone"] == "Europe/Madrid"


def test_event_list_can_include_archived_events(owner_api, tenant, event):
    archived = EventFactory(tenant=tenant, status=Event.Status.ARCHIVED)

    rows = owner_api.get(events_url(tenant.slug), {"include_archived": "true"}).json()

    assert {row["id"] for row in rows} == {str(event.pk), str(archived.pk)}


def test_event_list_refuses_a_malformed_filter(owner_api, tenant):
    assert errors_of(owner_api.get(events_url(tenant.slug), {"include_archived": "maybe"}))["include_archived"]


def test_event_list_costs_the_same_queries_for_many_events(owner_api, tenant):
    EventFactory(tenant=tenant)
    with CaptureQueriesContext(connection) as one:
        owner_api.get(events_url(tenant.slug))
    for _ in range(5):
        GuestFactory(event=EventFactory(tenant=tenant))
    with CaptureQueriesContext(connection) as six:
        assert len(owner_api.get(events_url(tenant.slug)).json()) == 6

    assert len(six) == len(one) == 3  # tenant, events, numbers


def test_viewer_reads_the_event_list(viewer_api, tenant, event):
    assert viewer_api.get(events_url(tenant.slug)).status_code == 200


@pytest.mark.parametrize("slug", ["rival", "no-such-org"])
def test_event_list_of_another_or_unknown_organization_is_404(owner_api, other_event, slug):
    response = owner_api.get(events_url(slug))

    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_event_list_needs_an_organizer_token(guest_api, tenant):
    assert api_client().get(events_url(tenant.slug)).status_code == 401
    assert guest_api.get(events_url(tenant.slug)).status_code == 403


# --- create ----------------------------------------------------------------------------------------


def test_create_event(owner_api, owner, tenant):
    response = owner_api.post(events_url(tenant.slug), NEW_EVENT, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    event = Event.objects.get(pk=body["id"])
    assert event.tenant == tenant
    assert event.slug == "summer-wedding"
    assert event.status == Event.Status.DRAFT
    assert event.starts_at == dt.datetime(2031, 6, 1, 16, 0, tzinfo=dt.UTC)
    assert event.contact_email == owner.email  # defaults to the organizer's
    assert event.questions == [
        {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]},
        {"key": "song", "label": "Which song gets you dancing?", "choices": []},
    ]
    assert body["starts_at"] == "2031-06-01T16:00:00Z"
    assert body["slug"] == "summer-wedding"
    assert body["rsvp_open"] is False  # a draft
    entry = AuditLog.objects.get(action="event.created")
    assert (entry.tenant, entry.event_id, entry.actor_user) == (tenant, event.pk, owner)


def test_admin_creates_events(admin_api, tenant):
    assert admin_api.post(events_url(tenant.slug), NEW_EVENT, format="json").status_code == 201


def test_create_event_needs_name_and_start(owner_api, tenant):
    errors = errors_of(owner_api.post(events_url(tenant.slug), {}, format="json"))

    assert set(errors) == {"name", "starts_at"}


def test_times_without_utc_offset_are_refused(owner_api, tenant):
    errors = errors_of(
        owner_api.post(events_url(tenant.slug), {**NEW_EVENT, "starts_at": "2031-06-01T18:00"}, format="json")
    )

    assert errors == {"starts_at": ["Give the time with a UTC offset, e.g. 2030-06-01T18:00:00+02:00."]}
    assert not Event.objects.exists()


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"ends_at": "2031-06-01T17:00:00+02:00"}, "ends_at", "The event cannot end before it starts."),
        (
            {"rsvp_deadline": "2031-06-01T18:30:00+02:00"},
            "rsvp_deadline",
            "The RSVP deadline should be before the event starts.",
        ),
        ({"timezone": "Mars/Olympus_Mons"}, "timezone", "“Mars/Olympus_Mons” is not a known time zone."),
        (
            {"questions": [{"key": "meal", "label": "Fish?"}, {"key": "meal", "label": "Meat?"}]},
            "questions",
            "Two questions have the same key: meal",
        ),
    ],
)
def test_create_event_applies_the_event_rules(owner_api, tenant, changes, field, message):
    errors = errors_of(owner_api.post(events_url(tenant.slug), {**NEW_EVENT, **changes}, format="json"))

    assert errors == {field: [message]}
    assert not Event.objects.exists()
    assert not AuditLog.objects.exists()


@pytest.mark.parametrize(
    "questions",
    [
        "not a list",
        [{"key": "meal"}],
        [{"key": " ", "label": "Meal"}],
        [{"key": "meal", "label": "Meal", "choices": [1]}],
    ],
    ids=["not a list", "no label", "blank key", "choice not text"],
)
def test_the_event_model_refuses_malformed_questions_from_any_caller(tenant, owner, questions):
    """The API's serializer checks the shape too; the model is the rule for every other caller (pages, admin)."""
    with pytest.raises(ValidationError) as error:
        services.event_create(
            tenant=tenant, acting_user=owner, name="Party", starts_at=later(days=9), questions=questions
        )

    assert error.value.message_dict == {"questions": ["Each question needs a key, a label and a list of text choices."]}


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"name": ["a list"]}, "name"),
        ({"name": "x" * 201}, "name"),
        ({"name": None}, "name"),
        ({"starts_at": 1_900_000_000}, "starts_at"),
        ({"starts_at": "tomorrow"}, "starts_at"),
        ({"starts_at": "2031-02-30T18:00:00+01:00"}, "starts_at"),
        ({"starts_at": "9999-12-31T23:00:00-05:00"}, "starts_at"),  # past year 9999 in UTC
        ({"starts_at": "0001-01-01T00:00:00+05:00"}, "starts_at"),  # before year 1 in UTC
        ({"status": "cancelled"}, "status"),
        ({"language": "xx"}, "language"),
        ({"contact_email": "not an email"}, "contact_email"),
        ({"questions": "What to eat?"}, "questions"),
        ({"questions": [{"key": "not a slug!", "label": "Meal"}]}, "questions"),
        ({"questions": [{"key": "meal", "label": "Meal", "choices": "Fish"}]}, "questions"),
        ({"questions": [{"key": "meal", "label": "Meal", "extra": 1}]}, "questions"),
        ({"questions": [["meal", "Meal"]]}, "questions"),
        ({"slug": "chosen"}, "slug"),
        ({"tenant": "5c6f2ad1-6b4e-4f0e-9d55-1f3c2a7b9e10"}, "tenant"),
    ],
)
def test_create_event_refuses_malformed_fields(owner_api, tenant, changes, field):
    errors = errors_of(owner_api.post(events_url(tenant.slug), {**NEW_EVENT, **changes}, format="json"))

    assert field in errors
    assert not Event.objects.exists()


@pytest.mark.parametrize("body", ["{not json", "[1, 2]", '"a string"', "null", "12", ""])
def test_create_event_refuses_a_body_that_is_not_an_object(owner_api, tenant, body):
    response = owner_api.generic("POST", events_url(tenant.slug), body, content_type="application/json")

    assert response.status_code == 400
    assert response.json()["code"] in {"invalid", "parse_error"}
    assert not Event.objects.exists()


def test_viewer_cannot_create_events(viewer_api, tenant, snapshot):
    before = snapshot()

    response = viewer_api.post(events_url(tenant.slug), NEW_EVENT, format="json")

    assert response.status_code == 403
    assert response.json()["code"] == "permission_denied"
    assert snapshot() == before


def test_cannot_create_events_in_another_organization(stranger_api, tenant, snapshot):
    before = snapshot()

    assert stranger_api.post(events_url(tenant.slug), NEW_EVENT, format="json").status_code == 404
    assert snapshot() == before


# --- read and update -------------------------------------------------------------------------------


def test_read_event(viewer_api, event):
    response = viewer_api.get(event_url(event))

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(event.pk)
    assert body["rsvp_open"] is True
    assert body["questions"] == []
    assert body["rsvp_deadline"] == event.rsvp_deadline.isoformat().replace("+00:00", "Z")


def test_unknown_event_is_404(owner_api, event):
    assert owner_api.get(f"/api/v1/events/{uuid.uuid4()}").status_code == 404
    assert owner_api.get("/api/v1/events/not-a-uuid").status_code == 404


def test_update_event_changes_only_the_fields_sent(owner_api, owner, event):
    response = owner_api.patch(
        event_url(event),
        {"location": "Beach", "ends_at": None, "questions": [{"key": "meal", "label": "Meal?", "choices": []}]},
        format="json",
    )

    assert response.status_code == 200, response.content
    event_before = Event.objects.get(pk=event.pk)
    assert event_before.location == "Beach"
    assert event_before.name == event.name
    assert event_before.questions == [{"key": "meal", "label": "Meal?", "choices": []}]
    assert response.json()["location"] == "Beach"
    entry = AuditLog.objects.get(action="event.updated")
    assert entry.actor_user == owner
    assert entry.data == {"fields": ["location", "questions"]}


def test_update_keeps_the_deadline_before_the_start(owner_api, event, snapshot):
    before = snapshot()
    earlier_start = (event.rsvp_deadline - dt.timedelta(days=1)).isoformat()

    errors = errors_of(owner_api.patch(event_url(event), {"starts_at": earlier_start}, format="json"))

    assert errors == {"rsvp_deadline": ["The RSVP deadline should be before the event starts."]}
    assert snapshot() == before


def test_update_refuses_null_for_required_fields_and_unknown_fields(owner_api, event, snapshot):
    before = snapshot()

    assert "starts_at" in errors_of(owner_api.patch(event_url(event), {"starts_at": None}, format="json"))
    assert errors_of(owner_api.patch(event_url(event), {"kind": "open"}, format="json")) == {"kind": ["Unknown field."]}
    assert snapshot() == before


def test_update_without_changes_writes_nothing(owner_api, event, snapshot):
    before = snapshot()

    assert owner_api.patch(event_url(event), {"location": event.location}, format="json").status_code == 200
    assert snapshot() == before


# --- archive ---------------------------------------------------------------------------------------


def test_archive_event(owner_api, event):
    response = owner_api.post(event_url(event, "/archive"))

    assert response.status_code == 200
    assert response.json()["status"] == "archived"
    assert response.json()["rsvp_open"] is False
    event.refresh_from_db()
    assert event.is_archived
    assert owner_api.post(event_url(event, "/archive")).status_code == 200  # again: harmless
    assert AuditLog.objects.filter(action="event.archived").count() == 1


# --- stats, dietary report, activity ---------------------------------------------------------------


def test_stats_are_one_aggregate_query(viewer_api, event, other_event):
    GuestFactory(event=event, status=Guest.Status.COMING, num_guests=2, dietary="vegan", expected_guests=2)
    GuestFactory(event=event, status=Guest.Status.DECLINED, last_login_at=timezone.now())
    GuestFactory(event=event, invited_at=timezone.now())
    GuestFactory(event=other_event, status=Guest.Status.COMING, num_guests=5)

    with CaptureQueriesContext(connection) as queries:
        response = viewer_api.get(event_url(event, "/stats"))

    assert response.status_code == 200
    assert response.json() == {
        "invited": 3,
        "coming": 1,
        "declined": 1,
        "pending": 1,
        "never_logged_in": 2,
        "invitations_sent": 1,
        "head_count": 2,
        "expected_head_count": 4,
        "dietary_needs": 1,
    }
    guest_queries = [q["sql"] for q in queries.captured_queries if Guest._meta.db_table in q["sql"]]
    assert len(guest_queries) == 1
    assert len(queries) == 2  # the event (tenancy gate) and the aggregate


def test_dietary_report_groups_coming_guests_by_need(viewer_api, event):
    anna = GuestFactory(event=event, first_name="Anna", status=Guest.Status.COMING, num_guests=2, dietary="Vegan")
    ben = GuestFactory(event=event, first_name="Ben", status=Guest.Status.COMING, num_guests=1, dietary="Vegan")
    GuestFactory(event=event, status=Guest.Status.COMING, num_guests=1, dietary="No nuts")
    GuestFactory(event=event, status=Guest.Status.DECLINED, dietary="Vegan")

    response = viewer_api.get(event_url(event, "/dietary"))

    assert response.status_code == 200
    report = response.json()
    assert [(entry["dietary"], entry["persons"], entry["with_others"]) for entry in report] == [
        ("Vegan", 2, 1),
        ("No nuts", 1, 0),
    ]
    assert {g["id"] for g in report[0]["guests"]} == {str(anna.pk), str(ben.pk)}
    assert set(report[0]["guests"][0]) == {"id", "first_name", "last_name", "num_guests", "group_id"}


def test_question_report_counts_coming_persons_per_answer(viewer_api, event):
    Event.objects.filter(pk=event.pk).update(
        questions=[
            {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat", "Vegetarian"]},
            {"key": "song", "label": "Song", "choices": []},
        ]
    )
    for meal, song in [("Vegetarian", "Abba"), ("Vegetarian", " abba "), ("Vegetarian", ""), ("Fish", "Queen")]:
        GuestFactory(event=event, status=Guest.Status.COMING, answers={"meal": meal, "song": song})
    GuestFactory(event=event, status=Guest.Status.COMING)  # answered nothing
    GuestFactory(event=event, status=Guest.Status.DECLINED, answers={"meal": "Meat"})
    GuestFactory(event=event, answers={"meal": "Meat", "gone": "question removed"})  # pending
    GuestFactory(status=Guest.Status.COMING, answers={"meal": "Meat"})  # another organization's event

    response = viewer_api.get(event_url(event, "/questions"))

    assert response.status_code == 200, response.content
    meal, song = response.json()
    assert (meal["key"], meal["label"], meal["has_choices"]) == ("meal", "Main course", True)
    assert meal["answers"] == [
        {"answer": "Fish", "count": 1},
        {"answer": "Meat", "count": 0},
        {"answer": "Vegetarian", "count": 3},
    ]
    assert (meal["answered"], meal["unanswered"]) == (4, 1)
    assert song["answers"] == [{"answer": "Abba", "count": 2}, {"answer": "Queen", "count": 1}]
    assert (song["answered"], song["unanswered"]) == (3, 2)


def test_question_report_costs_one_query_whatever_the_guests(viewer_api, event, django_assert_max_num_queries):
    Event.objects.filter(pk=event.pk).update(questions=[{"key": "meal", "label": "Meal", "choices": ["Fish"]}])
    GuestFactory.create_batch(30, event=event, status=Guest.Status.COMING, answers={"meal": "Fish"})
    event.refresh_from_db()
    with django_assert_max_num_queries(1):
        report = question_report(event=event)

    assert report[0]["answers"] == [{"answer": "Fish", "count": 30}]


def test_activity_sorts_filters_and_pages(viewer_api, event):
    now = timezone.now()
    recent = GuestFactory(event=event, last_name="Recent", last_login_at=now, last_access_at=now)
    old = GuestFactory(
        event=event,
        last_name="Old",
        last_login_at=now - dt.timedelta(days=3),
        last_access_at=now - dt.timedelta(days=2),
    )
    never = GuestFactory(event=event, last_name="Never")

    response = viewer_api.get(event_url(event, "/activity"))
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 3
    assert [row["id"] for row in body["results"]] == [str(recent.pk), str(old.pk), str(never.pk)]
    assert body["results"][0]["last_login_at"] is not None

    by_name = viewer_api.get(event_url(event, "/activity"), {"sort": "name"}).json()
    assert [row["last_name"] for row in by_name["results"]] == ["Never", "Old", "Recent"]

    never_opened = viewer_api.get(event_url(event, "/activity"), {"never_opened": "true"}).json()
    assert [row["id"] for row in never_opened["results"]] == [str(never.pk)]

    first = viewer_api.get(event_url(event, "/activity"), {"sort": "never", "page_size": 2}).json()
    second = viewer_api.get(event_url(event, "/activity"), {"sort": "never", "page_size": 2, "page": 2}).json()
    assert [row["id"] for row in first["results"] + second["results"]] == [str(never.pk), str(old.pk), str(recent.pk)]
    assert first["next"] and second["next"] is None


@pytest.mark.parametrize("params", [{"sort": "shoe_size"}, {"never_opened": "perhaps"}])
def test_activity_refuses_unknown_filters(viewer_api, event, params):
    assert errors_of(viewer_api.get(event_url(event, "/activity"), params))


@pytest.mark.parametrize("page", ["99", "abc", "-1"])
def test_activity_page_out_of_range_is_404_not_500(viewer_api, event, page):
    assert viewer_api.get(event_url(event, "/activity"), {"page": page}).status_code == 404


def test_activity_page_size_is_capped(viewer_api, event):
    response = viewer_api.get(event_url(event, "/activity"), {"page_size": "99999999999999999999999"})

    assert response.status_code == 200


# --- isolation: viewers, other organizations, guests -----------------------------------------------

READS = [("get", ""), ("get", "/stats"), ("get", "/dietary"), ("get", "/activity")]
WRITES = [
    ("patch", "", {"name": "Taken over"}),
    ("post", "/archive", None),
]


@pytest.mark.parametrize(("method", "suffix", "body"), WRITES)
def test_viewer_cannot_change_events(viewer_api, event, snapshot, method, suffix, body):
    before = snapshot()

    response = getattr(viewer_api, method)(event_url(event, suffix), body, format="json")

    assert response.status_code == 403
    assert snapshot() == before


@pytest.mark.parametrize(("method", "suffix", "body"), [(m, s, None) for m, s in READS] + WRITES)
def test_another_organizations_event_does_not_exist(stranger_api, event, snapshot, method, suffix, body):
    GuestFactory(event=event, status=Guest.Status.COMING, dietary="vegan")
    before = snapshot()

    response = getattr(stranger_api, method)(event_url(event, suffix), body, format="json")

    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "detail": "Not found."}
    assert snapshot() == before


@pytest.mark.parametrize(("method", "suffix", "body"), [(m, s, None) for m, s in READS] + WRITES)
def test_guests_and_anonymous_callers_are_refused(guest_api, event, snapshot, method, suffix, body):
    before = snapshot()

    assert getattr(api_client(), method)(event_url(event, suffix), body, format="json").status_code == 401
    assert getattr(guest_api, method)(event_url(event, suffix), body, format="json").status_code == 403
    assert snapshot() == before

"""Events: create, edit, archive; time zones and slugs."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from events.models import Event
from events.services import event_archive, event_create, event_update, questions_from_text
from eventsaas.models import AuditLog
from guests.models import Guest
from rsvp.services import HouseholdAnswer, RsvpClosed, guest_authenticate, rsvp_submit
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory, TenantFactory
from tests.rsvp.household_form import household_post, row

UTC = dt.UTC


def _form_data(**overrides):
    data = {
        "name": "Summer Party",
        "description": "Bring sunscreen",
        "status": Event.Status.PUBLISHED,
        "starts_at": "2027-06-01T18:00",
        "ends_at": "",
        "timezone": "Europe/Madrid",
        "location": "Rooftop",
        "dress_code": "",
        "rsvp_deadline": "",
        "language": "en",
        "contact_email": "",
        "questions_text": "",
    }
    data.update(overrides)
    return data


def _create_url(tenant):
    return reverse("events:create", kwargs={"tenant_slug": tenant.slug})


def _edit_url(event):
    return reverse("events:edit", kwargs={"tenant_slug": event.tenant.slug, "event_id": event.pk})


# --- create ---------------------------------------------------------------------------------------


def test_create_page_stores_dates_typed_in_the_event_timezone_as_utc(owner_client, tenant, owner):
    response = owner_client.post(
        _create_url(tenant),
        _form_data(ends_at="2027-06-02T02:30", rsvp_deadline="2027-05-20T23:59"),
    )

    assert response.status_code == 302
    event = Event.objects.get(tenant=tenant, name="Summer Party")
    assert response["Location"] == reverse(
        "events:dashboard", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}
    )
    assert event.starts_at == dt.datetime(2027, 6, 1, 16, 0, tzinfo=UTC)
    assert event.ends_at == dt.datetime(2027, 6, 2, 0, 30, tzinfo=UTC)
    assert event.rsvp_deadline == dt.datetime(2027, 5, 20, 21, 59, tzinfo=UTC)
    assert event.timezone == "Europe/Madrid"
    assert event.slug == "summer-party"
    assert event.contact_email == owner.email  # defaults to the organizer creating it
    assert AuditLog.objects.filter(action="event.created", object_id=event.pk).exists()


@pytest.mark.parametrize(
    "tz, typed, utc",
    [
        ("Europe/Madrid", "2027-01-15T18:00", dt.datetime(2027, 1, 15, 17, 0, tzinfo=UTC)),  # winter, UTC+1
        ("America/New_York", "2027-06-01T18:00", dt.datetime(2027, 6, 1, 22, 0, tzinfo=UTC)),
        ("Asia/Tokyo", "2027-06-01T08:00", dt.datetime(2027, 5, 31, 23, 0, tzinfo=UTC)),
        ("UTC", "2027-06-01T18:00", dt.datetime(2027, 6, 1, 18, 0, tzinfo=UTC)),
    ],
)
def test_create_page_converts_other_timezones(owner_client, tenant, tz, typed, utc):
    response = owner_client.post(_create_url(tenant), _form_data(timezone=tz, starts_at=typed))

    assert response.status_code == 302
    assert Event.objects.get(tenant=tenant).starts_at == utc


def test_create_page_parses_custom_questions(owner_client, tenant):
    owner_client.post(
        _create_url(tenant), _form_data(questions_text="Main course :: Fish | Meat\nYour favourite song?\n")
    )

    event = Event.objects.get(tenant=tenant)
    assert event.questions == [
        {"key": "main-course", "label": "Main course", "choices": ["Fish", "Meat"]},
        {"key": "your-favourite-song", "label": "Your favourite song?", "choices": []},
    ]


@pytest.mark.parametrize(
    "overrides, field",
    [
        ({"ends_at": "2027-06-01T17:00"}, "ends_at"),
        ({"rsvp_deadline": "2027-06-02T10:00"}, "rsvp_deadline"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"starts_at": ""}, "starts_at"),
        ({"name": ""}, "name"),
        ({"questions_text": "Meal?\nMeal?"}, "questions_text"),
        # An event created archived would vanish from the list it was created from.
        ({"status": Event.Status.ARCHIVED}, "status"),
    ],
)
def test_create_page_refuses_invalid_input(owner_client, tenant, overrides, field):
    response = owner_client.post(_create_url(tenant), _form_data(**overrides))

    assert response.status_code == 400
    assert field in response.context["form"].errors
    assert not Event.objects.filter(tenant=tenant).exists()


def test_create_page_offers_no_archived_status_and_the_edit_page_does(owner_client, tenant):
    offered = [
        value for value, _label in owner_client.get(_create_url(tenant)).context["form"].fields["status"].choices
    ]
    event = EventFactory(tenant=tenant)
    on_edit = [value for value, _label in owner_client.get(_edit_url(event)).context["form"].fields["status"].choices]

    assert Event.Status.ARCHIVED not in offered
    assert Event.Status.PUBLISHED in offered
    assert Event.Status.ARCHIVED in on_edit


def test_viewer_cannot_create_events(member_client, tenant):
    client = member_client(Role.VIEWER)

    assert client.post(_create_url(tenant), _form_data()).status_code == 403
    assert not Event.objects.exists()


def test_slug_is_unique_per_tenant(tenant, owner):
    first = event_create(
        tenant=tenant, acting_user=owner, name="Summer Party", starts_at=dt.datetime(2027, 6, 1, tzinfo=UTC)
    )
    second = event_create(
        tenant=tenant, acting_user=owner, name="Summer Party", starts_at=dt.datetime(2028, 6, 1, tzinfo=UTC)
    )
    third = event_create(
        tenant=tenant, acting_user=owner, name="Summer  party!", starts_at=dt.datetime(2029, 6, 1, tzinfo=UTC)
    )
    elsewhere = event_create(
        tenant=TenantFactory(), acting_user=None, name="Summer Party", starts_at=dt.datetime(2027, 6, 1, tzinfo=UTC)
    )

    assert (first.slug, second.slug, third.slug) == ("summer-party", "summer-party-2", "summer-party-3")
    assert elsewhere.slug == "summer-party"


def test_explicit_duplicate_slug_in_the_same_tenant_is_refused(tenant, owner):
    event_create(tenant=tenant, acting_user=owner, name="A", slug="gala", starts_at=dt.datetime(2027, 6, 1, tzinfo=UTC))

    with pytest.raises(ValidationError):
        event_create(
            tenant=tenant, acting_user=owner, name="B", slug="gala", starts_at=dt.datetime(2027, 6, 1, tzinfo=UTC)
        )

    assert Event.objects.filter(tenant=tenant).count() == 1


def test_two_tenants_creating_the_same_event_through_the_page_both_get_the_slug(client, owner, tenant, member_client):
    other = TenantFactory()
    client.force_login(owner)
    client.post(_create_url(tenant), _form_data())
    client.post(_create_url(tenant), _form_data())
    other_client = member_client(Role.OWNER, tenant_=other)
    other_client.post(_create_url(other), _form_data())

    assert sorted(Event.objects.filter(tenant=tenant).values_list("slug", flat=True)) == [
        "summer-party",
        "summer-party-2",
    ]
    assert Event.objects.get(tenant=other).slug == "summer-party"


def test_questions_from_text_keeps_keys_stable():
    assert questions_from_text(" Which meal? :: Fish |  Meat | \n\n") == [
        {"key": "which-meal", "label": "Which meal?", "choices": ["Fish", "Meat"]}
    ]
    with pytest.raises(ValidationError):
        questions_from_text("Meal\nmeal")


# --- edit -----------------------------------------------------------------------------------------


@pytest.fixture
def madrid_event(tenant):
    return EventFactory(
        tenant=tenant,
        name="Gala",
        timezone="Europe/Madrid",
        starts_at=dt.datetime(2027, 6, 1, 16, 0, tzinfo=UTC),
        rsvp_deadline=dt.datetime(2027, 5, 20, 21, 59, tzinfo=UTC),
        questions=[{"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]}],
    )


def test_edit_page_shows_dates_in_the_event_timezone(owner_client, madrid_event):
    response = owner_client.get(_edit_url(madrid_event))

    page = response.content.decode()
    assert response.status_code == 200
    assert 'value="2027-06-01T18:00"' in page
    assert 'value="2027-05-20T23:59"' in page
    assert "Main course :: Fish | Meat" in page


def test_edit_page_round_trip_keeps_the_stored_times(owner_client, madrid_event):
    form = owner_client.get(_edit_url(madrid_event)).context["form"]
    data = _form_data(
        name="Gala",
        description="",
        location=madrid_event.location,
        contact_email=madrid_event.contact_email,
        starts_at="2027-06-01T18:00",
        rsvp_deadline="2027-05-20T23:59",
        questions_text=form.initial["questions_text"],
    )

    response = owner_client.post(_edit_url(madrid_event), data)

    assert response.status_code == 302
    madrid_event.refresh_from_db()
    assert madrid_event.starts_at == dt.datetime(2027, 6, 1, 16, 0, tzinfo=UTC)
    assert madrid_event.rsvp_deadline == dt.datetime(2027, 5, 20, 21, 59, tzinfo=UTC)
    assert madrid_event.questions == [{"key": "meal", "label": "Main course", "choices": ["Fish", "Meat"]}]


def test_edit_page_saves_changes(owner_client, madrid_event):
    old_slug = madrid_event.slug
    response = owner_client.post(
        _edit_url(madrid_event),
        _form_data(
            name="Winter Gala",
            starts_at="2027-12-31T21:00",
            dress_code="Black tie",
            contact_email="gala@example.com",
            timezone="Europe/Madrid",
        ),
    )

    assert response.status_code == 302
    madrid_event.refresh_from_db()
    assert madrid_event.name == "Winter Gala"
    assert madrid_event.starts_at == dt.datetime(2027, 12, 31, 20, 0, tzinfo=UTC)
    assert madrid_event.rsvp_deadline is None
    assert madrid_event.dress_code == "Black tie"
    assert madrid_event.slug == old_slug
    entry = AuditLog.objects.get(action="event.updated", object_id=madrid_event.pk)
    assert {"name", "starts_at", "dress_code"} <= set(entry.data["fields"])


def test_edit_page_refuses_end_before_start(owner_client, madrid_event):
    response = owner_client.post(
        _edit_url(madrid_event), _form_data(starts_at="2027-06-01T18:00", ends_at="2027-06-01T10:00")
    )

    assert response.status_code == 400
    madrid_event.refresh_from_db()
    assert madrid_event.ends_at is None


def test_edit_of_another_tenants_event_is_404(owner_client):
    foreign = EventFactory()

    response = owner_client.get(
        reverse("events:edit", kwargs={"tenant_slug": foreign.tenant.slug, "event_id": foreign.pk})
    )

    assert response.status_code == 404


def test_event_update_without_changes_writes_nothing(madrid_event, owner):
    before = madrid_event.updated_at

    event_update(event=madrid_event, acting_user=owner, name="Gala", timezone="Europe/Madrid")

    madrid_event.refresh_from_db()
    assert madrid_event.updated_at == before
    assert not AuditLog.objects.filter(action="event.updated").exists()


# --- archive --------------------------------------------------------------------------------------


def test_archive_page_archives_the_event(owner_client, tenant, event):
    response = owner_client.post(reverse("events:archive", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}))

    assert response.status_code == 302
    assert response["Location"] == reverse("events:list", kwargs={"tenant_slug": tenant.slug})
    event.refresh_from_db()
    assert event.status == Event.Status.ARCHIVED
    assert event.is_archived
    assert not event.is_rsvp_open()


def test_archived_event_guests_can_no_longer_answer(tenant, event, owner, household):
    anna, _lisa = household
    assert guest_authenticate(code=anna.code, last_name="Müller") == anna

    event_archive(event=event, acting_user=owner)

    assert guest_authenticate(code=anna.code, last_name="Müller") is None
    anna = Guest.objects.select_related("event", "tenant").get(pk=anna.pk)
    with pytest.raises(RsvpClosed):
        rsvp_submit(guest=anna, answer=HouseholdAnswer(attending=True, num_guests=2))
    assert Guest.objects.get(pk=anna.pk).status == Guest.Status.PENDING


def test_archived_event_guest_page_is_closed(owner_client, tenant, event, household):
    anna, _ = household
    guest_client = Client()
    assert guest_client.post("/rsvp/", {"code": anna.code, "last_name": "Müller"}).status_code == 302
    assert guest_client.get("/rsvp/answer/").status_code == 200

    archive = owner_client.post(reverse("events:archive", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}))

    assert archive.status_code == 302
    assert guest_client.get("/rsvp/answer/")["Location"] == "/rsvp/"
    assert guest_client.post("/rsvp/answer/", household_post(row("no"), row("later")))["Location"] == "/rsvp/"
    assert guest_client.post("/rsvp/", {"code": anna.code, "last_name": "Müller"}).status_code == 400
    assert Guest.objects.get(pk=anna.pk).status == Guest.Status.PENDING


def test_archiving_twice_is_harmless(event, owner):
    event_archive(event=event, acting_user=owner)
    event_archive(event=event, acting_user=owner)

    assert AuditLog.objects.filter(action="event.archived", object_id=event.pk).count() == 1


def test_archived_events_leave_the_list_but_keep_their_records(owner_client, tenant, event, household):
    event_archive(event=event, acting_user=None)
    url = reverse("events:list", kwargs={"tenant_slug": tenant.slug})

    assert event.name not in owner_client.get(url).content.decode()
    assert event.name in owner_client.get(url, {"archived": "1"}).content.decode()
    assert Guest.objects.filter(event=event).count() == 2


def test_viewer_cannot_archive(member_client, tenant, event):
    client = member_client(Role.VIEWER)

    response = client.post(reverse("events:archive", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}))

    assert response.status_code == 403
    event.refresh_from_db()
    assert event.status == Event.Status.PUBLISHED


def test_guests_of_other_events_are_unaffected_by_archiving(tenant, event, owner):
    other = EventFactory(tenant=tenant)
    guest = GuestFactory(event=other, last_name="Keep")

    event_archive(event=event, acting_user=owner)

    assert guest_authenticate(code=guest.code, last_name="Keep") == guest


def test_editing_an_event_keeps_question_keys_so_stored_answers_stay_attached(owner_client, madrid_event):
    # Keys not derived from the label (demo data, older events) must survive an unrelated edit.
    guest = GuestFactory(event=madrid_event, answers={"meal": "Fish"})
    data = _form_data(
        name="Gala",
        starts_at="2027-06-01T18:00",
        dress_code="Smart casual",
        questions_text="Main course :: Fish | Meat | Vegan\nNew question?",
    )

    assert owner_client.post(_edit_url(madrid_event), data).status_code == 302

    madrid_event.refresh_from_db()
    assert madrid_event.questions == [
        {"key": "meal", "label": "Main course", "choices": ["Fish", "Meat", "Vegan"]},
        {"key": "new-question", "label": "New question?", "choices": []},
    ]
    assert set(Guest.objects.get(pk=guest.pk).answers) <= {q["key"] for q in madrid_event.questions}


def test_an_event_that_fails_todays_validation_can_still_be_archived(event, owner):
    """Archiving touches only the status: an event saved before a rule existed is not stuck."""
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=event.starts_at + dt.timedelta(days=1))
    event.refresh_from_db()

    event_archive(event=event, acting_user=owner)

    event.refresh_from_db()
    assert event.is_archived
    assert event.rsvp_deadline > event.starts_at  # nothing else was rewritten


@pytest.mark.parametrize(
    ("starts", "ends", "ended"),
    [
        (-3, -1, True),  # over
        (-3, 2, False),  # still on: a festival that started
        (-3, None, True),  # no end: over once it started
        (1, None, False),
        (1, 3, False),
    ],
)
def test_an_event_has_ended_after_its_end_or_its_start_when_it_has_none(starts, ends, ended):
    at = dt.datetime(2026, 6, 1, 12, tzinfo=dt.UTC)
    event = Event(
        starts_at=at + dt.timedelta(hours=starts), ends_at=None if ends is None else at + dt.timedelta(hours=ends)
    )

    assert event.has_ended(at) is ended

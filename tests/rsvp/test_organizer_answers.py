"""Organizers record answers for a guest's household: page and API, after the deadline too, audit-logged."""

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from events.models import Event
from eventsaas.models import AuditLog
from guests.models import Guest
from rsvp.services import HouseholdAnswer, MemberChoice, RsvpNeedsConfirmation, rsvp_record, rsvp_submit
from tenants.models import Role
from tests.api.organizer_fixtures import organizer_client
from tests.factories import EventFactory, MembershipFactory
from tests.rsvp.household_form import household_post, row

COMING, DECLINED, PENDING = Guest.Status.COMING, Guest.Status.DECLINED, Guest.Status.PENDING


@pytest.fixture
def closed(event):
    """The deadline has passed: guests can no longer answer."""
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(days=1))
    event.refresh_from_db()
    return event


def _record_url(tenant, event, guest):
    return reverse(
        "rsvp_organizer:record", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "guest_id": guest.pk}
    )


def _api_url(guest):
    return f"/api/v1/events/{guest.event_id}/guests/{guest.pk}/rsvp"


def _answers(*guests):
    rows = Guest.objects.filter(pk__in=[g.pk for g in guests])
    return {g.first_name: (g.status, g.num_guests, g.answered_by_kind) for g in rows}


def _fresh(guest):
    return Guest.objects.select_related("event", "tenant").get(pk=guest.pk)


# --- the service ----------------------------------------------------------------------------------


def test_an_organizer_records_after_the_deadline_with_their_name(household, closed, owner):
    anna, lisa = household

    household_after = rsvp_record(
        guest=_fresh(anna), answer=HouseholdAnswer(attending=True, num_guests=2), acting_user=owner
    )

    assert household_after.head_count == 2
    assert _answers(anna, lisa) == {"Anna": (COMING, 1, "organizer"), "Lisa": (COMING, 1, "organizer")}
    row = Guest.objects.get(pk=anna.pk)
    assert (row.answered_by_user_id, row.answered_by_guest_id) == (owner.pk, None)
    entries = AuditLog.objects.filter(action="rsvp.coming")
    assert {e.object_id for e in entries} == {anna.pk, lisa.pk}
    assert {(e.actor_user_id, e.actor_guest_id, e.data["answered_by"]) for e in entries} == {
        (owner.pk, None, "organizer")
    }


def test_an_organizer_recording_the_same_answer_again_changes_nothing(household, closed, owner):
    anna, lisa = household
    rsvp_submit(
        guest=_fresh(anna),
        answer=HouseholdAnswer(attending=True, num_guests=2),
        now=timezone.now() - dt.timedelta(days=2),
    )
    before = list(Guest.objects.filter(pk__in=[anna.pk, lisa.pk]).values())
    audit = AuditLog.objects.count()

    rsvp_record(guest=_fresh(anna), answer=HouseholdAnswer(attending=True, num_guests=2), acting_user=owner)

    assert list(Guest.objects.filter(pk__in=[anna.pk, lisa.pk]).values()) == before
    assert AuditLog.objects.count() == audit


def test_an_organizer_confirms_before_changing_anyones_own_decline(household, owner):
    anna, lisa = household
    rsvp_submit(guest=_fresh(anna), answer=HouseholdAnswer(attending=False))

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        rsvp_record(
            guest=_fresh(anna), answer=HouseholdAnswer(members=(MemberChoice(anna.pk, True, 1),)), acting_user=owner
        )
    assert needed.value.reasons == ["overrides_decline"]

    rsvp_record(
        guest=_fresh(anna),
        answer=HouseholdAnswer(members=(MemberChoice(anna.pk, True, 1),), confirmed=True),
        acting_user=owner,
    )
    assert _answers(anna)["Anna"] == (COMING, 1, "organizer")


def test_an_organizers_single_number_for_a_guest_who_declined_is_confirmed_first(household, owner):
    """Found by the household state machine: the organizer is never the guest, so "coming" asks first."""
    anna, _lisa = household
    rsvp_submit(guest=_fresh(anna), answer=HouseholdAnswer(attending=False))

    with pytest.raises(RsvpNeedsConfirmation) as needed:
        rsvp_record(guest=_fresh(anna), answer=HouseholdAnswer(attending=True, num_guests=2), acting_user=owner)

    assert needed.value.reasons == ["overrides_decline"]
    assert [m.pk for m in needed.value.declined_members] == [anna.pk]
    assert _answers(anna)["Anna"] == (DECLINED, 0, "self")
    rsvp_record(
        guest=_fresh(anna), answer=HouseholdAnswer(attending=True, num_guests=2, confirmed=True), acting_user=owner
    )
    assert _answers(anna)["Anna"] == (COMING, 1, "organizer")


def test_an_archived_events_answers_do_not_change(household, event, owner):
    anna, _lisa = household
    Event.objects.filter(pk=event.pk).update(status=Event.Status.ARCHIVED)

    with pytest.raises(ValidationError):
        rsvp_record(guest=_fresh(anna), answer=HouseholdAnswer(attending=False), acting_user=owner)

    assert _answers(anna)["Anna"] == (PENDING, 0, "")


def test_a_draft_events_answers_can_be_recorded(household, event, owner):
    anna, _lisa = household
    Event.objects.filter(pk=event.pk).update(status=Event.Status.DRAFT)

    rsvp_record(guest=_fresh(anna), answer=HouseholdAnswer(attending=False), acting_user=owner)

    assert _answers(anna)["Anna"] == (DECLINED, 0, "organizer")


# --- the page ------------------------------------------------------------------------------------------


def test_the_guest_page_links_to_recording_and_shows_who_answered_and_the_history(
    owner_client, tenant, closed, household, owner
):
    anna, lisa = household
    rsvp_submit(guest=_fresh(lisa), answer=HouseholdAnswer(attending=False), now=timezone.now() - dt.timedelta(days=3))
    detail_url = reverse(
        "guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": closed.pk, "guest_id": anna.pk}
    )

    page = owner_client.get(detail_url).content.decode()
    assert _record_url(tenant, closed, anna) in page

    form = owner_client.get(_record_url(tenant, closed, anna))
    assert form.status_code == 200
    assert [f.member.first_name for f in form.context["formset"].forms] == ["Anna", "Lisa"]

    asked = owner_client.post(_record_url(tenant, closed, anna), household_post(row("yes", 2), row("no")))
    assert asked.status_code == 409 and "We expected 1 but you said 2. Are you sure?" in asked.content.decode()

    response = owner_client.post(
        _record_url(tenant, closed, anna), household_post(row("yes", 2), row("no"), confirmed=True)
    )

    assert response.status_code == 302 and response["Location"] == detail_url
    assert _answers(anna, lisa) == {"Anna": (COMING, 2, "organizer"), "Lisa": (DECLINED, 0, "self")}
    page = owner_client.get(detail_url).content.decode()
    assert f"Recorded by {owner.email} (organizer)" in page
    history = page.split('data-testid="answer-history"', 1)[1].split("</ul>", 1)[0]
    assert "Coming, 2 people" in history and f"by {owner.email} (organizer)" in history
    lisa_page = owner_client.get(
        reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": closed.pk, "guest_id": lisa.pk})
    ).content.decode()
    assert "Not coming" in lisa_page.split('data-testid="answer-history"', 1)[1] and "by the guest" in lisa_page


def test_the_page_asks_before_switching_a_guests_own_decline(owner_client, tenant, closed, household):
    anna, lisa = household
    rsvp_submit(guest=_fresh(lisa), answer=HouseholdAnswer(attending=False), now=timezone.now() - dt.timedelta(days=3))
    url = _record_url(tenant, closed, anna)

    asked = owner_client.post(url, household_post(row("yes", 1), row("yes", 1)))

    assert asked.status_code == 409
    assert "Lisa answered “not coming”. Is Lisa coming after all?" in asked.content.decode()
    assert _answers(lisa)["Lisa"] == (DECLINED, 0, "self")
    assert owner_client.post(url, household_post(row("yes", 1), row("yes", 1), confirmed=True)).status_code == 302
    assert _answers(lisa)["Lisa"] == (COMING, 1, "organizer")


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_viewers_and_door_staff_cannot_record(member_client, tenant, closed, household, role):
    anna, lisa = household
    client = member_client(role)

    page = client.get(
        reverse("guests:detail", kwargs={"tenant_slug": tenant.slug, "event_id": closed.pk, "guest_id": anna.pk})
    )
    response = client.post(_record_url(tenant, closed, anna), household_post(row("no"), row("no")))

    assert _record_url(tenant, closed, anna) not in page.content.decode()
    assert response.status_code == 403
    assert _answers(anna, lisa) == {"Anna": (PENDING, 0, ""), "Lisa": (PENDING, 0, "")}


# --- the API -------------------------------------------------------------------------------------------


def test_the_api_takes_the_same_bodies_after_the_deadline(household, closed, owner):
    anna, lisa = household
    api = organizer_client(owner)

    one_number = api.put(_api_url(anna), {"attending": True, "num_guests": 1, "absent": [str(lisa.pk)]}, format="json")

    assert one_number.status_code == 200, one_number.content
    body = one_number.json()
    assert (body["guest"]["status"], body["guest"]["answered_by"], body["head_count"]) == ("coming", "organizer", 1)
    assert body["members"][0]["status"] == "declined"

    per_member = api.put(
        _api_url(anna),
        {"members": [{"id": str(lisa.pk), "attending": True, "num_guests": 2, "dietary": "Vegan"}]},
        format="json",
    )

    # Lisa's decline was recorded for her: changing it, and her larger number, are confirmed first.
    assert per_member.status_code == 409
    assert per_member.json()["reasons"] == ["overrides_decline", "more_than_expected"]
    confirmed = api.put(
        _api_url(anna),
        {"members": [{"id": str(lisa.pk), "attending": True, "num_guests": 2, "dietary": "Vegan"}], "confirmed": True},
        format="json",
    )
    assert confirmed.status_code == 200, confirmed.content
    assert _answers(anna, lisa) == {"Anna": (COMING, 1, "organizer"), "Lisa": (COMING, 2, "organizer")}
    assert Guest.objects.get(pk=lisa.pk).dietary == "Vegan"


def test_the_api_refuses_fewer_without_anyone_named(household, closed, owner):
    anna, lisa = household

    response = organizer_client(owner).put(
        _api_url(anna), {"attending": True, "num_guests": 1, "confirmed": True}, format="json"
    )

    assert response.status_code == 409
    assert (response.json()["reason"], response.json()["confirmable"]) == ("fewer_than_expected", False)
    assert _answers(anna, lisa) == {"Anna": (PENDING, 0, ""), "Lisa": (PENDING, 0, "")}


@pytest.mark.parametrize("role", [Role.VIEWER, Role.DOOR])
def test_the_api_refuses_viewers_and_door_staff(household, tenant, role):
    anna, _lisa = household
    api = organizer_client(MembershipFactory(tenant=tenant, role=role).user)

    response = api.put(_api_url(anna), {"attending": False}, format="json")

    assert response.status_code == 403
    assert _answers(anna)["Anna"] == (PENDING, 0, "")


def test_the_api_answers_another_organizations_guest_with_404(household):
    anna, _lisa = household
    stranger = MembershipFactory(role=Role.OWNER).user

    response = organizer_client(stranger).put(_api_url(anna), {"attending": False}, format="json")

    assert response.status_code == 404
    assert _answers(anna)["Anna"] == (PENDING, 0, "")


def test_the_api_scopes_the_guest_by_event(household, tenant, owner):
    anna, _lisa = household
    other_event = EventFactory(tenant=tenant)

    response = organizer_client(owner).put(
        f"/api/v1/events/{other_event.pk}/guests/{anna.pk}/rsvp", {"attending": False}, format="json"
    )

    assert response.status_code == 404
    assert _answers(anna)["Anna"] == (PENDING, 0, "")


def test_a_guest_token_cannot_record_for_others(client, household):
    anna, lisa = household
    token = client.post(
        "/api/v1/auth/guest-login", {"code": anna.code, "last_name": "Müller"}, content_type="application/json"
    ).json()["access"]

    response = client.put(
        _api_url(lisa), {"attending": False}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )

    assert response.status_code == 403
    assert _answers(lisa)["Lisa"] == (PENDING, 0, "")

"""After the deadline a guest asks the organizer to change their answer; the organizer decides once."""

import datetime as dt
import threading

import pytest
from django.core import mail
from django.core.exceptions import ValidationError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from events.models import Event
from eventsaas.models import AuditLog
from guests.models import Guest, GuestMessage
from guests.services import guest_group_leave
from rsvp.models import ChangeRequest
from rsvp.services import (
    ChangeRequestAlreadyDecided,
    ChangeRequestNotNeeded,
    HouseholdAnswer,
    MemberChoice,
    change_request_approve,
    change_request_create,
    change_request_decline,
    rsvp_submit,
)
from tenants.models import Role, Tenant
from tests.api.organizer_fixtures import organizer_client
from tests.factories import MembershipFactory, UserFactory
from tests.rsvp.household_form import household_post, row
from tests.support.backends import statements

COMING, DECLINED, PENDING = Guest.Status.COMING, Guest.Status.DECLINED, Guest.Status.PENDING


def _fresh(guest):
    return Guest.objects.select_related("event", "tenant").get(pk=guest.pk)


def _answers(*guests):
    rows = Guest.objects.filter(pk__in=[g.pk for g in guests])
    return {g.first_name: (g.status, g.num_guests, g.answered_by_kind) for g in rows}


@pytest.fixture
def anna_lisa(household, event, django_capture_on_commit_callbacks):
    """Both coming (answered by Anna before the deadline); then the deadline passed."""
    anna, lisa = household
    Guest.objects.filter(pk=anna.pk).update(email="anna@example.com")
    # Anna's confirmation email is sent on every backend (on MongoDB on_commit runs at once anyway),
    # then left out: these tests look at what deciding a change request sends.
    with django_capture_on_commit_callbacks(execute=True):
        rsvp_submit(
            guest=_fresh(anna),
            answer=HouseholdAnswer(attending=True, num_guests=2),
            now=timezone.now() - dt.timedelta(days=2),
        )
    mail.outbox.clear()
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(days=1))
    return _fresh(anna), _fresh(lisa)


def _decision_messages():
    return list(GuestMessage.objects.exclude(kind=GuestMessage.Kind.CONFIRMATION).values_list("kind", flat=True))


def _lisa_absent(anna, lisa):
    return HouseholdAnswer(attending=True, num_guests=1, absent=(lisa.pk,))


# --- asking ----------------------------------------------------------------------------------------


def test_a_guest_asks_after_the_deadline_and_nothing_changes_yet(anna_lisa):
    anna, lisa = anna_lisa

    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="  Lisa is ill.  ")

    assert (request.status, request.message, request.tenant_id, request.event_id) == (
        "pending",
        "Lisa is ill.",
        anna.tenant_id,
        anna.event_id,
    )
    assert request.proposed == {"attending": True, "num_guests": 1, "absent": [str(lisa.pk)]}
    assert _answers(anna, lisa) == {"Anna": (COMING, 1, "self"), "Lisa": (COMING, 1, "household")}
    assert AuditLog.objects.filter(action="rsvp.change_requested", actor_guest_id=anna.pk).count() == 1


def test_asking_again_replaces_the_open_request(anna_lisa):
    anna, lisa = anna_lisa
    first = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="first")

    second = change_request_create(guest=anna, answer=HouseholdAnswer(attending=False), message="second")

    assert second.pk == first.pk
    assert ChangeRequest.objects.get().message == "second"
    assert ChangeRequest.objects.get().proposed["attending"] is False


def test_the_guest_is_flagged_once_when_asking_and_the_flag_follows_a_new_ask(anna_lisa):
    """The flag lets the guest's page skip the lookup for guests who never asked; a new request sets it once."""
    anna, lisa = anna_lisa
    assert anna.change_requested_at is None

    with CaptureQueriesContext(connection) as first_ask:
        first = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="first")

    assert len(statements(first_ask, "UPDATE", "guests_guest")) == 1
    assert _fresh(anna).change_requested_at == first.created_at == anna.change_requested_at
    later = first.created_at + dt.timedelta(minutes=5)
    second = change_request_create(guest=anna, answer=HouseholdAnswer(attending=False), message="again", now=later)
    assert second.pk == first.pk
    assert _fresh(anna).change_requested_at == later == anna.change_requested_at


def test_a_decided_request_leaves_room_for_a_new_one(anna_lisa, owner):
    anna, lisa = anna_lisa
    first = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="")
    change_request_decline(request=first, acting_user=owner)

    second = change_request_create(guest=anna, answer=HouseholdAnswer(attending=False), message="")

    assert second.pk != first.pk
    assert ChangeRequest.objects.filter(status="pending").count() == 1


@pytest.mark.parametrize("state", ["open", "draft"])
def test_no_request_while_answers_are_open_or_not_open_yet(household, event, state):
    anna, _lisa = household
    if state == "draft":
        Event.objects.filter(pk=event.pk).update(status=Event.Status.DRAFT)

    with pytest.raises(ChangeRequestNotNeeded):
        change_request_create(guest=_fresh(anna), answer=HouseholdAnswer(attending=False), message="")

    assert not ChangeRequest.objects.exists()


def test_a_proposal_that_does_not_fit_the_household_is_refused(anna_lisa):
    anna, lisa = anna_lisa

    with pytest.raises(ValidationError):
        change_request_create(guest=anna, answer=HouseholdAnswer(members=(MemberChoice(anna.pk, True, 0),)), message="")

    assert not ChangeRequest.objects.exists()


def test_asking_for_the_answer_already_given_is_refused(anna_lisa):
    """Both are coming: asking that both come would put a request on the dashboard that changes nothing."""
    anna, _lisa = anna_lisa

    with pytest.raises(ValidationError) as refused:
        change_request_create(guest=anna, answer=HouseholdAnswer(attending=True, num_guests=2), message="")

    assert refused.value.error_list[0].code == "unchanged"
    assert not ChangeRequest.objects.exists()
    assert not AuditLog.objects.filter(action="rsvp.change_requested").exists()


def test_with_a_request_open_the_answer_already_given_replaces_it(anna_lisa):
    """A change of mind ("keep our answer after all") reaches the organizer instead of the old request."""
    anna, lisa = anna_lisa
    first = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="Lisa is ill.")

    second = change_request_create(guest=anna, answer=HouseholdAnswer(attending=True, num_guests=2), message="Better.")

    assert second.pk == first.pk
    assert ChangeRequest.objects.get().proposed["num_guests"] == 2


def test_the_guest_page_says_when_the_request_would_change_nothing(client, anna_lisa):
    anna, _lisa = anna_lisa
    _guest_login(client, anna)

    response = client.post("/rsvp/change-request/", household_post(row("yes", 1), row("yes", 1), message="Hi"))

    assert response.status_code == 400
    assert "This is your answer already" in response.content.decode()
    assert not ChangeRequest.objects.exists()


def test_the_guest_api_says_when_the_request_would_change_nothing(client, anna_lisa):
    anna, _lisa = anna_lisa

    response = client.post(
        "/api/v1/rsvp/change-request",
        {"answer": {"attending": True, "num_guests": 2}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {_guest_token(client, anna)}",
    )

    assert response.status_code == 400, response.content
    assert "This is your answer already" in str(response.json()["errors"]["answer"])
    assert not ChangeRequest.objects.exists()


# --- deciding --------------------------------------------------------------------------------------


def test_approving_applies_the_answer_as_the_organizer_and_emails_the_guest(
    anna_lisa, owner, django_capture_on_commit_callbacks
):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="Lisa is ill.")

    with django_capture_on_commit_callbacks(execute=True):
        change_request_approve(request=request, acting_user=owner, response="Get well soon!")

    request.refresh_from_db()
    assert (request.status, request.decided_by_user_id, request.response) == ("approved", owner.pk, "Get well soon!")
    assert request.decided_at is not None
    # Only what changes is stamped with the organizer: Anna's own answer stays hers.
    assert _answers(anna, lisa) == {"Anna": (COMING, 1, "self"), "Lisa": (DECLINED, 0, "organizer")}
    applied = AuditLog.objects.get(action="rsvp.declined", object_id=lisa.pk)
    assert (applied.actor_user_id, applied.data["via"]) == (owner.pk, "change_request")
    assert AuditLog.objects.filter(action="rsvp.change_approved", actor_user=owner).count() == 1
    [message] = mail.outbox
    assert message.to == ["anna@example.com"]
    assert "approved your change" in message.subject
    assert "Lisa Müller: Declined" in message.body and "Get well soon!" in message.body
    assert _decision_messages() == [GuestMessage.Kind.CHANGE_APPROVED]


def test_declining_keeps_the_answer_and_emails_the_guest(anna_lisa, owner, django_capture_on_commit_callbacks):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="")
    before = _answers(anna, lisa)

    with django_capture_on_commit_callbacks(execute=True):
        change_request_decline(request=request, acting_user=owner, response="The caterer has the numbers.")

    assert ChangeRequest.objects.get().status == "declined"
    assert _answers(anna, lisa) == before
    [message] = mail.outbox
    assert "did not change it" in message.subject and "The caterer has the numbers." in message.body
    assert _decision_messages() == [GuestMessage.Kind.CHANGE_DECLINED]


def test_a_request_is_decided_once(anna_lisa, owner, admin_user_of_tenant):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="")
    stale = ChangeRequest.objects.get(pk=request.pk)  # the second organizer opened it at the same time

    change_request_approve(request=request, acting_user=owner)
    with pytest.raises(ChangeRequestAlreadyDecided):
        change_request_decline(request=stale, acting_user=admin_user_of_tenant)
    with pytest.raises(ChangeRequestAlreadyDecided):
        change_request_approve(request=stale, acting_user=admin_user_of_tenant)

    request.refresh_from_db()
    assert (request.status, request.decided_by_user_id) == ("approved", owner.pk)
    assert AuditLog.objects.filter(action__in=["rsvp.change_approved", "rsvp.change_declined"]).count() == 1
    assert AuditLog.objects.filter(action="rsvp.declined", object_id=lisa.pk).count() == 1


@pytest.mark.django_db(transaction=True)
def test_two_organizers_deciding_at_once_decide_once(household, event, owner, admin_user_of_tenant):
    """Real parallel connections: approve and decline race; exactly one wins (the status compare-and-set)."""
    if connection.vendor == "sqlite":
        pytest.skip("SQLite serialises writers; the race is shown on PostgreSQL")
    anna, lisa = household
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(days=1))
    request = change_request_create(guest=_fresh(anna), answer=HouseholdAnswer(attending=False), message="")
    barrier = threading.Barrier(2)
    outcomes = []

    def decide(decision, user):
        try:
            copy = ChangeRequest.objects.select_related("guest", "guest__event", "guest__tenant").get(pk=request.pk)
            barrier.wait()
            decision(request=copy, acting_user=user)
            outcomes.append("decided")
        except ChangeRequestAlreadyDecided:
            outcomes.append("already")
        finally:
            connection.close()

    threads = [
        threading.Thread(target=decide, args=(change_request_approve, owner)),
        threading.Thread(target=decide, args=(change_request_decline, admin_user_of_tenant)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert sorted(outcomes) == ["already", "decided"]
    assert AuditLog.objects.filter(action__in=["rsvp.change_approved", "rsvp.change_declined"]).count() == 1


def test_approving_what_no_longer_fits_keeps_the_request_pending(anna_lisa, owner):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="")
    guest_group_leave(guest=lisa, acting_user=owner)  # Lisa is no longer in Anna's household

    with pytest.raises(ValidationError):
        change_request_approve(request=request, acting_user=owner)

    assert ChangeRequest.objects.get().status == "pending"
    assert _answers(anna)["Anna"] == (COMING, 1, "self")


def test_a_guest_without_email_is_decided_without_a_message(
    household, event, owner, django_capture_on_commit_callbacks
):
    anna, _lisa = household
    Event.objects.filter(pk=event.pk).update(rsvp_deadline=timezone.now() - dt.timedelta(days=1))
    request = change_request_create(guest=_fresh(anna), answer=HouseholdAnswer(attending=False), message="")

    with django_capture_on_commit_callbacks(execute=True):
        change_request_approve(request=request, acting_user=owner)

    assert mail.outbox == [] and _decision_messages() == []
    assert _answers(anna)["Anna"] == (DECLINED, 0, "organizer")


# --- the pages -------------------------------------------------------------------------------------


def _guest_login(client, guest):
    assert client.post("/rsvp/", {"code": guest.code, "last_name": guest.last_name}).status_code == 302


def test_the_guest_asks_from_their_page_and_sees_it_pending(client, anna_lisa):
    anna, lisa = anna_lisa
    _guest_login(client, anna)

    response = client.post(
        "/rsvp/change-request/", household_post(row("yes", 1), row("no"), message="Lisa has the flu.")
    )

    assert response.status_code == 302 and response["Location"] == "/rsvp/answer/"
    request = ChangeRequest.objects.get()
    assert request.proposed["members"][1] == {
        "id": str(lisa.pk),
        "attending": False,
        "num_guests": 0,
        "dietary": "",
        "answers": {},
    }
    page = client.get("/rsvp/answer/").content.decode()
    assert "Your request is with the organizer." in page
    assert 'data-testid="change-request-status" data-status="pending"' in page
    assert _answers(lisa)["Lisa"] == (COMING, 1, "household")


def test_the_guest_cannot_ask_while_answers_are_open(client, household):
    anna, _lisa = household
    _guest_login(client, anna)

    response = client.post("/rsvp/change-request/", household_post(row("no"), row("later")))

    assert response.status_code == 302
    assert not ChangeRequest.objects.exists()


def test_the_dashboard_lists_pending_requests_and_the_organizer_decides(owner_client, tenant, event, anna_lisa, owner):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="Lisa has the flu.")
    dashboard = owner_client.get(reverse("events:dashboard", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk}))
    detail_url = reverse(
        "rsvp_organizer:change_request",
        kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "request_id": request.pk},
    )

    page = dashboard.content.decode()
    assert "1 guest asks to change their answer" in page and detail_url in page and "Lisa has the flu." in page

    detail = owner_client.get(detail_url)
    preview = detail.content.decode().split('data-testid="request-preview"', 1)[1].split("</table>", 1)[0]
    assert "Lisa Müller" in preview and "Declined" in preview

    response = owner_client.post(detail_url, {"decision": "approve", "response": "Get well!"})

    assert response.status_code == 302
    assert ChangeRequest.objects.get().status == "approved"
    assert _answers(lisa)["Lisa"] == (DECLINED, 0, "organizer")
    again = owner_client.post(detail_url, {"decision": "decline"})
    assert again.status_code == 409 and ChangeRequest.objects.get().status == "approved"
    assert (
        "asks to change"
        not in owner_client.get(
            reverse("events:dashboard", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})
        ).content.decode()
    )


def test_the_page_of_a_request_that_no_longer_fits_says_why_and_approving_changes_nothing(
    owner_client, tenant, event, anna_lisa, owner
):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="")
    guest_group_leave(guest=lisa, acting_user=owner)  # Lisa is no longer in Anna's household
    detail_url = reverse(
        "rsvp_organizer:change_request",
        kwargs={"tenant_slug": tenant.slug, "event_id": event.pk, "request_id": request.pk},
    )

    detail = owner_client.get(detail_url)
    assert detail.status_code == 200
    assert detail.context["preview_error"] and detail.context["preview_error"] in detail.content.decode()

    response = owner_client.post(detail_url, {"decision": "approve"})
    assert response.status_code == 400
    assert response.context["problem"] and response.context["problem"] in response.content.decode()
    assert ChangeRequest.objects.get().status == "pending"
    assert _answers(anna)["Anna"] == (COMING, 1, "self")

    assert owner_client.put(detail_url).status_code == 405


def test_the_request_list_filters_by_status(owner_client, tenant, event, anna_lisa, owner):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="")
    url = reverse("rsvp_organizer:change_requests", kwargs={"tenant_slug": tenant.slug, "event_id": event.pk})

    assert [r.pk for r in owner_client.get(url).context["page"]] == [request.pk]
    change_request_decline(request=request, acting_user=owner)
    assert list(owner_client.get(url).context["page"]) == []
    assert [r.pk for r in owner_client.get(url, {"status": "declined"}).context["page"]] == [request.pk]
    assert [r.pk for r in owner_client.get(url, {"status": "all"}).context["page"]] == [request.pk]


# --- the API -----------------------------------------------------------------------------------------


def _guest_token(client, guest):
    return client.post(
        "/api/v1/auth/guest-login", {"code": guest.code, "last_name": guest.last_name}, content_type="application/json"
    ).json()["access"]


def test_the_guest_api_asks_and_reads_the_request(client, anna_lisa):
    anna, lisa = anna_lisa
    headers = {"HTTP_AUTHORIZATION": f"Bearer {_guest_token(client, anna)}"}

    response = client.post(
        "/api/v1/rsvp/change-request",
        {"answer": {"members": [{"id": str(lisa.pk), "attending": False}]}, "message": "Flu"},
        content_type="application/json",
        **headers,
    )

    assert response.status_code == 201, response.content
    assert (response.json()["status"], response.json()["message"]) == ("pending", "Flu")
    invitation = client.get("/api/v1/rsvp", **headers).json()
    assert invitation["rsvp_state"] == "closed" and invitation["rsvp_open"] is False
    assert invitation["change_request"]["id"] == response.json()["id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"answer": {"attending": True, "num_guests": 1}}, "answer"),  # fewer, nobody named
        ({"answer": {"members": [{"id": "not-a-uuid", "attending": True}]}}, "answer"),
        ({"answer": {"attending": True, "num_guests": 2}, "colour": "red"}, "colour"),
        ({"message": "no answer"}, "answer"),
        ({"answer": {"attending": False}, "message": "x" * 1001}, "message"),
    ],
)
def test_the_guest_api_refuses_bad_requests(client, anna_lisa, body, field):
    anna, _lisa = anna_lisa

    response = client.post(
        "/api/v1/rsvp/change-request",
        body,
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {_guest_token(client, anna)}",
    )

    assert response.status_code == 400, response.content
    assert field in response.json()["errors"]
    assert not ChangeRequest.objects.exists()


def test_the_guest_api_says_to_answer_directly_while_open(client, household):
    anna, _lisa = household

    response = client.post(
        "/api/v1/rsvp/change-request",
        {"answer": {"attending": False}},
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {_guest_token(client, anna)}",
    )

    assert response.status_code == 409 and response.json()["code"] == "rsvp_open"


def test_the_organizer_api_lists_approves_and_declines_once(anna_lisa, owner, event):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="Flu")
    api = organizer_client(owner)

    listed = api.get(f"/api/v1/events/{event.pk}/change-requests")
    assert listed.status_code == 200
    [item] = listed.json()["results"]
    assert (item["id"], item["guest"]["id"], item["message"]) == (str(request.pk), str(anna.pk), "Flu")

    approved = api.post(
        f"/api/v1/events/{event.pk}/change-requests/{request.pk}/approve", {"response": "OK"}, format="json"
    )
    assert approved.status_code == 200, approved.content
    assert (approved.json()["status"], approved.json()["decided_by_user_id"]) == ("approved", str(owner.pk))
    assert _answers(lisa)["Lisa"] == (DECLINED, 0, "organizer")

    again = api.post(f"/api/v1/events/{event.pk}/change-requests/{request.pk}/decline", {}, format="json")
    assert again.status_code == 409 and again.json()["code"] == "already_decided"
    assert api.get(f"/api/v1/events/{event.pk}/change-requests").json()["results"] == []
    assert len(api.get(f"/api/v1/events/{event.pk}/change-requests", {"status": "approved"}).json()["results"]) == 1


@pytest.fixture
def admin_user_of_tenant(tenant):
    return MembershipFactory(tenant=tenant, role=Role.ADMIN).user


def test_staff_see_requests_in_the_admin_read_only(client, anna_lisa):
    anna, lisa = anna_lisa
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="Flu")
    client.force_login(UserFactory(is_staff=True, is_superuser=True))

    changelist = client.get(reverse("admin:rsvp_changerequest_changelist"), {"q": "muller"})
    change = client.get(reverse("admin:rsvp_changerequest_change", args=[request.pk]))

    assert changelist.status_code == 200 and changelist.context["cl"].result_count == 1
    assert change.status_code == 200 and 'name="status"' not in change.content.decode()


def test_an_unverified_organization_decides_without_emailing(
    anna_lisa, owner, tenant, django_capture_on_commit_callbacks
):
    anna, lisa = anna_lisa
    Tenant.objects.filter(pk=tenant.pk).update(verified_at=None)
    request = change_request_create(guest=anna, answer=_lisa_absent(anna, lisa), message="")

    with django_capture_on_commit_callbacks(execute=True):
        change_request_approve(request=request, acting_user=owner)

    assert mail.outbox == [] and _decision_messages() == []
    assert ChangeRequest.objects.get().status == "approved"

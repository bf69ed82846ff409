"""Tenant isolation: every organizer URL against every kind of visitor.

Tenant A ("acme") has an event with three guests (Anna and Lisa share a group,
Carl is alone). Tenant B ("rival") has its own event and guest. For each URL
and each actor the matrix asserts the status code and, for every refused
request (and every GET), that the database is exactly as it was: guest and
event rows field by field, memberships, invitations and the audit log.
Allowed writes must change the database and leave an audit entry, which also
proves the snapshot would notice a leak.
"""

import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import unquote

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from billing.models import ConnectedAccount, LedgerEntry, Order, WebhookEvent
from events.models import Event
from eventsaas.models import AuditLog
from guests.imports import guest_import_start
from guests.models import Guest, GuestImport
from rsvp.models import ChangeRequest
from tenants.models import Invitation, Membership, Role, Tenant
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory, connected_account_for
from tests.rsvp.household_form import household_post, row
from tests.support.spreadsheets import download_text

ANONYMOUS = "anonymous"
OTHER_TENANT = "other_tenant_member"
OTHER_TENANT_OWN_SLUG = "other_tenant_member_own_slug"
VIEWER = "viewer"
DOOR = "door"  # door staff: read, and check tickets in (ticketed events only)
ADMIN = "admin"
OWNER = "owner"
ACTORS = [ANONYMOUS, OTHER_TENANT, OTHER_TENANT_OWN_SLUG, VIEWER, DOOR, ADMIN, OWNER]


@dataclass
class World:
    tenant: Tenant
    event: Event
    anna: Guest
    lisa: Guest
    carl: Guest
    change_request: ChangeRequest  # Anna's, pending
    other_tenant: Tenant
    other_event: Event
    other_guest: Guest
    teammate: Membership  # A's door staff: the team page's role and removal forms act on it
    invitation: Invitation  # A's pending invitation: the team page withdraws or resends it
    guest_import: GuestImport | None = None  # A's upload of one new guest, checked and ready to confirm


EVENT_FORM = {
    "name": "Renamed party",
    "description": "",
    "status": Event.Status.PUBLISHED,
    "starts_at": "2031-06-01T18:00",
    "ends_at": "",
    "timezone": "Europe/Madrid",
    "location": "Barn",
    "dress_code": "",
    "rsvp_deadline": "",
    "language": "en",
    "contact_email": "",
    "questions_text": "",
}
PARTY_EXPORT = (
    b'[{"_id": {"$oid": "65a1f0c2e4b0a1b2c3d4e501"}, "firstName": "Zoe", "lastName": "Zed", "token": "zz1234"}]'
)
GUEST_FORM = {
    "first_name": "Zoe",
    "last_name": "Zed",
    "email": "",
    "phone": "",
    "expected_guests": "2",
    "dietary": "",
}


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    # Path under /o/<slug>/ built from the world's ids, or None for the tenant root.
    path: str
    data: object = None  # dict, or a function of the world returning one
    has_ids: bool = True  # carries tenant A's event/guest ids (so the own-slug variant applies)
    owner_only: bool = False  # admins are refused too
    writes: bool = True  # an allowed POST changes the database (a preview does not)
    ok_status: int | None = None  # what an allowed request answers, when not 200 (GET) / 302 (POST)
    any_member: bool = False  # every member may (leaving); the matrix's owner is the last one and stays
    editors_only: bool = False  # viewers and door staff cannot even read it (the organization's payments)
    audited: bool = True  # an allowed write leaves an audit entry (a stored webhook event is its own record)

    def url(self, world: World, slug: str) -> str:
        ids = {
            "event": world.event.pk,
            "anna": world.anna.pk,
            "carl": world.carl.pk,
            "teammate": world.teammate.pk,
            "request": world.change_request.pk,
            "import": world.guest_import.pk if world.guest_import else None,
            "csv": "csv",
            "xlsx": "xlsx",
            "invitation": world.invitation.pk,
            "what": "events",
            "months": "months",
        }
        return f"/o/{slug}/" + self.path.format(**ids)

    def payload(self, world: World) -> dict:
        if callable(self.data):
            return self.data(world)
        return dict(self.data or {})


CASES = [
    Case("events_list", "GET", "", has_ids=False),
    Case("event_create", "GET", "events/new/", has_ids=False),
    Case("event_create", "POST", "events/new/", EVENT_FORM, has_ids=False),
    Case("event_dashboard", "GET", "events/{event}/"),
    Case("event_edit", "GET", "events/{event}/edit/"),
    Case("event_edit", "POST", "events/{event}/edit/", EVENT_FORM),
    Case("event_archive", "POST", "events/{event}/archive/"),
    Case("guest_list", "GET", "events/{event}/guests/"),
    Case("guest_create", "GET", "events/{event}/guests/new/"),
    Case("guest_create", "POST", "events/{event}/guests/new/", GUEST_FORM),
    Case("guest_detail", "GET", "events/{event}/guests/{anna}/"),
    Case("guest_detail", "POST", "events/{event}/guests/{anna}/", GUEST_FORM),
    Case("guest_delete", "GET", "events/{event}/guests/{anna}/delete/"),
    Case("guest_delete", "POST", "events/{event}/guests/{anna}/delete/"),
    Case("guest_regenerate_code", "POST", "events/{event}/guests/{anna}/regenerate-code/"),
    Case("guest_leave_group", "POST", "events/{event}/guests/{anna}/leave-group/"),
    Case(
        "guest_group_connect",
        "POST",
        "events/{event}/guests/group/",
        lambda w: {"guests": [str(w.carl.pk), str(w.anna.pk)]},
    ),
    Case("dietary_report", "GET", "events/{event}/dietary/"),
    Case("question_report", "GET", "events/{event}/questions/"),
    # Downloads: the matrix reads the file (tests/support/spreadsheets.py) for another tenant's data.
    Case("guest_export", "GET", "events/{event}/guests/export/{csv}/"),
    Case("guest_export", "GET", "events/{event}/guests/export/{xlsx}/"),
    Case("dietary_export", "GET", "events/{event}/dietary/export/{xlsx}/"),
    Case("question_export", "GET", "events/{event}/questions/export/{csv}/"),
    Case("guest_answer_record", "GET", "events/{event}/guests/{anna}/answer/"),
    Case(
        "guest_answer_record",
        "POST",
        "events/{event}/guests/{anna}/answer/",
        household_post(row("no"), row("later")),
    ),
    Case("change_request_list", "GET", "events/{event}/change-requests/"),
    Case("change_request_detail", "GET", "events/{event}/change-requests/{request}/"),
    Case("change_request_decide", "POST", "events/{event}/change-requests/{request}/", {"decision": "decline"}),
    Case("activity", "GET", "events/{event}/activity/"),
    Case("messages", "GET", "events/{event}/messages/"),
    Case("guest_invite", "POST", "events/{event}/guests/{anna}/invite/"),
    Case("guest_invite_many", "POST", "events/{event}/guests/invite/", {"not_yet_invited": "1"}),
    Case("guest_import", "GET", "events/{event}/guests/import/"),
    Case(
        "guest_import",
        "POST",
        "events/{event}/guests/import/",
        lambda w: {"file": SimpleUploadedFile("guests.csv", b"first_name,last_name\nZoe,Zed\n")},
    ),
    Case("guest_import_detail", "GET", "events/{event}/guests/import/{import}/"),
    Case("guest_import_status", "GET", "events/{event}/guests/import/{import}/status/"),
    Case("guest_import_errors", "GET", "events/{event}/guests/import/{import}/errors.csv"),
    Case("guest_import_confirm", "POST", "events/{event}/guests/import/{import}/confirm/"),
    Case("party_import", "GET", "events/{event}/guests/import/party/"),
    Case(
        "party_import_preview",
        "POST",
        "events/{event}/guests/import/party/",
        lambda w: {"file": SimpleUploadedFile("guests.json", PARTY_EXPORT, "application/json")},
        writes=False,
        ok_status=200,
    ),
    # Without a preview in the session there is nothing to confirm: back to the form.
    Case("party_import_confirm", "POST", "events/{event}/guests/import/party/confirm/", {"token": "x"}, writes=False),
    Case("party_import_mapping", "GET", "events/{event}/guests/import/party/mapping/", ok_status=302),
    Case("team", "GET", "team/", has_ids=False),
    Case("team", "POST", "team/", {"email": "newbie@example.com", "role": Role.VIEWER}, has_ids=False, owner_only=True),
    Case(
        "team_member_role",
        "POST",
        "team/{teammate}/role/",
        lambda w: {f"{w.teammate.pk}-role": Role.VIEWER},
        owner_only=True,
    ),
    Case("team_member_remove", "POST", "team/{teammate}/remove/", owner_only=True),
    Case("team_invitation_revoke", "POST", "team/invitations/{invitation}/revoke/", owner_only=True),
    Case("team_invitation_resend", "POST", "team/invitations/{invitation}/resend/", owner_only=True),
    Case("team_leave", "POST", "team/leave/", has_ids=False, any_member=True),
    # The organization's Stripe account (billing/organizer_views.py): owners and admins only.
    Case("payments", "GET", "payments/", has_ids=False, editors_only=True),
    Case("connect_onboarding", "POST", "payments/onboarding/", has_ids=False, ok_status=303),
    # Refresh makes a new link for the existing (simulated) account: the simulated page, nothing written.
    Case("connect_refresh", "GET", "payments/onboarding/refresh/", has_ids=False, editors_only=True, ok_status=303),
    Case("connect_return", "GET", "payments/onboarding/return/", has_ids=False, editors_only=True, ok_status=302),
    Case("connect_simulated", "GET", "payments/onboarding/simulated/", has_ids=False, editors_only=True),
    Case(
        "connect_simulated",
        "POST",
        "payments/onboarding/simulated/",
        {"action": "complete"},
        has_ids=False,
        audited=False,
    ),
    Case("earnings", "GET", "earnings/", has_ids=False),
    Case("earnings_export", "GET", "earnings/export/{what}/{csv}/", has_ids=False),
    Case("earnings_export", "GET", "earnings/export/{months}/{xlsx}/", has_ids=False),
]


def _matrix():
    for case in CASES:
        for actor in ACTORS:
            if actor == OTHER_TENANT_OWN_SLUG and not case.has_ids:
                continue  # without ids, the actor's own slug is simply their own organization
            yield pytest.param(case, actor, id=f"{case.name}-{case.method}-{actor}")


def db_snapshot() -> dict:
    return {
        "tenants": sorted(Tenant.objects.values_list("id", "name", "slug")),
        "memberships": sorted(Membership.objects.values_list("tenant_id", "user_id", "role")),
        "invitations": sorted(Invitation.objects.values_list("id", "tenant_id", "email", "role")),
        "events": sorted(Event.objects.values(), key=lambda row: row["id"]),
        "guests": sorted(Guest.objects.values(), key=lambda row: row["id"]),
        "change_requests": sorted(ChangeRequest.objects.values(), key=lambda row: row["id"]),
        "guest_imports": sorted(GuestImport.objects.values_list("id", "tenant_id", "status")),
        "audit_log_count": AuditLog.objects.count(),
        "connected_accounts": sorted(ConnectedAccount.objects.values(), key=lambda row: row["id"]),
        "webhook_events": sorted(WebhookEvent.objects.values_list("stripe_event_id", "type", "status")),
    }


@pytest.fixture
def snapshot_guard():
    """`with snapshot_guard(): ...` fails if the block changed the database."""

    @contextmanager
    def guard():
        before = db_snapshot()
        yield
        assert db_snapshot() == before

    return guard


@pytest.fixture
def world(db):
    tenant = TenantFactory(name="Acme", slug="acme")
    event = EventFactory(tenant=tenant, name="Acme summer party")
    group_id = uuid.uuid4()
    anna = GuestFactory(
        event=event, first_name="Anna", last_name="Müller", group_id=group_id, dietary="vegan", email="anna@example.com"
    )
    lisa = GuestFactory(event=event, first_name="Lisa", last_name="Müller", group_id=group_id)
    carl = GuestFactory(event=event, first_name="Carl", last_name="Solo")
    change_request = ChangeRequest.objects.create(
        tenant_id=tenant.pk, event_id=event.pk, guest=anna, proposed={"attending": False}, message="Ill, sorry"
    )
    other_tenant = TenantFactory(name="Rival", slug="rival")
    other_event = EventFactory(tenant=other_tenant, name="Rival gala")
    other_guest = GuestFactory(event=other_event, first_name="Rita", last_name="Rival")
    teammate = MembershipFactory(tenant=tenant, role=Role.DOOR)
    invitation = Invitation.objects.create(
        tenant=tenant, email="pending@example.com", role=Role.VIEWER, token="t" * 40, expires_at=event.starts_at
    )
    # A's simulated Stripe account, mid-onboarding: the Payments pages have something of A's to show or leak.
    simulated = {"is_test": True, "charges_enabled": False, "payouts_enabled": False, "details_submitted": False}
    connected_account_for(tenant, stripe_account_id="acct_localtest_acme", **simulated)
    connected_account_for(other_tenant, stripe_account_id="acct_localtest_rival", is_test=True)
    world = World(
        tenant, event, anna, lisa, carl, change_request, other_tenant, other_event, other_guest, teammate, invitation
    )
    # Money on both sides: tenant B's earnings ("Rival gala") must never show on tenant A's earnings page.
    for event_of in (event, other_event):
        _paid_order_booked(event_of)
    world.guest_import = guest_import_start(
        event=event, file_name="guests.csv", content=b"first_name,last_name\nZoe,Zed\n", acting_user=None
    )
    return world


def _paid_order_booked(event: Event) -> None:
    """A paid order's payment in the ledger, with its platform fee (the earnings pages read the ledger)."""
    order = Order.objects.create(
        tenant_id=event.tenant_id,
        event=event,
        status=Order.Status.PAID,
        buyer_name="Buyer",
        buyer_email="buyer@example.com",
        total=2500,
        currency="eur",
        paid_amount=2500,
        stripe_account_id="acct_isolation",
        application_fee=93,
        expires_at=event.starts_at,
    )
    LedgerEntry.objects.create(
        tenant_id=event.tenant_id,
        event_id=event.pk,
        order=order,
        kind=LedgerEntry.Kind.PAYMENT,
        amount=2500,
        fee=93,
        currency="eur",
        stripe_object_id=f"pi_{order.pk.hex}",
    )


def _client_for(actor: str, world: World) -> Client:
    client = Client()
    if actor == ANONYMOUS:
        return client
    if actor in (OTHER_TENANT, OTHER_TENANT_OWN_SLUG):
        membership = MembershipFactory(tenant=world.other_tenant, role=Role.OWNER)
    else:
        membership = MembershipFactory(
            tenant=world.tenant, role={VIEWER: Role.VIEWER, DOOR: Role.DOOR, ADMIN: Role.ADMIN}.get(actor, Role.OWNER)
        )
    client.force_login(membership.user)
    return client


@pytest.mark.parametrize(("case", "actor"), list(_matrix()))
def test_isolation_matrix(world, case, actor):
    client = _client_for(actor, world)
    slug = world.other_tenant.slug if actor == OTHER_TENANT_OWN_SLUG else world.tenant.slug
    url = case.url(world, slug)
    before = db_snapshot()

    if case.method == "GET":
        response = client.get(url)
    else:
        response = client.post(url, case.payload(world))

    after = db_snapshot()
    if case.any_member:
        allowed_write = case.method == "POST" and actor in (VIEWER, DOOR, ADMIN)
    else:
        allowed_write = case.method == "POST" and (actor == OWNER or (actor == ADMIN and not case.owner_only))

    if actor == ANONYMOUS:
        if case.method == "GET" or response.status_code != 403:
            assert response.status_code == 302, response
            assert response.url.startswith("/login/?next=")
            assert unquote(response.url.split("next=", 1)[1]) == url
    elif actor in (OTHER_TENANT, OTHER_TENANT_OWN_SLUG):
        assert response.status_code == 404
    elif case.editors_only and actor in (VIEWER, DOOR):
        assert response.status_code == 403
    elif case.method == "GET":
        assert response.status_code == (case.ok_status or 200)
        # The page (or the download) is tenant A's: its data, never tenant B's.
        body = download_text(response)
        assert "Rival" not in body and world.other_guest.code not in body and "acct_localtest_rival" not in body
    elif case.any_member:
        assert response.status_code == 302
    elif actor in (VIEWER, DOOR) or not allowed_write:
        assert response.status_code == 403
    else:
        assert response.status_code == (case.ok_status or 302), getattr(
            response, "context", None
        ) and response.context.get("form")

    if allowed_write and case.writes:
        assert after != before
        assert after["audit_log_count"] > before["audit_log_count"] or not case.audited
        # A write in tenant A never touches tenant B.
        assert [g for g in after["guests"] if g["tenant_id"] == world.other_tenant.pk] == [
            g for g in before["guests"] if g["tenant_id"] == world.other_tenant.pk
        ]
        assert [e for e in after["events"] if e["tenant_id"] == world.other_tenant.pk] == [
            e for e in before["events"] if e["tenant_id"] == world.other_tenant.pk
        ]
    else:
        assert after == before


def test_matrix_covers_every_organizer_url():
    """Every URL pattern that carries a tenant slug appears in the matrix with each method it accepts."""
    from django.urls import get_resolver

    organizer_patterns = set()

    def walk(patterns, prefix=""):
        for p in patterns:
            route = prefix + str(p.pattern)
            if hasattr(p, "url_patterns"):
                walk(p.url_patterns, route)
            elif "<slug:tenant_slug>" in route:
                organizer_patterns.add(route)

    walk(get_resolver().url_patterns)
    covered = {
        "o/<slug:tenant_slug>/"
        + c.path.replace("{event}", "<uuid:event_id>")
        .replace("{anna}", "<uuid:guest_id>")
        .replace("{teammate}", "<uuid:membership_id>")
        .replace("{request}", "<uuid:request_id>")
        .replace("{import}", "<uuid:import_id>")
        .replace("{csv}", "<str:file_format>")
        .replace("{xlsx}", "<str:file_format>")
        .replace("{invitation}", "<uuid:invitation_id>")
        .replace("{what}", "<str:what>")
        .replace("{months}", "<str:what>")
        for c in CASES
    }
    # Ticketed events' pages have their own matrix, with a world that sells tickets.
    from tests.billing.test_organizer_pages import TICKETED_ROUTES

    assert organizer_patterns == covered | TICKETED_ROUTES


def test_other_tenant_cannot_group_tenant_a_guests_into_their_own_event(world, snapshot_guard):
    """Tenant B's owner posts A's guest ids to B's own, valid group-connect URL: nothing moves."""
    client = _client_for(OTHER_TENANT, world)
    url = f"/o/{world.other_tenant.slug}/events/{world.other_event.pk}/guests/group/"

    with snapshot_guard():
        response = client.post(url, {"guests": [str(world.other_guest.pk), str(world.anna.pk), str(world.carl.pk)]})

    assert response.status_code == 302
    world.other_guest.refresh_from_db()
    assert world.other_guest.group_id is None


@pytest.mark.parametrize("target", ["detail", "delete", "regenerate-code", "leave-group"])
def test_guest_of_another_event_of_the_same_tenant_is_404_under_the_wrong_event(world, target, snapshot_guard):
    """Guest ids are scoped by event too: another event's URL does not reach them."""
    sibling_event = EventFactory(tenant=world.tenant)
    client = _client_for(OWNER, world)
    suffix = "" if target == "detail" else f"{target}/"
    url = f"/o/{world.tenant.slug}/events/{sibling_event.pk}/guests/{world.anna.pk}/{suffix}"

    with snapshot_guard():
        response = client.post(url, GUEST_FORM)

    assert response.status_code == 404


def test_unknown_organization_and_non_membership_look_the_same(world):
    """A stranger cannot tell an existing organization from a made-up slug."""
    client = _client_for(OTHER_TENANT, world)

    real = client.get(f"/o/{world.tenant.slug}/")
    made_up = client.get("/o/no-such-org/")

    assert real.status_code == made_up.status_code == 404

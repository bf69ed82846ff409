"""Fixtures for the organizer API tests (events and guests).

Not a conftest: tests/api/ is shared, so the modules import what they use:
`from tests.api.organizer_fixtures import ...  # noqa: F401` for fixtures.
"""

import pytest
from rest_framework.test import APIClient

from events.models import Event
from eventsaas.models import AuditLog
from guests.models import Guest
from tenants.models import Membership, Role
from tenants.tokens import guest_access_token, organizer_token_pair
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory


def api_client(token: str | None = None, **defaults) -> APIClient:
    client = APIClient(**defaults)  # e.g. REMOTE_ADDR, for what is counted per client address
    if token:
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token}")
    return client


def organizer_client(user) -> APIClient:
    return api_client(organizer_token_pair(user)["access"])


def db_snapshot() -> dict:
    """Every row an organizer API call could create or change, comparable field by field."""
    return {
        "events": sorted(Event.objects.values(), key=lambda row: row["id"]),
        "guests": sorted(Guest.objects.values(), key=lambda row: row["id"]),
        "memberships": sorted(Membership.objects.values_list("tenant_id", "user_id", "role")),
        "audit_log": sorted(AuditLog.objects.values_list("id", flat=True)),
    }


def errors_of(response) -> dict:
    assert response.status_code == 400, response.content
    assert response.json()["code"] == "invalid", response.json()
    return response.json()["errors"]


@pytest.fixture
def owner_api(owner):
    return organizer_client(owner)


@pytest.fixture
def admin_api(tenant):
    return organizer_client(MembershipFactory(tenant=tenant, role=Role.ADMIN).user)


@pytest.fixture
def viewer_api(tenant):
    return organizer_client(MembershipFactory(tenant=tenant, role=Role.VIEWER).user)


@pytest.fixture
def other_tenant(db):
    return TenantFactory(slug="rival")


@pytest.fixture
def stranger_api(other_tenant):
    """The owner of another organization."""
    return organizer_client(MembershipFactory(tenant=other_tenant, role=Role.OWNER).user)


@pytest.fixture
def other_event(other_tenant):
    return EventFactory(tenant=other_tenant, name="Rival party")


@pytest.fixture
def other_guest(other_event):
    return GuestFactory(event=other_event, first_name="Rita", last_name="Rival")


@pytest.fixture
def guest_api(event):
    """A guest of `event` logged in to the guest API."""
    return api_client(guest_access_token(GuestFactory(event=event, last_name="Invited")))


@pytest.fixture
def snapshot():
    return db_snapshot

import pytest
from django.core.cache import cache

from tenants.models import Role
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory, UserFactory

PASSWORD = "correct horse battery"


@pytest.fixture(autouse=True)
def _clear_cache():
    # Rate-limit counters live in the cache; every test starts with none.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def tenant(db):
    return TenantFactory()


@pytest.fixture
def owner(tenant):
    return MembershipFactory(tenant=tenant, role=Role.OWNER).user


@pytest.fixture
def event(tenant):
    return EventFactory(tenant=tenant)


@pytest.fixture
def member_client(client, tenant):
    """Log in a new member of `tenant` with the given role: member_client("viewer")."""

    def login(role=Role.OWNER, tenant_=None):
        membership = MembershipFactory(tenant=tenant_ or tenant, role=role)
        client.force_login(membership.user)
        return client

    return login


@pytest.fixture
def owner_client(client, owner):
    client.force_login(owner)
    return client


@pytest.fixture
def household(event):
    """Anna and Lisa Müller share a group; each has their own code."""
    import uuid

    group_id = uuid.uuid4()
    anna = GuestFactory(event=event, first_name="Anna", last_name="Müller", group_id=group_id)
    lisa = GuestFactory(event=event, first_name="Lisa", last_name="Müller", group_id=group_id)
    return anna, lisa


__all__ = ["PASSWORD", "UserFactory"]

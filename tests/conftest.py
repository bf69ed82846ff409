import os

import pytest
from django.core.cache import cache, caches
from django.db import connection
from django.utils import translation

from billing.checkout_terms import kept_terms_forget
from events.on_sale_cache import kept_events_forget
from tenants.models import Role
from tests.factories import EventFactory, GuestFactory, MembershipFactory, TenantFactory, UserFactory
from tests.support import mongo_shadow
from tests.support.backends import ON_MONGODB

if ON_MONGODB:
    from tests.support import mongo_flush

    # Before any client exists: its listener must see every write (tests/support/mongo_flush.py).
    mongo_flush.install()

PASSWORD = "correct horse battery"

# `fake_stripe`: the real stripe SDK pointed at a local Stripe API server.
pytest_plugins = ["tests.support.stripe_fixtures"]


# Shadow compilation for MongoDB (docs/mongodb.md): on by default on SQL databases,
# pointless on MongoDB itself (bin/test-mongo), where every query really runs.
MONGO_SHADOW = os.environ.get("MONGO_SHADOW", "1") != "0" and not ON_MONGODB


@pytest.fixture(scope="session", autouse=True)
def _mongodb_shadow_compilation():
    if not MONGO_SHADOW:
        yield
        return
    with mongo_shadow.installed():
        yield


@pytest.fixture(autouse=True)
def _every_query_has_a_mongodb_form():
    """Fail the test that ran a query django-mongodb-backend cannot compile, naming the query."""
    mongo_shadow.take_failures()
    yield
    if failures := mongo_shadow.take_failures():
        pytest.fail(mongo_shadow.report(failures), pytrace=False)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    # Raw SQL is looked for in the test body only; fixtures' flushes are Django's own.
    if not MONGO_SHADOW:
        yield
        return
    with connection.execute_wrapper(mongo_shadow.raw_sql_guard):
        yield


@pytest.fixture(autouse=True)
def _default_language():
    """Each test starts in the default language: LocaleMiddleware leaves a request's language (say an
    `Accept-Language: es` page) active in the thread after the test client returns, and a later test that
    reads a message without a request would get it in Spanish."""
    translation.deactivate()
    yield
    translation.deactivate()


@pytest.fixture(autouse=True)
def _clear_cache():
    # Rate-limit counters live in the cache; every test starts with none, and with no page or event kept.
    cache.clear()
    caches["pages"].clear()
    kept_events_forget()
    kept_terms_forget()
    yield
    cache.clear()
    caches["pages"].clear()
    kept_events_forget()
    kept_terms_forget()


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

"""With Redis as the cache (production), login lockouts and token revocations are seen by every web process."""

import pytest
from axes.handlers.proxy import AxesProxyHandler
from django.core.cache import caches
from django.test import override_settings

from tenants.models import Membership, Role
from tenants.services import membership_remove
from tests.conftest import PASSWORD
from tests.factories import EventFactory, MembershipFactory, TenantFactory, UserFactory

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


@pytest.fixture
def redis_cache(redis_client, redis_url):
    with override_settings(CACHES={"default": {"BACKEND": "eventsaas.cache.RedisCache", "LOCATION": redis_url}}):
        AxesProxyHandler.get_implementation(force=True)  # django-axes memoizes the cache it was built with
        yield redis_client
    AxesProxyHandler.implementation = None


def a_new_process():
    """What another web process has: its own cache connection and its own django-axes handler."""
    caches.close_all()
    del caches["default"]
    AxesProxyHandler.get_implementation(force=True)


def test_a_lockout_counted_in_redis_holds_for_a_process_that_never_saw_the_guesses(client, redis_cache):
    user = UserFactory(email="shared@example.com")
    for n in range(10):
        client.post(
            "/api/v1/auth/token", {"email": user.email, "password": f"wrong-{n}"}, content_type="application/json"
        )

    # The counters are in Redis (one for the address, one for the account)...
    assert len(redis_cache.keys("*axes-*")) == 2
    # ...so another web process still sees the lockout.
    a_new_process()
    refused = client.post(
        "/api/v1/auth/token",
        {"email": user.email, "password": PASSWORD},
        content_type="application/json",
        REMOTE_ADDR="198.51.100.200",
    )
    assert refused.status_code == 429


def test_a_revocation_written_to_redis_reaches_a_process_with_a_warm_cache_of_its_own(client, redis_cache):
    """The token was cached as good; someone removes the person; the next request sees it at once."""
    tenant = TenantFactory()
    owner = MembershipFactory(tenant=tenant, role=Role.OWNER)
    member = MembershipFactory(tenant=tenant, role=Role.ADMIN)
    event = EventFactory(tenant=tenant)
    token = client.post(
        "/api/v1/auth/token", {"email": member.user.email, "password": PASSWORD}, content_type="application/json"
    ).json()["access"]
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    assert client.get(f"/api/v1/events/{event.pk}", **headers).status_code == 200  # cached as good

    membership_remove(membership=Membership.objects.get(pk=member.pk), acting_membership=owner)
    a_new_process()  # its own connection, the same Redis

    assert client.get(f"/api/v1/events/{event.pk}", **headers).status_code == 401


def test_the_cache_shares_one_redis_client_per_pool_and_survives_a_reconnect(redis_cache):
    backend = caches["default"]
    backend.set("shared:one", 1)

    assert backend._cache.get_client() is backend._cache.get_client(write=True)
    # Redis closes the cache's connection (only this test's database: other test processes share the server).
    db, me = str(redis_cache.connection_pool.connection_kwargs["db"]), str(redis_cache.client_id())
    others = [c["id"] for c in redis_cache.client_list(_type="normal") if c["db"] == db and c["id"] != me]
    assert others
    for other in others:
        redis_cache.client_kill_filter(_id=other)
    assert backend.get("shared:one") == 1


def test_a_household_the_guest_api_kept_ends_when_another_process_writes(redis_cache):
    from guests.models import Guest
    from rsvp import household_cache
    from tests.factories import GuestFactory

    guest = GuestFactory(event=EventFactory())
    where = {"tenant_id": guest.tenant_id, "event_id": guest.event_id, "guest_id": guest.pk, "group_hint": None}
    household_cache.households_forget()
    kept = household_cache.household_with_hint(**where)
    assert household_cache.household_with_hint(**where) is kept

    a_new_process()  # another web process, with its own connection to Redis, takes the guest's answer
    Guest.objects.filter(pk=guest.pk).update(status="declined")
    a_new_process()  # back in the first one: its memory still holds the old household

    assert household_cache.household_with_hint(**where).guest.status == "declined"
    household_cache.households_forget()


def test_the_caches_incr_counts_an_existing_key_in_one_round_trip_and_never_creates_one(redis_cache, monkeypatch):
    import redis.connection

    backend = caches["default"]
    backend.set("counted", 5, timeout=300)
    redis_cache.execute_command("SCRIPT", "FLUSH")  # a restarted Redis has forgotten the script: it is sent again
    sent = []
    send = redis.connection.AbstractConnection.send_packed_command
    monkeypatch.setattr(
        redis.connection.AbstractConnection,
        "send_packed_command",
        lambda self, command, *args, **kwargs: sent.append(command) or send(self, command, *args, **kwargs),
    )

    assert backend.incr("counted") == 6
    assert len(sent) == 3  # EVALSHA refused, SCRIPT LOAD, EVALSHA
    sent.clear()
    assert backend.incr("counted", 10) == 16
    assert len(sent) == 1  # Django's own incr takes two (EXISTS, then INCRBY)
    monkeypatch.undo()
    assert backend.get("counted") == 16
    assert 0 < redis_cache.ttl(backend.make_key("counted")) <= 300  # the increment keeps the key's expiry

    with pytest.raises(ValueError, match="not found"):
        backend.incr("never-set")
    assert backend.get("never-set") is None  # Django's contract: a missing key is an error, not a new counter
    assert not redis_cache.exists(backend.make_key("never-set"))


def test_the_checkout_rate_limit_is_shared_by_every_web_process(redis_cache, settings):
    from django.test import RequestFactory

    from billing.throttling import checkout_is_throttled

    settings.TICKET_CHECKOUT_RATE_PER_CLIENT = "3/h"  # per hour: a minute window could roll over mid-test
    request = RequestFactory().post("/api/v1/events/x/checkout", REMOTE_ADDR="203.0.113.9")
    throttled = []
    for _ in range(5):
        throttled.append(checkout_is_throttled(request))
        a_new_process()  # each checkout lands on another web process

    assert throttled == [False, False, False, True, True]
    other_address = RequestFactory().post("/api/v1/events/x/checkout", REMOTE_ADDR="198.51.100.4")
    assert checkout_is_throttled(other_address) is False

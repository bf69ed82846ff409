"""With Redis as the cache (production), login lockouts and token revocations are seen by every web process."""

import pytest
from django.core.cache import caches
from django.test import override_settings

from tests.conftest import PASSWORD
from tests.factories import UserFactory

pytestmark = [pytest.mark.redis, pytest.mark.django_db]


def test_a_lockout_counted_in_redis_holds_for_a_process_that_never_saw_the_guesses(client, redis_client, redis_url):
    redis_cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    with override_settings(CACHES=redis_cache):
        user = UserFactory(email="shared@example.com")
        for n in range(10):
            client.post(
                "/api/v1/auth/token", {"email": user.email, "password": f"wrong-{n}"}, content_type="application/json"
            )

        # The counters are in Redis (one for the address, one for the account)...
        keys = [key.decode() for key in redis_client.keys("*axes-*")]
        assert len(keys) == 2
        # ...so a fresh cache connection, as another web process has, still sees the lockout.
        caches.close_all()
        del caches["default"]
        refused = client.post(
            "/api/v1/auth/token",
            {"email": user.email, "password": PASSWORD},
            content_type="application/json",
            REMOTE_ADDR="198.51.100.200",
        )
        assert refused.status_code == 429


def test_a_revocation_written_to_redis_reaches_a_process_with_a_warm_cache_of_its_own(client, redis_client, redis_url):
    """Process A cached the token as good; process B removes the person; A's next request sees it at once."""
    from tenants.models import Membership, Role
    from tenants.services import membership_remove
    from tests.factories import EventFactory, MembershipFactory, TenantFactory

    redis_cache = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": redis_url}}
    with override_settings(CACHES=redis_cache):
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
        caches.close_all()
        del caches["default"]  # another process: its own connection, the same Redis

        assert client.get(f"/api/v1/events/{event.pk}", **headers).status_code == 401

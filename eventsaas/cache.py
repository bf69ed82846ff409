"""Django's Redis cache, with one Redis client per connection pool instead of one per call.

django.core.cache.backends.redis builds a `redis.Redis` object for every cache call, and redis-py's
constructor sets up its response callbacks each time: on the guest API's hot path (one version read
per request, rsvp/household_cache.py) that cost more than the round trip to Redis. A client is only
a handle on its pool and is safe to share, so each pool gets one, built on first use; redis-py's pool
still resets its connections after a fork. Everything else (keys, pickling, timeouts) is Django's.
"""

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class _OneClientPerPool(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        django_client: Any = self  # its pool helpers are private: django-stubs does not declare them
        index = django_client._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            pool = django_client._get_connection_pool(write)
            client = self._clients[index] = django_client._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _OneClientPerPool

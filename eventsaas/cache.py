"""Django's Redis cache, with one Redis client per connection pool instead of one per call.

django.core.cache.backends.redis builds a `redis.Redis` object for every cache call, and redis-py's
constructor sets up its response callbacks each time: on the guest API's hot path (one version read
per request, rsvp/household_cache.py) that cost more than the round trip to Redis. A client is only
a handle on its pool and is safe to share, so each pool gets one, built on first use; redis-py's pool
still resets its connections after a fork. Everything else (keys, pickling, timeouts) is Django's.

`incr` is one round trip instead of Django's two (EXISTS, then INCRBY): the checkout rate limit
(django-ratelimit: add, then incr) runs it on every checkout, a rush's thousand included.
"""

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient

# Django's incr in one atomic step: a missing key is an error (nil), never created by the increment.
_INCR_EXISTING = """
if redis.call('EXISTS', KEYS[1]) == 1 then return redis.call('INCRBY', KEYS[1], ARGV[1]) end
return false
"""


class _OneClientPerPool(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}
        self._incr_script: Any = None

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        django_client: Any = self  # its pool helpers are private: django-stubs does not declare them
        index = django_client._get_connection_pool_index(write)
        client = self._clients.get(index)
        if client is None:
            pool = django_client._get_connection_pool(write)
            client = self._clients[index] = django_client._client(connection_pool=pool)
        return client

    def incr(self, key: Any, delta: int) -> int:
        client = self.get_client(key, write=True)
        if self._incr_script is None:
            # redis-py's Script sends EVALSHA and loads the script itself when the server lacks it.
            self._incr_script = client.register_script(_INCR_EXISTING)
        value = self._incr_script(keys=[key], args=[delta], client=client)
        if value is None:
            raise ValueError(f"Key '{key}' not found.")
        return value


class RedisCache(DjangoRedisCache):
    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = _OneClientPerPool

"""The Redis connection every app uses, and the one way to call it.

``client()`` is the strict client (django-redis's ``default`` connection): it raises on a Redis
error, unlike the cache alias that may ignore them, so locks, counters and writes see the failure.
Every operation goes through ``call``, which times it (``memory_cache_latency_seconds``), counts a
failure (``memory_cache_errors_total``) and turns it into ``CacheUnavailable``: the caller then takes
its degraded path on purpose. Lua scripts are registered once per client (``Scripts``).

What the keys are and what the scripts do belongs to the app that owns them: the conversation cache
in ``conversations.cache``, the throttle counters in ``tenants.throttling``.
"""

import time
import weakref
from collections.abc import Callable
from typing import Any

import redis
from django_redis import get_redis_connection
from redis.commands.core import Script

from core import metrics


class CacheUnavailable(Exception):
    """Redis could not be reached or answered with an error."""


def client() -> redis.Redis:
    return get_redis_connection("default")


def call(operation: str, tenant_slug: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)``, a Redis operation, timed under ``operation``; CacheUnavailable on failure."""
    started = time.perf_counter()
    try:
        return function(*args, **kwargs)
    except redis.RedisError as error:
        metrics.cache_errors.labels(operation=operation).inc()
        raise CacheUnavailable(f"{operation}: {error}") from error
    finally:
        metrics.cache_latency.labels(tenant=tenant_slug, operation=operation).observe(time.perf_counter() - started)


class Scripts:
    """Lua scripts registered once per client: ``Scripts(merge=MERGE)``, then ``scripts.merge(keys=..., args=...)``
    runs it on the current client by its digest (redis-py falls back to EVAL after a Redis restart).

    Each thread has a client of its own (Django's cache handler is per thread) and a cold reader
    hands its install to another thread: the scripts are kept per client, so threads taking turns
    do not register every script again at each turn (20 digests, a quarter of a millisecond)."""

    def __init__(self, **sources: str) -> None:
        self._sources = sources
        self._registered: weakref.WeakKeyDictionary[redis.Redis, dict[str, Script]] = weakref.WeakKeyDictionary()

    def __getattr__(self, name: str) -> Script:
        if name.startswith("_") or name not in self._sources:
            raise AttributeError(name)
        connection = client()
        scripts = self._registered.get(connection)
        if scripts is None:  # a thread's first call: its own client, registered by that thread alone
            scripts = {script: connection.register_script(source) for script, source in self._sources.items()}
            self._registered[connection] = scripts
        return scripts[name]

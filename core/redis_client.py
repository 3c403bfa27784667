"""The Redis connection every app uses, and the one way to call it.

``client()`` is the strict client (django-redis's ``default`` connection): it raises on a Redis
error, unlike the cache alias that may ignore them, so locks, counters and writes see the failure.
Every operation goes through ``call``, which times it (``memory_cache_latency_seconds``), counts a
failure (``memory_cache_errors_total``) and turns it into ``CacheUnavailable``: the caller then takes
its degraded path on purpose. Lua scripts are registered once per client (``Scripts``).

What the keys are and what the scripts do belongs to the app that owns them: the conversation cache
in ``conversations.cache``, the throttle counters in ``tenants.throttling``.

Redis Cluster (``MEMORY_REDIS_CLUSTER``): ``client()`` is then redis-py's ``RedisCluster``, made by
``ClusterClient`` (django-redis has no cluster client of its own), so Django's cache and the raw
client share it. Every script and multi-key command must name keys of one slot (the conversation's
keys share a hash tag, ``MEMORY_REDIS_HASH_TAGS``). Replication is asynchronous: a replica promoted
after its primary died holds a prefix of the primary's writes. ``replicated`` runs a script and then
``WAIT`` on the same connection, so that what an acknowledgement depends on is on a replica before
the answer goes out; ``ReplicaUnconfirmed`` says it is not (yet), and the caller answers 503.
"""

import time
import weakref
from collections.abc import Callable
from typing import Any

import redis
from django.conf import settings
from django_redis import get_redis_connection
from django_redis.client import DefaultClient
from redis.cluster import ClusterNode, RedisCluster
from redis.commands.core import Script
from redis.connection import parse_url

from core import metrics


class CacheUnavailable(Exception):
    """Redis could not be reached or answered with an error."""


class ReplicaUnconfirmed(CacheUnavailable):
    """A script ran on the primary, but fewer replicas than ``MEMORY_REDIS_WAIT_REPLICAS`` confirmed
    it within ``MEMORY_REDIS_WAIT_TIMEOUT``: a failover now could undo it. ``reply`` is the script's."""

    def __init__(self, message: str, *, reply: Any) -> None:
        super().__init__(message)
        self.reply = reply


def client() -> redis.Redis:
    return get_redis_connection("default")


class ClusterClient(DefaultClient):
    """django-redis's client over redis-py's ``RedisCluster`` (``CLIENT_CLASS`` with
    ``MEMORY_REDIS_CLUSTER``): the LOCATION's comma-separated URLs are startup nodes of one cluster,
    not a primary and its replicas; the socket timeouts and the connection pool's size apply per node.
    Every command goes to the primary of its key's slot (no reads from replicas: they may lag)."""

    def get_next_client_index(self, write: bool = True, tried: list[int] | None = None) -> int:
        return 0

    def connect(self, index: int = 0) -> RedisCluster:
        nodes = [parse_url(url) for url in self._server]
        first = nodes[0]
        pool = self._options.get("CONNECTION_POOL_KWARGS", {})
        return RedisCluster(
            startup_nodes=[ClusterNode(node.get("host", "127.0.0.1"), int(node.get("port", 6379))) for node in nodes],
            username=first.get("username"),
            password=first.get("password"),
            ssl=bool(first.get("connection_class") and first["connection_class"].__name__ == "SSLConnection"),
            socket_timeout=self._options.get("SOCKET_TIMEOUT"),
            socket_connect_timeout=self._options.get("SOCKET_CONNECT_TIMEOUT"),
            health_check_interval=pool.get("health_check_interval", 0),
            max_connections=pool.get("max_connections", 2**31),
        )

    def disconnect(self, index: int = 0, client: Any = None) -> None:
        client = client or self._clients[index]
        if client is not None:
            client.close()


def clustered(connection: Any) -> bool:
    return isinstance(connection, RedisCluster)


def node_client(connection: Any, key: str) -> redis.Redis:
    """The client of the one Redis server that holds ``key``: the primary of its slot in a cluster."""
    if clustered(connection):
        return connection.get_redis_connection(connection.get_node_from_key(key))
    return connection


def cluster_answers() -> bool:
    """Whether any primary of the Redis Cluster answers a PING (its slot map as the client knows it):
    one slot failing over, rather than the whole cluster gone. False on a single Redis."""
    connection = client()
    if not clustered(connection):
        return False
    for node in connection.get_primaries():
        try:
            if connection.ping(target_nodes=node):
                return True
        except redis.RedisError:
            continue
    return False


def scan_keys(connection: Any, pattern: str, *, slot_key: str) -> list[bytes]:
    """Every key matching ``pattern``, all of them in ``slot_key``'s slot: in a cluster only the
    primary that holds that slot is scanned."""
    return list(node_client(connection, slot_key).scan_iter(match=pattern, count=500))


def replicated(script: Script, *, keys: list[str], args: list[Any]) -> Any:
    """Run ``script`` and, on the same connection, ``WAIT`` for ``MEMORY_REDIS_WAIT_REPLICAS`` replicas
    to hold everything the primary wrote up to it (one round trip). A replica promoted after a
    failover holds at least that. ReplicaUnconfirmed (with the script's reply) when too few confirm
    within ``MEMORY_REDIS_WAIT_TIMEOUT``; with no replicas asked for, the script alone.

    The WAIT must follow the script on its own connection (it waits for that connection's last write),
    so both go to the slot's primary directly, outside the cluster client; a slot that moved meanwhile
    (MOVED, a failover) refreshes the cluster's map of slots and runs again."""
    needed = settings.MEMORY_REDIS_WAIT_REPLICAS
    connection = client()
    if needed <= 0:
        return script(keys=keys, args=args)
    reply: Any = None
    for _ in range(3):
        server = node_client(connection, keys[0])
        pipeline = server.pipeline(transaction=False)
        pipeline.evalsha(script.sha, len(keys), *keys, *args)
        pipeline.execute_command("WAIT", needed, settings.MEMORY_REDIS_WAIT_TIMEOUT)
        try:
            reply, confirmed = pipeline.execute(raise_on_error=False)
        except (redis.ConnectionError, redis.TimeoutError):
            if clustered(connection):
                _refresh_slots(connection)
            raise
        if isinstance(reply, redis.exceptions.NoScriptError):
            server.script_load(script.script)
            continue
        if isinstance(reply, redis.exceptions.MovedError | redis.exceptions.AskError) and clustered(connection):
            _refresh_slots(connection)
            continue
        if isinstance(reply, Exception):
            raise reply
        if isinstance(confirmed, Exception):
            raise confirmed
        if int(confirmed) < needed:
            raise ReplicaUnconfirmed(
                f"{int(confirmed)} of MEMORY_REDIS_WAIT_REPLICAS={needed} replicas confirmed the write within "
                f"MEMORY_REDIS_WAIT_TIMEOUT={settings.MEMORY_REDIS_WAIT_TIMEOUT} ms",
                reply=reply,
            )
        return reply
    raise redis.exceptions.ClusterError(f"the slot of {keys[0]} kept moving: {reply}")


def _refresh_slots(connection: RedisCluster) -> None:
    """Ask the cluster which primary serves each slot now (after a failover); best effort."""
    try:
        connection.nodes_manager.initialize()
    except redis.RedisError:
        pass  # the next command through the cluster client tries again


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

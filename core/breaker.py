"""A circuit breaker for a remote model server, shared by every process of the deployment.

A server that is down or hanging would otherwise cost one timeout per message embedded, per query, per
reranked search. After a call fails, ``Breaker.failed`` opens the circuit for ``seconds``: every
process then refuses at once (``Breaker.open`` answers why and for how long) instead of calling, and
the first call after the interval tries the server again. A down server so costs one timeout per
interval, not one per request.

The state is one Redis key per server (``memory:breaker:<digest>``, expiring with the interval), so
the web processes and the workers learn of a failure together. When Redis does not answer, each
process keeps its own copy: the breaker then holds per process, never blocks a call because Redis is
down, and never fails a call itself.

A breaker's name identifies the server and what is asked of it (``embeddings <base url> <model>``);
it is hashed into the key, so no URL or credential lands in Redis.
"""

from __future__ import annotations

import hashlib
import threading
import time
from dataclasses import dataclass

import structlog

from core import redis_client

logger = structlog.get_logger(__name__)

KEY_PREFIX = "memory:breaker:"


@dataclass(frozen=True)
class Open:
    """Why calls are refused now, and for how many more seconds."""

    reason: str
    seconds_left: float


_local: dict[str, tuple[float, str]] = {}  # key -> (monotonic deadline, reason), when Redis does not answer
_local_lock = threading.Lock()


class Breaker:
    def __init__(self, name: str, *, seconds: float) -> None:
        self.name = name
        self.seconds = max(0.0, float(seconds))
        self.key = KEY_PREFIX + hashlib.sha256(name.encode()).hexdigest()[:24]

    def open(self) -> Open | None:
        """Why the server is not to be called now; None: call it."""
        if self.seconds <= 0:
            return None
        try:
            connection = redis_client.client()
            pipeline = connection.pipeline(transaction=False)
            pipeline.get(self.key)
            pipeline.pttl(self.key)
            reason, milliseconds = redis_client.call("breaker_read", "", pipeline.execute)
            if reason is not None and milliseconds and milliseconds > 0:
                return Open(
                    reason=reason.decode() if isinstance(reason, bytes) else str(reason), seconds_left=milliseconds / 1000
                )
            return None
        except redis_client.CacheUnavailable:
            pass
        with _local_lock:
            found = _local.get(self.key)
            if found is None:
                return None
            deadline, reason = found
            left = deadline - time.monotonic()
            if left <= 0:
                del _local[self.key]
                return None
            return Open(reason=reason, seconds_left=left)

    def failed(self, reason: str) -> None:
        """The server failed a call: refuse calls for ``seconds``."""
        if self.seconds <= 0:
            return
        reason = reason[:300]
        logger.warning("breaker_opened", breaker=self.key[len(KEY_PREFIX) :], seconds=self.seconds, reason=reason)
        with _local_lock:
            _local[self.key] = (time.monotonic() + self.seconds, reason)
        try:
            redis_client.call("breaker_open", "", redis_client.client().set, self.key, reason, px=int(self.seconds * 1000))
        except redis_client.CacheUnavailable:
            pass

    def succeeded(self) -> None:
        """The server answered: close the circuit if a failure had opened it here."""
        with _local_lock:
            had = _local.pop(self.key, None)
        if had is not None:
            try:
                redis_client.call("breaker_close", "", redis_client.client().delete, self.key)
            except redis_client.CacheUnavailable:
                pass


def reset_all() -> None:
    """Forget every circuit (tests)."""
    with _local_lock:
        _local.clear()
    try:
        connection = redis_client.client()
        for key in connection.scan_iter(match=KEY_PREFIX + "*"):
            connection.delete(key)
    except Exception:  # noqa: BLE001, S110 - best effort: nothing to forget when Redis is away
        pass

"""Reads that may be slightly stale, served by PostgreSQL's streaming replica (``DATABASE_REPLICA_URL``).

Contract
--------
Nothing is read on the replica unless the code says so: ``stale_read(read)`` (or a function decorated
with ``@stale_reads_allowed()``) runs ``read`` with its queries routed to the ``replica`` database by
``ReplicaRouter``, through a context variable that only that call sets. Everything else reads the
primary: authentication, the write path and the ledger of pending writes, change forms, and any read
inside a transaction on the primary. Writes always go to the primary. Without a replica configured,
``stale_read(read)`` is ``read()``.

Which reads the replica may answer, decided once per call:

* ``stale_read(read)`` (search, the admin's lists): the replica is at most ``MEMORY_REPLICA_MAX_LAG``
  seconds behind. The lag is measured at most every ``LAG_CHECK_SECONDS`` per process: zero when the
  replica has replayed the primary's current WAL position, else the age of the last transaction it
  replayed (the oldest view it can be showing). A list or a search is at most that much behind.
* ``stale_read(read, read_your_writes=True)`` (a cold window, rebuilt from PostgreSQL): the replica
  must have replayed the primary's WAL up to where the primary was when the read began
  (``pg_current_wal_lsn()`` on the primary, then ``pg_last_wal_replay_lsn()`` on the replica: two
  trivial queries, no table read on the primary). Every write committed before the read began is
  then on the replica, so a message acknowledged and persisted is in the answer even when Redis has
  forgotten it: the caller reads the pending writes (Redis) first, then the rows, as on the primary.
  A replica behind by a single transaction is not asked: the primary answers.

Replica loss: an error of the replica (connection refused, killed mid-query, a query cancelled by a
recovery conflict) re-runs ``read`` once on the primary, so the caller never sees it. A connection
error also rests the replica for ``MEMORY_REPLICA_RETRY_SECONDS`` in this process (every stale read
goes to the primary meanwhile); the first stale read after the rest probes it again. Each change of
state is one log line (``database_replica_down``, ``database_replica_up``) and a count in
``memory_replica_state_changes_total``; where each stale read went is counted in
``memory_replica_reads_total``.
"""

import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from functools import wraps
from typing import Any, TypeVar

import structlog
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, DatabaseError, InterfaceError, OperationalError, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from core.metrics import replica_reads, replica_state_changes

logger = structlog.get_logger(__name__)

REPLICA = "replica"
# Seconds a measured lag is trusted before the replica is asked again (per process).
LAG_CHECK_SECONDS = 0.5
# SQLSTATEs of a query the replica cancelled because replay needed what it read: the replica is
# fine, the primary answers this one.
RECOVERY_CONFLICTS = {"40001", "40P01"}

T = TypeVar("T")


@dataclass
class _StaleRead:
    active: bool = True
    used_replica: bool = False


_current: ContextVar[_StaleRead | None] = ContextVar("stale_read", default=None)


def _read_alias() -> str:
    block = _current.get()
    if block is None or not block.active or connections[DEFAULT_DB_ALIAS].in_atomic_block:
        return DEFAULT_DB_ALIAS
    block.used_replica = True
    return REPLICA


def read_connection() -> BaseDatabaseWrapper:
    """The connection for a raw SQL read: the replica inside a stale read it may answer, else the primary."""
    return connections[_read_alias()]


class ReplicaRouter:
    """Reads of a ``stale_read`` block go to the replica; every other query goes to the primary."""

    def db_for_read(self, model: Any, **hints: Any) -> str:
        # Never None: an object read on the replica must not pull its relations from there afterwards.
        return _read_alias()

    def db_for_write(self, model: Any, **hints: Any) -> str:
        return DEFAULT_DB_ALIAS

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool:
        return True  # the same rows on both servers

    def allow_migrate(self, db: str, app_label: str, model_name: str | None = None, **hints: Any) -> bool:
        return db == DEFAULT_DB_ALIAS  # the replica replays the primary's migrations


def replica_configured() -> bool:
    return REPLICA in settings.DATABASES


def stale_read(read: Callable[[], T], *, read_your_writes: bool = False) -> T:
    """``read()``, on the replica when it may answer (see the module's contract), else on the primary;
    a replica error re-runs it once on the primary."""
    if not replica_configured() or not _replica_may_answer(read_your_writes=read_your_writes):
        return read()
    block = _StaleRead()
    token = _current.set(block)
    try:
        result = read()
    except DatabaseError as error:
        if not (block.used_replica and connections[REPLICA].errors_occurred):
            raise  # the primary's error (a write in the block, a read left there): the caller's to handle
        failure = error
    else:
        if block.used_replica:
            _health.answered()
            replica_reads.labels(served_by="replica").inc()
        return result
    finally:
        block.active = False
        _current.reset(token)
    _replica_failed(failure)
    replica_reads.labels(served_by="primary_after_replica_error").inc()
    return read()


def stale_reads_allowed(*, read_your_writes: bool = False) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator: the function's reads may be served by the replica, as ``stale_read`` says."""

    def decorate(function: Callable[..., T]) -> Callable[..., T]:
        @wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            return stale_read(lambda: function(*args, **kwargs), read_your_writes=read_your_writes)

        return wrapper

    return decorate


def replica_answers() -> None:
    """A trivial query on the replica (the readiness probe); raises when it does not answer."""
    try:
        with connections[REPLICA].cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        _replica_failed(error)
        raise
    _health.answered()


# --- Whether the replica may answer ----------------------------------------------------------------


class _ReplicaError(Exception):
    """A check on the replica failed (its cause is the database error)."""


def _replica_may_answer(*, read_your_writes: bool) -> bool:
    if connections[DEFAULT_DB_ALIAS].in_atomic_block:
        replica_reads.labels(served_by="primary_in_transaction").inc()
        return False
    if _health.resting():
        replica_reads.labels(served_by="primary_replica_down").inc()
        return False
    try:
        fresh = _caught_up() if read_your_writes else _lag_within_bound()
    except _ReplicaError as error:
        _replica_failed(error.__cause__)
        replica_reads.labels(served_by="primary_replica_down").inc()
        return False
    except DatabaseError:
        return False  # the primary does not answer: the read there says so, as without a replica
    if not fresh:
        replica_reads.labels(served_by="primary_replica_behind").inc()
    return fresh


def _primary_position() -> str:
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cursor.execute("SELECT pg_current_wal_lsn()::text")
        return cursor.fetchone()[0]


def _on_replica(sql: str, params: list[Any]) -> tuple:
    try:
        with connections[REPLICA].cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    except DatabaseError as error:
        raise _ReplicaError(str(error)) from error


def _caught_up() -> bool:
    """Whether the replica has replayed the primary's WAL as far as the primary had written it now.

    Not cached: a restarted replica may resume below a position it had reached before."""
    position = _primary_position()
    (replayed,) = _on_replica("SELECT coalesce(pg_last_wal_replay_lsn() >= %s::pg_lsn, false)", [position])
    return bool(replayed)


def _lag_within_bound() -> bool:
    lag = _health.lag()
    if lag is None:
        position = _primary_position()
        (lag,) = _on_replica(
            "SELECT CASE WHEN NOT pg_is_in_recovery() THEN NULL"  # promoted: no longer this primary's copy
            " WHEN pg_last_wal_replay_lsn() >= %s::pg_lsn THEN 0"
            " ELSE extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()) END",
            [position],
        )
        lag = float("inf") if lag is None else float(lag)
        _health.measured(lag)
    return lag <= settings.MEMORY_REPLICA_MAX_LAG


# --- The replica's state in this process -----------------------------------------------------------


class _ReplicaHealth:
    """Down (resting until ``retry_at``) or up, and the last lag measured; changes logged once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.down_since: float | None = None
        self.retry_at = 0.0
        self._lag: tuple[float, float] | None = None  # (measured at, seconds)

    def resting(self) -> bool:
        return self.down_since is not None and time.monotonic() < self.retry_at

    def lag(self) -> float | None:
        measured = self._lag
        if measured is None or time.monotonic() - measured[0] > LAG_CHECK_SECONDS:
            return None
        return measured[1]

    def measured(self, seconds: float) -> None:
        self._lag = (time.monotonic(), seconds)

    def failed(self, error: BaseException | None) -> None:
        with self._lock:
            now = time.monotonic()
            first = self.down_since is None
            if first:
                self.down_since = now
            self.retry_at = now + settings.MEMORY_REPLICA_RETRY_SECONDS
            self._lag = None
        if first:
            replica_state_changes.labels(state="down").inc()
            logger.warning(
                "database_replica_down",
                error=str(error).strip()[:200],
                retry_seconds=settings.MEMORY_REPLICA_RETRY_SECONDS,
                action="stale reads go to the primary; check that the replica (DATABASE_REPLICA_URL) runs and streams",
            )

    def answered(self) -> None:
        if self.down_since is None:
            return
        with self._lock:
            if self.down_since is None:
                return
            down_for = time.monotonic() - self.down_since
            self.down_since = None
        replica_state_changes.labels(state="up").inc()
        logger.info("database_replica_up", down_seconds=round(down_for, 1))


_health = _ReplicaHealth()


def _replica_failed(error: BaseException | None) -> None:
    """A replica error: its connection is dropped; a lost connection rests the replica."""
    try:
        connections[REPLICA].close()
    except DatabaseError:
        pass  # already broken: closing it is all that was asked
    if _recovery_conflict(error):
        logger.info("database_replica_query_cancelled", error=str(error).strip()[:200])
        return
    if isinstance(error, OperationalError | InterfaceError) or isinstance(getattr(error, "__cause__", None), OSError):
        _health.failed(error)
    else:
        logger.warning("database_replica_read_failed", error=str(error).strip()[:200])


def _recovery_conflict(error: BaseException | None) -> bool:
    cause = getattr(error, "__cause__", None)
    return getattr(cause, "sqlstate", None) in RECOVERY_CONFLICTS

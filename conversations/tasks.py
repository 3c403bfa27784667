"""Celery tasks: thin, idempotent wrappers around services, acknowledged only after they ran.

A persist task never loses its message (no silent loss). It is acknowledged only once its payload is
committed or recorded in the dead-letter table; it never republishes itself (a republish the broker
refuses would leave nothing durable), and nothing it raises reaches Celery as a failure (Celery
acknowledges a failed late-acknowledged task, dropping the message). ``persist_durably`` decides:

* **The database is unreachable** (it does not answer a ``SELECT 1`` on a new connection): the task
  keeps its message and tries again with exponential backoff, at most ``MEMORY_RETRY_BACKOFF_MAX``
  seconds apart. Waiting costs none of the payload's attempts: a write acknowledged during an outage
  is persisted when the outage ends, however long it lasts. While it waits, its messages are put
  back among the conversation's pending writes in Redis if Redis lost them (a restart), so the API
  still knows the ids. After ``MEMORY_PERSIST_HOLD`` seconds the message goes back to the broker
  (requeued, not republished) and is delivered again.
* **The payload failed while the database answered** (a deadlock, a lock timeout, a connection cut
  mid-statement): tried again after a backoff, up to ``MEMORY_PERSIST_MAX_RETRIES`` times, then
  dead-lettered.
* **The payload itself is refused** (any other error: a value PostgreSQL will not store, an id
  already stored with other content, a malformed payload): dead-lettered at once. The dead letter
  is always recordable: a payload PostgreSQL would refuse is kept as JSON text.
"""

import random
import time
from collections.abc import Callable
from typing import Any

import structlog
from billiard.exceptions import WorkerLostError
from celery import Task, shared_task
from celery.exceptions import Reject
from celery.worker.request import Request
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError, connection

from conversations import cache, metrics, services
from conversations.services import publish
from conversations.services.persist import persist_commits
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

TRANSIENT = (OperationalError, InterfaceError, cache.CacheUnavailable)


def _backoff(attempt: int) -> float:
    """Seconds before attempt ``attempt + 1``: exponential, capped, with jitter."""
    return min(settings.MEMORY_RETRY_BACKOFF_MAX, 2**attempt) * random.uniform(0.5, 1.0)


def database_answers() -> bool:
    """Whether PostgreSQL answers a new connection now (the failure was the database's, not the payload's)."""
    if connection.in_atomic_block:  # run in place inside a caller's transaction (tests): cannot reconnect
        return True
    try:
        connection.close()
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        return True
    except DatabaseError:
        return False


def persist_durably(
    task: Task,
    service: Callable[..., Any],
    payload: dict[str, Any],
    *,
    while_waiting: Callable[[dict[str, Any]], None] | None = None,
) -> Any:
    """Run ``service(payload=payload)`` until it succeeds or the payload is dead-lettered; raise
    ``Reject(requeue=True)`` to hand the message back to the broker. See the module docstring."""
    failures = 0  # attempts that failed while the database answered
    waits = 0
    holding_since = time.monotonic()
    conversation_id = payload.get("conversation_id")
    while True:
        try:
            return service(payload=payload)
        except TRANSIENT as error:
            if isinstance(error, cache.CacheUnavailable) or database_answers():
                failures += 1
                if failures > settings.MEMORY_PERSIST_MAX_RETRIES:
                    return _dead_letter(task, payload, error, attempts=failures, holding_since=holding_since)
                pause = _backoff(failures - 1)
                logger.warning(
                    "persist_retry", task=task.name, conversation_id=conversation_id, attempt=failures, error=str(error)
                )
                metrics.persist_retries.labels(reason="failed").inc()
            else:
                pause = _backoff(waits)
                waits += 1
                logger.warning(
                    "persist_waiting_for_database", task=task.name, conversation_id=conversation_id, wait=waits, error=str(error)
                )
                metrics.persist_retries.labels(reason="database_unreachable").inc()
                if while_waiting is not None:
                    while_waiting(payload)
        except Exception as error:  # the payload itself is refused: a retry cannot help
            return _dead_letter(task, payload, error, attempts=failures + 1, holding_since=holding_since)
        _hold(task, pause, holding_since=holding_since, conversation_id=conversation_id)


def _hold(task: Task, pause: float, *, holding_since: float, conversation_id: Any) -> None:
    """Sleep ``pause`` seconds holding the message, or hand it back to the broker once held too long."""
    if time.monotonic() + pause - holding_since > settings.MEMORY_PERSIST_HOLD:
        logger.warning("persist_requeued", task=task.name, conversation_id=conversation_id, held_seconds=round(pause, 1))
        metrics.persist_requeued.inc()
        services.ledger_disturbed(why="requeued")
        raise Reject("held too long; delivered again later", requeue=True)
    time.sleep(pause)


def _dead_letter(task: Task, payload: dict[str, Any], error: BaseException, *, attempts: int, holding_since: float) -> None:
    """Record the dead letter; while the database cannot take it, hold the message and try again."""
    waits = 0
    while True:
        try:
            services.dead_letter_record(task_name=task.name, payload=payload, error=repr(error), attempts=attempts)
            return None
        except DatabaseError as recording_error:
            logger.error("dead_letter_unrecorded", task=task.name, error=str(recording_error), wait=waits + 1)
            pause = _backoff(waits)
            waits += 1
        _hold(task, pause, holding_since=holding_since, conversation_id=payload.get("conversation_id"))


def _reassert(payload: dict[str, Any]) -> None:
    services.messages_reassert_pending(payload=payload)


class PersistRequest(Request):
    """A persist task's request in the worker's main process: a pool process lost while it ran hands
    its message back to the broker (``reject_on_worker_lost``), which disturbs the ledger."""

    def on_failure(self, exc_info: Any, send_failed_event: bool = True, return_ok: bool = False) -> None:
        super().on_failure(exc_info, send_failed_event=send_failed_event, return_ok=return_ok)
        if isinstance(exc_info.exception, WorkerLostError):  # requeued by now: a new barrier comes behind it
            services.ledger_disturbed_soon(why="worker_lost")


class PersistTask(Task):
    """The persist tasks: acknowledged late, handed back if the pool process running them is lost,
    never retried by Celery (``persist_durably`` decides), and watched for the ledger's sake."""

    Request = PersistRequest
    acks_late = True
    reject_on_worker_lost = True
    max_retries = 0

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if (self.request.delivery_info or {}).get("redelivered"):
            # Delivered before and handed back: it may have passed a ledger barrier meanwhile.
            services.ledger_disturbed(why="redelivered")
        return super().__call__(*args, **kwargs)


@shared_task(bind=True, base=PersistTask, name=publish.MESSAGES_PERSIST)
def messages_persist(self: Task, payload: dict[str, Any]) -> None:
    """One acknowledged write, persisted together with those of the tasks running beside it in this
    worker (``services.PersistCommits``); its errors are its own."""
    return persist_durably(self, persist_commits.persist, payload, while_waiting=_reassert)


@shared_task(bind=True, base=PersistTask, name=publish.MESSAGES_PERSIST_MANY)
def messages_persist_many(self: Task, payloads: list[dict[str, Any]]) -> int:
    """Payloads of concurrent appends, published together (``services.PersistGroup``).

    They are persisted together (``services.messages_persist_group``); each one that fails is then
    persisted on its own, here, as ``messages_persist`` would (its own retries and dead letter), so
    the others are not held back by it and nothing is published again. Until all are settled, the
    message stays unacknowledged.
    """
    errors = services.messages_persist_group(payloads=payloads)
    failed = [payload for payload, error in zip(payloads, errors, strict=True) if error is not None]
    for payload, error in zip(payloads, errors, strict=True):
        if error is not None:
            logger.warning("persist_separately", task=self.name, conversation_id=payload.get("conversation_id"), error=str(error))
    for payload in failed:
        persist_durably(self, services.messages_persist, payload, while_waiting=_reassert)
    return len(payloads) - len(failed)


@shared_task(bind=True, base=PersistTask, name=publish.MEMORY_PERSIST)
def memory_persist(self: Task, payload: dict[str, Any]) -> bool | None:
    return persist_durably(self, services.memory_persist, payload)


@shared_task(bind=True, acks_late=True, max_retries=0, name=publish.LEDGER_BARRIER)
def ledger_barrier(self: Task, since: int, barrier: int | None = None, phase: int = 1, workers: dict | None = None) -> bool:
    """A step of a round of barriers: reached once every persist message published before it was
    delivered (see ``services.ledger_barrier_reached``)."""
    return services.ledger_barrier_reached(since=since, barrier=barrier, phase=phase, workers=workers)


@shared_task(acks_late=True, name=publish.CACHE_REBUILD)
def cache_rebuild(tenant_id: int, conversation_id: str) -> int:
    tenant = Tenant.objects.get(pk=tenant_id)
    result = services.cache_rebuild(tenant=tenant, conversation_id=conversation_id, allow_empty=True)
    conversation = services.conversation_or_404(tenant=tenant, conversation_id=conversation_id)
    services.memory_cache_rebuild(tenant=tenant, conversation=conversation)
    return len(result.messages)


@shared_task(acks_late=True, name=publish.TENANT_CACHE_REBUILD)
def tenant_cache_rebuild(tenant_id: int) -> int:
    """Every active conversation of a tenant, as ``manage.py rebuild_cache`` does inline."""
    tenant = Tenant.objects.get(pk=tenant_id)
    summary = services.tenant_cache_rebuild(tenant=tenant)
    logger.info(
        "tenant_cache_rebuilt",
        tenant=tenant.slug,
        conversations=summary.conversations,
        messages=summary.messages,
        failed=len(summary.failed),
        seconds=round(summary.seconds, 2),
    )
    return summary.conversations


@shared_task(
    acks_late=True,
    name=publish.CACHE_REPAIR_SWEEP,
    autoretry_for=(cache.CacheUnavailable, OperationalError),
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=50,
)
def cache_repair_sweep() -> int:
    return services.cache_repair_sweep()


@shared_task(
    acks_late=True,
    name="conversations.tasks.retention_sweep",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def retention_sweep() -> int:
    return services.retention_sweep()

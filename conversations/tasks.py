"""Celery tasks: thin, idempotent wrappers around services, acknowledged only after they ran.

Transient errors (PostgreSQL or Redis unreachable) are retried with exponential backoff up to
``MEMORY_PERSIST_MAX_RETRIES``; then, or at once for errors a retry cannot fix, the task lands in
the dead-letter table. If even that table cannot be written, the task keeps retrying: it is never
dropped silently.
"""

import random
from collections.abc import Callable
from typing import Any

import structlog
from celery import Task, shared_task
from django.conf import settings
from django.db import DatabaseError, InterfaceError, OperationalError

from conversations import cache, services
from conversations.exceptions import ServiceUnavailable

logger = structlog.get_logger(__name__)

TRANSIENT = (OperationalError, InterfaceError, cache.CacheUnavailable)


def _backoff(retries: int) -> float:
    return min(settings.MEMORY_RETRY_BACKOFF_MAX, 2**retries) * random.uniform(0.5, 1.0)


def _run_with_dead_letter(task: Task, service: Callable[..., Any], payload: dict[str, Any]) -> Any:
    try:
        return service(payload=payload)
    except TRANSIENT as error:
        if task.request.retries < settings.MEMORY_PERSIST_MAX_RETRIES:
            logger.warning("task_retry", task=task.name, attempt=task.request.retries + 1, error=str(error))
            # The bound is ours (above); the task's own max_retries is None so Celery never cuts in first.
            raise task.retry(exc=error, countdown=_backoff(task.request.retries)) from error
        failure = error
    except Exception as error:  # anything else cannot be fixed by a retry: keep it for an operator
        failure = error
    try:
        services.dead_letter_record(task_name=task.name, payload=payload, error=repr(failure), attempts=task.request.retries + 1)
    except DatabaseError as error:
        logger.error("dead_letter_unrecorded", task=task.name, error=str(error))
        raise task.retry(exc=error, countdown=settings.MEMORY_RETRY_BACKOFF_MAX, max_retries=None) from error
    return None


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None, name="conversations.tasks.messages_persist")
def messages_persist(self: Task, payload: dict[str, Any]) -> None:
    """One acknowledged write, persisted together with those of the tasks running beside it in this
    worker (``services.PersistCommits``); its errors are its own."""
    return _run_with_dead_letter(self, services.persist_commits.persist, payload)


@shared_task(
    bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None, name="conversations.tasks.messages_persist_many"
)
def messages_persist_many(self: Task, payloads: list[dict[str, Any]]) -> int:
    """Payloads of concurrent appends, published together (``services.PersistGroup``).

    They are persisted together (``services.messages_persist_group``); one that fails is published
    again as its own ``messages_persist`` task, so it gets the same retries and dead letter as if it
    had been sent alone, and the others are not held back by it. Until those are confirmed, this
    message stays unacknowledged.
    """
    errors = services.messages_persist_group(payloads=payloads)
    failed = [payload for payload, error in zip(payloads, errors, strict=True) if error is not None]
    for payload, error in zip(payloads, errors, strict=True):
        if error is not None:
            logger.warning("persist_separately", task=self.name, conversation_id=payload.get("conversation_id"), error=str(error))
    for index, payload in enumerate(failed):
        try:
            services.publish(messages_persist, payload)
        except ServiceUnavailable as error:
            raise self.retry(args=[failed[index:]], exc=error, countdown=_backoff(self.request.retries)) from error
    return len(payloads) - len(failed)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None, name="conversations.tasks.memory_persist")
def memory_persist(self: Task, payload: dict[str, Any]) -> bool | None:
    return _run_with_dead_letter(self, services.memory_persist, payload)


@shared_task(acks_late=True, name="conversations.tasks.cache_rebuild")
def cache_rebuild(tenant_id: int, conversation_id: str) -> int:
    from tenants.models import Tenant

    tenant = Tenant.objects.get(pk=tenant_id)
    result = services.cache_rebuild(tenant=tenant, conversation_id=conversation_id, allow_empty=True)
    conversation = services.conversation_or_404(tenant=tenant, conversation_id=conversation_id)
    services.memory_cache_rebuild(tenant=tenant, conversation=conversation)
    return len(result.messages)


@shared_task(acks_late=True, name="conversations.tasks.tenant_cache_rebuild")
def tenant_cache_rebuild(tenant_id: int) -> int:
    """Every active conversation of a tenant, as ``manage.py rebuild_cache`` does inline."""
    from tenants.models import Tenant

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
    name="conversations.tasks.cache_repair_sweep",
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

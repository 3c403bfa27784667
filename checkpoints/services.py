"""Writes: save a checkpoint (seed 004 save_checkpoint), store a task's pending writes, delete.

Checkpoints are written synchronously to PostgreSQL, their only copy; when it does not answer, the
write is a 503 and nothing was stored. The save, in one transaction (``checkpoint_save``):

1. The conversation row is created if this is its first write (like the first message).
2. Upsert on (conversation, namespace, checkpoint id): a new id is a new, newest checkpoint; an
   existing id gets its state, metadata and parent replaced and keeps its place and its writes.
3. Retention: only the newest ``MEMORY_MAX_CHECKPOINTS`` (the tenant's value, at least 1) of that
   conversation and namespace are kept. The older ones and their writes go, in two statements
   whatever their number.

Pending writes follow LangGraph's PostgresSaver (``checkpoint_writes_save``): a write with
``idx >= 0`` is stored once and never replaced (a retried task writes the same thing again), a
write with a negative ``idx`` (error, interrupt, scheduled, resume) replaces the stored one.
"""

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from django.db import DatabaseError, transaction
from django.db.models import QuerySet, prefetch_related_objects

from checkpoints import selectors
from checkpoints.models import Checkpoint, CheckpointWrite
from conversations import services as conversation_services
from conversations.exceptions import NotFound
from conversations.models import Conversation
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


@dataclass(frozen=True)
class SaveResult:
    checkpoint: dict[str, Any]
    created: bool


def checkpoint_save(
    *,
    tenant: Tenant,
    conversation_id: str,
    state: dict[str, Any],
    checkpoint_id: str | None = None,
    namespace: str = "",
    parent_id: str = "",
    metadata: dict[str, Any] | None = None,
) -> SaveResult:
    """Create or replace a checkpoint, then apply retention to its namespace; durable when it returns."""
    checkpoint_id = checkpoint_id or str(uuid.uuid4())
    try:
        with transaction.atomic():
            conversation = conversation_services.conversation_ensure(tenant=tenant, conversation_id=conversation_id)
            checkpoint, created = Checkpoint.objects.for_tenant(tenant).update_or_create(
                tenant=tenant,
                conversation=conversation,
                namespace=namespace,
                checkpoint_id=checkpoint_id,
                defaults={"state": state, "metadata": metadata or {}, "parent_id": parent_id or ""},
            )
            prefetch_related_objects([checkpoint], selectors.writes_prefetch(tenant=tenant))  # a replaced one keeps them
            keep = max(1, tenant.setting("MEMORY_MAX_CHECKPOINTS"))
            expired = _checkpoints_delete_rows(
                tenant=tenant,
                checkpoints=_older_than_newest(tenant=tenant, conversation=conversation, namespace=namespace, keep=keep),
            )
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    logger.info(
        "checkpoint_saved",
        tenant=tenant.slug,
        conversation_id=conversation_id,
        namespace=namespace,
        checkpoint_id=checkpoint_id,
        created=created,
        expired=expired,
    )
    return SaveResult(checkpoint=selectors.checkpoint_to_dict(checkpoint, conversation_id=conversation_id), created=created)


def _older_than_newest(*, tenant: Tenant, conversation: Conversation, namespace: str, keep: int) -> QuerySet[Checkpoint]:
    """The checkpoints of a conversation and namespace after its newest ``keep`` (one query, as a subquery)."""
    namespace_checkpoints = Checkpoint.objects.for_tenant(tenant).filter(conversation=conversation, namespace=namespace)
    expired = namespace_checkpoints.order_by("-id").values("id")[keep:]
    return Checkpoint.objects.for_tenant(tenant).filter(id__in=expired)


def _checkpoints_delete_rows(*, tenant: Tenant, checkpoints: QuerySet[Checkpoint]) -> int:
    """Delete these checkpoints and their writes in two statements; returns how many checkpoints went.

    ``QuerySet.delete()`` would first load every checkpoint (state included) to cascade to the
    writes; the writes are deleted here first instead, so the checkpoints can go in one statement.
    """
    CheckpointWrite.objects.for_tenant(tenant).filter(checkpoint__in=checkpoints.values("id")).delete()
    return checkpoints._raw_delete(checkpoints.db)


def checkpoint_writes_save(
    *,
    tenant: Tenant,
    conversation_id: str,
    checkpoint_id: str,
    task_id: str,
    writes: Sequence[dict[str, Any]],
    namespace: str = "",
    task_path: str = "",
) -> int:
    """Store a task's pending writes (``idx``, ``channel``, ``value`` each) against a checkpoint.

    Returns how many distinct writes the call carried (the same answer when it is retried). Within
    one call, the first write of an ``idx >= 0`` and the last of a negative ``idx`` count, as they
    would across calls.
    """
    first_wins: dict[int, dict[str, Any]] = {}
    last_wins: dict[int, dict[str, Any]] = {}
    for write in writes:
        if write["idx"] >= 0:
            first_wins.setdefault(write["idx"], write)
        else:
            last_wins[write["idx"]] = write
    try:
        with transaction.atomic():
            conversation = selectors.conversation_or_404(tenant=tenant, conversation_id=conversation_id)
            checkpoint = (
                Checkpoint.objects.for_tenant(tenant)
                .only("id")  # not its state
                .filter(conversation=conversation, namespace=namespace, checkpoint_id=checkpoint_id)
                .first()
            )
            if checkpoint is None:
                raise NotFound(
                    f"Checkpoint {checkpoint_id} does not exist in namespace {namespace!r} of conversation {conversation_id}."
                )

            scoped = CheckpointWrite.objects.for_tenant(tenant)
            if first_wins:  # INSERT ... ON CONFLICT DO NOTHING
                scoped.bulk_create(
                    _write_rows(tenant=tenant, checkpoint=checkpoint, task_id=task_id, task_path=task_path, writes=first_wins),
                    ignore_conflicts=True,
                )
            if last_wins:  # INSERT ... ON CONFLICT DO UPDATE
                scoped.bulk_create(
                    _write_rows(tenant=tenant, checkpoint=checkpoint, task_id=task_id, task_path=task_path, writes=last_wins),
                    update_conflicts=True,
                    unique_fields=["checkpoint", "task_id", "idx"],
                    update_fields=["channel", "value"],
                )
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    written = len(first_wins) + len(last_wins)
    logger.info(
        "checkpoint_writes_saved",
        tenant=tenant.slug,
        conversation_id=conversation_id,
        namespace=namespace,
        checkpoint_id=checkpoint_id,
        task_id=task_id,
        writes=written,
    )
    return written


def _write_rows(
    *, tenant: Tenant, checkpoint: Checkpoint, task_id: str, task_path: str, writes: dict[int, dict[str, Any]]
) -> list[CheckpointWrite]:
    return [
        CheckpointWrite(
            tenant=tenant,
            checkpoint=checkpoint,
            task_id=task_id,
            task_path=task_path,
            idx=idx,
            channel=write["channel"],
            value=write["value"],
        )
        for idx, write in writes.items()
    ]


def checkpoints_delete(*, tenant: Tenant, conversation_id: str, namespace: str | None = None) -> int:
    """Delete every checkpoint of a conversation, or of one namespace of it; returns how many went."""
    try:
        with transaction.atomic():
            conversation = selectors.conversation_or_404(tenant=tenant, conversation_id=conversation_id)
            checkpoints = Checkpoint.objects.for_tenant(tenant).filter(conversation=conversation)
            if namespace is not None:
                checkpoints = checkpoints.filter(namespace=namespace)
            deleted = _checkpoints_delete_rows(tenant=tenant, checkpoints=checkpoints)
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    logger.info("checkpoints_deleted", tenant=tenant.slug, conversation_id=conversation_id, namespace=namespace, deleted=deleted)
    return deleted

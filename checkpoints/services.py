"""Writes: save a checkpoint (save_checkpoint), store a task's pending writes, delete.

Checkpoints are written synchronously to PostgreSQL, their only copy; when it does not answer, the
write is a 503 and nothing was stored. The save, in one transaction (``checkpoint_save``):

1. The conversation row is created if this is its first write (like the first message).
2. Upsert on (conversation, namespace, checkpoint id): a new id is a new, newest checkpoint; an
   existing id gets its state, metadata and parent replaced and keeps its place and its writes.
3. Retention: only the newest ``MEMORY_MAX_CHECKPOINTS`` (the tenant's value, at least 1) of that
   conversation and namespace are kept. The older ones and their writes go, in two statements
   whatever their number.

Before anything is written, every value passes ``core.storable``: the ids and names are
storable text, the state, metadata and written values storable JSON; anything else raises
``Unstorable`` (400) naming its path, and nothing is stored.

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
from conversations.models import Conversation
from core.exceptions import NotFound, Unstorable
from core.storable import storable_json, storable_text
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
    conversation_id = storable_text(conversation_id, field="conversation_id")
    checkpoint_id = storable_text(checkpoint_id or str(uuid.uuid4()), field="checkpoint_id")
    namespace = storable_text(namespace, field="namespace")
    parent_id = storable_text(parent_id or "", field="parent_id")
    state = storable_json(state, field="state")
    metadata = storable_json(metadata or {}, field="metadata")
    try:
        with transaction.atomic():
            conversation = conversation_services.conversation_ensure(tenant=tenant, conversation_id=conversation_id)
            checkpoint, created = Checkpoint.objects.for_tenant(tenant).update_or_create(
                tenant=tenant,
                conversation=conversation,
                namespace=namespace,
                checkpoint_id=checkpoint_id,
                defaults={"state": state, "metadata": metadata, "parent_id": parent_id},
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
    conversation_id = storable_text(conversation_id, field="conversation_id")
    checkpoint_id = storable_text(checkpoint_id, field="checkpoint_id")
    task_id = storable_text(task_id, field="task_id")
    namespace = storable_text(namespace, field="namespace")
    task_path = storable_text(task_path, field="task_path")
    writes = [_storable_write(write, position=position) for position, write in enumerate(writes)]
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


def _storable_write(write: dict[str, Any], *, position: int) -> dict[str, Any]:
    """One pending write with its channel and value made storable (or refused, naming ``writes[i]``)."""
    where = f"writes[{position}]"
    idx = write["idx"]
    if isinstance(idx, bool) or not isinstance(idx, int) or not -(2**31) <= idx < 2**31:
        raise Unstorable(
            field=f"{where}.idx",
            reason=f"is not a 32-bit integer ({idx!r:.40})",
            advice="send a whole number from -2147483648 to 2147483647",
        )
    return write | {
        "channel": storable_text(write["channel"], field=f"{where}.channel"),
        "value": storable_json(write["value"], field=f"{where}.value"),
    }


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

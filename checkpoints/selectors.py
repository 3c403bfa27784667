"""Reads: a conversation's checkpoints (load_checkpoint, LangGraph's get_tuple and list).

Every read starts from the tenant's conversation (another tenant's, or a missing one, is a 404) and
returns checkpoints in the one JSON shape of ``checkpoint_to_dict``, newest first (highest row id),
each with its pending writes, fetched in one query per page rather than one per checkpoint.
PostgreSQL is the only copy: when it does not answer, the read is a 503.
"""

from datetime import UTC
from typing import Any

from django.db import DatabaseError
from django.db.models import Prefetch

from checkpoints.models import Checkpoint, CheckpointWrite
from conversations.models import Conversation
from core.exceptions import NotFound, ServiceUnavailable
from tenants.models import Tenant

WRITES_ORDER = ("task_path", "task_id", "idx")


def write_to_dict(write: CheckpointWrite) -> dict[str, Any]:
    return {
        "task_id": write.task_id,
        "task_path": write.task_path,
        "idx": write.idx,
        "channel": write.channel,
        "value": write.value,
    }


def checkpoint_to_dict(checkpoint: Checkpoint, *, conversation_id: str) -> dict[str, Any]:
    """The one JSON shape of a checkpoint; its writes must have been fetched with ``writes_prefetch``."""
    return {
        "conversation_id": conversation_id,
        "namespace": checkpoint.namespace,
        "checkpoint_id": checkpoint.checkpoint_id,
        "parent_id": checkpoint.parent_id or None,
        "state": checkpoint.state,
        "metadata": checkpoint.metadata,
        "created_at": checkpoint.created_at.astimezone(UTC).isoformat(),
        "writes": [write_to_dict(write) for write in checkpoint.writes.all()],
    }


def database_unavailable() -> ServiceUnavailable:
    return ServiceUnavailable(
        "PostgreSQL is unreachable, and checkpoints live only there; retry shortly.", code="database_unavailable"
    )


def conversation_or_404(*, tenant: Tenant, conversation_id: str) -> Conversation:
    """The conversation's row, without its memory document (checkpoints need only its key)."""
    conversation = (
        Conversation.objects.for_tenant(tenant).only("id", "conversation_id").filter(conversation_id=conversation_id).first()
    )
    if conversation is None:
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    return conversation


def writes_prefetch(*, tenant: Tenant) -> Prefetch:
    """Checkpoints' writes, ordered as the API returns them, in one query for any number of checkpoints."""
    return Prefetch("writes", queryset=CheckpointWrite.objects.for_tenant(tenant).order_by(*WRITES_ORDER))


def checkpoint_list(
    *,
    tenant: Tenant,
    conversation_id: str,
    namespace: str | None = None,
    before: str | None = None,
    limit: int,
) -> list[dict[str, Any]]:
    """The newest ``limit`` checkpoints, of one namespace or (``namespace=None``) of every namespace.

    ``before`` is a checkpoint id: only checkpoints saved before it are listed. It is looked up in
    ``namespace``, or in every namespace; if it names several checkpoints there, the newest counts,
    so that paging back never skips one.
    """
    try:
        conversation = conversation_or_404(tenant=tenant, conversation_id=conversation_id)
        checkpoints = Checkpoint.objects.for_tenant(tenant).filter(conversation=conversation)
        if namespace is not None:
            checkpoints = checkpoints.filter(namespace=namespace)
        if before is not None:
            cursor = checkpoints.filter(checkpoint_id=before).order_by("-id").values_list("id", flat=True).first()
            if cursor is None:
                where = "any namespace" if namespace is None else f"namespace {namespace!r}"
                raise NotFound(f"Checkpoint {before} does not exist in {where} of conversation {conversation_id}.")
            checkpoints = checkpoints.filter(id__lt=cursor)
        page = checkpoints.prefetch_related(writes_prefetch(tenant=tenant)).order_by("-id")[:limit]
        return [checkpoint_to_dict(checkpoint, conversation_id=conversation_id) for checkpoint in page]
    except DatabaseError as error:
        raise database_unavailable() from error


def checkpoint_get(*, tenant: Tenant, conversation_id: str, checkpoint_id: str, namespace: str = "") -> dict[str, Any]:
    try:
        conversation = conversation_or_404(tenant=tenant, conversation_id=conversation_id)
        checkpoints = Checkpoint.objects.for_tenant(tenant).filter(
            conversation=conversation, namespace=namespace, checkpoint_id=checkpoint_id
        )
        checkpoint = checkpoints.prefetch_related(writes_prefetch(tenant=tenant)).first()
    except DatabaseError as error:
        raise database_unavailable() from error
    if checkpoint is None:
        raise NotFound(f"Checkpoint {checkpoint_id} does not exist in namespace {namespace!r} of conversation {conversation_id}.")
    return checkpoint_to_dict(checkpoint, conversation_id=conversation_id)


def checkpoint_latest(*, tenant: Tenant, conversation_id: str, namespace: str = "") -> dict[str, Any]:
    """The newest checkpoint of the namespace (load_checkpoint)."""
    try:
        conversation = conversation_or_404(tenant=tenant, conversation_id=conversation_id)
        checkpoints = Checkpoint.objects.for_tenant(tenant).filter(conversation=conversation, namespace=namespace)
        checkpoint = checkpoints.prefetch_related(writes_prefetch(tenant=tenant)).order_by("-id").first()
    except DatabaseError as error:
        raise database_unavailable() from error
    if checkpoint is None:
        raise NotFound(f"Conversation {conversation_id} has no checkpoint in namespace {namespace!r}.")
    return checkpoint_to_dict(checkpoint, conversation_id=conversation_id)

"""The memory document (``save_memory``): one JSON document per conversation, a later save always wins.

``memory_save`` takes a revision from the same clock as the seqs (``seqs``), publishes the
``memory_persist`` task (confirmed, as an append is) and caches the document; the worker stores it
unless a newer revision, or an erase after it, is already recorded (``memory_persist``).
"""

from datetime import UTC
from typing import Any

import structlog
from django.db import DatabaseError, transaction
from django.utils import timezone

from conversations import cache
from conversations.models import Conversation
from conversations.services import publish
from conversations.services.lifecycle import _conversation_for_update, _tombstone_floors, conversation_ensure, user_check
from conversations.services.messages import _now_microseconds
from conversations.services.seqs import _above_database_floor, _database_floor_and_user, _user_claimed
from core import storable
from core.metrics import fallbacks
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


def memory_document(*, tenant: Tenant, conversation: Conversation) -> dict[str, Any]:
    """The memory document with its standardised metadata."""
    memory = conversation.memory or {}
    if memory.get("metadata"):
        return {"messages": memory.get("messages", []), "metadata": memory["metadata"]}  # as saved, as cached
    return {
        "messages": memory.get("messages", []),
        "metadata": {
            **(memory.get("metadata") or {}),
            "tenant_id": tenant.slug,
            "conversation_id": conversation.conversation_id,
            "agent_id": conversation.agent_id,
            "user_id": conversation.user_id,
            "updated_at": conversation.updated_at.astimezone(UTC).isoformat() if conversation.updated_at else None,
        },
    }


def memory_save(
    *, tenant: Tenant, conversation_id: str, document: dict[str, Any], agent_id: str = "", user_id: str = ""
) -> dict[str, Any]:
    """Save the memory document: broker-confirmed, then cached; a later save always wins. Its values
    pass the storable door first (400 naming the field). The user and agent are the arguments', else
    those the document's metadata names: a save naming a user other than the conversation's is a
    409 ``user_mismatch``, as an append is, nothing written."""
    document = {
        "messages": storable.storable_json(document.get("messages", []), field="messages"),
        "metadata": storable.storable_json(document.get("metadata") or {}, field="metadata"),
    }
    user_id = user_id or _named(document["metadata"], "user_id")
    agent_id = agent_id or _named(document["metadata"], "agent_id")
    reservation = _memory_reservation(tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
    revision = reservation.first_seq if reservation is not None else _now_microseconds()
    now = timezone.now().astimezone(UTC).isoformat()
    metadata = {
        **(document.get("metadata") or {}),
        "tenant_id": tenant.slug,
        "conversation_id": conversation_id,
        "updated_at": now,
    }
    if agent_id:
        metadata["agent_id"] = agent_id
    if user_id:
        metadata["user_id"] = user_id
    saved = {"messages": document.get("messages", []), "metadata": metadata}
    publish.publish(
        publish.MEMORY_PERSIST,
        {
            "tenant_id": tenant.pk,
            "tenant_slug": tenant.slug,
            "conversation_id": conversation_id,
            "revision": revision,
            "document": saved,
            "user_id": user_id,
            "agent_id": agent_id,
        },
    )
    if reservation is not None:
        _user_claimed(tenant=tenant, conversation_id=conversation_id, reservation=reservation, user_id=user_id)
    try:
        cache.set_memory(
            tenant_slug=tenant.slug,
            conversation_id=conversation_id,
            document=saved,
            revision=revision,
            ttl=tenant.setting("MEMORY_TTL_STANDARD"),
        )
    except cache.CacheUnavailable:
        fallbacks.labels(kind="write_without_cache").inc()
    return saved


def _named(metadata: dict[str, Any], name: str) -> str:
    value = metadata.get(name)
    return value if isinstance(value, str) else ""


def _memory_reservation(*, tenant: Tenant, conversation_id: str, user_id: str, agent_id: str) -> cache.Reservation | None:
    """The save's revision (``first_seq``: one seq of the conversation's clock) and whose the
    conversation is; a save naming another user is refused (``UserMismatch``). None when Redis does
    not answer: the revision is then the clock, and the user is checked against the row."""
    try:
        reservation = cache.reserve(tenant_slug=tenant.slug, conversation_id=conversation_id, count=1, token="", lock_ms=0)
    except cache.CacheUnavailable:
        if user_id:
            try:
                user = _database_floor_and_user(tenant=tenant, conversation_id=conversation_id, floor=False)[1]
            except DatabaseError:
                return None  # the row's user, if it has one, is kept by the worker
            user_check(conversation_id=conversation_id, conversation_user_id=user, user_id=user_id)
        return None
    reservation = _above_database_floor(
        tenant=tenant, conversation_id=conversation_id, count=1, reservation=reservation, user_id=user_id
    )
    user_check(conversation_id=conversation_id, conversation_user_id=reservation.user, user_id=user_id)
    if not reservation.known:  # possibly the first write of this conversation
        try:
            conversation_ensure(tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
        except DatabaseError:
            fallbacks.labels(kind="write_without_database").inc()
    return reservation


def memory_persist(*, payload: dict[str, Any]) -> bool:
    """Store a memory document unless a newer revision is already stored (idempotent)."""
    tenant_id, conversation_id = payload["tenant_id"], payload["conversation_id"]
    with transaction.atomic():
        tombstone = _tombstone_floors(tenant=tenant_id, conversation_id=conversation_id)
        if payload["revision"] < tombstone.memory_erased_before:
            return False
        conversation = _conversation_for_update(
            tenant_id=tenant_id,
            conversation_id=conversation_id,
            user_id=payload.get("user_id", ""),
            agent_id=payload.get("agent_id", ""),
        )
        if conversation.memory_revision >= payload["revision"]:
            return False
        conversation.memory = payload["document"]
        conversation.memory_revision = payload["revision"]
        conversation.save(update_fields=["memory", "memory_revision", "updated_at"])
    return True

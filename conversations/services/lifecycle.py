"""A conversation's row: created by the API, by the first append (``conversation_ensure``) or by the
worker that persists its first messages (``_conversation_create``), updated, looked up; and the floors
its tombstones set (``_tombstone_floors``), which every stage reads to drop what an erase removed.

A conversation belongs to at most one user: the first write naming one (its creation, or the first
append or memory save that names a user while it has none) sets it, and a write naming another is
refused (``user_check``: 409 ``user_mismatch``, nothing written). Only ``conversation_update`` moves a
conversation to another user. The agent is not checked: several agents may write to one
conversation (a hand-off, a supervisor and its workers); the conversation keeps the first one named.
"""

from dataclasses import dataclass
from typing import Any

import structlog
from django.db import IntegrityError, transaction
from django.db.models import Max

from conversations import cache
from conversations.models import CacheRepair, Conversation, Tombstone, tombstone_keys
from core.exceptions import Conflict, NotFound
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


class UserMismatch(Conflict):
    """A write names a user other than the conversation's: refused, nothing written."""

    code = "user_mismatch"

    def __init__(self, *, conversation_id: str, conversation_user_id: str, user_id: str) -> None:
        super().__init__(
            f"Conversation {conversation_id} belongs to user {conversation_user_id!r}, not {user_id!r}; nothing was "
            "written. Send the conversation's user_id (or none), write to another conversation, or move this one "
            "to the other user first (PATCH the conversation's user_id).",
            details={"conversation_id": conversation_id, "conversation_user_id": conversation_user_id, "user_id": user_id},
        )


def user_check(*, conversation_id: str, conversation_user_id: str | None, user_id: str) -> None:
    """Refuse a write naming ``user_id`` to a conversation of another user (``UserMismatch``). A write
    naming no user, or a conversation without one (or whose user is unknown: None), passes."""
    if user_id and conversation_user_id and conversation_user_id != user_id:
        raise UserMismatch(conversation_id=conversation_id, conversation_user_id=conversation_user_id, user_id=user_id)


def conversation_ensure(*, tenant: Tenant, conversation_id: str, user_id: str = "", agent_id: str = "") -> Conversation:
    """The conversation row, created now if this is its first write (loaded without its memory document).

    Appends need it at once only for the first write (a cold cache is the cheap sign of that; the
    worker creates the row anyway, so a database that does not answer only delays it); checkpoints
    are written synchronously and need it always.
    """
    conversations = Conversation.objects.for_tenant(tenant).defer("memory", "metadata")
    try:
        with transaction.atomic():
            conversation, _ = conversations.get_or_create(
                tenant=tenant, conversation_id=conversation_id, defaults={"user_id": user_id, "agent_id": agent_id}
            )
            return conversation
    except IntegrityError:
        return conversations.get(conversation_id=conversation_id)  # created concurrently


def _conversation_create(*, tenant_id: int, conversation_id: str, user_id: str, agent_id: str) -> None:
    try:
        with transaction.atomic():
            Conversation.objects.for_tenant(tenant_id).get_or_create(
                tenant_id=tenant_id, conversation_id=conversation_id, defaults={"user_id": user_id, "agent_id": agent_id}
            )
    except IntegrityError:
        pass  # created concurrently by another worker


def _conversation_for_update(*, tenant_id: int, conversation_id: str, user_id: str, agent_id: str) -> Conversation:
    _conversation_create(tenant_id=tenant_id, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
    conversation = Conversation.objects.for_tenant(tenant_id).select_for_update().get(conversation_id=conversation_id)
    if (user_id and not conversation.user_id) or (agent_id and not conversation.agent_id):
        conversation.user_id = conversation.user_id or user_id
        conversation.agent_id = conversation.agent_id or agent_id
        conversation.save(update_fields=["user_id", "agent_id"])
    return conversation


def conversation_create(
    *, tenant: Tenant, conversation_id: str, user_id: str = "", agent_id: str = "", metadata: dict | None = None
) -> Conversation:
    try:
        with transaction.atomic():
            return Conversation.objects.for_tenant(tenant).create(
                tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id, metadata=metadata or {}
            )
    except IntegrityError as error:
        raise Conflict(f"Conversation {conversation_id} already exists.", details={"conversation_id": conversation_id}) from error


def conversation_update(*, tenant: Tenant, conversation_id: str, changes: dict[str, Any]) -> Conversation:
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).first()
    if conversation is None:
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    for name, value in changes.items():
        setattr(conversation, name, value)
    conversation.save(update_fields=[*changes, "updated_at"])
    if "user_id" in changes:
        _user_forget(tenant=tenant, conversation_id=conversation_id)
    return conversation


def _user_forget(*, tenant: Tenant, conversation_id: str) -> None:
    """The conversation moved to another user: Redis forgets the one it held for the appends' check
    (the next write reads the row). Redis not answering: the conversation's cached state is dropped
    by the cache repair sweep (``CacheRepair``) once it answers."""
    try:
        cache.user_forget(tenant_slug=tenant.slug, conversation_id=conversation_id)
    except cache.CacheUnavailable:
        logger.warning("conversation_user_unforgotten", tenant=tenant.slug, conversation_id=conversation_id)
        CacheRepair.unscoped.get_or_create(tenant=tenant, conversation_id=conversation_id)  # any tenant: repair queue


@dataclass(frozen=True)
class TombstoneFloors:
    """What an erased conversation's tombstones say: seqs (and memory revisions) below these were erased."""

    erased_before_seq: int = 0
    memory_erased_before: int = 0


def _tombstone_floors(*, tenant: Tenant | int, conversation_id: str) -> TombstoneFloors:
    """The highest floors of the conversation's tombstones, under any of the tombstone secrets."""
    floors = (
        Tombstone.objects.for_tenant(tenant)
        .filter(conversation_key__in=tombstone_keys(conversation_id))
        .aggregate(seq=Max("erased_before_seq"), memory=Max("memory_erased_before"))
    )
    return TombstoneFloors(erased_before_seq=floors["seq"] or 0, memory_erased_before=floors["memory"] or 0)


def conversation_or_404(*, tenant: Tenant, conversation_id: str) -> Conversation:
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).first()
    if conversation is None:
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    return conversation

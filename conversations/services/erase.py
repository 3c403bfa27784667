"""Erase: a conversation removed everywhere (rows, cache keys, writes still queued), and retention.

``conversation_erase`` holds the append lock, deletes the rows and raises the conversation's
tombstone to the next seq: a worker then drops any queued message older than the erase
(``persist``), a rebuild any pending one (``rebuild``). With ``messages_only`` (clearing a chat
history) the conversation stays; what other apps derived from its messages goes with them through
``messages_cleared``. ``retention_sweep`` erases the conversations idle past their tenant's retention.
"""

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

import structlog
from django.db import transaction
from django.dispatch import Signal
from django.utils import timezone

from conversations import cache
from conversations.models import CacheRepair, Conversation, Message, Tombstone, tombstone_keys
from conversations.services.messages import _now_microseconds
from conversations.services.seqs import _release_quietly, _reserve_locked
from core.exceptions import NotFound
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

# Sent inside the transaction of every erase, once the messages are deleted and while the conversation
# row is still there (keyword arguments ``tenant`` and ``conversation_id``): what other apps derived
# from the messages is deleted by their receivers (``summaries.apps``: the summaries, which quote the
# messages; ``extraction.apps``: the memories read from them, which no cascade reaches). A receiver
# that raises rolls the erase back.
messages_cleared = Signal()


def _tombstone_raise(*, tenant: Tenant, conversation_id: str, erased_before_seq: int, memory_erased_before: int) -> None:
    """Raise the conversation's tombstone to these floors (never lower it), creating it if needed. A
    tombstone keyed with an older secret is keyed again with the newest one (``tombstone_key``)."""
    keys = tombstone_keys(conversation_id)
    tombstones = list(Tombstone.objects.for_tenant(tenant).filter(conversation_key__in=keys).select_for_update())
    if not tombstones:
        tombstone, created = Tombstone.objects.for_tenant(tenant).get_or_create(
            tenant=tenant,
            conversation_key=keys[0],
            defaults={"erased_before_seq": erased_before_seq, "memory_erased_before": memory_erased_before},
        )
        if created:
            return
        tombstones = [tombstone]  # created meanwhile by another erase
    kept, *older = sorted(tombstones, key=lambda tombstone: keys.index(tombstone.conversation_key))
    kept.conversation_key = keys[0]
    kept.erased_before_seq = max(erased_before_seq, *(tombstone.erased_before_seq for tombstone in tombstones))
    kept.memory_erased_before = max(memory_erased_before, *(tombstone.memory_erased_before for tombstone in tombstones))
    if older:
        Tombstone.objects.for_tenant(tenant).filter(pk__in=[tombstone.pk for tombstone in older]).delete()
    kept.save(update_fields=["conversation_key", "erased_before_seq", "memory_erased_before"])


@dataclass(frozen=True)
class EraseResult:
    messages: int
    cache_keys: int


def conversation_erase(*, tenant: Tenant, conversation_id: str, messages_only: bool = False) -> EraseResult:
    """Erase a conversation everywhere: rows, cache keys, and writes still queued for it.

    With ``messages_only`` (clearing a chat history) the conversation row, its memory document and
    its checkpoints stay; its messages go. A tombstone with the next seq makes workers drop any
    queued message with an older seq (and, for a whole erase, any older memory save). The append
    lock is held throughout, so appends in flight finish first and their seqs are older.
    """
    token = uuid.uuid4().hex
    try:
        erased_before = _reserve_locked(tenant=tenant, conversation_id=conversation_id, count=1, token=token).first_seq
        cache_reached = True
    except cache.CacheUnavailable:
        cache_reached = False
        erased_before = _now_microseconds()
    try:
        pending = cache.pending(tenant_slug=tenant.slug, conversation_id=conversation_id) if cache_reached else []
        with transaction.atomic():
            conversation = (
                Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).select_for_update().first()
            )
            if conversation is None and not pending:
                raise NotFound(f"Conversation {conversation_id} does not exist.")
            if conversation is not None:
                erased_before = max(erased_before, conversation.last_seq + 1)
            # Counted apart from what goes with the messages (their vectors).
            deleted = (
                Message.objects.for_tenant(tenant)
                .filter(conversation__conversation_id=conversation_id)
                .delete()[1]
                .get(Message._meta.label, 0)
            )
            # What was derived from the messages goes with them, in this transaction (vectors go by cascade).
            messages_cleared.send(sender=Conversation, tenant=tenant, conversation_id=conversation_id)
            if messages_only:
                Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).update(
                    message_count=0, token_count=0, last_seq=erased_before, updated_at=timezone.now()
                )
            else:
                Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).delete()
            _tombstone_raise(
                tenant=tenant,
                conversation_id=conversation_id,
                erased_before_seq=erased_before,
                memory_erased_before=0 if messages_only else erased_before,
            )
            CacheRepair.objects.for_tenant(tenant).filter(conversation_id=conversation_id).delete()
            if not cache_reached:
                CacheRepair.objects.for_tenant(tenant).create(tenant=tenant, conversation_id=conversation_id, erase=True)
    except BaseException:
        if cache_reached:
            _release_quietly(tenant=tenant, conversation_id=conversation_id, token=token)
        raise
    keys = 0
    if cache_reached:
        try:
            if messages_only:  # the memory document and the seq clock stay cached
                keys = cache.clear_messages(
                    tenant_slug=tenant.slug, conversation_id=conversation_id, token=token, erased_before=erased_before
                )
            else:  # the lock goes too
                keys = cache.erase(tenant_slug=tenant.slug, conversation_id=conversation_id, erased_before=erased_before)
        except cache.CacheUnavailable:
            CacheRepair.objects.for_tenant(tenant).get_or_create(
                tenant=tenant, conversation_id=conversation_id, defaults={"erase": True}
            )
    logger.info(
        "conversation_messages_cleared" if messages_only else "conversation_erased",
        tenant=tenant.slug,
        conversation_id=conversation_id,
        messages=deleted,
        cache_keys=keys,
    )
    return EraseResult(messages=deleted, cache_keys=keys)


def retention_sweep(*, now: datetime | None = None) -> int:
    """Erase every conversation idle for longer than its tenant's ``MEMORY_RETENTION_DAYS`` (0: kept);
    returns how many. Each goes as ``conversation_erase`` erases it, so nothing is left behind."""
    now = now or timezone.now()
    erased = 0
    for tenant in Tenant.objects.all():
        days = tenant.setting("MEMORY_RETENTION_DAYS")
        if not days:
            continue
        expired = Conversation.objects.for_tenant(tenant).filter(updated_at__lt=now - timedelta(days=days))
        count = 0
        for conversation_id in list(expired.values_list("conversation_id", flat=True)):
            try:
                conversation_erase(tenant=tenant, conversation_id=conversation_id)
            except NotFound:
                continue
            count += 1
        if count:
            logger.info("retention_swept", tenant=tenant.slug, days=days, conversations=count)
        erased += count
    return erased

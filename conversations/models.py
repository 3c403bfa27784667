"""Conversations, their messages and the bookkeeping of the write path.

``Conversation`` is a ``conversation_memories`` row (one per tenant and conversation id,
with the memory document), extended with the owner ids and the archive flag. ``Message`` is
``conversation_messages`` with a per-conversation ``seq``: the total order, assigned at write time
and identical in Redis and PostgreSQL. Tenant-owned models refuse unscoped queries
(``tenants.managers``).

``conversation_messages`` is partitioned by a hash of ``tenant_id`` (``conversations.partitioning``):
its primary key in PostgreSQL is ``(id, tenant_id)`` (Django still sees ``id``), and every unique
constraint ends with ``tenant`` because PostgreSQL wants the partition key in each of them.
"""

import hashlib
import hmac
import uuid

from django.conf import settings
from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVector
from django.db import models
from django.db.models import Q
from django.db.models.fields.json import KeyTextTransform

from core.jsonb import JsonbEncoder
from tenants.managers import TenantManager, UnscopedManager
from tenants.models import Tenant


class Role(models.TextChoices):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class Conversation(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    conversation_id = models.CharField(max_length=200)
    user_id = models.CharField(max_length=200, blank=True, default="")
    agent_id = models.CharField(max_length=200, blank=True, default="")
    archived = models.BooleanField(default=False)
    # The memory document (get_memory / save_memory) and its standardised metadata. Written with
    # JsonbEncoder: floats come back floats (core.jsonb).
    memory = models.JSONField(default=dict, blank=True, encoder=JsonbEncoder)
    metadata = models.JSONField(default=dict, blank=True, encoder=JsonbEncoder)
    # Write-time version of the memory document: a later save never loses to an earlier one.
    memory_revision = models.BigIntegerField(default=0)
    # Highest seq handed out or persisted for this conversation.
    last_seq = models.BigIntegerField(default=0)
    message_count = models.PositiveIntegerField(default=0)
    token_count = models.PositiveBigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "conversation_memories"
        constraints = [
            models.UniqueConstraint(fields=["tenant", "conversation_id"], name="conversation_unique_per_tenant"),
        ]
        indexes = [
            models.Index(fields=["tenant", "user_id", "-updated_at"], name="conversation_user_recent"),
            models.Index(fields=["tenant", "agent_id", "-updated_at"], name="conversation_agent_recent"),
            # The admin's list, newest activity first, pk as the tie-breaker it adds.
            models.Index(fields=["tenant", "-updated_at", "-id"], name="conversation_tenant_recent"),
            models.Index(fields=["-updated_at", "-id"], name="conversation_recent"),  # superusers: every tenant
            # The admin's search by the beginning of a conversation id (LIKE 'abc%' in any collation).
            models.Index(
                fields=["tenant", "conversation_id"], name="conversation_id_prefix", opclasses=["int8_ops", "varchar_pattern_ops"]
            ),
        ]

    def __str__(self) -> str:
        return self.conversation_id


# The words of a message for keyword search. The "simple" configuration neither stems nor drops stop
# words, so it serves every language the same way; queries must use this exact expression to hit
# the index (``selectors.messages_matching``).
CONTENT_WORDS = SearchVector("content", config="simple")
# The terms BM25 ranks by (``search.ranking``): the speaker's ``name`` and the text, stemmed, stop words
# dropped. The name is there because questions name who said a thing ("What did Caroline adopt?")
# while people seldom say their own name: without it, the name's only matches are the turns where
# someone else greets or addresses them. The SQL there repeats this expression exactly, so the index
# serves it.
CONTENT_TERMS = SearchVector(KeyTextTransform("name", "metadata"), "content", config="english")


class Message(models.Model):
    # The id the API shows is ``message_id``: chosen by the client (or generated), unique within its
    # conversation like the cache key ``<tenant>:<conv>:message:<id>`` it names. The same id in two
    # conversations names two messages, so one conversation's writes can never collide with another's.
    id = models.BigAutoField(primary_key=True)
    message_id = models.UUIDField(default=uuid.uuid4, editable=False)
    # No index of their own: in a tenant's partition, indexes that start with the tenant
    # (``message_persisted``) or with the conversation (the seq constraint's) serve them, and the
    # foreign keys' checks.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="messages", db_index=False)
    seq = models.BigIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    # With the content parts (content_parts.py); written with JsonbEncoder, by persist's SQL too.
    metadata = models.JSONField(default=dict, blank=True, encoder=JsonbEncoder)
    archived = models.BooleanField(default=False)
    token_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField()
    persisted_at = models.DateTimeField(auto_now_add=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "conversation_messages"
        # A conversation belongs to one tenant, so ``tenant`` at the end changes nothing of what is
        # unique; it is there because a partitioned table's unique constraints must hold its partition
        # key. The seq constraint's index is also the window's (newest first within one conversation,
        # scanned backwards) and the one the foreign key's checks use when a conversation is deleted.
        constraints = [
            models.UniqueConstraint(fields=["conversation", "seq", "tenant"], name="message_seq_unique_per_conversation"),
            models.UniqueConstraint(fields=["conversation", "message_id", "tenant"], name="message_id_unique_per_conversation"),
        ]
        indexes = [
            models.Index(fields=["tenant", "conversation", "created_at"], name="message_by_date"),
            # Keyword search over the content.
            GinIndex(CONTENT_WORDS, name="message_search"),
            GinIndex(CONTENT_TERMS, name="message_terms"),
            # Recently persisted messages without a vector: the embeddings backfill and the lag in /metrics.
            models.Index(fields=["tenant", "persisted_at"], name="message_persisted"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id}#{self.seq} {self.role}"


TOMBSTONE_KEY_PREFIX = "hmac-sha256:"


def tombstone_secrets() -> list[str]:
    """The secrets of the tombstones' HMAC, newest first: ``MEMORY_TOMBSTONE_KEYS``, else
    ``SECRET_KEY`` then ``SECRET_KEY_FALLBACKS``."""
    configured = [key.strip() for key in settings.MEMORY_TOMBSTONE_KEYS if key.strip()]
    return configured or [settings.SECRET_KEY, *settings.SECRET_KEY_FALLBACKS]


def tombstone_digest(digest: str, secret: str) -> str:
    """The key of a tombstone from the SHA-256 (hex) of its conversation id: what a tombstone kept
    before it was keyed, so that those can be keyed in place (migration 0006)."""
    mac = hmac.new(f"memory-service tombstones:{secret}".encode(), digest.encode(), hashlib.sha256)
    return TOMBSTONE_KEY_PREFIX + mac.hexdigest()


def tombstone_keys(conversation_id: str) -> list[str]:
    """Every key a tombstone of this conversation may be stored under, one per secret, newest first."""
    digest = hashlib.sha256(conversation_id.encode()).hexdigest()
    return [tombstone_digest(digest, secret) for secret in tombstone_secrets()]


def tombstone_key(conversation_id: str) -> str:
    """What a tombstone keeps of a conversation id: an HMAC with a deployment secret, so an erased
    conversation (or user) leaves nothing readable behind and no guessed id can be confirmed by
    hashing it, while a queued task can still be matched against it. New tombstones are keyed with
    the newest secret; ``tombstone_keys`` finds those keyed with an older one."""
    return tombstone_keys(conversation_id)[0]


class Tombstone(models.Model):
    """An erased conversation, or its cleared messages: persist tasks still queued for it with an
    older seq (or memory revision) are dropped. Found by ``tombstone_keys(conversation_id)``."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    conversation_key = models.CharField(max_length=200)
    erased_before_seq = models.BigIntegerField()
    # Memory saves older than this are dropped too (0: the messages were cleared, the memory kept).
    memory_erased_before = models.BigIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "conversation_key"], name="tombstone_unique_per_conversation"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.conversation_key[:19]} erased before {self.erased_before_seq}"


class CacheRepair(models.Model):
    """A conversation whose cached list may have missed a persisted write (Redis was unreachable).

    The sweeper invalidates its cache once Redis answers, so the next read rebuilds it.
    """

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    conversation_id = models.CharField(max_length=200)
    # Erase every key (the conversation was erased while Redis was down) rather than invalidate.
    erase = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "conversation_id"], name="cache_repair_unique_per_conversation"),
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}:{self.conversation_id} ({'erase' if self.erase else 'invalidate'})"


class DeadLetter(models.Model):
    """A task that failed for good: kept whole so an operator can see why and replay it."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", null=True, blank=True)
    task_name = models.CharField(max_length=200)
    payload = models.JSONField(encoder=JsonbEncoder)  # replayed as it was: floats stay floats (core.jsonb)
    error = models.TextField()
    attempts = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    replayed_at = models.DateTimeField(null=True, blank=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "-created_at"], name="dead_letter_recent"),
            models.Index(fields=["created_at"], name="dead_letter_unreplayed", condition=Q(replayed_at__isnull=True)),
        ]

    def __str__(self) -> str:
        return f"{self.task_name} ({self.created_at:%Y-%m-%d %H:%M})"


class LedgerEpoch(models.Model):
    """A ledger of pending writes begun in Redis (``cache.ledger_status``), by its start in Redis time.

    The first ledger a deployment ever begins is whole at once (nothing was acknowledged before it);
    a later one was begun because Redis lost the last one, and waits for the writes that may still
    be queued (``services.ledger_is_whole``). Not tenant data: one row per Redis loss.
    """

    since = models.BigIntegerField(unique=True)
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"ledger since {self.since}"

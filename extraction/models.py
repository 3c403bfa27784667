"""Memories extracted from conversations: what a user's conversations say about them and the people
they talk about, kept as current statements with their history.

A ``Memory`` is one statement about a ``subject`` (the user, or a person they named) of one user of
one tenant: a fact, a preference, an event (with its date when the conversation gives one) or a
relation between people. It holds from ``valid_from`` and, once the world changed, until
``valid_to`` (a memory with one is no longer current, never erased by a delete). ``message_ids``
are the public ids of the messages it was read from, and ``conversation_pks`` their conversations,
so that erasing a conversation erases what was derived from it.

Its past is kept twice over. When the conversation says the statement changed (the user moved), the
memory keeps its id and takes the new version, and the version it replaced becomes a memory of its
own, ``version_of`` it, holding from its ``valid_from`` until the new version began (its
``valid_to``), with its own text and sources: a question about a time ("where did she live in
2022?") finds what held then among memories like any other. And every change adds a
``MemoryChange`` holding the version it made and the text it replaced. Only an erase removes either.

Times are checked at the door (``core.storable.storable_datetime``) and again by the database
(``CheckConstraint``): a time that could not be read back can never be stored.

``ExtractionUsage`` counts, per tenant and UTC day, the extractor's model calls and tokens (what its
daily bounds are held to), the reads the bounds skipped and the ones that failed for good.

``ExtractionWatermark`` is how far the extractor has read a conversation (its ``read_through_seq``):
applying a read of turns already read changes nothing. Tenant-owned models refuse unscoped queries
(``tenants.managers``).
"""

import uuid

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.indexes import GinIndex
from django.db import models
from django.db.models import Q
from django.utils import timezone

from conversations.models import Conversation
from core.storable import EARLIEST_STORABLE, LATEST_STORABLE
from tenants.managers import TenantManager, UnscopedManager
from tenants.models import Tenant


def storable_time(field: str) -> Q:
    """A time column that is empty or within what can be stored and read back (``core.storable``)."""
    return Q(**{f"{field}__isnull": True}) | Q(**{f"{field}__gte": EARLIEST_STORABLE, f"{field}__lte": LATEST_STORABLE})


class MemoryKind(models.TextChoices):
    FACT = "fact"
    PREFERENCE = "preference"
    EVENT = "event"
    RELATION = "relation"


class Memory(models.Model):
    # No index of its own: the user's index starts with the tenant.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    memory_id = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    user_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=MemoryKind.choices)
    subject = models.CharField(max_length=200)
    text = models.TextField()
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    confidence = models.FloatField(default=1.0)
    message_ids = ArrayField(models.UUIDField(), default=list)
    conversation_pks = ArrayField(models.BigIntegerField(), default=list)
    model = models.CharField(max_length=200, blank=True, default="")
    # Set on a version an update replaced: the memory that holds on (its history is that memory's).
    version_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="past_versions", editable=False
    )
    # The text's vector (unit float32, little-endian) under ``embedding_model``, for search.
    embedding = models.BinaryField(null=True, blank=True, editable=False)
    embedding_model = models.CharField(max_length=200, blank=True, default="", editable=False)
    # Set by the services, not auto_now: a memory and its change of one apply share one instant.
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "extracted_memories"
        verbose_name_plural = "memories"
        indexes = [
            # A user's memories, most recently changed first (the list, the extractor's related memories).
            models.Index(fields=["tenant", "user_id", "-updated_at"], name="memory_user_recent"),
            # The memories derived from a conversation (its erase).
            GinIndex(fields=["conversation_pks"], name="memory_conversations"),
        ]
        constraints = [
            models.CheckConstraint(condition=storable_time("valid_from"), name="memory_valid_from_storable"),
            models.CheckConstraint(condition=storable_time("valid_to"), name="memory_valid_to_storable"),
        ]

    def __str__(self) -> str:
        return f"{self.user_id}: {self.subject}: {self.text[:60]}"

    @property
    def current(self) -> bool:
        return self.valid_to is None


class MemoryAction(models.TextChoices):
    ADD = "add"
    UPDATE = "update"
    DELETE = "delete"
    MERGE = "merge"  # a near-duplicate of it was read again: its sources joined


class MemoryChange(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    memory = models.ForeignKey(Memory, on_delete=models.CASCADE, related_name="changes")
    action = models.CharField(max_length=8, choices=MemoryAction.choices)
    # The version this change made (for a delete: the statement taken back, with its valid_to).
    text = models.TextField()
    previous_text = models.TextField(null=True, blank=True)  # noqa: DJ001 - null is "nothing replaced", unlike any text
    valid_from = models.DateTimeField(null=True, blank=True)
    valid_to = models.DateTimeField(null=True, blank=True)
    confidence = models.FloatField(default=1.0)
    message_ids = ArrayField(models.UUIDField(), default=list)  # the messages this change was read from
    model = models.CharField(max_length=200, blank=True, default="")
    changed_at = models.DateTimeField(default=timezone.now)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "extracted_memory_changes"
        indexes = [models.Index(fields=["memory", "-changed_at"], name="memory_change_newest")]
        constraints = [
            models.CheckConstraint(condition=storable_time("valid_from"), name="memory_change_valid_from_storable"),
            models.CheckConstraint(condition=storable_time("valid_to"), name="memory_change_valid_to_storable"),
        ]

    def __str__(self) -> str:
        return f"{self.action} {self.memory_id}"


class ExtractionWatermark(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    conversation = models.OneToOneField(Conversation, on_delete=models.CASCADE, related_name="+")
    read_through_seq = models.BigIntegerField(default=0)
    updated_at = models.DateTimeField(default=timezone.now)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "extraction_watermarks"

    def __str__(self) -> str:
        return f"{self.conversation_id} read through {self.read_through_seq}"


class ExtractionUsage(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    day = models.DateField()  # UTC
    calls = models.PositiveIntegerField(default=0)
    tokens = models.PositiveBigIntegerField(default=0)
    turns_read = models.PositiveIntegerField(default=0)
    # Reads a daily bound put off (their turns stay unread, and are read once the bound allows).
    skipped_reads = models.PositiveIntegerField(default=0)
    skipped_turns = models.PositiveIntegerField(default=0)
    failed_calls = models.PositiveIntegerField(default=0)  # each failed attempt, retried or not
    # Operations of answers applied that the rules refused (a memory not the user's, no source read).
    refused_operations = models.PositiveIntegerField(default=0)
    dead_letters = models.PositiveIntegerField(default=0)

    # What is counted, in the order the status and the admin show it.
    COUNTED = (
        "calls",
        "tokens",
        "turns_read",
        "skipped_reads",
        "skipped_turns",
        "failed_calls",
        "dead_letters",
        "refused_operations",
    )

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "extraction_usage"
        verbose_name_plural = "extraction usage"
        constraints = [models.UniqueConstraint(fields=["tenant", "day"], name="extraction_usage_per_day")]

    def __str__(self) -> str:
        return f"{self.day}: {self.calls} calls, {self.tokens} tokens"

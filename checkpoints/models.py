"""Agent checkpoints (save_checkpoint / load_checkpoint), the storage of a LangGraph checkpointer.

A ``Checkpoint`` is the state of an agent's graph at one step, in one namespace (the root graph is
``""``, a subgraph something like ``"node:uuid|sub:uuid"``) of one conversation. Its id is the
client's own string, unique within that conversation and namespace. "Newest" always means the
highest row ``id`` (insertion order), never the order of the checkpoint id text. A
``CheckpointWrite`` is one pending write of a graph task against a checkpoint. Tenant-owned models
refuse unscoped queries (``tenants.managers``).
"""

from django.db import models

from conversations.models import Conversation
from core.jsonb import JsonbEncoder
from tenants.managers import TenantManager, UnscopedManager
from tenants.models import Tenant


class Checkpoint(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # No index of its own: the unique constraint's index starts with the conversation.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="checkpoints", db_index=False)
    namespace = models.CharField(max_length=255, blank=True, default="")
    checkpoint_id = models.CharField(max_length=64)
    parent_id = models.CharField(max_length=64, blank=True, default="")
    # Written with JsonbEncoder: floats come back floats (core.jsonb).
    state = models.JSONField(encoder=JsonbEncoder)
    metadata = models.JSONField(default=dict, blank=True, encoder=JsonbEncoder)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["conversation", "namespace", "checkpoint_id"], name="checkpoint_unique_per_conversation"
            ),
        ]
        indexes = [
            # The latest checkpoint, the list newest first and the retention cut of one namespace.
            models.Index(fields=["tenant", "conversation", "namespace", "-id"], name="checkpoint_newest"),
        ]

    def __str__(self) -> str:
        return self.checkpoint_id


class CheckpointWrite(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # No index of its own: the unique constraint's index starts with the checkpoint.
    checkpoint = models.ForeignKey(Checkpoint, on_delete=models.CASCADE, related_name="writes", db_index=False)
    task_id = models.CharField(max_length=255)
    task_path = models.CharField(max_length=512, blank=True, default="")
    # Negative for LangGraph's special channels (error, interrupt, scheduled, resume).
    idx = models.IntegerField()
    channel = models.CharField(max_length=255)
    value = models.JSONField(null=True, encoder=JsonbEncoder)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["checkpoint", "task_id", "idx"], name="checkpoint_write_unique_per_task"),
        ]

    def __str__(self) -> str:
        return f"{self.task_id}#{self.idx} {self.channel}"

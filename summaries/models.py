"""Periodic conversation summaries: what a window of a conversation said, in a few lines.

A ``Summary`` is written every ``MEMORY_SUMMARY_EVERY`` message pairs (a pair is a user message and
the replies before the next one) over the last ``MEMORY_SUMMARY_WINDOW`` messages of that pair, or
on an explicit request. ``pair_count`` is the number of pairs the conversation had when the summary
was due, and at most one summary exists per conversation and pair count: that is what makes the
task that writes them idempotent. ``model`` names the chat model that wrote the text, or
``rule_based``. Tenant-owned: the default manager refuses unscoped queries (``tenants.managers``).
"""

from django.db import models

from conversations.models import Conversation
from tenants.managers import TenantManager, UnscopedManager
from tenants.models import Tenant


class Summary(models.Model):
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # No index of its own: the unique constraint's index starts with the conversation.
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="summaries", db_index=False)
    text = models.TextField()
    model = models.CharField(max_length=200)
    message_count = models.PositiveIntegerField()
    pair_count = models.PositiveIntegerField()
    # The seqs of the first and last message summarised.
    first_seq = models.BigIntegerField()
    last_seq = models.BigIntegerField()
    token_count = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "conversation_summaries"
        verbose_name_plural = "summaries"
        constraints = [
            models.UniqueConstraint(fields=["conversation", "pair_count"], name="summary_unique_per_pair_count"),
        ]
        indexes = [
            # A conversation's summaries newest first (the API list and the context).
            models.Index(fields=["tenant", "conversation", "-created_at"], name="summary_newest"),
        ]

    def __str__(self) -> str:
        return f"{self.conversation_id} after {self.pair_count} pairs ({self.model})"

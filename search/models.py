"""Message embeddings: one vector per message and embedding model, the vector side of search.

A vector is stored as little-endian float32 bytes of unit length, with the model's name and
dimension, so any PostgreSQL serves it (the machine's PostgreSQL 15 has no pgvector; the embedded
PostgreSQL 16 has, and needs nothing of it) and two models' vectors never mix: search reads only
rows of the tenant's current model, and re-embedding with another model writes new rows beside the
old ones before it removes them (``manage.py reembed``). ``seq`` repeats the message's, so "the newest
N vectors of a conversation" is one index range. Rows go with their message (cascade), hence with
every erase.

``message_embeddings`` is partitioned like ``conversation_messages``, by a hash of ``tenant_id`` with
the same modulus, so a tenant's vectors and messages sit in partitions of the same number. A
partitioned table's ``id`` alone is not unique to PostgreSQL, so the link to the message is a
composite foreign key in the database, ``(message_id, tenant_id)`` to the message's ``(id,
tenant_id)``, ``ON DELETE CASCADE`` (``conversations.partitioning``): Django keeps ``message`` as a
plain relation without a constraint of its own and leaves the cascade to PostgreSQL, which runs it
with the tenant, in one partition.
"""

from django.db import models

from conversations.models import Conversation, Message
from tenants.managers import TenantManager, UnscopedManager
from tenants.models import Tenant


class MessageEmbedding(models.Model):
    # No index of its own: ``embedding_tenant_model`` starts with the tenant.
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+", db_index=False)
    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="+", db_index=False)
    # No index of its own: the unique constraint's index starts with the message. The database deletes
    # a message's vectors with it (the composite foreign key above): DO_NOTHING here lets a message's
    # delete be one statement, rather than Django's own cascade asking every partition by id.
    message = models.ForeignKey(
        Message, on_delete=models.DO_NOTHING, related_name="embeddings", db_index=False, db_constraint=False
    )
    seq = models.BigIntegerField()
    model = models.CharField(max_length=200)
    dimensions = models.PositiveIntegerField()
    vector = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    objects = TenantManager()
    unscoped = UnscopedManager()

    class Meta:
        db_table = "message_embeddings"
        constraints = [
            # ``tenant`` last: the partition key, which every unique constraint of the table must hold.
            models.UniqueConstraint(fields=["message", "model", "tenant"], name="embedding_unique_per_message_model"),
        ]
        indexes = [
            # Whether a conversation's vectors under one model changed (their number, their highest id:
            # ``search.vectors``), read from the index alone at every search.
            models.Index(fields=["conversation", "model", "id"], include=["tenant"], name="embedding_signature"),
            models.Index(fields=["tenant", "model"], name="embedding_tenant_model"),
        ]

    def __str__(self) -> str:
        return f"{self.message_id} ({self.model}, {self.dimensions})"

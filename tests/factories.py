"""factory_boy factories for the models tests need."""

from datetime import datetime

import factory
from django.utils import timezone
from faker import Faker

from conversations.models import Conversation, Message
from extraction.models import Memory
from extraction.services import memories_apply, memories_embed, messages_read, operations_parse
from tenants.models import Tenant

fake = Faker()


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda tenant: tenant.slug.title())


def message_payload(**overrides: object) -> dict:
    """A realistic message body for the append endpoint."""
    body = {"role": "user", "content": fake.paragraph(nb_sentences=3)}
    body.update(overrides)
    return body


def conversation_with_messages(
    tenant: Tenant,
    conversation_id: str,
    count: int = 0,
    *,
    rows: list[tuple[str, str, dict]] | list[tuple[str, str, dict, datetime]] | None = None,
    **fields: object,
) -> Conversation:
    """A persisted conversation with seqs 1..n: ``rows`` of (role, content, metadata), optionally
    with a fourth item, the message's ``created_at`` (else now), or ``count`` messages alternating
    user and assistant."""
    if rows is None:
        rows = [("user" if seq % 2 else "assistant", f"message {seq}: {fake.sentence()}", {}) for seq in range(1, count + 1)]
    conversation = Conversation.objects.for_tenant(tenant).create(
        tenant=tenant, conversation_id=conversation_id, message_count=len(rows), last_seq=len(rows), **fields
    )
    now = timezone.now()
    Message.objects.for_tenant(tenant).bulk_create(
        (
            Message(
                tenant=tenant,
                conversation=conversation,
                seq=seq,
                role=role,
                content=content,
                metadata=metadata,
                created_at=created_at or now,
                token_count=len(content.split()),
            )
            for seq, (role, content, metadata, created_at) in enumerate(((*row, None)[:4] for row in rows), start=1)
        ),
        batch_size=2000,
    )
    return conversation


def extracted_memories(tenant: Tenant, *operations: dict, user_id: str, conversation_id: str = "said") -> list[Memory]:
    """The user's memories once an extractor's ``operations`` (``{"op": "add", "kind", "subject",
    "text", ...}``) are applied to a conversation of theirs, each read from its first message, and
    embedded, as an extraction run applies a model's answer (``extraction.runs``): oldest first."""
    said = [("user", "I moved to Boston last week, my sister Ana loves pottery.", {}), ("assistant", "Lovely!", {})]
    conversation = conversation_with_messages(tenant, conversation_id, rows=said, user_id=user_id)
    read = messages_read(tenant=tenant, conversation=conversation)
    sources = [str(read[0].message_id)]
    memories_apply(
        tenant=tenant,
        conversation=conversation,
        read_through_seq=conversation.last_seq,
        read=read,
        operations=operations_parse({"operations": [{**operation, "sources": sources} for operation in operations]}),
        model="scripted-model",
    )
    memories_embed(tenant=tenant, user_id=user_id)
    return list(Memory.objects.for_tenant(tenant).filter(user_id=user_id).order_by("created_at", "pk"))

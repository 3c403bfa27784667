"""Fixtures of the summaries tests: the fake chat model, and conversations stored pair by pair."""

from collections.abc import Iterator
from typing import Any

import pytest
from django.utils import timezone

from conversations.models import Conversation, Message
from tests.summaries import fakes


@pytest.fixture
def fake_model(settings: Any) -> Iterator[Any]:
    """The deployment's summary model is the recording fake; its calls are in ``fakes.calls``."""
    fakes.reset()
    settings.MEMORY_SUMMARY_MODEL = fakes.SPEC
    yield fakes
    fakes.reset()


def store(tenant: Any, conversation_id: str, rows: list[tuple[str, str] | tuple[str, str, dict]], **fields: Any) -> Conversation:
    """Persist ``rows`` of (role, content[, metadata]) after the conversation's last message, as
    the persist worker would; the conversation is created on its first rows."""
    conversation, _ = Conversation.objects.for_tenant(tenant).get_or_create(
        tenant=tenant, conversation_id=conversation_id, defaults=fields
    )
    last = Message.objects.for_tenant(tenant).filter(conversation=conversation).order_by("-seq").first()
    first_seq = (last.seq if last else conversation.last_seq) + 1
    now = timezone.now()
    Message.objects.for_tenant(tenant).bulk_create(
        Message(
            tenant=tenant,
            conversation=conversation,
            seq=seq,
            role=row[0],
            content=row[1],
            metadata=row[2] if len(row) > 2 else {},
            created_at=now,
            token_count=len(row[1].split()),
        )
        for seq, row in enumerate(rows, start=first_seq)
    )
    Conversation.objects.for_tenant(tenant).filter(pk=conversation.pk).update(last_seq=first_seq + len(rows) - 1)
    return conversation


def pairs(first: int, last: int) -> list[tuple[str, str]]:
    """Question and answer number ``first`` to ``last``: "question 7", "answer 7"."""
    rows: list[tuple[str, str]] = []
    for number in range(first, last + 1):
        rows += [("user", f"question {number}"), ("assistant", f"answer {number}")]
    return rows


@pytest.fixture
def conversation_of(tenant: Any) -> Any:
    """``conversation_of(id, rows)``: acme's conversation with these rows appended."""

    def make(conversation_id: str, rows: list, **fields: Any) -> Conversation:
        return store(tenant, conversation_id, rows, **fields)

    return make

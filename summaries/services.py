"""Writes: the periodic summary of a conversation, and one made on request.

A **pair** is a user message and the replies before the next user message; a conversation's pair
count is its number of user messages (archived messages are left out, as in the context). The
periodic summary (``conversation_summarize``, run by a task after every persisted batch):

1. It is due at pair count ``m``, the largest multiple of ``MEMORY_SUMMARY_EVERY`` (the tenant's
   value; 0 turns summaries off) not above the pair count, when no summary exists for ``m`` yet.
   Only that newest ``m``: older multiples missed are not filled in.
2. It waits for the ``m``-th pair to end: the next user message has arrived, or the newest message
   is an assistant's final answer (one that calls no tool). A summary written between a question
   and its answer would miss the answer for good.
3. It summarises the last ``MEMORY_SUMMARY_WINDOW`` messages up to the end of the ``m``-th pair,
   with the tenant's ``MEMORY_SUMMARY_MODEL`` (``summaries.summarizer``), and stores it.

``summary_create_now`` summarises the last ``MEMORY_SUMMARY_WINDOW`` messages at once, under the
current pair count. At most one summary exists per conversation and pair count (a unique
constraint): a task run twice, or racing a request, stores one row and the loser returns it. A
stored summary whose messages are older than the pair it is filed under (the history was cleared
since, and the seqs moved on) is written again. No transaction is held while the model answers.

Only persisted messages are read (PostgreSQL), never the cache's pending writes. A model's summary
comes cleaned by ``summaries.summarizer`` (``core.storable.cleaned_text``), so whatever the
model answered, the row can be stored.
"""

from dataclasses import dataclass
from typing import Any

import structlog
from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from conversations import tokens
from conversations.models import Conversation, Message, Role
from conversations.services import message_to_dict
from core.exceptions import Conflict, NotFound
from memory_wire.messages import tool_calls_of
from summaries import summarizer
from summaries.models import Summary
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Stored:
    summary: Summary
    created: bool  # False: another run had filed one under this pair count first


def conversation_summarize(*, tenant: Tenant, conversation_id: str) -> Summary | None:
    """The periodic summary, if one is due now (see the module docstring); None otherwise.

    A conversation that does not exist (erased since its messages were persisted) is not an error.
    """
    conversation = _conversation(tenant=tenant, conversation_id=conversation_id)
    if conversation is None:
        logger.info("summary_skipped", tenant=tenant.slug, conversation_id=conversation_id, reason="no_conversation")
        return None
    every = tenant.setting("MEMORY_SUMMARY_EVERY")
    if every <= 0:
        return None
    messages = _messages(tenant=tenant, conversation=conversation)
    due = messages.filter(role=Role.USER).count() // every * every
    if due == 0:
        return None
    question_seqs = list(messages.filter(role=Role.USER).order_by("seq").values_list("seq", flat=True)[due - 1 : due + 1])
    pair_start, next_question = question_seqs[0], question_seqs[1] if len(question_seqs) > 1 else None
    existing = _current(tenant=tenant, conversation=conversation, pair_count=due, pair_start=pair_start)
    if existing is not None:
        return None
    through_pair = messages if next_question is None else messages.filter(seq__lt=next_question)
    window = _newest(through_pair, size=tenant.setting("MEMORY_SUMMARY_WINDOW"))
    if not window or (next_question is None and not _pair_ended(window, pair_start=pair_start)):
        return None
    result = _store(tenant=tenant, conversation=conversation, pair_count=due, pair_start=pair_start, window=window)
    return result.summary if result is not None and result.created else None


def summary_create_now(*, tenant: Tenant, conversation_id: str) -> Summary:
    """Summarise the conversation's last ``MEMORY_SUMMARY_WINDOW`` messages now.

    Filed under the current pair count: if a summary is filed there already, that one is returned.
    NotFound for a missing conversation, Conflict for one with no persisted message.
    """
    conversation = _conversation(tenant=tenant, conversation_id=conversation_id)
    if conversation is None:
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    messages = _messages(tenant=tenant, conversation=conversation)
    pair_count = messages.filter(role=Role.USER).count()
    pair_start = messages.filter(role=Role.USER).order_by("-seq").values_list("seq", flat=True).first() if pair_count else None
    existing = _current(tenant=tenant, conversation=conversation, pair_count=pair_count, pair_start=pair_start)
    if existing is not None:
        return existing
    window = _newest(messages, size=tenant.setting("MEMORY_SUMMARY_WINDOW"))
    if not window:
        raise Conflict(f"Conversation {conversation_id} has no persisted message to summarise.")
    result = _store(tenant=tenant, conversation=conversation, pair_count=pair_count, pair_start=pair_start, window=window)
    if result is None:  # erased while the model was answering
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    return result.summary


# --- Steps ----------------------------------------------------------------------------------------


def _conversation(*, tenant: Tenant, conversation_id: str) -> Conversation | None:
    # Only the key: the memory document can be large and is not needed here.
    return Conversation.objects.for_tenant(tenant).only("id", "conversation_id").filter(conversation_id=conversation_id).first()


def _messages(*, tenant: Tenant, conversation: Conversation) -> QuerySet[Message]:
    return Message.objects.for_tenant(tenant).filter(conversation=conversation, archived=False)


def _newest(messages: QuerySet[Message], *, size: int) -> list[dict[str, Any]]:
    """The newest ``size`` of ``messages``, oldest first, as message dicts."""
    if size <= 0:
        return []
    return [message_to_dict(row) for row in list(messages.order_by("-seq")[:size])[::-1]]


def _pair_ended(window: list[dict[str, Any]], *, pair_start: int) -> bool:
    """The pair that starts at ``pair_start`` has its final answer: its newest message, after the
    question, is an assistant message that calls no tool."""
    last = window[-1] if window else None
    return (
        last is not None
        and last["seq"] > pair_start
        and last["role"] == Role.ASSISTANT
        and not tool_calls_of(last.get("metadata") or {})
    )


def _current(*, tenant: Tenant, conversation: Conversation, pair_count: int, pair_start: int | None) -> Summary | None:
    """The summary filed under ``pair_count``, unless it predates that pair's question (stale)."""
    existing = Summary.objects.for_tenant(tenant).filter(conversation=conversation, pair_count=pair_count).first()
    if existing is None or (pair_start is not None and existing.last_seq < pair_start):
        return None
    return existing


def _store(
    *, tenant: Tenant, conversation: Conversation, pair_count: int, pair_start: int | None, window: list[dict[str, Any]]
) -> Stored | None:
    """Summarise ``window`` and file it under ``pair_count``; the stored row if another run did first.

    None when the conversation was erased meanwhile.
    """
    model_spec = tenant.setting("MEMORY_SUMMARY_MODEL") or ""
    written = summarizer.summarize(window, model_spec=model_spec, timeout=settings.MEMORY_SUMMARY_TIMEOUT)
    values = {
        "text": written.text,
        "model": written.model,
        "message_count": len(window),
        "first_seq": window[0]["seq"],
        "last_seq": window[-1]["seq"],
        "token_count": tokens.count(written.text),
    }
    scoped = Summary.objects.for_tenant(tenant)
    try:
        with transaction.atomic():
            if pair_start is not None:  # a summary of messages from before a cleared history
                scoped.filter(conversation=conversation, pair_count=pair_count, last_seq__lt=pair_start).delete()
            summary = scoped.create(tenant=tenant, conversation=conversation, pair_count=pair_count, **values)
    except IntegrityError:
        # Written meanwhile by another run (that one stands), or the conversation was erased while
        # the model answered (the foreign key, checked at commit, fails).
        summary = scoped.filter(conversation=conversation, pair_count=pair_count).first()
        if summary is None:
            return None
        return Stored(summary=summary, created=False)
    logger.info(
        "summary_created",
        tenant=tenant.slug,
        conversation_id=conversation.conversation_id,
        pair_count=pair_count,
        model=summary.model,
        messages=summary.message_count,
        first_seq=summary.first_seq,
        last_seq=summary.last_seq,
        tokens=summary.token_count,
    )
    return Stored(summary=summary, created=True)


def conversation_summaries_erase(*, tenant: Tenant, conversation_id: str, **_: Any) -> int:
    """Summaries quote the messages: a conversation's cleared messages take them along (the receiver
    of ``conversations.services.messages_cleared``, inside the erase's transaction). Returns how many."""
    return Summary.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id).delete()[0]

"""Reads: a conversation's summaries, and the summaries a context carries (the memory bundle's ``summaries``).

Newest first means the latest ``created_at``, then the highest id. ``summaries_list`` starts from the
tenant's conversation (another tenant's, or a missing one, is a 404); PostgreSQL is the only copy,
so when it does not answer the list is a 503. ``summaries_for_context`` serves a context, which must
be built even then (degraded, not down): a missing conversation or an unreachable database gives
fewer summaries or none, never an error.
"""

from datetime import UTC
from typing import Any

import structlog
from django.db import DatabaseError

from conversations.models import Conversation
from core.exceptions import NotFound, ServiceUnavailable
from summaries.models import Summary
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

NEWEST_FIRST = ("-created_at", "-id")
# What a context shows of a summary (not the conversation's memory document).
CONTEXT_FIELDS = ("text", "model", "message_count", "created_at", "conversation__conversation_id")


def database_unavailable() -> ServiceUnavailable:
    return ServiceUnavailable(
        "PostgreSQL is unreachable, and summaries live only there; retry shortly.", code="database_unavailable"
    )


def summary_to_dict(summary: Summary) -> dict[str, Any]:
    """The one JSON shape of a summary in the API."""
    return {
        "text": summary.text,
        "model": summary.model,
        "message_count": summary.message_count,
        "pair_count": summary.pair_count,
        "first_seq": summary.first_seq,
        "last_seq": summary.last_seq,
        "token_count": summary.token_count,
        "created_at": summary.created_at.astimezone(UTC).isoformat(),
    }


def summaries_list(*, tenant: Tenant, conversation_id: str, limit: int) -> list[Summary]:
    """The conversation's newest ``limit`` summaries, newest first."""
    try:
        conversation = Conversation.objects.for_tenant(tenant).only("id").filter(conversation_id=conversation_id).first()
        if conversation is None:
            raise NotFound(f"Conversation {conversation_id} does not exist.")
        return list(Summary.objects.for_tenant(tenant).filter(conversation=conversation).order_by(*NEWEST_FIRST)[:limit])
    except DatabaseError as error:
        raise database_unavailable() from error


def summaries_for_context(
    *, tenant: Tenant, conversation_id: str | None, user_id: str | None, limit: int = 3
) -> list[dict[str, Any]]:
    """The summaries of a memory context: the conversation's newest first, then, while fewer
    than ``limit``, the newest of the same user's other conversations.

    ``user_id`` defaults to the conversation's own user; an empty one names nobody, so
    conversations without a user never share their summaries.
    """
    if limit <= 0:
        return []
    try:
        found = _context_summaries(tenant=tenant, conversation_id=conversation_id, user_id=user_id, limit=limit)
    except DatabaseError as error:
        logger.warning("context_summaries_unavailable", tenant=tenant.slug, conversation_id=conversation_id, error=str(error))
        return []
    return [
        {
            "session_id": summary.conversation.conversation_id,
            "summary": summary.text,
            "message_count": summary.message_count,
            "model": summary.model,
            "timestamp": summary.created_at.astimezone(UTC).isoformat(),
        }
        for summary in found
    ]


def _context_summaries(*, tenant: Tenant, conversation_id: str | None, user_id: str | None, limit: int) -> list[Summary]:
    scoped = Summary.objects.for_tenant(tenant).select_related("conversation").only(*CONTEXT_FIELDS).order_by(*NEWEST_FIRST)
    found: list[Summary] = []
    conversation = None
    if conversation_id is not None:
        conversation = (
            Conversation.objects.for_tenant(tenant).only("id", "user_id").filter(conversation_id=conversation_id).first()
        )
    if conversation is not None:
        found = list(scoped.filter(conversation=conversation)[:limit])
        user_id = user_id if user_id is not None else conversation.user_id
    if user_id and len(found) < limit:
        others = scoped.filter(conversation__user_id=user_id)
        if conversation is not None:
            others = others.exclude(conversation=conversation)
        found += list(others[: limit - len(found)])
    return found

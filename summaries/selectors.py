"""Reads: a conversation's summaries, and the summaries a context carries (the memory bundle's ``summaries``).

Newest first means the latest ``created_at``, then the highest id. ``summaries_list`` starts from the
tenant's conversation (another tenant's, or a missing one, is a 404); PostgreSQL is the only copy,
so when it does not answer the list is a 503. ``summaries_for_context`` serves a context, which must
be built even then (degraded, not down): a missing conversation or an unreachable database gives
fewer summaries or none, never an error.
"""

from datetime import UTC, datetime
from typing import Any

import structlog
from django.db import DatabaseError

from conversations.models import Conversation
from core.exceptions import NotFound, ServiceUnavailable
from core.replica import read_connection
from summaries.models import Summary
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

NEWEST_FIRST = ("-created_at", "-id")
# The summaries of a context in one statement (a user without any costs one query, not three): the
# conversation's newest ``limit`` (part 0), and the newest ``limit`` of the user's other conversations
# (part 1), the user being the conversation's own unless given; an empty user names nobody.
CONTEXT_SUMMARIES_SQL = """
WITH current AS (
    SELECT id, user_id FROM conversation_memories WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s
),
own AS (
    SELECT 0 AS part, c.conversation_id, s.text, s.message_count, s.model, s.created_at, s.id
    FROM conversation_summaries AS s JOIN conversation_memories AS c ON c.id = s.conversation_id
    WHERE s.tenant_id = %(tenant)s AND s.conversation_id = (SELECT id FROM current)
    ORDER BY s.created_at DESC, s.id DESC LIMIT %(limit)s
),
others AS (
    SELECT 1 AS part, c.conversation_id, s.text, s.message_count, s.model, s.created_at, s.id
    FROM conversation_summaries AS s JOIN conversation_memories AS c ON c.id = s.conversation_id
    WHERE s.tenant_id = %(tenant)s AND c.user_id <> ''
      AND c.user_id = COALESCE(%(user)s, (SELECT user_id FROM current))
      AND s.conversation_id IS DISTINCT FROM (SELECT id FROM current)
    ORDER BY s.created_at DESC, s.id DESC LIMIT %(limit)s
)
SELECT part, conversation_id, text, message_count, model, created_at FROM (SELECT * FROM own UNION ALL SELECT * FROM others) AS found
ORDER BY part, created_at DESC, id DESC
"""


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
            "session_id": session_id,
            "summary": text,
            "message_count": message_count,
            "model": model,
            "timestamp": created_at.astimezone(UTC).isoformat(),
        }
        for session_id, text, message_count, model, created_at in found
    ]


def _context_summaries(
    *, tenant: Tenant, conversation_id: str | None, user_id: str | None, limit: int
) -> list[tuple[str, str, int, str, datetime]]:
    """(conversation id, text, message count, model, created at) of each summary of the context, in order."""
    with read_connection().cursor() as cursor:
        cursor.execute(
            CONTEXT_SUMMARIES_SQL, {"tenant": tenant.pk, "conversation": conversation_id, "user": user_id, "limit": limit}
        )
        rows = cursor.fetchall()
    own = [row[1:] for row in rows if row[0] == 0]
    others = [row[1:] for row in rows if row[0] == 1]
    return own + others[: limit - len(own)]

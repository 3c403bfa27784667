"""The memory bundle (``use_memory=true``): what long-term memory adds to a context.

Contract
--------
``memory_bundle`` gathers, for one conversation and the current query: the messages most relevant to
the query (``search``, best first, with similarity, timestamp and conversation; ``filters``, the
search filters of ``search.filters``, narrow what it may find), the recent messages
(the last 6 question/answer pairs), the newest summaries (``summaries``), the user's facts
(``facts``) and the query embedding's dimension. ``render_prompt`` assembles
them in a fixed order within truncation limits (history 10 x 200 characters, summaries
3 x 240, facts 5 in full, similar messages 4 x 200 with scores, recent turns 6 x 180, then the
location if the conversation's metadata has one, then the query). ``relevant_context_block`` is the
part the context endpoint adds to the system message, within a share of the token budget.
"""

from __future__ import annotations

from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError

from conversations import tokens
from conversations.exceptions import NotFound
from facts.selectors import facts_for_context
from search.embeddings import EmbeddingModelError
from search.filters import SearchFilters
from search.selectors import SearchRequest, memory_search
from summaries.selectors import summaries_for_context
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

RECENT_PAIRS = 6
SUMMARIES = 3
FACTS = 8
# The prompt's truncation limits: (items, characters per item; None = in full).
LIMITS = {
    "history": (10, 200),
    "summaries": (3, 240),
    "facts": (5, None),
    "similar": (4, 200),
    "recent": (6, 180),
}


def memory_bundle(
    *,
    tenant: Tenant,
    conversation_id: str,
    user_id: str,
    query: str | None,
    history: list[dict[str, Any]],
    top_k: int | None = None,
    filters: SearchFilters | None = None,
) -> dict[str, Any]:
    similar: list[dict[str, Any]] = []
    dimensions = None
    unavailable = []
    result = None
    if query and query.strip():
        try:
            result = memory_search(
                tenant=tenant,
                # A query longer than a search takes is searched by its beginning, not refused.
                request=SearchRequest.for_tenant(
                    tenant, query=query[: settings.MEMORY_MAX_QUERY_CHARS], top_k=top_k, filters=filters
                ),
                conversation_id=conversation_id,
            )
        except NotFound:
            pass  # nothing persisted yet: nothing to find
        except (DatabaseError, EmbeddingModelError) as error:  # degraded, not down: the rest of the context still serves
            logger.warning("memory_search_unavailable", tenant=tenant.slug, conversation_id=conversation_id, error=repr(error))
            unavailable.append("context")
    if result is not None:
        dimensions = result.query_embedding_dim
        similar = [
            {
                "role": hit.role,
                "content": hit.content,
                "similarity": hit.similarity,
                "score": hit.score,
                "timestamp": hit.created_at.isoformat(),
                "session_id": hit.conversation_id,
                "message_id": hit.message_id,
                "seq": hit.seq,
            }
            for hit in result.hits
        ]
    spoken = [message for message in history if message["role"] in ("user", "assistant") and message.get("content")]
    recent = [
        {"role": message["role"], "content": message["content"], "timestamp": message["created_at"]}
        for message in spoken[-2 * RECENT_PAIRS :]
    ]
    facts: list[dict[str, Any]] = []
    try:
        facts = facts_for_context(tenant=tenant, user_id=user_id, limit=FACTS) if user_id else []
    except DatabaseError as error:
        logger.warning("memory_facts_unavailable", tenant=tenant.slug, error=repr(error))
        unavailable.append("memories")
    return {
        "context": similar,
        "recent_messages": recent,
        "summaries": summaries_for_context(
            tenant=tenant, conversation_id=conversation_id, user_id=user_id or None, limit=SUMMARIES
        ),
        "memories": facts,
        "query_embedding_dim": dimensions,
        "unavailable": unavailable,
    }


def _cut(text: str, limit: int | None) -> str:
    text = " ".join(str(text).split())
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _similar_lines(similar: list[dict[str, Any]], *, exclude: set[str]) -> list[str]:
    items, chars = LIMITS["similar"]
    lines = []
    for item in similar:
        if item["message_id"] in exclude:
            continue
        score = item["similarity"] if item["similarity"] is not None else item["score"]
        lines.append(f"- ({score:.2f}, {item['timestamp'][:10]}) {item['role']}: {_cut(item['content'], chars)}")
        if len(lines) == items:
            break
    return lines


def _relevant_sections(bundle: dict[str, Any], *, exclude: set[str]) -> list[tuple[str, list[str]]]:
    summary_items, summary_chars = LIMITS["summaries"]
    fact_items, _ = LIMITS["facts"]
    return [
        (
            "Summaries of earlier conversation",
            [f"- {_cut(s['summary'], summary_chars)}" for s in bundle["summaries"][:summary_items]],
        ),
        ("Stored user facts", [f"- {fact['key']}: {fact['value']}" for fact in bundle["memories"][:fact_items]]),
        ("Relevant earlier messages", _similar_lines(bundle["context"], exclude=exclude)),
    ]


def relevant_context_block(bundle: dict[str, Any], *, exclude: set[str], max_tokens: int) -> str:
    """Summaries, facts and relevant older messages for the system message; items are dropped from
    the end of each section, last section first, until the block fits ``max_tokens``."""
    sections = [(title, lines) for title, lines in _relevant_sections(bundle, exclude=exclude) if lines]

    def render() -> str:
        return "\n\n".join(f"{title}:\n" + "\n".join(lines) for title, lines in sections if lines)

    text = render()
    while text and tokens.count(text) > max_tokens:
        for _, lines in reversed(sections):
            if lines:
                lines.pop()
                break
        text = render()
    return text


def render_prompt(bundle: dict[str, Any], *, query: str | None, history: list[dict[str, Any]], location: str | None) -> str:
    """The whole prompt, in its assembly order and within its truncation limits."""
    history_items, history_chars = LIMITS["history"]
    recent_items, recent_chars = LIMITS["recent"]
    spoken = [message for message in history if message["role"] in ("user", "assistant") and message.get("content")]
    parts = []
    if spoken:
        lines = [f"- {message['role']}: {_cut(message['content'], history_chars)}" for message in spoken[-history_items:]]
        parts.append("Recent conversation history:\n" + "\n".join(lines))
    relevant = [f"{title}:\n" + "\n".join(lines) for title, lines in _relevant_sections(bundle, exclude=set()) if lines]
    recent = [f"- {item['role']}: {_cut(item['content'], recent_chars)}" for item in bundle["recent_messages"][-recent_items:]]
    if recent:
        relevant.append("Recent turns:\n" + "\n".join(recent))
    if relevant:
        parts.append("Relevant past context:\n\n" + "\n\n".join(relevant))
    if location:
        parts.append(f"User location: {location}")
    if query:
        parts.append(f"User query: {query}")
    return "\n\n".join(parts)

"""The memory bundle (``use_memory=true``): what long-term memory adds to a context.

Contract
--------
``memory_bundle`` gathers, for one conversation and the current query: the messages most relevant to
the query (``context``: ``search``'s best ``top_k``, best first, with similarity, timestamp,
conversation and speaker; ``filters``, the search filters of ``search.filters``, narrow what it may
find), the recent messages (the last 6 question/answer pairs), the newest summaries (``summaries``),
the user's facts (``memories``), the user's current extracted memories best matching the query
(``extracted_memories``, up to ``EXTRACTED``, with their kind, subject and date) and the query
embedding's dimension. When the tenant extracts (``MEMORY_EXTRACTION_ENABLED``), the relevant turns
and the memories are ranked together (``memory.fused``): a turn read into a memory that matches the
query rises, the memories follow their place in that ranking, each with its ``fused_score``, and
``ranking`` holds the best ``top_k`` of both kinds (``{"kind": "turn", "message_id", "score"}`` or
``{"kind": "memory", "memory_id", "score"}``; empty otherwise). Beside the bundle it answers
the deeper list the context spends its budget on: up to ``RELEVANT_MESSAGES`` hits, the best
``WITH_NEIGHBOURS`` with the turns just before and after them.

``relevant_context_block`` is what the context endpoint adds to the system message, within the
tokens it is given: the summaries and the facts (each at most ``SHARE`` of them, whole lines), the
extracted memories, best first, dated (at most ``EXTRACTED_SHARE``; one whose every source the
context holds already is left out, its tokens going to more of the past), then the relevant messages, each whole or not at all, best first, rendered by conversation in the order
they were said, under the conversation's date and weekday, as ``Speaker: text``. A question about
the past is answered by the turns that hold the answer, with who said them and when, not by a
fixed number of cut excerpts.

``render_prompt`` assembles the bundle as one prompt in a fixed order within truncation limits
(history 10 x 200 characters, summaries 3 x 240, facts 5 in full, similar messages 4 x 200 with
scores, recent turns 6 x 180, then the location if the conversation's metadata has one, then the
query).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError

from conversations import tokens
from core.exceptions import NotFound
from core.replica import read_connection
from extraction.selectors import memories_for_context
from facts.selectors import facts_for_context
from memory import fused
from search.embeddings import EmbeddingModelError, speaker_of
from search.filters import SearchFilters
from search.selectors import SearchRequest, admitted, memory_search
from summaries.selectors import summaries_for_context
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

RECENT_PAIRS = 6
SUMMARIES = 3
FACTS = 8
# The extracted memories a bundle holds (the best for the query) and the most of the context's
# memory tokens they may take: dense statements, each standing for turns the budget could not hold.
EXTRACTED = 30
EXTRACTED_SHARE = 0.25
# The relevant past a context may hold: the best hits, the best few with the turns beside them, and
# the most of the memory's tokens the summaries and the facts may each take.
RELEVANT_MESSAGES = 100
WITH_NEIGHBOURS = 10
SHARE = 0.15
# The turns beside the best hits, by (conversation, seq): one statement, each place an index lookup
# (PostgreSQL answers jsonb as text on a raw cursor).
NEIGHBOURS_SQL = """
SELECT m.id, m.conversation_id, c.conversation_id, m.seq, m.message_id, m.role, m.content, m.created_at, m.metadata
FROM unnest(%(conversations)s::text[], %(seqs)s::bigint[]) AS place(conversation_id, seq)
JOIN conversation_memories AS c ON c.tenant_id = %(tenant)s AND c.conversation_id = place.conversation_id
JOIN conversation_messages AS m ON m.tenant_id = %(tenant)s AND m.conversation_id = c.id AND m.seq = place.seq
WHERE m.role IN ('user', 'assistant') AND m.content <> ''
"""
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
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(the bundle, the relevant messages for the context: see the module docstring)."""
    wanted = top_k or tenant.setting("MEMORY_TOP_K")
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
                    tenant,
                    query=query[: settings.MEMORY_MAX_QUERY_CHARS],
                    top_k=min(max(wanted, RELEVANT_MESSAGES), settings.MEMORY_MAX_PAGE_SIZE),
                    filters=filters,
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
                "name": speaker_of(hit.role, hit.metadata),
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
    extracted: list[dict[str, Any]] = []
    if user_id:
        try:
            extracted = memories_for_context(tenant=tenant, user_id=user_id, query=query, limit=EXTRACTED)
        except (DatabaseError, EmbeddingModelError) as error:
            logger.warning("extracted_memories_unavailable", tenant=tenant.slug, error=repr(error))
            unavailable.append("extracted_memories")
    ranking: list[dict[str, Any]] = []
    if similar and extracted and tenant.setting("MEMORY_EXTRACTION_ENABLED"):
        similar, extracted, ranking = _fused(similar, extracted, in_order=getattr(result, "reranked", False))
    relevant = similar[: max(wanted, RELEVANT_MESSAGES)]
    if relevant:
        try:
            relevant = _with_neighbours(tenant=tenant, hits=relevant, filters=filters)
        except DatabaseError as error:
            logger.warning("memory_neighbours_unavailable", tenant=tenant.slug, error=repr(error))
    bundle = {
        "context": similar[:wanted],
        "recent_messages": recent,
        "summaries": summaries_for_context(
            tenant=tenant, conversation_id=conversation_id, user_id=user_id or None, limit=SUMMARIES
        ),
        "memories": facts,
        "extracted_memories": extracted,
        "ranking": ranking[:wanted],
        "query_embedding_dim": dimensions,
        "unavailable": unavailable,
        # What the search could not do (``search.selectors.SearchResult.notices``): ranked by words while
        # the query could not be embedded, the hybrid order while the reranker failed.
        "notices": list(result.notices) if result is not None else [],
    }
    return bundle, relevant


def _fused(
    similar: list[dict[str, Any]], extracted: list[dict[str, Any]], *, in_order: bool
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """The relevant turns and the memories each in their order in one ranking of both
    (``memory.fused.fused_order``): a turn rises with the memories read from it. Each gains its
    ``fused_score``; the memories no search found (the newest, filling the list) stay last, in their
    order. Also the ranking itself: ``{"kind": "turn", "message_id", "score"}`` or ``{"kind":
    "memory", "memory_id", "score"}``, best first. ``in_order``: the turns are in a reranker's order,
    not their scores' (``memory.fused.standing``)."""
    found = [memory for memory in extracted if memory["score"] is not None]
    turn_scores = fused.standing(len(similar)) if in_order else [item["score"] for item in similar]
    order = fused.fused_order(
        turns=[(item["message_id"], score) for item, score in zip(similar, turn_scores, strict=True)],
        memories=[(memory["memory_id"], memory["message_ids"], memory["score"]) for memory in found],
        top_k=len(similar) + len(found),
    )
    scores = {(kind, key): score for kind, key, score in order}
    turns = sorted(similar, key=lambda item: -scores[("turn", item["message_id"])])
    memories = sorted(found, key=lambda memory: -scores[("memory", memory["memory_id"])])
    memories += [memory for memory in extracted if memory["score"] is None]
    for item in turns:
        item["fused_score"] = scores[("turn", item["message_id"])]
    for memory in memories:
        memory["fused_score"] = scores.get(("memory", memory["memory_id"]))
    ranking = [{"kind": kind, "message_id" if kind == "turn" else "memory_id": key, "score": score} for kind, key, score in order]
    return turns, memories, ranking


def _with_neighbours(*, tenant: Tenant, hits: list[dict[str, Any]], filters: SearchFilters | None) -> list[dict[str, Any]]:
    """``hits`` with the user and assistant turns just before and after each of the best
    ``WITH_NEIGHBOURS``, each right after its hit (a neighbour that is a hit itself keeps its own place).
    A neighbour the search filters would not let through stays out."""
    best = hits[:WITH_NEIGHBOURS]
    places = sorted({(hit["session_id"], seq) for hit in best for seq in (hit["seq"] - 1, hit["seq"] + 1)})
    with read_connection().cursor() as cursor:
        cursor.execute(
            NEIGHBOURS_SQL,
            {
                "tenant": tenant.pk,
                "conversations": [conversation for conversation, _ in places],
                "seqs": [seq for _, seq in places],
            },
        )
        rows = cursor.fetchall()
    if filters is not None and filters.narrows_messages and rows:
        let_through = set(
            admitted(
                tenant=tenant,
                filters=filters,
                conversation_pks=list({row[1] for row in rows}),
                keys=[row[0] for row in rows],
            )
        )
        rows = [row for row in rows if row[0] in let_through]
    # (conversation, seq) -> (message id, role, content, created_at, metadata)
    found = {(row[2], row[3]): row[4:] for row in rows}
    listed = {hit["message_id"] for hit in hits}
    ordered: list[dict[str, Any]] = []
    for index, hit in enumerate(hits):
        ordered.append(hit)
        if index >= WITH_NEIGHBOURS:
            continue
        for seq in (hit["seq"] - 1, hit["seq"] + 1):
            row = found.get((hit["session_id"], seq))
            if row is None:
                continue
            message_id, role, content, created_at, metadata = row
            if str(message_id) not in listed:
                listed.add(str(message_id))
                ordered.append(
                    {
                        "role": role,
                        "name": speaker_of(role, json.loads(metadata) if isinstance(metadata, str) else metadata),
                        "content": content,
                        "similarity": None,
                        "score": None,
                        "timestamp": created_at.isoformat(),
                        "session_id": hit["session_id"],
                        "message_id": str(message_id),
                        "seq": seq,
                    }
                )
    return ordered


def _cut(text: str, limit: int | None) -> str:
    text = " ".join(str(text).split())
    if limit is None or len(text) <= limit:
        return text
    return text[: limit - 1].rstrip() + "…"


def _similar_lines(similar: list[dict[str, Any]]) -> list[str]:
    items, chars = LIMITS["similar"]
    lines = []
    for item in similar:
        score = item["similarity"] if item["similarity"] is not None else item["score"]
        lines.append(f"- ({score:.2f}, {item['timestamp'][:10]}) {item['role']}: {_cut(item['content'], chars)}")
        if len(lines) == items:
            break
    return lines


def _relevant_sections(bundle: dict[str, Any]) -> list[tuple[str, list[str]]]:
    summary_items, summary_chars = LIMITS["summaries"]
    fact_items, _ = LIMITS["facts"]
    return [
        (
            "Summaries of earlier conversation",
            [f"- {_cut(s['summary'], summary_chars)}" for s in bundle["summaries"][:summary_items]],
        ),
        ("Stored user facts", [f"- {fact['key']}: {fact['value']}" for fact in bundle["memories"][:fact_items]]),
        (
            "Memories from earlier conversations",
            [_memory_line(memory) for memory in bundle.get("extracted_memories", [])[:fact_items]],
        ),
        ("Relevant earlier messages", _similar_lines(bundle["context"])),
    ]


def relevant_context_block(bundle: dict[str, Any], relevant: list[dict[str, Any]], *, exclude: set[str], max_tokens: int) -> str:
    """Summaries, facts and the relevant past for the system message, within ``max_tokens`` (see the
    module docstring). ``exclude`` holds the ids of messages the context sends in full already."""
    if max_tokens <= 0:
        return ""
    memories = bundle.get("extracted_memories", [])
    sections = _sections(bundle, memories, max_tokens=max_tokens)
    past = [item for item in relevant if item["message_id"] not in exclude and str(item.get("content") or "").strip()]
    chosen = _messages_within(past, max_tokens - _spent(sections))
    # A memory whose every source the context holds already says again what its turns say: left out,
    # its tokens go to more of the past.
    held = exclude | {item["message_id"] for item in chosen}
    news = [memory for memory in memories if not memory.get("message_ids") or not set(memory["message_ids"]) <= held]
    if len(news) < len(memories):
        sections = _sections(bundle, news, max_tokens=max_tokens)
        chosen = _messages_within(past, max_tokens - _spent(sections))

    def render(items: list[dict[str, Any]]) -> str:
        parts = [f"{title}:\n" + "\n".join(lines) for title, lines in sections]
        if items:
            parts.append("Relevant earlier messages:\n" + _conversation_lines(items))
        return "\n\n".join(parts)

    text = render(chosen)
    size = tokens.count(text)  # counted once per text rendered: the whole block is too long for the counts kept
    # Token merges across the joined text can cost a token more than its parts: drop the least relevant.
    while chosen and size > max_tokens:
        chosen = chosen[:-1]
        text = render(chosen)
        size = tokens.count(text)
    while sections and size > max_tokens:
        sections[-1][1].pop()
        sections = [(title, lines) for title, lines in sections if lines]
        text = render(chosen)
        size = tokens.count(text)
    return text


def _sections(bundle: dict[str, Any], memories: list[dict[str, Any]], *, max_tokens: int) -> list[tuple[str, list[str]]]:
    """The summaries and the facts (each within ``SHARE`` of the tokens) and the ``memories`` (within
    ``EXTRACTED_SHARE``), each a (title, whole lines) when it has any."""
    share = int(max_tokens * SHARE)
    sections = [
        ("Summaries of earlier conversation", _lines_within([f"- {s['summary']}" for s in bundle["summaries"]], share)),
        ("Stored user facts", _lines_within([f"- {fact['key']}: {fact['value']}" for fact in bundle["memories"]], share)),
        (
            "Memories from earlier conversations",
            _lines_within([_memory_line(memory) for memory in memories], int(max_tokens * EXTRACTED_SHARE)),
        ),
    ]
    return [(title, lines) for title, lines in sections if lines]


def _spent(sections: list[tuple[str, list[str]]]) -> int:
    return sum(tokens.count(f"{title}:\n" + "\n".join(lines)) + 2 for title, lines in sections)


def _memory_line(memory: dict[str, Any]) -> str:
    """``- [event, 8 May 2023] Caroline went to a support group.``: the kind, and the date it holds from."""
    when = datetime.fromisoformat(memory["valid_from"]) if memory.get("valid_from") else None
    dated = f", {when.day} {when:%B %Y}" if when else ""
    return f"- [{memory['kind']}{dated}] {' '.join(memory['text'].split())}"


def _lines_within(lines: list[str], budget: int) -> list[str]:
    """The first of ``lines`` that fit in ``budget`` tokens, each whole."""
    kept, used = [], 0
    for line in lines:
        cost = tokens.count(line) + 1
        if used + cost > budget:
            break
        kept.append(line)
        used += cost
    return kept


def _messages_within(items: list[dict[str, Any]], budget: int) -> list[dict[str, Any]]:
    """The items, best first, that fit in ``budget`` tokens as ``_conversation_lines`` renders them:
    each whole or not at all (a long one left out leaves room for the shorter ones after it)."""
    heading = tokens.count("Relevant earlier messages:\n") + 2
    if budget <= heading:
        return []
    used = heading
    chosen: list[dict[str, Any]] = []
    opened: set[str] = set()
    for item in items:
        cost = tokens.count(_line(item)) + 2  # its line, a newline, a possible gap marker's share
        if item["session_id"] not in opened:
            cost += tokens.count(_conversation_heading(item)) + 2
        if used + cost > budget:
            continue
        chosen.append(item)
        opened.add(item["session_id"])
        used += cost
    return chosen


def _line(item: dict[str, Any]) -> str:
    return f"{item.get('name') or item['role']}: {' '.join(str(item['content']).split())}"


def _conversation_heading(item: dict[str, Any]) -> str:
    when = datetime.fromisoformat(item["timestamp"])
    return f"[{when:%A} {when.day} {when:%B %Y}, conversation {item['session_id']}]"


def _conversation_lines(items: list[dict[str, Any]]) -> str:
    """The items by conversation (the one said first, first), each in the order it was said; "..."
    where turns between two of them are left out."""
    by_conversation: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_conversation.setdefault(item["session_id"], []).append(item)
    groups = sorted(by_conversation.values(), key=lambda group: min(item["timestamp"] for item in group))
    blocks = []
    for group in groups:
        group.sort(key=lambda item: item["seq"])
        lines = [_conversation_heading(group[0])]
        for previous, item in zip([None, *group], group, strict=False):
            if previous is not None and item["seq"] > previous["seq"] + 1:
                lines.append("...")
            lines.append(_line(item))
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def render_prompt(bundle: dict[str, Any], *, query: str | None, history: list[dict[str, Any]], location: str | None) -> str:
    """The whole prompt, in its assembly order and within its truncation limits."""
    history_items, history_chars = LIMITS["history"]
    recent_items, recent_chars = LIMITS["recent"]
    spoken = [message for message in history if message["role"] in ("user", "assistant") and message.get("content")]
    parts = []
    if spoken:
        lines = [f"- {message['role']}: {_cut(message['content'], history_chars)}" for message in spoken[-history_items:]]
        parts.append("Recent conversation history:\n" + "\n".join(lines))
    relevant = [f"{title}:\n" + "\n".join(lines) for title, lines in _relevant_sections(bundle) if lines]
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

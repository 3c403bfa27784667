"""Reads of a user's extracted memories: the list, the search, one memory with its history, and
whether the tenant extracts at all.

Contract
--------
* Every read is of one user of one tenant. Without ``valid_at`` and ``include_past`` only current
  memories are read (no ``valid_to``); ``valid_at`` reads the ones that held then (``valid_from`` at
  or before it, or none, and no ``valid_to`` or one after it); ``include_past`` reads every version
  still kept as a memory, current or taken back. ``kind`` and ``subject`` (case aside) narrow it.
* ``memories_list``: newest change first.
* ``memories_search``: the messages' hybrid ranking (``search.ranking``) over the memories'
  ``subject text``: BM25 over PostgreSQL's "english" lexemes and the cosine with the tenant's
  embedding model, fused as convex scores (the cosine weighing ``MEMORY_SEARCH_VECTOR_WEIGHT``),
  plus the share of a memory whose subject the question names (``MEMORY_SEARCH_SPEAKER_WEIGHT``) and
  of an event dated within a date the question gives (``MEMORY_SEARCH_DATE_WEIGHT``). A memory not
  embedded yet is ranked by its words alone; without the embedding model, by words alone.
  ``memories_search_result`` (the API's) then has the tenant's reranker, if any, reorder the best
  ``MEMORY_RERANK_TOP_N`` as a message search does (``search.rerank``), each given as "subject: text".
* ``extraction_status``: whether extraction runs for the tenant, with which model, and when it does
  not, why (``reason``: ``disabled``, or ``no_model`` for a model that is not configured or that
  cannot be set up as configured, such as a tenant's own base URL without its credential).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np
import structlog
from django.db import connection
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from conversations.models import Conversation, DeadLetter
from core.exceptions import ServiceUnavailable
from extraction.models import ExtractionUsage, Memory, MemoryChange
from search import embeddings, ranking
from search import rerank as search_rerank
from search.query import read_query
from tenants import chat_models
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

# BM25 (Lucene's k1 1.2, b 0.75, as ``search.ranking``) over the candidates' "subject text"; a
# memory's length is its count of distinct lexemes.
BM25_SQL = (
    "WITH "  # noqa: S608 (constant parts only; the values are query parameters)
    + ranking.BM25_QUERY_TERMS
    + """scope AS MATERIALIZED (
    SELECT m.id, GREATEST(length(t.terms), 1) AS token_count, t.terms
    FROM extracted_memories AS m
    CROSS JOIN LATERAL (SELECT to_tsvector('english'::regconfig, m.subject || ' ' || m.text) AS terms) AS t
    WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(candidates)s)
),
"""
    + ranking.BM25_STATS
    + """matched AS (
    SELECT s.id, s.token_count, term.lexeme, COALESCE(array_length(term.positions, 1), 1)::float8 AS tf
    FROM scope AS s
    CROSS JOIN LATERAL unnest(s.terms) AS term
    WHERE s.terms @@ (SELECT q FROM query)
      AND term.lexeme = ANY(ARRAY(SELECT unnest(terms) FROM query))
),
"""
    + ranking.BM25_SCORES
)
# A user's memories one search ranks at most: the most recently changed.
CANDIDATE_LIMIT = 5_000


@dataclass(frozen=True)
class MemoryFilters:
    kind: str | None = None
    subject: str | None = None
    valid_at: datetime | None = None
    include_past: bool = False
    # Memories read from any of these conversations (the client's ids), as message search narrows.
    conversation_ids: tuple[str, ...] = ()
    # Memories holding from within these times (an event's date), both ends included.
    start_date: datetime | None = None
    end_date: datetime | None = None


@dataclass(frozen=True)
class MemoryHit:
    memory: Memory
    score: float | None


def user_memories(*, tenant: Tenant, user_id: str, filters: MemoryFilters = MemoryFilters()) -> QuerySet[Memory]:
    """The user's memories ``filters`` let through, newest change first (vectors deferred)."""
    memories = _shown(Memory.objects.for_tenant(tenant).filter(user_id=user_id))
    if filters.kind:
        memories = memories.filter(kind=filters.kind)
    if filters.subject:
        memories = memories.filter(subject__iexact=filters.subject)
    if filters.valid_at is not None:
        memories = memories.filter(Q(valid_from__isnull=True) | Q(valid_from__lte=filters.valid_at)).filter(
            Q(valid_to__isnull=True) | Q(valid_to__gt=filters.valid_at)
        )
    elif not filters.include_past:
        memories = memories.filter(valid_to__isnull=True)
    if filters.conversation_ids:
        pks = list(
            Conversation.objects.for_tenant(tenant)
            .filter(user_id=user_id, conversation_id__in=filters.conversation_ids)
            .values_list("pk", flat=True)
        )
        memories = memories.filter(conversation_pks__overlap=pks)
    if filters.start_date is not None:
        memories = memories.filter(valid_from__gte=filters.start_date)
    if filters.end_date is not None:
        memories = memories.filter(valid_from__lte=filters.end_date)
    return memories.order_by("-updated_at", "-id")


@dataclass
class MemorySearchResult:
    hits: list[MemoryHit]
    # As a message search says them (``search.selectors.SearchResult``): whether the hits are in the
    # reranker's order, which reranker was asked, and what could not be done as configured.
    reranked: bool = False
    rerank_model: str | None = None
    notices: list[dict[str, str]] = field(default_factory=list)


def memories_search(
    *, tenant: Tenant, user_id: str, query: str, top_k: int, filters: MemoryFilters = MemoryFilters()
) -> list[MemoryHit]:
    """The ``top_k`` memories best matching ``query`` (see the module's contract), best first, in the
    ranking's own order (no reranker)."""
    return memories_search_result(tenant=tenant, user_id=user_id, query=query, top_k=top_k, filters=filters, rerank=False).hits


def memories_search_result(
    *,
    tenant: Tenant,
    user_id: str,
    query: str,
    top_k: int,
    filters: MemoryFilters = MemoryFilters(),
    rerank: bool | None = None,
) -> MemorySearchResult:
    """``memories_search``, then the tenant's reranker (``search.rerank``), when it configures one and
    ``rerank`` is not False, reorders the best ``MEMORY_RERANK_TOP_N`` given as "subject: text"."""
    reranker = search_rerank.reranker_for(tenant) if rerank is not False else None
    keep = max(top_k, reranker.top_n) if reranker is not None else top_k
    candidates = list(
        user_memories(tenant=tenant, user_id=user_id, filters=filters).values_list(
            "id", "subject", "valid_from", "created_at", "embedding", "embedding_model"
        )[:CANDIDATE_LIMIT]
    )
    if not candidates or not query.strip():
        return MemorySearchResult(hits=[], rerank_model=reranker.label if reranker is not None else None)
    subjects = {subject for _, subject, *_ in candidates}
    asked = read_query(query, speakers=subjects) if float(tenant.setting("MEMORY_SEARCH_SPEAKER_WEIGHT")) > 0 else None
    text = asked.text if asked is not None and asked.text.strip() else query
    keys = np.array([row[0] for row in candidates], dtype=np.int64)
    with connection.cursor() as cursor:
        cursor.execute(BM25_SQL, {"tenant": tenant.pk, "candidates": keys.tolist(), "query": text, "top": len(candidates)})
        keyword = dict(cursor.fetchall())
    similarity = np.full(len(candidates), np.nan)
    model = tenant.setting("MEMORY_EMBEDDING_MODEL") or ""
    embedded = [index for index, row in enumerate(candidates) if row[4] is not None and row[5] == model]
    if model and embedded:
        try:
            query_vector = embeddings.embed_query(model, text, tenant=tenant)
        except Exception as error:  # ranked by words alone rather than not at all
            logger.warning("memory_query_embedding_failed", tenant=tenant.slug, model=model, error=repr(error))
        else:
            matrix = np.frombuffer(b"".join(bytes(candidates[index][4]) for index in embedded), dtype="<f4").reshape(
                len(embedded), -1
            )
            similarity[embedded] = ranking.cosine(query_vector, matrix)
    keyword_scores = np.array([float(keyword.get(int(key), 0.0)) for key in keys])
    rows = ranking.Rows(
        keys=keys,
        conversations=np.zeros(len(keys), dtype=np.int64),
        seqs=np.zeros(len(keys), dtype=np.int64),
        created=np.array([(row[2] or row[3]).timestamp() for row in candidates], dtype=np.float64),
        speakers=np.array([row[1] for row in candidates], dtype=object),
        similarity=similarity,
        keyword=keyword_scores,
        candidate=~np.isnan(similarity) | (keyword_scores > 0),
    )
    weights = ranking.Weights(
        vector=float(tenant.setting("MEMORY_SEARCH_VECTOR_WEIGHT")),
        session=0.0,
        speaker=float(tenant.setting("MEMORY_SEARCH_SPEAKER_WEIGHT")),
        neighbour=0.0,
        date=float(tenant.setting("MEMORY_SEARCH_DATE_WEIGHT")),
    )
    scores = ranking.fused(rows, weights, named=asked.speakers if asked else frozenset(), windows=asked.windows if asked else ())
    ranked = ranking.top(rows, scores, keep)
    found = {
        memory.pk: memory for memory in _shown(Memory.objects.for_tenant(tenant).filter(pk__in=[entry.key for entry in ranked]))
    }
    hits = [MemoryHit(memory=found[entry.key], score=round(entry.score, 6)) for entry in ranked if entry.key in found]
    result = MemorySearchResult(hits=hits)
    if reranker is not None:
        result.rerank_model = reranker.label
        head = hits[: reranker.top_n]
        outcome = search_rerank.rerank(
            reranker, tenant=tenant, query=query, texts=[f"{hit.memory.subject}: {hit.memory.text}" for hit in head]
        )
        if outcome.order is not None:
            result.hits = [head[index] for index in outcome.order] + hits[len(head) :]
            result.reranked = bool(head)
        elif outcome.notice is not None:
            result.notices.append(outcome.notice)
    result.hits = result.hits[:top_k]
    return result


def memory_get(*, tenant: Tenant, user_id: str, memory_id: uuid.UUID) -> Memory | None:
    return _shown(Memory.objects.for_tenant(tenant).filter(user_id=user_id, memory_id=memory_id)).first()


def _shown(memories: QuerySet[Memory]) -> QuerySet[Memory]:
    """Memories as they are shown: without their vectors, with the id of the memory a past version is of."""
    return memories.defer("embedding").annotate(version_of_memory_id=F("version_of__memory_id"))


def memory_history(*, tenant: Tenant, memory: Memory) -> list[MemoryChange]:
    """Every change of a memory, newest first."""
    return list(MemoryChange.objects.for_tenant(tenant).filter(memory=memory).order_by("-changed_at", "-pk"))


def conversation_ids_of(*, tenant: Tenant, memories: list[Memory]) -> dict[int, str]:
    """The client's conversation ids of the memories' conversations, by primary key (one query)."""
    pks = {pk for memory in memories for pk in memory.conversation_pks}
    if not pks:
        return {}
    return dict(Conversation.objects.for_tenant(tenant).filter(pk__in=pks).values_list("pk", "conversation_id"))


# --- Whether the tenant extracts --------------------------------------------------------------------


def extraction_status(tenant: Tenant) -> dict[str, Any]:
    """``{"enabled", "model", "reason", "detail"}``: whether the derived workers extract memories for
    the tenant, with which model, and when not, why (``reason`` ``disabled`` or ``no_model``, and a
    sentence saying what to set)."""
    if not tenant.setting("MEMORY_EXTRACTION_ENABLED"):
        return {
            "enabled": False,
            "model": None,
            "reason": "disabled",
            "detail": "Extraction is off for this tenant: set MEMORY_EXTRACTION_ENABLED=true (the tenant's settings or the "
            "deployment's) to have its chat model read the conversations.",
        }
    try:
        chosen = extraction_model_settings(tenant)
    except ServiceUnavailable as error:
        return {"enabled": False, "model": None, "reason": "no_model", "detail": error.message}
    problem = chat_models.setup_problem(tenant, chosen)
    if problem is not None:  # configured, but it could never be called as it is: no turn is read meanwhile
        return {"enabled": False, "model": chosen.spec, "reason": "no_model", "detail": problem.message}
    return {"enabled": True, "model": chosen.spec, "reason": None, "detail": None}


def extraction_model_settings(tenant: Tenant) -> chat_models.ChatSettings:
    """The tenant's chat model settings for extraction (``MEMORY_EXTRACTION_MODEL`` naming another
    model of the same provider); ``ChatModelNotConfigured`` (a 503) when there is none."""
    override = str(tenant.setting("MEMORY_EXTRACTION_MODEL") or "").strip()
    return chat_models.chat_settings(tenant, model=override or None)


def usage_today(*, tenant: Tenant, day: Any) -> ExtractionUsage | None:
    return ExtractionUsage.objects.for_tenant(tenant).filter(day=day).first()


def tenant_extraction_status(tenant: Tenant) -> dict[str, Any]:
    """The tenant's status section: ``extraction_status`` with today's usage against the daily
    bounds (calls, tokens, turns read, reads skipped by a bound and their turns, failed calls, dead
    letters, operations of applied answers that the rules refused) and the extraction dead letters not replayed yet."""
    usage = usage_today(tenant=tenant, day=timezone.now().date())
    return {
        **extraction_status(tenant),
        "today": {name: getattr(usage, name, 0) for name in ExtractionUsage.COUNTED},
        "daily_bounds": {
            "calls": int(tenant.setting("MEMORY_EXTRACTION_DAILY_CALLS")),
            "tokens": int(tenant.setting("MEMORY_EXTRACTION_DAILY_TOKENS")),
        },
        "dead_letters_pending": DeadLetter.objects.for_tenant(tenant)
        .filter(task_name="extraction.tasks.conversation_extract", replayed_at__isnull=True)
        .count(),
    }


def memories_for_context(*, tenant: Tenant, user_id: str, query: str | None, limit: int) -> list[dict[str, Any]]:
    """The user's current memories for a context: the ``limit`` best for ``query`` (the newest when
    there is none, or when the search finds fewer), each as the bundle holds it."""
    memories: list[Memory] = []
    scores: dict[int, float | None] = {}
    if query and query.strip():
        for hit in memories_search(tenant=tenant, user_id=user_id, query=query, top_k=limit):
            memories.append(hit.memory)
            scores[hit.memory.pk] = hit.score
    if len(memories) < limit:
        memories.extend(
            user_memories(tenant=tenant, user_id=user_id).exclude(pk__in=[m.pk for m in memories])[: limit - len(memories)]
        )
    return [
        {
            "memory_id": str(memory.memory_id),
            "kind": memory.kind,
            "subject": memory.subject,
            "text": memory.text,
            "valid_from": memory.valid_from.isoformat() if memory.valid_from else None,
            "score": scores.get(memory.pk),
            "message_ids": [str(message_id) for message_id in memory.message_ids],
        }
        for memory in memories
    ]

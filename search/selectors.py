"""Search over a conversation's or a user's past messages: semantic, keyword (BM25) and hybrid.

Contract
--------
``memory_search(tenant=, request=, conversation_id=, user_id=)`` answers a ``SearchResult`` whose hits
are best first. ``SearchRequest.for_tenant`` fills what a request leaves out from the tenant's
settings. Modes:

* ``semantic`` is the first design's vector search: the newest ``vector_fetch_limit`` (200) vectors of the
  conversation, extended with the newest of the same user's other conversations while it has fewer
  than ``cross_session_trigger`` (50); cosine similarity; the ``top_k`` (8) at or above
  ``min_similarity`` (0.45).
* ``keyword`` is BM25 over every message of the scope (``search.terms``).
* ``hybrid`` (the default) fuses both rankings over every message of the scope; the vector side is
  ranked, not thresholded, unless a request sets ``min_similarity``.

Scope: ``conversation`` (that conversation), ``user`` (every conversation of the user), or ``auto``
(the conversation, and the user's other conversations too while it holds fewer than
``cross_session_trigger`` messages). ``candidate_limit`` bounds the messages one search considers
(the newest of the scope). Only user and assistant messages are searched. Messages persisted but not
embedded yet are found by their words, and by meaning once the worker has embedded them.

Filters (``SearchRequest.filters``, ``search.filters``) narrow the scope before anything is ranked:
the conversation filters narrow its conversations (never adding one), the message filters its
messages, in the BM25 scope and among the vectors alike; so ``top_k`` is the best of the messages
that match, and every limit above counts matching messages only.

Reranking (``search.rerank``): when the tenant configures a reranker and the request does not turn it
off (``SearchRequest.rerank``), the ranking's best ``MEMORY_RERANK_TOP_N`` hits are given to it, each as
"[date] Speaker: text", and answered in its order, the rest after them in the ranking's order, cut to
``top_k`` (``SearchResult.reranked``). When it does not answer an order, the ranking's order is
answered with a notice (``rerank_failed``, ``rerank_unavailable``).
"""

from __future__ import annotations

import json
import os
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Any

import numpy as np
import structlog
from django.conf import settings

from conversations.models import Conversation, Message
from core.exceptions import LimitExceeded, NotFound
from core.replica import read_connection, stale_reads_allowed
from search import embeddings, ranking, rerank, terms, vectors
from search.filters import NO_FILTERS, SearchFilters
from search.query import read_query
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

MODES = ("hybrid", "semantic", "keyword")
SCOPES = ("auto", "conversation", "user")

# The scope's conversations (asked on every search, so written as SQL): the one asked from, and the
# user's, most recently updated first.
CURRENT_SQL = (
    "SELECT id, user_id, message_count FROM conversation_memories"
    " WHERE tenant_id = %(tenant)s AND conversation_id = %(conversation)s"
)
USER_CONVERSATIONS_SQL = (
    "SELECT id FROM conversation_memories WHERE tenant_id = %(tenant)s AND user_id = %(user)s ORDER BY updated_at DESC"
)

# The fields of a hit, by message key (PostgreSQL answers jsonb as text on a raw cursor).
HITS_SQL = """
SELECT m.id, m.message_id, c.conversation_id, m.seq, m.role, m.content, m.created_at, m.metadata
FROM conversation_messages AS m JOIN conversation_memories AS c ON c.id = m.conversation_id
WHERE m.tenant_id = %(tenant)s AND m.id = ANY(%(keys)s)
"""


@dataclass(frozen=True)
class SearchRequest:
    query: str
    mode: str = "hybrid"
    scope: str = "auto"
    top_k: int = 8
    # None: 0.45 in semantic mode, no threshold on the fused ranking of hybrid mode.
    min_similarity: float | None = None
    vector_fetch_limit: int = 200
    cross_session_trigger: int = 50
    candidate_limit: int = 20_000
    # Hybrid: the cosine's share of the fused score (``ranking.convex``), and the share of a turn's
    # score given to the turns beside it (``ranking.spread``; 0: none).
    vector_weight: float = 0.6
    neighbour_weight: float = 0.1
    # Hybrid: the share given by the standing of the conversation a turn sits in (its best turn's
    # score), and the share given to the turns of a speaker the question names (``search.query``).
    session_weight: float = 0.0
    speaker_weight: float = 0.3
    # Hybrid: the share given to the turns said within a date the question gives (``search.query``).
    date_weight: float = 0.2
    # Hybrid: "convex", or "rrf" (reciprocal-rank fusion, kept for the retrieval evaluation to compare).
    fusion: str = "convex"
    # The vectors to compare: the tenant's model unless named (the retrieval evaluation compares models).
    embedding_model: str | None = None
    filters: SearchFilters = NO_FILTERS
    # Whether the tenant's reranker (``search.rerank``), when it configures one, reorders the best hits.
    rerank: bool = True

    @classmethod
    def for_tenant(cls, tenant: Tenant, **given: Any) -> SearchRequest:
        """The request with the tenant's settings wherever ``given`` holds nothing (or None)."""
        defaults = {
            "mode": tenant.setting("MEMORY_SEARCH_MODE"),
            "top_k": tenant.setting("MEMORY_TOP_K"),
            "vector_fetch_limit": tenant.setting("MEMORY_VECTOR_FETCH_LIMIT"),
            "cross_session_trigger": tenant.setting("MEMORY_CROSS_SESSION_TRIGGER"),
            "candidate_limit": tenant.setting("MEMORY_SEARCH_CANDIDATE_LIMIT"),
            "vector_weight": tenant.setting("MEMORY_SEARCH_VECTOR_WEIGHT"),
            "neighbour_weight": tenant.setting("MEMORY_SEARCH_NEIGHBOUR_WEIGHT"),
            "session_weight": tenant.setting("MEMORY_SEARCH_SESSION_WEIGHT"),
            "speaker_weight": tenant.setting("MEMORY_SEARCH_SPEAKER_WEIGHT"),
            "date_weight": tenant.setting("MEMORY_SEARCH_DATE_WEIGHT"),
        }
        known = {item.name for item in fields(cls)}
        values = defaults | {name: value for name, value in given.items() if value is not None and name in known}
        if values.get("min_similarity") is None and values.get("mode") == "semantic":
            values["min_similarity"] = tenant.setting("MEMORY_SIMILARITY_THRESHOLD")
        return cls(**values)  # memory_search validates it

    def validate(self) -> None:
        query = self.query.strip()
        if not query:
            raise LimitExceeded("The query is empty: send the words to search for in q.", details={"field": "q"})
        if len(self.query) > settings.MEMORY_MAX_QUERY_CHARS:
            raise LimitExceeded(
                f"The query is {len(self.query)} characters; the limit is MEMORY_MAX_QUERY_CHARS={settings.MEMORY_MAX_QUERY_CHARS}.",
                details={"field": "q", "limit": settings.MEMORY_MAX_QUERY_CHARS},
            )
        if self.mode not in MODES:
            raise LimitExceeded(f"Unknown search mode {self.mode!r}: use one of {', '.join(MODES)}.", details={"field": "mode"})
        if self.scope not in SCOPES:
            raise LimitExceeded(f"Unknown scope {self.scope!r}: use one of {', '.join(SCOPES)}.", details={"field": "scope"})
        if not 1 <= self.top_k <= settings.MEMORY_MAX_PAGE_SIZE:
            raise LimitExceeded(
                f"top_k must be between 1 and MEMORY_MAX_PAGE_SIZE={settings.MEMORY_MAX_PAGE_SIZE}.", details={"field": "top_k"}
            )
        if self.min_similarity is not None and not -1.0 <= self.min_similarity <= 1.0:
            raise LimitExceeded("min_similarity is a cosine similarity: between -1 and 1.", details={"field": "min_similarity"})
        for name in ("vector_weight", "neighbour_weight", "session_weight", "speaker_weight", "date_weight"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise LimitExceeded(f"{name} is a share of a score: between 0 and 1.", details={"field": name})
        if self.fusion not in ("convex", "rrf"):
            raise LimitExceeded(f"Unknown fusion {self.fusion!r}: use convex or rrf.", details={"field": "fusion"})
        for name in ("vector_fetch_limit", "cross_session_trigger", "candidate_limit"):
            if getattr(self, name) < 0:
                raise LimitExceeded(f"{name} must not be negative.", details={"field": name})


@dataclass(frozen=True)
class SearchHit:
    message_id: str
    conversation_id: str
    seq: int
    role: str
    content: str
    created_at: datetime
    metadata: dict[str, Any]
    similarity: float | None
    keyword_score: float | None
    score: float


@dataclass
class SearchResult:
    hits: list[SearchHit]
    mode: str
    scope: str
    conversations: int
    candidates: int
    embedding_model: str
    query_embedding_dim: int | None
    milliseconds: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    # What the answer could not do as configured ({"code", "message"}, ``notice``): its order is still
    # the best the service could give (ranked by words while the query cannot be embedded...).
    notices: list[dict[str, str]] = field(default_factory=list)
    # True only when the hits are in the reranker's order; the reranker's model (or format) when it was asked.
    reranked: bool = False
    rerank_model: str | None = None


def notice(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


@dataclass(frozen=True)
class _Scope:
    name: str
    conversation_pks: list[int]
    current_pk: int | None
    filters: SearchFilters = NO_FILTERS


@stale_reads_allowed()  # a message is found a moment after it is persisted: the replica may answer (core/replica.py)
def memory_search(
    *, tenant: Tenant, request: SearchRequest, conversation_id: str | None = None, user_id: str | None = None
) -> SearchResult:
    started = time.perf_counter()
    request.validate()
    model = request.embedding_model or tenant.setting("MEMORY_EMBEDDING_MODEL")
    # The query is embedded on another thread while this one asks PostgreSQL (the model and the
    # database both release the interpreter while they work), so a search costs the slower of the two
    # rather than their sum. Semantic search embeds the query as given, at once; hybrid search the
    # text it ranks (``search.query``), once it has read the speakers of the scope.
    query_vector = _QueryVector(model, tenant) if request.mode != "keyword" and model else None
    if query_vector is not None and request.mode == "semantic":
        query_vector.start(request.query)
    # A reranker reorders the best ``top_n`` of the ranking: that many are ranked, then cut to top_k.
    reranker = rerank.reranker_for(tenant) if request.rerank else None
    keep = min(max(request.top_k, reranker.top_n), settings.MEMORY_MAX_PAGE_SIZE) if reranker else request.top_k
    try:
        scope = _scope(tenant=tenant, request=request, conversation_id=conversation_id, user_id=user_id)
        found = None
        if request.mode == "semantic":
            found = _semantic(tenant=tenant, request=request, scope=scope, model=model, query_vector=query_vector, keep=keep)
        if found is None:  # hybrid, or a semantic search whose query could not be embedded: by its words
            found = _hybrid(tenant=tenant, request=request, scope=scope, model=model, query_vector=query_vector, keep=keep)
        ranked, candidates = found
        # Awaited even when nothing needed it (an empty scope), so a model that fails always says so.
        vector = None if query_vector is None else query_vector.vector(request.query)
        dimensions = None if vector is None else int(vector.shape[0])
    except BaseException:
        if query_vector is not None:
            query_vector.cancel()  # not begun yet: never begun
        raise
    result = SearchResult(
        hits=_hits(tenant=tenant, ranked=ranked),
        mode=request.mode,
        scope=scope.name,
        conversations=len(scope.conversation_pks),
        candidates=candidates,
        embedding_model=model,
        query_embedding_dim=dimensions,
        milliseconds=(time.perf_counter() - started) * 1000,
        notices=[] if query_vector is None else query_vector.notices,
    )
    if reranker is not None:
        _rerank(result, tenant=tenant, reranker=reranker, query=request.query, top_k=request.top_k)
        result.milliseconds = (time.perf_counter() - started) * 1000
    return result


def _rerank(result: SearchResult, *, tenant: Tenant, reranker: rerank.Reranker, query: str, top_k: int) -> None:
    """The result's best ``top_n`` hits in the reranker's order, the rest after them in their order, cut to
    ``top_k``; the ranking's own order with a notice when the reranker does not answer one. Each hit is
    given as the embeddings' turn document reads it ("[date] Speaker: text"): the date and speaker a
    question names are in the text the reranker reads."""
    head = result.hits[: reranker.top_n]
    texts = [
        embeddings.document_text(
            role=hit.role, content=hit.content, created_at=hit.created_at, metadata=hit.metadata, document=embeddings.TURN
        )
        for hit in head
    ]
    result.rerank_model = reranker.label
    if texts:
        outcome = rerank.rerank(reranker, tenant=tenant, query=query, texts=texts)
        result.timings["rerank"] = round(outcome.milliseconds, 3)
        if outcome.order is not None:
            result.hits = [head[index] for index in outcome.order] + result.hits[len(head) :]
            result.reranked = True
        elif outcome.notice is not None:
            result.notices.append(outcome.notice)
    result.hits = result.hits[:top_k]


class _QueryVector:
    """The embedding of a search's text, computed on this process's query threads. A model that cannot
    embed it (a server down or slow: ``search.remote``) leaves the search to rank by words, and the
    answer says so (``notices``)."""

    def __init__(self, model: str, tenant: Tenant) -> None:
        self.model = model
        self.tenant = tenant
        self.text: str | None = None
        self.future: Future[np.ndarray] | None = None
        self.notices: list[dict[str, str]] = []

    def start(self, text: str) -> None:
        if self.future is not None and self.text == text:
            return
        self.cancel()
        self.text = text
        try:  # the model's settings and credential are read here, on the request's thread
            embed = embeddings.query_embedder(self.model, tenant=self.tenant)
        except embeddings.EmbeddingModelError as error:
            self.future = Future()
            self.future.set_exception(error)
            return
        self.future = _query_embedder().submit(embed, text)

    def vector(self, text: str, *, dimensions: int | None = None) -> np.ndarray | None:
        """The vector of the text started (of ``text`` when none was); None when the model cannot give it
        now, or gives one of another length than the stored vectors' (``dimensions``)."""
        if self.future is None:
            self.start(text)
        try:
            found = self.future.result()
        except embeddings.EmbeddingModelError as error:
            self._notice(
                "query_not_embedded",
                f"The query could not be embedded ({error}): the results are ranked by their words alone.",
            )
            return None
        if dimensions is not None and found.shape[0] != dimensions:
            self._notice(
                "query_not_embedded",
                f"The model {self.model} embedded the query in {found.shape[0]} dimensions; the stored vectors have "
                f"{dimensions}, so they cannot be compared until they are embedded again: the results are ranked by their "
                "words alone.",
            )
            return None
        return found

    def _notice(self, code: str, message: str) -> None:
        if not any(item["code"] == code for item in self.notices):
            logger.warning("search_query_not_embedded", tenant=self.tenant.slug, model=self.model, reason=message[:300])
            self.notices.append(notice(code, message))

    def cancel(self) -> None:
        if self.future is not None:
            self.future.cancel()


_embedder_pool: tuple[int, ThreadPoolExecutor] | None = None
_embedder_pool_lock = threading.Lock()


def _query_embedder() -> ThreadPoolExecutor:
    """This process's threads for query embeddings (made again in a forked child: threads do not fork)."""
    global _embedder_pool
    with _embedder_pool_lock:
        if _embedder_pool is None or _embedder_pool[0] != os.getpid():
            _embedder_pool = (os.getpid(), ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embedding"))
        return _embedder_pool[1]


def _scope(*, tenant: Tenant, request: SearchRequest, conversation_id: str | None, user_id: str | None) -> _Scope:
    conversations = Conversation.objects.for_tenant(tenant)
    current = None
    if conversation_id is not None:
        with read_connection().cursor() as cursor:
            cursor.execute(CURRENT_SQL, {"tenant": tenant.pk, "conversation": conversation_id})
            found = cursor.fetchone()
        if found is None:
            raise NotFound(f"Conversation {conversation_id} does not exist.")
        current = dict(zip(("pk", "user_id", "message_count"), found, strict=True))
        user_id = current["user_id"] if user_id is None else user_id
    current_pk = current["pk"] if current else None
    if current is None:
        name = "user"
    elif not user_id or request.scope == "conversation":
        name = "conversation"
    elif request.scope == "user":
        name = "user"
    elif request.mode == "semantic":
        name = "auto"  # decided on the vectors themselves, in _semantic
    else:
        name = "user" if current["message_count"] < request.cross_session_trigger else "conversation"
    if name == "conversation" or not user_id:
        pks = [current_pk] if current_pk else []
    else:
        with read_connection().cursor() as cursor:
            cursor.execute(USER_CONVERSATIONS_SQL, {"tenant": tenant.pk, "user": user_id})
            pks = [pk for (pk,) in cursor.fetchall()]
        if current_pk and current_pk not in pks:
            pks.insert(0, current_pk)
    filters = request.filters
    if filters.narrows_conversations and pks:
        allowed = conversations.filter(pk__in=pks)
        if filters.agent_ids:
            allowed = allowed.filter(agent_id__in=filters.agent_ids)
        if filters.conversation_ids:
            allowed = allowed.filter(conversation_id__in=filters.conversation_ids)
        kept = set(allowed.values_list("pk", flat=True))
        pks = [pk for pk in pks if pk in kept]
    return _Scope(name=name, conversation_pks=pks, current_pk=current_pk, filters=filters)


def _semantic(
    *, tenant: Tenant, request: SearchRequest, scope: _Scope, model: str, query_vector: _QueryVector | None, keep: int
) -> tuple[list[ranking.Ranked], int] | None:
    """The cosine ranking (None: the query could not be embedded, so the words must rank)."""
    if query_vector is None or not scope.conversation_pks:
        return [], 0
    limit = request.vector_fetch_limit
    found = _vectors(tenant=tenant, scope=scope, model=model, allowed=_allowed(tenant=tenant, scope=scope))
    current = vectors.newest([found.get(scope.current_pk, vectors.EMPTY)], limit)
    chosen = current
    extend = scope.name == "user" or (scope.name == "auto" and len(current.keys) < request.cross_session_trigger)
    if extend and len(current.keys) < limit:
        others = vectors.newest([part for pk, part in found.items() if pk != scope.current_pk], limit - len(current.keys))
        chosen = vectors.newest([current, others], limit)
    query = query_vector.vector(request.query, dimensions=_dimensions(chosen.matrix))
    if query is None:
        return None
    similarities = ranking.cosine(query, chosen.matrix)
    ranked = ranking.cosine_top(
        keys=chosen.keys.tolist(), similarities=similarities, top_k=keep, min_similarity=request.min_similarity
    )
    return ranked, len(chosen.keys)


def _hybrid(
    *, tenant: Tenant, request: SearchRequest, scope: _Scope, model: str, query_vector: _QueryVector | None, keep: int
) -> tuple[list[ranking.Ranked], int]:
    """The ``keep`` best of the scope (``top_k``, or more for a reranker to reorder), best first, and how
    many were considered. How deep each ranking goes into the fusion depends on ``top_k`` alone, so the
    order of the best does not change with ``keep``."""
    if not scope.conversation_pks:
        return [], 0
    depth = max(100, request.top_k * 5)  # how deep each ranking goes into the fusion
    allowed = _allowed(tenant=tenant, scope=scope)
    found = _vectors(tenant=tenant, scope=scope, model=model, allowed=allowed) if query_vector is not None else {}
    chosen = vectors.scope(list(found.values()), request.candidate_limit)
    # The speakers the question names leave the ranked text (``search.query``); the vector side then
    # compares the text without them, embedded on another thread while the words are ranked.
    speakers = set(chosen.speakers.tolist()) - {""} if request.speaker_weight > 0 else set()
    asked = read_query(request.query, speakers=speakers)
    if query_vector is not None:
        query_vector.start(asked.text)
    keyword = _bm25(tenant=tenant, scope=scope, query=asked.text, limit=request.candidate_limit, top=depth, allowed=allowed)
    query = None
    if request.mode != "keyword" and query_vector is not None:
        query = query_vector.vector(asked.text, dimensions=_dimensions(*(part.matrix for part in chosen.parts)))
    if query is None:
        ranked = [ranking.Ranked(key=key, score=score, keyword_score=score) for key, score in keyword[:keep]]
        return ranked, len(keyword)
    similarities = chosen.cosine(query)
    order = np.argsort(-similarities, kind="stable")[:depth]
    if request.min_similarity is not None:
        order = order[similarities[order] >= request.min_similarity]
    if request.fusion == "rrf":
        vector = [(int(chosen.keys[index]), float(similarities[index])) for index in order]
        scores = ranking.fused_scores(vector=vector, keyword=keyword)
        return ranking.best(scores, top_k=keep, similarity=dict(vector), keyword=dict(keyword)), len(chosen.keys)
    rows = _rows(tenant=tenant, scope=scope, chosen=chosen, similarities=similarities, vector_top=order, keyword=keyword)
    weights = ranking.Weights(
        vector=request.vector_weight,
        session=request.session_weight,
        speaker=request.speaker_weight,
        neighbour=request.neighbour_weight,
        date=request.date_weight,
    )
    # Considered: every message with a vector, and the keyword hits not embedded yet.
    return ranking.top(rows, ranking.fused(rows, weights, named=asked.speakers, windows=asked.windows), keep), len(rows.keys)


def _dimensions(*matrices: np.ndarray) -> int | None:
    """The length of the stored vectors compared (None: none)."""
    return next((int(matrix.shape[1]) for matrix in matrices if matrix.size), None)


def _positions(keys: np.ndarray, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(where each of ``wanted`` sits in ``keys``, whether it is there at all), by a sorted lookup."""
    if not len(keys):
        return np.zeros(len(wanted), dtype=np.int64), np.zeros(len(wanted), dtype=bool)
    sorter = np.argsort(keys, kind="stable")
    at = sorter[np.searchsorted(keys, wanted, sorter=sorter).clip(max=len(keys) - 1)]
    return at, keys[at] == wanted


def _rows(
    *,
    tenant: Tenant,
    scope: _Scope,
    chosen: vectors.Scope,
    similarities: np.ndarray,
    vector_top: np.ndarray,
    keyword: list[tuple[int, float]],
) -> ranking.Rows:
    """The scope's rows for ``ranking.fused``: each message with a vector, then the keyword hits without one."""
    words = np.zeros(len(chosen.keys), dtype=np.float64)
    candidate = np.zeros(len(chosen.keys), dtype=bool)
    candidate[vector_top] = True
    hits = np.fromiter((key for key, _ in keyword), dtype=np.int64, count=len(keyword))
    scores = np.fromiter((score for _, score in keyword), dtype=np.float64, count=len(keyword))
    at, embedded = _positions(chosen.keys, hits)
    words[at[embedded]] = scores[embedded]
    candidate[at[embedded]] = True
    unembedded = [keyword[index] for index in np.flatnonzero(~embedded)]
    extra = (
        {
            pk: (conversation, seq, name if isinstance(name, str) else "", created_at.timestamp())
            for pk, conversation, seq, name, created_at in Message.objects.for_tenant(tenant)
            .filter(pk__in=[key for key, _ in unembedded])
            .values_list("pk", "conversation_id", "seq", "metadata__name", "created_at")
        }
        if unembedded
        else {}
    )
    unembedded = [(key, score) for key, score in unembedded if key in extra]
    return ranking.Rows(
        keys=np.concatenate([chosen.keys, np.array([key for key, _ in unembedded], dtype=np.int64)]),
        conversations=np.concatenate([chosen.conversations, np.array([extra[key][0] for key, _ in unembedded], dtype=np.int64)]),
        seqs=np.concatenate([chosen.seqs, np.array([extra[key][1] for key, _ in unembedded], dtype=np.int64)]),
        created=np.concatenate([chosen.created, np.array([extra[key][3] for key, _ in unembedded], dtype=np.float64)]),
        speakers=np.concatenate([chosen.speakers, np.array([extra[key][2].strip() for key, _ in unembedded], dtype=object)]),
        similarity=np.concatenate([similarities, np.full(len(unembedded), np.nan)]),
        keyword=np.concatenate([words, np.array([score for _, score in unembedded], dtype=np.float64)]),
        candidate=np.concatenate([candidate, np.ones(len(unembedded), dtype=bool)]),
    )


def _allowed(*, tenant: Tenant, scope: _Scope) -> np.ndarray | None:
    """The scope's messages its filters let through; None when they narrow no message."""
    if not scope.filters.narrows_messages:
        return None
    return np.fromiter(admitted(tenant=tenant, filters=scope.filters, conversation_pks=scope.conversation_pks), dtype=np.int64)


def _vectors(*, tenant: Tenant, scope: _Scope, model: str, allowed: np.ndarray | None) -> dict[int, vectors.ConversationVectors]:
    """The scope's vectors, each conversation's reduced to the messages its filters let through."""
    found = vectors.conversation_vectors(tenant=tenant, model=model, conversation_pks=scope.conversation_pks)
    if allowed is None:
        return found
    return {pk: vectors.only(part, allowed) for pk, part in found.items()}


def admitted(*, tenant: Tenant, filters: SearchFilters, conversation_pks: list[int], keys: list[int] | None = None) -> list[int]:
    """The messages of these conversations (of ``keys`` among them, when given) that ``filters`` let through."""
    sql = ranking.FILTERED_MESSAGES_SQL + ("" if keys is None else " AND m.id = ANY(%(keys)s)")
    with read_connection().cursor() as cursor:
        cursor.execute(sql, {"tenant": tenant.pk, "conversations": conversation_pks, "keys": keys, **filters.sql_parameters()})
        return [key for (key,) in cursor.fetchall()]


def _bm25(
    *, tenant: Tenant, scope: _Scope, query: str, limit: int, top: int, allowed: np.ndarray | None
) -> list[tuple[int, float]]:
    return terms.bm25(tenant=tenant, conversation_pks=scope.conversation_pks, query=query, limit=limit, top=top, allowed=allowed)


def _hits(*, tenant: Tenant, ranked: list[ranking.Ranked]) -> list[SearchHit]:
    """The ranked messages as hits, read as rows: only their fields are needed, not model instances."""
    if not ranked:
        return []
    with read_connection().cursor() as cursor:
        cursor.execute(HITS_SQL, {"tenant": tenant.pk, "keys": [item.key for item in ranked]})
        rows = {row[0]: row for row in cursor.fetchall()}
    hits = []
    for item in ranked:
        row = rows.get(item.key)
        if row is None:  # erased between ranking and reading
            continue
        _, message_id, conversation_id, seq, role, content, created_at, metadata = row
        hits.append(
            SearchHit(
                message_id=str(message_id),
                conversation_id=conversation_id,
                seq=seq,
                role=role,
                content=content,
                created_at=created_at,
                metadata=json.loads(metadata) if isinstance(metadata, str) else metadata,
                similarity=None if item.similarity is None else round(item.similarity, 6),
                keyword_score=None if item.keyword_score is None else round(item.keyword_score, 6),
                score=round(item.score, 6),
            )
        )
    return hits

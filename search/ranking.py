"""How search ranks: cosine similarity, BM25 and their fusion, then what the question and the
conversation add. Pure functions over the arrays of a scope (``Rows``); the SQL constants are the
terms' expression and the BM25 parts the store's keyword search runs.

Why hybrid: names, numbers and dates are what questions and answers share, and embeddings blur
them, while words alone miss a paraphrase. On long multi-session conversations (the retrieval
benchmark, ``python -m benchmarks.retrieval``) BM25 and cosine each find answer turns the other
misses, so their fusion beats both, provided each is good and the fusion weighs how far ahead a
candidate is: ``convex`` adds min-max normalised scores (the cosine weighing 0.6). Reciprocal-rank
fusion (``fused_scores``, kept for the store and for comparison) ranks a long tail of weak BM25
matches (the turns that match only the speaker's name) above the vectors' best; on the benchmark's
harder data, 600 questions, recall@8: reciprocal rank 0.553, convex 0.5 0.633, convex 0.6 0.658.

``fused`` then adds, each a share of the score: the standing of the conversation a turn sits in,
the speaker the question names, the dates it gives, and (``beside``) the better score of the turns
just before and after. On the development half of LoCoMo (760 questions) they took recall@8 from
0.677 to 0.763 and recall@20 from 0.781 to 0.846 (``benchmarks/retrieval/README.md``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from search.filters import MESSAGE_FILTERS_SQL

# A message's terms: its speaker's name and its text (``conversations.models.CONTENT_TERMS``, whose
# index ``message_terms`` serves this exact expression).
MESSAGE_TERMS_SQL = "to_tsvector('english'::regconfig, COALESCE((m.metadata ->> 'name'), '') || ' ' || COALESCE(m.content, ''))"

# Lucene's BM25 (k1 1.2, b 0.75, idf ln(1 + (N - df + 0.5) / (df + 0.5))) over the messages of a
# scope, computed where the rows are. Terms are PostgreSQL's "english" lexemes (stemmed, stop words
# dropped), matched through the GIN index ``message_terms`` on the same expression; the document
# length is the message's token count, its average taken over the scope. Parameters: tenant,
# conversations (primary keys), query (text), limit (newest messages of the scope considered), top,
# and the filters' (``search.filters``): the scope is the filtered messages, so the statistics and
# the ranking are those of the messages that match.
# The query's lexemes and their tsquery: the CTEs every BM25 query here begins with.
BM25_QUERY_TERMS = """
query_terms AS (
    SELECT array_agg(DISTINCT lexeme) AS terms
    FROM unnest(to_tsvector('english'::regconfig, %(query)s))
),
query AS MATERIALIZED (
    SELECT terms, array_to_string(ARRAY(SELECT quote_literal(t) FROM unnest(terms) AS t), ' | ')::tsquery AS q
    FROM query_terms
),
"""
# The scope's statistics, then after its ``matched`` rows (id, token_count, lexeme, tf) the
# document frequencies and the scores: the CTEs around a scope that every BM25 query here shares.
BM25_STATS = """
stats AS MATERIALIZED (
    SELECT count(*)::float8 AS n, GREATEST(avg(token_count), 1)::float8 AS avgdl FROM scope
),
"""
BM25_SCORES = """
frequency AS (
    SELECT lexeme, count(*)::float8 AS df FROM matched GROUP BY lexeme
)
SELECT matched.id,
       SUM(ln(1 + (stats.n - frequency.df + 0.5) / (frequency.df + 0.5))
           * matched.tf * 2.2 / (matched.tf + 1.2 * (0.25 + 0.75 * matched.token_count / stats.avgdl))) AS score
FROM matched
JOIN frequency USING (lexeme)
CROSS JOIN stats
GROUP BY matched.id
ORDER BY score DESC, matched.id DESC
LIMIT %(top)s
"""
# The messages of the scope a search's filters let through (the vector side keeps only these).
FILTERED_MESSAGES_SQL = (
    """SELECT m.id FROM conversation_messages AS m
    WHERE m.tenant_id = %(tenant)s AND m.conversation_id = ANY(%(conversations)s) AND m.role IN ('user', 'assistant')"""  # noqa: S608 (constant parts only)
    + MESSAGE_FILTERS_SQL
)

RRF_K = 60


@dataclass(frozen=True)
class Ranked:
    """One candidate message (its primary key) with what each ranker thought of it."""

    key: int
    score: float
    similarity: float | None = None
    keyword_score: float | None = None


def cosine(query: np.ndarray, matrix: np.ndarray) -> np.ndarray:
    """Cosine similarity of a unit query vector with each unit row of ``matrix``."""
    if matrix.size == 0:
        return np.zeros(0, dtype=np.float32)
    return matrix @ query


def cosine_top(*, keys: list[int], similarities: np.ndarray, top_k: int, min_similarity: float | None) -> list[Ranked]:
    """Vector search: the ``top_k`` most similar at or above the threshold, best first."""
    order = np.argsort(-similarities, kind="stable")
    ranked = []
    for index in order:
        similarity = float(similarities[index])
        if min_similarity is not None and similarity < min_similarity:
            break
        ranked.append(Ranked(key=keys[index], score=similarity, similarity=similarity))
        if len(ranked) == top_k:
            break
    return ranked


def fused_scores(
    *, vector: list[tuple[int, float]], keyword: list[tuple[int, float]], vector_weight: float = 1.0, keyword_weight: float = 1.0
) -> dict[int, float]:
    """Weighted reciprocal-rank fusion of two rankings (each best first: key, score): key -> score."""
    scores: dict[int, float] = {}
    for weight, ranking in ((vector_weight, vector), (keyword_weight, keyword)):
        for rank, (key, _) in enumerate(ranking, start=1):
            scores[key] = scores.get(key, 0.0) + weight / (RRF_K + rank)
    return scores


@dataclass(frozen=True)
class Rows:
    """The messages a hybrid search ranks, as arrays of one row each: the scope's messages with a
    vector, then the keyword hits without one yet. ``candidate`` marks the rows a ranker put forward
    (the deepest cosines and the BM25 hits); the others are ranked only through the turns beside them."""

    keys: np.ndarray  # message primary keys, int64
    conversations: np.ndarray  # conversation primary keys, int64
    seqs: np.ndarray  # place in the conversation, int64
    created: np.ndarray  # creation times, epoch seconds, float64
    speakers: np.ndarray  # speaker names ("" where none), object
    similarity: np.ndarray  # cosine with the query, float64; NaN without a vector
    keyword: np.ndarray  # BM25 score, float64; 0 where no term matched
    candidate: np.ndarray  # bool


@dataclass(frozen=True)
class Weights:
    vector: float  # the cosine's share of the fused score, BM25 having the rest
    session: float  # the share given by the standing of the conversation a turn sits in
    speaker: float  # the share given to the turns of a speaker the question names
    neighbour: float  # the share of a turn's score given to the turns beside it
    date: float = 0.0  # the share given to the turns said within a date the question gives


def convex(rows: Rows, vector_weight: float) -> np.ndarray:
    """Convex combination of min-max normalised scores: ``vector_weight`` x cosine + the rest x BM25,
    for the candidate rows (0 for the others).

    The cosine is normalised over the candidates with a vector (a candidate without one counts as
    the lowest), BM25 by the best BM25 score. Unlike reciprocal-rank fusion, a candidate's standing
    depends on how far ahead it is, not only on its place: a long tail of weak matches (the turns that
    match only the speaker's name) cannot outrank the best of the other ranking (Bruch et al., "An
    Analysis of Fusion Functions for Hybrid Retrieval", 2023).
    """
    scores = np.zeros(len(rows.keys), dtype=np.float64)
    if not rows.candidate.any():
        return scores
    known = rows.candidate & ~np.isnan(rows.similarity)
    similarity = np.zeros_like(scores)
    if known.any():
        low, high = float(rows.similarity[known].min()), float(rows.similarity[known].max())
        if high > low:
            similarity[known] = (rows.similarity[known] - low) / (high - low)
    top = float(rows.keyword[rows.candidate].max())
    words = rows.keyword / top if top > 0 else np.zeros_like(scores)
    scores[rows.candidate] = vector_weight * similarity[rows.candidate] + (1 - vector_weight) * words[rows.candidate]
    return scores


def fused(
    rows: Rows, weights: Weights, *, named: frozenset[str] = frozenset(), windows: tuple[tuple[float, float], ...] = ()
) -> np.ndarray:
    """Each row's score: ``convex``, then for the candidates the conversation's standing (its best
    turn's score over the best conversation's), the speaker the question names and its dates (the
    ``windows``, epoch seconds, start included), then for every row the turns beside it (``beside``)."""
    scores = convex(rows, weights.vector)
    if not len(scores):
        return scores
    if weights.session > 0:
        conversations, where = np.unique(rows.conversations, return_inverse=True)
        standing = np.zeros(len(conversations), dtype=np.float64)
        np.maximum.at(standing, where, scores)
        if standing.max() > 0:
            scores = scores + rows.candidate * weights.session * (standing / standing.max())[where]
    if weights.speaker > 0 and named:
        scores = scores + rows.candidate * weights.speaker * np.isin(rows.speakers, list(named))
    if weights.date > 0 and windows:
        inside = np.zeros(len(scores), dtype=bool)
        for start, end in windows:
            inside |= (rows.created >= start) & (rows.created < end)
        scores = scores + rows.candidate * weights.date * inside
    return beside(rows, scores, weights.neighbour)


def beside(rows: Rows, scores: np.ndarray, weight: float) -> np.ndarray:
    """Each row's score plus ``weight`` times the better score of the rows just before and after it in
    its conversation (by ``seq``, among the rows: the turns the scope and its filters search).

    A turn is often understood only with the one before or after it: "Did you get the puppy?" /
    "Yes! Rex." The question's words match the first, the answer is the second; a turn found by
    neither ranker enters with its neighbour's share alone.
    """
    if weight <= 0 or len(scores) < 2:
        return scores
    order = np.lexsort((rows.seqs, rows.conversations))
    ordered = scores[order]
    same = rows.conversations[order][1:] == rows.conversations[order][:-1]
    before = np.zeros_like(ordered)
    after = np.zeros_like(ordered)
    before[1:] = np.where(same, ordered[:-1], 0.0)
    after[:-1] = np.where(same, ordered[1:], 0.0)
    bonus = np.empty_like(scores)
    bonus[order] = weight * np.maximum(before, after)
    return scores + bonus


def top(rows: Rows, scores: np.ndarray, top_k: int) -> list[Ranked]:
    """The ``top_k`` best of the candidates and of the rows their neighbours raised (ties: the newer
    message, the higher key), each with its own cosine and BM25 score."""
    entered = np.flatnonzero(rows.candidate | (scores > 0))
    order = entered[np.lexsort((-rows.keys[entered], -scores[entered]))][:top_k]
    return [
        Ranked(
            key=int(rows.keys[index]),
            score=float(scores[index]),
            similarity=None if np.isnan(rows.similarity[index]) else float(rows.similarity[index]),
            keyword_score=float(rows.keyword[index]) if rows.keyword[index] > 0 else None,
        )
        for index in order
    ]


def best(
    scores: dict[int, float], *, top_k: int, similarity: dict[int, float] | None = None, keyword: dict[int, float] | None = None
) -> list[Ranked]:
    """The ``top_k`` best of ``scores`` (ties: the newer message, the higher key), with each ranker's own score."""
    similarity = similarity or {}
    keyword = keyword or {}
    ranked = sorted(scores.items(), key=lambda item: (-item[1], -item[0]))[:top_k]
    return [Ranked(key=key, score=score, similarity=similarity.get(key), keyword_score=keyword.get(key)) for key, score in ranked]


def fuse(
    *,
    vector: list[tuple[int, float]],
    keyword: list[tuple[int, float]],
    top_k: int,
    vector_weight: float = 1.0,
    keyword_weight: float = 1.0,
) -> list[Ranked]:
    """Weighted reciprocal-rank fusion of two rankings (each best first: key, score), its ``top_k`` best."""
    scores = fused_scores(vector=vector, keyword=keyword, vector_weight=vector_weight, keyword_weight=keyword_weight)
    return best(scores, top_k=top_k, similarity=dict(vector), keyword=dict(keyword))

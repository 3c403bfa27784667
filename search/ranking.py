"""How search ranks: cosine similarity, BM25 (in PostgreSQL) and their fusion. Pure functions
except ``BM25_SQL``, which ``search.selectors`` runs.

Why hybrid: names, numbers and dates are what questions and answers share, and embeddings blur
them, while words alone miss a paraphrase. On long multi-session conversations (the retrieval
benchmark, ``python -m benchmarks.retrieval``) BM25 and cosine each find answer turns the other
misses, so their fusion beats both, provided each is good and the fusion weighs how far ahead a
candidate is: ``convex`` adds min-max normalised scores (the cosine weighing 0.6). Reciprocal-rank
fusion (``fused_scores``, kept for the store and for comparison) ranks a long tail of weak BM25
matches (the turns that match only the speaker's name) above the vectors' best; on the benchmark's
harder data, 600 questions, recall@8: reciprocal rank 0.553, convex 0.5 0.633, convex 0.6 0.658.
``spread`` passes a share of a turn's score to the turns beside it (off by default: +0.009 at 8 on
that data, -0.009 on the older, easier one).
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
BM25_SQL = (
    "WITH "  # noqa: S608 (constant parts only; the values are query parameters)
    + BM25_QUERY_TERMS
    + """scope AS MATERIALIZED (
    SELECT m.id, m.token_count FROM conversation_messages AS m
    WHERE m.tenant_id = %(tenant)s AND m.conversation_id = ANY(%(conversations)s) AND m.role IN ('user', 'assistant')"""
    + MESSAGE_FILTERS_SQL
    + """    ORDER BY m.created_at DESC, m.id DESC
    LIMIT %(limit)s
),
"""
    + BM25_STATS
    + """matched AS (
    SELECT m.id, m.token_count, term.lexeme, COALESCE(array_length(term.positions, 1), 1)::float8 AS tf
    FROM conversation_messages AS m
    CROSS JOIN LATERAL unnest("""
    + MESSAGE_TERMS_SQL
    + """) AS term
    WHERE m.tenant_id = %(tenant)s
      AND m.conversation_id = ANY(%(conversations)s)
      AND """
    + MESSAGE_TERMS_SQL
    + """ @@ (SELECT q FROM query)
      AND m.id IN (SELECT id FROM scope)
      AND term.lexeme = ANY(ARRAY(SELECT unnest(terms) FROM query))
),
"""
    + BM25_SCORES
)
# The messages of the scope a search's filters let through (the vector side keeps only these).
FILTERED_MESSAGES_SQL = (
    """SELECT m.id FROM conversation_messages AS m
    WHERE m.tenant_id = %(tenant)s AND m.conversation_id = ANY(%(conversations)s) AND m.role IN ('user', 'assistant')"""  # noqa: S608 (constant parts only)
    + MESSAGE_FILTERS_SQL
)

# The searched turns just before and just after each of some messages (``keys``) in their
# conversation, through the unique (conversation, seq, tenant) index in the tenant's partition, kept
# only where the neighbour belongs to the scope and passes the filters. Parameters: tenant, conversations, keys, the filters'.
NEIGHBOURS_SQL = (
    """WITH beside AS MATERIALIZED (
    SELECT c.id AS key, near.id AS neighbour
    FROM unnest(%(keys)s::bigint[]) AS wanted(id)
    JOIN conversation_messages AS c ON c.id = wanted.id AND c.tenant_id = %(tenant)s
    CROSS JOIN LATERAL (
        (SELECT n.id FROM conversation_messages AS n
         WHERE n.tenant_id = %(tenant)s AND n.conversation_id = c.conversation_id AND n.seq < c.seq AND n.role IN ('user', 'assistant')
         ORDER BY n.seq DESC LIMIT 1)
        UNION ALL
        (SELECT n.id FROM conversation_messages AS n
         WHERE n.tenant_id = %(tenant)s AND n.conversation_id = c.conversation_id AND n.seq > c.seq AND n.role IN ('user', 'assistant')
         ORDER BY n.seq LIMIT 1)
    ) AS near
    WHERE c.tenant_id = %(tenant)s
)
SELECT beside.key, m.id FROM beside
JOIN conversation_messages AS m ON m.id = beside.neighbour
WHERE m.tenant_id = %(tenant)s AND m.conversation_id = ANY(%(conversations)s)"""  # noqa: S608 (constant parts only)
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


def convex(*, vector: dict[int, float], keyword: dict[int, float], vector_weight: float) -> dict[int, float]:
    """Convex combination of min-max normalised scores: ``vector_weight`` x cosine + the rest x BM25.

    ``vector`` holds the cosine of every candidate (the vectors of the whole scope are at hand) and
    ``keyword`` the BM25 score of the candidates that share a term with the query (the others score 0).
    Unlike reciprocal-rank fusion, a candidate's standing depends on how far ahead it is, not only on
    its place: a long tail of weak matches (the turns that match only the speaker's name) cannot
    outrank the best of the other ranking (Bruch et al., "An Analysis of Fusion Functions for Hybrid
    Retrieval", 2023).
    """
    keys = set(vector) | set(keyword)
    if not keys:
        return {}
    cosines = [vector[key] for key in vector]
    low, high = (min(cosines), max(cosines)) if cosines else (0.0, 0.0)
    top = max(keyword.values(), default=0.0)
    scores = {}
    for key in keys:
        similarity = (vector.get(key, low) - low) / (high - low) if high > low else 0.0
        words = keyword.get(key, 0.0) / top if top > 0 else 0.0
        scores[key] = vector_weight * similarity + (1 - vector_weight) * words
    return scores


def spread(scores: dict[int, float], neighbours: dict[int, tuple[int, ...]], weight: float) -> dict[int, float]:
    """Each message's score plus ``weight`` times the best score among the turns beside it.

    A turn is often understood only with the one before or after it: "Did you get the puppy?" /
    "Yes! Rex." The question's words match the first, the answer is the second. ``neighbours`` maps a
    scored message to the messages beside it in its conversation; a neighbour found by neither ranker
    enters with the share of its neighbour's score alone.
    """
    if weight <= 0 or not neighbours:
        return scores
    bonus: dict[int, float] = {}
    for key, beside in neighbours.items():
        score = scores.get(key, 0.0)
        for other in beside:
            bonus[other] = max(bonus.get(other, 0.0), weight * score)
    spread_scores = dict(scores)
    for key, extra in bonus.items():
        spread_scores[key] = spread_scores.get(key, 0.0) + extra
    return spread_scores


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

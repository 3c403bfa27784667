"""Keyword search (BM25) over a scope's messages, scored in this process from terms PostgreSQL made.

Contract
--------
``bm25(tenant=, conversation_pks=, query=, limit=, top=, allowed=)`` answers the ``top`` messages of
the scope (key, score), best first (ties: the higher key): Lucene's BM25 (k1 1.2, b 0.75, idf
ln(1 + (N - df + 0.5) / (df + 0.5))) over the scope's newest ``limit`` user and assistant messages,
or of those among them in ``allowed`` (the messages a search's filters let through): the statistics
and the ranking are those of the messages searched. A message's terms are PostgreSQL's own
``to_tsvector('english', name || ' ' || content)`` (``ranking.MESSAGE_TERMS_SQL``, the expression of
the GIN index ``message_terms``), stemmed with stop words dropped, and so are the query's; a term's
frequency is its number of positions; a message's length is its token count.

Why here and not in PostgreSQL: scored in SQL, each search recomputed the terms of every matching
message of the scope (about 20 ms of a 30 ms search for a user of 600 messages). Each process keeps
each conversation's terms, read once through the index's expression, and checks on every search
with one grouped index-only query that nothing was added or erased since (the pair: number of
messages, highest ``seq``; messages are never edited, and a ``seq`` is never reused). The copies
share ``MEMORY_VECTOR_CACHE_MB`` with the vectors (``search.kept``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from core.replica import read_connection
from search.filters import SEARCHED_ROLES
from search.kept import Kept
from search.ranking import MESSAGE_TERMS_SQL
from tenants.models import Tenant

K1 = 1.2
B = 0.75

SIGNATURES_SQL = """
SELECT m.conversation_id, count(*), max(m.seq) FROM conversation_messages AS m
WHERE m.tenant_id = %(tenant)s AND m.conversation_id = ANY(%(conversations)s)
GROUP BY m.conversation_id
"""
# Each searched message with each of its terms (a message without any, once, with a NULL lexeme),
# each message's tsvector computed once.
TERMS_SQL = f"""
SELECT m.conversation_id, m.id, extract(epoch FROM m.created_at), m.token_count, term.lexeme,
       COALESCE(array_length(term.positions, 1), 1)
FROM conversation_messages AS m
CROSS JOIN LATERAL (SELECT {MESSAGE_TERMS_SQL} AS terms) AS vector
LEFT JOIN LATERAL unnest(vector.terms) AS term ON true
WHERE m.tenant_id = %(tenant)s AND m.conversation_id = ANY(%(conversations)s) AND m.role = ANY(%(roles)s)
ORDER BY m.conversation_id, m.created_at DESC, m.id DESC
"""  # noqa: S608 (constant parts only; the values are query parameters)
QUERY_TERMS_SQL = "SELECT COALESCE(array_agg(DISTINCT lexeme), '{}') FROM unnest(to_tsvector('english'::regconfig, %(query)s))"


@dataclass(frozen=True)
class ConversationTerms:
    signature: tuple[int, int]
    keys: np.ndarray  # message primary keys, newest first, int64
    created: np.ndarray  # creation times, epoch seconds, float64
    lengths: np.ndarray  # token counts, float64
    postings: dict[str, tuple[np.ndarray, np.ndarray]]  # lexeme -> (rows, term frequencies)

    @property
    def nbytes(self) -> int:
        arrays = self.keys.nbytes + self.created.nbytes + self.lengths.nbytes
        return arrays + sum(len(lexeme) + 100 + rows.nbytes + counts.nbytes for lexeme, (rows, counts) in self.postings.items())


_kept: Kept[ConversationTerms] = Kept()


def bm25(
    *, tenant: Tenant, conversation_pks: list[int], query: str, limit: int, top: int, allowed: np.ndarray | None = None
) -> list[tuple[int, float]]:
    with read_connection().cursor() as cursor:
        cursor.execute(QUERY_TERMS_SQL, {"query": query})
        (lexemes,) = cursor.fetchone()
    if not lexemes or not conversation_pks:
        return []
    parts = [part for part in conversation_terms(tenant=tenant, conversation_pks=conversation_pks) if len(part.keys)]
    if not parts:
        return []
    keys = np.concatenate([part.keys for part in parts])
    searched = np.ones(len(keys), dtype=bool)
    if allowed is not None:
        searched &= np.isin(keys, allowed)
    if searched.sum() > limit:  # the newest ``limit`` of the scope
        created = np.concatenate([part.created for part in parts])
        newest = np.flatnonzero(searched)[np.argsort(-created[searched], kind="stable")[:limit]]
        searched = np.zeros(len(keys), dtype=bool)
        searched[newest] = True
    count = int(searched.sum())
    if not count:
        return []
    lengths = np.concatenate([part.lengths for part in parts])
    average = max(float(lengths[searched].mean()), 1.0)
    scores = np.zeros(len(keys), dtype=np.float64)
    for lexeme in lexemes:
        rows, frequencies = _postings(parts, lexeme)
        keep = searched[rows]
        rows, frequencies = rows[keep], frequencies[keep]
        if not len(rows):
            continue
        idf = np.log(1 + (count - len(rows) + 0.5) / (len(rows) + 0.5))
        scores[rows] += idf * frequencies * (K1 + 1) / (frequencies + K1 * (1 - B + B * lengths[rows] / average))
    matched = np.flatnonzero(scores > 0)
    best = matched[np.lexsort((-keys[matched], -scores[matched]))][:top]
    return [(int(keys[index]), float(scores[index])) for index in best]


def _postings(parts: list[ConversationTerms], lexeme: str) -> tuple[np.ndarray, np.ndarray]:
    """The rows (in the scope's concatenation of ``parts``) holding ``lexeme``, and its frequency in each."""
    rows, frequencies = [], []
    start = 0
    for part in parts:
        found = part.postings.get(lexeme)
        if found is not None:
            rows.append(found[0] + start)
            frequencies.append(found[1])
        start += len(part.keys)
    if not rows:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
    return np.concatenate(rows), np.concatenate(frequencies)


def conversation_terms(*, tenant: Tenant, conversation_pks: list[int]) -> list[ConversationTerms]:
    """The terms of each conversation of the scope that has messages, in the order of ``conversation_pks``."""
    parameters = {"tenant": tenant.pk, "conversations": conversation_pks, "roles": list(SEARCHED_ROLES)}
    with read_connection().cursor() as cursor:
        cursor.execute(SIGNATURES_SQL, parameters)
        signatures = {(tenant.pk, pk): (count, highest) for pk, count, highest in cursor.fetchall()}
        found, stale = _kept.current([(tenant.pk, pk) for pk in conversation_pks], signatures)
        if stale:
            cursor.execute(TERMS_SQL, parameters | {"conversations": [pk for _, pk in stale]})
            read = _read(cursor.fetchall(), signatures={pk: signatures[(tenant.pk, pk)] for _, pk in stale})
            for pk in (pk for _, pk in stale):
                entry = read.get(pk) or _empty(signatures[(tenant.pk, pk)])
                found[(tenant.pk, pk)] = entry
                _kept.remember((tenant.pk, pk), entry)
    return [found[(tenant.pk, pk)] for pk in conversation_pks if (tenant.pk, pk) in found]


def _read(rows: list[tuple], *, signatures: dict[int, tuple[int, int]]) -> dict[int, ConversationTerms]:
    by_conversation: dict[int, list[tuple]] = {}
    for row in rows:
        by_conversation.setdefault(row[0], []).append(row)
    read = {}
    for pk, items in by_conversation.items():
        keys: list[int] = []
        created: list[float] = []
        lengths: list[float] = []
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for _, key, when, length, lexeme, frequency in items:
            if not keys or keys[-1] != key:
                keys.append(key)
                created.append(float(when))
                lengths.append(float(length))
            if lexeme is not None:
                rows_of, frequencies = postings.setdefault(lexeme, ([], []))
                rows_of.append(len(keys) - 1)
                frequencies.append(float(frequency))
        read[pk] = ConversationTerms(
            signature=signatures[pk],
            keys=np.array(keys, dtype=np.int64),
            created=np.array(created, dtype=np.float64),
            lengths=np.array(lengths, dtype=np.float64),
            postings={
                lexeme: (np.array(rows_of, dtype=np.int64), np.array(frequencies, dtype=np.float64))
                for lexeme, (rows_of, frequencies) in postings.items()
            },
        )
    return read


def _empty(signature: tuple[int, int]) -> ConversationTerms:
    """A conversation with messages but none searched (tools, system): nothing to score."""
    nothing = np.zeros(0, dtype=np.int64)
    return ConversationTerms(signature, nothing, np.zeros(0), np.zeros(0), {})


def clear() -> None:
    _kept.clear()

"""Reads of LangGraph's store: one item, a search under a namespace prefix, the namespaces.

Contract
--------
Every read is scoped to the tenant and sees live items only (no ``expires_at``, or one after
``now``). Namespaces compare label by label (PostgreSQL text arrays): a prefix ``("users",)``
matches ``("users", "42")`` and never ``("users-archive",)``.

* ``item_get``: the item, or None.
* ``items_search`` without a query: the items under the prefix that pass the filter, in the order
  LangGraph's ``InMemoryStore`` keeps them: namespaces by their first item ever written, then items
  by their first write (overwriting keeps an item's place; deleting and writing again moves it to
  the end). ``score`` is None.
* ``items_search`` with a query: the service's hybrid ranking (``search.ranking``) over the items'
  searchable text: BM25 (PostgreSQL's "english" lexemes) fused by reciprocal rank with the cosine
  similarity of the tenant's embedding model; ``score`` is the fused score, best first. Items that
  neither ranker places (not indexed, or no vector and no shared word) follow, unranked
  (``score`` None), in the order above. At most MEMORY_SEARCH_CANDIDATE_LIMIT items of the prefix
  (the first in that order) are ranked.
* ``namespaces_list``: the distinct namespaces of live items that meet every match condition
  (prefix or suffix, "*" matching any label), cut to ``max_depth`` labels, sorted like Python sorts
  tuples (label by label, by code point), then paged.

Extracted memories are items too, read-only: under ``(MEMORIES_ROOT, user_id)`` a get answers the
user's memory whose ``memory_id`` is the key (current or taken back, as the memories API reads one),
and a search the user's current memories, as ``extraction.selectors`` lists them (newest change
first, ``score`` None) or ranks them for a query (the memories' hybrid search: only the memories it
finds, best first). Each is an item whose value is ``memory_value``'s, whose times are the memory's,
which never expires and which no write reaches (``services.operation_parse`` refuses puts and deletes
there). A filter of such a search is ``kind`` or ``subject`` (case aside) equal to a string. These
namespaces are not listed: ``namespaces_list`` lists where items were put, and a search with an
empty prefix answers those items only.

Filters (``filter_sql``) follow ``InMemoryStore``: a field's JSON value equals the one given
(``$eq``, or a plain value; an object matches the fields it names, recursively; an array matches
exactly), differs from it (``$ne``, also true when the field is missing), or compares as a number
(``$gt``, ``$gte``, ``$lt``, ``$lte``, false when the field is not a number). A dotted field name
of the filter (``"user.level"``) reads the value's field of that very name when there is one, and
otherwise the path it spells through nested objects, as LangGraph's newer ``InMemoryStore`` does.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import structlog
from django.db import connection
from django.db.models import BooleanField, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.expressions import RawSQL

from core.exceptions import ServiceUnavailable
from extraction import selectors as extraction_selectors
from extraction.models import Memory
from search import embeddings, ranking
from store.models import StoreItem
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

TABLE = StoreItem._meta.db_table

# BM25 (as ``search.ranking.BM25_SQL``: Lucene's k1 1.2, b 0.75) over the searchable text of the
# candidate items; the document length is the text's token count.
BM25_SQL = (
    "WITH "  # noqa: S608 (constant parts only; the values are query parameters)
    + ranking.BM25_QUERY_TERMS
    + """scope AS MATERIALIZED (
    SELECT id, token_count, indexed_text FROM store_items
    WHERE tenant_id = %(tenant)s AND id = ANY(%(candidates)s) AND indexed_text <> ''
),
"""
    + ranking.BM25_STATS
    + """matched AS (
    SELECT s.id, s.token_count, term.lexeme, COALESCE(array_length(term.positions, 1), 1)::float8 AS tf
    FROM scope AS s
    CROSS JOIN LATERAL unnest(to_tsvector('english'::regconfig, s.indexed_text)) AS term
    WHERE to_tsvector('english'::regconfig, s.indexed_text) @@ (SELECT q FROM query)
      AND term.lexeme = ANY(ARRAY(SELECT unnest(terms) FROM query))
),
"""
    + ranking.BM25_SCORES
)


@dataclass(frozen=True)
class Hit:
    item: StoreItem
    score: float | None


def database_unavailable() -> ServiceUnavailable:
    return ServiceUnavailable(
        "PostgreSQL is unreachable, and the store lives only there; retry shortly.", code="database_unavailable"
    )


def live_items(*, tenant: Tenant, now: datetime) -> QuerySet[StoreItem]:
    return StoreItem.objects.for_tenant(tenant).filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))


def item_get(*, tenant: Tenant, namespace: tuple[str, ...], key: str, now: datetime) -> StoreItem | None:
    if is_memories(namespace):
        return memory_item_get(tenant=tenant, namespace=namespace, key=key)
    return live_items(tenant=tenant, now=now).filter(namespace=list(namespace), key=key).defer("embedding").first()


# --- Filters ---------------------------------------------------------------------------------------

_VALUE = f'"{TABLE}"."value"'

# A field of the filter: SQL for its JSON (NULL when missing) and the parameters that SQL takes.
Field = tuple[str, list[Any]]


def _top_field(name: str) -> Field:
    """A filter's field name: the value's field of that name, or else, for a dotted name, the path
    it spells through nested objects (``"user.level"`` reads ``{"user": {"level": ...}}``)."""
    if "." not in name:
        return f"({_VALUE} -> %s)", [name]
    return (
        f"(CASE WHEN jsonb_exists({_VALUE}, %s) THEN {_VALUE} -> %s ELSE {_VALUE} #> %s END)",
        [name, name, name.split(".")],
    )


def _child_field(parent: Field, name: str) -> Field:
    return f"({parent[0]} -> %s)", [*parent[1], name]


def _equal_sql(field: Field, expected: Any) -> tuple[str, list[Any]]:
    sql, params = field
    if expected is None:  # a missing field equals None, as in InMemoryStore
        return f"({sql} IS NULL OR {sql} = 'null'::jsonb)", [*params, *params]
    return f"COALESCE({sql} = %s::jsonb, false)", [*params, json.dumps(expected)]


def _condition_sql(field: Field, condition: Any) -> tuple[str, list[Any]]:
    sql, field_params = field
    if isinstance(condition, dict) and any(name.startswith("$") for name in condition):
        parts: list[str] = []
        params: list[Any] = []
        for operator, operand in condition.items():
            if operator == "$eq":
                part, values = _equal_sql(field, operand)
            elif operator == "$ne":
                part, values = _equal_sql(field, operand)
                part = f"NOT {part}"
            else:
                comparison = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[operator]
                part = (
                    f"(CASE WHEN jsonb_typeof({sql}) = 'number' THEN ({sql} #>> '{{}}')::float8 {comparison} %s ELSE false END)"
                )
                values = [*field_params, *field_params, float(operand)]
            parts.append(part)
            params.extend(values)
        return "(" + " AND ".join(parts) + ")", params
    if isinstance(condition, dict):
        parts = [f"jsonb_typeof({sql}) = 'object'"]
        params = list(field_params)
        for name, child in condition.items():
            part, values = _condition_sql(_child_field(field, name), child)
            parts.append(part)
            params.extend(values)
        return "(" + " AND ".join(parts) + ")", params
    return _equal_sql(field, condition)


def filter_sql(filter: dict[str, Any]) -> tuple[str, list[Any]]:  # noqa: A002 - LangGraph's name
    """A SQL condition on the item's value for a checked filter (``services.check_filter``)."""
    if not filter:
        return "true", []
    parts: list[str] = []
    params: list[Any] = []
    for name, condition in filter.items():
        sql, values = _condition_sql(_top_field(name), condition)
        parts.append(sql)
        params.extend(values)
    return " AND ".join(parts), params


# --- Search ------------------------------------------------------------------------------------------


def _under(*, tenant: Tenant, namespace_prefix: tuple[str, ...], filter: dict[str, Any] | None, now: datetime) -> QuerySet:  # noqa: A002
    """The live items under the prefix that pass the filter, in InMemoryStore's order."""
    items = live_items(tenant=tenant, now=now)
    if namespace_prefix:
        items = items.filter(**{f"namespace__0_{len(namespace_prefix)}": list(namespace_prefix)})
    if filter:
        sql, params = filter_sql(filter)
        items = items.filter(RawSQL(sql, params, output_field=BooleanField()))  # noqa: S611 - fixed SQL; values are parameters
    first_of_namespace = (
        StoreItem.objects.for_tenant(tenant)
        .filter(namespace=OuterRef("namespace"))
        .order_by()
        .values("namespace")
        .annotate(first=Min("id"))
        .values("first")
    )
    return items.annotate(namespace_first=Subquery(first_of_namespace)).order_by("namespace_first", "id")


def items_search(
    *,
    tenant: Tenant,
    namespace_prefix: tuple[str, ...],
    query: str | None,
    filter: dict[str, Any] | None,  # noqa: A002 - LangGraph's name
    limit: int,
    offset: int,
    now: datetime,
) -> list[Hit]:
    if is_memories(namespace_prefix):
        return memory_items_search(
            tenant=tenant, namespace_prefix=namespace_prefix, query=query, filter=filter, limit=limit, offset=offset
        )
    items = _under(tenant=tenant, namespace_prefix=namespace_prefix, filter=filter, now=now)
    if not query:
        return [Hit(item=item, score=None) for item in items.defer("embedding", "indexed_text")[offset : offset + limit]]
    candidate_limit = tenant.setting("MEMORY_SEARCH_CANDIDATE_LIMIT")
    candidates = list(items.values_list("id", flat=True)[:candidate_limit])
    if not candidates:
        return []
    ranked = _ranked(tenant=tenant, candidates=candidates, query=query, top_k=offset + limit)
    scores = {entry.key: entry.score for entry in ranked}
    order = [entry.key for entry in ranked] + [key for key in candidates if key not in scores]
    page = order[offset : offset + limit]
    rows = {item.pk: item for item in StoreItem.objects.for_tenant(tenant).filter(pk__in=page).defer("embedding", "indexed_text")}
    return [Hit(item=rows[key], score=None if key not in scores else round(scores[key], 6)) for key in page if key in rows]


def _ranked(*, tenant: Tenant, candidates: list[int], query: str, top_k: int) -> list[ranking.Ranked]:
    depth = max(100, top_k * 5)  # how deep each ranking goes into the fusion, as message search
    with connection.cursor() as cursor:
        cursor.execute(BM25_SQL, {"tenant": tenant.pk, "candidates": candidates, "query": query, "top": depth})
        keyword = [(key, float(score)) for key, score in cursor.fetchall()]
    model = tenant.setting("MEMORY_EMBEDDING_MODEL") or ""
    vector: list[tuple[int, float]] = []
    if model:
        rows = list(
            StoreItem.objects.for_tenant(tenant)
            .filter(pk__in=candidates, embedding_model=model, embedding__isnull=False)
            .values_list("id", "embedding")
        )
        if rows:
            try:
                query_vector = embeddings.embed_query(model, query, tenant=tenant)
            except Exception as error:  # ranked by words alone rather than not at all
                logger.warning("store_query_embedding_failed", tenant=tenant.slug, model=model, error=repr(error))
            else:
                matrix = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype="<f4").reshape(len(rows), -1)
                similarities = ranking.cosine(query_vector, matrix)
                order = np.argsort(-similarities, kind="stable")[:depth]
                vector = [(rows[index][0], float(similarities[index])) for index in order]
    return ranking.fuse(vector=vector, keyword=keyword, top_k=top_k)


# --- Extracted memories, read as items ------------------------------------------------------------

MEMORIES_ROOT = "extracted_memories"
MEMORY_FILTER_FIELDS = ("kind", "subject")


def is_memories(namespace: tuple[str, ...]) -> bool:
    return bool(namespace) and namespace[0] == MEMORIES_ROOT


def memory_value(memory: Memory) -> dict[str, Any]:
    """What an item of extracted memories holds: the statement, when it holds, and its sources."""
    return {
        "kind": memory.kind,
        "subject": memory.subject,
        "text": memory.text,
        "valid_from": memory.valid_from.isoformat() if memory.valid_from else None,
        "valid_to": memory.valid_to.isoformat() if memory.valid_to else None,
        "confidence": memory.confidence,
        "message_ids": [str(message_id) for message_id in memory.message_ids],
    }


def _memory_item(*, tenant: Tenant, user_id: str, memory: Memory) -> StoreItem:
    # Shaped as an item to be answered as one; never saved (the memory's row is its only copy).
    return StoreItem(
        tenant=tenant,
        namespace=[MEMORIES_ROOT, user_id],
        key=str(memory.memory_id),
        value=memory_value(memory),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
    )


def memory_item_get(*, tenant: Tenant, namespace: tuple[str, ...], key: str) -> StoreItem | None:
    """The user's memory keyed by its ``memory_id``, current or not; None for any other address."""
    if len(namespace) != 2:
        return None
    try:
        memory_id = uuid.UUID(key)
    except ValueError:
        return None
    memory = extraction_selectors.memory_get(tenant=tenant, user_id=namespace[1], memory_id=memory_id)
    return None if memory is None else _memory_item(tenant=tenant, user_id=namespace[1], memory=memory)


def memory_items_search(
    *,
    tenant: Tenant,
    namespace_prefix: tuple[str, ...],
    query: str | None,
    filter: dict[str, Any] | None,  # noqa: A002 - LangGraph's name
    limit: int,
    offset: int,
) -> list[Hit]:
    """The user's current memories as items (see the module's contract); nothing deeper than the user."""
    if len(namespace_prefix) != 2 or not limit:
        return []
    user_id = namespace_prefix[1]
    equal = {name: condition["$eq"] if isinstance(condition, dict) else condition for name, condition in (filter or {}).items()}
    filters = extraction_selectors.MemoryFilters(kind=equal.get("kind"), subject=equal.get("subject"))
    if query:
        hits = extraction_selectors.memories_search(
            tenant=tenant, user_id=user_id, query=query, top_k=offset + limit, filters=filters
        )
        return [
            Hit(item=_memory_item(tenant=tenant, user_id=user_id, memory=hit.memory), score=hit.score) for hit in hits[offset:]
        ]
    memories = extraction_selectors.user_memories(tenant=tenant, user_id=user_id, filters=filters)[offset : offset + limit]
    return [Hit(item=_memory_item(tenant=tenant, user_id=user_id, memory=memory), score=None) for memory in memories]


# --- Namespaces --------------------------------------------------------------------------------------


def _match_sql(match_type: str, path: tuple[str, ...]) -> tuple[str, list[Any]]:
    parts = ["cardinality(namespace) >= %s"]
    params: list[Any] = [len(path)]
    for position, label in enumerate(path):
        if label == "*":
            continue
        if match_type == "prefix":
            parts.append("namespace[%s] = %s")
            params.extend([position + 1, label])
        else:
            parts.append("namespace[cardinality(namespace) - %s] = %s")
            params.extend([len(path) - position - 1, label])
    return " AND ".join(parts), params


def namespaces_list(
    *,
    tenant: Tenant,
    match_conditions: tuple[tuple[str, tuple[str, ...]], ...],
    max_depth: int | None,
    limit: int,
    offset: int,
    now: datetime,
) -> list[tuple[str, ...]]:
    conditions = ["tenant_id = %s", "(expires_at IS NULL OR expires_at > %s)"]
    params: list[Any] = [tenant.pk, now]
    for match_type, path in match_conditions:
        sql, values = _match_sql(match_type, path)
        conditions.append(sql)
        params.extend(values)
    shown = "namespace" if max_depth is None else "namespace[1:%s]"
    shown_params = [] if max_depth is None else [max_depth]
    # COLLATE "C": labels compare by code point, as Python compares the tuples InMemoryStore sorts.
    sql = (
        f'SELECT DISTINCT {shown} COLLATE "C" AS shown FROM {TABLE} WHERE {" AND ".join(conditions)} '  # noqa: S608 - fixed SQL
        "ORDER BY shown LIMIT %s OFFSET %s"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*shown_params, *params, limit, offset])
        return [tuple(row[0]) for row in cursor.fetchall()]

"""Writes of LangGraph's store, and the batch of operations ``BaseStore.batch`` sends.

Contract
--------
``operations_parse(raw)`` turns the JSON operations of a batch into ``GetOperation``,
``SearchOperation``, ``PutOperation`` and ``ListNamespacesOperation``, checking every rule before
anything is read or written; ``store_batch(tenant=, operations=)`` then runs them in order, in one
PostgreSQL transaction, and answers one result per operation: the item or None for a get, the
ranked items for a search, None for a put or delete, the namespaces for a listing. A later
operation sees the earlier ones' writes. A 2xx means every write of the batch is committed; any
refusal or failure means none is (a PostgreSQL that does not answer is a 503).

Rules (a broken size limit is ``LimitExceeded``, any other broken rule ``InvalidStoreOperation``;
both answer 400 ``details.field`` naming the operation and its field, e.g. ``operations[2].namespace[1]``):

- At most MEMORY_MAX_BATCH operations per batch.
- A namespace is an array of at most ``MAX_NAMESPACE_DEPTH`` labels; a label is a non-empty
  storable string of at most ``MAX_LABEL_CHARS`` characters without "." (LangGraph refuses it too:
  some stores join labels with dots). A put needs at least one label.
- A key is a storable string of at most ``MAX_KEY_CHARS`` characters ("" is a key like any other).
- A value is a JSON object that passes ``core.storable`` and is at most
  MEMORY_MAX_STORE_VALUE_BYTES bytes as compact UTF-8 JSON. ``value: null`` deletes the item.
- ``index``: ``false`` (not searchable by a query), ``null`` (the whole value, as JSON text) or a
  list of LangGraph field paths (``"text"``, ``"meta.title"``, ``"notes[*].body"``) whose texts are
  joined to make the item's searchable text.
- ``ttl``: minutes (a positive number up to ``MAX_TTL_MINUTES``) or null (the item never expires).
- A filter is an object of value fields to a JSON value (equality; an object matches the fields it
  names, an array matches exactly) or to an object of operators ``$eq``, ``$ne``, ``$gt``,
  ``$gte``, ``$lt``, ``$lte``; the ordering operators take a number and match only numbers. A
  dotted field name is the value's field of that name, else the path through nested objects.
- ``limit`` at most MEMORY_MAX_PAGE_SIZE, ``offset + limit`` at most a hundred pages.
- ``["extracted_memories", <user_id>]`` (``selectors.MEMORIES_ROOT``) holds the user's extracted
  memories, read-only: a put or delete there is refused, a search there names the user, and its
  filter is ``kind`` or ``subject`` equal to a non-empty string (see ``store.selectors``).

TTL: a put with ``ttl`` expires that many minutes after the write; a get or search with
``refresh_ttl`` (the default) starts the item's time again. An expired item is never answered,
listed or counted. Expired items are swept twice over: every batch that writes also deletes up to
``SWEEP_BATCH`` of the tenant's, and ``store_sweep`` (Celery beat, every five minutes) every tenant's.

Embeddings of the items put are computed before the transaction, in one call to the tenant's
embedding model (``MEMORY_EMBEDDING_MODEL``); a model that cannot answer leaves the items findable
by their words only, and is logged.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone
from langgraph.store.base.embed import get_text_at_path, tokenize_path

from conversations import tokens
from conversations.api.serializers import max_depth as max_page_depth
from core.exceptions import LimitExceeded, MemoryServiceError
from core.storable import storable_json, storable_text
from search import embeddings
from store import selectors
from store.models import StoreItem
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

MAX_NAMESPACE_DEPTH = 20
MAX_LABEL_CHARS = 200
MAX_KEY_CHARS = 1_000
MAX_INDEX_PATHS = 20
MAX_TTL_MINUTES = 10 * 366 * 24 * 60  # ten years
MAX_FILTER_FIELDS = 50
SWEEP_BATCH = 1_000
DEFAULT_SEARCH_LIMIT = 10
DEFAULT_NAMESPACES_LIMIT = 100
FILTER_OPERATORS = frozenset({"$eq", "$ne", "$gt", "$gte", "$lt", "$lte"})
ORDERING_OPERATORS = frozenset({"$gt", "$gte", "$lt", "$lte"})


class InvalidStoreOperation(MemoryServiceError):
    """An operation that breaks a rule other than a size limit."""

    code = "validation_error"
    status = 400


@dataclass(frozen=True)
class GetOperation:
    namespace: tuple[str, ...]
    key: str
    refresh_ttl: bool = True


@dataclass(frozen=True)
class SearchOperation:
    namespace_prefix: tuple[str, ...]
    query: str | None = None
    filter: dict[str, Any] | None = None
    limit: int = DEFAULT_SEARCH_LIMIT
    offset: int = 0
    refresh_ttl: bool = True


@dataclass(frozen=True)
class PutOperation:
    namespace: tuple[str, ...]
    key: str
    value: dict[str, Any] | None  # None: delete
    index: list[str] | bool | None = None  # False: not indexed; None: the whole value
    ttl: float | None = None


@dataclass(frozen=True)
class ListNamespacesOperation:
    # (match type, path); "*" in a path matches any label.
    match_conditions: tuple[tuple[str, tuple[str, ...]], ...] = ()
    max_depth: int | None = None
    limit: int = DEFAULT_NAMESPACES_LIMIT
    offset: int = 0


Operation = GetOperation | SearchOperation | PutOperation | ListNamespacesOperation


# --- Reading the operations ----------------------------------------------------------------------


def _invalid(field: str, message: str) -> InvalidStoreOperation:
    return InvalidStoreOperation(f"{field}: {message}", details={"field": field})


def check_namespace(value: Any, *, field: str, allow_empty: bool = True) -> tuple[str, ...]:
    """A namespace (or search prefix, or listing path, where "*" matches any label) as a tuple of
    labels, or the rule it breaks."""
    if not isinstance(value, list | tuple):
        raise _invalid(field, 'a namespace is an array of labels, e.g. ["users", "42"].')
    if not value and not allow_empty:
        raise _invalid(field, "a namespace needs at least one label.")
    if len(value) > MAX_NAMESPACE_DEPTH:
        raise LimitExceeded(
            f"{field} has {len(value)} labels; the limit is {MAX_NAMESPACE_DEPTH}.",
            details={"field": field, "size": len(value), "limit": MAX_NAMESPACE_DEPTH},
        )
    for position, label in enumerate(value):
        where = f"{field}[{position}]"
        if not isinstance(label, str):
            raise _invalid(where, f"a namespace label is a string, not {type(label).__name__}.")
        storable_text(label, field=where)
        if not label:
            raise _invalid(where, "a namespace label must not be empty.")
        if "." in label:
            raise _invalid(where, f'the namespace label {label!r} contains "."; labels cannot contain periods.')
        if len(label) > MAX_LABEL_CHARS:
            raise LimitExceeded(
                f"{where} is {len(label)} characters; the limit is {MAX_LABEL_CHARS}.",
                details={"field": where, "size": len(label), "limit": MAX_LABEL_CHARS},
            )
    return tuple(value)


def check_key(value: Any, *, field: str) -> str:
    if not isinstance(value, str):
        raise _invalid(field, f"a key is a string, not {type(value).__name__}.")
    storable_text(value, field=field)
    if len(value) > MAX_KEY_CHARS:
        raise LimitExceeded(
            f"{field} is {len(value)} characters; the limit is {MAX_KEY_CHARS}.",
            details={"field": field, "size": len(value), "limit": MAX_KEY_CHARS},
        )
    return value


def check_value(value: Any, *, field: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _invalid(field, f'a store value is a JSON object, not {_json_type(value)}; wrap it, e.g. {{"value": ...}}.')
    value = storable_json(value, field=field)
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    limit = settings.MEMORY_MAX_STORE_VALUE_BYTES
    if size > limit:
        raise LimitExceeded(
            f"{field} is {size} bytes as JSON; the limit is MEMORY_MAX_STORE_VALUE_BYTES={limit}.",
            details={"field": field, "size": size, "limit": limit},
        )
    return value


def _check_index(value: Any, *, field: str) -> list[str] | bool | None:
    if value is None or value is False:
        return value
    if value is True:
        return None
    if not isinstance(value, list) or not all(isinstance(path, str) and path for path in value):
        raise _invalid(field, 'index is false, null, or an array of field paths such as ["text", "meta.title"].')
    if len(value) > MAX_INDEX_PATHS:
        raise LimitExceeded(
            f"{field} names {len(value)} paths; the limit is {MAX_INDEX_PATHS}.",
            details={"field": field, "size": len(value), "limit": MAX_INDEX_PATHS},
        )
    for position, path in enumerate(value):
        storable_text(path, field=f"{field}[{position}]")
        try:
            tokenize_path(path)
        except Exception as error:  # LangGraph's own parser decides what a path is
            raise _invalid(f"{field}[{position}]", f"{path!r} is not a field path ({error}).") from None
    return list(value)


def _check_ttl(value: Any, *, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise _invalid(field, "ttl is a positive number of minutes, or null for an item that never expires.")
    if value > MAX_TTL_MINUTES:
        raise LimitExceeded(
            f"{field} is {value} minutes; the limit is {MAX_TTL_MINUTES} (ten years).",
            details={"field": field, "limit": MAX_TTL_MINUTES},
        )
    return float(value)


def _check_bool(value: Any, *, field: str, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _invalid(field, "must be true or false.")
    return value


def _check_count(value: Any, *, field: str, default: int, minimum: int = 0, limit: int | None = None) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise _invalid(field, f"must be an integer of at least {minimum}.")
    if limit is not None and value > limit:
        raise LimitExceeded(f"{field} is {value}; the limit is {limit}.", details={"field": field, "size": value, "limit": limit})
    return value


def _check_page(body: dict[str, Any], *, field: str, default_limit: int) -> tuple[int, int]:
    limit = _check_count(body.get("limit"), field=f"{field}.limit", default=default_limit, limit=settings.MEMORY_MAX_PAGE_SIZE)
    offset = _check_count(body.get("offset"), field=f"{field}.offset", default=0, limit=max_page_depth() - limit)
    return limit, offset


def check_filter(value: Any, *, field: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise _invalid(field, 'a filter is an object of value fields, e.g. {"kind": "note", "score": {"$gte": 3}}.')
    storable_json(value, field=field)
    if len(value) > MAX_FILTER_FIELDS:
        raise LimitExceeded(
            f"{field} names {len(value)} fields; the limit is {MAX_FILTER_FIELDS}.",
            details={"field": field, "size": len(value), "limit": MAX_FILTER_FIELDS},
        )
    pending: list[tuple[Any, str]] = [(condition, f"{field}.{name}") for name, condition in value.items()]
    while pending:
        condition, where = pending.pop()
        if not isinstance(condition, dict):
            continue
        operators = [name for name in condition if name.startswith("$")]
        if not operators:
            pending.extend((child, f"{where}.{name}") for name, child in condition.items())
            continue
        for name, operand in condition.items():
            if name not in FILTER_OPERATORS:
                raise _invalid(
                    f"{where}.{name}", f"unknown filter operator {name!r}: use one of {', '.join(sorted(FILTER_OPERATORS))}."
                )
            if name in ORDERING_OPERATORS and (isinstance(operand, bool) or not isinstance(operand, int | float)):
                raise _invalid(f"{where}.{name}", f"{name} compares numbers: send a number.")
    return value


def _check_memories_search(namespace_prefix: tuple[str, ...], search_filter: dict[str, Any] | None, *, field: str) -> None:
    if len(namespace_prefix) < 2:
        raise _invalid(
            f"{field}.namespace_prefix",
            f'a search of extracted memories names the user: ["{selectors.MEMORIES_ROOT}", <user_id>].',
        )
    for name, condition in (search_filter or {}).items():
        value = condition.get("$eq") if isinstance(condition, dict) and list(condition) == ["$eq"] else condition
        if name not in selectors.MEMORY_FILTER_FIELDS or not isinstance(value, str) or not value:
            raise _invalid(
                f"{field}.filter.{name}",
                "extracted memories are filtered by kind and subject only, each equal to a non-empty string "
                '(e.g. {"kind": "preference"}).',
            )


def _check_query(value: Any, *, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise _invalid(field, "a query is a string, or null to list without ranking.")
    storable_text(value, field=field)
    if len(value) > settings.MEMORY_MAX_QUERY_CHARS:
        raise LimitExceeded(
            f"{field} is {len(value)} characters; the limit is MEMORY_MAX_QUERY_CHARS={settings.MEMORY_MAX_QUERY_CHARS}.",
            details={"field": field, "size": len(value), "limit": settings.MEMORY_MAX_QUERY_CHARS},
        )
    return value if value.strip() else None


def _match_conditions(body: dict[str, Any], *, field: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    conditions: list[tuple[str, tuple[str, ...]]] = []
    for name in ("prefix", "suffix"):
        if body.get(name) is not None:
            path = check_namespace(body[name], field=f"{field}.{name}")
            if path:
                conditions.append((name, path))
    raw = body.get("match_conditions") or []
    if not isinstance(raw, list):
        raise _invalid(f"{field}.match_conditions", 'an array of {"match_type": "prefix" or "suffix", "path": [...]}.')
    for position, condition in enumerate(raw):
        where = f"{field}.match_conditions[{position}]"
        if not isinstance(condition, dict) or condition.get("match_type") not in ("prefix", "suffix"):
            raise _invalid(where, 'a match condition is {"match_type": "prefix" or "suffix", "path": [...]}.')
        path = check_namespace(condition.get("path"), field=f"{where}.path")
        if path:
            conditions.append((condition["match_type"], path))
    return tuple(conditions)


def operation_parse(body: Any, *, field: str) -> Operation:
    """One JSON operation, checked: ``{"op": "get" | "search" | "put" | "delete" | "list_namespaces", ...}``."""
    if not isinstance(body, dict):
        raise _invalid(field, 'an operation is an object such as {"op": "get", "namespace": [...], "key": "..."}.')
    kind = body.get("op")
    if kind == "get":
        return GetOperation(
            namespace=check_namespace(body.get("namespace"), field=f"{field}.namespace"),
            key=check_key(body.get("key"), field=f"{field}.key"),
            refresh_ttl=_check_bool(body.get("refresh_ttl"), field=f"{field}.refresh_ttl", default=True),
        )
    if kind == "search":
        limit, offset = _check_page(body, field=field, default_limit=DEFAULT_SEARCH_LIMIT)
        namespace_prefix = check_namespace(body.get("namespace_prefix", []), field=f"{field}.namespace_prefix")
        search_filter = check_filter(body.get("filter"), field=f"{field}.filter")
        if selectors.is_memories(namespace_prefix):
            _check_memories_search(namespace_prefix, search_filter, field=field)
        return SearchOperation(
            namespace_prefix=namespace_prefix,
            query=_check_query(body.get("query"), field=f"{field}.query"),
            filter=search_filter,
            limit=limit,
            offset=offset,
            refresh_ttl=_check_bool(body.get("refresh_ttl"), field=f"{field}.refresh_ttl", default=True),
        )
    if kind in ("put", "delete"):
        namespace = check_namespace(body.get("namespace"), field=f"{field}.namespace", allow_empty=False)
        if selectors.is_memories(namespace):
            raise _invalid(
                f"{field}.namespace",
                f'["{selectors.MEMORIES_ROOT}", <user_id>] holds the memories the service extracts from conversations '
                "and is read-only here: correct or delete one through /api/v1/users/{user_id}/memories/{memory_id}/, "
                "and put your own items under another namespace.",
            )
        key = check_key(body.get("key"), field=f"{field}.key")
        if kind == "delete":
            return PutOperation(namespace=namespace, key=key, value=None)
        if "value" not in body:
            raise _invalid(f"{field}.value", "a put needs a value: a JSON object (null deletes the item).")
        return PutOperation(
            namespace=namespace,
            key=key,
            value=check_value(body["value"], field=f"{field}.value"),
            index=_check_index(body.get("index"), field=f"{field}.index"),
            ttl=_check_ttl(body.get("ttl"), field=f"{field}.ttl"),
        )
    if kind == "list_namespaces":
        limit, offset = _check_page(body, field=field, default_limit=DEFAULT_NAMESPACES_LIMIT)
        return ListNamespacesOperation(
            match_conditions=_match_conditions(body, field=field),
            max_depth=_check_count(
                body.get("max_depth"), field=f"{field}.max_depth", default=None, minimum=1, limit=MAX_NAMESPACE_DEPTH
            ),
            limit=limit,
            offset=offset,
        )
    raise _invalid(f"{field}.op", f"unknown operation {kind!r}: use get, search, put, delete or list_namespaces.")


def operations_parse(raw: Any) -> list[Operation]:
    """Every operation of a batch, checked before any is run."""
    if not isinstance(raw, list) or not raw:
        raise _invalid("operations", "send at least one operation in an array.")
    if len(raw) > settings.MEMORY_MAX_BATCH:
        raise LimitExceeded(
            f"The batch has {len(raw)} operations; the limit is MEMORY_MAX_BATCH={settings.MEMORY_MAX_BATCH}.",
            details={"field": "operations", "size": len(raw), "limit": settings.MEMORY_MAX_BATCH},
        )
    return [operation_parse(body, field=f"operations[{position}]") for position, body in enumerate(raw)]


def _json_type(value: Any) -> str:
    if isinstance(value, list | tuple):
        return "an array"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


# --- Searchable text ---------------------------------------------------------------------------------


def indexed_text(value: dict[str, Any], index: list[str] | bool | None) -> str:
    """What search ranks an item by: "" when not indexed, the value as JSON for ``None``, else the
    texts of the paths (LangGraph's own path reader), one per line."""
    if index is False:
        return ""
    paths = index if isinstance(index, list) else ["$"]
    texts: list[str] = []
    for path in paths:
        texts.extend(get_text_at_path(value, path if path == "$" else tokenize_path(path)))
    return "\n".join(text for text in texts if text)


@dataclass(frozen=True)
class _Prepared:
    text: str
    token_count: int
    embedding: bytes | None
    model: str


def _prepare_puts(*, tenant: Tenant, operations: list[Operation]) -> dict[int, _Prepared]:
    """The searchable text, token count and vector of each put, by position, embedded in one call."""
    texts = {
        position: indexed_text(operation.value, operation.index)
        for position, operation in enumerate(operations)
        if isinstance(operation, PutOperation) and operation.value is not None
    }
    model = tenant.setting("MEMORY_EMBEDDING_MODEL") or ""
    to_embed = [position for position, text in texts.items() if text]
    vectors: dict[int, bytes] = {}
    if model and to_embed:
        try:
            matrix = embeddings.embed_documents(model, [texts[position] for position in to_embed], tenant=tenant, waiting=False)
        except Exception as error:  # the vector is derived: the item is still stored, and found by its words
            logger.warning("store_embedding_failed", tenant=tenant.slug, model=model, error=repr(error))
        else:
            vectors = {position: embeddings.to_bytes(row) for position, row in zip(to_embed, matrix, strict=True)}
    return {
        position: _Prepared(
            text=text,
            token_count=tokens.count(text) if text else 0,
            embedding=vectors.get(position),
            model=model if position in vectors else "",
        )
        for position, text in texts.items()
    }


# --- Running a batch -------------------------------------------------------------------------------


def _put(*, tenant: Tenant, operation: PutOperation, prepared: _Prepared | None, now: datetime) -> None:
    scoped = StoreItem.objects.for_tenant(tenant)
    if operation.value is None:
        scoped.filter(namespace=list(operation.namespace), key=operation.key).delete()
        return
    assert prepared is not None  # every put of a value was prepared
    item = StoreItem(
        tenant=tenant,
        namespace=list(operation.namespace),
        key=operation.key,
        value=operation.value,
        indexed=operation.index is not False,
        index_paths=operation.index if isinstance(operation.index, list) else None,
        indexed_text=prepared.text,
        token_count=prepared.token_count,
        embedding=prepared.embedding,
        embedding_model=prepared.model,
        created_at=now,
        updated_at=now,
        ttl_minutes=operation.ttl,
        expires_at=None if operation.ttl is None else now + timedelta(minutes=operation.ttl),
    )
    # An upsert: the row (its id, hence its place in an unranked search) and created_at stay.
    scoped.bulk_create(
        [item],
        update_conflicts=True,
        unique_fields=["tenant", "namespace", "key"],
        update_fields=[
            "value",
            "indexed",
            "index_paths",
            "indexed_text",
            "token_count",
            "embedding",
            "embedding_model",
            "updated_at",
            "ttl_minutes",
            "expires_at",
        ],
    )


def _refresh(*, tenant: Tenant, items: list[StoreItem], now: datetime) -> None:
    """Start the time to live of the items read again (those that have one)."""
    timed = [item for item in items if item.ttl_minutes is not None]
    if not timed:
        return
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE store_items SET expires_at = %s + ttl_minutes * interval '1 minute' "
            "WHERE tenant_id = %s AND id = ANY(%s) AND ttl_minutes IS NOT NULL",
            [now, tenant.pk, [item.pk for item in timed]],
        )
    for item in timed:
        item.expires_at = now + timedelta(minutes=item.ttl_minutes)


def _sweep_tenant(*, tenant: Tenant, now: datetime) -> int:
    with connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM store_items WHERE id IN (SELECT id FROM store_items WHERE tenant_id = %s "
            "AND expires_at IS NOT NULL AND expires_at <= %s LIMIT %s)",
            [tenant.pk, now, SWEEP_BATCH],
        )
        return cursor.rowcount


def store_batch(*, tenant: Tenant, operations: list[Operation]) -> list[Any]:
    """Run checked operations in order, all in one transaction; one result per operation."""
    prepared = _prepare_puts(tenant=tenant, operations=operations)
    results: list[Any] = []
    writes = 0
    try:
        with transaction.atomic():
            now = timezone.now()
            for position, operation in enumerate(operations):
                if isinstance(operation, PutOperation):
                    _put(tenant=tenant, operation=operation, prepared=prepared.get(position), now=now)
                    writes += 1
                    results.append(None)
                elif isinstance(operation, GetOperation):
                    item = selectors.item_get(tenant=tenant, namespace=operation.namespace, key=operation.key, now=now)
                    if item is not None and operation.refresh_ttl:
                        _refresh(tenant=tenant, items=[item], now=now)
                    results.append(item)
                elif isinstance(operation, SearchOperation):
                    found = selectors.items_search(
                        tenant=tenant,
                        namespace_prefix=operation.namespace_prefix,
                        query=operation.query,
                        filter=operation.filter,
                        limit=operation.limit,
                        offset=operation.offset,
                        now=now,
                    )
                    if operation.refresh_ttl:
                        _refresh(tenant=tenant, items=[hit.item for hit in found], now=now)
                    results.append(found)
                else:
                    results.append(
                        selectors.namespaces_list(
                            tenant=tenant,
                            match_conditions=operation.match_conditions,
                            max_depth=operation.max_depth,
                            limit=operation.limit,
                            offset=operation.offset,
                            now=now,
                        )
                    )
            swept = _sweep_tenant(tenant=tenant, now=now) if writes else 0
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    if writes:
        logger.info("store_batch", tenant=tenant.slug, operations=len(operations), writes=writes, swept=swept)
    return results


def store_sweep() -> int:
    """Delete every tenant's expired items (the periodic side of the sweep, ``store.tasks``), a bounded
    batch per statement; returns how many went."""
    now = timezone.now()
    deleted = 0
    while True:
        with connection.cursor() as cursor:
            # Every tenant's rows: the sweep is maintenance across tenants, like the retention sweep.
            cursor.execute(
                "DELETE FROM store_items WHERE id IN (SELECT id FROM store_items "
                "WHERE expires_at IS NOT NULL AND expires_at <= %s LIMIT %s)",
                [now, SWEEP_BATCH * 10],
            )
            swept = cursor.rowcount
        deleted += swept
        if swept < SWEEP_BATCH * 10:
            break
    logger.info("store_swept", deleted=deleted)
    return deleted

"""``ServiceStore``: LangGraph's long-term memory store (``BaseStore``) kept by the memory service.

Give it to a graph or an agent (``create_agent(..., store=ServiceStore(...))``,
``graph.compile(store=...)``); tools and nodes reach it as ``runtime.store`` or
``langgraph.config.get_store()``. Every ``BaseStore`` method (``get``, ``put``, ``delete``,
``search``, ``list_namespaces`` and their ``a`` forms) goes through ``batch``/``abatch``, which send
the operations to the service's ``store/batch/`` endpoint, run in order (a later operation sees an
earlier one's write). A batch of at most ``MAX_BATCH`` (100) operations, and at most the service's
``MEMORY_MAX_BATCH`` (100 unless its operator lowered it), is one request and one transaction of the
service: all of it is applied, or none. A longer batch is sent in parts of that size, each its own
transaction: when a part fails, the parts before it stay applied and no
later operation is (see ``MemoryClient.store_batch``); the error names the operation by its index in
the batch given (``operations[120]``) and ``details["applied"]`` counts the operations applied.
A ``search`` or ``list_namespaces`` asking for more items than the service answers at once (its
``MEMORY_MAX_PAGE_SIZE``, 500 unless its operator lowered it) is sent as consecutive pages of that
size in the same batch, and answered as one list: the service refuses the longer page naming its
limit, with nothing applied, and the store sends the batch again so, and asks later pages in that size.

What the service does, and how it differs from ``InMemoryStore``:

* Items are durable once a call returns, and shared by every process with a key of the tenant;
  another tenant's items are never visible.
* ``search`` without a query answers items in the order they were first written, namespace by
  namespace (as ``InMemoryStore``); with a query, the service's hybrid ranking (BM25 and its own
  embedding model, fused by reciprocal rank) over each item's searchable text, ``score`` best first.
  ``index`` on ``put``: ``False`` not searchable by a query, a list of field paths, or (``None``)
  this store's ``index={"fields": [...]}``, else the whole value. The service embeds: there is no
  ``embed`` or ``dims`` to configure here.
* Filters: equality (a value, or ``$eq``), ``$ne``, and ``$gt``, ``$gte``, ``$lt``, ``$lte`` on
  numbers. A dotted filter field (``{"user.level": 2}``) reads the value's field of that very name
  when there is one, else the path through nested objects (LangGraph's newer ``InMemoryStore``
  walks the path; the 4.x one reads only the top-level field).
* TTL is supported (``supports_ttl``): ``ttl`` in minutes on ``put``, or a ``timedelta``, or the
  moment the item expires (a naive one is local time; one already past raises ``ValueError``);
  ``ttl={"default_ttl": ...}`` for every put. Reads refresh it unless ``refresh_ttl=False``
  (``ttl={"refresh_on_read": False}`` changes the default). An expired item is never answered; the
  service deletes it. A put without ``ttl`` makes the item last.
* ``("extracted_memories", <user_id>)`` holds the memories the service extracted from the user's
  conversations, read-only: ``search`` answers the current ones (newest first, or ranked by a
  query), ``get`` the one whose ``memory_id`` is the key, each valued ``{"kind", "subject", "text",
  "valid_from", "valid_to", "confidence", "message_ids"}``; a filter there is ``kind`` or
  ``subject`` equal to a string. A ``put`` or ``delete`` there raises ``MemoryServiceError`` (400):
  memories are corrected through ``MemoryClient.correct_memory`` and ``delete_memory``. They are not
  listed by ``list_namespaces`` nor found by a search of the empty prefix.
* A namespace label is a non-empty string without "." or NUL: ``InvalidNamespaceError`` is raised
  here before anything is sent, for ops given to ``batch`` directly too (``InMemoryStore`` checks
  only in ``put``, ``get``, ``search``, ``delete`` and ``list_namespaces``). A value is a JSON object
  within the service's ``MEMORY_MAX_STORE_VALUE_BYTES``. A refusal raises ``BadRequest`` (a
  ``MemoryServiceError``, 400) whose ``details["field"]`` names the operation and the field
  (``operations[0].value.items[3]``): the service's, or the client's own before anything is sent for
  a value JSON cannot carry (NaN or Infinity, a lone surrogate such as ``"\\ud800"``, a value that is
  not JSON), worded as the service words it.

Where the answers differ from ``InMemoryStore`` (LangGraph's own store tests, run on both stores,
answer alike otherwise):

* An overwrite keeps the item's ``created_at`` (``InMemoryStore`` sets it again), as a database
  store does; ``updated_at`` moves.
* ``list_namespaces`` lists namespaces that hold items. ``InMemoryStore`` also lists one whose
  items were all deleted, or that a ``get`` merely looked in; and such a namespace keeps its place
  in an unranked search there, while here it takes its place from its items written since.
* A query is always ranked (the service indexes every item unless ``index=False``);
  ``InMemoryStore`` without ``index`` ignores the query.
* Filters compare JSON: ``True`` never equals ``1``, and an ordering operator on a missing,
  boolean or text field is false (``InMemoryStore`` compares ``float()`` of it, or raises).
* A batch ``PutOp`` with the empty namespace is refused (400); ``InMemoryStore`` stores it.
* A number comes back with its value and type (a float of ``1e16`` or more, or ``3.0``, as a float),
  except ``-0.0``, which comes back as ``0.0``: PostgreSQL's ``jsonb`` keeps numbers as ``numeric``,
  which has no negative zero. ``InMemoryStore`` keeps the very object.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
    validate_op_namespace,
)

from memory_client.http import MemoryClient, MemoryServiceError

__all__ = ["ServiceStore"]


class ServiceStore(BaseStore):
    """A LangGraph store whose items live in the memory service, for one tenant."""

    supports_ttl = True

    def __init__(
        self,
        client: MemoryClient | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        index: Mapping[str, Any] | None = None,
        ttl: TTLConfig | None = None,
        timeout: float = 10.0,
        retries: int = 3,
    ) -> None:
        """``client``, or ``base_url`` and ``api_key`` to make one. ``index={"fields": [...]}``: the
        field paths items are searched by when a put names none. ``ttl``: LangGraph's ``TTLConfig``
        (``default_ttl`` minutes, ``refresh_on_read``); the service sweeps, so
        ``sweep_interval_minutes`` is not needed."""
        if client is None:
            if not base_url or not api_key:
                raise ValueError("Give a MemoryClient, or base_url and api_key.")
            client = MemoryClient(base_url, api_key, timeout=timeout, retries=retries)
        self.client = client
        unknown = set(index or {}) - {"fields"}
        if unknown:
            raise ValueError(
                f"ServiceStore's index takes only fields (the service embeds with its own model); got {sorted(unknown)}."
            )
        fields = (index or {}).get("fields")
        self.index_fields: list[str] | None = None if fields is None or fields == ["$"] else list(fields)
        self.ttl_config = ttl

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        operations = [self._operation(op) for op in ops]
        while True:
            sent, counts = _in_pages(operations, self.client._page_size)
            try:
                answers = self.client.store_batch(sent)
            except MemoryServiceError as error:
                if not self._refused_page(error, sent):
                    raise
                continue
            return self._results(answers, counts, operations)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        operations = [self._operation(op) for op in ops]
        while True:
            sent, counts = _in_pages(operations, self.client._page_size)
            try:
                answers = await self.client.astore_batch(sent)
            except MemoryServiceError as error:
                if not self._refused_page(error, sent):
                    raise
                continue
            return self._results(answers, counts, operations)

    def _results(self, answers: list[Any], counts: list[int], operations: list[dict[str, Any]]) -> list[Result]:
        """The result of each of ``operations`` from the answers to what ``_in_pages`` sent of them."""
        return [self._result(answer, operation) for answer, operation in zip(_joined(answers, counts), operations, strict=True)]

    def _refused_page(self, error: MemoryServiceError, sent: list[dict[str, Any]]) -> bool:
        """Whether the service refused an operation of ``sent`` as a page of more items than it
        answers at once, with nothing applied: the batch is then sent again in pages of its size.
        After earlier parts of a long batch were applied the error is raised, the size learnt all the same."""
        details = error.details if isinstance(error.details, Mapping) else {}
        refused = _REFUSED_PAGE.fullmatch(str(details.get("field", "")))
        if refused is None:
            return False
        asked = sent[int(refused.group(1))].get("limit")
        learnt = type(asked) is int and self.client._learn_page_limit(error, refused.group(0), asked)
        return learnt and not details.get("applied")

    # --- to and from the service's JSON --------------------------------------------------------------

    def _operation(self, op: Op) -> dict[str, Any]:
        validate_op_namespace(op)
        if isinstance(op, GetOp):
            return {"op": "get", "namespace": list(op.namespace), "key": str(op.key), "refresh_ttl": op.refresh_ttl}
        if isinstance(op, SearchOp):
            return {
                "op": "search",
                "namespace_prefix": list(op.namespace_prefix),
                "query": op.query,
                "filter": dict(op.filter) if op.filter is not None else None,
                "limit": op.limit,
                "offset": op.offset,
                "refresh_ttl": op.refresh_ttl,
            }
        if isinstance(op, PutOp):
            if op.value is None:
                return {"op": "delete", "namespace": list(op.namespace), "key": str(op.key)}
            index: list[str] | bool | None = op.index
            if index is None:
                index = self.index_fields
            return {
                "op": "put",
                "namespace": list(op.namespace),
                "key": str(op.key),
                "value": dict(op.value) if isinstance(op.value, Mapping) else op.value,  # the service names what it refuses
                "index": False if index is False else None if index is None else list(index),
                "ttl": _ttl_minutes(op.ttl),
            }
        if isinstance(op, ListNamespacesOp):
            return {
                "op": "list_namespaces",
                "match_conditions": [
                    {"match_type": condition.match_type, "path": list(condition.path)} for condition in op.match_conditions or ()
                ],
                "max_depth": op.max_depth,
                "limit": op.limit,
                "offset": op.offset,
            }
        raise ValueError(f"Unknown store operation: {type(op).__name__}")

    @staticmethod
    def _result(answer: Any, operation: Mapping[str, Any]) -> Result:
        kind = operation["op"]
        if kind == "get":
            return None if answer is None else _item(answer)
        if kind == "search":
            return [_search_item(entry) for entry in answer]
        if kind == "list_namespaces":
            return [tuple(namespace) for namespace in answer]
        return None


# The reads a page limit applies to, and the field the service names when it refuses one's limit.
_PAGED = ("search", "list_namespaces")
_REFUSED_PAGE = re.compile(r"operations\[(\d+)\]\.limit")


def _in_pages(operations: list[dict[str, Any]], page_size: Callable[[int], int]) -> tuple[list[dict[str, Any]], list[int]]:
    """The operations to send, each read asking for more than ``page_size(limit)`` items sent as
    consecutive pages of that size (one after the other's offset), and how many each one became."""
    sent: list[dict[str, Any]] = []
    counts: list[int] = []
    for operation in operations:
        limit = operation.get("limit") if operation["op"] in _PAGED else None
        if limit is None or (size := page_size(limit)) >= limit:
            sent.append(operation)
            counts.append(1)
            continue
        offset = operation.get("offset") or 0
        pages = [{**operation, "limit": min(size, limit - first), "offset": offset + first} for first in range(0, limit, size)]
        sent.extend(pages)
        counts.append(len(pages))
    return sent, counts


def _joined(answers: list[Any], counts: list[int]) -> list[Any]:
    """The answer of each operation given to ``_in_pages``: its pages' items as one list."""
    joined: list[Any] = []
    position = 0
    for count in counts:
        if count == 1:
            joined.append(answers[position])
        else:
            joined.append([entry for page in answers[position : position + count] for entry in page])
        position += count
    return joined


def _ttl_minutes(ttl: float | timedelta | datetime | None) -> float | None:
    """Minutes to live from what a put may give: minutes, a ``timedelta``, or the moment the item
    expires (a naive one is local time), as LangGraph's newer ``BaseStore`` converts them."""
    if ttl is None:
        return None
    if isinstance(ttl, datetime):
        now = datetime.now() if ttl.tzinfo is None else datetime.now(timezone.utc)  # noqa: UP017 - the client runs on 3.10
        ttl = ttl - now
    if isinstance(ttl, timedelta):
        minutes = ttl.total_seconds() / 60
        if minutes <= 0:
            raise ValueError(f"The ttl {ttl} is already past: give a moment to come, or minutes.")
        return minutes
    return ttl


def _when(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _item(answer: Mapping[str, Any]) -> Item:
    return Item(
        value=answer["value"],
        key=answer["key"],
        namespace=tuple(answer["namespace"]),
        created_at=_when(answer["created_at"]),
        updated_at=_when(answer["updated_at"]),
    )


def _search_item(answer: Mapping[str, Any]) -> SearchItem:
    return SearchItem(
        namespace=tuple(answer["namespace"]),
        key=answer["key"],
        value=answer["value"],
        created_at=_when(answer["created_at"]),
        updated_at=_when(answer["updated_at"]),
        score=answer.get("score"),
    )

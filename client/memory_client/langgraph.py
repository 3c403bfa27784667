"""A LangGraph checkpointer kept in the memory service.

:class:`ServiceCheckpointSaver` stores a graph's checkpoints through the service's checkpoint API,
with the semantics of LangGraph's ``InMemorySaver`` (config shapes, ``parent_config``, pending
writes in ``writes_sort_key`` order, ``list`` filters, string channel versions):

* ``thread_id`` is the conversation id (letters, digits and ``. _ @ = + -``, as the service
  accepts them) and ``checkpoint_ns`` the namespace.
* A checkpoint is stored as ``state``: the checkpoint dict without ``channel_values``, as plain JSON,
  plus ``"channel_values": {name: encoded}``. Every checkpoint carries all of its channel values
  (nothing refers to an older checkpoint, since the service retires old ones: it keeps the newest
  ``MEMORY_MAX_CHECKPOINTS`` per conversation and namespace).
* A value (channel value or pending write) is encoded as ``{"json": value}`` when it is plain JSON
  that comes back equal from storage (dicts with str keys, lists, str, int of at most 64 bits,
  finite float but ``-0.0``, bool, None; no tuple, bytes or object), and as ``{"type": t, "data": base64}`` from the serializer's
  ``dumps_typed`` otherwise. A checkpoint field other than ``channel_values`` that is not plain
  JSON is kept the second way under ``state["typed_fields"]``.
* Metadata is ``get_serializable_checkpoint_metadata(config, metadata)`` stored as JSON (tuples
  become lists; anything JSON cannot hold is stored as its ``str``; ``-0.0`` comes back ``0.0``).
  ``list``'s ``filter`` compares metadata values for equality, on the client.
* "Newest" is the order the service saved checkpoints in; ``before`` lists what was saved before
  that checkpoint. A missing conversation or checkpoint reads as ``None`` / nothing; deleting a
  thread that does not exist is a no-op.
* ``list`` asks the service for pages of ``PAGE_SIZE`` checkpoints; a service answering fewer per
  page (a lower ``MEMORY_MAX_PAGE_SIZE``) refuses such a page naming its limit, and the client then
  asks that page again, and its later pages, in the service's size.
* LangGraph saves a task's writes while the put of the checkpoint they belong to may still be in
  flight (both run in its background executor), and the service only takes writes for a stored
  checkpoint. Writes the service answers "not found" to therefore wait (up to
  ``PUT_WAIT_SECONDS``) for this saver's put of that checkpoint to finish, then are sent again;
  if no such put comes, the ``NotFound`` is raised.

The async methods use httpx's async client. Needs langgraph-checkpoint and httpx only (no Django).
"""

from __future__ import annotations

import asyncio
import base64
import json
import math
import random
import threading
from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    SerializerProtocol,
    get_checkpoint_id,
    get_serializable_checkpoint_metadata,
    writes_sort_key,
)

from memory_client.http import MemoryClient, MemoryServiceError, NotFound

PAGE_SIZE: Final = 100
# How long writes for a checkpoint not stored yet wait for this saver's put of it, and how many
# recent puts it remembers for that (older ones are long stored).
PUT_WAIT_SECONDS: Final = 30.0
TRACKED_PUTS: Final = 1024
TYPED_FIELDS: Final = "typed_fields"
# Integers beyond 64 bits, and -0.0 (PostgreSQL's jsonb keeps numbers as numeric, which has no
# negative zero), are typed instead of stored as JSON.
INT_BOUND: Final = 2**63


def is_plain_json(value: Any) -> bool:
    """Whether ``value`` is JSON that storage gives back equal and of the same Python types."""
    pending = [value]
    while pending:  # a loop, not recursion: deep values must not exhaust the stack
        item = pending.pop()
        kind = type(item)
        if item is None or kind is bool:
            continue
        if kind is str:
            if not _storable_text(item):
                return False
        elif kind is int:
            if not -INT_BOUND <= item < INT_BOUND:
                return False
        elif kind is float:
            negative_zero = item == 0 and math.copysign(1.0, item) < 0
            if not math.isfinite(item) or negative_zero:
                return False
        elif kind is list:
            pending.extend(item)
        elif kind is dict:
            for key, child in item.items():
                if type(key) is not str or not _storable_text(key):
                    return False
                pending.append(child)
        else:
            return False
    return True


def _storable_text(text: str) -> bool:
    """jsonb refuses NUL, and a lone UTF-16 surrogate cannot be sent as UTF-8."""
    return "\x00" not in text and not any("\ud800" <= char <= "\udfff" for char in text)


def _thread_id(config: RunnableConfig) -> Any:
    configurable = config.get("configurable") or {}
    thread_id = configurable.get("thread_id")
    if thread_id is None or thread_id == "":
        raise ValueError('A thread_id is required: pass config={"configurable": {"thread_id": "<conversation id>"}}.')
    return thread_id


def _write_sort_key(write: Mapping[str, Any]) -> tuple[str, str, int]:
    return writes_sort_key(write["task_path"], write["task_id"], write["idx"])


def _writes_of(writes: Sequence[tuple[str, Any]]) -> list[tuple[int, str, Any]]:
    """(idx, channel, value) with InMemorySaver's index: within one call a regular write keeps its
    position and a special channel's later write replaces its earlier one."""
    by_idx: dict[int, tuple[int, str, Any]] = {}
    for index, (channel, value) in enumerate(writes):
        idx = WRITES_IDX_MAP.get(channel, index)
        if idx >= 0 and idx in by_idx:
            continue
        by_idx[idx] = (idx, channel, value)
    return list(by_idx.values())


class _Listing:
    """One ``list`` call: asks the service for pages newest first, filters on the client."""

    def __init__(
        self,
        saver: ServiceCheckpointSaver,
        config: RunnableConfig | None,
        filter: Mapping[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> None:
        if config is None:
            raise ValueError("A thread_id is required: the service lists the checkpoints of one thread (conversation).")
        self.saver = saver
        self.thread_id = _thread_id(config)
        self.namespace: str | None = config["configurable"].get("checkpoint_ns")
        self.checkpoint_id = get_checkpoint_id(config)
        self.filter = dict(filter or {})
        self.cursor = get_checkpoint_id(before) if before else None
        self.remaining = limit
        self.done = limit is not None and limit <= 0
        self.seen: set[tuple[str, str]] = set()

    @property
    def conversation_id(self) -> str:
        return str(self.thread_id)

    def request(self) -> dict[str, Any]:
        size = self.saver.client._page_size(PAGE_SIZE)
        if self.remaining is not None and not self.filter and not self.checkpoint_id:
            size = min(size, self.remaining)
        self.page_size = size
        return {"namespace": self.namespace, "before": self.cursor, "limit": size}

    def refused(self, error: MemoryServiceError) -> bool:
        """Whether the service refused the page asked as more than it answers at once: then the
        next ``request`` asks the same page in the service's size."""
        return self.saver.client._learn_page_limit(error, "limit", self.page_size)

    def take(self, page: list[dict[str, Any]]) -> list[CheckpointTuple]:
        found: list[CheckpointTuple] = []
        for stored in page:
            key = (stored["namespace"], stored["checkpoint_id"])
            if key in self.seen:  # a cursor naming checkpoints of two namespaces may repeat one
                continue
            self.seen.add(key)
            if self.checkpoint_id and stored["checkpoint_id"] != self.checkpoint_id:
                continue
            metadata = stored["metadata"]
            if not all(value == metadata.get(name) for name, value in self.filter.items()):
                continue
            found.append(self.saver._tuple(self.thread_id, stored))
            if self.remaining is not None:
                self.remaining -= 1
                if self.remaining <= 0:
                    self.done = True
                    return found
        if len(page) < self.page_size:
            self.done = True
        else:
            self.cursor = page[-1]["checkpoint_id"]
        return found


class ServiceCheckpointSaver(BaseCheckpointSaver[str]):
    """LangGraph checkpoints of the memory service: one thread per conversation."""

    def __init__(
        self,
        client: MemoryClient | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        serde: SerializerProtocol | None = None,
    ) -> None:
        super().__init__(serde=serde)
        if client is None:
            if not base_url or not api_key:
                raise ValueError("Pass a MemoryClient, or base_url and api_key to make one.")
            client = MemoryClient(base_url, api_key)
        self.client = client
        # Shared with the copies ``with_allowlist`` makes: one graph run may use either.
        self._stored: OrderedDict[tuple[str, str, str], threading.Event] = OrderedDict()
        self._stored_lock = threading.Lock()

    def _stored_event(self, thread_id: Any, namespace: str, checkpoint_id: str) -> threading.Event:
        """Set once this saver has stored the checkpoint."""
        key = (str(thread_id), namespace, checkpoint_id)
        with self._stored_lock:
            event = self._stored.get(key)
            if event is None:
                event = self._stored[key] = threading.Event()
                while len(self._stored) > TRACKED_PUTS:
                    self._stored.popitem(last=False)
            return event

    # --- encoding -------------------------------------------------------------------------------

    def encode_value(self, value: Any) -> dict[str, Any]:
        """A channel value or pending write as stored: readable JSON when it can be."""
        if is_plain_json(value):
            return {"json": value}
        type_, data = self.serde.dumps_typed(value)
        return {"type": type_, "data": base64.b64encode(data).decode("ascii")}

    def decode_value(self, stored: Mapping[str, Any]) -> Any:
        if "json" in stored:
            return stored["json"]
        return self.serde.loads_typed((stored["type"], base64.b64decode(stored["data"])))

    def encode_checkpoint(self, checkpoint: Checkpoint) -> dict[str, Any]:
        state: dict[str, Any] = {}
        typed: dict[str, Any] = {}
        for name, value in checkpoint.items():
            if name == "channel_values":
                continue
            if is_plain_json(value):
                state[name] = value
            else:
                typed[name] = self.encode_value(value)
        if typed:
            state[TYPED_FIELDS] = typed
        state["channel_values"] = {name: self.encode_value(value) for name, value in checkpoint["channel_values"].items()}
        return state

    def decode_checkpoint(self, state: Mapping[str, Any]) -> Checkpoint:
        fields = {name: value for name, value in state.items() if name not in ("channel_values", TYPED_FIELDS)}
        fields.update({name: self.decode_value(value) for name, value in (state.get(TYPED_FIELDS) or {}).items()})
        versions = fields.get("channel_versions") or {}
        # As InMemorySaver: the values of the channels the checkpoint has a version of.
        values = {
            name: self.decode_value(value) for name, value in (state.get("channel_values") or {}).items() if name in versions
        }
        return {**fields, "channel_values": values}  # type: ignore[typeddict-item]

    @staticmethod
    def encode_metadata(config: RunnableConfig, metadata: CheckpointMetadata) -> dict[str, Any]:
        return json.loads(json.dumps(get_serializable_checkpoint_metadata(config, metadata), default=str))

    def _tuple(self, thread_id: Any, stored: Mapping[str, Any], config: RunnableConfig | None = None) -> CheckpointTuple:
        namespace = stored["namespace"]
        parent_id = stored.get("parent_id")
        return CheckpointTuple(
            config=config
            or {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": stored["checkpoint_id"]}},
            checkpoint=self.decode_checkpoint(stored["state"]),
            metadata=stored["metadata"],
            parent_config=(
                {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": parent_id}}
                if parent_id
                else None
            ),
            pending_writes=[
                (write["task_id"], write["channel"], self.decode_value(write["value"]))
                # In writes_sort_key order, by code point whatever the collation of the service's database.
                for write in sorted(stored["writes"], key=_write_sort_key)
            ],
        )

    # --- BaseCheckpointSaver --------------------------------------------------------------------

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = _thread_id(config)
        namespace = config["configurable"].get("checkpoint_ns", "")
        if checkpoint_id := get_checkpoint_id(config):
            stored = self.client.get_checkpoint(str(thread_id), checkpoint_id, namespace=namespace)
            return None if stored is None else self._tuple(thread_id, stored, config)
        stored = self.client.latest_checkpoint(str(thread_id), namespace=namespace)
        return None if stored is None else self._tuple(thread_id, stored)

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        thread_id = _thread_id(config)
        namespace = config["configurable"].get("checkpoint_ns", "")
        if checkpoint_id := get_checkpoint_id(config):
            stored = await self.client.aget_checkpoint(str(thread_id), checkpoint_id, namespace=namespace)
            return None if stored is None else self._tuple(thread_id, stored, config)
        stored = await self.client.alatest_checkpoint(str(thread_id), namespace=namespace)
        return None if stored is None else self._tuple(thread_id, stored)

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        listing = _Listing(self, config, filter, before, limit)
        while not listing.done:
            try:
                page = self.client.list_checkpoints(listing.conversation_id, **listing.request())
            except MemoryServiceError as error:
                if not listing.refused(error):
                    raise
                continue
            yield from listing.take(page)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        listing = _Listing(self, config, filter, before, limit)
        while not listing.done:
            try:
                page = await self.client.alist_checkpoints(listing.conversation_id, **listing.request())
            except MemoryServiceError as error:
                if not listing.refused(error):
                    raise
                continue
            for found in listing.take(page):
                yield found

    def put(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        thread_id, namespace, fields = self._put_fields(config, checkpoint, metadata)
        self.client.put_checkpoint(str(thread_id), **fields)
        self._stored_event(thread_id, namespace, checkpoint["id"]).set()
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": checkpoint["id"]}}

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        thread_id, namespace, fields = self._put_fields(config, checkpoint, metadata)
        await self.client.aput_checkpoint(str(thread_id), **fields)
        self._stored_event(thread_id, namespace, checkpoint["id"]).set()
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": namespace, "checkpoint_id": checkpoint["id"]}}

    def _put_fields(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata
    ) -> tuple[Any, str, dict[str, Any]]:
        thread_id = _thread_id(config)
        namespace = config["configurable"].get("checkpoint_ns", "")
        fields = {
            "checkpoint_id": checkpoint["id"],
            "namespace": namespace,
            "parent_id": config["configurable"].get("checkpoint_id"),
            "state": self.encode_checkpoint(checkpoint),
            "metadata": self.encode_metadata(config, metadata),
        }
        return thread_id, namespace, fields

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        if not writes:
            return
        thread_id, checkpoint_id, fields = self._writes_fields(config, writes, task_id, task_path)
        try:
            self.client.put_writes(str(thread_id), checkpoint_id, **fields)
        except NotFound as error:
            if error.code != "not_found":
                raise
            if not self._stored_event(thread_id, fields["namespace"], checkpoint_id).wait(PUT_WAIT_SECONDS):
                raise
            self.client.put_writes(str(thread_id), checkpoint_id, **fields)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = ""
    ) -> None:
        if not writes:
            return
        thread_id, checkpoint_id, fields = self._writes_fields(config, writes, task_id, task_path)
        try:
            await self.client.aput_writes(str(thread_id), checkpoint_id, **fields)
        except NotFound as error:
            if error.code != "not_found":
                raise
            stored = self._stored_event(thread_id, fields["namespace"], checkpoint_id)
            if not await asyncio.to_thread(stored.wait, PUT_WAIT_SECONDS):
                raise
            await self.client.aput_writes(str(thread_id), checkpoint_id, **fields)

    def _writes_fields(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str
    ) -> tuple[Any, str, dict[str, Any]]:
        thread_id = _thread_id(config)
        fields = {
            "namespace": config["configurable"].get("checkpoint_ns", ""),
            "task_id": task_id,
            "task_path": task_path,
            "writes": [
                {"idx": idx, "channel": channel, "value": self.encode_value(value)} for idx, channel, value in _writes_of(writes)
            ],
        }
        return thread_id, config["configurable"]["checkpoint_id"], fields

    def delete_thread(self, thread_id: str) -> None:
        self.client.delete_checkpoints(str(thread_id))

    async def adelete_thread(self, thread_id: str) -> None:
        await self.client.adelete_checkpoints(str(thread_id))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """InMemorySaver's versions: a zero-padded counter, then a random tie-breaker."""
        if current is None:
            current_version = 0
        elif isinstance(current, int):
            current_version = current
        else:
            current_version = int(current.split(".")[0])
        return f"{current_version + 1:032}.{random.random():016}"  # noqa: S311 - a tie-breaker, not a secret

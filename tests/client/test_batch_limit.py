"""A service that takes fewer items per request than the client's ``MAX_BATCH`` (its operator lowered
``MEMORY_MAX_BATCH``): it refuses a longer part whole, naming its limit, and the client sends the
batch again in parts of that limit, the same items in the same order, and its later batches so too.

The service here is a gunicorn of its own with ``MEMORY_MAX_BATCH=3``; each client counts the items
of every request it sends through a transport that records them."""

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langgraph.store.base import GetOp, PutOp

from checkpoints.models import CheckpointWrite
from conversations.models import Message
from memory_client import MemoryClient
from memory_client.http import MAX_BATCH
from memory_client.store import ServiceStore
from store.models import StoreItem
from tenants import services as tenant_services
from tests.client.conftest import SMALL_BATCH, recording_transports, wait_for_a_quiet_service
from tests.faults import CeleryWorker, WebServer, wait_until

SERVICE_LIMIT = SMALL_BATCH


class Counting:
    """Records the number of items of the batch list of every request sent (``None`` for another body)."""

    def __init__(self) -> None:
        self.sizes: list[int | None] = []

    def record(self, request: httpx.Request) -> None:
        body = json.loads(request.content) if request.content else {}
        batch = next((body[name] for name in ("messages", "writes", "operations") if name in body), None)
        self.sizes.append(None if batch is None else len(batch))


@pytest.fixture
def small_batches(small_batch_web: WebServer, worker: CeleryWorker, tenant: Any) -> Iterator[tuple[MemoryClient, Counting]]:
    """A client of a service that takes at most SERVICE_LIMIT items per request, and its counts."""
    _, key = tenant_services.api_key_create(tenant=tenant, name="small-batches")
    counting = Counting()
    with MemoryClient(small_batch_web.url, key, **recording_transports(counting)) as client:
        yield client, counting
    wait_for_a_quiet_service(worker)


def increasing(seqs: list[int]) -> bool:
    return all(earlier < later for earlier, later in zip(seqs, seqs[1:], strict=False))


def stored_contents(tenant: Any, conversation_id: str) -> list[str]:
    rows = Message.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id).order_by("seq")
    return list(rows.values_list("content", flat=True))


def test_an_append_longer_than_the_services_limit_is_stored_whole_in_order_in_parts_of_its_limit(
    small_batches: tuple[MemoryClient, Counting], tenant: Any
) -> None:
    client, counting = small_batches
    turns = [{"role": "user" if index % 2 == 0 else "assistant", "content": f"turn {index}"} for index in range(10)]

    stored = client.append("small", turns)

    assert [message["content"] for message in stored] == [turn["content"] for turn in turns]
    assert increasing([message["seq"] for message in stored])
    assert counting.sizes == [10, 3, 3, 3, 1]  # the first part refused whole, then the service's size
    wait_until(lambda: len(stored_contents(tenant, "small")) == 10, message="the appends to be persisted")
    assert stored_contents(tenant, "small") == [turn["content"] for turn in turns]


def test_the_parts_sent_again_carry_the_same_ids_so_appending_again_stores_nothing_twice(
    small_batches: tuple[MemoryClient, Counting], tenant: Any
) -> None:
    client, counting = small_batches
    first = client.append("again", [{"role": "user", "content": f"note {index}"} for index in range(7)])

    again = client.append(
        "again", [{"role": message["role"], "content": message["content"], "id": message["id"]} for message in first]
    )

    assert [(message["id"], message["seq"]) for message in again] == [(message["id"], message["seq"]) for message in first]
    assert counting.sizes == [7, 3, 3, 1, 3, 3, 1]  # the later batch in the service's size at once
    wait_until(lambda: len(stored_contents(tenant, "again")) == 7, message="the appends to be persisted")
    assert stored_contents(tenant, "again") == [f"note {index}" for index in range(7)]


def test_async_appends_learn_the_limit_too(small_batches: tuple[MemoryClient, Counting]) -> None:
    client, counting = small_batches

    stored = asyncio.run(client.aappend("async", [{"role": "user", "content": f"turn {index}"} for index in range(5)]))

    assert [message["content"] for message in stored] == [f"turn {index}" for index in range(5)]
    assert increasing([message["seq"] for message in stored])
    assert counting.sizes == [5, 3, 2]


def test_store_operations_and_checkpoint_writes_are_sent_in_parts_of_the_services_limit(
    small_batches: tuple[MemoryClient, Counting], tenant: Any
) -> None:
    client, counting = small_batches
    store = ServiceStore(client)

    store.batch([*(PutOp(("notes",), f"{index}", {"n": index}) for index in range(5)), GetOp(("notes",), "4")])
    client.put_checkpoint("graph", checkpoint_id="1", state={"step": 1})
    client.put_writes("graph", "1", task_id="t", writes=[{"idx": index, "channel": "c", "value": index} for index in range(4)])

    assert counting.sizes == [6, 3, 3, None, 3, 1]
    assert sorted(StoreItem.objects.for_tenant(tenant).values_list("key", flat=True)) == ["0", "1", "2", "3", "4"]
    assert sorted(CheckpointWrite.objects.for_tenant(tenant).values_list("idx", flat=True)) == [0, 1, 2, 3]


def test_a_batch_within_the_services_limit_is_one_request(small_batches: tuple[MemoryClient, Counting]) -> None:
    client, counting = small_batches

    client.append("short", [{"role": "user", "content": f"turn {index}"} for index in range(SERVICE_LIMIT)])

    assert counting.sizes == [SERVICE_LIMIT]
    assert SERVICE_LIMIT < MAX_BATCH

"""A service that answers fewer items per page than the clients ask for (its operator lowered
``MEMORY_MAX_PAGE_SIZE``): it refuses a longer page naming its limit, and the checkpoint saver's
listing and the store's reads ask again in pages of that size, answering what the caller asked for,
and ask their later pages so at once.

The service here is a gunicorn of its own with ``MEMORY_MAX_PAGE_SIZE=SMALL_PAGE``; each client
records the page sizes of every request it sends through a transport that sees them."""

import asyncio
import json
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from memory_client import BadRequest, MemoryClient
from memory_client.langgraph import PAGE_SIZE, ServiceCheckpointSaver
from memory_client.store import ServiceStore
from tenants import services as tenant_services
from tests.client.conftest import SMALL_PAGE, busy_database_sessions, recording_transports
from tests.faults import WebServer, wait_until


class Asked:
    """The page sizes each request asked for: a list's ``limit``, or the limits of a store batch's reads."""

    def __init__(self) -> None:
        self.limits: list[Any] = []

    def record(self, request: httpx.Request) -> None:
        if "limit" in request.url.params:
            self.limits.append(int(request.url.params["limit"]))
        elif request.content and "operations" in (body := json.loads(request.content)):
            self.limits.append([operation["limit"] for operation in body["operations"] if "limit" in operation])


@pytest.fixture
def small_pages(small_page_web: WebServer, tenant: Any) -> Iterator[tuple[MemoryClient, Asked]]:
    """A client of a service that answers at most SMALL_PAGE items per page, and what it asked."""
    _, key = tenant_services.api_key_create(tenant=tenant, name="small-pages")
    asked = Asked()
    with MemoryClient(small_page_web.url, key, **recording_transports(asked)) as client:
        yield client, asked
    wait_until(lambda: busy_database_sessions() == 0, message="the service's database sessions to finish")


def save_steps(saver: ServiceCheckpointSaver, thread_id: str, steps: int) -> dict[str, Any]:
    """``steps`` checkpoints of one thread, each the child of the one before; the thread's config."""
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    for step in range(steps):
        checkpoint = {"v": 4, "id": str(uuid.uuid4()), "ts": f"2026-05-01T10:00:{step:02}+00:00", "channel_values": {}}
        checkpoint |= {"channel_versions": {}, "versions_seen": {}, "updated_channels": []}
        config = saver.put(config, checkpoint, {"step": step}, {})
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def test_the_saver_lists_every_checkpoint_in_pages_of_the_services_size_and_keeps_that_size(
    small_pages: tuple[MemoryClient, Asked],
) -> None:
    client, asked = small_pages
    saver = ServiceCheckpointSaver(client)
    config = save_steps(saver, "paged", 10)
    asked.limits.clear()

    listed = [found.metadata["step"] for found in saver.list(config)]
    first_six = [found.metadata["step"] for found in saver.list(config, limit=6)]

    assert listed == list(range(9, -1, -1))
    assert first_six == list(range(9, 3, -1))
    # The first page refused whole, then the service's size; the later listing in it at once (4, then 6 - 4).
    assert asked.limits == [PAGE_SIZE, SMALL_PAGE, SMALL_PAGE, SMALL_PAGE, SMALL_PAGE, 2]


def test_the_async_listing_learns_the_page_size_too(small_pages: tuple[MemoryClient, Asked]) -> None:
    client, asked = small_pages
    saver = ServiceCheckpointSaver(client)
    config = save_steps(saver, "paged-async", 5)
    asked.limits.clear()

    async def listed() -> list[int]:
        return [found.metadata["step"] async for found in saver.alist(config)]

    assert asyncio.run(listed()) == list(range(4, -1, -1))
    assert asked.limits == [PAGE_SIZE, SMALL_PAGE, SMALL_PAGE]


def put_notes(store: ServiceStore) -> list[str]:
    """Two items in each of six namespaces under ("notes",); their keys in the order written."""
    keys = []
    for topic in range(6):
        for index in range(2):
            store.put(("notes", f"topic{topic}"), f"{topic}-{index}", {"text": f"note {index} of topic {topic}"})
            keys.append(f"{topic}-{index}")
    return keys


def test_store_reads_asking_more_than_the_services_page_are_answered_whole(small_pages: tuple[MemoryClient, Asked]) -> None:
    client, asked = small_pages
    store = ServiceStore(client)
    keys = put_notes(store)
    asked.limits.clear()

    found = store.search(("notes",), limit=10)
    after_two = store.search(("notes",), limit=7, offset=2)
    namespaces = store.list_namespaces(prefix=("notes",))  # LangGraph's limit: 100

    assert [item.key for item in found] == keys[:10]
    assert [item.key for item in after_two] == keys[2:9]
    assert namespaces == [("notes", f"topic{topic}") for topic in range(6)]
    assert asked.limits == [[10], [4, 4, 2], [4, 3], [4] * (100 // SMALL_PAGE)]


def test_async_store_reads_learn_the_page_size_too(small_pages: tuple[MemoryClient, Asked]) -> None:
    client, asked = small_pages
    store = ServiceStore(client)
    keys = put_notes(store)
    asked.limits.clear()

    found = asyncio.run(store.asearch(("notes",), limit=6))

    assert [item.key for item in found] == keys[:6]
    assert asked.limits == [[6], [4, 2]]


def test_a_refusal_of_something_else_than_the_page_size_is_raised_without_asking_again(
    small_pages: tuple[MemoryClient, Asked],
) -> None:
    client, asked = small_pages
    store = ServiceStore(client)

    with pytest.raises(BadRequest) as raised:
        store.search(("notes",), limit=2, offset=100 * SMALL_PAGE)  # deeper than a hundred pages

    assert raised.value.details["field"] == "operations[0].offset"
    assert asked.limits == [[2]]

"""ServiceCheckpointSaver against the live service: LangGraph's checkpointer conformance suite, a
graph that survives the web server and the worker being killed at an interrupt, and the stored
encoding (plain JSON stays readable)."""

import asyncio
import operator
import threading
import time
import uuid
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.report import ProgressCallbacks
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Command, interrupt

from memory_client import MemoryClient
from memory_client.langgraph import ServiceCheckpointSaver, is_plain_json
from tests.client.conftest import LiveService
from tests.faults import wait_until

DRAFTS = 20  # enough steps for more checkpoints than the service keeps (MEMORY_MAX_CHECKPOINTS=20)


def test_the_saver_passes_langgraph_checkpointer_conformance(service: LiveService) -> None:
    @checkpointer_test(name="ServiceCheckpointSaver")
    async def service_saver() -> Any:
        client = service.client()
        yield ServiceCheckpointSaver(client)
        await client.aclose()

    started = time.monotonic()
    report = asyncio.run(validate(service_saver, progress=ProgressCallbacks.verbose()))
    report.print_report()
    print(f"conformance suite: {time.monotonic() - started:.1f} s")
    assert report.passed_all_base(), report.to_dict()


class Trip(TypedDict, total=False):
    request: str
    drafts: Annotated[list[str], operator.add]
    approved: bool
    booked: str


def draft(state: Trip) -> Trip:
    return {"drafts": [f"draft {len(state.get('drafts', [])) + 1} for {state['request']}"]}


def redraft_or_review(state: Trip) -> str:
    return "draft" if len(state["drafts"]) < DRAFTS else "review"


def review(state: Trip) -> Trip:
    answer = interrupt({"question": "Book it?", "draft": state["drafts"][-1]})
    return {"approved": answer == "yes"}


def book(state: Trip) -> Trip:
    return {"booked": state["drafts"][-1] if state["approved"] else ""}


def trip_graph(client: MemoryClient) -> CompiledStateGraph:
    builder = StateGraph(Trip)
    builder.add_node("draft", draft)
    builder.add_node("review", review)
    builder.add_node("book", book)
    builder.add_edge(START, "draft")
    builder.add_conditional_edges("draft", redraft_or_review, ["draft", "review"])
    builder.add_edge("review", "book")
    builder.add_edge("book", END)
    return builder.compile(checkpointer=ServiceCheckpointSaver(client))


def test_a_graph_resumes_from_its_interrupt_after_the_web_server_and_worker_are_killed(service: LiveService) -> None:
    config = {"configurable": {"thread_id": "trip-lisbon"}}
    with service.client() as client:
        paused = trip_graph(client).invoke({"request": "Lisbon in May"}, config)
    assert paused["__interrupt__"][0].value == {"question": "Book it?", "draft": f"draft {DRAFTS} for Lisbon in May"}

    service.web.kill()
    service.worker.kill()
    assert not service.web.running
    assert not service.worker.running
    started = time.monotonic()
    service.web.start()
    service.worker.start()
    print(f"web server and worker restarted in {time.monotonic() - started:.1f} s")

    with service.client() as client:
        graph = trip_graph(client)
        before = graph.get_state(config)
        assert before.next == ("review",)
        assert len(before.values["drafts"]) == DRAFTS
        finished = graph.invoke(Command(resume="yes"), config)
        assert finished["approved"] is True
        assert finished["booked"] == f"draft {DRAFTS} for Lisbon in May"
        assert finished["drafts"] == [f"draft {number} for Lisbon in May" for number in range(1, DRAFTS + 1)]
        assert graph.get_state(config).next == ()

        kept = client.list_checkpoints("trip-lisbon", namespace="", limit=100)
        written = kept[0]["metadata"]["step"] + 2  # one checkpoint per step, from the input's step -1
        assert written > 20
        assert len(kept) <= 20


def test_plain_json_state_stays_readable_and_reads_back_as_in_memory(memory: MemoryClient) -> None:
    saver, reference = ServiceCheckpointSaver(memory), InMemorySaver()
    values = {
        "plain": {"city": "Lisbon", "nights": 2, "price": 99.5, "tags": ["quiet", None, True]},
        "tuple": ("a", 1),
        "bytes": b"\x00\x01",
        "big": 1e20,
        "nul": "a\x00b",
        "set": {1, 2},
        "unversioned": "not in channel_versions",
    }
    versions = {name: saver.get_next_version(None, None) for name in values if name != "unversioned"}
    checkpoint = {
        "v": 4,
        "id": str(uuid.uuid4()),
        "ts": "2026-05-01T10:00:00+00:00",
        "channel_values": values,
        "channel_versions": versions,
        "versions_seen": {"__input__": {}},
        "updated_channels": sorted(versions),
    }
    metadata = {"source": "input", "step": -1, "parents": {}}
    config = {"configurable": {"thread_id": "encoding", "checkpoint_ns": ""}}
    writes = [("plain", {"n": 1}), ("tuple", (1, 2)), ("__error__", "first"), ("__error__", "second")]
    loaded = []
    for checkpointer in (saver, reference):
        stored_config = checkpointer.put(config, checkpoint, metadata, versions)
        checkpointer.put_writes(stored_config, writes, task_id="task-1", task_path="~__pregel_pull, draft")
        loaded.append(checkpointer.get_tuple(stored_config))
    assert loaded[0] == loaded[1]
    assert loaded[0].pending_writes == [
        ("task-1", "__error__", "second"),
        ("task-1", "plain", {"n": 1}),
        ("task-1", "tuple", [1, 2]),
    ]

    raw = memory.get_checkpoint("encoding", checkpoint["id"])
    stored_values = raw["state"]["channel_values"]
    assert stored_values["plain"] == {"json": values["plain"]}
    assert {name for name, value in stored_values.items() if "json" in value} == {"plain", "big", "unversioned"}
    assert raw["state"]["channel_versions"] == versions
    assert raw["metadata"] == metadata
    assert [write["value"].get("json") for write in raw["writes"]] == ["second", {"n": 1}, None]
    assert raw["writes"][2]["value"]["type"] == "msgpack"


def test_metadata_keeps_its_floats_whatever_their_size_as_in_memory(memory: MemoryClient) -> None:
    saver, reference = ServiceCheckpointSaver(memory), InMemorySaver()
    metadata = {"source": "loop", "step": 3, "parents": {}, "score": 1e16, "budget": -2.5e17, "largest": 1.7976931348623157e308}
    config = {"configurable": {"thread_id": "metadata-floats", "checkpoint_ns": ""}}
    checkpoint = {"v": 4, "id": str(uuid.uuid4()), "ts": "2026-05-01T10:00:00+00:00", "channel_values": {}}
    checkpoint |= {"channel_versions": {}, "versions_seen": {}, "updated_channels": []}

    found = []
    for checkpointer in (saver, reference):
        stored_config = checkpointer.put(config, checkpoint, metadata, {})
        found.append((checkpointer.get_tuple(stored_config).metadata, list(checkpointer.list(config, filter={"score": 1e16}))))

    (kept, listed), (in_memory, listed_in_memory) = found
    assert kept == in_memory
    assert {name: type(value) for name, value in kept.items()} == {name: type(value) for name, value in in_memory.items()}
    assert type(kept["score"]) is float
    assert len(listed) == len(listed_in_memory) == 1
    assert type(listed[0].metadata["budget"]) is float


@pytest.mark.parametrize(
    ("value", "plain"),
    [
        ({"a": [1, 2.5, "x", None, False]}, True),
        ((1, 2), False),
        ({1: "int key"}, False),
        (float("nan"), False),
        (-0.0, False),
        ({"big": 1e16, "bigger": -2.5e17, "largest": 1.7976931348623157e308}, True),
        (2**70, False),
        ("\ud800", False),
    ],
)
def test_only_json_that_comes_back_the_same_is_stored_as_json(value: Any, plain: bool) -> None:
    assert is_plain_json(value) is plain


def test_listing_needs_a_thread() -> None:
    with MemoryClient("http://127.0.0.1:9", "key.secret") as client, pytest.raises(ValueError, match="thread_id is required"):
        list(ServiceCheckpointSaver(client).list(None))


def test_writes_sent_before_their_checkpoint_is_stored_wait_for_its_put(memory: MemoryClient) -> None:
    """LangGraph's background executor may save a task's writes before the checkpoint they belong to."""
    saver = ServiceCheckpointSaver(memory)
    checkpoint = {
        "v": 4,
        "id": str(uuid.uuid4()),
        "ts": "2026-05-01T10:00:00+00:00",
        "channel_values": {},
        "channel_versions": {},
        "versions_seen": {},
        "updated_channels": None,
    }
    config = {"configurable": {"thread_id": "early-writes", "checkpoint_ns": "", "checkpoint_id": checkpoint["id"]}}
    failures: list[BaseException] = []

    def write() -> None:
        try:
            saver.put_writes(config, [("drafts", ["first"])], task_id="task-1")
        except BaseException as error:  # reported by the assertion below
            failures.append(error)

    writer = threading.Thread(target=write)
    writer.start()
    # The service has refused the writes (no such conversation yet): they now wait for the put.
    wait_until(lambda: ("early-writes", "", checkpoint["id"]) in saver._stored, message="the writes to wait for their checkpoint")
    saver.put({"configurable": {"thread_id": "early-writes", "checkpoint_ns": ""}}, checkpoint, {"step": -1}, {})
    writer.join(timeout=60)
    assert failures == []
    assert saver.get_tuple(config).pending_writes == [("task-1", "drafts", ["first"])]

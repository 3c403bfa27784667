"""ServiceStore against the live service, side by side with LangGraph's own InMemoryStore.

LangGraph ships no conformance suite for stores (only for checkpointers), so the behaviour suite
here runs every case on both stores and asserts the same answers: put, get, delete and overwrite,
namespaces, search without a query (its order, limit and offset), every filter operator, batch
order, and the async forms. With a query the two rank differently (the service by its hybrid
ranking, InMemoryStore here by word-hash embeddings), so those cases assert what both promise: the
item that answers first, scores given and descending. TTL is the service's alone (InMemoryStore
does not support it); its clock cannot be moved from here, so expiry is reached by moving an
item's ``expires_at`` in PostgreSQL, never by sleeping.
"""

import asyncio
import math
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any, TypedDict

import pytest
from django.utils import timezone
from langchain.agents import create_agent
from langchain.tools import ToolRuntime
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.config import get_store
from langgraph.graph import END, START, StateGraph
from langgraph.store.base import BaseStore, GetOp, InvalidNamespaceError, ListNamespacesOp, PutOp, SearchOp
from langgraph.store.memory import InMemoryStore

from memory_client import MemoryServiceError
from memory_client.store import ServiceStore
from store.models import StoreItem
from tenants import services as tenant_services
from tests.client.conftest import LiveService, keys
from tests.factories import extracted_memories
from tests.search.fakes import DIMENSIONS, HashedWordsEmbeddings

# Committed rows: the live service must see the tenant and key that the ``store`` fixture asks for late.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["in_memory", "service"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    """Each case runs on InMemoryStore (word-hash embeddings over the ``text`` field) and on the
    service, searched by the same field."""
    if request.param == "in_memory":
        yield InMemoryStore(index={"dims": DIMENSIONS, "embed": HashedWordsEmbeddings(), "fields": ["text"]})
        return
    service: LiveService = request.getfixturevalue("service")
    client = service.client()
    yield ServiceStore(client, index={"fields": ["text"]})
    client.close()


# --- The same answers from both stores ---------------------------------------------------------------


def test_put_get_overwrite_and_delete(store: BaseStore) -> None:
    store.put(("users", "42"), "prefs", {"theme": "dark"})
    first = store.get(("users", "42"), "prefs")
    store.put(("users", "42"), "prefs", {"theme": "light", "size": 3})
    second = store.get(("users", "42"), "prefs")
    store.delete(("users", "42"), "prefs")
    store.delete(("users", "42"), "never-there")

    assert (first.namespace, first.key, first.value) == (("users", "42"), "prefs", {"theme": "dark"})
    assert second.value == {"theme": "light", "size": 3}
    assert second.updated_at >= first.updated_at
    assert first.created_at.tzinfo is not None
    assert store.get(("users", "42"), "prefs") is None
    assert store.get(("users", "43"), "prefs") is None


NAMESPACES = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("a-b",),
    ("Z",),
    ("é",),
]


def test_namespaces_are_listed_alike(store: BaseStore) -> None:
    for namespace in NAMESPACES:
        store.put(namespace, "k", {"n": 1})

    assert store.list_namespaces() == sorted(NAMESPACES)
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a",), max_depth=1) == [("a",)]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("d", "*")) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",), limit=1, offset=1) == [("a", "c", "f")]
    assert store.list_namespaces(limit=3, offset=2) == sorted(NAMESPACES)[2:5]


def test_a_search_without_query_lists_items_in_the_same_order_with_limit_and_offset(store: BaseStore) -> None:
    store.put(("docs", "x"), "1", {"n": 1})
    store.put(("docs", "y"), "1", {"n": 2})
    store.put(("docs", "x"), "2", {"n": 3})
    store.put(("docs", "x"), "1", {"n": 4})  # an overwrite keeps its place
    store.put(("docs", "y", "deep"), "1", {"n": 5})
    store.put(("other",), "1", {"n": 6})

    every = store.search(("docs",))
    page = store.search(("docs",), limit=2, offset=1)

    assert [(item.namespace, item.key, item.value["n"]) for item in every] == [
        (("docs", "x"), "1", 4),
        (("docs", "x"), "2", 3),
        (("docs", "y"), "1", 2),
        (("docs", "y", "deep"), "1", 5),
    ]
    assert all(item.score is None for item in every)
    assert [(item.namespace, item.key) for item in page] == [(("docs", "x"), "2"), (("docs", "y"), "1")]
    assert keys(store.search(("docs", "y"))) == ["1", "1"]
    assert len(store.search(())) == 5
    assert store.search(("doc",)) == []


VALUES = [
    {"kind": "note", "score": 3, "tags": ["a", "b"], "meta": {"lang": "en", "pages": 2}},
    {"kind": "todo", "score": 7.5, "tags": ["a"], "meta": {"lang": "fr"}},
    {"kind": "note", "score": 0, "meta": {"lang": "en"}},
    {"kind": None, "score": -1},
]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"kind": "note"}, ["0", "2"]),
        ({"kind": {"$eq": "todo"}}, ["1"]),
        ({"kind": {"$ne": "note"}}, ["1", "3"]),
        ({"kind": None}, ["3"]),
        ({"score": {"$gt": 3}}, ["1"]),
        ({"score": {"$gte": 3}}, ["0", "1"]),
        ({"score": {"$lt": 3}}, ["2", "3"]),
        ({"score": {"$lte": 0}}, ["2", "3"]),
        ({"score": {"$gt": -1, "$lt": 7}}, ["0", "2"]),
        ({"tags": ["a"]}, ["1"]),
        ({"meta": {"lang": "en"}}, ["0", "2"]),
        ({"kind": "note", "score": {"$ne": 0}}, ["0"]),
    ],
    ids=str,
)
def test_filters_keep_the_same_items(store: BaseStore, condition: dict[str, Any], expected: list[str]) -> None:
    for index, value in enumerate(VALUES):
        store.put(("f",), str(index), value)
    assert keys(store.search(("f",), filter=condition)) == expected


def test_a_batch_answers_each_operation_in_order(store: BaseStore) -> None:
    store.put(("b",), "old", {"text": "kept"})

    results = store.batch(
        [
            GetOp(("b",), "old"),
            PutOp(("b",), "new", {"text": "added"}),
            SearchOp(("b",), limit=1),
            ListNamespacesOp(),
            GetOp(("b",), "missing"),
            PutOp(("b",), "old", None),
        ]
    )

    assert results[0].value == {"text": "kept"}
    assert results[1] is None
    assert keys(results[2]) == ["old"]
    assert results[3] == [("b",)]
    assert results[4:] == [None, None]
    assert store.get(("b",), "old") is None
    assert store.get(("b",), "new").value == {"text": "added"}


def test_the_async_forms_answer_as_the_sync_ones(store: BaseStore) -> None:
    async def scenario() -> tuple[Any, ...]:
        await store.aput(("async", "u1"), "a", {"text": "first", "n": 1})
        await store.aput(("async", "u2"), "b", {"text": "second", "n": 2})
        item = await store.aget(("async", "u1"), "a")
        found = await store.asearch(("async",), filter={"n": {"$gte": 2}})
        listed = await store.alist_namespaces(prefix=("async",))
        await store.adelete(("async", "u1"), "a")
        gone = await store.aget(("async", "u1"), "a")
        batched = await store.abatch([GetOp(("async", "u2"), "b"), ListNamespacesOp(max_depth=1)])
        return item.value, keys(found), listed, gone, batched[0].value, batched[1]

    assert asyncio.run(scenario()) == (
        {"text": "first", "n": 1},
        ["b"],
        [("async", "u1"), ("async", "u2")],
        None,
        {"text": "second", "n": 2},
        [("async",)],
    )


def test_a_query_ranks_the_item_that_answers_it_first_with_descending_scores(store: BaseStore) -> None:
    memories = {
        "food": "favourite food is ramen with extra garlic",
        "job": "works as a civil engineer in Lisbon",
        "dog": "has a dog named Pixel who loves the beach",
        "music": "plays jazz piano on weekends",
    }
    for key, text in memories.items():
        store.put(("memories", "u1"), key, {"text": text})
    store.put(("memories", "u1"), "hidden", {"text": "a dog named Pixel in secret"}, index=False)

    for query, answer in (("dog named Pixel", "dog"), ("civil engineer Lisbon", "job"), ("jazz piano", "music")):
        found = store.search(("memories",), query=query, limit=4)
        scores = [item.score for item in found]
        assert found[0].key == answer, (query, keys(found))
        assert all(score is not None for score in scores)
        assert scores == sorted(scores, reverse=True)
        assert "hidden" not in keys(found)  # not indexed: never ranked above the indexed items


def test_namespace_labels_are_checked_before_anything_is_sent(store: BaseStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(("notes", "v1.2"), "a", {"n": 1})
    with pytest.raises(InvalidNamespaceError):
        store.put(("notes", ""), "a", {"n": 1})
    assert store.list_namespaces() == []


# --- TTL: the service's ----------------------------------------------------------------------------


def expire_now(tenant: Any, key: str) -> None:
    StoreItem.objects.for_tenant(tenant).filter(key=key).update(expires_at=timezone.now() - timedelta(seconds=1))


def expiry(tenant: Any, key: str) -> Any:
    return StoreItem.objects.for_tenant(tenant).get(key=key).expires_at


def test_in_memory_store_has_no_ttl_and_the_service_store_has() -> None:
    assert InMemoryStore.supports_ttl is False
    assert ServiceStore.supports_ttl is True
    with pytest.raises(NotImplementedError):
        InMemoryStore().put(("t",), "a", {"n": 1}, ttl=1)


def test_an_expired_item_is_never_returned(service_store: ServiceStore, tenant: Any) -> None:
    service_store.put(("t",), "short", {"n": 1}, ttl=5)
    service_store.put(("t",), "forever", {"n": 2})
    assert expiry(tenant, "forever") is None
    before = timezone.now()
    assert timedelta(minutes=4) < expiry(tenant, "short") - before <= timedelta(minutes=5)

    expire_now(tenant, "short")

    assert service_store.get(("t",), "short") is None
    assert keys(service_store.search(("t",))) == ["forever"]
    service_store.put(("gone",), "a", {"n": 1}, ttl=1)
    expire_now(tenant, "a")
    assert service_store.list_namespaces() == [("t",)]


def test_a_read_starts_an_items_time_again_unless_asked_not_to(service_store: ServiceStore, tenant: Any) -> None:
    service_store.put(("t",), "a", {"n": 1}, ttl=60)
    StoreItem.objects.for_tenant(tenant).filter(key="a").update(expires_at=timezone.now() + timedelta(minutes=1))

    service_store.get(("t",), "a", refresh_ttl=False)
    service_store.search(("t",), refresh_ttl=False)
    not_refreshed = expiry(tenant, "a") - timezone.now()
    service_store.search(("t",))
    refreshed_by_search = expiry(tenant, "a") - timezone.now()
    StoreItem.objects.for_tenant(tenant).filter(key="a").update(expires_at=timezone.now() + timedelta(minutes=1))
    service_store.get(("t",), "a")
    refreshed_by_get = expiry(tenant, "a") - timezone.now()

    assert not_refreshed < timedelta(minutes=1)
    assert refreshed_by_search > timedelta(minutes=59)
    assert refreshed_by_get > timedelta(minutes=59)


def test_the_stores_ttl_config_gives_every_put_its_default_and_read_refresh(service: LiveService, tenant: Any) -> None:
    with service.client() as client:
        store = ServiceStore(client, ttl={"default_ttl": 30, "refresh_on_read": False})
        store.put(("t",), "a", {"n": 1})
        StoreItem.objects.for_tenant(tenant).filter(key="a").update(expires_at=timezone.now() + timedelta(minutes=1))
        store.get(("t",), "a")

        assert StoreItem.objects.for_tenant(tenant).get(key="a").ttl_minutes == 30
        assert expiry(tenant, "a") - timezone.now() < timedelta(minutes=1)


# --- Refusals, limits and tenants ------------------------------------------------------------------------


def test_the_service_refuses_what_it_cannot_store_naming_it_and_writes_nothing(service: LiveService, tenant: Any) -> None:
    with service.client() as client:
        store = ServiceStore(client)
        with pytest.raises(MemoryServiceError) as not_an_object:
            store.batch([PutOp(("notes",), "ok", {"n": 1}), PutOp(("notes",), "a", ["a", "list"])])  # type: ignore[arg-type]
        with pytest.raises(MemoryServiceError) as dotted:
            client.store_batch([{"op": "put", "namespace": ["notes", "v1.2"], "key": "a", "value": {"n": 1}}])
        with pytest.raises(MemoryServiceError) as empty_label:
            client.store_batch([{"op": "put", "namespace": ["notes", ""], "key": "a", "value": {"n": 1}}])
        with pytest.raises(MemoryServiceError) as oversize:
            store.put(("notes",), "big", {"text": "x" * 300_000})

    assert (not_an_object.value.status, not_an_object.value.code) == (400, "validation_error")
    assert not_an_object.value.details["field"] == "operations[1].value"
    assert dotted.value.details["field"] == "operations[0].namespace[1]"
    assert "period" in dotted.value.message
    assert empty_label.value.details["field"] == "operations[0].namespace[1]"
    assert (oversize.value.status, oversize.value.code) == (400, "limit_exceeded")
    assert "MEMORY_MAX_STORE_VALUE_BYTES" in oversize.value.message
    assert not StoreItem.objects.for_tenant(tenant).exists()


def test_another_tenants_store_is_never_visible(service: LiveService, other_tenant: Any) -> None:
    _, other_key = tenant_services.api_key_create(tenant=other_tenant, name="other")
    with service.client() as client, service.client(api_key=other_key) as other_client:
        acme, globex = ServiceStore(client), ServiceStore(other_client)
        globex.put(("users", "1"), "prefs", {"text": "globex pineapple"})
        globex.put(("globex-only",), "k", {"n": 1})
        acme.put(("users", "1"), "prefs", {"text": "acme banana"})

        assert acme.get(("users", "1"), "prefs").value == {"text": "acme banana"}
        assert acme.get(("globex-only",), "k") is None
        assert [item.value for item in acme.search((), query="pineapple")] == [{"text": "acme banana"}]
        assert acme.list_namespaces() == [("users", "1")]
        acme.delete(("globex-only",), "k")
        assert globex.get(("globex-only",), "k").value == {"n": 1}
        assert globex.get(("users", "1"), "prefs").value == {"text": "globex pineapple"}


def test_a_batch_larger_than_one_request_is_sent_in_order(service_store: ServiceStore) -> None:
    puts = [PutOp(("many",), f"{index:03}", {"n": index}) for index in range(150)]
    gets = [GetOp(("many",), f"{index:03}") for index in range(0, 150, 30)]

    results = service_store.batch([*puts, *gets])

    assert results[:150] == [None] * 150
    assert [item.value["n"] for item in results[150:]] == [0, 30, 60, 90, 120]
    assert len(service_store.search(("many",), limit=500)) == 150


def test_a_failing_part_of_a_split_batch_is_named_by_its_index_in_the_batch_after_the_parts_applied(
    service_store: ServiceStore, tenant: Any
) -> None:
    puts = [PutOp(("split",), f"{index:03}", {"n": index}) for index in range(150)]
    puts[120] = PutOp(("split",), "120", ["not", "an", "object"])  # type: ignore[arg-type]

    with pytest.raises(MemoryServiceError) as raised:
        service_store.batch(puts)

    assert (raised.value.status, raised.value.code) == (400, "validation_error")
    assert raised.value.details["field"] == "operations[120].value"
    assert raised.value.details["applied"] == 100
    assert raised.value.message.startswith("operations[120].value")
    stored = StoreItem.objects.for_tenant(tenant).filter(namespace=["split"]).values_list("key", flat=True)
    assert sorted(stored) == [f"{index:03}" for index in range(100)]


def test_a_batch_within_one_request_is_applied_whole_or_not_at_all(service_store: ServiceStore, tenant: Any) -> None:
    puts = [PutOp(("whole",), f"{index:03}", {"n": index}) for index in range(100)]
    puts[99] = PutOp(("whole",), "099", ["not", "an", "object"])  # type: ignore[arg-type]

    with pytest.raises(MemoryServiceError) as raised:
        asyncio.run(service_store.abatch(puts))

    assert raised.value.details["field"] == "operations[99].value"
    assert raised.value.details["applied"] == 0
    assert not StoreItem.objects.for_tenant(tenant).filter(namespace=["whole"]).exists()


def test_floats_come_back_as_floats_whatever_their_size_and_minus_zero_as_zero(service_store: ServiceStore) -> None:
    sent = {"big": 1e16, "bigger": -2.5e17, "whole": 3.0, "below": 1e15 + 0.5, "small": 1e-7, "negative_zero": -0.0, "count": 7}

    service_store.put(("numbers",), "n", sent)
    value = service_store.get(("numbers",), "n").value
    found = service_store.search(("numbers",), filter={"big": 1e16, "bigger": {"$lt": -1e17}})

    assert value == sent
    assert {name: type(number) for name, number in value.items()} == {name: type(number) for name, number in sent.items()}
    assert math.copysign(1.0, value["negative_zero"]) == 1.0  # numeric has no negative zero
    assert [item.value for item in found] == [value]


# --- An agent and a graph remembering through the store ------------------------------------------------


class ToolCallingFakeModel(GenericFakeChatModel):
    """langchain-core's scripted chat model, which an agent may bind tools to (it ignores them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ToolCallingFakeModel":
        return self


def remember(fact: str, runtime: ToolRuntime) -> str:
    """Remember a fact about the user."""
    runtime.store.put(("memories", "user-1"), str(uuid.uuid4()), {"text": fact})
    return "Remembered."


def recall(query: str, runtime: ToolRuntime) -> str:
    """Recall what is known about the user."""
    return "\n".join(item.value["text"] for item in runtime.store.search(("memories", "user-1"), query=query, limit=3))


def tool_call(name: str, **arguments: Any) -> AIMessage:
    return AIMessage(content="", tool_calls=[{"name": name, "args": arguments, "id": f"call-{uuid.uuid4().hex[:8]}"}])


def test_an_agent_remembers_in_one_run_what_it_recalls_in_the_next_with_a_new_store(service: LiveService) -> None:
    first_model = ToolCallingFakeModel(
        messages=iter([tool_call("remember", fact="The user's sister is called Ingrid."), AIMessage(content="Noted.")])
    )
    second_model = ToolCallingFakeModel(
        messages=iter([tool_call("recall", query="sister name"), AIMessage(content="Your sister is Ingrid.")])
    )

    with service.client() as client:
        agent = create_agent(model=first_model, tools=[remember, recall], store=ServiceStore(client))
        agent.invoke({"messages": [HumanMessage("My sister is called Ingrid.")]})
    with service.client() as client:
        agent = create_agent(model=second_model, tools=[remember, recall], store=ServiceStore(client))
        answer = agent.invoke({"messages": [HumanMessage("What is my sister's name?")]})

    recalled = [message for message in answer["messages"] if message.type == "tool"]
    assert [message.content for message in recalled] == ["The user's sister is called Ingrid."]


def test_a_graph_node_reads_and_writes_the_store_it_was_compiled_with(service: LiveService) -> None:
    class Visit(TypedDict, total=False):
        user: str
        visits: int

    def count_visit(state: Visit) -> Visit:
        store = get_store()
        found = store.get(("visits",), state["user"])
        visits = (found.value["count"] if found else 0) + 1
        store.put(("visits",), state["user"], {"count": visits})
        return {"visits": visits}

    builder = StateGraph(Visit)
    builder.add_node("count_visit", count_visit)
    builder.add_edge(START, "count_visit")
    builder.add_edge("count_visit", END)

    runs = []
    for _ in range(3):
        with service.client() as client:
            runs.append(builder.compile(store=ServiceStore(client)).invoke({"user": "ada"})["visits"])

    assert runs == [1, 2, 3]


# --- The memories the service extracted, read-only --------------------------------------------------------


def recall_extracted(query: str, runtime: ToolRuntime) -> str:
    """Recall what the service learnt about the user from their conversations."""
    found = runtime.store.search(("extracted_memories", "user-1"), query=query, limit=3)
    return "\n".join(item.value["text"] for item in found)


def test_an_agent_recalls_the_memories_the_service_extracted_and_the_store_cannot_overwrite_them(
    service: LiveService, tenant: Any
) -> None:
    sister, _ = extracted_memories(
        tenant,
        {"op": "add", "kind": "relation", "subject": "Ingrid", "text": "Ingrid is the user's sister."},
        {"op": "add", "kind": "preference", "subject": "User", "text": "The user prefers window seats."},
        user_id="user-1",
    )
    namespace = ("extracted_memories", "user-1")
    model = ToolCallingFakeModel(
        messages=iter([tool_call("recall_extracted", query="sister name"), AIMessage(content="Your sister is Ingrid.")])
    )

    with service.client() as client:
        store = ServiceStore(client)
        answer = create_agent(model=model, tools=[recall_extracted], store=store).invoke(
            {"messages": [HumanMessage("What is my sister's name?")]}
        )
        item = store.get(namespace, str(sister.memory_id))
        relations = asyncio.run(store.asearch(namespace, filter={"kind": "relation"}))
        with pytest.raises(MemoryServiceError) as refused:
            store.put(namespace, str(sister.memory_id), {"text": "Ingrid is the user's cousin."})

    recalled = [message.content for message in answer["messages"] if message.type == "tool"]
    assert recalled[0].split("\n")[0] == "Ingrid is the user's sister."
    assert (item.namespace, item.key, item.value["kind"]) == (namespace, str(sister.memory_id), "relation")
    assert keys(relations) == [str(sister.memory_id)]
    assert (refused.value.status, refused.value.details["field"]) == (400, "operations[0].namespace")

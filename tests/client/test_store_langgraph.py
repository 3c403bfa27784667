"""LangGraph's own store tests, ported to run on InMemoryStore and on ServiceStore alike.

The cases come from the store tests of the langgraph repository (``libs/checkpoint/tests``:
``test_store.py``, ``test_store_namespace_validation.py``, ``test_inmemory_store_dotted_filters.py``,
``test_store_ttl.py``), rewritten for this repository: each case runs on LangGraph's
``InMemoryStore`` and on ``ServiceStore`` against the live service, and asserts the same answers.

Where upstream asserts scores of its character embeddings, the service ranks with its own model,
so the cases assert what both stores promise instead: the item that answers the query comes first,
what is filtered out never appears, and pagination neither repeats nor loses items. Cases about
``AsyncBatchedBaseStore``'s request merging test LangGraph's own class, not a store, and are not
here. TTL and dotted filter fields on nested objects are the service's (the installed
``InMemoryStore`` has no TTL and reads a dotted filter field as one top-level key), so those run on
the service alone, against what upstream expects.
"""

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.utils import timezone
from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from memory_client.store import ServiceStore
from store.models import StoreItem
from tests.client.conftest import LiveService, keys
from tests.search.fakes import DIMENSIONS, HashedWordsEmbeddings

# Committed rows: the live service must see the tenant and key that the ``store`` fixture asks for late.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=["in_memory", "service"])
def store(request: pytest.FixtureRequest) -> Iterator[BaseStore]:
    """Each case runs on InMemoryStore (word-hash embeddings over the whole value) and on the service."""
    if request.param == "in_memory":
        yield InMemoryStore(index={"dims": DIMENSIONS, "embed": HashedWordsEmbeddings()})
        return
    service: LiveService = request.getfixturevalue("service")
    client = service.client()
    yield ServiceStore(client)
    client.close()


def put_all(store: BaseStore, namespaces: list[tuple[str, ...]]) -> None:
    for position, namespace in enumerate(namespaces):
        store.put(namespace, f"id_{position}", {"data": f"value_{position:02d}"})


# --- Listing namespaces (test_store.py: test_list_namespaces_*) -----------------------------------------

LISTED = [
    ("a", "b", "c"),
    ("a", "b", "d", "e"),
    ("a", "b", "d", "i"),
    ("a", "b", "f"),
    ("a", "c", "f"),
    ("b", "a", "f"),
    ("users", "123"),
    ("users", "456", "settings"),
    ("admin", "users", "789"),
]


def test_namespaces_are_listed_by_prefix_suffix_depth_and_page(store: BaseStore) -> None:
    put_all(store, LISTED)

    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [("a", "b", "c"), ("a", "b", "d"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [("a", "b", "c"), ("a", "b", "d", "e")]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [("a", "b", "d", "i"), ("a", "b", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [("a", "b", "f"), ("a", "c", "f"), ("b", "a", "f")]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("a", "b", "c", "d", "e")) == []  # longer than every namespace under it


def test_namespaces_are_listed_with_wildcards(store: BaseStore) -> None:
    put_all(
        store,
        [
            ("users", "123"),
            ("users", "456"),
            ("users", "789", "settings"),
            ("admin", "users", "789"),
            ("guests", "123"),
            ("guests", "456", "preferences"),
        ],
    )

    assert store.list_namespaces(prefix=("users", "*")) == [("users", "123"), ("users", "456"), ("users", "789", "settings")]
    assert store.list_namespaces(suffix=("*", "preferences")) == [("guests", "456", "preferences")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []

    store.put(("admin", "users", "settings", "789"), "foo", {"data": "some_val"})

    assert store.list_namespaces(prefix=("*", "users"), suffix=("settings", "*")) == [("admin", "users", "settings", "789")]


def test_namespaces_are_paged_in_order(store: BaseStore) -> None:
    for position in range(20):
        store.put(("namespace", f"sub_{position:02d}"), f"id_{position:02d}", {"data": f"value_{position:02d}"})

    assert store.list_namespaces(prefix=("namespace",), limit=5) == [("namespace", f"sub_{i:02d}") for i in range(5)]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5, 10)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=15) == [
        ("namespace", f"sub_{i:02d}") for i in range(15, 20)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=20) == []
    assert store.list_namespaces(prefix=("namespace",), limit=0) == []


def test_namespaces_are_cut_to_the_depth_asked_and_deduplicated(store: BaseStore) -> None:
    put_all(store, [("a", "b", "c", "d"), ("a", "b", "c", "e"), ("a", "b", "f"), ("a", "g"), ("h", "i", "j", "k")])

    assert store.list_namespaces(max_depth=2) == [("a", "b"), ("a", "g"), ("h", "i")]
    assert store.list_namespaces(max_depth=1) == [("a",), ("h",)]
    assert store.list_namespaces(max_depth=10) == store.list_namespaces()


def test_every_namespace_is_listed_without_conditions_and_none_in_an_empty_store(store: BaseStore) -> None:
    assert store.list_namespaces() == []

    put_all(store, [("a", "b"), ("c", "d"), ("e", "f", "g")])

    assert store.list_namespaces() == [("a", "b"), ("c", "d"), ("e", "f", "g")]


def test_a_batch_lists_namespaces_with_several_match_conditions(store: BaseStore) -> None:
    put_all(store, LISTED)

    [listed] = store.batch(
        [
            ListNamespacesOp(
                match_conditions=(
                    MatchCondition(match_type="prefix", path=("a",)),
                    MatchCondition(match_type="suffix", path=("f",)),
                    MatchCondition(match_type="prefix", path=("*", "b")),
                ),
                limit=10,
            )
        ]
    )

    assert listed == [("a", "b", "f")]


# --- Namespace rules (test_store.py: test_cannot_put_empty_namespace; test_store_namespace_validation.py) --

DOC = {"foo": "bar"}
INVALID = [("foo.bar",), ("foo", ""), (123,), ("a", "nul\x00byte")]


@pytest.mark.parametrize("namespace", [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")], ids=str)
def test_a_put_refuses_an_invalid_namespace_sync_and_async(store: BaseStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "foo", DOC)
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(store.aput(namespace, "foo", DOC))
    assert store.list_namespaces() == []


def test_langgraph_is_a_label_like_any_other_below_the_root(store: BaseStore) -> None:
    namespace = ("foo", "langgraph", "foo")

    async def scenario() -> None:
        await store.aput(namespace, "bar", DOC)
        assert (await store.aget(namespace, "bar")).value == DOC
        assert (await store.asearch(namespace))[0].value == DOC
        await store.adelete(namespace, "bar")
        assert await store.aget(namespace, "bar") is None

    asyncio.run(scenario())
    store.put(namespace, "bar", DOC)
    assert store.get(namespace, "bar").value == DOC
    assert store.search(namespace)[0].value == DOC
    store.delete(namespace, "bar")
    assert store.get(namespace, "bar") is None


def test_a_batch_may_write_under_the_langgraph_root_as_langgraph_itself_does(store: BaseStore) -> None:
    store.batch([PutOp(("langgraph", "foo"), "bar", DOC)])
    assert store.get(("langgraph", "foo"), "bar").value == DOC
    assert store.search(("langgraph", "foo"))[0].value == DOC
    store.delete(("langgraph", "foo"), "bar")
    assert store.get(("langgraph", "foo"), "bar") is None

    asyncio.run(store.abatch([PutOp(("langgraph", "foo"), "bar", DOC)]))
    assert asyncio.run(store.aget(("langgraph", "foo"), "bar")).value == DOC


class Recorder:
    """Records the batches a store's class is asked to run, sync and async (InMemoryStore has slots:
    its methods are wrapped on the class)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, store: BaseStore) -> None:
        self.batches: list[list[Any]] = []
        cls = type(store)
        batch, abatch = cls.batch, cls.abatch
        recorder = self

        def recorded(self: BaseStore, ops: Any) -> Any:
            ops = list(ops)
            recorder.batches.append(ops)
            return batch(self, ops)

        async def arecorded(self: BaseStore, ops: Any) -> Any:
            ops = list(ops)
            recorder.batches.append(ops)
            return await abatch(self, ops)

        monkeypatch.setattr(cls, "batch", recorded)
        monkeypatch.setattr(cls, "abatch", arecorded)


def call(store: BaseStore, method: str, namespace: tuple[Any, ...]) -> Any:
    if method in ("prefix", "suffix"):
        return store.list_namespaces(**{method: namespace})
    if method == "search":
        return store.search(namespace)
    return getattr(store, method)(namespace, "key")


async def acall(store: BaseStore, method: str, namespace: tuple[Any, ...]) -> Any:
    if method in ("prefix", "suffix"):
        return await store.alist_namespaces(**{method: namespace})
    if method == "search":
        return await store.asearch(namespace)
    return await getattr(store, f"a{method}")(namespace, "key")


@pytest.mark.parametrize("namespace", INVALID, ids=repr)
@pytest.mark.parametrize("method", ["get", "delete", "search", "prefix", "suffix"])
def test_an_invalid_label_is_refused_before_anything_is_run(
    store: BaseStore, monkeypatch: pytest.MonkeyPatch, method: str, namespace: tuple[Any, ...]
) -> None:
    recorder = Recorder(monkeypatch, store)

    with pytest.raises(InvalidNamespaceError):
        call(store, method, namespace)
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(acall(store, method, namespace))

    assert recorder.batches == []


def test_search_and_listing_take_labels_literally_and_an_empty_prefix_as_everything(store: BaseStore) -> None:
    store.put(("tenant", "a_%"), "1", {"n": 1})
    store.put(("tenant", "ab"), "2", {"n": 2})
    store.put(("tenant", "a%"), "3", {"n": 3})
    store.put(("tenant", "a_%", "deep"), "4", {"n": 4})

    assert keys(store.search(())) == ["1", "2", "3", "4"]
    assert keys(store.search(("tenant", "a_%"))) == ["1", "4"]
    assert store.list_namespaces(prefix=("tenant", "*"), suffix=("*",)) == [
        ("tenant", "a%"),
        ("tenant", "a_%"),
        ("tenant", "a_%", "deep"),
        ("tenant", "ab"),
    ]
    assert store.list_namespaces(prefix=("tenant", "a_%")) == [("tenant", "a_%"), ("tenant", "a_%", "deep")]


def test_a_batch_of_ops_with_an_invalid_label_runs_none_of_them(service: LiveService, tenant: Any) -> None:
    with service.client() as client:
        store = ServiceStore(client)
        sent: list[Any] = []
        client_batch = client.store_batch
        client.store_batch = lambda operations: sent.append(operations) or client_batch(operations)  # type: ignore[method-assign]

        listing = ListNamespacesOp(match_conditions=(MatchCondition(match_type="prefix", path=(1,)),))  # type: ignore[arg-type]
        for bad in (GetOp(("foo.bar",), "k"), SearchOp(("", "x")), listing):
            with pytest.raises(InvalidNamespaceError):
                store.batch([PutOp(("ok",), "k", {"n": 1}), bad])

    assert sent == []
    assert not StoreItem.objects.for_tenant(tenant).exists()


# --- Items: put, get, overwrite, delete ----------------------------------------------------------------------


def test_an_item_keeps_its_value_namespace_key_and_times(store: BaseStore) -> None:
    value = {
        "text": "é ✓",
        "n": 3,
        "x": 1.5,
        "flag": True,
        "none": None,
        "list": [1, "a", {"b": [2, 3]}],
        "nested": {"a": {"b": {}}},
    }
    before = datetime.now(UTC)
    store.put(("users", "42"), "prefs", value)
    store.put(("users", "42"), "", {"empty": "key"})

    item = store.get(("users", "42"), "prefs")

    assert isinstance(item, Item)
    assert (item.namespace, item.key, item.value) == (("users", "42"), "prefs", value)
    assert isinstance(item.created_at, datetime)
    assert isinstance(item.updated_at, datetime)
    assert item.created_at.tzinfo is not None
    assert before - timedelta(seconds=5) <= item.created_at <= item.updated_at <= datetime.now(UTC) + timedelta(seconds=5)
    assert store.get(("users", "42"), "").value == {"empty": "key"}
    assert store.get(("users", "42"), "missing") is None
    assert store.get(("users",), "prefs") is None
    assert store.get(("users", "42", "prefs"), "prefs") is None


def test_an_overwrite_changes_the_value_and_updated_at_and_a_delete_removes_the_item(store: BaseStore) -> None:
    store.put(("test",), "key", {"n": 1})
    first = store.get(("test",), "key")
    store.put(("test",), "key", {"n": 2, "added": ["x"]})
    second = store.get(("test",), "key")

    assert second.value == {"n": 2, "added": ["x"]}
    assert second.updated_at > first.updated_at
    assert second.created_at <= second.updated_at

    store.delete(("test",), "key")
    store.delete(("test",), "key")  # deleting what is not there is no error
    assert store.get(("test",), "key") is None
    assert store.search(("test",)) == []


def test_a_non_string_key_is_stored_as_its_text(store: BaseStore) -> None:
    store.put(("numbers",), 7, {"n": 7})  # type: ignore[arg-type]

    assert store.get(("numbers",), "7").key == "7"
    assert store.get(("numbers",), 7).value == {"n": 7}  # type: ignore[arg-type]


def test_a_batch_answers_in_order_and_later_operations_see_earlier_writes(store: BaseStore) -> None:
    store.put(("b",), "old", {"n": 0})

    results = store.batch(
        [
            PutOp(("b",), "new", {"n": 1}),
            GetOp(("b",), "old"),
            SearchOp(("b",), filter={"n": 0}),
            ListNamespacesOp(limit=5),
            GetOp(("b",), "missing"),
            PutOp(("b",), "old", None),
        ]
    )

    assert results[0] is None
    assert results[1].value == {"n": 0}
    assert keys(results[2]) == ["old"]
    assert all(isinstance(entry, SearchItem) for entry in results[2])
    assert results[3] == [("b",)]
    assert results[4:] == [None, None]
    assert store.get(("b",), "old") is None
    assert store.get(("b",), "new").value == {"n": 1}


def test_concurrent_async_calls_each_get_their_own_answer(store: BaseStore) -> None:
    async def scenario() -> tuple[Any, ...]:
        await asyncio.gather(
            store.aput(("test",), "same", {"value": "same"}),
            store.aput(("test",), "different", {"value": "different"}),
        )
        same, again, different = await asyncio.gather(
            store.aget(("test",), "same"), store.aget(("test",), "same"), store.aget(("test",), "different")
        )
        found = await asyncio.gather(
            store.asearch(("test",), filter={"value": "same"}), store.asearch(("test",), filter={"value": "same"})
        )
        return same.value, again.value, different.value, [keys(entry) for entry in found]

    assert asyncio.run(scenario()) == ({"value": "same"}, {"value": "same"}, {"value": "different"}, [["same"], ["same"]])


# --- Search without a query: order, pages, filters --------------------------------------------------------


def test_a_search_pages_through_the_items_in_the_same_order(store: BaseStore) -> None:
    for position in range(12):
        store.put(("paged", "even" if position % 2 == 0 else "odd"), f"doc{position:02d}", {"n": position})

    every = store.search(("paged",), limit=100)

    assert keys(every) == [f"doc{i:02d}" for i in range(0, 12, 2)] + [f"doc{i:02d}" for i in range(1, 12, 2)]
    assert keys(store.search(("paged",))) == keys(every)[:10]
    assert keys(store.search(("paged",), limit=4, offset=4)) == keys(every)[4:8]
    assert keys(store.search(("paged",), limit=5, offset=10)) == keys(every)[10:]
    assert store.search(("paged",), offset=12) == []
    assert store.search(("paged",), limit=0) == []
    assert all(item.score is None for item in every)


VALUES = {
    "doc1": {"text": "red apple", "color": "red", "score": 4.5, "meta": {"size": "s", "tags": ["fruit"]}},
    "doc2": {"text": "red car", "color": "red", "score": 3.0, "meta": {"size": "l"}},
    "doc3": {"text": "green apple", "color": "green", "score": 4.0, "meta": {"size": "s", "tags": ["fruit", "sour"]}},
    "doc4": {"text": "blue car", "color": "blue", "score": 3.5, "meta": {"size": "l", "tags": []}},
    "doc5": {"text": "no colour", "color": None, "score": 0},
}


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"color": "red"}, ["doc1", "doc2"]),
        ({"color": {"$eq": "green"}}, ["doc3"]),
        ({"color": {"$ne": "red"}}, ["doc3", "doc4", "doc5"]),
        ({"color": None}, ["doc5"]),
        ({"color": {"$ne": None}}, ["doc1", "doc2", "doc3", "doc4"]),
        ({"score": {"$gt": 3.2}}, ["doc1", "doc3", "doc4"]),
        ({"score": {"$gte": 4.0}, "color": "green"}, ["doc3"]),
        ({"score": {"$lt": 3.5}}, ["doc2", "doc5"]),
        ({"score": {"$lte": 3.5, "$gt": 0}}, ["doc2", "doc4"]),
        ({"score": 3}, ["doc2"]),  # 3 equals 3.0
        ({"meta": {"size": "s"}}, ["doc1", "doc3"]),
        ({"meta": {"tags": ["fruit"]}}, ["doc1"]),
        ({"meta": {"tags": []}}, ["doc4"]),
        ({"meta": {"size": {"$ne": "s"}}}, ["doc2", "doc4"]),
        ({"meta": {"size": "l", "tags": []}}, ["doc4"]),
        ({"meta": {"$eq": {"size": "l"}}}, ["doc2"]),  # $eq compares the whole object
        ({"missing": None}, ["doc1", "doc2", "doc3", "doc4", "doc5"]),
        ({"missing": "x"}, []),
        ({"text": "red"}, []),  # equality, never a substring
    ],
    ids=str,
)
def test_a_filter_keeps_the_same_items(store: BaseStore, condition: dict[str, Any], expected: list[str]) -> None:
    for key, value in VALUES.items():
        store.put(("test",), key, value)

    assert keys(store.search(("test",), filter=condition)) == expected
    assert keys(store.search(("test",), filter=condition, limit=1, offset=1)) == expected[1:2]


def test_a_field_named_with_a_dot_is_filtered_as_the_field_of_that_name(store: BaseStore) -> None:
    store.put(("docs",), "literal", {"version.major": 2, "name": "a"})
    store.put(("docs",), "other", {"version.major": 3, "name": "b"})

    assert keys(store.search(("docs",), filter={"version.major": 2})) == ["literal"]
    assert keys(store.search(("docs",), filter={"version.major": {"$gte": 2}})) == ["literal", "other"]


# --- Search with a query (test_store.py: test_vector_*) ----------------------------------------------------

DOCS = [
    ("doc1", {"text": "short text"}),
    ("doc2", {"text": "longer text document"}),
    ("doc3", {"text": "longest text document here"}),
    ("doc4", {"description": "text in description field"}),
    ("doc5", {"content": "text in content field"}),
    ("doc6", {"body": "text in body field"}),
]


def test_a_query_searches_every_item_by_its_whole_value(store: BaseStore) -> None:
    for key, value in DOCS:
        store.put(("test",), key, value)

    found = store.search(("test",), query="longer text document")
    found_async = asyncio.run(store.asearch(("test",), query="longer text document"))

    assert found[0].key == "doc2"
    assert {"doc2", "doc3"} <= set(keys(found))
    assert sorted(keys(found)) == [key for key, _ in DOCS]  # every item answers, ranked or not
    assert keys(found_async) == keys(found)


def test_an_overwritten_item_is_searched_by_its_new_value_and_an_unindexed_one_never_ranks(store: BaseStore) -> None:
    store.put(("test",), "doc1", {"text": "zany zebra Xerxes"})
    store.put(("test",), "doc2", {"text": "something about dogs"})
    store.put(("test",), "doc3", {"text": "text about birds"})
    assert store.search(("test",), query="zany zebra Xerxes")[0].key == "doc1"
    first_score = store.search(("test",), query="zany zebra Xerxes")[0].score

    store.put(("test",), "doc1", {"text": "new text about dogs"})

    after = {item.key: item.score for item in store.search(("test",), query="zany zebra Xerxes")}
    assert after.get("doc1") is None or after["doc1"] < first_score
    assert store.search(("test",), query="new text about dogs")[0].key == "doc1"

    store.put(("test",), "doc4", {"text": "new text about dogs"}, index=False)
    top = store.search(("test",), query="new text about dogs", limit=3)
    assert "doc4" not in keys(top)
    assert all(item.score is not None for item in top)
    assert [item.score for item in top] == sorted((item.score for item in top), reverse=True)
    assert store.get(("test",), "doc4").value == {"text": "new text about dogs"}  # stored, only not ranked


def test_a_query_ranks_only_the_items_that_pass_the_filter(store: BaseStore) -> None:
    for key, value in VALUES.items():
        if key != "doc5":
            store.put(("test",), key, value, index=["text"])

    apples = store.search(("test",), query="apple", filter={"color": "red"})
    cars = store.search(("test",), query="car", filter={"color": "red"})
    green = store.search(("test",), query="apple", filter={"score": {"$gte": 4.0}, "color": "green"})
    above = store.search(("test",), query="car", filter={"score": {"$gt": 3.2}})

    assert sorted(keys(apples)) == ["doc1", "doc2"]
    assert apples[0].key == "doc1"
    assert sorted(keys(cars)) == ["doc1", "doc2"]
    assert cars[0].key == "doc2"
    assert keys(green) == ["doc3"]
    assert sorted(keys(above)) == ["doc1", "doc3", "doc4"]
    assert above[0].key == "doc4"


def test_concurrent_queries_with_filters_answer_only_matching_items(store: BaseStore) -> None:
    colors = ["red", "blue", "green", "yellow", "purple"]
    things = ["apple", "car", "house", "book", "phone"]
    scores = [3.0, 3.5, 4.0, 4.5, 5.0]
    docs = {
        f"doc{i}": {"text": f"{colors[i % 5]} {things[i % 5]}", "color": colors[i % 5], "score": scores[i % 5], "index": i}
        for i in range(50)
    }
    searches: list[tuple[str, dict[str, Any]]] = [
        ("apple", {"color": "red"}),
        ("car", {"color": "blue"}),
        ("phone", {"score": {"$gt": 4.99}}),
        ("book", {"score": {"$lte": 3.5}}),
        ("apple", {"score": {"$gte": 3.0}, "color": "red"}),
        ("house", {"index": {"$gt": 25}}),
        ("phone", {"index": {"$lte": 10}}),
    ]

    async def scenario() -> list[list[SearchItem]]:
        await asyncio.gather(*(store.aput(("test",), key, value, index=["text"]) for key, value in docs.items()))
        await asyncio.gather(*(store.adelete(("test",), key) for key in docs))
        await asyncio.gather(*(store.aput(("test",), key, value, index=["text"]) for key, value in docs.items()))
        return await asyncio.gather(*(store.asearch(("test",), query=query, filter=condition) for query, condition in searches))

    answers = asyncio.run(scenario())

    for found, (query, condition) in zip(answers, searches, strict=True):
        expected = [key for key, value in docs.items() if _matches(value, condition)]
        assert found, (query, condition)
        assert set(keys(found)) <= set(expected)
        assert len(found) == min(10, len(expected))
        if any(query in docs[key]["text"] for key in expected):
            assert query in found[0].value["text"], (query, condition, keys(found))


def _matches(value: dict[str, Any], condition: dict[str, Any]) -> bool:
    compare = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__, "$lte": float.__le__}
    for name, expected in condition.items():
        if isinstance(expected, dict):
            if not all(compare[operator](float(value[name]), float(operand)) for operator, operand in expected.items()):
                return False
        elif value.get(name) != expected:
            return False
    return True


def test_a_query_pages_without_repeating_or_losing_items(store: BaseStore) -> None:
    for position in range(5):
        store.put(("test",), f"doc{position}", {"text": f"test document number {position}"})

    first = store.search(("test",), query="test", limit=2)
    second = store.search(("test",), query="test", limit=2, offset=2)
    third = store.search(("test",), query="test", limit=2, offset=4)
    every = store.search(("test",), query="test", limit=10)

    assert len(first) == len(second) == 2
    assert len(third) == 1
    assert sorted(keys(first + second + third)) == [f"doc{i}" for i in range(5)]
    assert len(every) == 5


@pytest.mark.parametrize("query", ["", None, "test " * 100, "test!@#$%^&*()", "   ", "&|!:*'()"], ids=repr)
def test_any_query_text_answers_the_item(store: BaseStore, query: str | None) -> None:
    store.put(("test",), "doc1", {"text": "test document"})

    found = store.search(("test",), query=query)
    found_async = asyncio.run(store.asearch(("test",), query=query))

    assert keys(found) == keys(found_async) == ["doc1"]


def test_the_fields_named_on_put_are_what_a_query_ranks(store: BaseStore) -> None:
    store.put(("test",), "title", {"title": "volcano eruption", "body": "quiet garden"}, index=["title"])
    store.put(("test",), "body", {"title": "quiet garden", "body": "volcano eruption"}, index=["title"])

    assert keys(store.search(("test",), query="volcano eruption", limit=1)) == ["title"]
    assert keys(store.search(("test",), query="quiet garden", limit=1)) == ["body"]


# --- The service's own: dotted filter fields and TTL (test_inmemory_store_dotted_filters.py, test_store_ttl.py) --


def test_a_dotted_filter_field_reaches_into_nested_objects(service_store: ServiceStore) -> None:
    service_store.put(("docs",), "hyphen", {"user": {"access-level": "nested"}})
    service_store.put(("docs",), "other", {"user": {"access-level": "top"}, "level": 2})
    service_store.put(("docs",), "deep", {"a": {"b": {"c": 5}}, "user": "flat"})

    assert keys(service_store.search(("docs",), filter={"user.access-level": "nested"})) == ["hyphen"]
    assert keys(service_store.search(("docs",), filter={"user.access-level": {"$ne": "nested"}})) == ["other", "deep"]
    assert keys(service_store.search(("docs",), filter={"a.b.c": {"$gte": 5}})) == ["deep"]
    assert keys(service_store.search(("docs",), filter={"a.b": {"c": 5}})) == ["deep"]
    assert keys(service_store.search(("docs",), filter={"user.access-level": None})) == ["deep"]

    service_store.put(("both",), "k", {"a.b": 1, "a": {"b": 2}})  # a field of that very name wins
    assert keys(service_store.search(("both",), filter={"a.b": 1})) == ["k"]
    assert service_store.search(("both",), filter={"a.b": 2}) == []


def expiry(tenant: Any, key: str) -> Any:
    return StoreItem.objects.for_tenant(tenant).get(key=key).expires_at


def test_a_ttl_may_be_a_timedelta_or_a_moment_and_becomes_minutes(service_store: ServiceStore, tenant: Any) -> None:
    service_store.put(("test",), "k1", {"a": 1}, ttl=timedelta(minutes=15))  # type: ignore[arg-type]
    asyncio.run(service_store.aput(("test",), "k2", {"a": 1}, ttl=datetime.now(UTC) + timedelta(minutes=60)))  # type: ignore[arg-type]
    service_store.put(("test",), "k3", {"a": 1}, ttl=datetime.now() + timedelta(minutes=30))  # type: ignore[arg-type]

    assert StoreItem.objects.for_tenant(tenant).get(key="k1").ttl_minutes == 15
    assert 59.9 <= StoreItem.objects.for_tenant(tenant).get(key="k2").ttl_minutes <= 60
    assert 29.9 <= StoreItem.objects.for_tenant(tenant).get(key="k3").ttl_minutes <= 30
    assert timedelta(minutes=14) < expiry(tenant, "k1") - timezone.now() <= timedelta(minutes=15)


def test_a_ttl_already_past_is_refused_before_anything_is_sent(service_store: ServiceStore, tenant: Any) -> None:
    with pytest.raises(ValueError, match="ttl"):
        service_store.put(("test",), "k", {"a": 1}, ttl=datetime.now(UTC) - timedelta(minutes=1))  # type: ignore[arg-type]
    assert not StoreItem.objects.for_tenant(tenant).exists()


def test_an_overwrite_without_ttl_makes_the_item_last_and_keeps_its_creation_time(
    service_store: ServiceStore, tenant: Any
) -> None:
    service_store.put(("test",), "k", {"a": 1}, ttl=5)
    first = service_store.get(("test",), "k")
    service_store.put(("test",), "k", {"a": 2})
    second = service_store.get(("test",), "k")

    assert expiry(tenant, "k") is None
    assert second.created_at == first.created_at
    assert second.updated_at > first.updated_at

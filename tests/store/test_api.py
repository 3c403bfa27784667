"""The store API as LangGraph's ``BaseStore`` meets it: a batch of operations answered in order,
in one transaction, each tenant seeing only its own items.

``api`` is acme's key, ``other_api`` globex's. Time is moved by replacing ``timezone.now``, never
by sleeping.
"""

import math
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from langgraph.store.memory import _compare_values

from store import tasks
from store.models import StoreItem
from tenants.managers import TenantScopeError

BATCH = "/api/v1/store/batch/"
ITEMS = "/api/v1/store/items/"
SEARCH = "/api/v1/store/search/"
NAMESPACES = "/api/v1/store/namespaces/"

pytestmark = pytest.mark.django_db


def batch(client: Any, *operations: dict[str, Any], status: int = 200) -> Any:
    answer = client.post(BATCH, {"operations": list(operations)}, format="json")
    assert answer.status_code == status, answer.content
    return answer.json()["results"] if status == 200 else answer.json()["error"]


def put(namespace: list[str], key: str, value: Any, **options: Any) -> dict[str, Any]:
    return {"op": "put", "namespace": namespace, "key": key, "value": value, **options}


def get(namespace: list[str], key: str, **options: Any) -> dict[str, Any]:
    return {"op": "get", "namespace": namespace, "key": key, **options}


def search(prefix: list[str], **options: Any) -> dict[str, Any]:
    return {"op": "search", "namespace_prefix": prefix, **options}


def keys(results: list[dict[str, Any]]) -> list[str]:
    return [item["key"] for item in results]


@pytest.fixture
def frozen_now(monkeypatch: pytest.MonkeyPatch) -> Any:
    """``timezone.now`` under the test's control: ``frozen_now.advance(minutes=...)``."""

    class Clock:
        now = timezone.now()

        def advance(self, **delta: float) -> None:
            self.now += timedelta(**delta)

    clock = Clock()
    monkeypatch.setattr(timezone, "now", lambda: clock.now)
    return clock


# --- Writes and reads --------------------------------------------------------------------------------


def test_a_put_is_read_back_and_an_overwrite_keeps_its_creation_time(api):
    batch(api, put(["users", "42"], "prefs", {"theme": "dark"}))
    (first,) = batch(api, get(["users", "42"], "prefs"))
    batch(api, put(["users", "42"], "prefs", {"theme": "light", "size": 3}))
    (second,) = batch(api, get(["users", "42"], "prefs"))

    assert first["value"] == {"theme": "dark"}
    assert first["namespace"] == ["users", "42"]
    assert second["value"] == {"theme": "light", "size": 3}
    assert second["created_at"] == first["created_at"]
    assert second["updated_at"] > first["updated_at"]
    assert batch(api, get(["users", "43"], "prefs"), get(["users"], "prefs")) == [None, None]


def test_operations_are_answered_in_order_and_a_later_one_sees_an_earlier_write(api):
    results = batch(
        api,
        get(["notes"], "a"),
        put(["notes"], "a", {"text": "first"}),
        get(["notes"], "a"),
        {"op": "delete", "namespace": ["notes"], "key": "a"},
        get(["notes"], "a"),
        {"op": "list_namespaces"},
    )

    assert results[0] is None
    assert results[1] is None
    assert results[2]["value"] == {"text": "first"}
    assert results[3:] == [None, None, []]


def test_deleting_a_missing_item_is_a_no_op_and_a_put_of_null_deletes(api):
    assert batch(api, {"op": "delete", "namespace": ["notes"], "key": "never"}) == [None]
    batch(api, put(["notes"], "a", {"n": 1}))
    batch(api, put(["notes"], "a", None))
    assert batch(api, get(["notes"], "a")) == [None]


def test_a_batch_with_one_refused_operation_writes_nothing(api, tenant):
    error = batch(api, put(["notes"], "a", {"n": 1}), put(["notes"], "b", ["not", "an", "object"]), status=400)

    assert error["code"] == "validation_error"
    assert error["details"]["field"] == "operations[1].value"
    assert not StoreItem.objects.for_tenant(tenant).exists()


@pytest.mark.parametrize(
    ("operation", "field", "words"),
    [
        (put(["notes"], "a", "a string"), "operations[0].value", "JSON object"),
        (put(["notes"], "a", 42), "operations[0].value", "JSON object"),
        (put(["notes", ""], "a", {"n": 1}), "operations[0].namespace[1]", "empty"),
        (put(["notes", "v1.2"], "a", {"n": 1}), "operations[0].namespace[1]", "period"),
        (put([], "a", {"n": 1}), "operations[0].namespace", "at least one label"),
        (put(["notes"], "a", {"bad": "nul\x00"}), "operations[0].value.bad", "NUL"),
        (put(["notes"], "a", {"n": 1}, ttl=-5), "operations[0].ttl", "positive"),
        (search(["notes"], filter={"n": {"$regex": "x"}}), "operations[0].filter.n.$regex", "unknown filter operator"),
        (search(["notes"], filter={"n": {"$gt": "3"}}), "operations[0].filter.n.$gt", "number"),
        ({"op": "upsert"}, "operations[0].op", "unknown operation"),
    ],
)
def test_a_refused_operation_answers_400_naming_its_field_and_nothing_is_written(api, tenant, operation, field, words):
    error = batch(api, operation, status=400)

    assert error["code"] == "validation_error"
    assert error["details"]["field"] == field
    assert words in error["message"]
    assert not StoreItem.objects.for_tenant(tenant).exists()


def test_an_oversize_value_is_refused_naming_the_setting(api, tenant, settings):
    settings.MEMORY_MAX_STORE_VALUE_BYTES = 100

    error = batch(api, put(["notes"], "a", {"text": "x" * 200}), status=400)

    assert error["code"] == "limit_exceeded"
    assert "MEMORY_MAX_STORE_VALUE_BYTES=100" in error["message"]
    assert error["details"] == {"field": "operations[0].value", "size": 211, "limit": 100}
    assert not StoreItem.objects.for_tenant(tenant).exists()


def test_a_batch_over_the_batch_limit_is_refused_naming_the_limit_for_programs_too(api, settings):
    settings.MEMORY_MAX_BATCH = 2
    error = batch(api, *[get(["n"], str(index)) for index in range(3)], status=400)
    assert "MEMORY_MAX_BATCH=2" in error["message"]
    assert error["code"] == "limit_exceeded"
    assert error["details"] == {"field": "operations", "size": 3, "limit": 2}


# Floats of 1e16 and more are written 1e+16, which jsonb alone would give back as ints.
NUMBERS = {
    "big": 1e16,
    "bigger": -2.5e17,
    "largest": 1.7976931348623157e308,
    "whole": 3.0,
    "below": 1e15 + 0.5,
    "small": 1e-7,
    "count": 7,
    "huge_count": 10**30,
    "text": "1e+16",
    "nested": [{"f": 1e20}, 2e16],
}


def types_of(value: Any) -> Any:
    """The value with each leaf replaced by its Python type."""
    if isinstance(value, dict):
        return {name: types_of(item) for name, item in value.items()}
    if isinstance(value, list):
        return [types_of(item) for item in value]
    return type(value)


def test_floats_of_1e16_and_more_are_read_back_as_floats(api):
    batch(api, put(["numbers"], "n", NUMBERS))
    plain_put = api.put(ITEMS, {"namespace": ["numbers"], "key": "plain", "value": NUMBERS}, format="json")
    assert plain_put.status_code == 200, plain_put.content

    (got, found) = batch(api, get(["numbers"], "n"), search(["numbers"], filter={"big": 1e16, "bigger": {"$lt": -1e17}}))
    plain = api.get(ITEMS, {"namespace": ["numbers"], "key": "plain"}).json()

    for value in (got["value"], *(item["value"] for item in found), plain["value"]):
        assert value == NUMBERS
        assert types_of(value) == types_of(NUMBERS)
    assert keys(found) == ["n", "plain"]


def test_minus_zero_is_read_back_as_zero_which_jsonb_cannot_tell_apart(api):
    batch(api, put(["numbers"], "zero", {"z": -0.0}))

    (got,) = batch(api, get(["numbers"], "zero"))

    assert math.copysign(1.0, got["value"]["z"]) == 1.0


# --- Namespaces ------------------------------------------------------------------------------------------


@pytest.fixture
def namespaced(api: Any) -> None:
    batch(
        api,
        put(["a", "b", "c"], "k", {"n": 1}),
        put(["a", "b", "d", "e"], "k", {"n": 1}),
        put(["a", "b", "d", "i"], "k", {"n": 1}),
        put(["a", "b", "f"], "k", {"n": 1}),
        put(["a", "c", "f"], "k", {"n": 1}),
        put(["a-b"], "k", {"n": 1}),
        put(["Z"], "k", {"n": 1}),
        put(["é"], "k", {"n": 1}),
    )


def namespaces(client: Any, **options: Any) -> list[list[str]]:
    (result,) = batch(client, {"op": "list_namespaces", **options})
    return result


def test_namespaces_are_listed_sorted_by_code_point_and_filtered_label_by_label(api, namespaced):
    assert namespaces(api) == [
        ["Z"],
        ["a", "b", "c"],
        ["a", "b", "d", "e"],
        ["a", "b", "d", "i"],
        ["a", "b", "f"],
        ["a", "c", "f"],
        ["a-b"],
        ["é"],
    ]
    assert namespaces(api, prefix=["a", "b"], max_depth=3) == [["a", "b", "c"], ["a", "b", "d"], ["a", "b", "f"]]
    assert namespaces(api, prefix=["a"], max_depth=1) == [["a"]]
    assert namespaces(api, suffix=["f"]) == [["a", "b", "f"], ["a", "c", "f"]]
    assert namespaces(api, prefix=["a", "*", "f"]) == [["a", "b", "f"], ["a", "c", "f"]]
    assert namespaces(api, suffix=["d", "*"]) == [["a", "b", "d", "e"], ["a", "b", "d", "i"]]
    assert namespaces(api, prefix=["a"], suffix=["f"], limit=1, offset=1) == [["a", "c", "f"]]


def test_a_search_prefix_matches_whole_labels(api, namespaced):
    (found,) = batch(api, search(["a", "b"]))
    assert [item["namespace"] for item in found] == [["a", "b", "c"], ["a", "b", "d", "e"], ["a", "b", "d", "i"], ["a", "b", "f"]]


# --- Search ------------------------------------------------------------------------------------------


def test_a_search_without_query_keeps_the_order_items_were_first_written_namespace_by_namespace(api):
    batch(api, put(["docs", "x"], "1", {"n": 1}), put(["docs", "y"], "1", {"n": 2}), put(["docs", "x"], "2", {"n": 3}))
    batch(api, put(["docs", "x"], "1", {"n": 4}))  # an overwrite keeps its place

    (found,) = batch(api, search(["docs"]))
    (page,) = batch(api, search(["docs"], limit=2, offset=1))

    assert [(item["namespace"][1], item["key"], item["value"]["n"]) for item in found] == [
        ("x", "1", 4),
        ("x", "2", 3),
        ("y", "1", 2),
    ]
    assert all(item["score"] is None for item in found)
    assert [(item["namespace"][1], item["key"]) for item in page] == [("x", "2"), ("y", "1")]


FILTER_VALUES = [
    {"kind": "note", "score": 3, "tags": ["a", "b"], "meta": {"lang": "en", "pages": 2}},
    {"kind": "todo", "score": 7.5, "tags": ["a"], "meta": {"lang": "fr"}},
    {"kind": "note", "score": "high", "meta": "none"},
    {"kind": None, "score": 0},
    {"score": -1},
]
FILTERS = [
    {"kind": "note"},
    {"kind": {"$eq": "note"}},
    {"kind": {"$ne": "note"}},
    {"kind": None},
    {"kind": {"$ne": None}},
    {"score": {"$gt": 3}},
    {"score": {"$gte": 3}},
    {"score": {"$lt": 3}},
    {"score": {"$lte": 0}},
    {"score": {"$gt": -5, "$lt": 5}},
    {"tags": ["a", "b"]},
    {"tags": ["a"]},
    {"meta": {"lang": "en"}},
    {"meta": {"lang": "fr", "pages": 2}},
    {"kind": "note", "score": 3},
]


@pytest.mark.parametrize("condition", FILTERS, ids=[str(condition) for condition in FILTERS])
def test_a_filter_keeps_the_items_langgraphs_in_memory_store_keeps(api, condition):
    batch(api, *[put(["f"], str(index), value) for index, value in enumerate(FILTER_VALUES)])

    (found,) = batch(api, search(["f"], filter=condition))

    def in_memory_keeps(value: dict[str, Any]) -> bool:
        try:
            return all(_compare_values(value.get(name), wanted) for name, wanted in condition.items())
        except (TypeError, ValueError):  # InMemoryStore fails on a non-number where this store does not match
            return False

    assert keys(found) == [str(index) for index, value in enumerate(FILTER_VALUES) if in_memory_keeps(value)]


DOTTED_VALUES = [
    {"user": {"access-level": "nested", "age": 40}},
    {"user": {"access-level": "top"}, "user.access-level": "nested"},
    {"user": "flat"},
    {"a": {"b": {"c": 5}}},
]


@pytest.mark.parametrize(
    ("condition", "expected"),
    [
        ({"user.access-level": "nested"}, ["0", "1"]),  # the path, or the field of that very name
        ({"user.access-level": "top"}, []),
        ({"user.access-level": None}, ["2", "3"]),
        ({"user.age": {"$gte": 40}}, ["0"]),
        ({"a.b.c": 5}, ["3"]),
        ({"a.b": {"c": {"$lt": 6}}}, ["3"]),
        ({"a.b.c.d": None}, ["0", "1", "2", "3"]),
    ],
    ids=str,
)
def test_a_dotted_filter_field_is_the_field_of_that_name_or_else_the_nested_path(api, condition, expected):
    batch(api, *[put(["d"], str(index), value) for index, value in enumerate(DOTTED_VALUES)])

    (found,) = batch(api, search(["d"], filter=condition))

    assert keys(found) == expected


def test_a_query_ranks_the_item_that_answers_it_first_with_descending_scores(api):
    batch(
        api,
        put(["memories", "u1"], "1", {"text": "The user's favourite food is ramen with extra garlic."}),
        put(["memories", "u1"], "2", {"text": "The user works as a civil engineer in Lisbon."}),
        put(["memories", "u1"], "3", {"text": "The user has a dog named Pixel who loves the beach."}),
        put(["memories", "u1"], "4", {"text": "secret pet name Pixel", "kind": "hidden"}, index=False),
        put(["memories", "u1"], "5", {"title": "Holidays", "text": "Spent August hiking in the Alps."}, index=["title"]),
    )

    (pets,) = batch(api, search(["memories"], query="What is the name of the user's dog?"))
    (job,) = batch(api, search(["memories", "u1"], query="job occupation engineer"))
    (holidays,) = batch(api, search(["memories"], query="holidays"))
    (hiking,) = batch(api, search(["memories"], query="hiking Alps", limit=2))

    assert pets[0]["key"] == "3"
    assert job[0]["key"] == "2"
    assert holidays[0]["key"] == "5"
    for found in (pets, job, holidays):
        scores = [item["score"] for item in found if item["score"] is not None]
        assert scores == sorted(scores, reverse=True)
        assert scores
        # the item that is not indexed is never ranked, only listed after the ranked ones
        assert [item["score"] for item in found if item["key"] == "4"] == [None]
    assert hiking[0]["key"] != "5" or hiking[0]["score"] is not None  # "title" only is indexed for 5
    assert len(hiking) == 2


# --- TTL ------------------------------------------------------------------------------------------


def test_an_item_expires_after_its_ttl_and_a_read_starts_its_time_again(api, frozen_now):
    batch(api, put(["t"], "short", {"n": 1}, ttl=1), put(["t"], "forever", {"n": 2}))

    frozen_now.advance(seconds=50)
    assert batch(api, get(["t"], "short"))[0]["value"] == {"n": 1}  # refreshed: now lives until 110 s
    frozen_now.advance(seconds=50)
    assert batch(api, get(["t"], "short", refresh_ttl=False))[0] is not None  # 100 s: alive, not refreshed
    (found,) = batch(api, search(["t"], refresh_ttl=False))
    assert keys(found) == ["short", "forever"]
    frozen_now.advance(seconds=20)

    assert batch(api, get(["t"], "short")) == [None]
    assert keys(batch(api, search(["t"]))[0]) == ["forever"]
    assert namespaces(api) == [["t"]]


def test_a_search_refreshes_the_ttl_of_the_items_it_returns(api, frozen_now):
    batch(api, put(["t"], "a", {"n": 1}, ttl=1))
    frozen_now.advance(seconds=45)
    batch(api, search(["t"]))
    frozen_now.advance(seconds=45)
    assert batch(api, get(["t"], "a", refresh_ttl=False))[0] is not None
    frozen_now.advance(seconds=30)
    assert batch(api, get(["t"], "a")) == [None]


def test_a_namespace_of_expired_items_only_is_not_listed_and_a_write_sweeps_expired_items(api, tenant, frozen_now):
    batch(api, put(["gone"], "a", {"n": 1}, ttl=1), put(["kept"], "a", {"n": 1}))
    frozen_now.advance(minutes=2)

    assert namespaces(api) == [["kept"]]
    assert StoreItem.objects.for_tenant(tenant).count() == 2  # reads do not delete
    batch(api, put(["kept"], "b", {"n": 2}))
    assert sorted(StoreItem.objects.for_tenant(tenant).values_list("key", flat=True)) == ["a", "b"]
    assert StoreItem.objects.for_tenant(tenant).filter(namespace=["gone"]).count() == 0


def test_the_periodic_sweep_deletes_every_tenants_expired_items(api, other_api, tenant, other_tenant, frozen_now):
    batch(api, put(["t"], "a", {"n": 1}, ttl=1))
    batch(other_api, put(["t"], "a", {"n": 1}, ttl=1), put(["t"], "b", {"n": 1}))
    frozen_now.advance(minutes=2)

    assert tasks.store_sweep.apply().get() == 2
    assert StoreItem.objects.for_tenant(tenant).count() == 0
    assert list(StoreItem.objects.for_tenant(other_tenant).values_list("key", flat=True)) == ["b"]


# --- Tenants ------------------------------------------------------------------------------------------


def test_another_tenants_items_are_never_seen_and_the_same_address_is_another_item(api, other_api):
    batch(other_api, put(["users", "1"], "prefs", {"secret": "globex pineapple"}), put(["globex-only"], "k", {"n": 1}))
    batch(api, put(["users", "1"], "prefs", {"theme": "dark"}))

    assert batch(api, get(["users", "1"], "prefs"))[0]["value"] == {"theme": "dark"}
    assert batch(api, get(["globex-only"], "k")) == [None]
    (found,) = batch(api, search([], query="pineapple"))
    (listed,) = batch(api, search([]))
    assert [item["value"] for item in found] == [{"theme": "dark"}]
    assert [item["value"] for item in listed] == [{"theme": "dark"}]
    assert namespaces(api) == [["users", "1"]]
    batch(api, {"op": "delete", "namespace": ["globex-only"], "key": "k"})
    assert batch(other_api, get(["globex-only"], "k"))[0]["value"] == {"n": 1}
    assert batch(other_api, get(["users", "1"], "prefs"))[0]["value"] == {"secret": "globex pineapple"}


def test_an_unscoped_query_of_items_raises():
    with pytest.raises(TenantScopeError):
        list(StoreItem.objects.all())


# --- The plain routes ------------------------------------------------------------------------------------


def test_the_plain_routes_put_read_search_list_and_delete_an_item(api, other_api):
    address = {"namespace": ["users", "7"], "key": "prefs"}
    written = api.put(ITEMS, {**address, "value": {"theme": "dark"}}, format="json")
    read = api.get(ITEMS, address)
    found = api.post(SEARCH, {"namespace_prefix": ["users"], "filter": {"theme": "dark"}}, format="json")
    listed = api.get(NAMESPACES, {"prefix": ["users"]})
    elsewhere = other_api.get(ITEMS, address)
    deleted = api.delete(f"{ITEMS}?namespace=users&namespace=7&key=prefs")
    deleted_again = api.delete(f"{ITEMS}?namespace=users&namespace=7&key=prefs")
    missing = api.get(ITEMS, address)

    assert written.status_code == 200
    assert written.json()["value"] == {"theme": "dark"}
    assert read.status_code == 200
    assert read.json()["namespace"] == ["users", "7"]
    assert [item["key"] for item in found.json()["items"]] == ["prefs"]
    assert listed.json() == {"namespaces": [["users", "7"]]}
    assert elsewhere.status_code == 404
    assert (deleted.status_code, deleted_again.status_code) == (204, 204)
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_the_schema_describes_the_store_routes(api):
    schema = api.get("/api/schema/", {"format": "json"})
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert {"/api/v1/store/batch/", "/api/v1/store/items/", "/api/v1/store/search/", "/api/v1/store/namespaces/"} <= set(paths)


def test_the_sweep_runs_on_celery_beat(settings):
    assert settings.CELERY_BEAT_SCHEDULE["store-ttl-sweep"]["task"] == tasks.store_sweep.name == "store.tasks.store_sweep"

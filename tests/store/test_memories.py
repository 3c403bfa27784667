"""A user's extracted memories read as store items under ["extracted_memories", <user_id>]: searched
and got like items, never written through the store, and never another tenant's.

``api`` is acme's key, ``other_api`` globex's.
"""

import uuid
from datetime import datetime

import pytest

from extraction import services as extraction_services
from store.models import StoreItem
from tests.factories import extracted_memories
from tests.store.test_api import BATCH, ITEMS, NAMESPACES, SEARCH, batch, get, keys, put, search

pytestmark = pytest.mark.django_db

BOSTON = {"op": "add", "kind": "fact", "subject": "Caroline", "text": "Caroline lives in Boston."}
POTTERY = {"op": "add", "kind": "preference", "subject": "Ana", "text": "Ana loves pottery."}
MOVE = {"op": "add", "kind": "event", "subject": "Caroline", "text": "Caroline moved to Boston.", "valid_from": "2023-05-01"}
CAROLINE = ["extracted_memories", "caroline"]


@pytest.fixture
def memories(tenant):
    """Caroline's memories, oldest first: Boston, pottery, the move."""
    return extracted_memories(tenant, BOSTON, POTTERY, MOVE, user_id="caroline")


def test_a_search_without_query_answers_the_users_current_memories_as_items_newest_first(api, memories):
    boston, pottery, move = memories

    (found,) = batch(api, search(CAROLINE))

    assert keys(found) == [str(move.memory_id), str(pottery.memory_id), str(boston.memory_id)]
    item = found[0]
    assert item["namespace"] == CAROLINE
    assert item["value"] == {
        "kind": "event",
        "subject": "Caroline",
        "text": "Caroline moved to Boston.",
        "valid_from": "2023-05-01T00:00:00+00:00",
        "valid_to": None,
        "confidence": 1.0,
        "message_ids": [str(message_id) for message_id in move.message_ids],
    }
    assert (item["score"], item["expires_at"]) == (None, None)
    assert datetime.fromisoformat(item["created_at"]) == move.created_at
    assert datetime.fromisoformat(item["updated_at"]) == move.updated_at
    assert not StoreItem.objects.for_tenant(move.tenant).exists()


def test_a_query_ranks_the_memories_and_a_filter_narrows_them_by_kind_or_subject(api, memories):
    ranked, by_kind, by_subject, both, paged = batch(
        api,
        search(CAROLINE, query="what does Ana like to do", limit=1),
        search(CAROLINE, filter={"kind": "event"}),
        search(CAROLINE, filter={"subject": {"$eq": "caroline"}}),
        search(CAROLINE, query="Boston", filter={"kind": "fact", "subject": "Caroline"}),
        search(CAROLINE, limit=1, offset=1),
    )

    assert [(item["value"]["text"], item["score"] > 0) for item in ranked] == [("Ana loves pottery.", True)]
    assert [item["value"]["text"] for item in by_kind] == ["Caroline moved to Boston."]
    assert {item["value"]["text"] for item in by_subject} == {"Caroline lives in Boston.", "Caroline moved to Boston."}
    assert [item["value"]["text"] for item in both] == ["Caroline lives in Boston."]
    assert [item["value"]["text"] for item in paged] == ["Ana loves pottery."]


def test_a_get_answers_the_memory_of_its_key_and_a_taken_back_one_leaves_the_search(api, tenant, memories):
    boston, _, _ = memories
    extraction_services.memory_invalidate(tenant=tenant, user_id="caroline", memory_id=boston.memory_id, by="api")

    read, not_a_memory, not_an_id, too_deep, someone_else, (found,) = (
        *batch(
            api,
            get(CAROLINE, str(boston.memory_id)),
            get(CAROLINE, str(uuid.uuid4())),
            get(CAROLINE, "boston"),
            get([*CAROLINE, "more"], str(boston.memory_id)),
            get(["extracted_memories", "ana"], str(boston.memory_id)),
        ),
        batch(api, search(CAROLINE)),
    )

    assert (read["key"], read["value"]["text"]) == (str(boston.memory_id), "Caroline lives in Boston.")
    assert read["value"]["valid_to"] is not None
    assert [not_a_memory, not_an_id, too_deep, someone_else] == [None, None, None, None]
    assert str(boston.memory_id) not in keys(found)
    assert len(found) == 2


def test_the_namespace_is_read_only_and_a_refused_batch_writes_nothing(api, tenant, memories):
    memory_id = str(memories[0].memory_id)

    refused_put = batch(api, put(["users", "1"], "k", {"n": 1}), put(CAROLINE, memory_id, {"text": "x"}), status=400)
    refused_delete = batch(api, {"op": "delete", "namespace": CAROLINE, "key": memory_id}, status=400)
    refused_root = batch(api, put(["extracted_memories"], "k", {"n": 1}), status=400)

    assert refused_put["details"]["field"] == "operations[1].namespace"
    assert "/api/v1/users/{user_id}/memories/{memory_id}/" in refused_put["message"]
    assert refused_delete["details"]["field"] == "operations[0].namespace"
    assert refused_root["details"]["field"] == "operations[0].namespace"
    assert not StoreItem.objects.for_tenant(tenant).exists()
    (read,) = batch(api, get(CAROLINE, memory_id))
    assert read["value"]["text"] == "Caroline lives in Boston."


@pytest.mark.parametrize(
    ("operation", "field"),
    [
        (search(["extracted_memories"]), "operations[0].namespace_prefix"),
        (search(CAROLINE, filter={"text": "Boston"}), "operations[0].filter.text"),
        (search(CAROLINE, filter={"kind": {"$ne": "fact"}}), "operations[0].filter.kind"),
        (search(CAROLINE, filter={"kind": ["fact"]}), "operations[0].filter.kind"),
        (search(CAROLINE, filter={"subject": ""}), "operations[0].filter.subject"),
    ],
)
def test_a_search_of_memories_names_the_user_and_filters_by_kind_or_subject_only(api, memories, operation, field):
    refused = batch(api, operation, status=400)

    assert refused["code"] == "validation_error"
    assert refused["details"]["field"] == field


def test_the_memories_are_not_listed_as_namespaces_nor_answered_by_a_search_of_everything(api, memories):
    batch(api, put(["users", "1"], "prefs", {"text": "Caroline likes Boston"}))

    namespaces, everything, ranked = batch(
        api,
        {"op": "list_namespaces"},
        search([]),
        search([], query="Boston"),
    )

    assert namespaces == [["users", "1"]]
    assert keys(everything) == keys(ranked) == ["prefs"]


def test_another_tenants_memories_are_never_seen(api, other_api, memories):
    memory_id = str(memories[0].memory_id)

    found, ranked, read = batch(other_api, search(CAROLINE), search(CAROLINE, query="Boston"), get(CAROLINE, memory_id))

    assert (found, ranked, read) == ([], [], None)
    assert len(batch(api, search(CAROLINE))[0]) == 3


def test_the_plain_routes_read_the_memories_and_refuse_to_write_them(api, memories):
    memory_id = str(memories[0].memory_id)
    address = {"namespace": CAROLINE, "key": memory_id}

    read = api.get(ITEMS, address)
    found = api.post(SEARCH, {"namespace_prefix": CAROLINE, "query": "pottery"}, format="json")
    refused_put = api.put(ITEMS, {**address, "value": {"text": "x"}}, format="json")
    refused_delete = api.delete(f"{ITEMS}?namespace=extracted_memories&namespace=caroline&key={memory_id}")
    missing = api.get(ITEMS, {**address, "key": str(uuid.uuid4())})
    namespaces = api.get(NAMESPACES, {"prefix": ["extracted_memories"]})

    assert read.status_code == 200
    assert read.json()["value"]["text"] == "Caroline lives in Boston."
    assert found.json()["items"][0]["value"]["text"] == "Ana loves pottery."
    assert (refused_put.status_code, refused_delete.status_code, missing.status_code) == (400, 400, 404)
    assert refused_put.json()["error"]["details"]["field"] == "request.namespace"
    assert namespaces.json() == {"namespaces": []}
    assert api.post(BATCH, {"operations": [get(CAROLINE, memory_id)]}, format="json").status_code == 200

"""The user search with the user's extracted memories (``include_memories``), through the HTTP API:
off, today's answer; on, one list of turns and memories where a memory and the turn it was read from
both rank and name each other, only the user's own current memories unless the past is asked for."""

import json

import pytest

from extraction import runs
from extraction.services import messages_read
from memory import fused
from tests.chat import fakes
from tests.mcp_server.conftest import rpc
from tests.search.test_search import conversation_of_facts

pytestmark = pytest.mark.django_db

URL = "/api/v1/users/caroline/search/"
TURN_FIELDS = {
    "message_id", "conversation_id", "seq", "role", "content", "created_at", "metadata", "similarity", "keyword_score", "score",
}  # fmt: skip
PUPPY = {"op": "add", "kind": "event", "subject": "Caroline", "text": "Caroline adopted a golden retriever puppy named Rex."}
DENVER = {"op": "add", "kind": "fact", "subject": "Tomasz", "text": "Tomasz, Caroline's brother, lives in Denver."}


@pytest.fixture
def extracting(tenant):
    tenant.settings = {"MEMORY_EXTRACTION_ENABLED": True, "MEMORY_CHAT_MODEL": "fake:scripted-model"}
    tenant.save()
    return tenant


def remembered(tenant, *operations, conversation_id="s1", user_id="caroline", seq=1):
    """The conversation of FACTS, embedded, read by the extractor answering ``operations``, each read
    from its turn ``seq``: the id of that turn."""
    conversation = conversation_of_facts(tenant, conversation_id, user_id=user_id)
    source = str(messages_read(tenant=tenant, conversation=conversation)[seq - 1].message_id)
    fakes.script(json.dumps({"operations": [{**operation, "sources": [source]} for operation in operations]}))
    runs.conversation_extract(tenant=tenant, conversation_id=conversation_id, quiet=True)
    return source


def test_without_include_memories_the_answer_is_the_turns_search_of_today(api, extracting):
    remembered(extracting, PUPPY)

    plain = api.get(URL, {"q": "What is the name of Caroline's puppy?"})
    off = api.get(URL, {"q": "What is the name of Caroline's puppy?", "include_memories": "false"})
    posted = api.post(URL, {"q": "What is the name of Caroline's puppy?", "include_memories": False}, format="json")

    assert plain.status_code == off.status_code == posted.status_code == 200
    assert off.json() == plain.json() == posted.json()
    assert "memories_considered" not in off.json()
    assert all(set(hit) == TURN_FIELDS for hit in off.json()["results"])


def test_a_memory_and_the_turn_it_was_read_from_both_rank_and_name_each_other(api, extracting):
    source = remembered(extracting, PUPPY)
    memory_id = api.get("/api/v1/users/caroline/memories/").json()["results"][0]["memory_id"]

    body = api.get(URL, {"q": "What is the name of Caroline's puppy?", "include_memories": "true", "top_k": 4}).json()

    assert body["memories_considered"] == 1
    kinds = [hit["kind"] for hit in body["results"]]
    assert set(kinds) == {"turn", "memory"}
    memory = next(hit for hit in body["results"] if hit["kind"] == "memory")
    assert memory["memory_id"] == memory_id
    assert (memory["text"], memory["subject"], memory["memory_kind"]) == (PUPPY["text"], "Caroline", "event")
    assert memory["message_ids"] == [source]
    assert memory["conversation_ids"] == ["s1"]
    assert memory["valid_to"] is None
    turn = next(hit for hit in body["results"] if hit["kind"] == "turn" and hit["message_id"] == source)
    assert set(turn) == TURN_FIELDS | {"kind", "memory_ids"}
    assert turn["memory_ids"] == [memory_id]
    assert "Rex" in turn["content"]
    scores = [hit["score"] for hit in body["results"]]
    assert scores == sorted(scores, reverse=True)


def test_a_turn_rises_with_the_memories_read_from_it():
    """The merge alone: a memory read from the second turn lifts it above the first."""
    turns = [_turn("first", 0.8), _turn("second", 0.78), _turn("third", 0.5)]
    memories = [_memory(["second"], 0.9)]

    without = fused.fuse(turns=turns, memories=[], top_k=3)
    with_memory = fused.fuse(turns=turns, memories=memories, top_k=4)

    assert [hit.turn.message_id for hit in without] == ["first", "second", "third"]
    assert [hit.kind for hit in with_memory] == ["turn", "turn", "memory", "turn"]
    assert [hit.turn.message_id for hit in with_memory if hit.kind == "turn"] == ["second", "first", "third"]


def test_turns_in_a_rerankers_order_keep_it_among_themselves():
    turns = [_turn("reranked first", 0.2), _turn("reranked second", 0.9), _turn("reranked third", 0.5)]

    merged = fused.fuse(turns=turns, memories=[], top_k=3, in_order=True)

    assert [hit.turn.message_id for hit in merged] == ["reranked first", "reranked second", "reranked third"]


def test_another_users_and_another_tenants_memories_never_appear(api, other_api, extracting, other_tenant):
    remembered(extracting, DENVER, conversation_id="s9", user_id="tomasz")
    other_tenant.settings = dict(extracting.settings)
    other_tenant.save()
    remembered(other_tenant, PUPPY)

    body = api.get(URL, {"q": "Where does Tomasz live? Denver puppy Rex", "include_memories": "true"}).json()

    assert body["memories_considered"] == 0
    assert all(hit["kind"] == "turn" for hit in body["results"])
    assert body["results"] == []  # caroline has no conversation of acme's: globex's turns never count either
    theirs = other_api.get(URL, {"q": "Where does Tomasz live?", "include_memories": "true"}).json()
    assert [hit["text"] for hit in theirs["results"] if hit["kind"] == "memory"] == [PUPPY["text"]]


def test_memories_taken_back_are_left_out_unless_the_past_is_asked_for(api, extracting):
    source = remembered(extracting, PUPPY)
    memory_id = api.get("/api/v1/users/caroline/memories/").json()["results"][0]["memory_id"]
    assert api.delete(f"/api/v1/users/caroline/memories/{memory_id}/").status_code in (200, 204)
    asked = {"q": "What is the name of Caroline's puppy?", "include_memories": "true"}

    current = api.get(URL, asked).json()["results"]
    with_past = api.get(URL, asked | {"include_past_memories": "true"}).json()["results"]

    assert [hit for hit in current if hit["kind"] == "memory"] == []
    assert next(hit for hit in current if hit.get("message_id") == source)["memory_ids"] == []
    past = [hit for hit in with_past if hit["kind"] == "memory"]
    assert [hit["memory_id"] for hit in past] == [memory_id]
    assert past[0]["valid_to"] is not None
    assert next(hit for hit in with_past if hit.get("message_id") == source)["memory_ids"] == [memory_id]


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"include_memories": "perhaps"}, "include_memories"),
        ({"include_memories": "true", "include_past_memories": "often"}, "include_past_memories"),
        ({"include_past_memories": "true"}, "include_past_memories"),
        ({"include_memories": "true", "top_k": 0}, "top_k"),
    ],
)
def test_bad_values_are_a_400_naming_the_field(api, extracting, params, named):
    remembered(extracting, PUPPY)

    got = api.get(URL, {"q": "puppy", **params})
    posted = api.post(URL, {"q": "puppy", **params}, format="json")

    assert got.status_code == posted.status_code == 400
    assert named in got.content.decode()
    assert named in posted.content.decode()


def test_the_body_asks_the_same_as_the_query_string(api, extracting):
    remembered(extracting, PUPPY, DENVER)
    asked = {"q": "Where does Tomasz live?", "include_memories": True, "top_k": 5}

    got = api.get(URL, {**asked, "include_memories": "true"}).json()
    posted = api.post(URL, asked, format="json").json()

    assert posted == got
    assert DENVER["text"] in [hit.get("text") for hit in posted["results"]]


def test_the_context_ranks_turns_and_memories_together_when_the_tenant_extracts(api, extracting):
    source = remembered(extracting, PUPPY)
    asked = {"use_memory": True, "query": "What is the name of Caroline's puppy?", "max_tokens": 2000, "top_k": 4}

    bundle = api.post("/api/v1/conversations/s1/context/", asked, format="json").json()["memory"]

    kinds = {entry["kind"] for entry in bundle["ranking"]}
    assert kinds == {"turn", "memory"}
    assert len(bundle["ranking"]) == 4
    memory = next(entry for entry in bundle["ranking"] if entry["kind"] == "memory")
    assert memory["memory_id"] == bundle["extracted_memories"][0]["memory_id"]
    assert bundle["extracted_memories"][0]["fused_score"] == memory["score"]
    turns = [entry["message_id"] for entry in bundle["ranking"] if entry["kind"] == "turn"]
    assert [item["message_id"] for item in bundle["context"]][: len(turns)] == turns
    assert source in turns
    assert all(item["fused_score"] is not None for item in bundle["context"])

    extracting.settings = {**extracting.settings, "MEMORY_EXTRACTION_ENABLED": False}
    extracting.save()
    unfused = api.post("/api/v1/conversations/s1/context/", asked, format="json").json()["memory"]
    assert unfused["ranking"] == []
    assert all("fused_score" not in item for item in unfused["context"])
    assert [memory["text"] for memory in unfused["extracted_memories"]] == [PUPPY["text"]]


def test_the_mcp_search_tool_ranks_memories_when_asked(api, extracting):
    source = remembered(extracting, PUPPY)
    arguments = {"query": "What is the name of Caroline's puppy?", "user_id": "caroline", "top_k": 4}

    plain = rpc(api, "tools/call", {"name": "search_memory", "arguments": arguments}).json()["result"]
    asked = rpc(api, "tools/call", {"name": "search_memory", "arguments": arguments | {"include_memories": True}})
    found = asked.json()["result"]["structuredContent"]

    assert "kind" not in plain["structuredContent"]["results"][0]
    assert found == api.post(URL, {"q": arguments["query"], "top_k": 4, "include_memories": True}, format="json").json()
    memory = next(hit for hit in found["results"] if hit["kind"] == "memory")
    assert (memory["text"], memory["message_ids"]) == (PUPPY["text"], [source])


def test_the_schema_documents_the_parameter_and_both_kinds_of_result(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()

    operation = schema["paths"]["/api/v1/users/{user_id}/search/"]["get"]
    assert {"include_memories", "include_past_memories"} <= {parameter["name"] for parameter in operation["parameters"]}
    result = schema["components"]["schemas"]["FusedSearchResult"]
    assert result["discriminator"]["propertyName"] == "kind"
    assert set(result["discriminator"]["mapping"]) == {"turn", "memory"}


def _turn(message_id, score):
    from datetime import UTC, datetime

    from search.selectors import SearchHit

    return SearchHit(
        message_id=message_id,
        conversation_id="s1",
        seq=1,
        role="user",
        content=message_id,
        created_at=datetime(2023, 5, 8, tzinfo=UTC),
        metadata={},
        similarity=None,
        keyword_score=None,
        score=score,
    )


def _memory(message_ids, score):
    from extraction.models import Memory
    from extraction.selectors import MemoryHit

    return MemoryHit(memory=Memory(kind="fact", subject="Caroline", text="x", message_ids=message_ids), score=score)

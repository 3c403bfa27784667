"""The memories API: the list says whether memories are extracted and why not, search ranks them with
filters, one memory comes with its history, corrections and deletes keep it, other tenants see nothing;
the context with use_memory holds them, dated."""

import json
from datetime import UTC, datetime

import pytest

from extraction import runs
from extraction.models import Memory, MemoryChange
from extraction.services import messages_read
from tests.chat import fakes
from tests.factories import conversation_with_messages

pytestmark = pytest.mark.django_db

SAID = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
TEXTS = (
    "I moved to Boston last week.",
    "Nice! How is it?",
    "Cold. My sister Ana lives here too, she loves pottery.",
    "Lovely.",
)


@pytest.fixture
def extracting(tenant):
    tenant.settings = {"MEMORY_EXTRACTION_ENABLED": True, "MEMORY_CHAT_MODEL": "fake:scripted-model"}
    tenant.save()
    return tenant


def memories_of(tenant, *operations, conversation_id="c1", user_id="caroline"):
    """A conversation of TEXTS, read by the extractor answering ``operations`` (sources: its first turn)."""
    rows = [("user" if seq % 2 == 0 else "assistant", text, {}, SAID) for seq, text in enumerate(TEXTS)]
    conversation = conversation_with_messages(tenant, conversation_id, rows=rows, user_id=user_id)
    source = str(messages_read(tenant=tenant, conversation=conversation)[0].message_id)
    fakes.script(json.dumps({"operations": [{**operation, "sources": [source]} for operation in operations]}))
    runs.conversation_extract(tenant=tenant, conversation_id=conversation_id, quiet=True)
    return source


BOSTON = {"op": "add", "kind": "fact", "subject": "Caroline", "text": "Caroline lives in Boston."}
POTTERY = {"op": "add", "kind": "preference", "subject": "Ana", "text": "Ana loves pottery."}
MOVE = {"op": "add", "kind": "event", "subject": "Caroline", "text": "Caroline moved to Boston.", "valid_from": "2023-05-01"}


def url(user_id="caroline", memory_id=None):
    return f"/api/v1/users/{user_id}/memories/" + (f"{memory_id}/" if memory_id else "")


def test_the_list_holds_current_memories_with_their_sources_and_says_extraction_runs(api, extracting):
    source = memories_of(extracting, BOSTON, POTTERY)

    body = api.get(url()).json()

    assert body["extraction"] == {"enabled": True, "model": "fake:scripted-model", "reason": None, "detail": None}
    assert body["count"] == 2
    assert {memory["text"] for memory in body["results"]} == {"Caroline lives in Boston.", "Ana loves pottery."}
    first = body["results"][0]
    assert first["message_ids"] == [source]
    assert first["conversation_ids"] == ["c1"]
    assert first["current"] is True


def test_without_extraction_the_list_is_empty_and_names_why(api, tenant):
    body = api.get(url()).json()

    assert (body["count"], body["results"]) == (0, [])
    assert body["extraction"]["reason"] == "disabled"
    assert "MEMORY_EXTRACTION_ENABLED" in body["extraction"]["detail"]
    assert api.get("/api/v1/status/").json()["extraction"]["reason"] == "disabled"


def test_search_ranks_by_the_query_and_filters_by_kind_subject_and_date(api, extracting):
    memories_of(extracting, BOSTON, POTTERY, MOVE)

    found = api.get(url(), {"query": "what does Ana like to do", "top_k": 1}).json()["results"]
    assert [memory["text"] for memory in found] == ["Ana loves pottery."]
    assert found[0]["score"] > 0
    assert [m["text"] for m in api.get(url(), {"kind": "event"}).json()["results"]] == ["Caroline moved to Boston."]
    assert {m["text"] for m in api.get(url(), {"subject": "caroline"}).json()["results"]} == {
        "Caroline lives in Boston.",
        "Caroline moved to Boston.",
    }
    before = api.get(url(), {"valid_at": "2023-04-01T00:00:00Z", "kind": "event"}).json()["results"]
    assert before == []


def test_memories_are_filtered_by_the_conversations_they_were_read_from_and_by_when_they_hold(api, extracting):
    memories_of(extracting, BOSTON, MOVE)
    memories_of(extracting, POTTERY, conversation_id="c2")

    from_c2 = api.get(url(), {"conversation_id": ["c2", "unknown"]}).json()["results"]
    assert [memory["text"] for memory in from_c2] == ["Ana loves pottery."]
    in_may = api.get(url(), {"start_date": "2023-05-01T00:00:00Z", "end_date": "2023-05-02T00:00:00Z"}).json()["results"]
    assert [memory["text"] for memory in in_may] == ["Caroline moved to Boston."]


@pytest.mark.parametrize(
    ("query", "named"),
    [({"kind": "rumour"}, "kind"), ({"valid_at": "yesterday"}, "valid_at"), ({"top_k": 0}, "top_k"), ({"limit": -1}, "limit")],
)
def test_bad_parameters_are_a_400_naming_them(api, extracting, query, named):
    response = api.get(url(), query)

    assert response.status_code == 400
    assert named in json.dumps(response.json())


def test_a_correction_keeps_the_replaced_version_in_the_history(api, extracting):
    memories_of(extracting, BOSTON)
    memory_id = api.get(url()).json()["results"][0]["memory_id"]

    response = api.patch(url(memory_id=memory_id), {"text": "Caroline lives in Cambridge."}, format="json")

    assert response.status_code == 200
    body = response.json()
    assert body["text"] == "Caroline lives in Cambridge."
    assert [(change["action"], change["previous_text"], change["model"]) for change in body["history"]] == [
        ("update", "Caroline lives in Boston.", "api"),
        ("add", None, "fake:scripted-model"),
    ]


def test_a_correction_or_a_delete_sent_twice_is_recorded_once(api, extracting):
    memories_of(extracting, BOSTON)
    memory_id = api.get(url()).json()["results"][0]["memory_id"]

    for _ in range(2):
        assert api.patch(url(memory_id=memory_id), {"text": "Caroline lives in Cambridge."}, format="json").status_code == 200
    for _ in range(2):
        assert api.delete(url(memory_id=memory_id)).status_code == 204

    history = api.get(url(memory_id=memory_id)).json()["history"]
    assert [change["action"] for change in history] == ["delete", "update", "add"]


@pytest.mark.parametrize(
    ("body", "named"),
    [
        ({"text": ""}, "text"),
        ({"kind": "rumour"}, "kind"),
        ({"memory_id": "x"}, "memory_id"),
        ({}, "at least one"),
        ({"text": "a\x00b"}, "text"),
    ],
)
def test_a_bad_correction_is_a_400_and_changes_nothing(api, extracting, body, named):
    memories_of(extracting, BOSTON)
    memory_id = api.get(url()).json()["results"][0]["memory_id"]

    response = api.patch(url(memory_id=memory_id), body, format="json")

    assert response.status_code == 400
    assert named in json.dumps(response.json())
    memory = Memory.objects.for_tenant(extracting).get()
    assert (memory.text, MemoryChange.objects.for_tenant(extracting).count()) == ("Caroline lives in Boston.", 1)


def test_a_delete_takes_the_memory_back_and_keeps_it_with_its_history(api, extracting):
    memories_of(extracting, BOSTON)
    memory_id = api.get(url()).json()["results"][0]["memory_id"]

    assert api.delete(url(memory_id=memory_id)).status_code == 204

    assert api.get(url()).json()["count"] == 0
    past = api.get(url(), {"include_past": "true"}).json()["results"]
    assert past[0]["current"] is False
    assert [change["action"] for change in api.get(url(memory_id=memory_id)).json()["history"]] == ["delete", "add"]


def test_another_tenant_or_user_sees_none_of_them(api, other_api, extracting):
    memories_of(extracting, BOSTON)
    memory_id = api.get(url()).json()["results"][0]["memory_id"]

    assert other_api.get(url()).json()["count"] == 0
    assert other_api.get(url(memory_id=memory_id)).status_code == 404
    assert other_api.patch(url(memory_id=memory_id), {"text": "x"}, format="json").status_code == 404
    assert other_api.delete(url(memory_id=memory_id)).status_code == 404
    assert api.get(url("someone-else", memory_id)).status_code == 404
    assert api.get(url(memory_id="not-a-uuid")).status_code == 404
    assert Memory.objects.for_tenant(extracting).get().current


def test_the_context_with_use_memory_holds_the_memories_dated(api, extracting):
    memories_of(extracting, BOSTON, MOVE)
    api.post("/api/v1/conversations/new/messages/", {"role": "user", "content": "hi", "user_id": "caroline"}, format="json")

    response = api.post(
        "/api/v1/conversations/new/context/",
        {"use_memory": True, "query": "Where does Caroline live?", "max_tokens": 2000},
        format="json",
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert {memory["text"] for memory in body["memory"]["extracted_memories"]} == {
        "Caroline lives in Boston.",
        "Caroline moved to Boston.",
    }
    system = body["messages"][0]["content"]
    assert "Memories from earlier conversations:" in system
    assert "- [event, 1 May 2023] Caroline moved to Boston." in system


def test_a_memory_whose_turns_the_context_holds_already_is_left_out_for_more_turns():
    from memory.bundle import relevant_context_block

    def turn(message_id, seq, content):
        return {
            "message_id": message_id,
            "session_id": "c1",
            "seq": seq,
            "role": "user",
            "name": "Caroline",
            "content": content,
            "timestamp": "2023-05-08T13:56:00+00:00",
        }

    bundle = {
        "summaries": [],
        "memories": [],
        "extracted_memories": [
            {"kind": "fact", "text": "Caroline lives in Boston.", "valid_from": None, "message_ids": ["m1"]},
            {"kind": "preference", "text": "Ana loves pottery.", "valid_from": None, "message_ids": ["m9"]},
        ],
    }

    block = relevant_context_block(bundle, [turn("m1", 1, "I moved to Boston last week.")], exclude=set(), max_tokens=500)

    assert "I moved to Boston last week." in block
    assert "Caroline lives in Boston." not in block  # its turn says it already
    assert "- [preference] Ana loves pottery." in block  # its turn is not in the context

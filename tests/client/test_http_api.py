"""Every operation of the API through MemoryClient, against the live service: conversations, the memory
document, messages, search, summaries, facts, extracted memories, users; the typed errors with the
API's codes; and the conversation ids refused before any request."""

import asyncio
import copy
import multiprocessing
import uuid
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, date, datetime
from typing import Any

import httpx
import pytest

import memory_client
from memory_client import (
    BadRequest,
    Conflict,
    MemoryClient,
    MemoryServiceError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    Unauthorized,
    Unreachable,
)
from tenants import services as tenant_services
from tests.client.conftest import LiveService
from tests.factories import extracted_memories
from tests.faults import free_port, wait_until


def persisted(memory: MemoryClient, conversation_id: str, count: int) -> None:
    """Until the worker has stored ``count`` messages of the conversation in PostgreSQL."""
    wait_until(
        lambda: (memory.get_conversation(conversation_id) or {}).get("message_count", 0) >= count,
        message=f"{count} messages of {conversation_id} to be persisted",
    )


def test_a_conversation_is_created_listed_changed_and_erased(memory: MemoryClient) -> None:
    created = memory.create_conversation("trip-1", user_id="ana", agent_id="travel", metadata={"city": "Madrid"})
    memory.create_conversation("trip-2", user_id="ana")
    memory.create_conversation("other", user_id="bob")
    assert created["conversation_id"] == "trip-1"
    assert created["metadata"] == {"city": "Madrid"}
    assert memory.get_conversation("trip-1")["agent_id"] == "travel"

    first = memory.list_conversations(user_id="ana", limit=1)
    second = memory.list_conversations(user_id="ana", limit=1, offset=1)
    assert first["count"] == 2
    assert first["next"] is not None
    assert {first["results"][0]["conversation_id"], second["results"][0]["conversation_id"]} == {"trip-1", "trip-2"}

    changed = memory.update_conversation("trip-1", archived=True, metadata={"city": "Lisbon"})
    assert changed["archived"] is True
    assert changed["metadata"] == {"city": "Lisbon"}
    assert [c["conversation_id"] for c in memory.list_conversations(archived=True)["results"]] == ["trip-1"]
    assert memory.list_conversations(agent_id="travel")["count"] == 1

    memory.append("trip-1", [{"role": "user", "content": "hello"}])
    persisted(memory, "trip-1", 1)
    erased = memory.erase_conversation("trip-1")
    assert erased["conversation_id"] == "trip-1"
    assert erased["messages_erased"] == 1
    assert memory.get_conversation("trip-1") is None
    assert memory.erase_conversation("trip-1") == {"conversation_id": "trip-1", "messages_erased": 0, "cache_keys_erased": 0}


def test_creating_a_conversation_that_exists_is_a_conflict(memory: MemoryClient) -> None:
    memory.create_conversation("taken")
    with pytest.raises(Conflict) as raised:
        memory.create_conversation("taken")
    assert raised.value.status == 409
    assert raised.value.code == "conflict"


def test_changing_an_unknown_conversation_is_not_found(memory: MemoryClient) -> None:
    with pytest.raises(NotFound) as raised:
        memory.update_conversation("nobody-here", archived=True)
    assert raised.value.code == "not_found"
    with pytest.raises(ValueError, match="Nothing to change"):
        memory.update_conversation("nobody-here")


def test_the_memory_document_is_put_and_read_back(memory: MemoryClient) -> None:
    assert memory.get_memory("notes") is None
    saved = memory.put_memory("notes", messages=[{"role": "user", "content": "I like jazz"}], metadata={"mood": "calm"})
    assert saved["messages"] == [{"role": "user", "content": "I like jazz"}]
    assert saved["metadata"]["mood"] == "calm"
    assert saved["metadata"]["conversation_id"] == "notes"
    read = memory.get_memory("notes")
    assert read["messages"] == saved["messages"]
    assert read["metadata"]["mood"] == "calm"
    memory.put_memory("notes", messages=[])
    assert memory.get_memory("notes")["messages"] == []


def test_one_message_is_appended_read_by_id_and_filtered(memory: MemoryClient) -> None:
    question = memory.append_message("chat-1", "user", "Where is the Prado?", metadata={"lang": "en"}, user_id="ana")
    answer = memory.append_message("chat-1", "assistant", "In Madrid.", message_id=str(uuid.uuid4()))
    assert question["seq"] < answer["seq"]
    assert memory.get_message("chat-1", question["id"])["content"] == "Where is the Prado?"
    assert memory.get_message("chat-1", str(uuid.uuid4())) is None
    assert memory.get_message("no-such-chat", question["id"]) is None
    assert [m["content"] for m in memory.messages("chat-1", role="assistant")] == ["In Madrid."]
    assert [m["content"] for m in memory.messages("chat-1", limit=1)] == ["In Madrid."]
    assert [m["content"] for m in memory.messages("chat-1", skip=1)] == ["Where is the Prado?"]
    assert [m["role"] for m in memory.window("chat-1", format="openai")] == ["user", "assistant"]


def test_search_finds_messages_in_the_conversation_and_across_the_users(memory: MemoryClient) -> None:
    memory.append("bars", [{"role": "user", "content": "Caroline adopted a puppy named Rex."}], user_id="caroline")
    memory.append("trips", [{"role": "user", "content": "Caroline flew to Denver to see Tomasz."}], user_id="caroline")
    persisted(memory, "bars", 1)
    persisted(memory, "trips", 1)

    found = memory.search("bars", "puppy Rex", mode="keyword", scope="conversation")
    assert found["mode"] == "keyword"
    assert found["results"][0]["content"] == "Caroline adopted a puppy named Rex."
    across = memory.search_user("caroline", "Denver Tomasz", mode="keyword", top_k=5)
    assert across["scope"] == "user"
    assert across["results"][0]["conversation_id"] == "trips"
    assert asyncio.run(memory.asearch_user("caroline", "Rex", mode="keyword"))["results"][0]["conversation_id"] == "bars"


def test_filters_narrow_a_search_before_it_ranks(memory: MemoryClient) -> None:
    memory.append(
        "pets",
        [
            {"role": "user", "content": "Our beagle Rex ate a sock.", "metadata": {"name": "Caroline", "topic": "pets"}},
            {"role": "assistant", "content": "Rex the beagle is fine now.", "metadata": {"name": "Melanie", "topic": "vet"}},
        ],
        user_id="caroline",
    )
    persisted(memory, "pets", 2)

    by_role = memory.search("pets", "Rex beagle", mode="keyword", filters={"role": ["assistant"]})
    assert [hit["content"] for hit in by_role["results"]] == ["Rex the beagle is fine now."]
    by_metadata = memory.search_user("caroline", "Rex beagle", mode="keyword", filters={"metadata": {"topic": {"in": ["pets"]}}})
    assert [hit["content"] for hit in by_metadata["results"]] == ["Our beagle Rex ate a sock."]
    by_name = asyncio.run(memory.asearch_user("caroline", "Rex", mode="keyword", filters={"name": ["Melanie"]}))
    assert [hit["content"] for hit in by_name["results"]] == ["Rex the beagle is fine now."]
    context = memory.context("pets", query="Rex?", use_memory=True, memory_filters={"role": ["user"]})
    assert context["messages"][-1]["content"] == "Rex?"


def test_the_search_status_counts_what_search_covers(memory: MemoryClient) -> None:
    memory.append(
        "notes", [{"role": "user", "content": "Rex is a beagle."}, {"role": "assistant", "content": "Noted."}], user_id="rita"
    )
    persisted(memory, "notes", 2)

    status = memory.search_status("rita")
    assert status["user_id"] == "rita"
    assert status["messages"] == 2
    assert status["pending_persist"] == 0
    assert status["embedded"] + status["not_embedded"] == 2
    assert status["searchable"] is (status["not_embedded"] == 0)
    nobody = asyncio.run(memory.asearch_status("nobody-at-all"))
    assert (nobody["messages"], nobody["searchable"], nobody["reason"]) == (0, False, "no_messages")


def test_a_summary_made_on_request_is_listed(memory: MemoryClient) -> None:
    assert memory.summaries("never-spoken") == []
    memory.append(
        "long-talk",
        [
            {"role": "user", "content": "Book a table in Madrid for Friday."},
            {"role": "assistant", "content": "Booked at Botin for 21:00."},
        ],
    )
    persisted(memory, "long-talk", 2)
    summary = memory.summarize("long-talk")
    assert summary["message_count"] == 2
    assert summary["text"]
    again = memory.summarize("long-talk")
    assert again["created_at"] == summary["created_at"]
    assert [s["text"] for s in memory.summaries("long-talk")] == [summary["text"]]


def test_facts_are_set_read_changed_deleted_and_kept_in_history(memory: MemoryClient) -> None:
    key = "favourite city? 100%"  # spaces, "?" and "%" travel percent-encoded
    assert memory.get_fact("ana", key) is None
    assert memory.fact_history("ana", key)["results"] == []
    first = memory.set_fact("ana", key, "Madrid")
    assert first["value"] == "Madrid"
    written = memory.set_facts("ana", {key: "Lisbon", "diet": "vegetarian"})
    assert [fact["key"] for fact in written["facts"]] == [key, "diet"]
    assert written["created"] == ["diet"]
    assert memory.get_fact("ana", key)["value"] == "Lisbon"
    listed = memory.list_facts("ana")
    assert {fact["key"] for fact in listed["facts"]} == {key, "diet"}
    assert listed["total_tokens"] > 0
    assert memory.list_facts("nobody")["facts"] == []

    memory.delete_fact("ana", "diet")
    memory.delete_fact("ana", "diet")
    assert memory.get_fact("ana", "diet") is None
    history = memory.fact_history("ana", key)
    assert [(change["value"], change["previous_value"]) for change in history["results"]] == [
        ("Lisbon", "Madrid"),
        ("Madrid", None),
    ]
    everything = memory.user_fact_history("ana", limit=2)
    assert everything["count"] == 4
    assert everything["results"][0]["action"] == "delete"
    assert len(everything["results"]) == 2


BOSTON = {"op": "add", "kind": "fact", "subject": "Caroline", "text": "Caroline lives in Boston."}
POTTERY = {"op": "add", "kind": "preference", "subject": "Ana", "text": "Ana loves pottery."}
MOVE = {"op": "add", "kind": "event", "subject": "Caroline", "text": "Caroline moved to Boston.", "valid_from": "2023-05-01"}
DINNER = {"op": "add", "kind": "preference", "subject": "Caroline", "text": "Caroline likes Thai food."}
# Spaces, "?" and "@" travel percent-encoded.
CAROLINE = "caroline @ home?"


def test_extracted_memories_are_listed_searched_and_filtered(memory: MemoryClient, tenant: Any) -> None:
    boston, pottery, move = extracted_memories(tenant, BOSTON, POTTERY, MOVE, user_id=CAROLINE)

    listed = memory.list_memories(CAROLINE)
    assert listed["user_id"] == CAROLINE
    assert (listed["extraction"]["enabled"], listed["extraction"]["reason"]) == (False, "disabled")
    assert listed["count"] == 3
    assert [found["memory_id"] for found in listed["results"]] == [
        str(move.memory_id),
        str(pottery.memory_id),
        str(boston.memory_id),
    ]
    first = listed["results"][0]
    assert (first["kind"], first["subject"], first["current"], first["score"]) == ("event", "Caroline", True, None)
    assert first["valid_from"].startswith("2023-05-01")
    assert first["conversation_ids"] == ["said"]
    assert first["message_ids"] == [str(message_id) for message_id in move.message_ids]

    found = memory.list_memories(CAROLINE, query="what does Ana like to do", top_k=1)["results"]
    assert [hit["text"] for hit in found] == ["Ana loves pottery."]
    assert found[0]["score"] > 0
    assert [m["text"] for m in memory.list_memories(CAROLINE, kind="event")["results"]] == ["Caroline moved to Boston."]
    assert memory.list_memories(CAROLINE, subject="caroline")["count"] == 2
    assert memory.list_memories(CAROLINE, kind="event", valid_at=datetime(2023, 4, 1, tzinfo=UTC))["results"] == []
    page = memory.list_memories(CAROLINE, limit=1, offset=1)
    assert (page["count"], [m["text"] for m in page["results"]]) == (3, ["Ana loves pottery."])
    assert memory.list_memories("nobody")["results"] == []

    in_may = memory.list_memories(CAROLINE, start_date=datetime(2023, 5, 1, tzinfo=UTC), end_date="2023-05-31T00:00:00Z")
    assert [m["text"] for m in in_may["results"]] == ["Caroline moved to Boston."]
    dinner = extracted_memories(tenant, DINNER, user_id=CAROLINE, conversation_id="later")[-1]
    from_later = memory.list_memories(CAROLINE, conversation_ids=["later"])["results"]
    assert [m["memory_id"] for m in from_later] == [str(dinner.memory_id)]
    assert memory.list_memories(CAROLINE, conversation_ids=["said", "later"])["count"] == 4


def test_the_user_search_with_memories_ranks_a_memory_beside_the_turn_it_was_read_from(memory: MemoryClient, tenant: Any) -> None:
    (boston,) = extracted_memories(tenant, BOSTON, user_id=CAROLINE)
    source = str(boston.message_ids[0])

    found = memory.search_user_with_memories(CAROLINE, "Where does Caroline live? Boston", mode="keyword", top_k=5)
    filtered = asyncio.run(
        memory.asearch_user_with_memories(CAROLINE, "Boston", mode="keyword", filters={"conversation_id": ["elsewhere"]})
    )
    plain = memory.search_user(CAROLINE, "Where does Caroline live? Boston", mode="keyword", top_k=5)

    assert found["memories_considered"] == 1
    memories = [hit for hit in found["results"] if hit["kind"] == "memory"]
    assert [(hit["memory_id"], hit["message_ids"]) for hit in memories] == [(str(boston.memory_id), [source])]
    turn = next(hit for hit in found["results"] if hit["kind"] == "turn")
    assert (turn["message_id"], turn["memory_ids"]) == (source, [str(boston.memory_id)])
    assert (filtered["results"], filtered["memories_considered"]) == ([], 0)
    assert "kind" not in plain["results"][0]
    memory.delete_memory(CAROLINE, str(boston.memory_id))
    past = memory.search_user_with_memories(CAROLINE, "Boston", mode="keyword", include_past_memories=True)
    assert [hit["valid_to"] is not None for hit in past["results"] if hit["kind"] == "memory"] == [True]
    assert [hit for hit in memory.search_user_with_memories(CAROLINE, "Boston")["results"] if hit["kind"] == "memory"] == []


def test_an_extracted_memory_is_read_with_its_history_corrected_and_taken_back(memory: MemoryClient, tenant: Any) -> None:
    (boston,) = extracted_memories(tenant, BOSTON, user_id=CAROLINE)
    memory_id = str(boston.memory_id)

    read = memory.get_user_memory(CAROLINE, memory_id)
    assert read["text"] == "Caroline lives in Boston."
    assert [(change["action"], change["previous_text"], change["model"]) for change in read["history"]] == [
        ("add", None, "scripted-model")
    ]
    assert memory.get_user_memory(CAROLINE, uuid.uuid4()) is None
    assert memory.get_user_memory(CAROLINE, "not-a-uuid") is None
    assert memory.get_user_memory("someone-else", memory_id) is None

    corrected = memory.correct_memory(
        CAROLINE, boston.memory_id, text="Caroline lives in Cambridge.", valid_from=date(2023, 5, 1)
    )
    assert (corrected["text"], corrected["model"]) == ("Caroline lives in Cambridge.", "api")
    assert corrected["valid_from"].startswith("2023-05-01")
    assert [(change["action"], change["previous_text"]) for change in corrected["history"]] == [
        ("update", "Caroline lives in Boston."),
        ("add", None),
    ]
    ended = memory.correct_memory(CAROLINE, memory_id, valid_to=datetime(2024, 1, 1, tzinfo=UTC))
    assert (ended["current"], ended["valid_to"][:10]) == (False, "2024-01-01")
    assert memory.correct_memory(CAROLINE, memory_id, valid_to=None)["current"] is True

    memory.delete_memory(CAROLINE, memory_id)
    memory.delete_memory(CAROLINE, uuid.uuid4())
    assert memory.list_memories(CAROLINE)["count"] == 0
    past = memory.list_memories(CAROLINE, include_past=True)["results"]
    assert [(m["memory_id"], m["current"]) for m in past] == [(memory_id, False)]
    assert memory.get_user_memory(CAROLINE, memory_id)["history"][0]["action"] == "delete"

    assert memory.erase_user(CAROLINE)["memories_erased"] == 1
    assert memory.get_user_memory(CAROLINE, memory_id) is None


def test_a_correction_the_service_refuses_is_an_error_and_an_empty_one_is_not_sent(memory: MemoryClient, tenant: Any) -> None:
    (boston,) = extracted_memories(tenant, BOSTON, user_id=CAROLINE)

    with pytest.raises(BadRequest) as refused:
        memory.correct_memory(CAROLINE, boston.memory_id, kind="rumour")  # type: ignore[arg-type]
    assert "kind" in str(refused.value.details)
    with pytest.raises(BadRequest) as naive:
        memory.correct_memory(CAROLINE, boston.memory_id, valid_to=datetime(2024, 1, 1))
    assert "offset" in naive.value.message
    with pytest.raises(NotFound):
        memory.correct_memory(CAROLINE, uuid.uuid4(), text="Caroline lives in Paris.")
    with pytest.raises(ValueError, match="Nothing to correct"):
        memory.correct_memory(CAROLINE, boston.memory_id)
    assert memory.get_user_memory(CAROLINE, boston.memory_id)["text"] == "Caroline lives in Boston."


def test_another_tenants_key_reaches_none_of_the_memories(service: LiveService, tenant: Any, other_tenant: Any) -> None:
    (boston,) = extracted_memories(tenant, BOSTON, user_id=CAROLINE)
    _, other_key = tenant_services.api_key_create(tenant=other_tenant, name="other")

    with service.client(api_key=other_key) as other:
        assert other.list_memories(CAROLINE)["count"] == 0
        assert other.get_user_memory(CAROLINE, boston.memory_id) is None
        with pytest.raises(NotFound):
            other.correct_memory(CAROLINE, boston.memory_id, text="Caroline lives in Paris.")
        other.delete_memory(CAROLINE, boston.memory_id)
    with service.client() as own:
        assert own.get_user_memory(CAROLINE, boston.memory_id)["current"] is True


def test_the_async_memory_methods_answer_as_the_sync_ones(memory: MemoryClient, tenant: Any) -> None:
    boston, pottery = extracted_memories(tenant, BOSTON, POTTERY, user_id=CAROLINE)

    async def session() -> tuple:
        found = await memory.alist_memories(CAROLINE, query="pottery", kind="preference")
        read = await memory.aget_user_memory(CAROLINE, boston.memory_id)
        missing = await memory.aget_user_memory(CAROLINE, uuid.uuid4())
        corrected = await memory.acorrect_memory(CAROLINE, boston.memory_id, confidence=0.5)
        await memory.adelete_memory(CAROLINE, pottery.memory_id)
        left = await memory.alist_memories(CAROLINE)
        await memory.aclose()
        return found, read, missing, corrected, left

    found, read, missing, corrected, left = asyncio.run(session())
    assert [m["text"] for m in found["results"]] == ["Ana loves pottery."]
    assert read["history"][0]["action"] == "add"
    assert missing is None
    assert corrected["confidence"] == 0.5
    assert [m["memory_id"] for m in left["results"]] == [str(boston.memory_id)]


def test_a_user_is_erased_everywhere(memory: MemoryClient) -> None:
    memory.append("ana-1", [{"role": "user", "content": "hi"}], user_id="ana")
    memory.set_fact("ana", "city", "Madrid")
    erased = memory.erase_user("ana")
    assert erased["user_id"] == "ana"
    assert erased["conversations_erased"] == 1
    assert erased["facts_erased"] >= 1
    assert memory.get_conversation("ana-1") is None
    assert memory.list_facts("ana")["facts"] == []


def test_the_api_root_and_status_answer(memory: MemoryClient) -> None:
    root = memory.api_root()
    assert root["version"] == "v1"
    assert root["conversations"].endswith("/api/v1/conversations/")
    status = memory.status()
    assert status["scope"] == "tenant"
    assert status["database"]["ok"] is True


def test_the_async_methods_answer_as_the_sync_ones(memory: MemoryClient) -> None:
    async def session() -> tuple:
        await memory.acreate_conversation("async-1", user_id="ana")
        await memory.aappend_message("async-1", "user", "hello")
        await memory.aput_memory("async-1", messages=["x"])
        await memory.aset_fact("ana", "mood", "good")
        await memory.aset_facts("ana", {"tea": "green"})
        page = await memory.alist_conversations(user_id="ana")
        updated = await memory.aupdate_conversation("async-1", agent_id="helper")
        fact = await memory.aget_fact("ana", "mood")
        facts = await memory.alist_facts("ana")
        history = await memory.afact_history("ana", "mood")
        everything = await memory.auser_fact_history("ana")
        await memory.adelete_fact("ana", "mood")
        memory_document = await memory.aget_memory("async-1")
        listed = await memory.amessages("async-1")
        one = await memory.aget_message("async-1", listed[0]["id"])
        summaries = await memory.asummaries("async-1")
        root = await memory.aapi_root()
        erased = await memory.aerase_conversation("async-1")
        user = await memory.aerase_user("ana")
        missing = await memory.aget_conversation("async-1")
        await memory.aclose()
        return page, updated, fact, facts, history, everything, memory_document, one, summaries, root, erased, user, missing

    page, updated, fact, facts, history, everything, document, one, summaries, root, erased, user, missing = asyncio.run(
        session()
    )
    assert page["results"][0]["conversation_id"] == "async-1"
    assert updated["agent_id"] == "helper"
    assert fact["value"] == "good"
    assert len(facts["facts"]) == 2
    assert history["count"] == 1
    assert everything["count"] == 2
    assert document["messages"] == ["x"]
    assert one["content"] == "hello"
    assert summaries == []
    assert root["version"] == "v1"
    assert erased["conversation_id"] == "async-1"
    assert user["user_id"] == "ana"
    assert missing is None


def test_the_context_of_a_conversation_that_never_existed_is_not_found(memory: MemoryClient) -> None:
    with pytest.raises(NotFound) as raised:
        memory.context("never-existed", query="Any bars near Sol?")
    with pytest.raises(NotFound) as raised_async:
        asyncio.run(memory.acontext("never-existed", query="Any bars near Sol?", use_memory=True))

    assert (raised.value.code, raised_async.value.code) == ("not_found", "not_found")
    assert memory.get_conversation("never-existed") is None


def test_the_context_of_a_conversation_without_messages_is_the_query_alone(memory: MemoryClient) -> None:
    memory.create_conversation("just-created")

    context = memory.context("just-created", query="Any bars near Sol?")

    assert context["messages"] == [{"role": "user", "content": "Any bars near Sol?"}]


# --- errors -----------------------------------------------------------------------------------------


def test_each_error_is_the_subclass_of_its_status_with_the_apis_code(service: LiveService, memory: MemoryClient) -> None:
    with pytest.raises(BadRequest) as bad:
        memory.append("errors", [{"role": "robot", "content": "beep"}])
    assert (bad.value.status, bad.value.code) == (400, "validation_error")
    assert "role" in str(bad.value.details)

    with pytest.raises(BadRequest) as limit:
        memory.set_fact("ana", "k", "")
    assert limit.value.status == 400

    with service.client(api_key="nope.not-a-key") as stranger, pytest.raises(Unauthorized) as unauthorized:
        stranger.list_conversations()
    assert unauthorized.value.code == "authentication_failed"

    with pytest.raises(PayloadTooLarge) as too_large:
        memory.put_memory("errors", messages=["x" * (9 * 1024 * 1024)])
    assert too_large.value.code == "payload_too_large"
    assert too_large.value.details["limit"] > 0

    for error in (bad.value, unauthorized.value, too_large.value):
        assert isinstance(error, MemoryServiceError)


def raise_rate_limited() -> None:
    raise RateLimited(429, "throttled", "Slow down.", {"limit": 10}, 7.0)


def test_an_error_survives_a_deep_copy_and_a_trip_to_another_process() -> None:
    error = RateLimited(429, "throttled", "Slow down.", {"limit": 10}, 7.0)
    copied = copy.deepcopy(error)
    assert type(copied) is RateLimited
    assert (copied.status, copied.code, copied.message, copied.details, copied.retry_after) == (
        429, "throttled", "Slow down.", {"limit": 10}, 7.0,
    )  # fmt: skip
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork")) as pool:
        with pytest.raises(RateLimited) as raised:
            pool.submit(raise_rate_limited).result(timeout=60)
    assert raised.value.retry_after == 7.0
    assert raised.value.details == {"limit": 10}


def test_an_unreachable_service_is_unreachable() -> None:
    with MemoryClient(f"http://127.0.0.1:{free_port()}", "key.secret", retries=1, timeout=1) as client:
        with pytest.raises(Unreachable) as raised:
            client.list_conversations()
    assert raised.value.status is None
    assert raised.value.code == "unreachable"


def test_the_old_names_still_work() -> None:
    assert issubclass(NotFound, MemoryServiceError)
    assert memory_client.MemoryServiceError is MemoryServiceError
    assert memory_client.__version__ == "1.0.0"


# --- ids refused before any request -------------------------------------------------------------------


def refusing_client() -> tuple[MemoryClient, list[httpx.Request]]:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(500)

    return MemoryClient("http://memory.invalid", "key.secret", transport=httpx.MockTransport(answer), retries=0), sent


@pytest.mark.parametrize(
    "conversation_id", ["a/b", "has spaces", "-starts-with-a-symbol", "x" * 201, "", "trailing\n", "café", "..", "a?b"]
)
def test_a_conversation_id_the_service_refuses_is_a_value_error_before_any_request(conversation_id: str) -> None:
    client, sent = refusing_client()
    calls = [
        lambda: client.append(conversation_id, [{"role": "user", "content": "hi"}]),
        lambda: client.window(conversation_id),
        lambda: client.messages(conversation_id),
        lambda: client.get_conversation(conversation_id),
        lambda: client.create_conversation(conversation_id),
        lambda: client.erase_conversation(conversation_id),
        lambda: client.put_memory(conversation_id, messages=[]),
        lambda: client.search(conversation_id, "q"),
        lambda: client.chat(conversation_id, "hi"),
        lambda: client.latest_checkpoint(conversation_id),
        lambda: asyncio.run(client.aappend(conversation_id, [{"role": "user", "content": "hi"}])),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="letters, digits and . _ @ = \\+ -"):
            call()
    assert sent == []


def test_the_longest_allowed_conversation_id_passes_the_check() -> None:
    assert memory_client.check_conversation_id("A" + "b.c_d@e=f+g-" * 15) == "A" + "b.c_d@e=f+g-" * 15


@pytest.mark.parametrize("user_id", ["a/b", "", " ", ".", "..", "half \ud800 pair"])
def test_a_user_id_no_url_segment_can_carry_is_a_value_error(user_id: str) -> None:
    client, sent = refusing_client()
    for call in (
        lambda: client.list_facts(user_id),
        lambda: client.erase_user(user_id),
        lambda: client.search_user(user_id, "q"),
        lambda: client.list_memories(user_id),
        lambda: client.get_user_memory(user_id, str(uuid.uuid4())),
        lambda: client.delete_memory(user_id, str(uuid.uuid4())),
    ):
        with pytest.raises(ValueError, match="user id"):
            call()
    assert sent == []


@pytest.mark.parametrize("memory_id", ["a/b", "..", "", "\udc00"])
def test_a_memory_id_no_url_segment_can_carry_is_a_value_error(memory_id: str) -> None:
    client, sent = refusing_client()
    for call in (
        lambda: client.get_user_memory("ana", memory_id),
        lambda: client.correct_memory("ana", memory_id, text="x"),
        lambda: client.delete_memory("ana", memory_id),
    ):
        with pytest.raises(ValueError, match="memory id"):
            call()
    assert sent == []


@pytest.mark.parametrize("key", ["a/b", "history", " history ", "..", "", "city \ud800"])
def test_a_fact_key_no_url_segment_can_carry_is_a_value_error(key: str) -> None:
    client, sent = refusing_client()
    with pytest.raises(ValueError, match="fact key"):
        client.set_fact("ana", key, "v")
    assert sent == []

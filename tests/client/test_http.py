"""MemoryClient against the live service: errors as exceptions with the service's codes, empty
answers for what does not exist, batches past the service's limit, and retries across a restart."""

import asyncio
import threading
import time
import uuid

import pytest

import memory_client.http
from conversations.services import message_ids
from memory_client import MemoryClient, MemoryServiceError, NotFound
from memory_client.http import MAX_BATCH
from memory_client.langgraph import ServiceCheckpointSaver
from tests.client.conftest import LiveService
from tests.faults import free_port


def test_an_invalid_api_key_raises_the_services_error_code(service: LiveService) -> None:
    with service.client(api_key="nope.not-a-key") as client, pytest.raises(MemoryServiceError) as raised:
        client.status()
    assert raised.value.status == 401
    assert raised.value.code == "authentication_failed"
    assert raised.value.message


def test_what_does_not_exist_reads_as_empty(memory: MemoryClient) -> None:
    missing = f"missing-{uuid.uuid4()}"
    assert memory.window(missing) == []
    assert memory.messages(missing) == []
    assert memory.list_checkpoints(missing) == []
    assert memory.latest_checkpoint(missing) is None
    assert memory.get_checkpoint(missing, "1ef0") is None
    memory.clear(missing)
    memory.delete_checkpoints(missing)
    saver = ServiceCheckpointSaver(memory)
    assert saver.get_tuple({"configurable": {"thread_id": missing, "checkpoint_ns": ""}}) is None
    assert list(saver.list({"configurable": {"thread_id": missing}})) == []
    saver.delete_thread(missing)


def test_a_wrong_base_url_is_an_error_not_an_empty_conversation(service: LiveService) -> None:
    with MemoryClient(f"{service.url}/elsewhere", service.api_key) as client, pytest.raises(NotFound) as raised:
        client.window("session-1")
    assert raised.value.code == "http_404"


def test_a_bad_request_names_the_rule_it_broke(memory: MemoryClient) -> None:
    with pytest.raises(MemoryServiceError) as raised:
        memory.append("session-1", [{"role": "user", "content": "hi", "metadata": "not an object"}])
    assert raised.value.status == 400
    assert raised.value.code == "validation_error"
    assert "metadata" in raised.value.message


def test_a_conversation_id_the_service_would_refuse_is_refused_before_sending(memory: MemoryClient) -> None:
    with pytest.raises(ValueError, match="conversation id"):
        memory.append("has spaces", [{"role": "user", "content": "hi"}])


def test_an_append_past_the_batch_limit_is_sent_in_order_in_several_batches(memory: MemoryClient) -> None:
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i}"} for i in range(2 * MAX_BATCH + 30)]
    stored = memory.append("long-session", messages, user_id="u-1", agent_id="travel")
    assert [message["content"] for message in stored] == [message["content"] for message in messages]
    seqs = [message["seq"] for message in stored]
    assert all(earlier < later for earlier, later in zip(seqs, seqs[1:], strict=False))
    listed = memory.messages("long-session", limit=500)
    assert [message["id"] for message in listed] == [message["id"] for message in stored]


def test_resending_the_same_ids_stores_each_message_once(memory: MemoryClient) -> None:
    batch = [{"id": str(uuid.uuid4()), "role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]
    batch[1]["id"] = str(uuid.uuid4())
    first = memory.append("resend", batch)
    again = memory.append("resend", batch)
    assert [message["seq"] for message in again] == [message["seq"] for message in first]
    assert len(memory.messages("resend")) == 2


def test_an_unreachable_service_raises_after_the_retries() -> None:
    with MemoryClient(f"http://127.0.0.1:{free_port()}", "key.secret", retries=1, timeout=1) as client:
        with pytest.raises(MemoryServiceError) as raised:
            client.status()
    assert raised.value.status is None
    assert raised.value.code == "unreachable"


def test_a_call_made_while_the_web_server_is_down_succeeds_once_it_is_back(service: LiveService) -> None:
    with service.client(retries=12) as client:
        client.append("restart", [{"role": "user", "content": "before"}])
        service.web.kill()
        restart = threading.Thread(target=service.web.start)
        restart.start()
        try:
            stored = client.append("restart", [{"role": "assistant", "content": "after"}])
        finally:
            restart.join(timeout=120)
        assert [message["content"] for message in stored] == ["after"]
        assert [message["content"] for message in client.messages("restart")] == ["before", "after"]


def test_status_and_context_answer_what_the_service_reports(memory: MemoryClient) -> None:
    assert memory.status()["database"]["ok"] is True
    memory.append(
        "context",
        [{"role": "user", "content": "Find me bars near Sol."}, {"role": "assistant", "content": "Three bars."}],
    )
    context = memory.context("context", query="Which has live music?", format="openai")
    assert context["conversation_id"] == "context"
    assert context["messages"][-1] == {"role": "user", "content": "Which has live music?"}
    assert [message["content"] for message in context["messages"]][-3:-1] == ["Find me bars near Sol.", "Three bars."]


def test_the_async_methods_work_across_event_loops(memory: MemoryClient) -> None:
    async def first_loop() -> list[dict]:
        await memory.aappend("async", [{"role": "user", "content": "hello"}])
        return await memory.amessages("async")

    async def second_loop() -> tuple[dict, dict, list[dict]]:
        status = await memory.astatus()
        context = await memory.acontext("async", query="again")
        await memory.aclear("async")
        return status, context, await memory.awindow("async", format="openai")

    assert [message["content"] for message in asyncio.run(first_loop())] == ["hello"]
    status, context, window = asyncio.run(second_loop())
    assert status["cache"]["ok"] is True
    assert context["messages"][-1]["content"] == "again"
    assert window == []
    asyncio.run(memory.aclose())


def test_the_ids_the_client_makes_are_uuid7(memory: MemoryClient) -> None:
    stored = memory.append("c-stamped", [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])

    assert [uuid.UUID(message["id"]).version for message in stored] == [7, 7]


def fast_clock_uuid7() -> str:
    """A UUIDv7 from a clock an hour ahead of the service's."""
    return message_ids.new_message_id(at_ms=time.time_ns() // 1_000_000 + 3_600_000)


def test_a_client_whose_clock_is_ahead_falls_back_to_uuid4_ids(memory: MemoryClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory_client.http, "uuid7", fast_clock_uuid7)

    first = memory.append("c-fast", [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}])
    second = asyncio.run(memory.aappend("c-fast", [{"role": "assistant", "content": "three"}]))

    assert [uuid.UUID(message["id"]).version for message in first + second] == [4, 4, 4]
    assert [message["seq"] for message in memory.messages("c-fast")] == [message["seq"] for message in first + second]


def test_an_id_the_caller_gave_stamped_ahead_is_refused_not_replaced(memory: MemoryClient) -> None:
    ahead = fast_clock_uuid7()

    with pytest.raises(MemoryServiceError) as refused:
        memory.append("c-given", [{"id": ahead, "role": "user", "content": "x"}])

    assert (refused.value.status, refused.value.code, refused.value.details["id"]) == (400, "clock_skew", ahead)
    assert memory.messages("c-given") == []

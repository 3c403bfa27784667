"""The MCP tools through the SDK's own client against the live service (gunicorn and a Celery worker):
what a tool writes is stored as the REST API stores it, and a refused call is a tool error carrying
the API's error code, having written nothing."""

import asyncio
import uuid
from typing import Any

from mcp.types import CallToolResult

from conversations.models import Conversation, Message
from extraction.models import Memory
from facts.models import UserFact
from search.models import MessageEmbedding
from tests.client.conftest import LiveService
from tests.conftest import wait_for_rows
from tests.factories import extracted_memories
from tests.mcp_server.conftest import mcp_session

TOOLS = {
    "append_messages",
    "get_context",
    "get_window",
    "search_memory",
    "get_facts",
    "set_fact",
    "delete_fact",
    "get_memories",
    "get_memory",
    "delete_memory",
}


def calls(service: LiveService, *steps: tuple[str, dict[str, Any]]) -> list[CallToolResult]:
    """Call the tools in order in one MCP session; their results."""

    async def run() -> list[CallToolResult]:
        async with mcp_session(service) as session:
            return [await session.call_tool(name, arguments) for name, arguments in steps]

    return asyncio.run(run())


def answer(result: CallToolResult) -> dict[str, Any]:
    assert not result.isError, result.content
    assert result.structuredContent is not None
    return result.structuredContent


def error(result: CallToolResult) -> dict[str, Any]:
    assert result.isError
    assert result.structuredContent is not None
    assert result.structuredContent["error"]["code"] in result.content[0].text  # the model reads the code too
    return result.structuredContent["error"]


def test_every_tool_is_listed_with_an_input_schema_that_describes_it(service: LiveService) -> None:
    async def run() -> Any:
        async with mcp_session(service) as session:
            return (await session.list_tools()).tools

    tools = {tool.name: tool for tool in asyncio.run(run())}
    assert set(tools) == TOOLS
    for tool in tools.values():
        assert tool.description
        assert tool.inputSchema["type"] == "object"
        assert tool.inputSchema["required"]
    assert set(tools["append_messages"].inputSchema["required"]) == {"conversation_id", "messages"}
    assert tools["append_messages"].inputSchema["properties"]["messages"]["items"]["required"] == ["role", "content"]
    read_only = {name for name, tool in tools.items() if tool.annotations and tool.annotations.readOnlyHint}
    assert read_only == {"get_context", "get_window", "search_memory", "get_facts", "get_memories", "get_memory"}
    assert tools["delete_fact"].annotations.destructiveHint is True
    assert tools["delete_memory"].annotations.destructiveHint is True


def test_an_appended_turn_is_stored_and_comes_back_in_the_context(service: LiveService, tenant: Any) -> None:
    question, reply = str(uuid.uuid4()), str(uuid.uuid4())
    turn = [
        {"id": question, "role": "user", "content": "Which city do I live in?"},
        {"id": reply, "role": "assistant", "content": "You told me Lyon."},
    ]
    appended, context = calls(
        service,
        ("append_messages", {"conversation_id": "trip", "messages": turn, "user_id": "ada"}),
        ("get_context", {"conversation_id": "trip", "query": "And the weather there?", "max_tokens": 500}),
    )
    stored = answer(appended)
    assert stored["created"] is True
    assert [message["id"] for message in stored["messages"]] == [question, reply]
    assert all(message["seq"] for message in stored["messages"])
    figures = answer(context)
    assert figures["messages"] == [
        {"role": "user", "content": "Which city do I live in?"},
        {"role": "assistant", "content": "You told me Lyon."},
        {"role": "user", "content": "And the weather there?"},
    ]
    assert figures["total_turns"] == 1
    assert figures["max_tokens"] == 500
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="trip").user_id == "ada"
    wait_for_rows(Message, tenant, 2, conversation__conversation_id="trip")  # the worker persists the write


def test_appending_again_with_the_same_ids_stores_each_message_once(service: LiveService, tenant: Any) -> None:
    message = {"id": str(uuid.uuid4()), "role": "user", "content": "once"}
    first, again, window = calls(
        service,
        ("append_messages", {"conversation_id": "retry", "messages": [message]}),
        ("append_messages", {"conversation_id": "retry", "messages": [message]}),
        ("get_window", {"conversation_id": "retry"}),
    )
    assert answer(first)["created"] is True
    assert answer(again)["created"] is False
    assert answer(again)["messages"][0]["seq"] == answer(first)["messages"][0]["seq"]
    assert answer(window)["messages"] == [{"role": "user", "content": "once"}]
    wait_for_rows(Message, tenant, 1, conversation__conversation_id="retry")


def test_a_fact_is_set_read_and_deleted(service: LiveService, tenant: Any) -> None:
    created, changed, read, deleted, after = calls(
        service,
        ("set_fact", {"user_id": "ada", "key": "city", "value": "Paris"}),
        ("set_fact", {"user_id": "ada", "key": "city", "value": "Lyon"}),
        ("get_facts", {"user_id": "ada"}),
        ("delete_fact", {"user_id": "ada", "key": "city"}),
        ("get_facts", {"user_id": "ada"}),
    )
    assert answer(created)["created"] == ["city"]
    assert answer(changed)["created"] == []
    assert answer(changed)["facts"][0]["value"] == "Lyon"
    facts = answer(read)
    assert [(fact["key"], fact["value"]) for fact in facts["facts"]] == [("city", "Lyon")]
    assert facts["total_tokens"] == facts["facts"][0]["token_count"] > 0
    assert answer(deleted) == {"user_id": "ada", "key": "city", "deleted": True}
    assert answer(after)["facts"] == []
    assert not UserFact.objects.for_tenant(tenant).exists()


BOSTON = {"op": "add", "kind": "fact", "subject": "Ada", "text": "Ada lives in Boston."}
POTTERY = {"op": "add", "kind": "preference", "subject": "Ana", "text": "Ana loves pottery."}
MOVE = {"op": "add", "kind": "event", "subject": "Ada", "text": "Ada moved to Boston.", "valid_from": "2023-05-01"}


def test_the_memories_extracted_about_a_user_are_listed_searched_and_read_with_their_history(
    service: LiveService, tenant: Any
) -> None:
    boston, pottery, move = extracted_memories(tenant, BOSTON, POTTERY, MOVE, user_id="ada")

    listed, searched, events, before, in_may, read_there, elsewhere, one, missing, not_an_id = calls(
        service,
        ("get_memories", {"user_id": "ada"}),
        ("get_memories", {"user_id": "ada", "query": "what does Ana like to do", "top_k": 1}),
        ("get_memories", {"user_id": "ada", "kind": "event", "subject": "ada"}),
        ("get_memories", {"user_id": "ada", "valid_at": "2023-04-01T00:00:00Z", "kind": "event"}),
        ("get_memories", {"user_id": "ada", "start_date": "2023-05-01T00:00:00Z", "end_date": "2023-05-31T00:00:00Z"}),
        ("get_memories", {"user_id": "ada", "conversation_ids": ["said"]}),
        ("get_memories", {"user_id": "ada", "conversation_ids": ["elsewhere"]}),
        ("get_memory", {"user_id": "ada", "memory_id": str(boston.memory_id)}),
        ("get_memory", {"user_id": "ada", "memory_id": str(uuid.uuid4())}),
        ("get_memory", {"user_id": "ada", "memory_id": "boston"}),
    )
    everything = answer(listed)
    assert everything["extraction"]["reason"] == "disabled"
    assert everything["count"] == 3
    assert [memory["memory_id"] for memory in everything["results"]] == [
        str(move.memory_id),
        str(pottery.memory_id),
        str(boston.memory_id),
    ]
    assert everything["results"][0]["conversation_ids"] == ["said"]
    assert [(memory["text"], memory["score"] > 0) for memory in answer(searched)["results"]] == [("Ana loves pottery.", True)]
    assert [memory["text"] for memory in answer(events)["results"]] == ["Ada moved to Boston."]
    assert answer(before)["results"] == []
    assert [memory["text"] for memory in answer(in_may)["results"]] == ["Ada moved to Boston."]
    assert (answer(read_there)["count"], answer(elsewhere)["count"]) == (3, 0)
    read = answer(one)
    assert read["text"] == "Ada lives in Boston."
    assert [(change["action"], change["model"]) for change in read["history"]] == [("add", "scripted-model")]
    assert error(missing)["code"] == "not_found"
    assert error(not_an_id)["code"] == "not_found"


def test_a_memory_deleted_by_the_model_is_taken_back_and_keeps_its_history(service: LiveService, tenant: Any) -> None:
    boston, pottery = extracted_memories(tenant, BOSTON, POTTERY, user_id="ada")

    deleted, listed, past, read, unknown = calls(
        service,
        ("delete_memory", {"user_id": "ada", "memory_id": str(boston.memory_id)}),
        ("get_memories", {"user_id": "ada"}),
        ("get_memories", {"user_id": "ada", "include_past": True}),
        ("get_memory", {"user_id": "ada", "memory_id": str(boston.memory_id)}),
        ("delete_memory", {"user_id": "ada", "memory_id": str(uuid.uuid4())}),
    )
    assert answer(deleted) == {"user_id": "ada", "memory_id": str(boston.memory_id), "deleted": True}
    assert [memory["text"] for memory in answer(listed)["results"]] == ["Ana loves pottery."]
    assert {(memory["text"], memory["current"]) for memory in answer(past)["results"]} == {
        ("Ana loves pottery.", True),
        ("Ada lives in Boston.", False),
    }
    assert [(change["action"], change["model"]) for change in answer(read)["history"]] == [
        ("delete", "mcp"),
        ("add", "scripted-model"),
    ]
    assert error(unknown)["code"] == "not_found"
    assert Memory.objects.for_tenant(tenant).get(pk=pottery.pk).current


def test_bad_memory_arguments_are_tool_errors_naming_them(service: LiveService, tenant: Any) -> None:
    (boston,) = extracted_memories(tenant, BOSTON, user_id="ada")

    kind, valid_at, top_k, unknown, no_user, correction = calls(
        service,
        ("get_memories", {"user_id": "ada", "kind": "rumour"}),
        ("get_memories", {"user_id": "ada", "valid_at": "yesterday"}),
        ("get_memories", {"user_id": "ada", "query": "Boston", "top_k": 0}),
        ("get_memories", {"user_id": "ada", "text": "Boston"}),
        ("get_memory", {"memory_id": str(boston.memory_id)}),
        ("delete_memory", {"user_id": "ada", "memory_id": str(boston.memory_id), "text": "Ada lives in Paris."}),
    )
    for refused, named in ((kind, "kind"), (valid_at, "valid_at"), (top_k, "top_k"), (unknown, "text"), (no_user, "user_id")):
        assert error(refused)["code"] == "validation_error"
        assert named in error(refused)["details"]
    assert error(correction)["code"] == "validation_error"
    assert Memory.objects.for_tenant(tenant).get().current


def test_search_finds_an_appended_message(service: LiveService, tenant: Any) -> None:
    messages = [
        {"role": "user", "content": "My sister's wedding is in Porto next June."},
        {"role": "assistant", "content": "Congratulations! Shall I look at flights?"},
        {"role": "user", "content": "Not yet, first the hotel budget."},
    ]
    (appended,) = calls(service, ("append_messages", {"conversation_id": "plans", "messages": messages, "user_id": "ada"}))
    answer(appended)
    wait_for_rows(Message, tenant, 3, conversation__conversation_id="plans")  # keyword search reads persisted rows
    by_user, by_conversation = calls(
        service,
        ("search_memory", {"query": "wedding in Porto", "user_id": "ada", "mode": "keyword"}),
        ("search_memory", {"query": "wedding in Porto", "conversation_id": "plans", "mode": "keyword", "top_k": 1}),
    )
    for found in (answer(by_user), answer(by_conversation)):
        assert found["results"][0]["content"] == "My sister's wedding is in Porto next June."
        assert found["results"][0]["conversation_id"] == "plans"
    assert answer(by_user)["scope"] == "user"
    assert len(answer(by_conversation)["results"]) == 1
    by_role, elsewhere = calls(
        service,
        ("search_memory", {"query": "Porto flights", "user_id": "ada", "mode": "keyword", "role": ["assistant"]}),
        ("search_memory", {"query": "Porto", "user_id": "ada", "mode": "keyword", "conversation_ids": ["another"]}),
    )
    assert [hit["role"] for hit in answer(by_role)["results"]] == ["assistant"]
    assert answer(elsewhere)["results"] == []


def test_search_finds_an_appended_message_by_meaning_once_it_is_embedded(
    service: LiveService, tenant: Any, derived_worker: Any
) -> None:
    messages = [
        {"role": "user", "content": "I adopted a golden retriever puppy called Rex."},
        {"role": "assistant", "content": "Congratulations! Puppies are a lot of work."},
    ]
    (appended,) = calls(service, ("append_messages", {"conversation_id": "pets", "messages": messages, "user_id": "ada"}))
    answer(appended)
    wait_for_rows(MessageEmbedding, tenant, 2, timeout=90)
    (found,) = calls(
        service,
        ("search_memory", {"query": "Which dog did I get?", "user_id": "ada", "mode": "semantic", "min_similarity": 0.3}),
    )
    assert answer(found)["results"][0]["content"] == "I adopted a golden retriever puppy called Rex."
    assert answer(found)["query_embedding_dim"] == 384


def test_bad_input_is_a_tool_error_with_the_api_code_and_writes_nothing(service: LiveService, tenant: Any) -> None:
    valid = {"role": "user", "content": "this one is fine"}
    bad_role, too_long, unknown_argument, bad_id, not_text, no_messages, unknown_tool = calls(
        service,
        ("append_messages", {"conversation_id": "careful", "messages": [valid, {"role": "robot", "content": "x"}]}),
        ("append_messages", {"conversation_id": "careful", "messages": [valid, {"role": "user", "content": "x" * 200_001}]}),
        ("append_messages", {"conversation_id": "careful", "messages": [valid], "owner": "ada"}),
        ("append_messages", {"conversation_id": "not an id!", "messages": [valid]}),
        ("set_fact", {"user_id": "ada", "key": "age", "value": 42}),
        ("append_messages", {"conversation_id": "careful"}),
        ("forget_everything", {}),
    )
    assert error(bad_role)["code"] == "validation_error"
    assert error(bad_role)["status"] == 400
    assert "robot" in error(bad_role)["message"]
    assert error(too_long)["code"] == "limit_exceeded"
    assert error(too_long)["details"]["field"] == "content"
    assert error(unknown_argument)["code"] == "validation_error"
    assert "owner" in error(unknown_argument)["details"]
    assert error(bad_id)["code"] == "validation_error"
    assert "conversation_id" in error(bad_id)["details"]
    assert error(not_text)["code"] == "validation_error"
    assert error(no_messages)["code"] == "validation_error"
    assert error(no_messages)["details"] == {"messages": ["This argument is required."]}
    assert error(unknown_tool)["code"] == "validation_error"
    assert not Conversation.objects.for_tenant(tenant).exists()
    assert not Message.objects.for_tenant(tenant).exists()
    assert not UserFact.objects.for_tenant(tenant).exists()
    (window,) = calls(service, ("get_window", {"conversation_id": "careful"}))
    assert error(window)["code"] == "not_found"


def test_a_budget_too_small_for_the_context_is_the_apis_limit_error(service: LiveService) -> None:
    long_message = {"role": "user", "content": "word " * 400}
    appended, context = calls(
        service,
        ("append_messages", {"conversation_id": "tight", "messages": [long_message]}),
        ("get_context", {"conversation_id": "tight", "system_prompt": "You are helpful. " * 50, "max_tokens": 10}),
    )
    answer(appended)
    refused = error(context)
    assert refused["code"] == "limit_exceeded"
    assert refused["details"]["field"] == "max_tokens"


def test_concurrent_calls_are_each_answered_for_their_own_conversation(service: LiveService, tenant: Any) -> None:
    async def append_and_read(number: int) -> list[dict[str, Any]]:
        async with mcp_session(service) as session:
            conversation = {"conversation_id": f"parallel-{number}"}
            message = {"role": "user", "content": f"message {number}"}
            answer(await session.call_tool("append_messages", {**conversation, "messages": [message]}))
            return answer(await session.call_tool("get_window", conversation))["messages"]

    async def run() -> list[list[dict[str, Any]]]:
        return await asyncio.gather(*(append_and_read(number) for number in range(8)))

    windows = asyncio.run(run())
    assert windows == [[{"role": "user", "content": f"message {number}"}] for number in range(8)]
    wait_for_rows(Message, tenant, 8)

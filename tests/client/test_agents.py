"""ServiceMemoryMiddleware against the live service: real ``create_agent`` agents with a real tool and
a scripted chat model that records what it receives; the service holds the conversation."""

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain.agents import create_agent
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    messages_from_dict,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from memory_client import MemoryClient
from memory_client.agents import ConversationIdMissing, ServiceMemoryMiddleware
from memory_client.messages import to_service
from tests.client.conftest import LiveService
from tests.search.test_search import conversation_of_facts

SYSTEM = "You are a travel agent. Answer in one sentence."
QUESTION = "What is the weather in Madrid?"
WEATHER_CALL = {"name": "weather", "args": {"city": "Madrid"}, "id": "call-madrid", "type": "tool_call"}


@tool
def weather(city: str) -> str:
    """The weather in a city today."""
    return f"Sunny in {city}, 24 C."


class ScriptedChatModel(BaseChatModel):
    """Answers the scripted replies in order and records the messages of every call; streams a reply
    word by word, its tool calls in a last chunk. ``fail_on_call`` makes that call (1-based) raise once."""

    replies: list[AIMessage]
    received: list[list[BaseMessage]] = Field(default_factory=list)
    streamed_chunks: int = 0
    fail_on_call: int | None = None
    failures: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> "ScriptedChatModel":
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self._reply(messages))])

    def _stream(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any
    ) -> Iterator[ChatGenerationChunk]:
        reply = self._reply(messages)
        words = reply.text.split(" ") if reply.text else []
        for index, word in enumerate(words):
            self.streamed_chunks += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content=word if index == 0 else f" {word}"))
        chunks = [
            {"name": call["name"], "args": json.dumps(call["args"]), "id": call["id"], "index": index}
            for index, call in enumerate(reply.tool_calls)
        ]
        if chunks:
            self.streamed_chunks += 1
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))

    def _reply(self, messages: list[BaseMessage]) -> AIMessage:
        self.received.append(list(messages))
        if self.fail_on_call == len(self.received):
            self.fail_on_call = None
            self.failures += 1
            raise ConnectionError("the model provider dropped the connection")
        return self.replies[len(self.received) - 1 - self.failures]


def tool_loop_replies(answer: str = "It is sunny and 24 C in Madrid.") -> list[AIMessage]:
    return [AIMessage(content="", tool_calls=[WEATHER_CALL]), AIMessage(content=answer)]


def agent_of(model: ScriptedChatModel, middleware: ServiceMemoryMiddleware, **options: Any) -> Any:
    return create_agent(model=model, tools=[weather], system_prompt=SYSTEM, middleware=[middleware], **options)


def stored(memory: MemoryClient, conversation_id: str) -> list[BaseMessage]:
    """The conversation as the service gives it back, every message, oldest first."""
    return messages_from_dict(memory.window(conversation_id, limit=500))


def api_key_header(service: LiveService) -> dict[str, str]:
    return {"Authorization": f"Api-Key {service.api_key}"}


def thread(conversation_id: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": conversation_id}}


def test_a_tool_loop_is_stored_once_in_order_and_the_model_gets_the_call_and_its_result(
    service: LiveService, memory: MemoryClient
) -> None:
    model = ScriptedChatModel(replies=tool_loop_replies())
    agent = agent_of(model, ServiceMemoryMiddleware(memory, user_id="u-42", agent_id="travel"))

    result = agent.invoke({"messages": [HumanMessage(QUESTION)]}, thread("madrid"))

    question, call, weather_result, answer = result["messages"]
    assert isinstance(weather_result, ToolMessage)
    assert weather_result.content == "Sunny in Madrid, 24 C."
    assert answer.content == "It is sunny and 24 C in Madrid."
    assert model.received == [
        [SystemMessage(SYSTEM), question],
        [SystemMessage(SYSTEM), question, call, weather_result],
    ]
    assert stored(memory, "madrid") == result["messages"]
    assert [message["role"] for message in memory.messages("madrid")] == ["user", "assistant", "tool", "assistant"]
    owners = httpx.get(f"{service.url}/api/v1/conversations/madrid/", headers=api_key_header(service)).json()
    assert (owners["user_id"], owners["agent_id"]) == ("u-42", "travel")


def test_a_second_agent_in_a_new_process_sees_the_first_turn_only_through_the_service(service: LiveService) -> None:
    with service.client() as first_client:
        first = ScriptedChatModel(replies=tool_loop_replies())
        first_turn = agent_of(first, ServiceMemoryMiddleware(first_client)).invoke(
            {"messages": [HumanMessage(QUESTION)]}, thread("two-turns")
        )["messages"]

    with service.client() as second_client:
        seville = {"name": "weather", "args": {"city": "Seville"}, "id": "call-seville", "type": "tool_call"}
        second = ScriptedChatModel(
            replies=[AIMessage(content="", tool_calls=[seville]), AIMessage(content="Sunny in both: take sunglasses.")]
        )
        second_turn = agent_of(second, ServiceMemoryMiddleware(second_client)).invoke(
            {"messages": [HumanMessage("And in Seville?")]}, thread("two-turns")
        )["messages"]

        assert second.received == [
            [SystemMessage(SYSTEM), *first_turn, second_turn[0]],
            [SystemMessage(SYSTEM), *first_turn, *second_turn[:3]],
        ]
        assert stored(second_client, "two-turns") == [*first_turn, *second_turn]


def test_a_long_conversation_reaches_the_model_as_the_summary_and_the_newest_turns(memory: MemoryClient) -> None:
    earlier: list[BaseMessage] = []
    for turn in range(12):
        earlier += [
            HumanMessage(f"Question {turn}: which museum should I see on day {turn}? " + "I love painting. " * 20, id=f"q{turn}"),
            AIMessage(f"Answer {turn}: the Prado on day {turn}. " + "It is wonderful. " * 20, id=f"a{turn}"),
        ]
    memory.append("long", [to_service(message) for message in earlier])
    model = ScriptedChatModel(replies=[AIMessage(content="The Reina Sofia.")])
    agent = agent_of(model, ServiceMemoryMiddleware(memory, max_tokens=600))

    result = agent.invoke({"messages": [HumanMessage("And on the last day?")]}, thread("long"))

    [received] = model.received
    system, *history, question = received
    assert system.content.startswith(SYSTEM + "\n\nSummary of the earlier conversation (")
    assert "- User: Question " in system.content
    assert question == result["messages"][-2]
    assert 2 <= len(history) < len(earlier)
    assert history == earlier[-len(history) :]  # the newest turns, whole, in order
    assert isinstance(history[0], HumanMessage)
    assert stored(memory, "long") == [*earlier, *result["messages"]]


def test_with_a_checkpointer_the_model_gets_the_services_context_not_the_state_twice(memory: MemoryClient) -> None:
    model = ScriptedChatModel(replies=[*tool_loop_replies(), AIMessage(content="Take sunglasses.")])
    agent = agent_of(model, ServiceMemoryMiddleware(memory), checkpointer=InMemorySaver())

    first_turn = agent.invoke({"messages": [HumanMessage(QUESTION)]}, thread("checkpointed"))["messages"]
    state = agent.invoke({"messages": [HumanMessage("Should I pack anything?")]}, thread("checkpointed"))["messages"]

    assert state[: len(first_turn)] == first_turn
    assert model.received[-1] == [SystemMessage(SYSTEM), *state[:-1]]
    assert stored(memory, "checkpointed") == state
    assert len(memory.messages("checkpointed")) == len(state) == 6


def test_a_checkpointed_turn_resumed_after_a_failed_model_call_is_stored_exactly_once(memory: MemoryClient) -> None:
    model = ScriptedChatModel(replies=tool_loop_replies(), fail_on_call=2)
    agent = agent_of(model, ServiceMemoryMiddleware(memory), checkpointer=InMemorySaver())

    with pytest.raises(ConnectionError):
        agent.invoke({"messages": [HumanMessage(QUESTION)]}, thread("retried"))
    assert [message["role"] for message in memory.messages("retried")] == ["user", "assistant", "tool"]

    result = agent.invoke(None, thread("retried"))

    assert len(model.received) == 3
    assert model.received[2] == model.received[1]  # the retry asks with the same context
    assert stored(memory, "retried") == result["messages"]
    assert [message["role"] for message in memory.messages("retried")] == ["user", "assistant", "tool", "assistant"]


def test_a_run_that_resends_the_same_messages_stores_nothing_twice(memory: MemoryClient) -> None:
    """A caller retrying a whole run without a checkpointer, with its own message ids."""
    replies = [
        AIMessage(content="", tool_calls=[WEATHER_CALL], id="reply-1"),
        AIMessage(content="It is sunny.", id="reply-2"),
    ]
    question = HumanMessage(QUESTION, id="question-1")
    failing = ScriptedChatModel(replies=replies, fail_on_call=2)
    with pytest.raises(ConnectionError):
        agent_of(failing, ServiceMemoryMiddleware(memory)).invoke({"messages": [question]}, thread("rerun"))

    model = ScriptedChatModel(replies=replies)
    result = agent_of(model, ServiceMemoryMiddleware(memory)).invoke({"messages": [question]}, thread("rerun"))

    assert stored(memory, "rerun") == result["messages"]
    assert len(memory.messages("rerun")) == 4


def test_the_async_agent_stores_and_reads_the_same_way(service: LiveService) -> None:
    async def run() -> tuple[ScriptedChatModel, list[BaseMessage], list[BaseMessage]]:
        async with service.client() as client:
            model = ScriptedChatModel(replies=[*tool_loop_replies(), AIMessage(content="Take sunglasses.")])
            middleware = ServiceMemoryMiddleware(client)
            first = await agent_of(model, middleware).ainvoke({"messages": [HumanMessage(QUESTION)]}, thread("async"))
            second = await agent_of(model, middleware).ainvoke(
                {"messages": [HumanMessage("Should I pack anything?")]}, thread("async")
            )
            return model, first["messages"], second["messages"]

    model, first_turn, second_turn = asyncio.run(run())

    assert model.received == [
        [SystemMessage(SYSTEM), first_turn[0]],
        [SystemMessage(SYSTEM), *first_turn[:3]],
        [SystemMessage(SYSTEM), *first_turn, second_turn[0]],
    ]
    with service.client() as client:
        assert stored(client, "async") == [*first_turn, *second_turn]


def test_a_streamed_run_stores_whole_messages_not_chunks(memory: MemoryClient) -> None:
    model = ScriptedChatModel(replies=tool_loop_replies("It is sunny and 24 C in Madrid, take a hat."))
    agent = agent_of(model, ServiceMemoryMiddleware(memory))

    tokens, final = [], None
    for mode, payload in agent.stream(
        {"messages": [HumanMessage(QUESTION)]}, thread("streamed"), stream_mode=["messages", "values"]
    ):
        if mode == "messages" and isinstance(payload[0], AIMessageChunk):
            tokens.append(payload[0].text)
        elif mode == "values":
            final = payload["messages"]

    assert model.streamed_chunks > 5
    assert "".join(tokens) == "It is sunny and 24 C in Madrid, take a hat."
    assert final is not None
    assert final[1].tool_calls == [WEATHER_CALL]
    assert stored(memory, "streamed") == final
    assert memory.messages("streamed")[-1]["content"] == "It is sunny and 24 C in Madrid, take a hat."


def test_async_streaming_stores_the_whole_answer(service: LiveService) -> None:
    async def run() -> list[BaseMessage]:
        async with service.client() as client:
            model = ScriptedChatModel(replies=tool_loop_replies("Sunny all day."))
            final: list[BaseMessage] = []
            async for state in agent_of(model, ServiceMemoryMiddleware(client)).astream(
                {"messages": [HumanMessage(QUESTION)]}, thread("astreamed"), stream_mode="values"
            ):
                final = state["messages"]
            return final

    final = asyncio.run(run())
    with service.client() as client:
        assert stored(client, "astreamed") == final
        assert [message["content"] for message in client.messages("astreamed")][-1] == "Sunny all day."


def test_with_use_memory_the_model_gets_the_users_facts_and_relevant_older_messages(service: LiveService, tenant: Any) -> None:
    conversation_of_facts(tenant, "old-session", user_id="caroline")
    with service.client() as client:
        response = httpx.put(
            f"{service.url}/api/v1/users/caroline/facts/diet/", json={"value": "vegetarian"}, headers=api_key_header(service)
        )
        assert response.status_code == 201, response.text
        model = ScriptedChatModel(replies=[AIMessage(content="Rex, your golden retriever.")])
        middleware = ServiceMemoryMiddleware(client, use_memory=True, top_k=3, user_id="caroline")
        result = agent_of(model, middleware).invoke({"messages": [HumanMessage("What is my puppy called?")]}, thread("today"))

    [[system, question]] = model.received
    assert question == result["messages"][0]
    assert system.content.startswith(SYSTEM + "\n\n")
    assert "Stored user facts:\n- diet: vegetarian" in system.content
    assert "Relevant earlier messages:" in system.content
    assert "his name is Rex" in system.content


def test_a_fixed_conversation_id_needs_no_thread_and_no_conversation_is_an_error(memory: MemoryClient) -> None:
    fixed = ScriptedChatModel(replies=[AIMessage(content="Hello.")])
    agent_of(fixed, ServiceMemoryMiddleware(memory, conversation_id="fixed")).invoke({"messages": [HumanMessage("Hi")]})
    assert [message["content"] for message in memory.messages("fixed")] == ["Hi", "Hello."]

    nowhere = ScriptedChatModel(replies=[AIMessage(content="Hello.")])
    with pytest.raises(ConversationIdMissing, match="thread_id"):
        agent_of(nowhere, ServiceMemoryMiddleware(memory)).invoke({"messages": [HumanMessage("Hi")]})
    assert nowhere.received == []


def test_the_middlewares_system_prompt_replaces_the_agents(memory: MemoryClient) -> None:
    model = ScriptedChatModel(replies=[AIMessage(content="Hola.")])
    middleware = ServiceMemoryMiddleware(memory, system_prompt="Answer in Spanish.")

    agent_of(model, middleware).invoke({"messages": [HumanMessage("Hi")]}, thread("spanish"))

    assert model.received[0][0] == SystemMessage("Answer in Spanish.")

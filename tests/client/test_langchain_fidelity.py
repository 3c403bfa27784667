"""LangChain messages kept exactly by the live service (a real gunicorn and Celery worker), through
LangChain's own API: streamed answers (chunks), content blocks, tool artifacts, long tool loops,
the budgeted context as a chat history, and ids the service refuses."""

import asyncio
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel, GenericFakeChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessageChunk,
    HumanMessage,
    HumanMessageChunk,
    SystemMessage,
    SystemMessageChunk,
    ToolMessage,
    ToolMessageChunk,
    message_chunk_to_message,
)
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from memory_client import MemoryClient, MemoryServiceError
from memory_client.langchain import ServiceChatMessageHistory, raise_history_errors
from memory_client.messages import from_service, to_service

pytestmark = pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")

PROMPT = ChatPromptTemplate.from_messages([("system", "Be brief."), MessagesPlaceholder("history"), ("human", "{question}")])


def with_history(model: Any, memory: MemoryClient, **history: Any) -> RunnableWithMessageHistory:
    return RunnableWithMessageHistory(
        PROMPT | model,
        lambda session_id: ServiceChatMessageHistory(session_id, client=memory, **history),
        input_messages_key="question",
        history_messages_key="history",
    )


def config(session_id: str) -> dict[str, Any]:
    return {"configurable": {"session_id": session_id}}


def streamed_answer(chunks: list[BaseMessage]) -> BaseMessage:
    total = chunks[0]
    for chunk in chunks[1:]:
        total = total + chunk
    return message_chunk_to_message(total)


def test_a_streamed_answer_is_stored_with_its_question_and_reads_back_as_the_message_it_adds_up_to(memory):
    model = GenericFakeChatModel(messages=iter([AIMessage(content="Cafe Central has jazz every night.")]))
    chat = with_history(model, memory)

    chunks = list(chat.stream({"question": "Which bar has live music?"}, config("stream")))

    assert len(chunks) > 1
    assert all(isinstance(chunk, AIMessageChunk) for chunk in chunks)
    answer = streamed_answer(chunks)
    assert type(answer) is AIMessage
    assert answer.content == "Cafe Central has jazz every night."
    assert ServiceChatMessageHistory("stream", client=memory).messages == [HumanMessage("Which bar has live music?"), answer]


def test_an_async_streamed_answer_is_stored_with_its_question(memory):
    model = GenericFakeChatModel(messages=iter([AIMessage(content="Yes, from eight.")]))
    chat = with_history(model, memory)

    async def run() -> list[BaseMessage]:
        return [chunk async for chunk in chat.astream({"question": "Open on Sundays?"}, config("astream"))]

    answer = streamed_answer(asyncio.run(run()))
    history = ServiceChatMessageHistory("astream", client=memory)
    assert asyncio.run(history.aget_messages()) == [HumanMessage("Open on Sundays?"), answer]


def test_a_twenty_thousand_character_text_block_reads_back_exactly(memory):
    long_answer = AIMessage(content=[{"type": "text", "text": "Lisbon " * 2971 + "!"}], id="answer-1")
    assert len(long_answer.text) == 20_798
    chat = with_history(FakeMessagesListChatModel(responses=[long_answer]), memory)

    chat.invoke({"question": "Tell me everything about Lisbon."}, config("long"))

    assert ServiceChatMessageHistory("long", client=memory).messages == [
        HumanMessage("Tell me everything about Lisbon."),
        long_answer,
    ]


def test_a_tool_message_with_a_24_kb_artifact_reads_back_exactly(memory):
    artifact = {"rows": [{"id": index, "name": f"bar {index:05d}", "open": index % 2 == 0} for index in range(700)]}
    history = ServiceChatMessageHistory("artifact", client=memory)
    sent = [
        HumanMessage("Every bar in Madrid, please."),
        AIMessage(content="", tool_calls=[{"id": "call-1", "name": "bars", "args": {"city": "Madrid"}, "type": "tool_call"}]),
        ToolMessage(content="700 bars", tool_call_id="call-1", artifact=artifact, name="bars"),
        AIMessage(
            content=[
                {"type": "text", "text": "There are 700."},
                {"type": "image_url", "image_url": {"url": "https://m.example/map.png"}},
            ]
        ),
    ]
    assert len(str(artifact)) > 24_000

    history.add_messages(sent)

    assert history.messages == sent
    stored = memory.messages("artifact")
    assert stored[2]["metadata"]["artifact"] == artifact
    assert stored[3]["content"] == sent[3].content


@pytest.mark.parametrize(
    "chunk",
    [
        HumanMessageChunk(content="Hi", id="h-1"),
        SystemMessageChunk(content="Be brief."),
        AIMessageChunk(
            content=[{"type": "text", "text": "Looking"}],
            tool_call_chunks=[{"id": "c-1", "name": "bars", "args": '{"near": "Sol"}', "index": 0}],
            chunk_position="last",
        ),
        ToolMessageChunk(content="3 bars", tool_call_id="c-1", artifact={"rows": [1, 2, 3]}),
        ChatMessageChunk(content="Hello", role="assistant"),
    ],
    ids=lambda chunk: type(chunk).__name__,
)
def test_every_chunk_is_stored_as_the_message_it_adds_up_to(chunk):
    assert from_service(to_service(chunk)) == message_chunk_to_message(chunk)


@pytest.mark.parametrize(
    "message",
    [
        HumanMessage(
            content=[{"type": "text", "text": "Look"}, {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}]
        ),
        AIMessage(content=[{"type": "text", "text": "Calling"}, {"type": "tool_use", "id": "t-1", "name": "bars", "input": {}}]),
        ToolMessage(content=[{"type": "text", "text": "done"}], tool_call_id="t-1", artifact=[1, 2], status="error"),
        SystemMessage(content=[{"type": "text", "text": "Be brief."}]),
        AIMessage(content=[]),
        HumanMessage(content=["Look at", {"type": "image_url", "image_url": {"url": "https://m.example/a.png"}}]),
    ],
    ids=["human image", "ai tool_use", "tool artifact", "system blocks", "ai empty list", "bare strings in the list"],
)
def test_every_message_with_blocks_reads_back_equal(message):
    body = to_service(message)
    if all(isinstance(block, dict) for block in message.content):
        assert body["content"] == message.content
    else:
        assert body["content"] == message.text
    assert from_service(body) == message


def test_a_list_with_bare_strings_is_stored_and_read_back_through_the_service(memory):
    sent = [HumanMessage(content=["Look at", {"type": "image_url", "image_url": {"url": "https://m.example/a.png"}}])]
    history = ServiceChatMessageHistory("bare", client=memory)

    history.add_messages(sent)

    assert history.messages == sent


def test_the_history_inside_a_long_tool_loop_holds_its_newest_calls_and_results(memory):
    history = ServiceChatMessageHistory("loop", client=memory, window=20)
    sent: list[BaseMessage] = [HumanMessage("Plan my trip.")]
    for step in range(12):
        sent.append(AIMessage(content="", tool_calls=[{"id": f"c-{step}", "name": "search", "args": {}, "type": "tool_call"}]))
        sent.append(ToolMessage(content=f"result {step}", tool_call_id=f"c-{step}"))
    history.add_messages(sent)

    assert history.messages == sent[5:]  # from the third call on: 20 messages, each call beside its result


def test_the_history_with_a_token_budget_reads_the_summarised_context(memory):
    question = "Which bar near Sol should I try tonight, and why that one? " * 4
    answer = "Try Cafe Central: live jazz every night, good wine, a short walk from Sol. " * 4
    history = ServiceChatMessageHistory("budget", client=memory)
    for turn in range(12):
        history.add_messages([HumanMessage(f"{turn}: {question}"), AIMessage(f"{turn}: {answer}")])

    budgeted = ServiceChatMessageHistory(
        "budget", client=memory, max_tokens=600, system_prompt="You are a travel agent.", context_params={"short_term_turns": 2}
    )
    messages = budgeted.messages

    assert isinstance(messages[0], SystemMessage)
    assert messages[0].content.startswith("You are a travel agent.\n\nSummary of the earlier conversation")
    assert messages[1:] == history.messages[-len(messages) + 1 :]
    assert 2 <= len(messages) - 1 < 24
    assert asyncio.run(budgeted.aget_messages()) == messages
    with pytest.raises(ValueError, match="max_tokens"):
        ServiceChatMessageHistory("budget", client=memory, system_prompt="You are a travel agent.")


def test_a_budgeted_history_feeds_a_runnable_with_message_history(memory):
    chat = with_history(
        FakeMessagesListChatModel(responses=[AIMessage("Cafe Central."), AIMessage("At nine.")]), memory, max_tokens=2000
    )
    chat.invoke({"question": "A bar near Sol?"}, config("budget-chain"))
    chat.invoke({"question": "When does the jazz start?"}, config("budget-chain"))

    assert [message.content for message in ServiceChatMessageHistory("budget-chain", client=memory).messages] == [
        "A bar near Sol?",
        "Cafe Central.",
        "When does the jazz start?",
        "At nine.",
    ]


def test_a_conversation_id_with_a_slash_is_refused_by_name_before_any_request(memory):
    # The service answers such an id with a 400 naming the rule (tests/conversations/test_api.py); the
    # client refuses it first, so the history neither stores nor reads under a mangled path.
    with pytest.raises(ValueError, match="letters, digits"):
        ServiceChatMessageHistory("trip/2024", client=memory).add_messages([HumanMessage("Hi")])
    with pytest.raises(ValueError, match="letters, digits"):
        ServiceChatMessageHistory("trip/2024", client=memory).messages  # noqa: B018


def test_a_refused_append_inside_a_runnable_with_message_history_raises_once_asked_to(memory):
    def chat() -> RunnableWithMessageHistory:
        return with_history(GenericFakeChatModel(messages=iter([AIMessage("Hello.")])), memory)

    question = {"question": "Hi\x00"}  # PostgreSQL cannot store a NUL: the append is a 400
    assert chat().invoke(question, config("nul")).content == "Hello."  # LangChain's default: only logged
    assert memory.messages("nul") == []
    raise_history_errors()
    try:
        with pytest.raises(MemoryServiceError, match="validation_error"):
            list(chat().stream(question, config("nul")))

        async def run() -> None:
            async for _ in chat().astream(question, config("nul")):
                pass

        with pytest.raises(MemoryServiceError, match="validation_error"):
            asyncio.run(run())
    finally:
        raise_history_errors(False)

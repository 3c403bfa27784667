"""ServiceChatMessageHistory against the live service: a real RunnableWithMessageHistory conversation,
and LangChain messages of every kind stored and read back equal."""

import asyncio
from typing import Any

import pytest
from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory

from memory_client import MemoryClient
from memory_client.langchain import ServiceChatMessageHistory

SYSTEM = "You are a travel agent. Answer in one sentence."
QUESTIONS = [
    "Find me bars near Sol.",
    "Which of them has live music?",
    "Is it open on Sundays?",
    "Book a table there for four at nine.",
    "And remind me what I asked first.",
]
REPLIES = [
    AIMessage(content="Three bars: La Venencia, Salmon Guru and Cafe Central."),
    AIMessage(content="Cafe Central has jazz every night.", response_metadata={"model_name": "fake-travel"}),
    AIMessage(
        content="Yes, from eight.",
        usage_metadata={"input_tokens": 40, "output_tokens": 5, "total_tokens": 45},
    ),
    AIMessage(content="Booked: four people at nine tonight.", additional_kwargs={"booking": {"ref": "CC-2041"}}),
    AIMessage(content="You first asked for bars near Sol."),
]


class ModelInputs(BaseCallbackHandler):
    """What the chat model was given, call by call."""

    def __init__(self) -> None:
        self.calls: list[list[BaseMessage]] = []

    def on_chat_model_start(self, serialized: dict[str, Any], messages: list[list[BaseMessage]], **kwargs: Any) -> None:
        self.calls.append(list(messages[0]))


@pytest.mark.filterwarnings("ignore:RunnableWithMessageHistory is deprecated")
def test_a_runnable_with_message_history_remembers_every_turn(memory: MemoryClient) -> None:
    model = GenericFakeChatModel(messages=iter(REPLIES))
    prompt = ChatPromptTemplate.from_messages([("system", SYSTEM), MessagesPlaceholder("history"), ("human", "{question}")])
    chat = RunnableWithMessageHistory(
        prompt | model,
        lambda session_id: ServiceChatMessageHistory(session_id, client=memory, user_id="u-42", agent_id="travel"),
        input_messages_key="question",
        history_messages_key="history",
    )
    inputs = ModelInputs()
    config = {"configurable": {"session_id": "madrid-night"}, "callbacks": [inputs]}

    answers: list[BaseMessage] = []
    for turn, question in enumerate(QUESTIONS):
        if turn == len(QUESTIONS) - 1:  # the last turn goes through the async history methods
            answers.append(asyncio.run(chat.ainvoke({"question": question}, config=config)))
        else:
            answers.append(chat.invoke({"question": question}, config=config))

    assert [answer.content for answer in answers] == [reply.content for reply in REPLIES]
    assert len(inputs.calls) == len(QUESTIONS)
    for turn, received in enumerate(inputs.calls):
        earlier: list[BaseMessage] = []
        for question, answer in zip(QUESTIONS[:turn], answers[:turn], strict=True):
            earlier += [HumanMessage(content=question), answer]
        assert received == [SystemMessage(content=SYSTEM), *earlier, HumanMessage(content=QUESTIONS[turn])], f"turn {turn}"

    stored = memory.messages("madrid-night")
    assert [(message["role"], message["content"]) for message in stored] == [
        pair
        for question, reply in zip(QUESTIONS, REPLIES, strict=True)
        for pair in (("user", question), ("assistant", reply.content))
    ]
    seqs = [message["seq"] for message in stored]
    assert all(earlier < later for earlier, later in zip(seqs, seqs[1:], strict=False))


ORIGINALS: list[BaseMessage] = [
    SystemMessage(content="Only book places that are open late.", name="house-rules"),
    HumanMessage(content="What is the weather in Lisbon, and find me a hotel?", id="human-1"),
    HumanMessage(
        content=[
            {"type": "text", "text": "Like this one:"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
        name="ana",
    ),
    AIMessage(
        content=[
            {"type": "text", "text": "Checking both."},
            {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Lisbon"}},
        ],
        tool_calls=[
            {"name": "weather", "args": {"city": "Lisbon"}, "id": "call_weather", "type": "tool_call"},
            {"name": "hotels", "args": {"city": "Lisbon", "nights": 2, "filters": ["quiet", "central"]}, "id": "call_hotels"},
        ],
        additional_kwargs={"refusal": None, "reasoning": {"summary": ["two lookups"]}},
        response_metadata={"model_name": "gpt-test", "finish_reason": "tool_calls", "system_fingerprint": "fp_1"},
        usage_metadata={
            "input_tokens": 120,
            "output_tokens": 30,
            "total_tokens": 150,
            "input_token_details": {"cache_read": 100},
        },
        id="run-ai-1",
    ),
    ToolMessage(content="22 C, sunny", tool_call_id="call_weather", name="weather"),
    ToolMessage(
        content="The hotel search failed: timeout",
        tool_call_id="call_hotels",
        artifact={"attempts": 3, "last_status": 504},
        status="error",
        name="hotels",
    ),
    AIMessage(content="It is 22 C and sunny; the hotel search failed, shall I retry?"),
]


def test_every_kind_of_message_comes_back_equal(memory: MemoryClient) -> None:
    history = ServiceChatMessageHistory("round-trip", client=memory)
    history.add_messages(ORIGINALS)
    assert history.messages == ORIGINALS
    assert asyncio.run(history.aget_messages()) == ORIGINALS
    stored = memory.messages("round-trip")
    assert [message["role"] for message in stored] == ["system", "user", "user", "assistant", "tool", "tool", "assistant"]


def test_the_history_window_holds_the_newest_messages_and_clear_empties_it(memory: MemoryClient) -> None:
    history = ServiceChatMessageHistory("windowed", client=memory, window=2)
    history.add_messages([HumanMessage(content=f"message {number}") for number in range(5)])
    assert history.messages == [HumanMessage(content="message 3"), HumanMessage(content="message 4")]
    history.clear()
    assert history.messages == []
    asyncio.run(history.aadd_messages([HumanMessage(content="again")]))
    assert asyncio.run(history.aget_messages()) == [HumanMessage(content="again")]
    asyncio.run(history.aclear())
    assert history.messages == []


def test_a_history_can_make_its_own_client(service: Any) -> None:
    history = ServiceChatMessageHistory("own-client", base_url=service.url, api_key=service.api_key)
    history.add_user_message("hello")
    history.add_ai_message("hi there")
    assert history.messages == [HumanMessage(content="hello"), AIMessage(content="hi there")]
    history.client.close()

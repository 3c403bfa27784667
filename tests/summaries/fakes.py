"""A chat model for the tests: a LangChain ``BaseChatModel`` like the real integrations, which
records what it was built with and what it was asked, and answers what the test chose.

Name it as ``MEMORY_SUMMARY_MODEL="tests.summaries.fakes:chat_model"``. ``behaviour`` says how the
next calls go (an answer, an error, or a wait until the test releases it); ``reset()`` restores the
default, a well-formed answer, which is what a worker process (which the tests cannot configure)
gets.
"""

import threading
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

SPEC = "tests.summaries.fakes:chat_model"
MODEL_NAME = "fake-summary-model"
DEFAULT_ANSWER = """Here is the summary:
- The user is planning a trip to Lisbon from 3 to 10 May
- Budget: 2,000 EUR for two people, flights included
- Prefers a quiet hotel near Alfama over the city centre
- Decided to book the train to Sintra for 5 May
"""


@dataclass
class Behaviour:
    answer: str = DEFAULT_ANSWER
    error: Exception | None = None
    # When set, a call waits for it: a model that does not answer until the test lets it.
    release: threading.Event | None = None


@dataclass
class Calls:
    built: list[dict[str, Any]] = field(default_factory=list)  # the factory's keyword arguments
    prompts: list[list[BaseMessage]] = field(default_factory=list)  # the messages of each call


behaviour = Behaviour()
calls = Calls()


def reset() -> None:
    global behaviour, calls
    if behaviour.release is not None:
        behaviour.release.set()  # no call is left waiting after its test
    behaviour = Behaviour()
    calls = Calls()


class RecordingChatModel(BaseChatModel):
    model_name: str = MODEL_NAME
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None

    @property
    def _llm_type(self) -> str:
        return "recording-fake"

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        calls.prompts.append(list(messages))
        current = behaviour
        if current.release is not None:
            current.release.wait()
        if current.error is not None:
            raise current.error
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=current.answer))])


def chat_model(**kwargs: Any) -> RecordingChatModel:
    calls.built.append(kwargs)
    return RecordingChatModel(**kwargs)


def not_a_chat_model(**kwargs: Any) -> object:
    return object()

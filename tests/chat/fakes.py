"""The chat endpoint's stand-in provider: langchain-core's ``FakeListChatModel``, which also streams
(one character a chunk), registered as the provider ``fake`` in the test settings
(``MEMORY_CHAT_PROVIDERS``), so ``MEMORY_CHAT_MODEL="fake:<behaviour>"`` picks it in any process.

Each call is recorded in Redis (the test run's database, emptied between tests), so a test can read
what the model was built with and given, whichever process served the request. The model name is
the behaviour:

* ``echo`` (or any other name): answers ``[<name>] You said: <message>. I was given <n> earlier messages.``
* ``failing-model``: raises at once; ``breaking-model``: fails after a few streamed chunks;
* ``slow-model``: answers after ``SLOW_SECONDS`` (longer than the tests' timeout);
* ``dripping-model``: a long answer, ``DRIP_SECONDS`` a character (a stream a client can leave in the middle);
* ``hostile-model``: ``HOSTILE_ANSWER``, text no database can store as it is (NUL characters, lone
  surrogates, and a surrogate pair split into two code points, which streams as two pieces);
* ``scripted-model``: the answer given to ``script()`` last, whatever characters it holds.
"""

import json
import time
from collections.abc import Iterator
from typing import Any

from django_redis import get_redis_connection
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import BaseMessage

CALLS = "tests:chat:calls"
SCRIPT = "tests:chat:script"
STREAMS = "tests:chat:streams"
SLOW_SECONDS = 5.0
DRIP_SECONDS = 0.05
DRIP_ANSWER = "This answer arrives one character at a time, slowly enough to leave before its end. " * 3
HOSTILE_ANSWER = "nul \x00 here, half \ud800 a pair, \udfff alone, a split pair \ud83d\ude00, whole 😀 \ufffe\u2028."


class RecordingFakeChatModel(FakeListChatModel):
    model_name: str = "echo"
    temperature: float | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    max_retries: int | None = None
    base_url: str | None = None
    api_key: str | None = None

    def _answer(self, messages: list[BaseMessage], kind: str) -> None:
        get_redis_connection("default").rpush(
            CALLS,
            json.dumps(
                {
                    "kind": kind,
                    "model": self.model_name,
                    "temperature": self.temperature,
                    "max_tokens": self.max_tokens,
                    "api_key": self.api_key,
                    "messages": [{"type": message.type, "content": message.text} for message in messages],
                }
            ),
        )
        if self.model_name == "failing-model":
            raise RuntimeError("the fake provider is failing")
        if self.model_name == "slow-model":
            time.sleep(SLOW_SECONDS)
        if self.model_name == "dripping-model":
            self.responses, self.sleep = [DRIP_ANSWER], DRIP_SECONDS
            return
        if self.model_name == "scripted-model":
            self.responses = [get_redis_connection("default").get(SCRIPT).decode("utf-8", "surrogatepass")]
            return
        if self.model_name == "hostile-model":
            self.responses = [HOSTILE_ANSWER]
            return
        if self.model_name == "breaking-model":
            self.error_on_chunk_number = 5
        earlier = [message for message in messages[:-1] if message.type != "system"]
        self.responses = [f"[{self.model_name}] You said: {messages[-1].text}. I was given {len(earlier)} earlier messages."]

    def _call(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> str:
        self._answer(messages, "invoke")
        return super()._call(messages, *args, **kwargs)

    def _stream(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> Iterator[Any]:
        self._answer(messages, "stream")
        chunks, completed = 0, False
        try:
            for chunk in super()._stream(messages, *args, **kwargs):
                chunks += 1
                yield chunk
            completed = True
        finally:
            get_redis_connection("default").rpush(
                STREAMS, json.dumps({"model": self.model_name, "chunks": chunks, "completed": completed})
            )


def chat_model(*, model: str, **kwargs: Any) -> RecordingFakeChatModel:
    return RecordingFakeChatModel(model_name=model, responses=[""], **kwargs)


def script(answer: str) -> None:
    """What ``scripted-model`` answers next, lone surrogates and all."""
    get_redis_connection("default").set(SCRIPT, answer.encode("utf-8", "surrogatepass"))


def calls() -> list[dict[str, Any]]:
    return [json.loads(call) for call in get_redis_connection("default").lrange(CALLS, 0, -1)]


def streams() -> list[dict[str, Any]]:
    return [json.loads(stream) for stream in get_redis_connection("default").lrange(STREAMS, 0, -1)]

"""What MemoryClient sends, without a service: every body encoded before any request, a value JSON
cannot carry refused as the service words its own refusal, and a batch sent in parts answered as
one batch to its caller. The requests reach an ``httpx.MockTransport`` that records them."""

import asyncio
import math
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from core.exceptions import Unstorable
from core.storable import storable_json
from memory_client import BadRequest, MemoryClient, MemoryServiceError, ServiceUnavailable
from memory_client.http import MAX_BATCH
from memory_client.store import ServiceStore

NAN = float("nan")
LONE = "\ud800"  # half of a surrogate pair: no UTF-8 text can hold it


class Recorder:
    """A transport's handler: records each request and answers it with ``answer(request, count)``."""

    def __init__(self, answer: Callable[[httpx.Request, int], httpx.Response] | None = None) -> None:
        self.requests: list[httpx.Request] = []
        self.answer = answer or (lambda request, count: httpx.Response(200, json={}))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.answer(request, len(self.requests))


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(recorder: Recorder) -> Iterator[MemoryClient]:
    transport = httpx.MockTransport(recorder)
    with MemoryClient("http://memory.test", "key.secret", transport=transport, async_transport=transport, retries=0) as made:
        yield made


def write(index: int, value: Any = "ok") -> dict[str, Any]:
    return {"idx": index, "channel": "messages", "value": value}


def put(index: int, value: Any = None) -> dict[str, Any]:
    return {"op": "put", "namespace": ["notes"], "key": f"{index:03}", "value": {"n": index} if value is None else value}


# Every method that sends a body, with a value no JSON body can carry, and the path the refusal names.
REFUSED_CALLS = [
    pytest.param(
        "append",
        ("chat-1", [{"role": "user", "content": "ok"}, {"role": "user", "content": "x", "metadata": {"items": [0, 1, 2, NAN]}}]),
        {},
        "messages[1].metadata.items[3]",
        id="append",
    ),
    pytest.param("append_message", ("chat-1", "user", LONE), {}, "messages[0].content", id="append_message"),
    pytest.param("put_memory", ("chat-1",), {"messages": [{"content": LONE}]}, "messages[0].content", id="put_memory"),
    pytest.param("put_memory", ("chat-1",), {"metadata": {"mood": NAN}}, "metadata.mood", id="put_memory-metadata"),
    pytest.param("context", ("chat-1",), {"query": LONE}, "query", id="context"),
    pytest.param("context", ("chat-1",), {"compression_threshold": NAN}, "compression_threshold", id="context-number"),
    pytest.param("chat", ("chat-1", LONE), {}, "content", id="chat"),
    pytest.param("chat", ("chat-1", "hi"), {"temperature": math.inf}, "temperature", id="chat-option"),
    pytest.param("create_conversation", ("chat-1",), {"metadata": {"city": LONE}}, "metadata.city", id="create_conversation"),
    pytest.param("update_conversation", ("chat-1",), {"metadata": {"n": -math.inf}}, "metadata.n", id="update_conversation"),
    pytest.param("search", ("chat-1", "q"), {"filters": {"metadata": {"lang": LONE}}}, "metadata.lang", id="search"),
    pytest.param("search_user", ("ana", "q"), {"filters": {"metadata": {"n": NAN}}}, "metadata.n", id="search_user"),
    pytest.param("correct_memory", ("ana", "m-1"), {"text": LONE}, "text", id="correct_memory"),
    pytest.param("correct_memory", ("ana", "m-1"), {"confidence": NAN}, "confidence", id="correct_memory-number"),
    pytest.param("set_fact", ("ana", "city", LONE), {}, "value", id="set_fact"),
    pytest.param("set_facts", ("ana", {"city": "Madrid", "pet": LONE}), {}, "facts.pet", id="set_facts"),
    pytest.param("put_checkpoint", ("chat-1",), {"state": {"step": NAN}}, "state.step", id="put_checkpoint"),
    pytest.param("put_checkpoint", ("chat-1",), {"state": {}, "metadata": {LONE: 1}}, "metadata", id="put_checkpoint-key"),
    pytest.param(
        "put_writes", ("chat-1", "1"), {"task_id": "t", "writes": [write(0), write(1, LONE)]}, "writes[1].value", id="put_writes"
    ),
    pytest.param(
        "store_batch", ([put(0), put(1, {"items": [0, 1, 2, NAN]})],), {}, "operations[1].value.items[3]", id="store_batch"
    ),
]


@pytest.mark.parametrize(("method", "args", "kwargs", "field"), REFUSED_CALLS)
def test_every_method_refuses_a_value_json_cannot_carry_naming_its_field_before_sending(
    client: MemoryClient, recorder: Recorder, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(BadRequest) as raised:
        getattr(client, method)(*args, **kwargs)

    assert (raised.value.status, raised.value.code, raised.value.details["field"]) == (400, "validation_error", field)
    assert raised.value.message.startswith(f"{field} ")
    assert recorder.requests == []


@pytest.mark.parametrize(("method", "args", "kwargs", "field"), REFUSED_CALLS)
def test_every_async_method_refuses_the_same_value_the_same_way(
    client: MemoryClient, recorder: Recorder, method: str, args: tuple[Any, ...], kwargs: dict[str, Any], field: str
) -> None:
    async def call() -> None:
        await getattr(client, f"a{method}")(*args, **kwargs)

    with pytest.raises(BadRequest) as raised:
        asyncio.run(call())

    assert (raised.value.code, raised.value.details["field"]) == ("validation_error", field)
    assert recorder.requests == []


def test_a_streamed_chat_refuses_its_message_before_sending(client: MemoryClient, recorder: Recorder) -> None:
    with pytest.raises(BadRequest) as raised:
        list(client.chat_stream("chat-1", LONE))

    assert raised.value.details["field"] == "content"
    assert recorder.requests == []


def test_a_lone_surrogate_in_a_query_parameter_is_refused_naming_the_parameter(client: MemoryClient, recorder: Recorder) -> None:
    with pytest.raises(BadRequest) as searched:
        client.search_user("ana", f"jazz {LONE}")
    with pytest.raises(BadRequest) as listed:
        asyncio.run(client.alist_memories("ana", subject=LONE))

    assert searched.value.details == {"field": "q", "reason": "contains an unpaired UTF-16 surrogate"}
    assert listed.value.details["field"] == "subject"
    assert recorder.requests == []


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"items": [0, 1, 2, NAN]}, id="nan"),
        pytest.param({"limits": {"max": -math.inf}}, id="infinity"),
        pytest.param({"notes": ["fine", f"broken {LONE} text"]}, id="lone-surrogate"),
        pytest.param({"tags": {f"key {LONE}": 1}}, id="lone-surrogate-in-a-key"),
        pytest.param({"big": 10**5000}, id="integer-too-long"),
        pytest.param({"when": datetime(2024, 5, 1, tzinfo=UTC)}, id="not-json"),
        pytest.param({"a key with spaces": {(1, 2): "tuple key"}}, id="non-string-key"),
    ],
)
def test_a_store_put_is_refused_in_the_very_words_the_service_refuses_it_with(
    client: MemoryClient, recorder: Recorder, value: dict[str, Any]
) -> None:
    with pytest.raises(Unstorable) as service_refusal:
        storable_json(value, field="operations[0].value")

    with pytest.raises(BadRequest) as raised:
        ServiceStore(client).put(("notes",), "k", value)

    assert raised.value.message == service_refusal.value.message
    assert raised.value.details["field"] == service_refusal.value.field
    assert raised.value.details["reason"] == service_refusal.value.reason
    assert recorder.requests == []


def test_the_async_store_put_is_refused_alike(client: MemoryClient, recorder: Recorder) -> None:
    with pytest.raises(MemoryServiceError) as raised:
        asyncio.run(ServiceStore(client).aput(("notes",), "k", {"items": [0, 1, 2, NAN]}))

    assert isinstance(raised.value, BadRequest)
    assert raised.value.details["field"] == "operations[0].value.items[3]"
    assert recorder.requests == []


def test_a_value_that_contains_itself_or_nests_past_the_limit_is_refused_not_a_crash(
    client: MemoryClient, recorder: Recorder
) -> None:
    looped: dict[str, Any] = {"name": "loop"}
    looped["self"] = looped
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(5000):
        inner["n"] = {}
        inner = inner["n"]

    with pytest.raises(BadRequest) as contains_itself:
        client.put_checkpoint("chat-1", state=looped)
    with pytest.raises(BadRequest) as too_deep:
        client.put_checkpoint("chat-1", state=deep)

    assert contains_itself.value.details == {"field": "state.self", "reason": "contains itself"}
    assert too_deep.value.details["reason"] == "nests more than 100 levels"
    assert too_deep.value.details["field"].startswith("state.n.n")
    assert recorder.requests == []


def test_a_refused_value_in_a_later_part_of_a_batch_stops_the_whole_batch_before_the_first_part(
    client: MemoryClient, recorder: Recorder
) -> None:
    operations = [put(index) for index in range(MAX_BATCH + 50)]
    operations[120] = put(120, {"score": NAN})
    messages = [{"role": "user", "content": f"turn {index}"} for index in range(MAX_BATCH + 50)]
    messages[130]["content"] = LONE

    with pytest.raises(BadRequest) as stored:
        client.store_batch(operations)
    with pytest.raises(BadRequest) as appended:
        asyncio.run(client.aappend("chat-1", messages))

    assert stored.value.details == {"field": "operations[120].value.score", "reason": "is not a finite number", "applied": 0}
    assert stored.value.message.startswith("operations[120].value.score is not a finite number;")
    assert appended.value.details["field"] == "messages[130].content"
    assert recorder.requests == []


def test_a_body_is_sent_as_compact_utf8_json() -> None:
    recorder = Recorder(lambda request, count: httpx.Response(200, json={"key": "city", "value": "Málaga"}))
    with MemoryClient("http://memory.test", "key.secret", transport=httpx.MockTransport(recorder)) as client:
        client.set_fact("ana", "city", "Málaga 🌞")

    (request,) = recorder.requests
    assert request.headers["Content-Type"] == "application/json"
    assert request.content == '{"value":"Málaga 🌞"}'.encode()


# --- a batch sent in parts, answered as one batch ------------------------------------------------------


def refusing_the_second_part(body_field: str, message: str, details: dict[str, Any]) -> Recorder:
    """Answers the first request as stored and refuses the second as the service would."""

    def answer(request: httpx.Request, count: int) -> httpx.Response:
        if count == 1:
            return httpx.Response(200, json={body_field: [None] * MAX_BATCH})
        return httpx.Response(400, json={"error": {"code": "validation_error", "message": message, "details": details}})

    return Recorder(answer)


def test_a_refusal_of_a_later_part_names_the_callers_index_and_what_was_applied() -> None:
    recorder = refusing_the_second_part(
        "results", "operations[20].namespace[1]: a label cannot contain a period.", {"field": "operations[20].namespace[1]"}
    )
    with MemoryClient("http://memory.test", "key.secret", transport=httpx.MockTransport(recorder)) as client:
        with pytest.raises(BadRequest) as raised:
            client.store_batch([put(index) for index in range(MAX_BATCH + 50)])

    assert raised.value.details == {"field": "operations[120].namespace[1]", "applied": 100}
    assert raised.value.message.startswith("operations[120].namespace[1]: a label cannot contain a period.")
    assert "operations[0] to operations[99] were applied" in raised.value.message
    assert len(recorder.requests) == 2


def test_the_per_item_errors_of_a_later_part_are_renumbered_too() -> None:
    recorder = refusing_the_second_part(
        "messages", 'messages.30.role: "robot" is not a valid choice.', {"messages": {"30": {"role": ["not a valid choice."]}}}
    )
    transport = httpx.MockTransport(recorder)
    messages = [{"role": "user", "content": f"turn {index}"} for index in range(MAX_BATCH + 50)]
    with MemoryClient("http://memory.test", "key.secret", async_transport=transport) as client:
        with pytest.raises(BadRequest) as raised:
            asyncio.run(client.aappend("chat-1", messages))

    assert raised.value.details == {"messages": {"130": {"role": ["not a valid choice."]}}, "applied": 100}
    assert raised.value.message.startswith('messages.130.role: "robot" is not a valid choice.')


def test_an_outage_met_by_a_later_part_says_how_much_of_the_batch_was_applied() -> None:
    def answer(request: httpx.Request, count: int) -> httpx.Response:
        if count == 1:
            return httpx.Response(200, json={})
        return httpx.Response(
            503, json={"error": {"code": "service_unavailable", "message": "PostgreSQL is down.", "details": {}}}
        )

    recorder = Recorder(answer)
    with MemoryClient("http://memory.test", "key.secret", transport=httpx.MockTransport(recorder), retries=0) as client:
        with pytest.raises(ServiceUnavailable) as raised:
            client.put_writes("chat-1", "1", task_id="t", writes=[write(index) for index in range(MAX_BATCH + 1)])

    assert (raised.value.status, raised.value.code) == (503, "service_unavailable")
    assert raised.value.details == {"applied": 100}


def test_an_error_of_a_batch_sent_in_one_request_is_the_services_with_nothing_applied() -> None:
    refusal = {"code": "validation_error", "message": "operations[3].key: too long.", "details": {"field": "operations[3].key"}}
    recorder = Recorder(lambda request, count: httpx.Response(400, json={"error": refusal}))
    with MemoryClient("http://memory.test", "key.secret", transport=httpx.MockTransport(recorder)) as client:
        with pytest.raises(BadRequest) as raised:
            client.store_batch([put(index) for index in range(5)])

    assert raised.value.message == "operations[3].key: too long."
    assert raised.value.details == {"field": "operations[3].key", "applied": 0}


@pytest.mark.parametrize(
    "details",
    [
        {"field": "messages[3].metadata", "size": 70_000, "limit": 65_536},  # a limit of one message
        {"field": "messages", "size": 5, "limit": 5},  # not a limit the part is over
        {"field": "messages", "size": 5},  # no limit named
    ],
    ids=["an-items-own-limit", "a-limit-not-below-the-part", "no-limit"],
)
def test_only_a_refusal_of_the_parts_size_below_it_sends_the_batch_again_in_smaller_parts(details: dict[str, Any]) -> None:
    refusal = {"code": "limit_exceeded", "message": "Over a limit.", "details": details}
    recorder = Recorder(lambda request, count: httpx.Response(400, json={"error": refusal}))
    with MemoryClient("http://memory.test", "key.secret", transport=httpx.MockTransport(recorder)) as client:
        with pytest.raises(BadRequest) as raised:
            client.append("chat-1", [{"role": "user", "content": f"turn {index}"} for index in range(5)])

    assert raised.value.code == "limit_exceeded"
    assert raised.value.details["applied"] == 0
    assert len(recorder.requests) == 1

"""Retries that resend the same request: the answer lost after the live service stored the write (a
timeout, a ``write_indeterminate`` 503), then the resend meeting the stored write. The faults are
injected between the client and the live service by an ``httpx.MockTransport`` that forwards each
request to it and then loses or replaces the answer, as a dropped connection or a broker confirm
lost would."""

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import httpx
import pytest

from memory_client import Conflict, MemoryClient, RateLimited, ServiceUnavailable, Unreachable
from tests.client.conftest import LiveService

# What happens to one request: forwarded and answered, forwarded and its answer lost, forwarded and
# answered write_indeterminate, or lost before reaching the service.
PASS, LOSE_ANSWER, INDETERMINATE, LOSE_REQUEST = "pass", "lose-answer", "indeterminate", "lose-request"


@dataclass
class FaultyLink:
    """Forwards requests to the live service, applying the scheduled fault to each in turn."""

    url: str
    schedule: list[str] = field(default_factory=list)
    seen: list[tuple[str, str, int | None]] = field(default_factory=list)  # method, path, status answered

    def __post_init__(self) -> None:
        self.upstream = httpx.Client(base_url=self.url, timeout=30)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        fault = self.schedule.pop(0) if self.schedule else PASS
        if fault == LOSE_REQUEST:
            self.seen.append((request.method, request.url.path, None))
            raise httpx.ConnectError("connection refused", request=request)
        answer = self.upstream.send(
            self.upstream.build_request(
                request.method, request.url.path, params=request.url.params, headers=request.headers, content=request.content
            )
        )
        self.seen.append((request.method, request.url.path, answer.status_code))
        if fault == LOSE_ANSWER:
            raise httpx.ReadTimeout("the answer was lost", request=request)
        if fault == INDETERMINATE and answer.is_success:
            ids = [{"id": message["id"], "seq": message["seq"]} for message in answer.json().get("messages", [])]
            return httpx.Response(
                503,
                headers={"Retry-After": "0"},
                json={"error": {"code": "write_indeterminate", "message": "The confirm was lost.", "details": {"messages": ids}}},
            )
        headers = {name: value for name, value in answer.headers.items() if name.lower() in ("content-type", "retry-after")}
        return httpx.Response(answer.status_code, headers=headers, content=answer.content)

    def statuses(self) -> list[int | None]:
        return [status for _, _, status in self.seen]


@pytest.fixture
def link(service: LiveService) -> Iterator[FaultyLink]:
    faulty = FaultyLink(service.url)
    yield faulty
    faulty.upstream.close()


@pytest.fixture
def flaky(service: LiveService, link: FaultyLink) -> Iterator[MemoryClient]:
    """A client of the live service through the faulty link."""
    transport = httpx.MockTransport(link)
    with MemoryClient(service.url, service.api_key, transport=transport, async_transport=transport, retries=3) as client:
        yield client


def test_an_append_whose_answer_was_lost_is_resent_and_stored_once(
    flaky: MemoryClient, memory: MemoryClient, link: FaultyLink
) -> None:
    link.schedule = [LOSE_ANSWER]
    stored = flaky.append("lost", [{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}])
    assert link.statuses() == [201, 200]  # stored by the first attempt; the resend met it
    listed = memory.messages("lost")
    assert [(m["id"], m["seq"]) for m in listed] == [(m["id"], m["seq"]) for m in stored]
    assert [m["content"] for m in listed] == ["hello", "hi"]


def test_a_write_indeterminate_answer_is_settled_by_resending_the_same_ids(
    flaky: MemoryClient, memory: MemoryClient, link: FaultyLink
) -> None:
    link.schedule = [INDETERMINATE]
    stored = flaky.append_message("unsure", "user", "did it land?")
    assert link.statuses() == [201, 200]
    assert [m["id"] for m in memory.messages("unsure")] == [stored["id"]]


def test_the_async_append_resends_the_same_ids_too(flaky: MemoryClient, memory: MemoryClient, link: FaultyLink) -> None:
    link.schedule = [LOSE_ANSWER, INDETERMINATE]

    async def append() -> list[dict]:
        stored = await flaky.aappend("async-lost", [{"role": "user", "content": "once"}])
        await flaky.aclose()
        return stored

    stored = asyncio.run(append())
    assert link.statuses() == [201, 200, 200]
    assert [m["id"] for m in memory.messages("async-lost")] == [stored[0]["id"]]


def test_a_create_whose_answer_was_lost_answers_the_conversation_it_created(flaky: MemoryClient, link: FaultyLink) -> None:
    link.schedule = [LOSE_ANSWER]
    created = flaky.create_conversation("made-once", user_id="ana", metadata={"k": "v"})
    assert link.statuses() == [201, 409, 200]  # created, the resend's conflict, the read that settles it
    assert (created["conversation_id"], created["user_id"], created["metadata"]) == ("made-once", "ana", {"k": "v"})


def test_a_resent_create_meeting_someone_elses_conversation_is_a_conflict(
    flaky: MemoryClient, memory: MemoryClient, link: FaultyLink
) -> None:
    memory.create_conversation("taken", user_id="bob")
    link.schedule = [LOSE_REQUEST]
    with pytest.raises(Conflict):
        flaky.create_conversation("taken", user_id="ana")
    assert memory.get_conversation("taken")["user_id"] == "bob"


def nothing(client: MemoryClient) -> None:
    pass


def a_fact(client: MemoryClient) -> None:
    client.set_fact("ana", "city", "Madrid")


def a_conversation(client: MemoryClient) -> None:
    client.put_memory("doc", messages=[])


@pytest.mark.parametrize(
    ("before", "write", "check"),
    [
        (nothing, lambda c: c.set_fact("ana", "city", "Madrid"), lambda c: c.fact_history("ana", "city")["count"] == 1),
        (nothing, lambda c: c.set_facts("ana", {"city": "Madrid"}), lambda c: c.fact_history("ana", "city")["count"] == 1),
        (nothing, lambda c: c.put_memory("doc", messages=["a"]), lambda c: c.get_memory("doc")["messages"] == ["a"]),
        (
            a_conversation,
            lambda c: c.update_conversation("doc", archived=True),
            lambda c: c.get_conversation("doc")["archived"] is True,
        ),
        (a_conversation, lambda c: c.erase_conversation("doc"), lambda c: c.get_conversation("doc") is None),
        (a_fact, lambda c: c.delete_fact("ana", "city"), lambda c: c.fact_history("ana", "city")["count"] == 2),
        (a_fact, lambda c: c.erase_user("ana"), lambda c: c.list_facts("ana")["facts"] == []),
    ],
    ids=["set_fact", "set_facts", "put_memory", "update_conversation", "erase_conversation", "delete_fact", "erase_user"],
)
def test_every_write_whose_answer_was_lost_is_resent_safely(
    flaky: MemoryClient,
    memory: MemoryClient,
    link: FaultyLink,
    before: Callable[[MemoryClient], None],
    write: Callable[[MemoryClient], object],
    check: Callable[[MemoryClient], bool],
) -> None:
    before(memory)
    link.schedule = [LOSE_ANSWER]
    write(flaky)
    assert len(link.seen) == 2  # the lost attempt and its resend
    assert check(memory)


def test_a_summary_asked_again_after_a_lost_answer_is_the_one_filed(
    flaky: MemoryClient, memory: MemoryClient, link: FaultyLink
) -> None:
    from tests.client.test_http_api import persisted

    memory.append("talk", [{"role": "user", "content": "Plan Rome."}, {"role": "assistant", "content": "Three days."}])
    persisted(memory, "talk", 2)
    link.schedule = [LOSE_ANSWER]
    summary = flaky.summarize("talk")
    assert link.statuses() == [201, 201]
    assert [s["created_at"] for s in memory.summaries("talk")] == [summary["created_at"]]


@pytest.mark.parametrize("code", ["chat_model_not_configured", "chat_model_unavailable", "provider_credential_missing"])
def test_a_503_no_retry_changes_is_raised_at_once(code: str) -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(503, headers={"Retry-After": "0"}, json={"error": {"code": code, "message": "No model."}})

    with MemoryClient("http://memory.invalid", "key.secret", transport=httpx.MockTransport(answer)) as client:
        with pytest.raises(ServiceUnavailable) as raised:
            client.chat("no-model", "hello")
    assert raised.value.code == code
    assert len(sent) == 1


def test_a_503_is_retried_until_the_service_answers(service: LiveService) -> None:
    answers = iter(
        [httpx.Response(503, headers={"Retry-After": "0"}, json={"error": {"code": "broker_unavailable", "message": "down"}})]
    )
    upstream = httpx.Client(base_url=service.url)

    def answer(request: httpx.Request) -> httpx.Response:
        canned = next(answers, None)
        if canned is not None:
            return canned
        real = upstream.send(
            upstream.build_request(request.method, request.url.path, headers=request.headers, content=request.content)
        )
        return httpx.Response(real.status_code, headers={"Content-Type": "application/json"}, content=real.content)

    with MemoryClient(service.url, service.api_key, transport=httpx.MockTransport(answer)) as client:
        assert client.append_message("retried", "user", "hi")["content"] == "hi"
    upstream.close()


def test_a_429_is_raised_with_its_retry_after_not_retried() -> None:
    sent: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(429, headers={"Retry-After": "7"}, json={"error": {"code": "throttled", "message": "Slow down."}})

    with MemoryClient("http://memory.invalid", "key.secret", transport=httpx.MockTransport(answer)) as client:
        with pytest.raises(RateLimited) as raised:
            client.list_facts("ana")
    assert (raised.value.code, raised.value.retry_after) == ("throttled", 7.0)
    assert len(sent) == 1


def test_a_write_retried_past_its_bound_raises_the_last_answer(flaky: MemoryClient, link: FaultyLink) -> None:
    link.schedule = [LOSE_REQUEST] * 4
    with pytest.raises(Unreachable):
        flaky.set_fact("ana", "city", "Rome")
    assert len(link.seen) == 4

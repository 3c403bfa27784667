"""The chat endpoint against the live service (gunicorn and a Celery worker): langchain-core's fake
chat models as the provider (``tests.chat.fakes``), and a local OpenAI-compatible server through
the real OpenAI integration (``tests.chat.openai_server``)."""

import json
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from django.db import connection
from django_redis import get_redis_connection

from conversations.models import Message
from memory_client import MemoryServiceError
from memory_client.http import RETRY_AFTER_CAP
from tenants import services as tenant_services
from tests.chat import fakes
from tests.chat.openai_server import OpenAICompatibleServer
from tests.client.conftest import LiveService
from tests.conftest import wait_for_rows
from tests.faults import TcpProxy, WebServer, wait_until


def configure(tenant: Any, **chat_settings: Any) -> None:
    tenant_services.tenant_update(tenant=tenant, settings={**tenant.settings, **chat_settings})


def chat(service: LiveService, conversation_id: str, *, api_key: str | None = None, **body: Any) -> httpx.Response:
    return httpx.post(
        f"{service.url}/api/v1/conversations/{conversation_id}/chat/",
        json=body,
        headers={"Authorization": f"Api-Key {api_key or service.api_key}"},
        timeout=30,
    )


def transcript(service: LiveService, conversation_id: str) -> list[tuple[str, str]]:
    response = httpx.get(
        f"{service.url}/api/v1/conversations/{conversation_id}/messages/",
        headers={"Authorization": f"Api-Key {service.api_key}"},
        timeout=10,
    )
    if response.status_code == 404:
        return []
    return [(message["role"], message["content"]) for message in response.json()["messages"]]


def stream_chat(service: LiveService, conversation_id: str, **body: Any) -> list[tuple[str, Any]]:
    """The events of a streamed turn, read to the end."""
    with httpx.stream(
        "POST",
        f"{service.url}/api/v1/conversations/{conversation_id}/chat/",
        json={**body, "stream": True},
        headers={"Authorization": f"Api-Key {service.api_key}"},
        timeout=30,
    ) as response:
        assert response.status_code == 200, response.read()
        return list(events_of(response.iter_lines()))


def events_of(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """Server-sent events as (name, data), as they arrive."""
    name = None
    for line in lines:
        if line.startswith("event: "):
            name = line[len("event: ") :]
        elif line.startswith("data: "):
            yield name, json.loads(line[len("data: ") :])


def test_a_conversation_held_through_the_endpoint_gives_each_turn_the_earlier_ones(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo")
    said = ["I am Ada and I live in Lisbon.", "I prefer trains to planes.", "Plan my weekend, please."]
    answers = []
    for text in said:
        response = chat(service, "live-chat", content=text, system_prompt="You are a travel agent.", user_id="ada")
        assert response.status_code == 201, response.text
        answers.append(response.json()["assistant_message"]["content"])

    prompts = [[(m["type"], m["content"]) for m in call["messages"]] for call in fakes.calls()]
    assert prompts[0] == [("system", "You are a travel agent."), ("human", said[0])]
    assert prompts[2] == [
        ("system", "You are a travel agent."),
        ("human", said[0]),
        ("ai", answers[0]),
        ("human", said[1]),
        ("ai", answers[1]),
        ("human", said[2]),
    ]
    expected = [item for pair in zip(said, answers, strict=True) for item in (("user", pair[0]), ("assistant", pair[1]))]
    assert transcript(service, "live-chat") == expected
    wait_for_rows(Message, tenant, 6, conversation__conversation_id="live-chat")
    rows = Message.objects.for_tenant(tenant).filter(conversation__conversation_id="live-chat").order_by("seq")
    assert [(row.role, row.content) for row in rows] == expected
    assert rows[5].metadata["user_message_id"] == str(rows[4].message_id)


def test_a_failing_model_is_a_502_and_the_user_message_stays(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:failing-model")
    response = chat(service, "live-fail", content="Are you there?")

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "model_error"
    assert transcript(service, "live-fail") == [("user", "Are you there?")]
    wait_for_rows(Message, tenant, 1, conversation__conversation_id="live-fail")


def test_a_model_slower_than_the_timeout_is_a_504(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:slow-model", MEMORY_CHAT_TIMEOUT=1)
    response = chat(service, "live-slow", content="Take your time.")

    assert response.status_code == 504
    assert response.json()["error"]["code"] == "model_timeout"
    assert response.elapsed.total_seconds() < fakes.SLOW_SECONDS
    assert transcript(service, "live-slow") == [("user", "Take your time.")]


def test_a_stream_the_client_leaves_stops_the_model_and_stores_no_half_answer(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:dripping-model")
    url = f"{service.url}/api/v1/conversations/live-drip/chat/"
    received = ""
    with httpx.stream(
        "POST",
        url,
        json={"content": "Tell me a long story."},
        headers={"Authorization": f"Api-Key {service.api_key}", "Accept": "text/event-stream"},
        timeout=30,
    ) as response:
        assert response.status_code == 200
        for name, data in events_of(response.iter_lines()):
            if name == "token":
                received += data["text"]
            if len(received) >= 10:
                break  # the client goes away mid-answer

    wait_until(lambda: fakes.streams(), timeout=10, message="the model's stream to end")
    (stream,) = fakes.streams()
    assert stream["completed"] is False
    assert stream["chunks"] < len(fakes.DRIP_ANSWER) // 2
    assert transcript(service, "live-drip") == [("user", "Tell me a long story.")]

    # The conversation goes on from there: the next turn sees the unanswered message.
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo")
    response = chat(service, "live-drip", content="Shorter, please.")
    assert response.status_code == 201
    assert [m["content"] for m in fakes.calls()[-1]["messages"]] == ["Tell me a long story.", "Shorter, please."]


def test_a_whole_stream_stores_the_answer_once(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo")
    events = stream_chat(service, "live-stream", content="Stream please.")

    text = "".join(data["text"] for name, data in events if name == "token")
    assert events[0][0] == "start"
    assert events[-1][0] == "done"
    assert events[-1][1]["assistant_message"]["content"] == text
    assert transcript(service, "live-stream") == [("user", "Stream please."), ("assistant", text)]
    wait_for_rows(Message, tenant, 2, conversation__conversation_id="live-stream")


def test_two_tenants_talk_to_their_own_models(service: LiveService, tenant: Any, other_tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:alpha")
    configure(other_tenant, MEMORY_CHAT_MODEL="fake:beta", MEMORY_CHAT_TEMPERATURE=0.1)
    _, other_key = tenant_services.api_key_create(tenant=other_tenant, name="chat")

    mine = chat(service, "same-id", content="Hello")
    theirs = chat(service, "same-id", api_key=other_key, content="Hola")

    assert mine.json()["assistant_message"]["content"].startswith("[alpha] You said: Hello.")
    assert theirs.json()["assistant_message"]["content"].startswith("[beta] You said: Hola.")
    assert [(call["model"], call["temperature"]) for call in fakes.calls()] == [("alpha", 0.7), ("beta", 0.1)]
    assert transcript(service, "same-id") == [("user", "Hello"), ("assistant", mine.json()["assistant_message"]["content"])]


@pytest.fixture
def model_server() -> Iterator[OpenAICompatibleServer]:
    server = OpenAICompatibleServer().start()
    yield server
    server.stop()


def test_an_openai_compatible_server_gets_the_history_and_the_tenants_credential(
    service: LiveService, tenant: Any, model_server: OpenAICompatibleServer
) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="openai:stub-echo", MEMORY_CHAT_BASE_URL=model_server.base_url)
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret="sk-tenant-secret-0001")

    first = chat(service, "stub", content="Remember: my code is 42.", max_tokens=64, temperature=0.3)
    assert first.status_code == 201, first.text
    events = stream_chat(service, "stub", content="What was my code?")

    whole, streamed = model_server.requests
    assert whole["authorization"] == streamed["authorization"] == "Bearer sk-tenant-secret-0001"
    assert whole["body"]["model"] == "stub-echo"
    assert (whole["body"]["max_tokens"] if "max_tokens" in whole["body"] else whole["body"]["max_completion_tokens"]) == 64
    assert whole["body"]["temperature"] == 0.3
    assert streamed["body"]["stream"] is True
    assert [(m["role"], m["content"]) for m in streamed["body"]["messages"]] == [
        ("user", "Remember: my code is 42."),
        ("assistant", first.json()["assistant_message"]["content"]),
        ("user", "What was my code?"),
    ]
    done = events[-1][1]
    assert done["assistant_message"]["content"] == "stub heard 3 messages; the last: What was my code?"
    assert first.json()["usage"] == {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28}
    # Many OpenAI-compatible servers cannot stream their usage: none is asked of them (LangChain's own
    # default for a base URL), and the streamed answer's usage is estimated, and says so.
    assert "stream_options" not in streamed["body"]
    assert done["usage"]["estimated"] is True
    assert done["usage"]["output_tokens"] > 0
    assert "sk-tenant-secret-0001" not in first.text + json.dumps(events)


def test_an_openai_compatible_server_that_fails_or_is_slow(
    service: LiveService, tenant: Any, model_server: OpenAICompatibleServer
) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="openai:stub-echo", MEMORY_CHAT_BASE_URL=model_server.base_url, MEMORY_CHAT_TIMEOUT=2)
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret="sk-tenant-secret-0001")

    failed = chat(service, "stub-faults", content="First", model="stub-fail")
    slow = chat(service, "stub-faults", content="Second", model="stub-slow")
    fine = chat(service, "stub-faults", content="Third")

    assert (failed.status_code, failed.json()["error"]["code"]) == (502, "model_error")
    assert failed.json()["error"]["details"]["provider_status"] == 500
    assert (slow.status_code, slow.json()["error"]["code"]) == (504, "model_timeout")
    assert fine.status_code == 201
    assert transcript(service, "stub-faults") == [
        ("user", "First"),
        ("user", "Second"),
        ("user", "Third"),
        ("assistant", "stub heard 3 messages; the last: Third"),
    ]


def test_a_model_server_that_is_not_there_is_a_502(service: LiveService, tenant: Any) -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    configure(
        tenant, MEMORY_CHAT_MODEL="openai:any", MEMORY_CHAT_BASE_URL=f"http://127.0.0.1:{port}/v1", MEMORY_CHAT_MAX_RETRIES=0
    )
    tenant_services.provider_credential_set(tenant=tenant, provider="openai", secret="sk-tenant-secret-0001")

    response = chat(service, "nowhere", content="Hello?")

    assert response.status_code == 502
    assert response.json()["error"]["details"]["model"] == "openai:any"
    assert transcript(service, "nowhere") == [("user", "Hello?")]


def test_no_model_configured_stores_nothing(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="")
    conversation_id = f"unconfigured-{uuid.uuid4().hex[:6]}"
    response = chat(service, conversation_id, content="Hello")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "chat_model_not_configured"
    assert transcript(service, conversation_id) == []


def test_history_that_cannot_be_read_leaves_the_answer_without_it_and_says_so(
    service: LiveService, tenant: Any, worker_env: dict[str, str]
) -> None:
    """PostgreSQL down and the conversation gone from the cache: its history cannot be read, the
    message and the answer are still stored (Redis and the broker), and the answer says so."""
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo")
    database = connection.settings_dict
    proxy = TcpProxy(int(database["PORT"] or 5432), database["HOST"] or "127.0.0.1")
    proxy.start()
    proxied = {**worker_env, "DATABASE_URL": f"postgres://{database['USER']}@127.0.0.1:{proxy.port}/{database['NAME']}"}
    web = WebServer(env=proxied, name="chat-pg-proxy", workers=1)
    web.start()
    cold = LiveService(web=web, worker=service.worker, api_key=service.api_key)
    try:
        assert chat(cold, "pg-down", content="Before the outage.").status_code == 201  # the key's record is cached now
        wait_for_rows(Message, tenant, 2, conversation__conversation_id="pg-down")
        redis = get_redis_connection("default")
        redis.delete(*redis.keys(f"{tenant.slug}:pg-down:*"))  # the conversation leaves the cache
        proxy.cut()

        response = chat(cold, "pg-down", content="During the outage.")

        assert response.status_code == 201, response.text
        assert response.json()["history"]["used"] is False
        assert "could not be read" in response.json()["history"]["error"]
        assert [(m["type"], m["content"]) for m in fakes.calls()[-1]["messages"]] == [("human", "During the outage.")]
    finally:
        proxy.restore()
        web.stop()
        proxy.close()
    wait_for_rows(Message, tenant, 4, conversation__conversation_id="pg-down", timeout=60)


def test_the_client_holds_a_chat_and_streams_it(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo")
    with service.client() as client:
        first = client.chat("client-chat", "Hello from the client.", user_id="ada")
        events = list(client.chat_stream("client-chat", "And again."))

    assert first["assistant_message"]["content"] == "[echo] You said: Hello from the client.. I was given 0 earlier messages."
    assert events[0][0] == "start"
    assert events[-1][0] == "done"
    assert "".join(data["text"] for name, data in events if name == "token") == (
        "[echo] You said: And again.. I was given 2 earlier messages."
    )
    assert [role for role, _ in transcript(service, "client-chat")] == ["user", "assistant", "user", "assistant"]


def test_the_client_raises_a_missing_model_at_once(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="")
    started = time.monotonic()
    with service.client(retries=3) as client, pytest.raises(MemoryServiceError) as raised:
        client.chat("client-unconfigured", "Hello")

    assert time.monotonic() - started < RETRY_AFTER_CAP  # one attempt: a retry would first wait Retry-After
    assert (raised.value.status, raised.value.code) == (503, "chat_model_not_configured")
    assert "MEMORY_CHAT_MODEL" in raised.value.message


def test_a_message_sent_again_while_it_is_being_answered_is_a_409_not_a_second_answer(service: LiveService, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo", MEMORY_CHAT_TIMEOUT=2)
    message_id = str(uuid.uuid4())
    first: dict[str, httpx.Response] = {}
    slow = threading.Thread(
        target=lambda: first.update(answer=chat(service, "twice", content="Hello", message_id=message_id, model="slow-model"))
    )
    slow.start()
    try:
        wait_until(lambda: fakes.calls(), timeout=10, message="the model to be asked")

        again = chat(service, "twice", content="Hello", message_id=message_id)
    finally:
        slow.join()

    assert again.status_code == 409
    assert again.json()["error"]["code"] == "chat_in_progress"
    assert first["answer"].status_code == 504
    retried = chat(service, "twice", content="Hello", message_id=message_id)  # the first turn has ended
    assert retried.status_code == 201
    assert len(fakes.calls()) == 2
    assert transcript(service, "twice") == [("user", "Hello"), ("assistant", retried.json()["assistant_message"]["content"])]


def test_a_second_message_to_a_conversation_whose_turn_is_running_is_a_409_and_is_not_stored(
    service: LiveService, tenant: Any
) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo", MEMORY_CHAT_TIMEOUT=2)
    first: dict[str, httpx.Response] = {}
    slow = threading.Thread(target=lambda: first.update(answer=chat(service, "at-once", content="First", model="slow-model")))
    slow.start()
    try:
        wait_until(lambda: fakes.calls(), timeout=10, message="the model to be asked")

        second = chat(service, "at-once", content="Second")
        with httpx.stream(
            "POST",
            f"{service.url}/api/v1/conversations/at-once/chat/",
            json={"content": "Third", "stream": True},
            headers={"Authorization": f"Api-Key {service.api_key}"},
            timeout=30,
        ) as streamed:
            streamed.read()
    finally:
        slow.join()

    for refused in (second, streamed):
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "run_active"
        assert refused.headers["Retry-After"]
    assert first["answer"].status_code == 504
    assert transcript(service, "at-once") == [("user", "First")]
    assert chat(service, "at-once", content="Second").status_code == 201  # the first turn has ended


def test_another_tenants_reads_are_answered_while_a_tenants_model_server_hangs(
    service: LiveService, tenant: Any, other_tenant: Any, worker_env: dict[str, str], model_server: OpenAICompatibleServer
) -> None:
    """Tenant B's chats wait on a model server that does not answer; tenant A reads its window on the
    same web process meanwhile. One worker of 4 threads: chats may hold 2 of them, the others are
    refused at once (503 chat_capacity), and A's reads get the threads left."""
    configure(
        other_tenant,
        MEMORY_CHAT_MODEL="openai:stub-hang",
        MEMORY_CHAT_BASE_URL=model_server.base_url,
        MEMORY_CHAT_TIMEOUT=60,
        MEMORY_CHAT_MAX_RETRIES=0,
    )
    tenant_services.provider_credential_set(tenant=other_tenant, provider="openai", secret="sk-tenant-b-0001")
    _, key_b = tenant_services.api_key_create(tenant=other_tenant, name="hanging")
    web = WebServer(env={**worker_env, "MEMORY_EGRESS_ALLOWED_NETWORKS": "127.0.0.1/32"}, name="chat-fair", workers=1, threads=4)
    web.start()
    shared = LiveService(web=web, worker=service.worker, api_key=service.api_key)
    answers: dict[int, httpx.Response] = {}
    chats = [
        threading.Thread(target=lambda n=n: answers.update({n: chat(shared, f"hang-{n}", api_key=key_b, content="Hello?")}))
        for n in range(5)
    ]
    try:
        assert httpx.post(
            f"{shared.url}/api/v1/conversations/a-reads/messages/",
            json={"role": "user", "content": "A's own message"},
            headers={"Authorization": f"Api-Key {service.api_key}"},
            timeout=10,
        ).is_success
        for thread in chats:
            thread.start()
        wait_until(lambda: model_server.hanging == 2 and len(answers) == 3, timeout=30, message="2 chats hanging, 3 refused")
        assert (
            sorted((response.status_code, response.json()["error"]["code"]) for response in answers.values())
            == [(503, "chat_capacity")] * 3
        )

        reads = [
            httpx.get(
                f"{shared.url}/api/v1/conversations/a-reads/messages/",
                headers={"Authorization": f"Api-Key {service.api_key}"},
                timeout=30,
            )
            for _ in range(20)
        ]

        assert [response.status_code for response in reads] == [200] * 20
        assert reads[-1].json()["messages"][0]["content"] == "A's own message"
        # Answered before the hanging chats returned: they still hang.
        assert model_server.hanging == 2
        assert len(answers) == 3
    finally:
        model_server.release()
        for thread in chats:
            thread.join()
        web.stop()
    assert sorted(response.status_code for response in answers.values()) == [201, 201, 503, 503, 503]

"""The chat endpoint in process (Django's test client): the loop, its answers, its failures and what
each leaves stored. ``test_chat_live.py`` holds the same promises against gunicorn and a worker."""

import uuid
from typing import Any

import pytest
from django.test import override_settings

from chat import services
from conversations import selectors
from core.exceptions import NotFound
from tenants import services as tenant_services
from tests.chat import fakes
from tests.conftest import client_for

URL = "/api/v1/conversations/{}/chat/"


def configure(tenant: Any, **chat_settings: Any) -> None:
    tenant_services.tenant_update(tenant=tenant, settings={**tenant.settings, **chat_settings})


def stored(tenant: Any, conversation_id: str) -> list[dict[str, Any]]:
    """The conversation's window (what the next turn reads); none for a conversation never written."""
    try:
        window = selectors.conversation_window(
            tenant=tenant, conversation_id=conversation_id, query=selectors.WindowQuery(limit=50)
        )
    except NotFound:
        return []
    return window.messages


@pytest.fixture
def chat_api(tenant: Any) -> Any:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo")
    return client_for(tenant)


def test_a_turn_stores_both_messages_and_answers_with_them(chat_api: Any, tenant: Any) -> None:
    response = chat_api.post(
        URL.format("c1"), {"content": "Hello there", "system_prompt": "Be brief.", "user_id": "u1"}, format="json"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["assistant_message"]["content"] == "[echo] You said: Hello there. I was given 0 earlier messages."
    assert body["user_message"]["content"] == "Hello there"
    assert body["model"] == "fake:echo"
    metadata = body["assistant_message"]["metadata"]
    assert metadata["user_message_id"] == body["user_message"]["id"]
    assert metadata["model"] == "fake:echo"
    assert metadata["execution_time"] >= 0
    assert metadata["usage"]["output_tokens"] > 0
    assert metadata["usage"]["estimated"] is True
    assert body["history"] == {"used": True, "messages": 0, "error": None}
    assert [(m["role"], m["content"]) for m in stored(tenant, "c1")] == [
        ("user", "Hello there"),
        ("assistant", body["assistant_message"]["content"]),
    ]
    (call,) = fakes.calls()
    assert [(m["type"], m["content"]) for m in call["messages"]] == [("system", "Be brief."), ("human", "Hello there")]
    memory = chat_api.get("/api/v1/conversations/c1/memory/").json()
    assert memory["messages"][-1] == {"role": "assistant", "content": body["assistant_message"]["content"]}
    assert memory["metadata"]["chat"]["last_assistant_message_id"] == body["assistant_message"]["id"]


def test_later_turns_give_the_model_the_earlier_ones(chat_api: Any) -> None:
    for text in ("My name is Ada.", "I live in Lisbon.", "What is my name?"):
        assert chat_api.post(URL.format("c2"), {"content": text}, format="json").status_code == 201

    last = fakes.calls()[-1]["messages"]
    assert [(m["type"], m["content"]) for m in last] == [
        ("human", "My name is Ada."),
        ("ai", "[echo] You said: My name is Ada.. I was given 0 earlier messages."),
        ("human", "I live in Lisbon."),
        ("ai", "[echo] You said: I live in Lisbon.. I was given 2 earlier messages."),
        ("human", "What is my name?"),
    ]


def test_no_model_configured_is_a_503_naming_the_setting_and_stores_nothing(tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="")
    response = client_for(tenant).post(URL.format("c3"), {"content": "Hello"}, format="json")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "chat_model_not_configured"
    assert "MEMORY_CHAT_MODEL" in response.json()["error"]["message"]
    assert response["Retry-After"]
    assert stored(tenant, "c3") == []


def test_a_failing_model_is_a_502_and_leaves_the_user_message_alone(chat_api: Any, tenant: Any) -> None:
    message_id = str(uuid.uuid4())
    response = chat_api.post(
        URL.format("c4"), {"content": "Hello", "model": "failing-model", "message_id": message_id}, format="json"
    )

    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "model_error"
    assert "fake:failing-model" in error["message"]
    assert error["details"]["user_message_id"] == message_id
    assert [(m["id"], m["role"]) for m in stored(tenant, "c4")] == [(message_id, "user")]

    # Sent again with the same id and a working model: the message is not stored twice.
    again = chat_api.post(URL.format("c4"), {"content": "Hello", "message_id": message_id}, format="json")
    assert again.status_code == 201
    assert [m["role"] for m in stored(tenant, "c4")] == ["user", "assistant"]


@override_settings(MEMORY_CHAT_TIMEOUT=0.5)
def test_a_slow_model_is_a_504(chat_api: Any, tenant: Any) -> None:
    response = chat_api.post(URL.format("c5"), {"content": "Hello", "model": "slow-model"}, format="json")

    assert response.status_code == 504
    assert response.json()["error"]["code"] == "model_timeout"
    assert "MEMORY_CHAT_TIMEOUT=0.5" in response.json()["error"]["message"]
    assert [m["role"] for m in stored(tenant, "c5")] == ["user"]


def test_a_resent_answered_message_comes_back_without_asking_the_model(chat_api: Any, tenant: Any) -> None:
    message_id = str(uuid.uuid4())
    first = chat_api.post(URL.format("c6"), {"content": "Hello", "message_id": message_id}, format="json")
    again = chat_api.post(URL.format("c6"), {"content": "Hello", "message_id": message_id}, format="json")

    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["replayed"] is True
    assert again.json()["assistant_message"]["id"] == first.json()["assistant_message"]["id"]
    assert len(fakes.calls()) == 1
    assert len(stored(tenant, "c6")) == 2


def test_history_that_cannot_be_read_is_left_out_and_said(chat_api: Any, tenant: Any, monkeypatch: Any) -> None:
    assert chat_api.post(URL.format("c7"), {"content": "Earlier"}, format="json").status_code == 201

    def unreadable(**kwargs: Any) -> None:
        raise services.ModelFailed("stand-in")  # any error of the history read

    monkeypatch.setattr(selectors, "conversation_context", unreadable)
    response = chat_api.post(URL.format("c7"), {"content": "Now"}, format="json")

    assert response.status_code == 201
    assert response.json()["history"]["used"] is False
    assert "could not be read" in response.json()["history"]["error"]
    assert [(m["type"], m["content"]) for m in fakes.calls()[-1]["messages"]] == [("human", "Now")]


def test_streaming_sends_tokens_then_the_stored_answer(chat_api: Any, tenant: Any) -> None:
    response = chat_api.post(URL.format("c8"), {"content": "Stream it", "stream": True}, format="json")

    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    events = parse_events(b"".join(response.streaming_content))
    names = [name for name, _ in events]
    assert names[0] == "start"
    assert names[-1] == "done"
    assert set(names[1:-1]) == {"token"}
    text = "".join(data["text"] for name, data in events if name == "token")
    done = events[-1][1]
    assert text == done["assistant_message"]["content"] == "[echo] You said: Stream it. I was given 0 earlier messages."
    assert [m["content"] for m in stored(tenant, "c8")] == ["Stream it", text]


def test_a_model_failing_mid_stream_ends_the_stream_with_an_error_and_stores_no_answer(chat_api: Any, tenant: Any) -> None:
    response = chat_api.post(URL.format("c9"), {"content": "Go", "model": "breaking-model", "stream": True}, format="json")

    events = parse_events(b"".join(response.streaming_content))
    assert [name for name, _ in events] == ["start", *["token"] * 5, "error"]
    assert events[-1][1]["error"]["code"] == "model_error"
    assert [m["role"] for m in stored(tenant, "c9")] == ["user"]


def test_bad_input_is_a_400_naming_the_field_and_stores_nothing(chat_api: Any, tenant: Any) -> None:
    for body, field in (
        ({}, "content"),
        ({"content": "   "}, "content"),
        ({"content": "Hi", "temperature": 3}, "temperature"),
        ({"content": "Hi", "max_tokens": 10**6}, "max_tokens"),
        ({"content": "Hi", "model": "no spaces allowed"}, "model"),
        ({"content": "Hi", "message_id": "not-a-uuid"}, "message_id"),
    ):
        response = chat_api.post(URL.format("c10"), body, format="json")
        assert response.status_code == 400, body
        assert field in response.json()["error"]["message"], response.json()
    assert stored(tenant, "c10") == []
    assert fakes.calls() == []


def test_a_tenant_setting_that_names_no_known_provider_is_refused(tenant: Any) -> None:
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="unknown provider 'nosuch'"):
        configure(tenant, MEMORY_CHAT_MODEL="nosuch:model")
    with pytest.raises(ValidationError, match="not an http"):
        configure(tenant, MEMORY_CHAT_BASE_URL="ftp://example.com")


def parse_events(raw: bytes) -> list[tuple[str, Any]]:
    import json

    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events

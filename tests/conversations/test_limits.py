"""Bounded input: breaking a limit is a 400 (413 for the body) whose message names the
setting, and nothing is written: no cache key, no row, no task in the broker.

Every test takes ``no_worker`` so that a task published by mistake would still be in the queue.
"""

import json
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings
from django_redis import get_redis_connection
from rest_framework.test import APIClient

from conversations.models import Conversation, Message
from memoryproject.celery import app as celery_app
from tests.factories import message_payload

MESSAGES = "/api/v1/conversations/c1/messages/"
MEMORY = "/api/v1/conversations/c1/memory/"
CONVERSATIONS = "/api/v1/conversations/"


def queue_depth() -> int:
    with celery_app.connection_for_write() as broker:
        _, depth, _ = broker.default_channel.queue_declare(settings.MEMORY_QUEUE, passive=True)
    return depth


def assert_nothing_written(tenant: Any) -> None:
    assert list(get_redis_connection("default").scan_iter(match=f"{tenant.slug}:*")) == []
    assert Message.objects.for_tenant(tenant).count() == 0
    assert Conversation.objects.for_tenant(tenant).count() == 0
    assert queue_depth() == 0


def assert_refused_naming(answer: Any, setting: str, *, status: int = 400) -> None:
    assert answer.status_code == status, answer.content
    error = answer.json()["error"]
    assert setting in error["message"]
    assert error["code"] == ("payload_too_large" if status == 413 else "limit_exceeded")


@pytest.fixture(autouse=True)
def queue_exists(no_worker: None) -> None:
    """Declare the test queue, so that its depth can be read even before the first publish."""
    with celery_app.connection_for_write() as broker:
        celery_app.amqp.queues[settings.MEMORY_QUEUE](broker.default_channel).declare()


@override_settings(MEMORY_MAX_CONTENT_CHARS=10)
def test_content_over_the_limit_is_refused_and_nothing_is_written(api, tenant):
    answer = api.post(MESSAGES, {"role": "user", "content": "x" * 11}, format="json")

    assert_refused_naming(answer, "MEMORY_MAX_CONTENT_CHARS")
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_CONTENT_CHARS=10)
def test_content_at_the_limit_is_accepted(api, tenant):
    assert api.post(MESSAGES, {"role": "user", "content": "x" * 10}, format="json").status_code == 201


@override_settings(MEMORY_MAX_CONTENT_CHARS=10)
def test_one_message_over_the_limit_refuses_the_whole_batch(api, tenant):
    batch = [{"role": "user", "content": "short"}, {"role": "user", "content": "x" * 11}]

    answer = api.post(MESSAGES, {"messages": batch}, format="json")

    assert_refused_naming(answer, "MEMORY_MAX_CONTENT_CHARS")
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_METADATA_BYTES=32)
def test_message_metadata_over_the_limit_is_refused_and_nothing_is_written(api, tenant):
    answer = api.post(MESSAGES, message_payload(metadata={"note": "y" * 40}), format="json")

    assert_refused_naming(answer, "MEMORY_MAX_METADATA_BYTES")
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_METADATA_BYTES=32)
def test_conversation_metadata_over_the_limit_is_refused_on_create(api, tenant):
    answer = api.post(CONVERSATIONS, {"conversation_id": "c1", "metadata": {"note": "y" * 40}}, format="json")

    assert_refused_naming(answer, "MEMORY_MAX_METADATA_BYTES")
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_BATCH=2)
def test_a_batch_over_the_limit_is_refused_and_nothing_is_written(api, tenant):
    answer = api.post(MESSAGES, {"messages": [message_payload() for _ in range(3)]}, format="json")

    assert_refused_naming(answer, "MEMORY_MAX_BATCH")
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_BATCH=2)
def test_a_batch_at_the_limit_is_accepted(api, tenant):
    answer = api.post(MESSAGES, {"messages": [message_payload() for _ in range(2)]}, format="json")

    assert answer.status_code == 201
    assert len(answer.json()["messages"]) == 2


@override_settings(MEMORY_MAX_PAGE_SIZE=5)
def test_a_window_page_over_the_limit_is_refused_without_touching_the_cache(api, tenant):
    api.post(CONVERSATIONS, {"conversation_id": "c1"}, format="json")

    refused = api.get(MESSAGES, {"limit": 6})

    assert_refused_naming(refused, "MEMORY_MAX_PAGE_SIZE")
    assert list(get_redis_connection("default").scan_iter(match="acme:*")) == []
    assert api.get(MESSAGES, {"limit": 5}).status_code == 200


@override_settings(MEMORY_MAX_PAGE_SIZE=5)
def test_a_conversation_page_over_the_limit_is_refused(api, tenant):
    refused = api.get(CONVERSATIONS, {"limit": 6})

    assert_refused_naming(refused, "MEMORY_MAX_PAGE_SIZE")
    assert api.get(CONVERSATIONS, {"limit": 5}).status_code == 200


@override_settings(MEMORY_MAX_MEMORY_BYTES=64)
def test_a_memory_document_over_the_limit_is_refused_and_nothing_is_written(api, tenant):
    answer = api.put(MEMORY, {"messages": [{"role": "user", "content": "z" * 80}]}, format="json")

    assert_refused_naming(answer, "MEMORY_MAX_MEMORY_BYTES")
    assert_nothing_written(tenant)


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=200)
@pytest.mark.parametrize(("method", "url"), [("post", MESSAGES), ("put", MEMORY)])
def test_a_body_over_the_upload_limit_is_413_and_nothing_is_written(api, tenant, method, url):
    body = {"role": "user", "content": "w" * 300, "messages": [{"content": "w" * 300}]}

    answer = getattr(api, method)(url, body, format="json")

    assert_refused_naming(answer, "DATA_UPLOAD_MAX_MEMORY_SIZE", status=413)
    assert_nothing_written(tenant)


@pytest.mark.parametrize(
    "body",
    [
        pytest.param({"role": "narrator", "content": "hi"}, id="unknown role"),
        pytest.param({"content": "hi"}, id="missing role"),
        pytest.param({"role": "user"}, id="missing content"),
        pytest.param({"role": "user", "content": ["a", "list"]}, id="content a list"),
        pytest.param({"role": "user", "content": {"an": "object"}}, id="content an object"),
        pytest.param({"role": "user", "content": "hi", "metadata": ["not", "an", "object"]}, id="metadata a list"),
        pytest.param({"role": "user", "content": "hi", "id": "not-a-uuid"}, id="id not a uuid"),
        pytest.param({"role": "user", "content": "nul \u0000 inside"}, id="content with a NUL"),
        pytest.param({"messages": []}, id="empty batch"),
        pytest.param(
            {"messages": [{"role": "user", "content": "ok"}, {"role": "user", "content": None}]}, id="batch item null content"
        ),
        pytest.param({"messages": [{"role": "user", "content": "ok"}], "role": "user", "content": "both"}, id="one and a batch"),
    ],
)
def test_an_invalid_message_is_a_400_validation_error_and_nothing_is_written(api, tenant, body):
    answer = api.post(MESSAGES, body, format="json")

    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["code"] == "validation_error"
    assert answer.json()["error"]["message"]
    assert_nothing_written(tenant)


def test_a_body_that_is_not_json_is_a_400_parse_error(api, tenant):
    answer = api.post(MESSAGES, b'{"role": "user", "content": ', content_type="application/json")

    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "parse_error"
    assert_nothing_written(tenant)


@pytest.mark.parametrize(
    ("method", "url", "body"),
    [
        ("get", CONVERSATIONS, None),
        ("post", MESSAGES, {"role": "user", "content": "hi"}),
        ("put", MEMORY, {"messages": []}),
        ("get", "/api/v1/status/", None),
    ],
)
def test_a_request_without_an_api_key_is_refused_with_a_json_error(tenant, method, url, body):
    answer = getattr(APIClient(), method)(url, body, format="json")

    assert answer.status_code == 401
    assert answer["Content-Type"] == "application/json"
    assert answer.json()["error"]["code"] == "not_authenticated"
    assert json.loads(answer.content)["error"]["message"]
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_ID_LENGTH=10)
def test_a_conversation_id_over_the_id_length_limit_is_refused_naming_the_setting(api, tenant):
    answer = api.post(CONVERSATIONS, {"conversation_id": "c" * 11}, format="json")

    assert answer.status_code == 400
    assert "MEMORY_MAX_ID_LENGTH" in answer.json()["error"]["message"]
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_PAGE_SIZE=5)
def test_a_skip_too_deep_is_refused_naming_the_setting(api, tenant):
    api.post(CONVERSATIONS, {"conversation_id": "c1"}, format="json")

    answer = api.get(MESSAGES, {"skip": 500, "limit": 5})

    assert_refused_naming(answer, "MEMORY_MAX_PAGE_SIZE")


def test_a_conversation_id_of_200_characters_is_accepted_and_201_is_refused_naming_the_setting(api, tenant):
    accepted = api.post(CONVERSATIONS, {"conversation_id": "c" * 200}, format="json")
    refused = api.post(CONVERSATIONS, {"conversation_id": "d" * 201}, format="json")

    assert accepted.status_code == 201, accepted.content
    assert_refused_naming(refused, "MEMORY_MAX_ID_LENGTH")
    assert not Conversation.objects.for_tenant(tenant).filter(conversation_id="d" * 201).exists()


@override_settings(MEMORY_MAX_ID_LENGTH=10)
def test_appending_to_a_conversation_id_over_the_limit_is_refused_naming_the_setting(api, tenant):
    answer = api.post(f"{CONVERSATIONS}{'c' * 11}/messages/", message_payload(), format="json")

    assert_refused_naming(answer, "MEMORY_MAX_ID_LENGTH")
    assert_nothing_written(tenant)

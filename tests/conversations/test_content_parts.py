"""Content given as a list of parts (text, images, tool use blocks) and tool artifacts, through the API
against the real PostgreSQL, Redis and RabbitMQ: kept as text plus parts, given back as sent, shaped
for OpenAI and LangChain, bounded by their own limits."""

from typing import Any

import pytest
from django.test import override_settings
from django_redis import get_redis_connection
from langchain_core.messages import HumanMessage, messages_from_dict

from conversations.models import Message
from tests.conftest import run_queued_tasks
from tests.conversations.test_limits import assert_nothing_written, assert_refused_naming, queue_exists  # noqa: F401

MESSAGES = "/api/v1/conversations/c1/messages/"
WINDOW = "/api/v1/conversations/c1/window/"
CONTEXT = "/api/v1/conversations/c1/context/"
IMAGE_URL = "https://images.example/sol.png"
PARTS = [
    {"type": "text", "text": "What is in this picture?"},
    {"type": "image_url", "image_url": {"url": IMAGE_URL, "detail": "low"}},
]
ID = "6f1c2a0e-3b7d-4c55-9d0e-0a1b2c3d4e5f"


def append(api: Any, *messages: dict[str, Any], status: int = 201) -> list[dict[str, Any]]:
    answer = api.post(MESSAGES, {"messages": list(messages)}, format="json")
    assert answer.status_code == status, answer.content
    return answer.json()["messages"]


def read_back(api: Any) -> list[dict[str, Any]]:
    answer = api.get(MESSAGES)
    assert answer.status_code == 200, answer.content
    return answer.json()["messages"]


def test_list_content_is_given_back_as_sent_and_kept_as_its_text_with_the_parts(api, tenant):
    [answered] = append(api, {"id": ID, "role": "user", "content": PARTS, "metadata": {"topic": "art"}})

    assert answered["content"] == PARTS
    assert answered["metadata"] == {"topic": "art"}
    assert answered["token_count"] == 6  # the text alone: "What is in this picture?"
    run_queued_tasks()
    row = Message.objects.for_tenant(tenant).get(message_id=ID)
    assert row.content == "What is in this picture?"
    assert row.metadata == {"topic": "art", "content_parts": PARTS}
    # From the cache, then from PostgreSQL once the cache is gone, and one by one: the same.
    assert [(message["content"], message["metadata"]) for message in read_back(api)] == [(PARTS, {"topic": "art"})]
    get_redis_connection("default").flushdb()
    assert [(message["content"], message["metadata"]) for message in read_back(api)] == [(PARTS, {"topic": "art"})]
    detail = api.get(f"{MESSAGES}{ID}/").json()
    assert (detail["content"], detail["metadata"]) == (PARTS, {"topic": "art"})


def test_the_one_message_body_and_the_validated_path_store_the_same_parts(api, tenant):
    # "name" is not read by the direct path: the serializer decides that body.
    api.post(MESSAGES, {"role": "user", "content": PARTS}, format="json")
    api.post(MESSAGES, {"role": "user", "content": PARTS, "name": "ada"}, format="json")
    run_queued_tasks()
    rows = Message.objects.for_tenant(tenant).order_by("seq")
    assert [(row.content, row.metadata) for row in rows] == [
        ("What is in this picture?", {"content_parts": PARTS}),
        ("What is in this picture?", {"content_parts": PARTS, "name": "ada"}),
    ]


def test_resending_the_same_parts_is_idempotent_and_other_parts_are_a_conflict(api, tenant):
    first = append(api, {"id": ID, "role": "user", "content": PARTS})
    again = append(api, {"id": ID, "role": "user", "content": PARTS}, status=200)
    assert again[0]["seq"] == first[0]["seq"]
    other = [PARTS[0], {"type": "image_url", "image_url": {"url": "https://images.example/other.png"}}]
    answer = api.post(MESSAGES, {"messages": [{"id": ID, "role": "user", "content": other}]}, format="json")
    assert answer.status_code == 409, answer.content
    assert answer.json()["error"]["code"] == "conflict"
    # The same text sent as a string is another message too: its parts differ.
    answer = api.post(MESSAGES, {"messages": [{"id": ID, "role": "user", "content": "What is in this picture?"}]}, format="json")
    assert answer.status_code == 409, answer.content


def test_an_image_part_reaches_the_openai_window_and_context_and_the_langchain_ones(api, tenant):
    base64_image = {"type": "image", "base64": "iVBORw0KGgo=", "mime_type": "image/png"}
    append(
        api,
        {"role": "user", "content": [*PARTS, base64_image]},
        {"role": "assistant", "content": "A square in Madrid."},
    )
    openai_parts = [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": IMAGE_URL, "detail": "low"}},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]

    window = api.get(WINDOW, {"format": "openai"}).json()["messages"]
    assert window[0] == {"role": "user", "content": openai_parts}
    context = api.post(CONTEXT, {"query": "And the weather?"}, format="json").json()
    assert context["messages"][0] == {"role": "user", "content": openai_parts}

    # Sent without LangChain's fields, the message is a HumanMessage with the service's id.
    langchain = messages_from_dict(api.get(WINDOW, {"format": "langchain"}).json()["messages"])
    assert langchain[0] == HumanMessage(content=[*PARTS, base64_image], id=langchain[0].id)
    langchain = messages_from_dict(
        api.post(CONTEXT, {"query": "And the weather?", "format": "langchain"}, format="json").json()["messages"]
    )
    assert langchain[0] == HumanMessage(content=[*PARTS, base64_image], id=langchain[0].id)


def test_a_long_single_text_block_and_a_large_artifact_are_not_metadata(api, tenant):
    answer_text = "Madrid " * 2972 + "!"  # 20,805 characters in one text block
    artifact = {"rows": [{"id": index, "name": f"bar {index:05d}"} for index in range(900)]}
    assert len(str(artifact)) > 24_000
    call = {"id": "call-1", "name": "bars", "args": {"near": "Sol"}, "type": "tool_call"}
    messages = append(
        api,
        {"role": "assistant", "content": [{"type": "text", "text": answer_text}]},
        {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}},
        {"role": "tool", "content": "900 bars", "metadata": {"tool_call_id": "call-1", "artifact": artifact}},
    )

    assert messages[0]["content"] == [{"type": "text", "text": answer_text}]
    assert messages[2]["metadata"] == {"tool_call_id": "call-1", "artifact": artifact}
    run_queued_tasks()
    get_redis_connection("default").flushdb()
    stored = read_back(api)
    assert stored[0]["content"] == [{"type": "text", "text": answer_text}]
    assert stored[2]["metadata"]["artifact"] == artifact


@override_settings(MEMORY_MAX_CONTENT_CHARS=30)
@pytest.mark.parametrize(
    "content",
    [
        [{"type": "text", "text": "x" * 31}],
        [{"type": "image_url", "image_url": {"url": "https://images.example/" + "x" * 10}}],
    ],
    ids=["a long text part", "a long image url"],
)
def test_list_content_over_the_content_limit_is_refused_naming_it_and_nothing_is_written(api, tenant, content):
    answer = api.post(MESSAGES, {"role": "user", "content": content}, format="json")

    assert_refused_naming(answer, "MEMORY_MAX_CONTENT_CHARS")
    assert answer.json()["error"]["details"]["field"] == "content"
    assert_nothing_written(tenant)


@override_settings(MEMORY_MAX_ARTIFACT_BYTES=100, MEMORY_MAX_METADATA_BYTES=40)
def test_the_artifact_has_its_own_limit_and_the_metadata_limit_leaves_it_out(api, tenant):
    small = {"tool_call_id": "call-1", "artifact": {"rows": "x" * 80}}  # 88 bytes of artifact, 24 of the rest
    answer = api.post(
        MESSAGES, {"role": "tool", "content": "ok", "metadata": {**small, "artifact": {"rows": "x" * 100}}}, format="json"
    )
    assert_refused_naming(answer, "MEMORY_MAX_ARTIFACT_BYTES")
    assert answer.json()["error"]["details"]["field"] == "metadata.artifact"
    answer = api.post(MESSAGES, {"role": "tool", "content": "ok", "metadata": {**small, "note": "y" * 20}}, format="json")
    assert_refused_naming(answer, "MEMORY_MAX_METADATA_BYTES")
    assert_nothing_written(tenant)

    assert api.post(MESSAGES, {"role": "tool", "content": "ok", "metadata": small}, format="json").status_code == 201


@pytest.mark.parametrize(
    ("content", "metadata", "field"),
    [
        (["just text"], {}, "content"),
        ([{"text": "no type"}], {}, "content"),
        ([{"type": 3}], {}, "content"),
        ({"type": "text", "text": "not a list"}, {}, "content"),
        ([{"type": "text", "text": "\x00"}], {}, "content[0].text"),
        ("hello", {"content_parts": PARTS}, "metadata.content_parts"),
    ],
)
def test_malformed_parts_and_the_reserved_key_are_400_naming_the_field_and_nothing_is_written(
    api, tenant, content, metadata, field
):
    answer = api.post(MESSAGES, {"messages": [{"role": "user", "content": content, "metadata": metadata}]}, format="json")

    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["code"] == "validation_error"
    assert field in str(answer.json()["error"]["details"])
    assert_nothing_written(tenant)


def test_messages_stored_with_blocks_in_the_langchain_metadata_still_read_back_with_them(api, tenant):
    blocks = [{"type": "text", "text": "Look"}, {"type": "image_url", "image_url": {"url": IMAGE_URL}}]
    append(api, {"role": "user", "content": "Look", "metadata": {"langchain": {"type": "human", "data": {"content": blocks}}}})

    [message] = messages_from_dict(api.get(WINDOW, {"format": "langchain"}).json()["messages"])
    assert message == HumanMessage(content=blocks)
    assert message.id is None

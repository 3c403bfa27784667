"""The window query and the append body are read directly in their common shapes, and by their DRF
serializers otherwise: both paths give the same answer, and whatever the direct path is unsure of is
left to the serializer, whose errors the API answers."""

import uuid
from typing import Any

import pytest
from django.http import QueryDict
from django.test import override_settings
from rest_framework.exceptions import ValidationError

from conversations.api import serializers
from core.exceptions import LimitExceeded, Unstorable

ID = str(uuid.uuid4())
OTHER_ID = str(uuid.uuid4())

APPEND_BODIES: list[Any] = [
    {"role": "user", "content": "hello"},
    {"role": "assistant", "content": ""},
    {"role": "tool", "content": "  spaced  \n"},
    {"role": "system", "content": "x" * 100_000},
    {"role": "user", "content": "x" * 100_001},
    {"role": "user", "content": "é ✓ 😀"},
    {"role": "user", "content": "nul \x00 inside"},
    {"role": "user", "content": "half a pair \ud800"},
    {"role": "user", "content": 12},
    {"role": "user", "content": None},
    {"role": "assistant", "content": None},
    {"role": "User", "content": "hi"},
    {"role": "", "content": "hi"},
    {"role": 1, "content": "hi"},
    {"content": "no role"},
    {"role": "user"},
    {},
    [],
    "a string",
    {"role": "user", "content": "hi", "id": ID},
    {"role": "user", "content": "hi", "id": ID.replace("-", "")},
    {"role": "user", "content": "hi", "id": "{" + ID + "}"},
    {"role": "user", "content": "hi", "id": "urn:uuid:" + ID},
    {"role": "user", "content": "hi", "id": "not-a-uuid"},
    {"role": "user", "content": "hi", "id": ""},
    {"role": "user", "content": "hi", "id": 12345},
    {"role": "user", "content": "hi", "id": None},
    {"role": "user", "content": "hi", "metadata": {}},
    {"role": "user", "content": "hi", "metadata": {"a": [1, {"b": None}], "tool_calls": [{"id": "c1"}]}},
    {"role": "user", "content": "hi", "metadata": {"a": "x" * 20_000}},
    {"role": "user", "content": "hi", "metadata": {"a\x00": 1}},
    {"role": "user", "content": "hi", "metadata": {"a": "\udfff"}},
    {"role": "user", "content": "hi", "metadata": []},
    {"role": "user", "content": "hi", "metadata": None},
    {"role": "user", "content": "hi", "metadata": "text"},
    {"role": "user", "content": "hi", "created_at": "2024-05-01T10:00:00Z"},
    {"role": "user", "content": "hi", "created_at": "2024-05-01T10:00:00+02:00"},
    {"role": "user", "content": "hi", "created_at": "2024-05-01T10:00:00"},
    {"role": "user", "content": "hi", "created_at": "2024-05-01"},
    {"role": "user", "content": "hi", "created_at": "yesterday"},
    {"role": "user", "content": "hi", "created_at": 1714557600},
    {"role": "user", "content": "hi", "user_id": "u1", "agent_id": "a1"},
    {"role": "user", "content": "hi", "user_id": ""},
    {"role": "user", "content": "hi", "user_id": " u1 "},
    {"role": "user", "content": "hi", "user_id": "u" * 200},
    {"role": "user", "content": "hi", "user_id": "u" * 201},
    {"role": "user", "content": "hi", "user_id": 7},
    {"role": "user", "content": "hi", "user_id": None},
    {"role": "user", "content": "hi", "user_id": "u\x00"},
    {"role": "assistant", "content": "hi", "tool_calls": [{"id": "c1", "name": "f", "args": {}}]},
    {"role": "tool", "content": "42", "tool_call_id": "c1", "name": "f"},
    {"role": "user", "content": "hi", "unknown": "ignored"},
    {"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]},
    {"messages": [{"role": "user", "content": "a", "id": ID}, {"role": "user", "content": "b", "id": OTHER_ID}]},
    {"messages": [{"role": "user", "content": "a", "id": ID}, {"role": "user", "content": "b", "id": ID}]},
    {"messages": [{"role": "user", "content": "a", "id": ID}, {"role": "user", "content": "b", "id": ID.upper()}]},
    {"messages": [{"role": "user", "content": "a"}], "user_id": "u1", "agent_id": "a1"},
    {"messages": [{"role": "user", "content": "a"}], "role": "user"},
    {"messages": [{"role": "user", "content": "a"}], "content": "b"},
    {"messages": [{"role": "user", "content": "a", "metadata": {"k": "v"}, "created_at": "2024-05-01T10:00:00Z"}]},
    {"messages": [{"role": "user", "content": "a", "user_id": "u1"}]},
    {"messages": [{"role": "user", "content": "a"}, "text"]},
    {"messages": [{"role": "user", "content": "a"}, {"role": "robot", "content": "b"}]},
    {"messages": []},
    {"messages": [{"role": "user", "content": str(n)} for n in range(100)]},
    {"messages": [{"role": "user", "content": str(n)} for n in range(101)]},
    {"messages": {"role": "user", "content": "a"}},
    {"messages": None},
]


def serializer_answer(data: Any) -> tuple[str, Any]:
    serializer = serializers.AppendSerializer(data=data)
    try:
        serializer.is_valid(raise_exception=True)
    except (ValidationError, LimitExceeded, Unstorable) as error:
        return "error", getattr(error, "detail", None) or str(error)
    return "valid", serializer.validated_data


def caught(function: Any, *args: Any) -> Any:
    try:
        return "valid", function(*args)
    except (ValidationError, LimitExceeded, Unstorable) as error:
        return "error", getattr(error, "detail", None) or str(error)


@pytest.mark.parametrize("body", APPEND_BODIES, ids=range(len(APPEND_BODIES)))
def test_an_append_body_is_read_as_the_serializer_reads_it(body):
    direct = serializers._plain_append(body)

    expected = serializer_answer(body)
    if direct is not None:
        assert expected == ("valid", direct)
    assert caught(serializers.append_values, body) == expected


def test_the_bodies_agents_send_are_read_without_the_serializer():
    single = {"role": "user", "content": "hello", "metadata": {"k": 1}, "user_id": "u1", "agent_id": "a1"}
    batch = {
        "messages": [
            {"id": ID, "role": "user", "content": "a", "created_at": "2024-05-01T10:00:00Z"},
            {"id": OTHER_ID, "role": "assistant", "content": "b", "metadata": {"tool_calls": [{"id": "c1"}]}},
        ],
        "user_id": "u1",
    }

    assert serializers._plain_append(single) == {
        "messages": [{"role": "user", "content": "hello", "metadata": {"k": 1}}],
        "user_id": "u1",
        "agent_id": "a1",
    }
    values = serializers._plain_append(batch)
    assert [message["id"] for message in values["messages"]] == [uuid.UUID(ID), uuid.UUID(OTHER_ID)]
    assert values["agent_id"] == ""


def test_the_direct_path_reads_the_limits_in_force():
    body = {"messages": [{"role": "user", "content": "abc"}] * 3}
    with override_settings(MEMORY_MAX_BATCH=2):
        assert serializers._plain_append(body) is None
        assert serializer_answer(body)[0] == "error"
    with override_settings(MEMORY_MAX_CONTENT_CHARS=2):
        assert serializers._plain_append({"role": "user", "content": "abc"}) is None


WINDOW_QUERIES = [
    "",
    "limit=50",
    "limit=1",
    "limit=500",
    "limit=501",
    "limit=0",
    "limit=-1",
    "limit=5.0",
    "limit=%205",
    "limit=",
    "limit=abc",
    "limit=" + "9" * 20,
    "limit=\u0665",
    "limit=7&limit=8",
    "skip=10",
    "skip=-3",
    "skip=49500&limit=500",
    "skip=49501&limit=500",
    "skip=50001",
    "include_archived=true",
    "include_archived=1",
    "include_archived=False",
    "include_archived=off",
    "include_archived=",
    "include_archived=maybe",
    "role=user",
    "role=robot",
    "start_date=2024-01-01T00:00:00Z",
    "end_date=2024-01-01T00:00:00Z&start_date=2024-02-01T00:00:00Z",
    "format=openai&limit=20",
    "unknown=1",
]


@pytest.mark.parametrize("query", WINDOW_QUERIES)
def test_a_window_query_is_read_as_the_serializer_reads_it(query):
    params = QueryDict(query)
    direct = serializers._plain_window_query(params)

    expected = caught(lambda: _serializer_window(params))
    if direct is not None:
        assert expected == ("valid", direct)
    assert caught(serializers.window_query_values, params) == expected


def _serializer_window(params: QueryDict) -> dict[str, Any]:
    query = serializers.WindowQuerySerializer(data=params)
    query.is_valid(raise_exception=True)
    return query.validated_data


def test_the_usual_window_queries_are_read_without_the_serializer():
    assert serializers._plain_window_query(QueryDict("")) == {"skip": 0, "include_archived": False}
    assert serializers._plain_window_query(QueryDict("limit=50&skip=5&include_archived=true")) == {
        "limit": 50,
        "skip": 5,
        "include_archived": True,
    }

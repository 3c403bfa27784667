"""The REST API v1 end to end (its endpoints and the write path's promises), against the real PostgreSQL, Redis and RabbitMQ.

Tests that publish tasks take ``no_worker`` (the tasks wait in the broker; ``run_queued_tasks``
then plays the worker's part in this process, step by step) or ``worker`` (a real Celery worker).
"""

import copy
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

import amqp
import pytest
from django.conf import settings
from django.test import override_settings
from django_redis import get_redis_connection

from conversations import cache, services
from conversations.models import Conversation, DeadLetter, Message
from memoryproject.celery import app as celery_app
from tests.conftest import run_queued_tasks, run_tasks, take_queued_tasks, wait_for_rows
from tests.factories import message_payload
from tests.faults import wait_until
from tests.store.test_api import NUMBERS, types_of

CONVERSATIONS = "/api/v1/conversations/"


def conversation_url(conversation_id: str) -> str:
    return f"{CONVERSATIONS}{conversation_id}/"


def messages_url(conversation_id: str) -> str:
    return f"{CONVERSATIONS}{conversation_id}/messages/"


def message_url(conversation_id: str, message_id: str) -> str:
    return f"{CONVERSATIONS}{conversation_id}/messages/{message_id}/"


def memory_url(conversation_id: str) -> str:
    return f"{CONVERSATIONS}{conversation_id}/memory/"


# --- Helpers: the broker queue, the worker's part, Redis ------------------------------------------


def queue_depth() -> int:
    with celery_app.connection_for_write() as broker:
        try:
            _, depth, _ = broker.default_channel.queue_declare(settings.MEMORY_QUEUE, passive=True)
        except amqp.exceptions.NotFound:
            return 0  # nothing was ever published to it
    return depth


def redis_keys(tenant_slug: str, conversation_id: str) -> set[str]:
    pattern = cache.key(tenant_slug, conversation_id, "*")
    return {found.decode() for found in get_redis_connection("default").scan_iter(match=pattern)}


@contextmanager
def redis_unreachable() -> Iterator[None]:
    """Point the cache (and so django-redis and the auth cache) at a port where nothing listens."""
    caches = copy.deepcopy(settings.CACHES)
    caches["default"]["LOCATION"] = "redis://127.0.0.1:1/0"
    with override_settings(CACHES=caches):
        with pytest.raises(cache.CacheUnavailable):
            cache.ping()  # the outage is real: nothing below can pass by reading the live Redis
        yield


def ids(answer: Any) -> list[str]:
    return [message["id"] for message in answer.json()["messages"]]


def append(api: Any, conversation_id: str, **body: Any) -> dict[str, Any]:
    answer = api.post(messages_url(conversation_id), message_payload(**body), format="json")
    assert answer.status_code == 201, answer.content
    return answer.json()["messages"][0]


# --- Conversations ----------------------------------------------------------------------------------


def test_creating_a_conversation_answers_201_with_its_owner_ids(api, tenant):
    answer = api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "u1", "agent_id": "a1"}, format="json")

    assert answer.status_code == 201, answer.content
    assert answer.json()["conversation_id"] == "c1"
    row = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")
    assert (row.user_id, row.agent_id, row.archived) == ("u1", "a1", False)


def test_creating_a_conversation_that_exists_answers_409_and_keeps_the_first(api, tenant):
    assert api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "first"}, format="json").status_code == 201

    answer = api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "second"}, format="json")

    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "conflict"
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").user_id == "first"


@pytest.mark.parametrize("conversation_id", ["has space", "semi;colon", "slash/inside", "-starts-with-a-symbol", "ünïcode"])
def test_an_invalid_conversation_id_is_refused_with_the_allowed_characters_named(api, tenant, conversation_id):
    answer = api.post(CONVERSATIONS, {"conversation_id": conversation_id}, format="json")

    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "validation_error"
    assert "letters, digits and . _ @ = + -" in error["message"]
    assert Conversation.objects.for_tenant(tenant).count() == 0


@pytest.mark.parametrize("write", ["append", "memory"])
def test_a_write_to_an_invalid_conversation_id_is_400_and_publishes_nothing(api, tenant, no_worker, write):
    url = messages_url("has space") if write == "append" else memory_url("has space")
    body = message_payload() if write == "append" else {"messages": []}

    answer = api.post(url, body, format="json") if write == "append" else api.put(url, body, format="json")

    assert answer.status_code == 400, answer.content
    assert "conversation_id" in answer.json()["error"]["details"]
    assert queue_depth() == 0
    assert not Conversation.objects.for_tenant(tenant).exists()


@pytest.mark.parametrize("write", ["append", "memory"])
def test_the_write_that_creates_a_conversation_makes_it_readable_and_patchable_at_once(api, tenant, no_worker, write):
    if write == "append":
        created = api.post(messages_url("c1"), {**message_payload(), "user_id": "u1", "agent_id": "a1"}, format="json")
    else:
        created = api.put(memory_url("c1"), {"messages": []}, format="json")
    assert created.status_code in (200, 201), created.content

    found = api.get(conversation_url("c1"))
    patched = api.patch(conversation_url("c1"), {"archived": True}, format="json")
    run_queued_tasks()

    assert found.status_code == 200, found.content
    if write == "append":
        assert (found.json()["user_id"], found.json()["agent_id"]) == ("u1", "a1")
    assert patched.status_code == 200, patched.content
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").archived is True


def test_a_conversation_id_may_use_every_allowed_symbol(api, tenant, no_worker):
    conversation_id = "Agent.v2_user@example.com=+-1"
    assert api.post(CONVERSATIONS, {"conversation_id": conversation_id}, format="json").status_code == 201

    assert api.get(conversation_url(conversation_id)).json()["conversation_id"] == conversation_id
    message = append(api, conversation_id)
    assert ids(api.get(messages_url(conversation_id))) == [message["id"]]


def test_the_list_filters_by_user_agent_and_archived(api, tenant):
    for conversation_id, user_id, agent_id in [("c1", "u1", "a1"), ("c2", "u1", "a2"), ("c3", "u2", "a1")]:
        api.post(CONVERSATIONS, {"conversation_id": conversation_id, "user_id": user_id, "agent_id": agent_id}, format="json")
    api.patch(conversation_url("c2"), {"archived": True}, format="json")

    def listed(**filters: str) -> set[str]:
        answer = api.get(CONVERSATIONS, filters)
        assert answer.status_code == 200, answer.content
        return {conversation["conversation_id"] for conversation in answer.json()["results"]}

    assert listed() == {"c1", "c2", "c3"}
    assert listed(user_id="u1") == {"c1", "c2"}
    assert listed(agent_id="a1") == {"c1", "c3"}
    assert listed(user_id="u1", agent_id="a1") == {"c1"}
    assert listed(archived="true") == {"c2"}
    assert listed(archived="false") == {"c1", "c3"}
    assert listed(user_id="nobody") == set()


def test_the_list_is_paginated_with_limit_and_offset(api, tenant):
    for number in range(5):
        api.post(CONVERSATIONS, {"conversation_id": f"c{number}"}, format="json")

    pages = [api.get(CONVERSATIONS, {"limit": 2, "offset": offset}).json() for offset in (0, 2, 4)]

    assert [page["count"] for page in pages] == [5, 5, 5]
    assert [len(page["results"]) for page in pages] == [2, 2, 1]
    seen = [conversation["conversation_id"] for page in pages for conversation in page["results"]]
    assert sorted(seen) == [f"c{number}" for number in range(5)]
    assert pages[0]["next"] is not None
    assert pages[2]["next"] is None


def test_get_answers_one_conversation_and_404_for_an_unknown_id(api, tenant):
    api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "u1"}, format="json")

    found = api.get(conversation_url("c1"))
    missing = api.get(conversation_url("nope"))

    assert found.status_code == 200
    assert (found.json()["conversation_id"], found.json()["user_id"]) == ("c1", "u1")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "not_found"


def test_patch_archives_and_changes_the_user_id(api, tenant):
    api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "u1"}, format="json")

    answer = api.patch(conversation_url("c1"), {"archived": True, "user_id": "u2"}, format="json")

    assert answer.status_code == 200, answer.content
    assert (answer.json()["archived"], answer.json()["user_id"]) == (True, "u2")
    row = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")
    assert (row.archived, row.user_id) == (True, "u2")


@pytest.mark.parametrize(
    ("field", "value"), [("tenant", 999), ("last_seq", 1), ("message_count", 7), ("conversation_id", "renamed"), ("memory", {})]
)
def test_patch_refuses_a_field_it_cannot_change_naming_it_and_changes_nothing(api, tenant, field, value):
    api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "u1"}, format="json")
    before = Conversation.objects.for_tenant(tenant).values().get(conversation_id="c1")

    answer = api.patch(conversation_url("c1"), {"archived": True, "user_id": "u2", field: value}, format="json")

    assert answer.status_code == 400
    assert field in answer.json()["error"]["message"]
    assert Conversation.objects.for_tenant(tenant).values().get(conversation_id="c1") == before


def test_delete_erases_rows_every_cache_key_and_the_writes_still_queued(api, tenant, no_worker):
    persisted = [append(api, "c1"), append(api, "c1")]
    run_queued_tasks()
    append(api, "c1")  # acknowledged, still queued
    api.put(memory_url("c1"), {"messages": [{"role": "user", "content": "remember"}]}, format="json")
    api.get(messages_url("c1"))
    assert redis_keys("acme", "c1")

    answer = api.delete(conversation_url("c1"))

    assert answer.status_code == 200, answer.content
    assert answer.json()["messages_erased"] == len(persisted)
    assert redis_keys("acme", "c1") == set()
    assert Message.objects.for_tenant(tenant).count() == 0
    assert not Conversation.objects.for_tenant(tenant).exists()
    for url in (conversation_url("c1"), messages_url("c1"), memory_url("c1"), message_url("c1", persisted[0]["id"])):
        assert api.get(url).status_code == 404, url
    # The worker then takes the writes that were queued before the erase: it drops them.
    run_queued_tasks()
    assert Message.objects.for_tenant(tenant).count() == 0
    assert not Conversation.objects.for_tenant(tenant).exists()
    assert api.get(messages_url("c1")).status_code == 404


def test_writes_dropped_after_a_delete_leave_no_key_without_expiry(api, tenant, no_worker):
    append(api, "c1")
    api.delete(conversation_url("c1"))

    run_queued_tasks()

    connection = get_redis_connection("default")
    assert {name: connection.ttl(name) for name in redis_keys("acme", "c1") if connection.ttl(name) < 0} == {}


# --- Messages: append and the window --------------------------------------------------------------


def test_one_message_is_appended_with_an_id_and_a_seq(api, tenant, no_worker):
    answer = api.post(messages_url("c1"), {"role": "user", "content": "hola", "metadata": {"lang": "es"}}, format="json")

    assert answer.status_code == 201, answer.content
    body = answer.json()
    assert body["conversation_id"] == "c1"
    [message] = body["messages"]
    uuid.UUID(message["id"])
    assert isinstance(message["seq"], int)
    assert message["seq"] > 0
    assert (message["role"], message["content"], message["metadata"]) == ("user", "hola", {"lang": "es"})


def test_a_batch_gets_strictly_increasing_seqs_and_the_window_returns_it_oldest_first(api, tenant, no_worker):
    batch = [message_payload(role=role) for role in ("system", "user", "assistant")]

    answer = api.post(messages_url("c1"), {"messages": batch}, format="json")
    later = append(api, "c1", role="tool")

    assert answer.status_code == 201, answer.content
    appended = answer.json()["messages"] + [later]
    assert [message["content"] for message in appended[:3]] == [item["content"] for item in batch]
    seqs = [message["seq"] for message in appended]
    assert all(earlier < next_one for earlier, next_one in zip(seqs, seqs[1:], strict=False))
    window = api.get(messages_url("c1")).json()
    assert [message["id"] for message in window["messages"]] == [message["id"] for message in appended]
    assert [message["seq"] for message in window["messages"]] == seqs
    assert window["count"] == 4


BASE_DATE = datetime(2024, 3, 1, tzinfo=UTC)
ROLES = ["user", "assistant", "user", "assistant", "tool", "user", "assistant", "user", "assistant", "system"]


def day(number: int) -> str:
    return (BASE_DATE + timedelta(days=number)).isoformat()


def expected_window(messages: list[dict[str, Any]], query: dict[str, Any]) -> list[str]:
    """What the window must answer, computed from the messages themselves (oldest first)."""
    matching = [
        message
        for message in messages
        if ("role" not in query or message["role"] == query["role"])
        and ("start_date" not in query or message["created_at"] >= query["start_date"])
        and ("end_date" not in query or message["created_at"] <= query["end_date"])
    ]
    end = len(matching) - query.get("skip", 0)
    return [message["id"] for message in matching[max(0, end - query.get("limit", 50)) : max(0, end)]]


WINDOW_QUERIES = [
    {},
    {"limit": 4},
    {"limit": 3, "skip": 2},
    {"skip": 20},
    {"role": "assistant"},
    {"role": "user", "limit": 2, "skip": 1},
    {"start_date": day(2), "end_date": day(6)},
    {"start_date": day(3), "role": "assistant", "limit": 2},
    {"end_date": day(1)},
]


@pytest.fixture
def ten_messages(api, tenant, no_worker) -> list[dict[str, Any]]:
    """Ten messages over ten days: the six oldest persisted, the four newest still pending."""
    batch = [message_payload(role=role, created_at=day(number)) for number, role in enumerate(ROLES)]
    first = api.post(messages_url("c1"), {"messages": batch[:6]}, format="json")
    run_queued_tasks()
    second = api.post(messages_url("c1"), {"messages": batch[6:]}, format="json")
    assert Message.objects.for_tenant(tenant).count() == 6
    return first.json()["messages"] + second.json()["messages"]


@pytest.mark.parametrize("query", WINDOW_QUERIES, ids=lambda query: ",".join(query) or "plain")
def test_the_window_answers_the_same_from_a_warm_a_cold_and_a_partial_cache(api, tenant, ten_messages, query):
    expected = expected_window(ten_messages, query)
    assert api.get(messages_url("c1")).status_code == 200  # warm the cache

    warm = api.get(messages_url("c1"), query)
    cache.invalidate(tenant_slug="acme", conversation_id="c1")
    cold = api.get(messages_url("c1"), query)
    get_redis_connection("default").delete(cache.key("acme", "c1", "messages"))
    dropped = api.get(messages_url("c1"), query)
    database = api.get(messages_url("c1"), {**query, "include_archived": "true"})
    with override_settings(MEMORY_CACHE_LIST_LIMIT=3):
        cache.invalidate(tenant_slug="acme", conversation_id="c1")
        partial = api.get(messages_url("c1"), query)

    assert (warm.json()["source"], cold.json()["source"], dropped.json()["source"]) == ("cache", "rebuild", "rebuild")
    assert database.json()["source"] == "database"
    assert ids(warm) == expected
    assert ids(cold) == expected
    assert ids(dropped) == expected
    assert ids(database) == expected
    assert ids(partial) == expected


def test_a_filtered_query_on_a_partial_cache_is_answered_from_the_database(api, tenant, ten_messages):
    with override_settings(MEMORY_CACHE_LIST_LIMIT=3):
        cache.invalidate(tenant_slug="acme", conversation_id="c1")
        answer = api.get(messages_url("c1"), {"role": "user"})

    assert answer.json()["source"] == "database"
    assert ids(answer) == expected_window(ten_messages, {"role": "user"})


def test_an_acknowledged_message_is_in_the_window_before_any_worker_persisted_it(api, tenant, no_worker):
    message = append(api, "c1")

    window = api.get(messages_url("c1")).json()
    cache.invalidate(tenant_slug="acme", conversation_id="c1")
    rebuilt = api.get(messages_url("c1")).json()

    assert [found["id"] for found in window["messages"]] == [message["id"]]
    assert window["source"] == "cache"
    assert [found["id"] for found in rebuilt["messages"]] == [message["id"]]
    assert rebuilt["source"] == "rebuild"
    assert Message.objects.for_tenant(tenant).count() == 0
    assert queue_depth() == 1


# --- Idempotency -----------------------------------------------------------------------------------


def test_resending_a_message_with_its_id_answers_200_with_the_stored_seq_and_publishes_nothing(api, tenant, no_worker):
    body = message_payload(id=str(uuid.uuid4()))
    first = api.post(messages_url("c1"), body, format="json")

    pending_resend = api.post(messages_url("c1"), body, format="json")
    assert queue_depth() == 1
    run_queued_tasks()
    cached_resend = api.post(messages_url("c1"), body, format="json")
    cache.erase(tenant_slug="acme", conversation_id="c1")
    database_resend = api.post(messages_url("c1"), body, format="json")

    assert first.status_code == 201
    stored = first.json()["messages"][0]
    for resend in (pending_resend, cached_resend, database_resend):
        assert resend.status_code == 200, resend.content
        again = resend.json()["messages"][0]
        assert (again["id"], again["seq"], again["content"], again["created_at"]) == (
            stored["id"],
            stored["seq"],
            stored["content"],
            stored["created_at"],
        )
    assert queue_depth() == 0
    assert Message.objects.for_tenant(tenant).count() == 1


@pytest.mark.worker
def test_a_message_sent_three_times_makes_one_row_with_a_real_worker(api, tenant, worker):
    body = message_payload(id=str(uuid.uuid4()))

    first = api.post(messages_url("c1"), body, format="json")
    second = api.post(messages_url("c1"), body, format="json")
    wait_for_rows(Message, tenant, 1)
    third = api.post(messages_url("c1"), body, format="json")

    assert [first.status_code, second.status_code, third.status_code] == [201, 200, 200]
    seqs = {answer.json()["messages"][0]["seq"] for answer in (first, second, third)}
    assert len(seqs) == 1
    row = Message.objects.for_tenant(tenant).get()
    assert (str(row.message_id), row.seq) == (body["id"], seqs.pop())
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").message_count == 1
    assert not DeadLetter.objects.for_tenant(tenant).exists()


def test_the_same_id_with_other_content_is_409_and_the_stored_message_is_unchanged(api, tenant, no_worker):
    message_id = str(uuid.uuid4())
    api.post(messages_url("c1"), {"id": message_id, "role": "user", "content": "original"}, format="json")

    while_pending = api.post(messages_url("c1"), {"id": message_id, "role": "user", "content": "changed"}, format="json")
    other_role = api.post(messages_url("c1"), {"id": message_id, "role": "assistant", "content": "original"}, format="json")
    run_queued_tasks()
    cache.erase(tenant_slug="acme", conversation_id="c1")
    after_persist = api.post(messages_url("c1"), {"id": message_id, "role": "user", "content": "changed"}, format="json")

    for answer in (while_pending, other_role, after_persist):
        assert answer.status_code == 409, answer.content
        assert answer.json()["error"]["code"] == "conflict"
    assert api.get(message_url("c1", message_id)).json()["content"] == "original"
    assert Message.objects.for_tenant(tenant).get(message_id=message_id).content == "original"
    assert queue_depth() == 0


def test_a_batch_with_the_same_id_twice_is_refused_and_nothing_is_written(api, tenant, no_worker):
    message_id = str(uuid.uuid4())
    batch = [message_payload(id=message_id), message_payload(id=message_id)]

    answer = api.post(messages_url("c1"), {"messages": batch}, format="json")

    assert answer.status_code == 400
    assert "twice" in answer.json()["error"]["message"]
    assert redis_keys("acme", "c1") == set()
    assert queue_depth() == 0


def test_the_same_id_in_another_conversation_names_another_message_and_both_persist(api, tenant, no_worker):
    message_id = str(uuid.uuid4())
    first = api.post(messages_url("c1"), {"id": message_id, "role": "user", "content": "in c1"}, format="json")

    second = api.post(messages_url("c2"), {"id": message_id, "role": "user", "content": "in c2"}, format="json")
    run_queued_tasks()

    assert [first.status_code, second.status_code] == [201, 201]
    stored = Message.objects.for_tenant(tenant).filter(message_id=message_id)
    assert sorted(stored.values_list("conversation__conversation_id", "content")) == [("c1", "in c1"), ("c2", "in c2")]
    assert api.get(message_url("c2", message_id)).json()["content"] == "in c2"
    assert not DeadLetter.objects.for_tenant(tenant).exists()


# --- The memory document ---------------------------------------------------------------------------


def test_a_new_conversation_has_an_empty_memory_document(api, tenant):
    api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "u1", "agent_id": "a1"}, format="json")

    answer = api.get(memory_url("c1"))

    assert answer.status_code == 200, answer.content
    document = answer.json()
    assert document["messages"] == []
    assert document["metadata"]["conversation_id"] == "c1"
    assert (document["metadata"]["tenant_id"], document["metadata"]["user_id"], document["metadata"]["agent_id"]) == (
        "acme",
        "u1",
        "a1",
    )


def test_a_saved_memory_document_is_read_back_from_the_cache_before_it_is_persisted(api, tenant, no_worker):
    api.post(CONVERSATIONS, {"conversation_id": "c1"}, format="json")
    document = {"messages": [{"role": "user", "content": "I like tea"}], "metadata": {"topic": "drinks"}}

    saved = api.put(memory_url("c1"), document, format="json")
    read = api.get(memory_url("c1"))

    assert saved.status_code == 200, saved.content
    assert read.json() == saved.json()
    assert read.json()["messages"] == document["messages"]
    assert read.json()["metadata"]["topic"] == "drinks"
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").memory == {}
    assert queue_depth() == 1


@pytest.mark.worker
def test_a_saved_memory_document_is_persisted_by_a_real_worker(api, tenant, worker):
    document = {"messages": [{"role": "user", "content": "call me Ana"}], "metadata": {"topic": "names"}}

    saved = api.put(memory_url("c1"), document, format="json").json()
    wait_until(
        lambda: Conversation.objects.for_tenant(tenant).filter(conversation_id="c1", memory=saved).exists(),
        message="the memory document in PostgreSQL",
    )
    get_redis_connection("default").delete(cache.key("acme", "c1", "memory"))
    from_database = api.get(memory_url("c1")).json()

    assert from_database["messages"] == document["messages"]
    assert from_database["metadata"]["topic"] == "names"


def test_a_saved_memory_document_reads_the_same_from_the_cache_and_from_postgresql(api, tenant, no_worker):
    api.post(CONVERSATIONS, {"conversation_id": "c1", "user_id": "u1", "agent_id": "a1"}, format="json")
    api.put(memory_url("c1"), {"messages": [{"content": "x"}], "metadata": {"k": "v"}}, format="json")
    run_queued_tasks()

    from_cache = api.get(memory_url("c1")).json()
    get_redis_connection("default").delete(cache.key("acme", "c1", "memory"))
    from_database = api.get(memory_url("c1")).json()

    assert from_database == from_cache


@pytest.mark.parametrize("order", ["newer_first", "older_first"])
def test_the_later_memory_save_wins_whichever_persist_task_runs_first(api, tenant, no_worker, order):
    api.put(memory_url("c1"), {"messages": [{"content": "old"}]}, format="json")
    newer = api.put(memory_url("c1"), {"messages": [{"content": "new"}]}, format="json").json()
    older_task, newer_task = take_queued_tasks()
    assert older_task[1]["revision"] < newer_task[1]["revision"]

    run_tasks([newer_task, older_task] if order == "newer_first" else [older_task, newer_task])

    row = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")
    assert row.memory == newer
    assert row.memory_revision == newer_task[1]["revision"]
    assert api.get(memory_url("c1")).json() == newer
    get_redis_connection("default").delete(cache.key("acme", "c1", "memory"))
    assert api.get(memory_url("c1")).json()["messages"] == [{"content": "new"}]


# --- One message -----------------------------------------------------------------------------------


def test_one_message_is_read_by_its_id_while_pending_and_once_persisted(api, tenant, no_worker):
    message = append(api, "c1", metadata={"k": "v"})

    pending = api.get(message_url("c1", message["id"]))
    run_queued_tasks()
    cache.erase(tenant_slug="acme", conversation_id="c1")
    persisted = api.get(message_url("c1", message["id"]))

    for answer in (pending, persisted):
        assert answer.status_code == 200, answer.content
        found = answer.json()
        assert (found["id"], found["seq"], found["content"], found["metadata"]) == (
            message["id"],
            message["seq"],
            message["content"],
            {"k": "v"},
        )


def test_a_message_is_found_only_under_its_own_conversation(api, tenant, no_worker):
    message = append(api, "c1")
    append(api, "c2")

    pending = api.get(message_url("c2", message["id"]))
    run_queued_tasks()
    persisted = api.get(message_url("c2", message["id"]))

    assert pending.status_code == 404
    assert persisted.status_code == 404
    assert api.get(message_url("c1", message["id"])).status_code == 200


@pytest.mark.parametrize("message_id", [str(uuid.uuid4()), "not-a-uuid"])
def test_an_unknown_or_malformed_message_id_answers_404(api, tenant, no_worker, message_id):
    append(api, "c1")
    run_queued_tasks()

    answer = api.get(message_url("c1", message_id))

    assert answer.status_code == 404
    assert answer.json()["error"]["code"] == "not_found"


# --- Numbers: floats of 1e16 and more, written 1e+16, which jsonb alone would give back as ints -----


def test_floats_of_1e16_and_more_in_a_message_come_back_as_floats_from_the_cache_and_from_postgresql(api, tenant, no_worker):
    parts = [{"type": "text", "text": "the figures"}, {"type": "figures", "numbers": NUMBERS}]
    sent = append(api, "c1", content=parts, metadata={"numbers": NUMBERS})
    run_queued_tasks()

    cached = api.get(messages_url("c1")).json()
    cache.invalidate(tenant_slug="acme", conversation_id="c1")
    rebuilt = api.get(messages_url("c1")).json()
    database = api.get(messages_url("c1"), {"include_archived": "true"}).json()
    cache.erase(tenant_slug="acme", conversation_id="c1")
    one = api.get(message_url("c1", sent["id"])).json()

    assert (cached["source"], rebuilt["source"], database["source"]) == ("cache", "rebuild", "database")
    for message in (sent, cached["messages"][0], rebuilt["messages"][0], database["messages"][0], one):
        for numbers in (message["metadata"]["numbers"], message["content"][1]["numbers"]):
            assert numbers == NUMBERS
            assert types_of(numbers) == types_of(NUMBERS)


def test_floats_of_1e16_and_more_in_the_memory_document_come_back_as_floats_from_the_cache_and_from_postgresql(
    api, tenant, no_worker
):
    document = {"messages": [{"role": "user", "content": "x", "numbers": NUMBERS}], "metadata": {"numbers": NUMBERS}}
    api.put(memory_url("c1"), document, format="json")
    run_queued_tasks()

    from_cache = api.get(memory_url("c1")).json()
    get_redis_connection("default").delete(cache.key("acme", "c1", "memory"))
    from_database = api.get(memory_url("c1")).json()

    for read in (from_cache, from_database):
        for numbers in (read["messages"][0]["numbers"], read["metadata"]["numbers"]):
            assert numbers == NUMBERS
            assert types_of(numbers) == types_of(NUMBERS)


def test_floats_of_1e16_and_more_in_conversation_metadata_come_back_as_floats(api, tenant):
    created = api.post(CONVERSATIONS, {"conversation_id": "c1", "metadata": {"numbers": NUMBERS}}, format="json")
    api.post(CONVERSATIONS, {"conversation_id": "c2"}, format="json")
    patched = api.patch(conversation_url("c2"), {"metadata": {"numbers": NUMBERS}}, format="json")
    assert (created.status_code, patched.status_code) == (201, 200), (created.content, patched.content)

    listed = api.get(CONVERSATIONS).json()["results"]
    read = [api.get(conversation_url(conversation_id)).json() for conversation_id in ("c1", "c2")]

    assert len(listed) == 2
    for conversation in (*listed, *read):
        assert conversation["metadata"]["numbers"] == NUMBERS
        assert types_of(conversation["metadata"]["numbers"]) == types_of(NUMBERS)


def test_a_replayed_dead_letter_persists_floats_of_1e16_and_more_as_floats(api, tenant, no_worker):
    sent = append(api, "c1", metadata={"numbers": NUMBERS})
    ((task_name, payload),) = take_queued_tasks()  # the persist task, as if it had failed for good
    services.dead_letter_record(task_name=task_name, payload=payload, error="refused", attempts=12)

    services.dead_letter_replay(dead_letter=DeadLetter.objects.for_tenant(tenant).get())
    run_queued_tasks()
    (stored,) = api.get(messages_url("c1"), {"include_archived": "true"}).json()["messages"]

    assert stored["id"] == sent["id"]
    assert stored["metadata"]["numbers"] == NUMBERS
    assert types_of(stored["metadata"]["numbers"]) == types_of(NUMBERS)


# --- Status, schema, metrics -----------------------------------------------------------------------

SCRAPER = {"HTTP_AUTHORIZATION": "Bearer test-metrics-token"}


def test_status_reports_every_backend_and_the_queue_depth_to_the_metrics_scraper(api, client, tenant, no_worker):
    append(api, "c1")
    append(api, "c1")

    answer = client.get("/api/v1/status/", **SCRAPER)

    assert answer.status_code == 200, answer.content
    status = answer.json()
    assert status["database"]["ok"]
    assert status["cache"]["ok"]
    assert status["broker"]["ok"]
    assert status["broker"]["queue"] == settings.MEMORY_QUEUE
    assert status["broker"]["queue_depth"] == 2
    assert status["broker"]["derived_queue"] == settings.MEMORY_DERIVED_QUEUE
    assert status["broker"]["derived_queue_depth"] == 0  # nothing persisted yet, so nothing derived
    assert status["ok"] is True
    assert status["flags"] == {
        "using_pg": True,
        "using_redis": True,
        "using_broker": True,
        "degraded": False,
        "fallback_sessions": 0,
    }


def test_status_reports_the_cache_down_while_redis_is_unreachable(api, client, tenant):
    with redis_unreachable():
        answer = client.get("/api/v1/status/", **SCRAPER)

    assert answer.status_code == 200
    assert answer.json()["cache"]["ok"] is False
    assert answer.json()["cache"]["error"]
    assert answer.json()["database"]["ok"] is True
    assert answer.json()["ok"] is False
    assert answer.json()["flags"]["using_redis"] is False
    assert answer.json()["flags"]["degraded"] is True


def test_the_openapi_schema_lists_every_api_path(client, db):
    answer = client.get("/api/schema/", {"format": "json"})

    assert answer.status_code == 200
    paths = set(json.loads(answer.content)["paths"])
    assert {
        "/api/v1/conversations/",
        "/api/v1/conversations/{conversation_id}/",
        "/api/v1/conversations/{conversation_id}/memory/",
        "/api/v1/conversations/{conversation_id}/messages/",
        "/api/v1/conversations/{conversation_id}/messages/{message_id}/",
        "/api/v1/conversations/{conversation_id}/window/",
        "/api/v1/conversations/{conversation_id}/context/",
        "/api/v1/status/",
    } <= paths


def test_the_openapi_schema_says_how_to_send_the_api_key(client, db):
    schema = json.loads(client.get("/api/schema/", {"format": "json"}).content)

    schemes = schema.get("components", {}).get("securitySchemes", {}).values()
    assert any(scheme.get("type") == "apiKey" and scheme.get("name") == "Authorization" for scheme in schemes)


def cache_lookups(text: str, *, tenant: str, data_type: str, result: str) -> float:
    line_start = f'memory_cache_requests_total{{data_type="{data_type}",result="{result}",tenant="{tenant}"}} '
    return sum(float(line[len(line_start) :]) for line in text.splitlines() if line.startswith(line_start))


def test_metrics_count_cache_lookups_in_prometheus_text(api, client, tenant):
    api.post(CONVERSATIONS, {"conversation_id": "c1"}, format="json")
    before = client.get("/metrics", **SCRAPER).content.decode()

    api.get(messages_url("c1"))  # a miss (rebuild), then
    api.get(messages_url("c1"))  # a hit
    answer = client.get("/metrics", **SCRAPER)

    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain")
    after = answer.content.decode()
    for result in ("miss", "hit"):
        assert cache_lookups(after, tenant="acme", data_type="messages", result=result) == (
            cache_lookups(before, tenant="acme", data_type="messages", result=result) + 1
        )


# --- Redis unreachable -----------------------------------------------------------------------------


@pytest.mark.worker
def test_with_redis_unreachable_reads_come_from_postgresql_and_writes_are_still_persisted(api, tenant, worker):
    batch = [message_payload(role=role) for role in ("user", "assistant", "user")]
    persisted = api.post(messages_url("c1"), {"messages": batch}, format="json").json()["messages"]
    wait_for_rows(Message, tenant, 3)
    warm = api.get(messages_url("c1"), {"role": "user"})

    with redis_unreachable():
        window = api.get(messages_url("c1"))
        filtered = api.get(messages_url("c1"), {"role": "user"})
        detail = api.get(message_url("c1", persisted[0]["id"]))
        written = api.post(messages_url("c1"), message_payload(role="assistant"), format="json")
    wait_for_rows(Message, tenant, 4)

    assert (window.status_code, window.json()["source"]) == (200, "database")
    assert ids(window) == [message["id"] for message in persisted]
    assert ids(filtered) == ids(warm) == [persisted[0]["id"], persisted[2]["id"]]
    assert detail.status_code == 200
    assert written.status_code == 201, written.content
    new = written.json()["messages"][0]
    assert new["seq"] > max(message["seq"] for message in persisted)
    assert Message.objects.for_tenant(tenant).get(message_id=new["id"]).seq == new["seq"]
    wait_until(lambda: ids(api.get(messages_url("c1")))[-1:] == [new["id"]], message="the new message in the window")
    assert ids(api.get(messages_url("c1"))) == [message["id"] for message in persisted] + [new["id"]]


def test_a_django_404_inside_a_view_answers_the_not_found_code_with_a_message():
    from django.http import Http404

    from conversations.api.errors import exception_handler

    response = exception_handler(Http404("Checkpoint x does not exist."), {})
    assert response.status_code == 404
    assert response.data["error"]["code"] == "not_found"
    assert response.data["error"]["message"] == "Checkpoint x does not exist."


def test_metrics_name_tenants_so_they_answer_only_the_scraper_holding_the_token(client, settings):
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", HTTP_AUTHORIZATION="Bearer wrong").status_code == 401
    settings.MEMORY_METRICS_TOKEN = ""
    assert client.get("/metrics", **SCRAPER).status_code == 404


def test_a_conversation_id_ending_in_a_newline_is_refused_in_the_path(api, tenant, no_worker):
    # "$" in a regular expression also matches before a final newline: the whole id must match.
    answer = api.post("/api/v1/conversations/ends-with-newline%0A/messages/", message_payload(), format="json")

    assert answer.status_code == 400, answer.content
    assert "letters, digits and . _ @ = + -" in answer.json()["error"]["message"]
    assert Conversation.objects.for_tenant(tenant).count() == 0


@pytest.mark.parametrize("tail", ["\x00", "\n", "\t"])
def test_a_date_time_with_a_control_character_is_refused_wherever_the_api_takes_one(api, tenant, no_worker, tail):
    moment = f"2024-05-01T10:00:00Z{tail}"
    append = api.post(messages_url("c1"), {"messages": [{"role": "user", "content": "hi", "created_at": moment}]}, format="json")
    window = api.get(messages_url("c1"), {"start_date": moment})
    search = api.get("/api/v1/users/u1/search/", {"q": "hi", "end_date": moment})

    for answer, field in ((append, "created_at"), (window, "start_date"), (search, "end_date")):
        assert answer.status_code == 400, answer.content
        assert field in json.dumps(answer.json()["error"])
    assert queue_depth() == 0
    assert not Conversation.objects.for_tenant(tenant).exists()

"""Chat runs (``chat.runs``) in process: one run per conversation, a bound per tenant counted in
Redis, a share of the process's threads, and everything a run holds given back on every way out.

A run "held elsewhere" is admitted here with ``runs.run_admit`` exactly as another request, in this
process or another, admits its own: what the endpoint sees of it is the same Redis state.
``tests/client/test_chat.py`` holds the same promises against gunicorn, with requests truly at once."""

import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings
from django_redis import get_redis_connection

from chat import runs
from chat import services as chat_services
from conversations import cache
from tests.chat.test_chat import URL, configure, parse_events, stored
from tests.conftest import client_for


@pytest.fixture(autouse=True)
def no_process_bound() -> Iterator[None]:
    yield
    runs.process_threads_set(None)


@pytest.fixture
def chat_api(tenant: Any) -> Any:
    configure(tenant, MEMORY_CHAT_MODEL="fake:echo")
    return client_for(tenant)


def held_elsewhere(tenant: Any, conversation_id: str, *, message_id: str | None = None) -> runs.Run:
    return runs.run_admit(tenant=tenant, conversation_id=conversation_id, message_id=message_id, timeout=60)


def nothing_held(tenant: Any, conversation_id: str) -> bool:
    redis = get_redis_connection("default")
    return not redis.exists(cache.run_key(tenant.slug, conversation_id)) and redis.zcard(cache.tenant_runs_key(tenant.pk)) == 0


def assert_refused(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.content
    assert response["Content-Type"] == "application/json"
    error = response.json()["error"]
    assert error["code"] == code
    assert set(error) == {"code", "message", "details"}
    assert response["Retry-After"] == str(runs.RETRY_AFTER)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "streaming"])
def test_a_message_to_a_conversation_whose_run_is_active_is_a_409_and_is_not_stored(
    chat_api: Any, tenant: Any, stream: bool
) -> None:
    assert chat_api.post(URL.format("busy"), {"content": "First question"}, format="json").status_code == 201
    other = held_elsewhere(tenant, "busy")

    refused = chat_api.post(URL.format("busy"), {"content": "Second question", "stream": stream}, format="json")

    assert_refused(refused, 409, "run_active")
    assert "one chat turn runs at a time" in refused.json()["error"]["message"]
    assert [m["content"] for m in stored(tenant, "busy")][-1] != "Second question"
    assert len(stored(tenant, "busy")) == 2

    other.release()
    again = chat_api.post(URL.format("busy"), {"content": "Second question", "stream": stream}, format="json")
    assert again.status_code in (200, 201)
    if stream:
        assert parse_events(b"".join(again.streaming_content))[-1][0] == "done"
    assert [m["content"] for m in stored(tenant, "busy")][2] == "Second question"
    assert nothing_held(tenant, "busy")


def test_the_same_message_sent_again_while_it_runs_is_a_409_chat_in_progress(chat_api: Any, tenant: Any) -> None:
    message_id = str(uuid.uuid4())
    other = held_elsewhere(tenant, "resent", message_id=message_id)
    try:
        refused = chat_api.post(URL.format("resent"), {"content": "Hello", "message_id": message_id}, format="json")
    finally:
        other.release()

    assert_refused(refused, 409, "chat_in_progress")
    assert refused.json()["error"]["details"] == {"user_message_id": message_id}


@override_settings(MEMORY_CHAT_TIMEOUT=0.5)
@pytest.mark.parametrize(
    ("model", "stream", "status"),
    [
        ("echo", False, 201),
        ("failing-model", False, 502),
        ("slow-model", False, 504),
        ("echo", True, 200),
        ("breaking-model", True, 200),
        ("failing-model", True, 502),
    ],
)
def test_a_run_is_released_however_it_ends(chat_api: Any, tenant: Any, model: str, stream: bool, status: int) -> None:
    response = chat_api.post(URL.format("ends"), {"content": "Hello", "model": model, "stream": stream}, format="json")
    assert response.status_code == status, response.content
    if stream and status == 200:
        b"".join(response.streaming_content)
        response.close()

    assert nothing_held(tenant, "ends")
    after = chat_api.post(URL.format("ends"), {"content": "Next"}, format="json")
    assert after.status_code == 201, after.content


def test_a_resent_answered_message_releases_its_run(chat_api: Any, tenant: Any) -> None:
    message_id = str(uuid.uuid4())
    body = {"content": "Hello", "message_id": message_id}
    assert chat_api.post(URL.format("replay"), body, format="json").status_code == 201
    assert chat_api.post(URL.format("replay"), body, format="json").status_code == 200
    assert chat_api.post(URL.format("replay"), body | {"stream": True}, format="json").status_code == 200

    assert nothing_held(tenant, "replay")


@pytest.mark.parametrize("events_read", [0, 3], ids=["before-the-first-event", "mid-stream"])
def test_a_client_that_leaves_a_stream_releases_its_run(tenant: Any, events_read: int) -> None:
    configure(tenant, MEMORY_CHAT_MODEL="fake:dripping-model")
    response = client_for(tenant).post(URL.format("left"), {"content": "A long story", "stream": True}, format="json")
    assert response.status_code == 200
    assert not nothing_held(tenant, "left")
    events = iter(response.streaming_content)
    for _ in range(events_read):
        next(events)

    response.close()  # what the server does when the client has gone

    assert nothing_held(tenant, "left")
    assert [m["role"] for m in stored(tenant, "left")] == ["user"]


def test_an_error_while_storing_the_answer_releases_the_run(chat_api: Any, tenant: Any, monkeypatch: Any) -> None:
    def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("storing the answer failed")

    monkeypatch.setattr(chat_services, "_finish", broken)
    with pytest.raises(RuntimeError, match="storing the answer failed"):
        chat_api.post(URL.format("broken"), {"content": "Hello"}, format="json")

    assert nothing_held(tenant, "broken")


def test_a_refused_message_leaves_the_other_runs_alone(chat_api: Any, tenant: Any) -> None:
    other = held_elsewhere(tenant, "kept")
    try:
        assert chat_api.post(URL.format("kept"), {"content": "Hello"}, format="json").status_code == 409
        redis = get_redis_connection("default")
        assert redis.get(cache.run_key(tenant.slug, "kept")).decode() == other.token
        assert redis.zscore(cache.tenant_runs_key(tenant.pk), other.token) is not None
    finally:
        other.release()


def test_the_run_lock_expires_by_itself_a_little_after_the_chat_timeout(tenant: Any) -> None:
    run = runs.run_admit(tenant=tenant, conversation_id="ttl", message_id=None, timeout=60)
    try:
        ttl_ms = get_redis_connection("default").pttl(cache.run_key(tenant.slug, "ttl"))
    finally:
        run.release()
    assert 60_000 < ttl_ms <= (60 + runs.LOCK_MARGIN) * 1000


def test_a_tenant_over_its_concurrent_chats_gets_a_429_and_nothing_is_stored(chat_api: Any, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT=2)
    others = [held_elsewhere(tenant, f"elsewhere-{number}") for number in range(2)]
    try:
        refused = chat_api.post(URL.format("third"), {"content": "Hello"}, format="json")
        assert_refused(refused, 429, "chat_limit_reached")
        assert refused.json()["error"]["details"] == {"running": 2, "limit": 2}
        assert "MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT=2" in refused.json()["error"]["message"]
        assert stored(tenant, "third") == []
        assert not get_redis_connection("default").exists(cache.run_key(tenant.slug, "third"))
    finally:
        others[0].release()

    try:
        assert chat_api.post(URL.format("third"), {"content": "Hello"}, format="json").status_code == 201
    finally:
        others[1].release()


def test_another_tenants_chats_do_not_count_against_the_limit(chat_api: Any, tenant: Any, other_tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT=1)
    theirs = [held_elsewhere(other_tenant, f"theirs-{number}") for number in range(3)]
    try:
        assert chat_api.post(URL.format("mine"), {"content": "Hello"}, format="json").status_code == 201
    finally:
        for run in theirs:
            run.release()


def test_runs_admitted_at_once_from_many_threads_never_exceed_the_limit(tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT=3)
    start = threading.Barrier(8)
    outcomes: list[runs.Run | Exception] = []

    def admit(number: int) -> None:
        start.wait()
        try:
            outcomes.append(runs.run_admit(tenant=tenant, conversation_id=f"many-{number}", message_id=None, timeout=60))
        except runs.ChatLimitReached as refused:
            outcomes.append(refused)

    threads = [threading.Thread(target=admit, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    admitted = [outcome for outcome in outcomes if isinstance(outcome, runs.Run)]
    assert len(admitted) == 3
    assert len(outcomes) == 8
    assert get_redis_connection("default").zcard(cache.tenant_runs_key(tenant.pk)) == 3
    for run in admitted:
        run.release()
    assert get_redis_connection("default").zcard(cache.tenant_runs_key(tenant.pk)) == 0


def test_the_runs_of_a_process_that_died_free_their_slots_when_they_expire(chat_api: Any, tenant: Any) -> None:
    configure(tenant, MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT=2)
    redis = get_redis_connection("default")
    expired_ms = int(time.time() * 1000) - 1
    redis.zadd(cache.tenant_runs_key(tenant.pk), {"dead-process-run-1|": expired_ms, "dead-process-run-2|": expired_ms})

    assert chat_api.post(URL.format("after-crash"), {"content": "Hello"}, format="json").status_code == 201
    assert redis.zcard(cache.tenant_runs_key(tenant.pk)) == 0


def test_chats_over_the_process_share_of_threads_are_a_503_at_once(chat_api: Any, tenant: Any) -> None:
    assert runs.process_threads_set(4) == 2
    held = [held_elsewhere(tenant, f"thread-{number}") for number in range(2)]
    try:
        started = time.monotonic()
        refused = chat_api.post(URL.format("no-thread"), {"content": "Hello"}, format="json")
        assert time.monotonic() - started < 2  # refused, not queued
        assert_refused(refused, 503, "chat_capacity")
        assert stored(tenant, "no-thread") == []
        redis = get_redis_connection("default")
        assert not redis.exists(cache.run_key(tenant.slug, "no-thread"))  # the refused run gave back what it took
        assert redis.zcard(cache.tenant_runs_key(tenant.pk)) == 2
    finally:
        held[0].release()
    try:
        assert chat_api.post(URL.format("no-thread"), {"content": "Hello"}, format="json").status_code == 201
    finally:
        held[1].release()


def test_a_process_keeps_threads_for_reads_whatever_the_share() -> None:
    with override_settings(MEMORY_CHAT_THREAD_SHARE=1.0):
        assert runs.process_threads_set(8) == 7
    with override_settings(MEMORY_CHAT_THREAD_SHARE=0.01):
        assert runs.process_threads_set(8) == 1
    assert runs.process_threads_set(4) == 2


def test_without_redis_chats_still_run_within_the_process_share(chat_api: Any, tenant: Any, monkeypatch: Any) -> None:
    def unreachable(**kwargs: Any) -> None:
        raise cache.CacheUnavailable("run_lock: connection refused")

    monkeypatch.setattr(cache, "run_lock", unreachable)
    monkeypatch.setattr(cache, "runs_admit", unreachable)
    runs.process_threads_set(2)

    assert chat_api.post(URL.format("no-redis"), {"content": "Hello"}, format="json").status_code == 201
    held = runs.run_admit(tenant=tenant, conversation_id="no-redis-2", message_id=None, timeout=60)
    try:
        assert chat_api.post(URL.format("no-redis"), {"content": "Again"}, format="json").status_code == 503
    finally:
        held.release()

"""The worker's side of the write path (``services.messages_persist``), called as the task calls it:
idempotent, erased messages dropped, counters kept, and derived memory queued once
per conversation however many writes arrive while it waits in the queue."""

import threading
import time
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import redis
from django.conf import settings
from django.db import connection
from django_redis import get_redis_connection

from conversations import cache, services
from conversations.models import Conversation, Message, Tombstone, tombstone_key
from conversations.services import persist as persisting
from tests.conftest import take_queued_tasks
from tests.faults import wait_until

SEQ = 1_000_000


def message(seq: int, content: str = "hello", **fields: Any) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid4()),
        "seq": seq,
        "role": "user",
        "content": content,
        "metadata": {},
        "created_at": datetime.now(UTC).isoformat(),
        "token_count": 2,
    } | fields


def payload(tenant: Any, messages: list[dict[str, Any]], conversation_id: str = "c1", **fields: Any) -> dict[str, Any]:
    return {
        "tenant_id": tenant.pk,
        "tenant_slug": tenant.slug,
        "conversation_id": conversation_id,
        "user_id": "",
        "agent_id": "",
        "acknowledged_at": time.time(),
        "messages": messages,
    } | fields


def pend(tenant: Any, messages: list[dict[str, Any]], conversation_id: str = "c1") -> None:
    """What the append leaves in the cache before the worker runs (on a warm list)."""
    if not cache.window(tenant_slug=tenant.slug, conversation_id=conversation_id, count=1):
        services.cache_rebuild(tenant=tenant, conversation_id=conversation_id, allow_empty=True)
    cache.merge(tenant_slug=tenant.slug, conversation_id=conversation_id, messages=messages, mode="pending", ttl=60, token="")


def stored(tenant: Any, conversation_id: str = "c1") -> list[tuple[int, str]]:
    rows = Message.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id).order_by("seq")
    return [(row.seq, row.content) for row in rows]


def cached(tenant: Any, conversation_id: str = "c1") -> list[int]:
    window = cache.window(tenant_slug=tenant.slug, conversation_id=conversation_id, count=100)
    return [m["seq"] for m in window.messages] if window else []


def test_the_first_persist_creates_the_conversation_with_its_owner_and_counters(tenant):
    messages = [message(SEQ, "one", token_count=3), message(SEQ + 1, "two", token_count=4)]
    assert services.messages_persist(payload=payload(tenant, messages, user_id="u1", agent_id="a1")) == 2
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")
    assert (conversation.user_id, conversation.agent_id) == ("u1", "a1")
    assert (conversation.message_count, conversation.token_count, conversation.last_seq) == (2, 7, SEQ + 1)
    assert stored(tenant) == [(SEQ, "one"), (SEQ + 1, "two")]
    row = Message.objects.for_tenant(tenant).get(seq=SEQ)
    assert str(row.message_id) == messages[0]["id"]
    assert row.created_at.isoformat() == messages[0]["created_at"]


def test_persisting_the_same_payload_twice_makes_one_row_and_counts_it_once(tenant):
    messages = [message(SEQ, "one")]
    pend(tenant, messages)
    assert services.messages_persist(payload=payload(tenant, messages)) == 1
    updated = Conversation.objects.for_tenant(tenant).get(conversation_id="c1").updated_at
    assert services.messages_persist(payload=payload(tenant, messages)) == 0
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")
    assert (conversation.message_count, conversation.token_count, conversation.updated_at) == (1, 2, updated)
    assert stored(tenant) == [(SEQ, "one")]
    assert cached(tenant) == [SEQ]
    assert cache.pending(tenant_slug=tenant.slug, conversation_id="c1") == []


def test_a_resend_that_got_a_second_seq_keeps_the_first_copy_and_drops_the_second_from_the_cache(tenant):
    first = message(SEQ, "one")
    services.messages_persist(payload=payload(tenant, [first]))
    second = first | {"seq": SEQ + 5}
    pend(tenant, [second])
    assert services.messages_persist(payload=payload(tenant, [second])) == 0
    assert stored(tenant) == [(SEQ, "one")]
    assert SEQ + 5 not in cached(tenant)
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").message_count == 1


def test_an_id_stored_with_other_content_is_a_conflict_and_the_rest_of_the_batch_persists(tenant):
    taken = message(SEQ, "one")
    services.messages_persist(payload=payload(tenant, [taken]))
    other, fine = taken | {"seq": SEQ + 1, "content": "something else"}, message(SEQ + 2, "three")
    with pytest.raises(services.PersistConflict, match=taken["id"]):
        services.messages_persist(payload=payload(tenant, [other, fine]))
    assert stored(tenant) == [(SEQ, "one"), (SEQ + 2, "three")]
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").message_count == 2


def test_a_seq_taken_by_another_message_is_a_conflict(tenant):
    services.messages_persist(payload=payload(tenant, [message(SEQ, "one")]))
    with pytest.raises(services.PersistConflict):
        services.messages_persist(payload=payload(tenant, [message(SEQ, "impostor")]))
    assert stored(tenant) == [(SEQ, "one")]


def test_messages_below_the_tombstone_are_dropped_and_leave_the_cache(tenant):
    services.messages_persist(payload=payload(tenant, [message(SEQ, "before the erase")]))
    Tombstone.objects.for_tenant(tenant).create(tenant=tenant, conversation_key=tombstone_key("c1"), erased_before_seq=SEQ + 10)
    Message.objects.for_tenant(tenant).all().delete()
    late, kept = message(SEQ + 5, "erased"), message(SEQ + 10, "after the erase")
    pend(tenant, [late, kept])
    assert services.messages_persist(payload=payload(tenant, [late, kept])) == 1
    assert stored(tenant) == [(SEQ + 10, "after the erase")]
    assert cached(tenant) == [SEQ + 10]


def test_a_payload_wholly_erased_creates_no_conversation(tenant):
    Tombstone.objects.for_tenant(tenant).create(tenant=tenant, conversation_key=tombstone_key("gone"), erased_before_seq=SEQ + 10)
    assert services.messages_persist(payload=payload(tenant, [message(SEQ)], conversation_id="gone")) == 0
    assert not Conversation.objects.for_tenant(tenant).filter(conversation_id="gone").exists()


def test_an_owner_named_later_fills_an_empty_one_and_never_replaces_it(tenant):
    services.messages_persist(payload=payload(tenant, [message(SEQ)], agent_id="a1"))
    services.messages_persist(payload=payload(tenant, [message(SEQ + 1)], user_id="u1", agent_id="a2"))
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c1")
    assert (conversation.user_id, conversation.agent_id) == ("u1", "a1")


def test_another_tenants_conversation_of_the_same_id_is_untouched(tenant, other_tenant):
    services.messages_persist(payload=payload(other_tenant, [message(SEQ, "theirs")]))
    services.messages_persist(payload=payload(tenant, [message(SEQ, "ours")]))
    assert stored(tenant) == [(SEQ, "ours")]
    assert stored(other_tenant) == [(SEQ, "theirs")]
    assert Conversation.objects.for_tenant(other_tenant).get(conversation_id="c1").message_count == 1


# --- Derived memory ----------------------------------------------------------------------------


EXTRACTION = "extraction.tasks.conversation_extract"
# The derived tasks every tenant's writes queue: extraction only for the tenants that extract.
EVERY_TENANTS = tuple(name for name in services.DERIVED_TASKS if name != EXTRACTION)


def derived_queued() -> list[str]:
    return sorted(name for name, _ in take_queued_tasks(settings.MEMORY_DERIVED_QUEUE))


def test_writes_persisted_while_the_derived_tasks_wait_queue_them_once(tenant):
    for seq in range(SEQ, SEQ + 5):
        services.messages_persist(payload=payload(tenant, [message(seq)]))
    assert derived_queued() == sorted(EVERY_TENANTS)


def test_a_derived_task_that_started_is_queued_again_by_the_next_write(tenant):
    services.messages_persist(payload=payload(tenant, [message(SEQ)]))
    assert derived_queued() == sorted(EVERY_TENANTS)
    services.derived_started(tenant_slug=tenant.slug, conversation_id="c1", task="search.tasks.conversation_embed")
    services.messages_persist(payload=payload(tenant, [message(SEQ + 1)]))
    assert derived_queued() == ["search.tasks.conversation_embed"]


def test_the_writes_of_a_tenant_that_extracts_queue_its_extraction_too(tenant):
    tenant.settings = {"MEMORY_EXTRACTION_ENABLED": True}
    tenant.save()

    services.messages_persist(payload=payload(tenant, [message(SEQ)]))

    assert derived_queued() == sorted(services.DERIVED_TASKS)


def test_the_derived_tasks_clear_their_mark_before_they_read(tenant):
    from search.tasks import conversation_embed
    from summaries.tasks import conversation_summarize

    services.messages_persist(payload=payload(tenant, [message(SEQ)]))
    take_queued_tasks(settings.MEMORY_DERIVED_QUEUE)
    conversation_embed.apply(args=[tenant.pk, "c1"])
    conversation_summarize.apply(args=[tenant.pk, "c1"])
    services.messages_persist(payload=payload(tenant, [message(SEQ + 1)]))
    assert derived_queued() == sorted(EVERY_TENANTS)


def test_another_conversation_is_queued_on_its_own(tenant):
    services.messages_persist(payload=payload(tenant, [message(SEQ)]))
    services.messages_persist(payload=payload(tenant, [message(SEQ)], conversation_id="c2"))
    assert derived_queued() == sorted(EVERY_TENANTS * 2)


def test_without_redis_the_derived_tasks_are_queued_every_time(tenant, monkeypatch):
    def unreachable(*_: Any, **__: Any) -> None:
        raise cache.CacheUnavailable("settle: connection refused")

    monkeypatch.setattr(cache, "settle", unreachable)
    services.messages_persist(payload=payload(tenant, [message(SEQ)]))
    services.messages_persist(payload=payload(tenant, [message(SEQ + 1)]))
    assert derived_queued() == sorted(EVERY_TENANTS * 2)


def test_a_refused_derived_publish_leaves_no_mark_behind(tenant, monkeypatch):
    from memoryproject.celery import app

    def refuse(*_: Any, **__: Any) -> None:
        raise ConnectionError("broker refused")

    with monkeypatch.context() as patched:
        patched.setattr(app, "send_task", refuse)
        services.messages_persist(payload=payload(tenant, [message(SEQ)]))
    assert list(get_redis_connection("default").scan_iter(match=f"{tenant.slug}:c1:queued:*")) == []
    services.messages_persist(payload=payload(tenant, [message(SEQ + 1)]))
    assert derived_queued() == sorted(EVERY_TENANTS)


# --- Groups of payloads (``messages_persist_many``) ----------------------------------------------


def test_a_group_of_payloads_is_persisted_in_one_statement_across_conversations_and_tenants(tenant, other_tenant):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    for owner, conversation_id in ((tenant, "c1"), (tenant, "c2"), (other_tenant, "c1")):
        services.messages_persist(payload=payload(owner, [message(SEQ)], conversation_id=conversation_id))
    group = [
        payload(tenant, [message(SEQ + 1, "a"), message(SEQ + 2, "b")]),
        payload(tenant, [message(SEQ + 3, "c")]),
        payload(tenant, [message(SEQ + 1, "d")], conversation_id="c2"),
        payload(other_tenant, [message(SEQ + 1, "e")]),
    ]
    with CaptureQueriesContext(connection) as queries:
        assert services.messages_persist_group(payloads=group) == [None] * 4
    assert [query["sql"].split()[0] for query in queries] == ["SAVEPOINT", "WITH", "RELEASE"]
    assert [content for _, content in stored(tenant)] == ["hello", "a", "b", "c"]
    assert [content for _, content in stored(tenant, "c2")] == ["hello", "d"]
    assert [content for _, content in stored(other_tenant)] == ["hello", "e"]
    counts = {
        (c.tenant_id, c.conversation_id): (c.message_count, c.last_seq)
        for c in Conversation.unscoped.filter(tenant__in=[tenant, other_tenant])
    }
    assert counts == {
        (tenant.pk, "c1"): (4, SEQ + 3),
        (tenant.pk, "c2"): (2, SEQ + 1),
        (other_tenant.pk, "c1"): (2, SEQ + 1),
    }


def test_a_group_creates_the_conversations_it_is_the_first_write_of(tenant):
    group = [
        payload(tenant, [message(SEQ)], conversation_id="new", user_id="u1"),
        payload(tenant, [message(SEQ + 1)], conversation_id="new"),
    ]
    assert services.messages_persist_group(payloads=group) == [None, None]
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="new")
    assert (conversation.message_count, conversation.user_id) == (2, "u1")


def test_a_resend_in_the_same_group_keeps_the_first_copy(tenant):
    first = message(SEQ, "one")
    resend = first | {"seq": SEQ + 1}
    pend(tenant, [first, resend])
    errors = services.messages_persist_group(payloads=[payload(tenant, [first]), payload(tenant, [resend])])
    assert errors == [None, None]
    assert stored(tenant) == [(SEQ, "one")]
    assert cached(tenant) == [SEQ]
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").message_count == 1


def test_a_payload_the_database_refuses_fails_alone_and_the_rest_of_the_group_persists(tenant):
    poisoned = payload(tenant, [message(SEQ, "no NUL in PostgreSQL text \x00")])
    errors = services.messages_persist_group(payloads=[payload(tenant, [message(SEQ + 1, "fine")]), poisoned])
    assert errors[0] is None
    assert errors[1] is not None
    assert stored(tenant) == [(SEQ + 1, "fine")]
    assert derived_queued() == sorted(EVERY_TENANTS)  # what the payload alone committed queues it


def test_a_conflict_in_a_group_is_that_payloads_error_only(tenant):
    taken = message(SEQ, "one")
    services.messages_persist(payload=payload(tenant, [taken]))
    group = [payload(tenant, [taken | {"seq": SEQ + 1, "content": "other"}]), payload(tenant, [message(SEQ + 2, "fine")])]
    errors = services.messages_persist_group(payloads=group)
    assert isinstance(errors[0], services.PersistConflict)
    assert errors[1] is None
    assert stored(tenant) == [(SEQ, "one"), (SEQ + 2, "fine")]


# --- Settling in the cache (``cache.settle``) ----------------------------------------------------


def pending_ids(tenant: Any, conversation_id: str = "c1") -> set[str]:
    return {found.decode() for found in get_redis_connection("default").hkeys(cache.key(tenant.slug, conversation_id, "pending"))}


def test_a_group_settles_and_claims_its_derived_memory_in_one_redis_round_trip(tenant, other_tenant, monkeypatch):
    group = [
        payload(tenant, [message(SEQ, "a"), message(SEQ + 1, "b")]),
        payload(tenant, [message(SEQ, "c")], conversation_id="c2"),
        payload(other_tenant, [message(SEQ, "d")]),
    ]
    for each in group:
        owner = tenant if each["tenant_id"] == tenant.pk else other_tenant
        pend(owner, each["messages"], conversation_id=each["conversation_id"])
    sent = []
    send = redis.connection.AbstractConnection.send_packed_command
    monkeypatch.setattr(
        redis.connection.AbstractConnection,
        "send_packed_command",
        lambda connection, command, check_health=True: sent.append(command) or send(connection, command, check_health),
    )

    assert services.messages_persist_group(payloads=group) == [None] * 3

    assert len(sent) == 1  # one pipeline: three settlements and three conversations' claims
    assert pending_ids(tenant) == pending_ids(tenant, "c2") == pending_ids(other_tenant) == set()
    assert (cached(tenant), cached(tenant, "c2"), cached(other_tenant)) == ([SEQ, SEQ + 1], [SEQ], [SEQ])
    assert derived_queued() == sorted(EVERY_TENANTS * 3)


def test_a_settlement_redis_refuses_fails_alone_and_its_conversation_is_marked_for_repair(tenant):
    from conversations.models import CacheRepair

    settles, refuses = message(SEQ, "a"), message(SEQ, "b")
    pend(tenant, [settles])
    pend(tenant, [refuses], conversation_id="c2")
    get_redis_connection("default").set(cache.key(tenant.slug, "c2", "messages"), "not a list")  # WRONGTYPE in the script

    errors = services.messages_persist_group(
        payloads=[payload(tenant, [settles]), payload(tenant, [refuses], conversation_id="c2")]
    )

    assert errors == [None, None]  # both committed: a cache that missed the settle is repaired, not retried
    assert stored(tenant) == [(SEQ, "a")]
    assert stored(tenant, "c2") == [(SEQ, "b")]
    assert pending_ids(tenant) == set()
    repairs = set(CacheRepair.unscoped.filter(tenant=tenant).values_list("conversation_id", flat=True))
    assert repairs == {"c2"}


def test_a_settle_after_redis_lost_its_scripts_loads_them_again(tenant):
    from conversations.models import CacheRepair

    first = message(SEQ)
    pend(tenant, [first])
    get_redis_connection("default").script_flush()

    services.messages_persist(payload=payload(tenant, [first]))

    assert pending_ids(tenant) == set()
    assert cached(tenant) == [SEQ]
    assert not CacheRepair.unscoped.filter(tenant=tenant).exists()


# --- Persist tasks running at once (``services.PersistCommits``) ---------------------------------


class HeldStatements:
    """The first persist holds its statement until ``release`` is set; every group is recorded."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.groups: list[int] = []
        alone, together = services.messages_persist, services.messages_persist_group

        def messages_persist(**kwargs: Any) -> int:
            self.groups.append(1)
            if not self.entered.is_set():
                self.entered.set()
                assert self.release.wait(10)
            return alone(**kwargs)

        def messages_persist_group(**kwargs: Any) -> list[Exception | None]:
            self.groups.append(len(kwargs["payloads"]))
            return together(**kwargs)

        monkeypatch.setattr(persisting, "messages_persist", messages_persist)
        monkeypatch.setattr(persisting, "messages_persist_group", messages_persist_group)


def persist_at_once(commits: services.PersistCommits, held: HeldStatements, payloads: list[dict[str, Any]]) -> list[Any]:
    """The first payload's task holds its statement while the others' tasks start; then it ends."""
    outcomes: list[Any] = [None] * len(payloads)

    def task(index: int) -> None:
        try:
            commits.persist(payloads[index])
        except Exception as error:  # the task's own error, as Celery would see it
            outcomes[index] = error
        finally:
            connection.close()

    threads = [threading.Thread(target=task, args=(index,)) for index in range(len(payloads))]
    threads[0].start()
    assert held.entered.wait(10)
    for thread in threads[1:]:
        thread.start()
    wait_until(lambda: len(commits._queue) == len(payloads) - 1, timeout=10, message="the other tasks to wait")
    held.release.set()
    for thread in threads:
        thread.join(10)
    return outcomes


def test_persist_tasks_that_start_during_a_statement_share_the_next_one(tenant, transactional_db, monkeypatch):
    held = HeldStatements(monkeypatch)
    payloads = [payload(tenant, [message(SEQ + n, f"turn {n}")]) for n in range(4)]

    outcomes = persist_at_once(services.PersistCommits(limit=64), held, payloads)

    assert outcomes == [None] * 4
    assert held.groups == [1, 3]  # the first alone, the three that waited in one statement
    assert stored(tenant) == [(SEQ + n, f"turn {n}") for n in range(4)]
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c1").message_count == 4


def test_a_payload_that_fails_in_a_shared_statement_fails_its_own_task_only(tenant, transactional_db, monkeypatch):
    held = HeldStatements(monkeypatch)
    taken = message(SEQ, "one")
    payloads = [
        payload(tenant, [taken]),
        payload(tenant, [message(SEQ + 1, "fine")]),
        payload(tenant, [taken | {"seq": SEQ + 2, "content": "other"}]),  # the same id, other content
        payload(tenant, [message(SEQ + 3, "no NUL in PostgreSQL text \x00")]),
    ]

    outcomes = persist_at_once(services.PersistCommits(limit=64), held, payloads)

    assert outcomes[:2] == [None, None]
    assert isinstance(outcomes[2], services.PersistConflict)
    assert outcomes[3] is not None
    assert stored(tenant) == [(SEQ, "one"), (SEQ + 1, "fine")]


def test_a_group_holds_at_most_limit_payloads_and_the_rest_follow_in_the_next(tenant, transactional_db, monkeypatch):
    held = HeldStatements(monkeypatch)
    payloads = [payload(tenant, [message(SEQ + n)]) for n in range(6)]

    outcomes = persist_at_once(services.PersistCommits(limit=3), held, payloads)

    assert outcomes == [None] * 6
    assert held.groups == [1, 3, 2]  # the fifth task leads the last two
    assert [seq for seq, _ in stored(tenant)] == [SEQ + n for n in range(6)]

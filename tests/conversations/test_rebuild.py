"""The write path's promise 5, "Rebuilds lose nothing": a rebuild (cache miss, ``rebuild_cache``, admin
action) merges the database rows with the writes still pending, never installs a list older than
the live one (version guard, atomic swap), and never shows a message and then hides it again.

A rebuild has three steps: ``snapshot`` (version and pending writes, one script), ``read`` (the
PostgreSQL rows) and ``install`` (the merged list, only if the version did not move). The races
are driven step by step: every actor (a rebuild, an appender, a worker) runs in its own thread and
waits at each step until an explicit schedule gives it the turn, so each interleaving is run
exactly as written, never left to timing.

Without a worker, the persist tasks stay queued and their payloads are captured as they are
published; a test plays the worker by calling ``services.messages_persist`` on them.
"""

import json
import os
import random
import re
import threading
from collections.abc import Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import OperationalError
from django.test import override_settings

from conversations import cache, services
from conversations.models import Conversation, Message
from conversations.services import publish as publishing
from conversations.services import rebuild as rebuilding
from core.exceptions import NotFound, ServiceUnavailable
from tests.conftest import wait_for_rows
from tests.faults import wait_until
from tests.interleavings import (
    Schedule,
    Steps,
    append,
    assert_in_seq_order,
    cached_list,
    drop_list,
    header,
    ids,
    interleavings,
    persist,
    rebuild_steps,
    rows,
    run,
    window,
)

# --- Driving interleavings ------------------------------------------------------------------------


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch) -> Steps:
    """Marks the three steps of every rebuild: ``snapshot``, ``read`` (the database rows) and ``install``."""
    steps = Steps()
    original_snapshot, original_install = cache.snapshot, cache.install

    def snapshot(**kwargs: Any) -> cache.Snapshot:
        steps.at("snapshot")
        taken = original_snapshot(**kwargs)
        steps.at("read")
        return taken

    def install(**kwargs: Any) -> bool:
        steps.at("install")
        return original_install(**kwargs)

    monkeypatch.setattr(cache, "snapshot", snapshot)
    monkeypatch.setattr(cache, "install", install)
    return steps


# --- Appending, persisting and reading ---------------------------------------------------------------


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Payloads of the persist tasks the broker confirmed, as a worker would receive them."""
    payloads: list[dict[str, Any]] = []
    original = publishing.publish

    def publish(task: Any, payload: dict[str, Any]) -> None:
        original(task, payload)
        if task == publishing.MESSAGES_PERSIST:
            payloads.append(json.loads(json.dumps(payload)))

    monkeypatch.setattr(publishing, "publish", publish)
    return payloads


# --- 1. A cache miss ------------------------------------------------------------------------------


def test_a_cache_miss_rebuild_merges_pending_writes_with_database_rows(api, tenant, worker):
    url = "/api/v1/conversations/c1/messages/"
    persisted = []
    for turn in range(3):
        answer = api.post(url, {"role": "user", "content": f"persisted {turn}"}, format="json")
        assert answer.status_code == 201, answer.content
        persisted += answer.json()["messages"]
    wait_for_rows(Message, tenant, 3)
    wait_until(lambda: not cache.pending(tenant_slug="acme", conversation_id="c1"), message="the worker to settle the cache")
    worker.stop()  # from here on, writes stay pending
    pending = []
    for turn in range(2):
        answer = api.post(url, {"role": "assistant", "content": f"pending {turn}"}, format="json")
        assert answer.status_code == 201, answer.content
        pending += answer.json()["messages"]
    drop_list(tenant, "c1")

    answer = api.get(url, {"limit": 50})

    assert answer.status_code == 200, answer.content
    assert answer.json()["source"] == "rebuild"
    assert ids(answer.json()["messages"]) == ids(persisted + pending)
    assert_in_seq_order(answer.json()["messages"])
    assert ids(rows(tenant, "c1")) == ids(persisted)  # the pending ones came from Redis alone
    pending_as_cached = [{name: value for name, value in m.items() if name != "conversation_id"} for m in pending]
    assert cached_list(tenant, "c1") == [header(True), *rows(tenant, "c1"), *pending_as_cached]
    assert api.get(url, {"limit": 50}).json()["source"] == "cache"


# --- 1b. The reader's own rebuild: the miss, the rebuild lock and the snapshot in one script ----------


@pytest.fixture
def reader_steps(steps: Steps, monkeypatch: pytest.MonkeyPatch) -> Steps:
    """The rebuild's steps as a reader that missed takes them: ``window`` (the miss, the rebuild lock
    and the snapshot, one script), ``read`` (the database rows) and ``install`` (which releases the lock)."""
    original = cache.window_or_rebuild_lock

    def window_or_rebuild_lock(**kwargs: Any) -> cache.CachedWindow | cache.WindowMiss:
        steps.at("window")
        found = original(**kwargs)
        steps.at("read")
        return found

    monkeypatch.setattr(cache, "window_or_rebuild_lock", window_or_rebuild_lock)
    return steps


@pytest.fixture
def installs(steps: Steps, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """What each install answered (True: the list was replaced), in order."""
    answers: list[bool] = []
    original = cache.install

    def install(**kwargs: Any) -> bool:
        answers.append(original(**kwargs))
        return answers[-1]

    monkeypatch.setattr(cache, "install", install)
    return answers


def rebuild_lock_held(tenant: Any, conversation_id: str) -> bool:
    return bool(cache.client().exists(cache.key(tenant.slug, conversation_id, "rebuild")))


@pytest.mark.parametrize(
    ("order", "installs_the_list"),
    [
        pytest.param(["reader.window", "client.append", "reader.read", "reader.install"], False, id="append-before-read"),
        pytest.param(["reader.window", "reader.read", "client.append", "reader.install"], False, id="append-before-install"),
        pytest.param(["reader.window", "reader.read", "reader.install", "client.append"], True, id="append-after-install"),
    ],
)
def test_a_readers_rebuild_never_installs_a_list_older_than_the_live_one(
    tenant, no_worker, published, reader_steps, installs, order, installs_the_list
):
    earlier = [append(tenant, "c1", f"earlier {turn}") for turn in range(3)]
    persist(published, earlier[0])
    persist(published, earlier[1])
    drop_list(tenant, "c1")

    def client() -> dict[str, Any]:
        reader_steps.at("append")
        return append(tenant, "c1", "the racing append")

    done = run(reader_steps, order, reader=lambda: window(tenant, "c1"), client=client)

    assert done["reader"].source == "rebuild"
    assert ids(done["reader"].messages) == ids(earlier)  # the append raced the read: neither saw the other
    assert installs[-1] is installs_the_list
    assert not rebuild_lock_held(tenant, "c1")
    seen = window(tenant, "c1")
    assert seen.source == "cache"
    assert ids(seen.messages) == ids([*earlier, done["client"]])
    assert_in_seq_order(seen.messages)


def test_a_reader_missing_while_another_rebuilds_reads_the_database_with_the_pending_writes(
    tenant, no_worker, published, reader_steps, installs
):
    messages = [append(tenant, "c1", f"turn {turn}") for turn in range(3)]
    persist(published, messages[0])
    persist(published, messages[1])  # the third stays pending
    drop_list(tenant, "c1")
    installs.clear()
    held: list[bool] = []

    def observe(label: str) -> None:
        held.append(rebuild_lock_held(tenant, "c1"))

    schedule = Schedule(["first.window", "second.window", "second.read", "first.read", "first.install"], observe=observe)
    done = run(reader_steps, schedule, first=lambda: window(tenant, "c1"), second=lambda: window(tenant, "c1"))

    assert done["first"].source == "rebuild"
    assert done["second"].source == "database"
    assert ids(done["first"].messages) == ids(done["second"].messages) == ids(messages)
    assert installs == [True]  # one rebuild
    assert held == [True, True, True, True, False]  # the first reader held the lock until its install
    assert cached_list(tenant, "c1") == [header(True), *rows(tenant, "c1"), messages[2]]


def test_a_readers_rebuild_that_fails_on_the_database_releases_the_rebuild_lock(tenant, no_worker, published, monkeypatch):
    append(tenant, "c1", "a message")
    drop_list(tenant, "c1")

    def unreachable(**kwargs: Any) -> list[dict[str, Any]]:
        raise OperationalError("connection refused")

    # Every read of the rows fails: the reader's own (``selectors``) and its rebuild's.
    monkeypatch.setattr(services, "conversation_messages", unreachable)
    monkeypatch.setattr(rebuilding, "conversation_messages", unreachable)

    with pytest.raises(ServiceUnavailable):
        window(tenant, "c1")

    assert not rebuild_lock_held(tenant, "c1")


def test_a_cold_read_of_an_unknown_conversation_is_a_404_that_leaves_nothing_in_redis(tenant, transactional_db):
    with pytest.raises(NotFound):
        window(tenant, "nowhere")

    assert cache.client().keys(f"{tenant.slug}:nowhere:*") == []


# --- 1c. The reader does not wait for its install ---------------------------------------------------


@pytest.fixture
def held_installs(background_installs: services.BackgroundInstalls) -> Iterator[threading.Event]:
    """The install thread busy until the test sets the event: the installs submitted meanwhile wait."""
    release = threading.Event()
    assert background_installs.submit(lambda: release.wait(10))
    yield release
    release.set()


def test_a_cold_read_answers_before_its_install_which_follows_on_the_install_thread(
    tenant, no_worker, published, background_installs, held_installs
):
    messages = [append(tenant, "c1", f"turn {turn}") for turn in range(3)]
    persist(published, messages[0])  # the others stay pending
    drop_list(tenant, "c1")

    cold = window(tenant, "c1")
    meanwhile = window(tenant, "c1")

    assert cold.source == "rebuild"
    assert cached_list(tenant, "c1") is None  # not installed yet: the reader did not wait for it
    assert rebuild_lock_held(tenant, "c1")  # so other readers read PostgreSQL and the pending writes
    assert meanwhile.source == "database"
    assert ids(cold.messages) == ids(meanwhile.messages) == ids(messages)

    held_installs.set()
    background_installs.wait(timeout=10)

    assert not rebuild_lock_held(tenant, "c1")
    assert cached_list(tenant, "c1") == [header(True), *rows(tenant, "c1"), messages[1], messages[2]]
    warm = window(tenant, "c1")
    assert warm.source == "cache"
    assert ids(warm.messages) == ids(messages)


def test_an_append_while_a_readers_install_waits_is_never_hidden_by_it(
    tenant, no_worker, published, background_installs, held_installs, installs
):
    earlier = [append(tenant, "c1", f"earlier {turn}") for turn in range(2)]
    persist(published, earlier[0])
    drop_list(tenant, "c1")
    installs.clear()
    cold = window(tenant, "c1")  # its install waits

    later = append(tenant, "c1", "the append after the read")  # warms the cache itself, under its lock
    held_installs.set()
    background_installs.wait(timeout=10)

    assert ids(cold.messages) == ids(earlier)
    assert installs == [True, False]  # the append's rebuild installed; the reader's older list did not
    assert not rebuild_lock_held(tenant, "c1")
    seen = window(tenant, "c1")
    assert seen.source == "cache"
    assert ids(seen.messages) == ids([*earlier, later])


@pytest.mark.parametrize("messages_only", [False, True], ids=["erase", "clear"])
def test_an_erase_while_a_readers_install_waits_is_never_undone_by_it(
    tenant, no_worker, published, background_installs, held_installs, messages_only
):
    erased = [append(tenant, "c1", f"a secret {turn}") for turn in range(2)]
    for message in erased:
        persist(published, message)
    cache.client().delete(*cache.client().keys(f"{tenant.slug}:c1:*"))  # cold: Redis knows nothing of c1
    cold = window(tenant, "c1")  # its install waits

    services.conversation_erase(tenant=tenant, conversation_id="c1", messages_only=messages_only)
    held_installs.set()
    background_installs.wait(timeout=10)

    assert ids(cold.messages) == ids(erased)
    cached = cached_list(tenant, "c1") or []
    assert not {m.get("id") for m in cached} & set(ids(erased))
    if messages_only:
        assert window(tenant, "c1").messages == []


def test_a_reader_past_the_waiting_installs_limit_installs_its_list_itself(tenant, no_worker, published, monkeypatch):
    installs = services.BackgroundInstalls(limit=1)
    monkeypatch.setattr(rebuilding, "background_installs", installs)
    release = threading.Event()
    assert installs.submit(lambda: release.wait(10))  # the one slot
    try:
        messages = [append(tenant, "c1", f"turn {turn}") for turn in range(2)]
        drop_list(tenant, "c1")

        cold = window(tenant, "c1")

        assert cold.source == "rebuild"
        assert cached_list(tenant, "c1") == [header(True), *messages]  # installed before the read answered
        assert not rebuild_lock_held(tenant, "c1")
    finally:
        release.set()
        installs.wait(timeout=10)


def test_an_install_that_meets_redis_down_leaves_the_lock_to_expire_and_the_next_read_rebuilds(
    tenant, no_worker, published, background_installs, monkeypatch
):
    messages = [append(tenant, "c1", f"turn {turn}") for turn in range(2)]
    drop_list(tenant, "c1")
    original = cache.install

    def unreachable(**kwargs: Any) -> bool:
        raise cache.CacheUnavailable("install: Connection refused")

    monkeypatch.setattr(cache, "install", unreachable)
    cold = window(tenant, "c1")
    background_installs.wait(timeout=10)
    monkeypatch.setattr(cache, "install", original)

    assert ids(cold.messages) == ids(messages)
    assert cached_list(tenant, "c1") is None
    assert window(tenant, "c1").source == "database"  # the lock is held until it expires
    cache.client().delete(cache.key(tenant.slug, "c1", "rebuild"))  # it expires
    assert window(tenant, "c1").source == "rebuild"
    background_installs.wait(timeout=10)
    assert window(tenant, "c1").source == "cache"


def test_a_forked_process_runs_installs_on_a_thread_of_its_own():
    installs = services.BackgroundInstalls(limit=4)
    installs.submit(lambda: None)
    installs.wait(timeout=10)  # the parent's thread exists now; a child forked from here has none
    child = os.fork()
    if child == 0:  # the child: exit 0 only if an install runs there
        ran = threading.Event()
        try:
            installs.submit(ran.set)
            installs.wait(timeout=5)
        finally:
            os._exit(0 if ran.is_set() else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0


# --- 2. An append racing a rebuild ----------------------------------------------------------------

APPEND_AGAINST_REBUILD = [
    pytest.param(["client.append", *rebuild_steps("rebuild")], True, id="append-before-snapshot"),
    pytest.param(["rebuild.snapshot", "client.append", "rebuild.read", "rebuild.install"], False, id="append-before-read"),
    pytest.param(["rebuild.snapshot", "rebuild.read", "client.append", "rebuild.install"], False, id="append-before-install"),
    pytest.param([*rebuild_steps("rebuild"), "client.append"], True, id="append-after-install"),
]


@pytest.mark.parametrize("list_cached", [True, False], ids=["list-cached", "list-expired"])
@pytest.mark.parametrize(("order", "installs"), APPEND_AGAINST_REBUILD)
def test_rebuild_never_installs_a_list_older_than_the_live_one(tenant, no_worker, published, steps, order, installs, list_cached):
    earlier = [append(tenant, "c1", f"earlier {turn}") for turn in range(3)]
    persist(published, earlier[0])
    persist(published, earlier[1])
    if not list_cached:
        drop_list(tenant, "c1")

    def client() -> dict[str, Any]:
        steps.at("append")
        return append(tenant, "c1", "the racing append")

    done = run(steps, order, rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id="c1"), client=client)

    assert done["rebuild"].installed is installs
    seen = window(tenant, "c1")
    assert seen.source == "cache"
    assert ids(seen.messages) == ids([*earlier, done["client"]])
    assert_in_seq_order(seen.messages)


# --- 3. Two rebuilds racing -----------------------------------------------------------------------


@pytest.mark.parametrize("list_cached", [True, False], ids=["list-cached", "list-expired"])
def test_two_rebuilds_racing_install_once_and_lose_nothing(tenant, no_worker, published, steps, list_cached):
    orders = interleavings(rebuild_steps("first"), rebuild_steps("second"))
    assert len(orders) == 20
    for number, order in enumerate(orders):
        conversation_id = f"race-{number}"
        messages = [append(tenant, conversation_id, f"turn {turn}") for turn in range(3)]
        persist(published, messages[0])
        persist(published, messages[1])  # the third stays pending
        if not list_cached:
            drop_list(tenant, conversation_id)

        def rebuild(conversation_id: str = conversation_id) -> services.RebuildResult:
            return services.cache_rebuild(tenant=tenant, conversation_id=conversation_id)

        done = run(steps, order, first=rebuild, second=rebuild)

        winner, loser = (
            ("first", "second") if order.index("first.install") < order.index("second.install") else ("second", "first")
        )
        loser_saw_the_winner = order.index(f"{loser}.snapshot") > order.index(f"{winner}.install")
        assert done[winner].installed, order
        assert done[loser].installed is loser_saw_the_winner, order
        assert ids(done[winner].messages) == ids(done[loser].messages) == ids(messages), order
        assert cached_list(tenant, conversation_id) == [header(True), *rows(tenant, conversation_id), messages[2]], order
        assert ids(window(tenant, conversation_id).messages) == ids(messages), order


# --- 4. A worker persisting during a rebuild ------------------------------------------------------

PERSIST_AGAINST_REBUILD = [
    pytest.param(["worker.persist", *rebuild_steps("rebuild")], id="persist-before-snapshot"),
    pytest.param(["rebuild.snapshot", "worker.persist", "rebuild.read", "rebuild.install"], id="persist-before-read"),
    pytest.param(["rebuild.snapshot", "rebuild.read", "worker.persist", "rebuild.install"], id="persist-before-install"),
    pytest.param([*rebuild_steps("rebuild"), "worker.persist"], id="persist-after-install"),
]


@pytest.mark.parametrize("list_cached", [True, False], ids=["list-cached", "list-expired"])
@pytest.mark.parametrize("order", PERSIST_AGAINST_REBUILD)
def test_a_message_persisted_between_snapshot_and_database_read_is_not_lost(
    tenant, no_worker, published, steps, order, list_cached
):
    settled = append(tenant, "c1", "already persisted")
    persist(published, settled)
    racing = append(tenant, "c1", "pending at the snapshot")
    if not list_cached:
        drop_list(tenant, "c1")

    def worker() -> None:
        steps.at("persist")
        persist(published, racing)

    done = run(steps, order, rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id="c1"), worker=worker)

    # Settling a write the rebuild saw as pending changes nothing it could miss: it installs.
    assert done["rebuild"].installed
    assert ids(done["rebuild"].messages) == ids([settled, racing])
    assert cached_list(tenant, "c1") == [header(True), settled, racing]
    assert cache.pending(tenant_slug="acme", conversation_id="c1") == []
    assert ids(rows(tenant, "c1")) == ids([settled, racing])
    assert window(tenant, "c1").messages == [settled, racing]


@pytest.mark.parametrize("list_cached", [True, False], ids=["list-cached", "list-expired"])
@pytest.mark.parametrize(
    "order",
    [
        pytest.param(["rebuild.snapshot", "worker.persist", "rebuild.read", "rebuild.install"], id="persist-before-read"),
        pytest.param(["rebuild.snapshot", "rebuild.read", "worker.persist", "rebuild.install"], id="persist-before-install"),
    ],
)
def test_a_write_redis_lost_that_is_persisted_during_a_rebuild_is_not_left_out(
    tenant, no_worker, published, steps, order, list_cached
):
    oldest = append(tenant, "c1", "persisted before the restart")
    persist(published, oldest)
    lost = append(tenant, "c1", "pending when Redis restarted")
    cache.client().flushdb()  # the pending write is gone from Redis: no rebuild can see it as pending
    if list_cached:
        assert ids(window(tenant, "c1").messages) == ids([oldest])

    def worker() -> None:
        steps.at("persist")
        persist(published, lost)

    run(steps, order, rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id="c1"), worker=worker)

    # Settling a write that was not pending bumps the version: a rebuild that missed it is refused.
    assert window(tenant, "c1").messages == [oldest, lost]


# --- 5. Redis restarted with a write pending ------------------------------------------------------


def test_a_settle_after_redis_lost_the_write_puts_it_back_in_order(tenant, no_worker, published):
    oldest = append(tenant, "c1", "persisted before the restart")
    persist(published, oldest)
    lost = append(tenant, "c1", "pending when Redis restarted")
    cache.client().flushdb()  # a Redis restart without persistence
    newest = append(tenant, "c1", "appended after the restart")

    assert newest["seq"] > lost["seq"]  # seqs keep increasing across the restart
    # The list was rebuilt from PostgreSQL without the lost write; only the broker still has it.
    assert ids(window(tenant, "c1").messages) == ids([oldest, newest])

    persist(published, lost)

    assert cached_list(tenant, "c1") == [header(True), oldest, lost, newest]  # settled in the middle
    seen = window(tenant, "c1")
    assert seen.source == "cache"
    assert seen.messages == [oldest, lost, newest]

    persist(published, newest)
    cache.invalidate(tenant_slug="acme", conversation_id="c1")

    assert window(tenant, "c1").messages == rows(tenant, "c1") == [oldest, lost, newest]


# --- 6. Reads never go backwards --------------------------------------------------------------------


class ReadHistory:
    """What one client saw: every read must keep what earlier reads showed, in the same order."""

    def __init__(self, description: str) -> None:
        self.description = description
        self.acknowledged: list[str] = []
        self.seen: list[str] = []
        self.log: list[str] = []

    def check(self, messages: list[dict[str, Any]]) -> None:
        shown = ids(messages)
        self.log.append(f"read {len(shown)}")
        context = f"{self.description}; steps: {self.log}"
        assert_in_seq_order(messages)
        assert len(set(shown)) == len(shown), context
        assert [message_id for message_id in shown if message_id in self.seen] == self.seen, f"a read hid a message: {context}"
        assert set(self.acknowledged) <= set(shown), f"an acknowledged write is missing: {context}"
        self.seen = shown


def random_schedule(seed: int, *, persisting: bool) -> tuple[list[tuple[str, str]], list[str]]:
    """The client's operations and the order of all steps, rebuilds' steps interleaved among them."""
    chooser = random.Random(seed)
    kinds = ["append"] * 4 + ["read"] * 4 + ["invalidate"] * 1 + (["persist"] * 3 if persisting else [])
    operations = [("op0", "append")] + [(f"op{number}", chooser.choice(kinds)) for number in range(1, 24)]
    operations.append(("op24", "read"))
    rebuilds = [f"rebuild{number}" for number in range(3)]
    slots = ["client"] * len(operations) + [name for name in rebuilds for _ in range(3)]
    chooser.shuffle(slots)
    slots.remove("client")  # the first operation (an append) comes first, the final read last
    slots.reverse()
    slots.remove("client")
    slots.reverse()
    slots = ["client", *slots, "client"]
    pending_steps = {"client": [f"client.{label}" for label, _ in operations]} | {name: rebuild_steps(name) for name in rebuilds}
    order = [pending_steps[actor].pop(0) for actor in slots]
    return operations, order


@pytest.mark.parametrize("persisting", [False, True], ids=["nothing-persisted", "persisted-as-it-goes"])
@pytest.mark.parametrize("seed", range(12))
def test_rebuild_never_shows_a_message_then_hides_it(tenant, no_worker, published, steps, seed, persisting):
    conversation_id = f"c-{seed}"
    operations, order = random_schedule(seed, persisting=persisting)
    history = ReadHistory(f"seed {seed}, persisting {persisting}, order {order}")
    unpersisted: list[dict[str, Any]] = []
    chooser = random.Random(seed + 1000)

    def client() -> None:
        for label, kind in operations:
            steps.at(label)
            history.log.append(f"{label} {kind}")
            if kind == "append":
                message = append(tenant, conversation_id, f"{label} of seed {seed}", role=chooser.choice(["user", "assistant"]))
                history.acknowledged.append(message["id"])
                unpersisted.append(message)
            elif kind == "read":
                history.check(window(tenant, conversation_id).messages)
            elif kind == "invalidate":
                cache.invalidate(tenant_slug=tenant.slug, conversation_id=conversation_id)
            elif kind == "persist" and unpersisted:
                persist(published, unpersisted.pop(chooser.randrange(len(unpersisted))))

    def rebuild() -> services.RebuildResult:
        return services.cache_rebuild(tenant=tenant, conversation_id=conversation_id)

    run(steps, order, client=client, rebuild0=rebuild, rebuild1=rebuild, rebuild2=rebuild)

    for message in list(unpersisted):
        persist(published, message)
    history.check(window(tenant, conversation_id).messages)
    assert history.seen == history.acknowledged == ids(rows(tenant, conversation_id))
    cache.invalidate(tenant_slug=tenant.slug, conversation_id=conversation_id)
    history.check(window(tenant, conversation_id).messages)


def test_the_random_schedules_keep_each_actor_in_order_and_start_and_end_with_the_client():
    operations, order = random_schedule(3, persisting=True)

    assert order[0] == "client.op0"
    assert order[-1] == f"client.{operations[-1][0]}"
    assert [label for label in order if label.startswith("client.")] == [f"client.{label}" for label, _ in operations]
    for name in ("rebuild0", "rebuild1", "rebuild2"):
        assert [label for label in order if label.startswith(f"{name}.")] == rebuild_steps(name)
    assert random_schedule(3, persisting=True) == (operations, order)


# --- 7. A list capped at MEMORY_CACHE_LIST_LIMIT --------------------------------------------------


@override_settings(MEMORY_CACHE_LIST_LIMIT=5)
def test_rebuild_respects_the_cache_list_limit_and_falls_back_to_postgres_for_deeper_reads(tenant, no_worker, published):
    messages = [append(tenant, "c1", f"turn {turn}", role=("user", "assistant")[turn % 2]) for turn in range(12)]
    for message in messages:
        persist(published, message)
    drop_list(tenant, "c1")

    result = services.cache_rebuild(tenant=tenant, conversation_id="c1")

    assert result.installed
    assert not result.complete
    assert cached_list(tenant, "c1") == [header(False), *messages[-5:]]

    newest = window(tenant, "c1", limit=3)
    assert newest.source == "cache"
    assert newest.messages == messages[-3:]

    deeper = window(tenant, "c1", limit=10)
    assert deeper.source == "database"
    assert deeper.messages == messages[-10:]

    skipped = window(tenant, "c1", limit=4, skip=3)
    assert skipped.messages == messages[-7:-3]

    users = window(tenant, "c1", limit=4, role="user")
    assert users.source == "database"
    assert users.messages == [m for m in messages if m["role"] == "user"][-4:]

    assert cached_list(tenant, "c1") == [header(False), *messages[-5:]]  # reads did not grow the list


@override_settings(MEMORY_CACHE_LIST_LIMIT=5)
def test_a_capped_cache_miss_rebuild_merges_pending_writes_deeper_reads_included(tenant, no_worker, published):
    persisted = [append(tenant, "c1", f"persisted {turn}") for turn in range(8)]
    for message in persisted:
        persist(published, message)
    pending = [append(tenant, "c1", f"pending {turn}", role="assistant") for turn in range(3)]
    drop_list(tenant, "c1")

    newest = window(tenant, "c1", limit=4)
    assert newest.source == "rebuild"
    assert newest.messages == [*persisted, *pending][-4:]
    assert cached_list(tenant, "c1") == [header(False), *[*persisted, *pending][-4:]]  # what the read needs
    assert window(tenant, "c1", limit=4).source == "cache"

    deeper = window(tenant, "c1", limit=5)  # too deep for the partial list: rebuilt deeper, up to the cap
    assert deeper.source == "rebuild"
    assert deeper.messages == [*persisted, *pending][-5:]
    assert cached_list(tenant, "c1") == [header(False), *[*persisted, *pending][-5:]]

    assert window(tenant, "c1", limit=9).messages == [*persisted, *pending][-9:]
    assert window(tenant, "c1", limit=9, role="assistant").messages == pending


# --- 8. The rebuild_cache command -----------------------------------------------------------------


@pytest.fixture
def three_conversations(tenant, no_worker, published) -> dict[str, list[dict[str, Any]]]:
    """Two active conversations and an archived one, all persisted, none cached."""
    conversations = {
        "support": [append(tenant, "support", f"support {turn}") for turn in range(3)],
        "sales": [append(tenant, "sales", f"sales {turn}") for turn in range(2)],
        "old": [append(tenant, "old", "old 0")],
    }
    for messages in conversations.values():
        for message in messages:
            persist(published, message)
    Conversation.objects.for_tenant(tenant).filter(conversation_id="old").update(archived=True)
    for conversation_id in conversations:
        cache.invalidate(tenant_slug=tenant.slug, conversation_id=conversation_id)
    return conversations


def test_rebuild_cache_rebuilds_every_active_conversation_of_the_tenant_and_prints_a_summary(tenant, three_conversations):
    output = StringIO()

    call_command("rebuild_cache", "--tenant", "acme", stdout=output)

    assert re.search(r"rebuild_cache acme: 2 conversations, 5 messages cached, [\d.]+ s", output.getvalue()), output.getvalue()
    for conversation_id in ("support", "sales"):
        assert cached_list(tenant, conversation_id) == [header(True), *rows(tenant, conversation_id)]
        assert rows(tenant, conversation_id) == three_conversations[conversation_id]
        assert (
            cache.get_memory(tenant_slug="acme", conversation_id=conversation_id)["metadata"]["conversation_id"]
            == conversation_id
        )
    assert cached_list(tenant, "old") is None  # archived: left alone


def test_rebuild_cache_keeps_the_writes_still_pending(tenant, three_conversations):
    late = append(tenant, "support", "not persisted yet")
    cache.invalidate(tenant_slug="acme", conversation_id="support")

    call_command("rebuild_cache", "--tenant", "acme", stdout=StringIO())

    assert cached_list(tenant, "support") == [header(True), *three_conversations["support"], late]


def test_rebuild_cache_with_a_conversation_rebuilds_only_that_one(tenant, three_conversations):
    output = StringIO()

    call_command("rebuild_cache", "--tenant", "acme", "--conversation", "sales", stdout=output)

    assert "rebuild_cache acme: 1 conversations, 2 messages cached" in output.getvalue()
    assert cached_list(tenant, "sales") == [header(True), *three_conversations["sales"]]
    assert cached_list(tenant, "support") is None
    assert cached_list(tenant, "old") is None


def test_rebuild_cache_of_an_unknown_conversation_is_an_error_that_names_it(tenant, three_conversations):
    with pytest.raises(CommandError, match="no conversation nowhere"):
        call_command("rebuild_cache", "--tenant", "acme", "--conversation", "nowhere", stdout=StringIO())

    assert cached_list(tenant, "support") is None


def test_rebuild_cache_of_an_unknown_tenant_is_an_error_that_names_the_known_ones(tenant, transactional_db):
    with pytest.raises(CommandError, match=r"No tenant 'initech' \(known tenants: acme\)"):
        call_command("rebuild_cache", "--tenant", "initech", stdout=StringIO())


def test_rebuild_cache_does_not_show_one_tenant_the_conversations_of_another(tenant, other_tenant, three_conversations):
    with pytest.raises(CommandError, match="no conversation support"):
        call_command("rebuild_cache", "--tenant", "globex", "--conversation", "support", stdout=StringIO())

    output = StringIO()
    call_command("rebuild_cache", "--tenant", "globex", stdout=output)

    assert "rebuild_cache globex: 0 conversations, 0 messages cached" in output.getvalue()
    assert cached_list(tenant, "support") is None


def test_rebuild_cache_async_queues_one_task_per_conversation_that_a_worker_runs(api, tenant, worker):
    url = "/api/v1/conversations/{}/messages/"
    for conversation_id, turns in (("support", 3), ("sales", 2)):
        for turn in range(turns):
            assert api.post(url.format(conversation_id), {"role": "user", "content": f"{turn}"}, format="json").status_code == 201
    wait_for_rows(Message, tenant, 5)
    for conversation_id in ("support", "sales"):
        wait_until(lambda c=conversation_id: not cache.pending(tenant_slug="acme", conversation_id=c), message="settled")
        drop_list(tenant, conversation_id)
    output = StringIO()

    call_command("rebuild_cache", "--tenant", "acme", "--async", stdout=output)

    assert "rebuild_cache acme: 2 conversations queued" in output.getvalue()
    for conversation_id in ("support", "sales"):
        wait_until(lambda c=conversation_id: cached_list(tenant, c) is not None, message=f"the rebuild of {conversation_id}")
        assert cached_list(tenant, conversation_id) == [header(True), *rows(tenant, conversation_id)]


# --- The version guard across a reset of the conversation's state ---------------------------------

VERSION_RESET = (
    "The version guard compares a counter that restarts at 0 when the conversation's state hash is lost "
    "(Redis restart, cache.erase on conversation erase): a rebuild that snapshotted version N before the "
    "reset installs its stale list once later changes bring the new counter back to N (ABA). "
    "conversations/cache.py SNAPSHOT/INSTALL (lines 194-215)."
)


def test_a_rebuild_that_straddles_a_redis_restart_never_installs_its_stale_list(tenant, no_worker, published, steps):
    before = append(tenant, "c1", "persisted before the restart")
    persist(published, before)
    reads: list[list[str]] = []

    def client() -> dict[str, Any]:
        steps.at("restart_and_append")
        cache.client().flushdb()  # Redis restarts while the rebuild reads PostgreSQL
        after = append(tenant, "c1", "appended after the restart")
        reads.append(ids(window(tenant, "c1").messages))
        return after

    done = run(
        steps,
        ["rebuild.snapshot", "rebuild.read", "client.restart_and_append", "rebuild.install"],
        rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id="c1"),
        client=client,
    )

    after = done["client"]
    assert reads == [ids([before, after])]  # the user saw the new message...
    assert ids(window(tenant, "c1").messages) == ids([before, after])  # ...and it must not vanish
    assert not done["rebuild"].installed


def test_a_rebuild_that_straddles_an_erase_never_brings_erased_messages_back(tenant, no_worker, published, steps):
    erased = append(tenant, "c1", "a secret the user erased")
    persist(published, erased)
    reads: list[list[str]] = []

    def client() -> dict[str, Any]:
        steps.at("erase_and_append")
        services.conversation_erase(tenant=tenant, conversation_id="c1")
        fresh = append(tenant, "c1", "a new conversation under the same id")
        reads.append(ids(window(tenant, "c1").messages))
        return fresh

    done = run(
        steps,
        ["rebuild.snapshot", "rebuild.read", "client.erase_and_append", "rebuild.install"],
        rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id="c1"),
        client=client,
    )

    fresh = done["client"]
    assert reads == [[fresh["id"]]]
    assert ids(window(tenant, "c1").messages) == [fresh["id"]]  # not the erased message, not without the new one
    assert not done["rebuild"].installed


# --- The admin action -------------------------------------------------------------------------------


def test_the_admin_action_rebuilds_the_selected_conversations_with_their_pending_writes(
    client, django_user_model, tenant, three_conversations
):
    late = append(tenant, "support", "not persisted yet")
    cache.invalidate(tenant_slug="acme", conversation_id="support")
    operator = django_user_model.objects.create_superuser("operator", "operator@example.com", "a-long-password")
    client.force_login(operator)
    support = Conversation.objects.for_tenant(tenant).get(conversation_id="support")

    answer = client.post(
        "/admin/conversations/conversation/",
        {"action": "rebuild_cache", "_selected_action": [support.pk]},
        follow=True,
    )

    assert answer.status_code == 200
    assert "Rebuilt the cache of 1 conversation (4 messages cached)." in answer.content.decode()
    assert cached_list(tenant, "support") == [header(True), *three_conversations["support"], late]
    assert cached_list(tenant, "sales") is None

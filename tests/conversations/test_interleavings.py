"""Every interleaving of two racing actors, run step by step against the write path's
promises: nothing acknowledged is lost, nothing is listed twice, the order by seq is the same in
the cache and in PostgreSQL, a rebuild never installs a list older than the live one, nothing
erased comes back, and no message is shown and then hidden.

The actors and their steps (each a function of ``conversations.cache`` or ``services`` wrapped so
that its thread waits for its turn there):

* an append (``message_append``): ``reserve`` (the append lock and the seqs), ``publish`` (the
  broker's confirm, then the rebuild of a cold cache under the lock) and ``merge`` (into the list
  and the pending writes, releasing the lock);
* a rebuild (``cache_rebuild``): ``snapshot``, ``read`` (the PostgreSQL rows) and ``install``;
* the worker (``messages_persist``): ``commit`` (the rows) and ``settle`` (the cache); a task
  redelivered, after its worker died or after it finished, runs again from ``redeliver``;
* an erase (``conversation_erase``): ``reserve`` (the append lock), ``delete`` (the rows and the
  tombstone) and ``erase`` (every cache key);
* Redis expiring keys: ``list`` (the cached list) and ``keys`` (the message keys).

For each pair, every merge of the two step sequences that keeps each actor's own order is a test
of its own. The cache is looked at after every step, so the step that hides a message, installs an
older list or brings an erased message back is named in the failure. After the schedule the worker
runs every task of the conversation (again, where it already ran: a redelivery must change
nothing) and the window is compared with the rows.

The schedules share one database, each on a conversation of its own, flushed once at the end: a
flush after every test would take longer than the schedules themselves.
"""

import itertools
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import pytest
from django.core.management import call_command

from conversations import cache, selectors, services
from conversations.exceptions import NotFound
from conversations.services import publish as publishing
from tests.conftest import _workers
from tests.interleavings import (
    Schedule,
    Steps,
    append,
    cached_list,
    capture_published,
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

APPEND = ["client.reserve", "client.publish", "client.merge"]
REBUILD = rebuild_steps("rebuild")
ERASE = ["erase.reserve", "erase.delete", "erase.erase"]


class WorkerKilled(BaseException):
    """The worker process dies here: nothing after this point of the task runs, and the broker,
    which never saw the task acknowledged, delivers it again."""


class RaceSteps(Steps):
    kills = 0  # settles still to die at (the worker is killed after its commit, before its settle)


# --- Fixtures -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def db(django_db_setup: Any, django_db_blocker: Any) -> Iterator[None]:
    """This module's database (in place of pytest-django's ``db``, which would keep each test in a
    transaction the actors' threads cannot see): committed as in production, kept for the whole
    module and flushed once at its end, as a transactional test flushes after itself."""
    with django_db_blocker.unblock():
        worker = _workers.get("main")
        if worker is not None:
            worker.stop()  # nothing consumes the queue: acknowledged writes stay pending until a test persists them
        yield
        call_command("flush", verbosity=0, interactive=False)


_conversation_numbers = itertools.count()


@pytest.fixture
def conversation_id() -> str:
    return f"race-{next(_conversation_numbers)}"


@pytest.fixture
def published(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Payloads of the persist tasks the broker confirmed, as a worker would receive them."""
    return capture_published(monkeypatch)


@pytest.fixture
def steps(monkeypatch: pytest.MonkeyPatch, published: list[dict[str, Any]]) -> RaceSteps:
    """Marks the steps of every actor (see the module docstring) where they reach the cache or the broker."""
    steps = RaceSteps()
    snapshot, install, reserve, merge, settle = cache.snapshot, cache.install, cache.reserve, cache.merge, cache.settle
    pending, erase, publish = cache.pending, cache.erase, publishing.publish

    def marked_snapshot(**kwargs: Any) -> cache.Snapshot:
        steps.at("snapshot")
        taken = snapshot(**kwargs)
        steps.at("read")
        return taken

    def marked_install(**kwargs: Any) -> bool:
        steps.at("install")
        return install(**kwargs)

    def marked_reserve(**kwargs: Any) -> cache.Reservation | None:
        steps.at("reserve")
        reservation = reserve(**kwargs)
        if reservation is None:  # another actor holds the append lock: its steps go first
            steps.defer()
        return reservation

    def marked_merge(**kwargs: Any) -> None:
        steps.at("merge")
        merge(**kwargs)

    def marked_settle(settlements: Any, **kwargs: Any) -> cache.Settled:
        # The worker settles what it committed: messages now rows, and those it dropped (erased) or
        # lost (a duplicate id).
        if steps.kills:
            steps.kills -= 1
            raise WorkerKilled
        steps.at("settle")
        return settle(settlements, **kwargs)

    def marked_pending(**kwargs: Any) -> list[dict[str, Any]]:
        steps.at("delete")  # the erase reads the pending writes, then deletes rows in one transaction
        return pending(**kwargs)

    def marked_erase(**kwargs: Any) -> int:
        steps.at("erase")
        return erase(**kwargs)

    def marked_publish(task: Any, payload: dict[str, Any]) -> None:
        steps.at("publish")
        publish(task, payload)

    monkeypatch.setattr(cache, "snapshot", marked_snapshot)
    monkeypatch.setattr(cache, "install", marked_install)
    monkeypatch.setattr(cache, "reserve", marked_reserve)
    monkeypatch.setattr(cache, "merge", marked_merge)
    monkeypatch.setattr(cache, "settle", marked_settle)
    monkeypatch.setattr(cache, "pending", marked_pending)
    monkeypatch.setattr(cache, "erase", marked_erase)
    monkeypatch.setattr(publishing, "publish", marked_publish)
    return steps


# --- Schedules, and what the cache looked like between their steps -----------------------------------


def schedules(*sequences: Sequence[str]) -> list[Any]:
    """Every interleaving of the sequences as a parameter, named by its steps in order (with the
    actor where two actors have a step of the same name)."""
    params = []
    for order in interleavings(*sequences):
        names = [label.split(".")[1] for label in order]
        readable = names if len(set(names)) == len(names) else order
        params.append(pytest.param(order, id="-".join(readable)))
    return params


@dataclass(frozen=True)
class Look:
    after: str  # the step that had just ended ("start": before the first)
    listed: list[tuple[str, int]] | None  # (id, seq) of each cached message in list order; None: not cached
    pending: set[str]
    keyed: set[str]  # messages with a message key
    error: str = ""  # the look itself failed


def look(tenant: Any, conversation_id: str, after: str) -> Look:
    client = cache.client()
    listed = cached_list(tenant, conversation_id)
    pending = cache.key(tenant.slug, conversation_id, "pending")
    prefix = cache.message_key(tenant.slug, conversation_id, "")
    return Look(
        after=after,
        listed=None if listed is None else [(message["id"], message["seq"]) for message in listed[1:]],
        pending={message_id.decode() for message_id in client.hkeys(pending)},
        keyed={found.decode().removeprefix(prefix) for found in client.scan_iter(match=f"{prefix}*")},
    )


def observed(tenant: Any, conversation_id: str, order: Sequence[str]) -> tuple[Schedule, list[Look]]:
    """A schedule that looks at the cache after each of its steps, and the list of those looks."""
    looks = [look(tenant, conversation_id, "start")]

    def observe(label: str) -> None:
        try:
            looks.append(look(tenant, conversation_id, label))
        except Exception as error:  # an actor's thread must not die of it: the test reports it
            looks.append(Look(after=label, listed=None, pending=set(), keyed=set(), error=repr(error)))

    return Schedule(order, observe=observe), looks


def assert_seen_consistently(
    looks: list[Look],
    *,
    acknowledged: dict[str, str],
    erased: Collection[str] = (),
) -> None:
    """Between every two steps: the cached list is in seq order without duplicates; it keeps every
    message it ever showed (so no rebuild installed an older list) and every acknowledged one
    (``acknowledged``: message id -> the step after which it was acknowledged). Erased messages
    may go once the erase committed (``erase.delete``) and are nowhere in Redis once it cleared the
    cache (``erase.erase``)."""
    shown: dict[str, str] = {}  # message id -> the step after which it was first listed
    acknowledged_now: set[str] = set()
    gone: set[str] = set()  # erased messages, once the erase committed
    cleared = False
    assert not [seen for seen in looks if seen.error], looks
    history = [f"{seen.after}: {seen.listed and [message_id for message_id, _ in seen.listed]}" for seen in looks]
    for seen in looks:
        acknowledged_now |= {message_id for message_id, step in acknowledged.items() if step == seen.after}
        if seen.after == "erase.delete":
            gone = set(erased)
        cleared = cleared or seen.after == "erase.erase"
        if cleared:
            back = gone & (seen.pending | seen.keyed | {message_id for message_id, _ in seen.listed or []})
            assert not back, f"erased messages {back} are back in Redis after {seen.after}; {history}"
        if seen.listed is None:
            continue
        listed = [message_id for message_id, _ in seen.listed]
        seqs = [seq for _, seq in seen.listed]
        assert len(set(listed)) == len(listed), f"a message listed twice after {seen.after}; {history}"
        assert seqs == sorted(set(seqs)), f"the list is out of seq order after {seen.after}; {history}"
        hidden = {message_id: step for message_id, step in shown.items() if message_id not in {*listed, *gone}}
        assert not hidden, f"shown then hidden after {seen.after}: {hidden}; {history}"
        missing = acknowledged_now - {*listed, *gone}
        assert not missing, f"acknowledged but not listed after {seen.after}: {missing}; {history}"
        shown.update({message_id: seen.after for message_id in listed if message_id not in shown})


def assert_promises_kept(
    tenant: Any,
    conversation_id: str,
    published: list[dict[str, Any]],
    *,
    kept: Sequence[dict[str, Any]],
    erased: Sequence[dict[str, Any]] = (),
) -> None:
    """The window shows exactly ``kept``, before and after the worker ran every task of the
    conversation; the rows are the same messages in the same order; ``erased`` is nowhere."""
    kept = sorted(kept, key=lambda message: message["seq"])

    def shown() -> list[dict[str, Any]] | None:
        try:
            return window(tenant, conversation_id).messages
        except NotFound:
            return None

    assert shown() == (kept or None)
    committed = set(ids(rows(tenant, conversation_id)))
    for payload in [payload for payload in published if payload["conversation_id"] == conversation_id]:
        if not set(ids(payload["messages"])) <= committed:  # the tasks still queued
            services.messages_persist(payload=payload)
    assert rows(tenant, conversation_id) == kept
    assert shown() == (kept or None)
    if kept:
        assert cached_list(tenant, conversation_id) == [header(True), *kept]
    cache.invalidate(tenant_slug=tenant.slug, conversation_id=conversation_id)
    assert shown() == (kept or None)
    assert not cache.pending(tenant_slug=tenant.slug, conversation_id=conversation_id)
    for message in erased:
        with pytest.raises(NotFound):
            selectors.message_get(tenant=tenant, conversation_id=conversation_id, message_id=message["id"])
        assert not [found for found in cache.client().scan_iter(match=f"*{message['id']}*")], "an erased message key"


def earlier_messages(tenant: Any, conversation_id: str, published: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Two acknowledged messages: the first persisted, the second still pending."""
    messages = [append(tenant, conversation_id, f"earlier {turn}") for turn in range(2)]
    persist(published, messages[0])
    return messages


def installs(order: Sequence[str], *, bumping: Collection[str] = ()) -> set[str]:
    """The rebuilds of ``order`` that install: those that see the version they snapshotted at
    their install. An install bumps the version, and so do the steps in ``bumping``."""
    version = 0
    snapshotted: dict[str, int] = {}
    installed = set()
    for label in order:
        actor, step = label.split(".")
        if step == "snapshot":
            snapshotted[actor] = version
        elif step == "install" and actor in snapshotted:
            if snapshotted[actor] == version:
                installed.add(actor)
                version += 1
        elif label in bumping:
            version += 1
    return installed


LIST_CACHED = pytest.mark.parametrize("list_cached", [True, False], ids=["list-cached", "list-expired"])


# --- 1. A rebuild racing an append -------------------------------------------------------------------


def append_bumps(order: Sequence[str], *, list_cached: bool) -> set[str]:
    """The append's steps that change the version: its merge, and its publish when it found the list
    missing (it rebuilds the cold cache under its lock, after the broker confirmed)."""
    bumping = {"client.merge"}
    list_found = list_cached or order.index("rebuild.install") < order.index("client.reserve")
    if not list_found:
        bumping.add("client.publish")
    return bumping


@LIST_CACHED
@pytest.mark.parametrize("order", schedules(REBUILD, APPEND))
def test_a_rebuild_racing_an_append_keeps_the_acknowledged_message(tenant, conversation_id, published, steps, order, list_cached):
    earlier = earlier_messages(tenant, conversation_id, published)
    if not list_cached:
        drop_list(tenant, conversation_id)
    schedule, looks = observed(tenant, conversation_id, order)

    def client() -> dict[str, Any]:
        return append(tenant, conversation_id, "the racing append")

    done = run(
        steps, schedule, rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id=conversation_id), client=client
    )

    racing = done["client"]
    assert done["rebuild"].installed is ("rebuild" in installs(order, bumping=append_bumps(order, list_cached=list_cached)))
    assert_seen_consistently(looks, acknowledged={**dict.fromkeys(ids(earlier), "start"), racing["id"]: "client.merge"})
    assert_promises_kept(tenant, conversation_id, published, kept=[*earlier, racing])


# --- 2. Two rebuilds ----------------------------------------------------------------------------------


@LIST_CACHED
@pytest.mark.parametrize("order", schedules(rebuild_steps("first"), rebuild_steps("second")))
def test_two_racing_rebuilds_install_only_what_is_current(tenant, conversation_id, published, steps, order, list_cached):
    earlier = earlier_messages(tenant, conversation_id, published)
    if not list_cached:
        drop_list(tenant, conversation_id)
    schedule, looks = observed(tenant, conversation_id, order)

    def rebuild() -> services.RebuildResult:
        return services.cache_rebuild(tenant=tenant, conversation_id=conversation_id)

    done = run(steps, schedule, first=rebuild, second=rebuild)

    installed = installs(order)
    assert {actor for actor in ("first", "second") if done[actor].installed} == installed
    assert ids(done["first"].messages) == ids(done["second"].messages) == ids(earlier)
    assert cached_list(tenant, conversation_id) == [header(True), *rows(tenant, conversation_id), earlier[-1]]
    assert_seen_consistently(looks, acknowledged=dict.fromkeys(ids(earlier), "start"))
    assert_promises_kept(tenant, conversation_id, published, kept=earlier)


# --- 3. A rebuild racing TTL expiry -------------------------------------------------------------------


def expire(tenant: Any, conversation_id: str, what: str) -> None:
    """What Redis does when a key's TTL runs out: the key is gone, and nothing else changes (no
    version bump, no script runs)."""
    client = cache.client()
    if what == "list":
        client.delete(cache.key(tenant.slug, conversation_id, "messages"))
    else:
        keys = list(client.scan_iter(match=cache.message_key(tenant.slug, conversation_id, "*")))
        assert keys, "no message key to expire"
        client.delete(*keys)


EXPIRIES = [["expiry.list"], ["expiry.keys"], ["expiry.list", "expiry.keys"], ["expiry.keys", "expiry.list"]]


@pytest.mark.parametrize("order", [param for expiry in EXPIRIES for param in schedules(REBUILD, expiry)])
def test_a_rebuild_racing_ttl_expiry_loses_nothing(tenant, conversation_id, published, steps, order):
    earlier = earlier_messages(tenant, conversation_id, published)
    schedule, looks = observed(tenant, conversation_id, order)

    def expiry() -> None:
        for label in order:
            actor, what = label.split(".")
            if actor == "expiry":
                steps.at(what)
                expire(tenant, conversation_id, what)

    done = run(
        steps, schedule, rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id=conversation_id), expiry=expiry
    )

    assert done["rebuild"].installed  # an expiry changes no version: nothing newer was missed
    assert ids(done["rebuild"].messages) == ids(earlier)
    assert_seen_consistently(looks, acknowledged=dict.fromkeys(ids(earlier), "start"))
    assert_promises_kept(tenant, conversation_id, published, kept=earlier)


def test_a_resend_of_a_pending_message_whose_key_expired_gets_the_stored_message_back(tenant, conversation_id, published):
    earlier = earlier_messages(tenant, conversation_id, published)
    pending = earlier[-1]
    expire(tenant, conversation_id, "keys")

    again = services.message_append(
        tenant=tenant,
        conversation_id=conversation_id,
        messages=[{"id": pending["id"], "role": pending["role"], "content": pending["content"]}],
    )

    assert not again.created
    assert again.messages == [pending]
    assert_promises_kept(tenant, conversation_id, published, kept=earlier)


# --- 4. A persist retried while a rebuild runs --------------------------------------------------------

WORKER_KILLED = ["worker.commit", "worker.redeliver", "worker.settle"]  # died between commit and settle
WORKER_REDELIVERED = ["worker.commit", "worker.settle", "worker.redeliver"]  # finished, delivered again


@LIST_CACHED
@pytest.mark.parametrize(
    ("worker_steps", "order"),
    [
        pytest.param(worker_steps, param.values[0], id=f"{name}:{param.id}")
        for name, worker_steps in (("killed", WORKER_KILLED), ("redelivered", WORKER_REDELIVERED))
        for param in schedules(REBUILD, worker_steps)
    ],
)
def test_a_persist_run_twice_while_a_rebuild_runs_keeps_one_copy_in_order(
    tenant, conversation_id, published, steps, worker_steps, order, list_cached
):
    earlier = earlier_messages(tenant, conversation_id, published)
    if not list_cached:
        drop_list(tenant, conversation_id)
    (payload,) = [payload for payload in published if payload["messages"][0]["id"] == earlier[-1]["id"]]
    schedule, looks = observed(tenant, conversation_id, order)
    steps.kills = 1 if worker_steps == WORKER_KILLED else 0

    def worker() -> None:
        steps.at("commit")
        try:
            services.messages_persist(payload=payload)
        except WorkerKilled:
            pass  # unacknowledged: the broker delivers the task again
        steps.at("redeliver")
        services.messages_persist(payload=payload)

    done = run(
        steps, schedule, rebuild=lambda: services.cache_rebuild(tenant=tenant, conversation_id=conversation_id), worker=worker
    )

    # Settling a message the rebuild saw pending changes nothing it could miss; settling it again
    # (the redelivery found nothing pending) bumps the version, and a rebuild across it stands down.
    bumping = {"worker.redeliver"} if worker_steps == WORKER_REDELIVERED else set()
    assert done["rebuild"].installed is ("rebuild" in installs(order, bumping=bumping))
    assert rows(tenant, conversation_id) == earlier  # one row each, whatever ran twice
    assert_seen_consistently(looks, acknowledged=dict.fromkeys(ids(earlier), "start"))
    assert_promises_kept(tenant, conversation_id, published, kept=earlier)


# --- 5. An erase racing an append, and the worker persisting it ----------------------------------------


@pytest.mark.parametrize("order", schedules(ERASE, APPEND))
def test_an_erase_racing_an_append_erases_everything_acknowledged_before_it(tenant, conversation_id, published, steps, order):
    earlier = earlier_messages(tenant, conversation_id, published)
    schedule, looks = observed(tenant, conversation_id, order)

    def client() -> dict[str, Any]:
        return append(tenant, conversation_id, "the racing append")

    done = run(
        steps,
        schedule,
        erase=lambda: services.conversation_erase(tenant=tenant, conversation_id=conversation_id),
        client=client,
    )

    # The append lock orders the two: whichever reserved first ran all its steps first.
    ran = schedule.order
    racing = done["client"]
    appended_first = ran.index("client.reserve") < ran.index("erase.reserve")
    assert ran[:3] == (APPEND if appended_first else ERASE), ran
    erased = [*earlier, racing] if appended_first else earlier
    assert done["erase"].messages == 1  # the rows; the pending writes are dropped by the worker
    acknowledged = {**dict.fromkeys(ids(earlier), "start"), racing["id"]: "client.merge"}
    assert_seen_consistently(looks, acknowledged=acknowledged, erased=ids(erased))
    assert_promises_kept(tenant, conversation_id, published, kept=[] if appended_first else [racing], erased=erased)


@pytest.mark.parametrize(
    "order",
    [param for param in schedules(ERASE, ["worker.commit", "worker.settle"])],
)
def test_an_erase_racing_the_worker_persisting_an_append_leaves_nothing_of_it(tenant, conversation_id, published, steps, order):
    earlier = earlier_messages(tenant, conversation_id, published)
    (payload,) = [payload for payload in published if payload["messages"][0]["id"] == earlier[-1]["id"]]
    schedule, looks = observed(tenant, conversation_id, order)

    def worker() -> int:
        steps.at("commit")
        return services.messages_persist(payload=payload)

    run(
        steps,
        schedule,
        erase=lambda: services.conversation_erase(tenant=tenant, conversation_id=conversation_id),
        worker=worker,
    )

    assert_seen_consistently(looks, acknowledged=dict.fromkeys(ids(earlier), "start"), erased=ids(earlier))
    assert_promises_kept(tenant, conversation_id, published, kept=[], erased=earlier)


def test_a_late_settle_never_shows_an_erased_message_in_the_conversation_started_again(tenant, conversation_id, published, steps):
    earlier = earlier_messages(tenant, conversation_id, published)
    (payload,) = [payload for payload in published if payload["messages"][0]["id"] == earlier[-1]["id"]]
    order = ["worker.commit", *ERASE, *APPEND, "worker.settle"]
    schedule, looks = observed(tenant, conversation_id, order)

    def worker() -> int:
        steps.at("commit")
        return services.messages_persist(payload=payload)

    def client() -> dict[str, Any]:
        return append(tenant, conversation_id, "a new conversation under the same id")

    done = run(
        steps,
        schedule,
        erase=lambda: services.conversation_erase(tenant=tenant, conversation_id=conversation_id),
        worker=worker,
        client=client,
    )

    assert ids(window(tenant, conversation_id).messages) == [done["client"]["id"]]
    assert_seen_consistently(looks, acknowledged={done["client"]["id"]: "client.merge"}, erased=ids(earlier))
    assert_promises_kept(tenant, conversation_id, published, kept=[done["client"]], erased=earlier)

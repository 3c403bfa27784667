"""The service on a real Redis Cluster (three primaries with a replica each, ``torture.redis_cluster``).

1. Every Lua script and every multi-key path (appends, resends, windows, rebuilds, settles, the
   memory document, contexts, erases, the auth cache and the throttle, chat runs, the ledger, the
   admin's and search's pipelines) runs without a CROSSSLOT, MOVED or any other Redis error.
2. A failover that rolls back: the primary of a conversation's slot dies while its replica lags, the
   replica takes over holding only a prefix of its writes. Every message acknowledged before is still
   in the window, a resend of its id gets the seq it was acknowledged with, and once a worker drained
   the queue every acknowledged message is stored once, with that seq, and the window is the rows.
"""

import os
import random
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.conf import settings
from django.test import override_settings
from redis.cluster import RedisCluster

from conversations import cache
from conversations.models import Conversation, Message
from conversations.services import conversation_erase
from core import metrics
from core.redis_client import client
from search.coverage import conversation_coverage
from tests.conftest import client_for, run_queued_tasks, wait_for_rows
from tests.faults import CeleryWorker, wait_until
from torture.redis_cluster import PrivateRedisCluster

pytestmark = pytest.mark.skipif(
    not (shutil.which("redis-server") and shutil.which("redis-cli")),
    reason="needs redis-server and redis-cli to start a private Redis Cluster",
)


@pytest.fixture(scope="module")
def redis_cluster() -> Iterator[PrivateRedisCluster]:
    cluster = PrivateRedisCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def on_cluster(redis_cluster: PrivateRedisCluster) -> Iterator[PrivateRedisCluster]:
    """The service's Redis is the private cluster, empty, its ledger whole, every node up."""
    redis_cluster.heal()
    options = {**settings.CACHES["default"]["OPTIONS"], "CLIENT_CLASS": "core.redis_client.ClusterClient"}
    caches = {"default": {**settings.CACHES["default"], "LOCATION": redis_cluster.url, "OPTIONS": options}}
    with override_settings(
        CACHES=caches,
        MEMORY_REDIS_CLUSTER=True,
        MEMORY_REDIS_HASH_TAGS=True,
        MEMORY_REDIS_WAIT_REPLICAS=1,
        MEMORY_REDIS_WAIT_TIMEOUT=250,
    ):
        connection = client()
        assert isinstance(connection, RedisCluster)
        connection.flushdb(target_nodes=RedisCluster.PRIMARIES)
        connection.hset(cache.LEDGER_KEY, mapping={"since": 1, "whole_at": 1})
        yield redis_cluster


@pytest.fixture
def redis_errors(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every error a command through the cluster client met (a CROSSSLOT, a MOVED it could not follow)."""
    errors: list[str] = []
    original = RedisCluster._execute_command

    def recorded(self: RedisCluster, target_node: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, target_node, *args, **kwargs)
        except redis.exceptions.NoScriptError:
            raise  # a script run for the first time on a node: loaded, then run again
        except redis.RedisError as error:
            errors.append(f"{args[0]}: {error!r}")
            raise

    monkeypatch.setattr(RedisCluster, "_execute_command", recorded)
    return errors


def uid(name: str) -> str:
    """A message id (ids are UUIDs) named in the test."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, name))


def cache_errors() -> float:
    return sum(
        sample.value for family in metrics.cache_errors.collect() for sample in family.samples if sample.name.endswith("_total")
    )


def append(api: Any, conversation_id: str, messages: list[dict]) -> Any:
    return api.post(f"/api/v1/conversations/{conversation_id}/messages/", {"messages": messages}, format="json")


def window(api: Any, conversation_id: str, limit: int = 100) -> list[dict]:
    answer = api.get(f"/api/v1/conversations/{conversation_id}/messages/", {"limit": limit})
    assert answer.status_code == 200, answer.content
    return answer.json()["messages"]


# --- 1. Every script and path -------------------------------------------------------------------


def test_every_script_and_multi_key_path_runs_on_a_cluster_without_a_redis_error(
    tenant, on_cluster, redis_errors, no_worker, settings
):
    errors_before = cache_errors()
    api = client_for(tenant)
    settings.MEMORY_AUTH_FAILURE_LIMIT = 1000
    # Appends (RESERVE, MERGE, RELEASE), a resend, the window, a rebuild (WINDOW, INSTALL), settles.
    first = append(
        api,
        "c-1",
        [{"id": uid("a-1"), "role": "user", "content": "one"}, {"id": uid("a-2"), "role": "assistant", "content": "two"}],
    )
    assert first.status_code == 201, first.content
    assert append(api, "c-1", [{"id": uid("a-1"), "role": "user", "content": "one"}]).status_code == 200
    assert append(api, "c-2", [{"role": "user", "content": "elsewhere"}]).status_code == 201
    # The conversation's user, claimed by a write naming one (USER_RECORD), then checked by the next.
    owned = {"messages": [{"role": "user", "content": "mine"}], "user_id": "u-1"}
    assert api.post("/api/v1/conversations/c-3/messages/", owned, format="json").status_code == 201
    assert api.post("/api/v1/conversations/c-3/messages/", {**owned, "user_id": "u-2"}, format="json").status_code == 409
    assert [m["id"] for m in window(api, "c-1")] == [uid("a-1"), uid("a-2")]
    cache.invalidate(tenant_slug=tenant.slug, conversation_id="c-1")
    assert [m["id"] for m in window(api, "c-1")] == [uid("a-1"), uid("a-2")]  # rebuilt from the pending writes
    assert run_queued_tasks() >= 1  # persist, then settle: one pipeline over several conversations
    cache.invalidate(tenant_slug=tenant.slug, conversation_id="c-1")
    assert [m["id"] for m in window(api, "c-1")] == [uid("a-1"), uid("a-2")]  # rebuilt from the rows
    assert api.get(f"/api/v1/conversations/c-1/messages/{uid('a-2')}/").status_code == 200
    # The memory document (RESERVE of a revision, SET_MEMORY), a context (CONTEXT_GET, CONTEXT_SET).
    assert api.put("/api/v1/conversations/c-1/memory/", {"metadata": {"plan": "x"}}, format="json").status_code in (200, 201)
    assert api.get("/api/v1/conversations/c-1/memory/").status_code == 200
    for _ in range(2):
        context = api.post("/api/v1/conversations/c-1/context/", {"query": "one", "max_tokens": 500}, format="json")
        assert context.status_code == 200, context.content
    # The admin's and search's pipelines across conversations.
    states = cache.states(conversations=[(tenant.slug, "c-1"), (tenant.slug, "c-2")])
    assert states[(tenant.slug, "c-1")].cached
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="c-1")
    assert conversation_coverage(tenant=tenant, conversation=conversation).pending_persist == 0
    # Snapshot, pending, remove.
    assert cache.snapshot(tenant_slug=tenant.slug, conversation_id="c-1").pending == []
    assert cache.pending(tenant_slug=tenant.slug, conversation_id="c-1") == []
    stored = cache.get_messages_by_id(tenant_slug=tenant.slug, conversation_id="c-1", message_ids=[uid("a-1")])[uid("a-1")]
    cache.remove(tenant_slug=tenant.slug, conversation_id="c-1", message=stored)
    # The auth cache and the throttle: a known key is counted with its record read (two slots on a
    # cluster), a wrong key against its address, then checked.
    for _ in range(3):
        assert api.get("/api/v1/conversations/c-1/messages/").status_code == 200
    wrong = client_for(tenant)
    wrong.credentials(HTTP_AUTHORIZATION="Api-Key nope.nope")
    assert wrong.get("/api/v1/conversations/").status_code == 401
    assert wrong.get("/api/v1/conversations/").status_code == 401
    # Chat runs: the conversation's lock (RUN_LOCK, RUN_EXTEND, RELEASE) and the tenant's runs (RUN_ADMIT, RUN_PROLONG).
    assert cache.run_lock(tenant_slug=tenant.slug, conversation_id="c-1", token="t", ttl_ms=5000) is None
    assert cache.run_extend(tenant_slug=tenant.slug, conversation_id="c-1", token="t", ttl_ms=5000)
    cache.run_unlock(tenant_slug=tenant.slug, conversation_id="c-1", token="t")
    assert cache.runs_admit(tenant_slug=tenant.slug, tenant_id=tenant.pk, token="t", limit=2, ttl_ms=5000) == (True, 1)
    cache.runs_prolong(tenant_slug=tenant.slug, tenant_id=tenant.pk, token="t", ttl_ms=5000)
    cache.runs_leave(tenant_slug=tenant.slug, tenant_id=tenant.pk, token="t")
    # The ledger (LEDGER, LEDGER_MARK, LEDGER_DISTURB, LEDGER_ROUND_VOID) on its own slot.
    status = cache.ledger_status()
    assert cache.ledger_mark(since=status.since, event="round_at") > 0
    assert not cache.ledger_disturb()  # whole: nothing to void
    assert not cache.ledger_round_void(since=status.since, barrier=1)
    cache.ledger_whole(tenant_slug=tenant.slug, conversation_id="c-2")
    # Clearing a conversation's messages (SCAN of one slot, CLEAR_MESSAGES), then erasing it (SCAN, UNLINK, its floor).
    conversation_erase(tenant=tenant, conversation_id="c-2", messages_only=True)
    assert api.delete("/api/v1/conversations/c-1/").status_code in (200, 204)
    assert not client().exists(cache.key(tenant.slug, "c-1", "messages"), cache.key(tenant.slug, "c-1", "state"))

    assert redis_errors == []
    assert cache_errors() == errors_before
    connection = client()
    for scripts in (cache._scripts, __import__("tenants.throttling").throttling._scripts):
        for name, source in scripts._sources.items():
            if name == "auth_record_counted":
                continue  # one script over two slots: not run on a cluster (tenants.throttling)
            sha = connection.register_script(source).sha
            loaded = [connection.get_redis_connection(node).script_exists(sha)[0] for node in connection.get_primaries()]
            assert any(loaded), f"the script {name} never ran"


# --- 2. A failover that loses the primary's last writes -----------------------------------------


def test_a_failover_behind_a_lagging_replica_keeps_every_acknowledged_append(
    tenant, on_cluster, redis_errors, no_worker, worker_env
):
    api = client_for(tenant)
    acknowledged: dict[str, int] = {}  # id -> the seq it was acknowledged with
    order: list[str] = []  # ids in the order their first acknowledgement came

    def send(*ids: str) -> list[Any]:
        answers = []
        for message_id in ids:
            answer = append(api, "fo", [{"id": uid(message_id), "role": "user", "content": f"content {message_id}"}])
            answers.append(answer)
            if answer.status_code in (200, 201):
                seq = answer.json()["messages"][0]["seq"]
                assert acknowledged.setdefault(message_id, seq) == seq, f"{message_id} acknowledged with two seqs"
                if message_id not in order:
                    order.append(message_id)
            else:
                assert answer.status_code == 503, answer.content
        return answers

    send("m-0", "m-1", "m-2")
    assert order == ["m-0", "m-1", "m-2"]
    primary = on_cluster.primary_of(cache.key(tenant.slug, "fo", "state"))
    replica = on_cluster.lag_replica(primary)
    during = send("m-3", "m-4")
    on_cluster.kill_primary_behind(primary, replica)

    # Read-your-writes: whatever was acknowledged before the failover is in the window now.
    assert [m["id"] for m in window(api, "fo")] == [uid(name) for name in order]
    # Resends (of the acknowledged and of the refused) get the seq each was acknowledged with.
    send("m-3", "m-4", "m-0", "m-5", "m-6")
    assert [m["id"] for m in window(api, "fo")] == [uid(name) for name in order]

    worker = CeleryWorker(env={**worker_env, "REDIS_URL": on_cluster.url, "MEMORY_REDIS_CLUSTER": "true"}, name="redis-cluster")
    worker.start()
    try:
        wait_for_rows(Message, tenant, len(acknowledged))
        run_queued_tasks()  # nothing is left; a worker that drained it all leaves nothing to run
    finally:
        worker.stop()
    rows = list(Message.objects.for_tenant(tenant).order_by("seq").values_list("message_id", "seq"))
    expected = {uid(name): seq for name, seq in acknowledged.items()}
    assert sorted(str(message_id) for message_id, _ in rows) == sorted(expected), "lost or duplicated"
    assert {str(message_id): seq for message_id, seq in rows} == expected, "stored with another seq"
    assert [str(message_id) for message_id, _ in rows] == [uid(name) for name in order], "seqs out of acknowledgement order"
    assert [(m["id"], m["seq"]) for m in window(api, "fo")] == [(str(i), s) for i, s in rows]
    assert all(answer.status_code in (201, 503) for answer in during)
    assert redis_errors == [] or all("MOVED" in e or "Connection" in e or "Timeout" in e for e in redis_errors)


def test_a_503_replica_unavailable_writes_nothing_and_its_resend_is_a_new_write(tenant, on_cluster, no_worker):
    """No replica confirms the reservation (its replica stopped): 503 ``replica_unavailable``, which says
    nothing was written, so it must leave nothing behind: once a replica is back, the resend of the same
    ids is a new write (201), not one "already known" from the refused attempt (200), and the window
    holds each message once."""
    api = client_for(tenant)
    ids = [uid("ru-0"), uid("ru-1")]
    messages = [{"id": message_id, "role": "user", "content": f"refused {n}"} for n, message_id in enumerate(ids)]
    assert append(api, "ru", [{"role": "user", "content": "before"}]).status_code == 201
    primary = on_cluster.primary_of(cache.key(tenant.slug, "ru", "state"))
    replica = on_cluster.lag_replica(primary)
    try:
        refused = append(api, "ru", messages)
        assert refused.status_code == 503, refused.content
        assert refused.json()["error"]["code"] == "replica_unavailable", refused.content
        made_up = append(api, "ru", [{"role": "user", "content": "no id"}])
        assert made_up.status_code == 503, made_up.content
    finally:
        os.kill(replica.process.pid, signal.SIGCONT)
    wait_until(lambda: primary.info("replication").get("connected_slaves", 0) >= 1, message="the replica to be back")
    resent = append(api, "ru", messages)
    assert resent.status_code == 201, resent.content  # 200 would say an attempt that answered 503 wrote them
    assert [m["content"] for m in window(api, "ru")] == ["before", "refused 0", "refused 1"]


def test_an_append_through_postgresql_during_a_failover_is_in_the_window_its_replica_serves(tenant, on_cluster, no_worker):
    """The slot's primary dies with the conversation's window cached: the append goes through PostgreSQL,
    and its 201 waits until the promoted replica (which holds the old window) has dropped that window;
    a read after the 201 rebuilds it with the row, it does not serve the replica's stale copy."""
    api = client_for(tenant)
    assert append(api, "fp", [{"role": "user", "content": "cached before"}]).status_code == 201
    assert [m["content"] for m in window(api, "fp")] == ["cached before"]  # the window is cached now
    primary = on_cluster.primary_of(cache.key(tenant.slug, "fp", "state"))
    replica = on_cluster.replica_of(primary)
    wait_until(lambda: replica.info("replication").get("master_link_status") == "up", message="the replica in sync")
    time.sleep(0.2)  # the window's keys replicated
    primary.process.kill()
    primary.process.wait(timeout=10)
    answer = append(api, "fp", [{"role": "user", "content": "through postgresql"}])
    assert answer.status_code == 201, answer.content
    on_cluster._promoted(replica)
    assert [m["content"] for m in window(api, "fp")] == ["cached before", "through postgresql"]


# --- 3. The harness's fault: a primary killed, its replica promoted ------------------------------


def test_a_primary_killed_and_replaced_while_appends_go_on_loses_nothing(tenant, on_cluster, no_worker, worker_env):
    api = client_for(tenant)
    acknowledged: dict[str, int] = {}
    for number in range(6):
        answer = append(api, f"k-{number % 3}", [{"id": uid(f"k{number}"), "role": "user", "content": str(number)}])
        assert answer.status_code == 201, answer.content
        acknowledged[uid(f"k{number}")] = answer.json()["messages"][0]["seq"]
    on_cluster.kill_primary(random.Random(7))
    for number in range(6, 12):
        message = [{"id": uid(f"k{number}"), "role": "user", "content": str(number)}]
        for _ in range(20):  # a 503 while the cluster settles: resent, as a client does
            answer = append(api, f"k-{number % 3}", message)
            if answer.status_code in (200, 201):
                break
        assert answer.status_code in (200, 201), answer.content
        acknowledged[uid(f"k{number}")] = answer.json()["messages"][0]["seq"]
    worker = CeleryWorker(env={**worker_env, "REDIS_URL": on_cluster.url, "MEMORY_REDIS_CLUSTER": "true"}, name="kill-primary")
    worker.start()
    try:
        wait_for_rows(Message, tenant, len(acknowledged))
    finally:
        worker.stop()
    rows = dict(Message.objects.for_tenant(tenant).values_list("message_id", "seq"))
    assert {str(message_id): seq for message_id, seq in rows.items()} == acknowledged
    for number in range(3):
        stored = list(
            Message.objects.for_tenant(tenant)
            .filter(conversation__conversation_id=f"k-{number}")
            .order_by("seq")
            .values_list("message_id", "seq")
        )
        assert [(m["id"], m["seq"]) for m in window(api, f"k-{number}")] == [(str(i), s) for i, s in stored]

"""The write path on a three-node RabbitMQ cluster with quorum queues, a node SIGKILLed during a
load of appends: the persist queue's leader, or the node the workers consume from.

Every acknowledged write is stored exactly once after the drain, a write refused with
``broker_unavailable`` is never stored, and the workers consume again from a survivor within
``RESUME_BOUND`` seconds of the kill. The appends run in this process (the service's API and its
publish path) against the cluster's failover URL; the workers are real ``celery worker`` processes
of the write path's thread pool (Procfile)."""

import random
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import kombu.pools
import pytest
from django.conf import settings

from conversations.models import Message
from memoryproject.celery import app as celery_app
from tests.conftest import client_for
from tests.faults import CeleryWorker, wait_until
from torture.rabbit_cluster import PrivateRabbitCluster

pytestmark = [
    pytest.mark.worker,
    pytest.mark.skipif(not PrivateRabbitCluster.available(), reason="needs the machine's rabbitmq-server to start private nodes"),
]

# Seconds from the kill until a write acknowledged after it is stored, every worker consuming again
# (measured 0.0 to 11.3 s on two shared cores: a leader election, the clients' reconnections).
RESUME_BOUND = 20.0
WORKERS = 2
APPENDERS = 3


def reset_broker_pool() -> None:
    kombu.pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


@pytest.fixture(scope="module")
def rabbit_cluster() -> Iterator[PrivateRabbitCluster]:
    cluster = PrivateRabbitCluster(queues=(settings.MEMORY_QUEUE, settings.MEMORY_DERIVED_QUEUE))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.close()


@pytest.fixture
def on_the_cluster(
    rabbit_cluster: PrivateRabbitCluster, worker_env: dict[str, str], transactional_db: Any
) -> Iterator[list[CeleryWorker]]:
    """This process publishes to the cluster; two workers consume from it."""
    original = celery_app.conf.broker_url
    celery_app.conf.broker_url = rabbit_cluster.url
    reset_broker_pool()
    env = {**worker_env, **rabbit_cluster.service_env()}
    workers = [CeleryWorker(env=env, name=f"cluster-{n}", pool="threads", concurrency=4) for n in range(WORKERS)]
    try:
        for worker in workers:
            worker.start()
        wait_until(lambda: consumers(rabbit_cluster) >= WORKERS, message="the workers to consume from the cluster")
        yield workers
    finally:
        for worker in workers:
            worker.stop()
        celery_app.conf.broker_url = original
        reset_broker_pool()


def consumers(cluster: PrivateRabbitCluster) -> int:
    depth = cluster.depth(settings.MEMORY_QUEUE)
    return depth[1] if depth is not None else 0


class Appenders:
    """Clients appending messages with their own ids, each answer recorded by id."""

    def __init__(self, tenant: Any) -> None:
        self.tenant = tenant
        self.acknowledged: set[str] = set()
        self.acknowledged_at: list[tuple[float, str]] = []  # (when, id), in order
        self.refused: set[str] = set()  # 503 broker_unavailable: surely not queued
        self.indeterminate: set[str] = set()  # 503 write_indeterminate: queued or not
        self.other: list[tuple[int, str]] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(n,), daemon=True) for n in range(APPENDERS)]

    def _run(self, index: int) -> None:
        from django.db import connection

        api = client_for(self.tenant)
        try:
            while not self._stop.is_set():
                message_id = str(uuid.uuid4())
                answer = api.post(
                    f"/api/v1/conversations/load-{index}/messages/",
                    {"messages": [{"id": message_id, "role": "user", "content": f"{index} {message_id}"}]},
                    format="json",
                )
                code = answer.json().get("error", {}).get("code", "") if answer.status_code >= 400 else ""
                with self._lock:
                    if answer.status_code == 201:
                        self.acknowledged.add(message_id)
                        self.acknowledged_at.append((time.monotonic(), message_id))
                    elif code == "broker_unavailable":
                        self.refused.add(message_id)
                    elif code == "write_indeterminate":
                        self.indeterminate.add(message_id)
                    else:
                        self.other.append((answer.status_code, code))
                time.sleep(0.01)
        finally:
            connection.close()

    def __enter__(self) -> "Appenders":
        for thread in self._threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def watch_resumption(
    cluster: PrivateRabbitCluster, load: "Appenders", killed_at: list[float], done: threading.Event
) -> list[float]:
    """Seconds from the kill until a write acknowledged after it is stored with every worker
    consuming the persist queue again (appended once, from a thread of its own)."""
    resumed: list[float] = []

    def watch() -> None:
        from django.db import connection

        try:
            while not killed_at and not done.is_set():
                time.sleep(0.05)
            while not done.is_set():
                later = [message_id for at, message_id in list(load.acknowledged_at) if at > killed_at[0]]
                if (
                    later
                    and consumers(cluster) >= WORKERS
                    and Message.objects.for_tenant(load.tenant).filter(message_id=later[0]).exists()
                ):
                    resumed.append(time.monotonic() - killed_at[0])
                    return
                time.sleep(0.2)
        finally:
            connection.close()

    threading.Thread(target=watch, daemon=True).start()
    return resumed


def kill_during_load(cluster: PrivateRabbitCluster, load: "Appenders", target: str) -> tuple[str, float]:
    """Kill a node (``target``) while ``load`` appends; answers the fault's line and the seconds
    until a write acknowledged after the kill was stored by a consuming worker."""
    killed_at: list[float] = []
    done = threading.Event()
    resumed = watch_resumption(cluster, load, killed_at, done)
    acknowledged = len(load.acknowledged)
    wait_until(lambda: len(load.acknowledged) >= acknowledged + 30, message="appends to be acknowledged before the kill")
    killed_at.append(time.monotonic())
    line = cluster.kill_node(random.Random(target), target=target)
    after_kill = len(load.acknowledged)
    wait_until(lambda: len(load.acknowledged) >= after_kill + 30, message="appends acknowledged after the node came back")
    wait_until(lambda: bool(resumed), timeout=30, message="a write acknowledged after the kill to be stored")
    done.set()
    return line, resumed[0]


def assert_every_acknowledged_write_stored_once(load: Appenders, tenant: Any) -> None:
    def stored() -> list[str]:
        return [str(message_id) for message_id in Message.objects.for_tenant(tenant).values_list("message_id", flat=True)]

    wait_until(lambda: load.acknowledged <= set(stored()), timeout=90, message="every acknowledged write to be stored")
    time.sleep(2)  # anything still queued (an indeterminate write, a duplicate) has its chance to land
    rows = stored()
    assert len(rows) == len(set(rows)), "a message stored twice"
    assert load.acknowledged <= set(rows), f"{len(load.acknowledged - set(rows))} acknowledged writes lost"
    assert not (load.refused & set(rows)), "a write refused with broker_unavailable was stored"
    assert set(rows) <= load.acknowledged | load.indeterminate, "a message stored that was never sent"
    assert not load.other, f"unexpected answers: {load.other[:5]}"
    seqs = list(Message.objects.for_tenant(tenant).values_list("conversation__conversation_id", "seq"))
    assert len(seqs) == len(set(seqs)), "two messages share a seq"


def test_nodes_killed_during_appends_lose_no_acknowledged_write(rabbit_cluster, on_the_cluster, tenant):
    # The node the workers (and this process) are connected to, then the persist queue's leader
    # wherever the first failover put it: one after the other, under the same load.
    figures = []
    with Appenders(tenant) as load:
        for target in ("consumers", "leader"):
            victim = rabbit_cluster.consumers_node() if target == "consumers" else rabbit_cluster.leader_node()
            assert victim is not None, f"no {target} node to kill"
            line, resumed = kill_during_load(rabbit_cluster, load, target)
            assert resumed <= RESUME_BOUND, f"{line}; a write acknowledged after the kill was stored {resumed:.1f} s after it"
            figures.append(f"{line}; a write acknowledged after the kill stored {resumed:.1f} s after it")

    assert_every_acknowledged_write_stored_once(load, tenant)
    print(  # noqa: T201 - the figures of the run, shown with -s
        "\n".join(figures),
        f"\n{len(load.acknowledged)} acknowledged, {len(load.refused)} refused, {len(load.indeterminate)} indeterminate",
    )

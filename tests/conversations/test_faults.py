"""The write path's promises under real faults: a broker that refuses or is
down, Redis flushed or restarted, PostgreSQL unreachable, a worker killed mid-task, a task that
keeps failing. Every fault acts on a process or proxy the test starts itself."""

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import amqp
import kombu.pools
import psycopg
import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import OperationalError, connection
from django.test import override_settings
from django_redis import get_redis_connection

from conversations import cache, services, tasks
from conversations.models import Conversation, DeadLetter, LedgerEpoch, Message, Tombstone, tombstone_key
from conversations.services import ledger
from conversations.services import messages as message_shape
from conversations.services import persist as persisting
from conversations.services import publish as publishing
from memoryproject.celery import app as celery_app
from tests.conftest import run_queued_tasks, wait_for_rows
from tests.faults import CeleryWorker, PrivateRedis, TcpProxy, children, wait_until


def append(api: Any, conversation_id: str, content: str, **extra: Any) -> Any:
    return api.post(
        f"/api/v1/conversations/{conversation_id}/messages/", {"role": "user", "content": content, **extra}, format="json"
    )


def window(api: Any, conversation_id: str, **params: Any) -> list[dict]:
    answer = api.get(f"/api/v1/conversations/{conversation_id}/messages/", params)
    assert answer.status_code == 200, answer.content
    return answer.json()["messages"]


def cache_keys(tenant_slug: str, conversation_id: str) -> list[bytes]:
    return list(get_redis_connection("default").scan_iter(match=f"{tenant_slug}:{conversation_id}:*"))


def reset_broker_pool() -> None:
    """Forget pooled broker connections so the next publish connects to the configured URL."""
    kombu.pools.reset()
    celery_app._pool = None
    celery_app.amqp._producer_pool = None


# --- 1. A 201 means durable -------------------------------------------------------------------


def test_a_201_is_a_persistent_message_on_a_durable_queue_before_any_worker_runs(api, tenant, no_worker):
    answer = append(api, "durable", "remember me")
    assert answer.status_code == 201
    with celery_app.connection_for_write() as broker:
        channel = broker.default_channel
        message = channel.basic_get(settings.MEMORY_QUEUE, no_ack=False)
        assert message is not None, "the persist task is not in the queue"
        assert message.properties["delivery_mode"] == 2
        assert answer.json()["messages"][0]["id"] in str(message.body)
        channel.basic_reject(message.delivery_tag, requeue=True)
    with celery_app.connection_for_write() as broker, pytest.raises(amqp.exceptions.PreconditionFailed):
        broker.default_channel.queue_declare(settings.MEMORY_QUEUE, durable=False)


def test_the_embedded_runs_redis_transport_takes_a_persist_task(settings, transactional_db):
    # `make run` sends its tasks through Redis (kombu's Redis transport): no publisher confirms, and
    # no confirm timeout among its transport options.
    import redis
    from celery import Celery

    from memoryproject.settings.base import durable_queues

    broker_url = settings.REDIS_URL.rsplit("/", 1)[0] + "/15"
    embedded_like = Celery("embedded-like", broker=broker_url, set_as_current=False)
    embedded_like.conf.task_queues = durable_queues(settings.MEMORY_QUEUE)
    embedded_like.conf.broker_transport_options = {"visibility_timeout": 3600}

    settings.CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
    queue = redis.Redis.from_url(broker_url)
    queue.delete(settings.MEMORY_QUEUE)
    try:
        embedded_like.set_current()  # the tasks are published by the current app, by name
        publishing._send_task(publishing.MESSAGES_PERSIST, [{"conversation_id": "embedded"}])
        assert queue.llen(settings.MEMORY_QUEUE) == 1
    finally:
        celery_app.set_current()
        queue.delete(settings.MEMORY_QUEUE)
        embedded_like.close()


def test_a_broker_that_refuses_the_publish_gets_503_and_nothing_is_stored(api, tenant, refusing_queue, transactional_db):
    with override_settings(MEMORY_QUEUE=refusing_queue):
        answer = append(api, "refused", "this must not be kept")
    assert answer.status_code == 503
    assert answer["Retry-After"]
    assert answer.json()["error"]["code"] == "broker_unavailable"
    window_keys = [key for key in cache_keys("acme", "refused") if not key.endswith((b":state", b":lock"))]
    assert window_keys == []
    assert not get_redis_connection("default").exists("acme:refused:lock")
    assert not Message.objects.for_tenant(tenant).exists()


def test_a_broker_that_is_down_gets_503_with_retry_after(api, tenant, transactional_db):
    original = celery_app.conf.broker_url
    celery_app.conf.broker_url = "amqp://guest:guest@127.0.0.1:1//"
    reset_broker_pool()
    try:
        answer = append(api, "no-broker", "nobody hears this")
    finally:
        celery_app.conf.broker_url = original
        reset_broker_pool()
    assert answer.status_code == 503
    assert int(answer["Retry-After"]) > 0
    assert [key for key in cache_keys("acme", "no-broker") if key.endswith((b":messages", b":pending"))] == []
    assert append(api, "no-broker", "now it works").status_code == 201


def test_a_pooled_broker_connection_the_broker_dropped_is_reconnected_and_the_append_is_durable(api, tenant, no_worker):
    assert append(api, "dropped", "before").status_code == 201  # a producer now waits in the pool
    with celery_app.producer_pool.acquire(block=True) as producer:
        producer.connection.connect()
        producer.connection.connection.transport.sock.shutdown(socket.SHUT_RDWR)  # as a broker restart leaves it

    answer = append(api, "dropped", "after the drop")

    assert answer.status_code == 201, answer.content
    with celery_app.connection_for_write() as broker:
        channel = broker.default_channel
        bodies = []
        while (message := channel.basic_get(settings.MEMORY_QUEUE, no_ack=False)) is not None:
            bodies.append(str(message.body))
        channel.basic_recover(requeue=True)
    assert any(answer.json()["messages"][0]["id"] in body for body in bodies)


# --- 3. Ordered, across a Redis restart ------------------------------------------------------


@pytest.fixture
def private_redis(settings: Any) -> Iterator[PrivateRedis]:
    redis = PrivateRedis()
    redis.start()
    caches = {"default": {**settings.CACHES["default"], "LOCATION": redis.url}}
    with override_settings(CACHES=caches):
        yield redis
    redis.close()


def test_seqs_keep_increasing_across_a_redis_restart_and_match_the_database(
    api, tenant, private_redis, worker_env, transactional_db
):
    seqs = [append(api, "restart", f"before {n}").json()["messages"][0]["seq"] for n in range(3)]
    private_redis.restart_empty()
    seqs += [append(api, "restart", f"after {n}").json()["messages"][0]["seq"] for n in range(3)]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 6
    worker = CeleryWorker(env={**worker_env, "REDIS_URL": private_redis.url}, name="private-redis")
    worker.start()
    try:
        wait_for_rows(Message, tenant, 6)
    finally:
        worker.stop()
    stored = list(Message.objects.for_tenant(tenant).order_by("seq").values_list("seq", "content"))
    assert [seq for seq, _ in stored] == seqs
    assert [content for _, content in stored] == [f"before {n}" for n in range(3)] + [f"after {n}" for n in range(3)]


def test_after_redis_forgets_a_conversation_new_seqs_and_revisions_stay_above_the_database(api, tenant, no_worker):
    # Seqs handed out while Redis was down come from a web host's clock, which may run ahead of
    # Redis's; an erased conversation's tombstone and a memory revision come from the same clock.
    ahead = message_shape._now_microseconds() + 60_000_000
    append(api, "c-seq", "first")
    append(api, "c-erased", "first")
    api.put("/api/v1/conversations/c-memory/memory/", {"messages": [{"content": "first"}]}, format="json")
    run_queued_tasks()
    Conversation.objects.for_tenant(tenant).filter(conversation_id="c-seq").update(last_seq=ahead)
    Conversation.objects.for_tenant(tenant).filter(conversation_id="c-memory").update(memory_revision=ahead)
    assert api.delete("/api/v1/conversations/c-erased/").status_code in (200, 204)
    Tombstone.objects.for_tenant(tenant).filter(conversation_key=tombstone_key("c-erased")).update(erased_before_seq=ahead)
    get_redis_connection("default").flushdb()

    after = append(api, "c-seq", "after").json()["messages"][0]
    revived = append(api, "c-erased", "after erase").json()["messages"][0]
    api.put("/api/v1/conversations/c-memory/memory/", {"messages": [{"content": "second"}]}, format="json")
    run_queued_tasks()

    assert after["seq"] > ahead
    assert [m["content"] for m in window(api, "c-seq")] == ["first", "after"]
    assert revived["seq"] >= ahead
    assert Message.objects.for_tenant(tenant).filter(conversation__conversation_id="c-erased").get().content == "after erase"
    assert Conversation.objects.for_tenant(tenant).get(conversation_id="c-memory").memory["messages"] == [{"content": "second"}]


def test_a_write_survives_redis_being_flushed_before_it_is_persisted(api, tenant, no_worker, worker_env):
    written = append(api, "flushed", "keep me").json()["messages"][0]
    get_redis_connection("default").flushdb()
    worker = CeleryWorker(env=worker_env, name="after-flush")
    worker.start()
    try:
        wait_for_rows(Message, tenant, 1)
    finally:
        worker.stop()
    row = Message.objects.for_tenant(tenant).get()
    assert (str(row.message_id), row.seq) == (written["id"], written["seq"])
    assert [m["id"] for m in window(api, "flushed")] == [written["id"]]


# --- 4. Read-your-writes ------------------------------------------------------------------


def test_a_201_message_is_in_the_window_before_any_worker_persisted_it(api, tenant, no_worker):
    ids = [append(api, "ryw", f"turn {n}").json()["messages"][0]["id"] for n in range(5)]
    assert [m["id"] for m in window(api, "ryw")] == ids
    assert not Message.objects.for_tenant(tenant).exists()


# --- 6. Degraded, not down -------------------------------------------------------------------


@pytest.fixture(params=["prefork", "threads"])
def any_pool_worker(request: Any, worker_env: dict[str, str], transactional_db: Any) -> Iterator[CeleryWorker]:
    """The test worker (a prefork pool), or a worker with a thread pool, the one the write queue runs on."""
    if request.param == "prefork":
        yield request.getfixturevalue("worker")
        return
    request.getfixturevalue("no_worker")
    worker = CeleryWorker(env=worker_env, name="threads", pool="threads", concurrency=4)
    worker.start()
    try:
        yield worker
    finally:
        worker.stop()


def waiting_on_a_lock(dsn: str) -> int:
    """How many sessions of the test database wait on a lock (a worker blocked inside its persist task)."""
    with psycopg.connect(dsn, autocommit=True) as probe:
        return probe.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'",
            [connection.settings_dict["NAME"]],
        ).fetchone()[0]


def test_a_worker_killed_mid_task_redelivers_and_makes_exactly_one_row(api, tenant, any_pool_worker):
    worker = any_pool_worker
    assert api.post("/api/v1/conversations/", {"conversation_id": "killed"}, format="json").status_code == 201
    db = connection.settings_dict
    dsn = f"host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} user={db['USER']} dbname={db['NAME']}"
    with psycopg.connect(dsn) as blocker:
        # Hold the conversation row so the worker's persist blocks inside its transaction.
        blocker.execute("SELECT 1 FROM conversation_memories WHERE conversation_id = 'killed' FOR UPDATE")
        written = append(api, "killed", "survive the crash").json()["messages"][0]

        wait_until(lambda: waiting_on_a_lock(dsn) > 0, message="the worker to be inside the persist task")
        worker.kill()
        blocker.rollback()
    log_offset = worker.log_path.stat().st_size
    worker.start()

    def redelivered_task_ran() -> bool:
        with open(worker.log_path) as log:
            log.seek(log_offset)
            return any('"messages_persisted"' in line and '"killed"' in line for line in log)

    # The killed task's statement may still commit in PostgreSQL once the lock is free (its backend
    # outlives the process); the redelivered task must then find that row and add none.
    wait_until(redelivered_task_ran, message="the redelivered persist task to run")
    wait_for_rows(Message, tenant, 1)
    rows = list(Message.objects.for_tenant(tenant).values_list("message_id", "seq"))
    assert [(str(message_id), seq) for message_id, seq in rows] == [(written["id"], written["seq"])]
    conversation = Conversation.objects.for_tenant(tenant).get(conversation_id="killed")
    assert conversation.message_count == 1


@pytest.fixture
def postgres_proxy(worker_env: dict[str, str]) -> Iterator[TcpProxy]:
    """PostgreSQL behind a proxy that can be cut, for this process and for a worker of its own."""
    db = connection.settings_dict
    proxy = TcpProxy(int(db["PORT"] or 5432), db["HOST"] or "127.0.0.1")
    proxy.start()
    original = (db["HOST"], db["PORT"])
    connection.close()
    db["HOST"], db["PORT"] = "127.0.0.1", str(proxy.port)
    try:
        yield proxy
    finally:
        connection.close()
        db["HOST"], db["PORT"] = original  # whatever happened to the proxy, later tests use PostgreSQL itself
        proxy.close()


def test_writes_are_accepted_while_postgres_is_down_and_persisted_on_recovery(
    api, tenant, worker_env, transactional_db, postgres_proxy
):
    proxied = {
        **worker_env,
        "DATABASE_URL": worker_env["DATABASE_URL"].replace(
            f":{connection.settings_dict['NAME']}", f":{connection.settings_dict['NAME']}"
        ),
    }
    db = connection.settings_dict
    proxied["DATABASE_URL"] = f"postgres://{db['USER']}@127.0.0.1:{postgres_proxy.port}/{db['NAME']}"
    worker = CeleryWorker(env=proxied, name="pg-proxy")
    worker.start()
    try:
        first = append(api, "pgdown", "before the outage").json()["messages"][0]
        wait_for_rows(Message, tenant, 1)

        postgres_proxy.cut()
        during = []
        for n in range(3):
            answer = append(api, "pgdown", f"during the outage {n}")
            assert answer.status_code == 201, answer.content
            during.append(answer.json()["messages"][0]["id"])
        assert [m["id"] for m in window(api, "pgdown")] == [first["id"], *during]
        with pytest.raises(OperationalError):
            Message.objects.for_tenant(tenant).count()

        postgres_proxy.restore()
        connection.close()
        wait_for_rows(Message, tenant, 4, timeout=90)
    finally:
        worker.stop()
    stored = list(Message.objects.for_tenant(tenant).order_by("seq").values_list("message_id", flat=True))
    assert [str(message_id) for message_id in stored] == [first["id"], *during]
    assert not DeadLetter.objects.for_tenant(tenant).exists()


def test_writes_acknowledged_during_an_outage_survive_a_queue_that_refuses_publishes_meanwhile(
    api, tenant, worker_env, transactional_db, postgres_proxy
):
    """The persist queue refuses every publish for a while (a reject-publish overflow policy, as a
    full queue or a broker alarm would) while PostgreSQL is unreachable: a worker holding a write
    must keep it, never trade it for a republish the broker refuses."""
    db = connection.settings_dict
    proxied = {**worker_env, "DATABASE_URL": f"postgres://{db['USER']}@127.0.0.1:{postgres_proxy.port}/{db['NAME']}"}
    worker = CeleryWorker(env=proxied, name="pg-refused", pool="threads", concurrency=8)
    worker.start()
    name = f"refuse-{settings.MEMORY_QUEUE}"
    try:
        before = append(api, "refused", "before the outage").json()["messages"][0]["id"]  # the key is cached too
        wait_for_rows(Message, tenant, 1)
        postgres_proxy.cut()
        answers = [append(api, "refused", f"during the outage {n}") for n in range(4)]
        assert [answer.status_code for answer in answers] == [201] * 4, answers[0].content
        during = [answer.json()["messages"][0]["id"] for answer in answers]
        # Every write is in the worker's hands (a policy that lowers the limit discards queued ones).
        wait_until(lambda: services.queue_depth(settings.MEMORY_QUEUE) == 0, message="the worker to hold every write")
        subprocess.run(
            ["rabbitmqctl", "set_policy", "--apply-to", "queues", name, f"^{settings.MEMORY_QUEUE}$",
             '{"max-length":0,"overflow":"reject-publish"}'],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        time.sleep(6)  # the worker tries, waits and tries again meanwhile
        subprocess.run(["rabbitmqctl", "clear_policy", name], check=True, capture_output=True, timeout=60)
        postgres_proxy.restore()
        connection.close()
        wait_for_rows(Message, tenant, 5, timeout=90)
    finally:
        subprocess.run(["rabbitmqctl", "clear_policy", name], capture_output=True, timeout=60)
        worker.stop()
    connection.close()
    rows = Message.objects.for_tenant(tenant).order_by("seq").values_list("message_id", flat=True)
    assert [str(message_id) for message_id in rows] == [before, *during]
    assert not DeadLetter.objects.for_tenant(tenant).exists()


@pytest.fixture
def broker_proxy() -> Iterator[TcpProxy]:
    """The broker behind a proxy that can be cut: a worker of the test's own loses its connections
    as on a broker restart, while this process keeps publishing to the broker itself."""
    broker = urlsplit(settings.CELERY_BROKER_URL)
    proxy = TcpProxy(broker.port or 5672, broker.hostname or "127.0.0.1", idle_timeout=None)
    proxy.start()
    try:
        yield proxy
    finally:
        proxy.close()


def log_since(worker: CeleryWorker, offset: int) -> str:
    with open(worker.log_path) as log:
        log.seek(offset)
        return log.read()


@pytest.mark.worker
def test_a_thread_pool_worker_keeps_consuming_after_a_broker_reconnect_with_tasks_in_hand(
    api, tenant, worker_env, no_worker, broker_proxy
):
    # The write path's worker (README: a thread pool) loses the broker while its tasks are running.
    # Celery then lowers the prefetch count and raises it again as tasks end: a basic.qos round
    # trip on the consumer's connection that ran in the pool thread acknowledging the task, beside
    # the event loop reading that connection. The two readers split frames between them, the loop
    # blocked in a read and sent nothing, not even heartbeats, until the broker dropped the
    # connection minutes later; acknowledged writes waited all that time.
    broker = urlsplit(settings.CELERY_BROKER_URL)
    proxied = urlunsplit(broker._replace(netloc=f"{broker.username}:{broker.password}@127.0.0.1:{broker_proxy.port}"))
    worker = CeleryWorker(env={**worker_env, "CELERY_BROKER_URL": proxied}, name="reconnect", pool="threads", concurrency=4)
    worker.start()
    try:
        held = [f"held-{n}" for n in range(4)]
        for conversation_id in held:
            assert api.post("/api/v1/conversations/", {"conversation_id": conversation_id}, format="json").status_code == 201
        db = connection.settings_dict
        dsn = f"host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} user={db['USER']} dbname={db['NAME']}"
        with psycopg.connect(dsn) as blocker:
            # Hold the conversations' rows: the worker's four threads are all inside a persist task.
            blocker.execute("SELECT 1 FROM conversation_memories WHERE conversation_id = ANY(%s) FOR UPDATE", [held])
            for conversation_id in held:
                assert append(api, conversation_id, "in hand at the cut").status_code == 201

            def all_tasks_in_hand() -> bool:
                with celery_app.connection_for_write() as conn:
                    _, ready, _ = conn.default_channel.queue_declare(settings.MEMORY_QUEUE, passive=True)
                return ready == 0 and waiting_on_a_lock(dsn) > 0

            wait_until(all_tasks_in_hand, message="the worker's threads to hold the four tasks")
            offset = worker.log_path.stat().st_size
            broker_proxy.cut()
            wait_until(lambda: "Connection to broker lost" in log_since(worker, offset), message="the worker to lose the broker")
            broker_proxy.restore()
            wait_until(lambda: "Connected to" in log_since(worker, offset), message="the worker to reconnect")
            blocker.rollback()

        # The broker redelivers the four tasks (their channel is gone); then new writes come in.
        for n in range(6):
            assert append(api, "after-reconnect", f"after {n}").status_code == 201
        wait_for_rows(Message, tenant, 10, timeout=30)
        assert Message.objects.for_tenant(tenant).filter(conversation__conversation_id__in=held).count() == 4
        # Lost once, at the cut: not again for a frame torn between two threads (UnexpectedFrame).
        assert log_since(worker, offset).count("Connection to broker lost") == 1, log_since(worker, offset)
    finally:
        worker.stop()


# Seconds a worker may take to consume again once its broker connection went silent: two missed
# heartbeats (MEMORY_BROKER_HEARTBEAT, 5 s), a check, and a reconnection, on a busy machine.
RECONNECT_BOUND = 15.0


@pytest.mark.worker
def test_a_worker_whose_broker_went_silent_consumes_again_within_seconds(api, tenant, worker_env, no_worker, broker_proxy):
    # A node restarted, or failed over, behind a half-open connection: the broker forgot the
    # worker's connection (its messages went back to the queue) but the worker hears neither a close
    # nor a reset; what it sends is acknowledged by TCP and goes nowhere. Only AMQP heartbeats tell:
    # with Celery's default (120 s, 60 on RabbitMQ) the worker sat idle two minutes and more while
    # acknowledged writes waited in the queue.
    broker = urlsplit(settings.CELERY_BROKER_URL)
    proxied = urlunsplit(broker._replace(netloc=f"{broker.username}:{broker.password}@127.0.0.1:{broker_proxy.port}"))
    worker = CeleryWorker(env={**worker_env, "CELERY_BROKER_URL": proxied}, name="silent", pool="threads", concurrency=4)
    worker.start()
    try:
        before = [append(api, "silent", f"before {n}") for n in range(3)]
        assert [answer.status_code for answer in before] == [201] * 3
        wait_for_rows(Message, tenant, 3)
        offset = worker.log_path.stat().st_size
        broker_proxy.blackhole()
        silenced_at = time.monotonic()
        after = [append(api, "silent", f"after {n}") for n in range(5)]
        assert [answer.status_code for answer in after] == [201] * 5
        try:
            wait_for_rows(Message, tenant, 8, timeout=RECONNECT_BOUND)
        except AssertionError:
            raise AssertionError(
                f"the worker did not consume within {RECONNECT_BOUND:.0f} s of its connection going silent; its log: "
                + log_since(worker, offset)[-2000:]
            ) from None
        resumed = time.monotonic() - silenced_at
        stored = set(Message.objects.for_tenant(tenant).values_list("message_id", flat=True))
        acknowledged = {answer.json()["messages"][0]["id"] for answer in before + after}
        assert {str(message_id) for message_id in stored} == acknowledged
        assert "Connection to broker lost" in log_since(worker, offset), (
            f"consumed again after {resumed:.1f} s without reconnecting"
        )
    finally:
        worker.stop()


# --- 10. The ledger after Redis lost it: a message handed back to the broker voids the drain ------


def ledger_lost_and_drained() -> None:
    """Redis restarted empty, its new ledger's barrier already reached, the slack not yet passed."""
    LedgerEpoch.objects.get_or_create(since=1)
    get_redis_connection("default").flushdb()
    status = cache.ledger_status()
    barrier = cache.ledger_mark(since=status.since, event="barrier_at")
    assert cache.ledger_mark(since=status.since, event="drained_at", barrier=barrier)


def ledger_disturbed() -> bool:
    status = cache.ledger_status()
    return status.disturbed_at is not None and status.drained_at is None


@contextlib.contextmanager
def held_in_the_worker(api: Any, conversation_id: str, content: str) -> Iterator[tuple[Any, Any]]:
    """A write the worker holds inside its persist statement (the conversation row locked
    meanwhile), with the lock's connection: rolled back, the worker goes on."""
    assert api.post("/api/v1/conversations/", {"conversation_id": conversation_id}, format="json").status_code == 201
    db = connection.settings_dict
    dsn = f"host={db['HOST'] or '127.0.0.1'} port={db['PORT'] or 5432} user={db['USER']} dbname={db['NAME']}"
    with psycopg.connect(dsn) as blocker:
        blocker.execute("SELECT 1 FROM conversation_memories WHERE conversation_id = %s FOR UPDATE", [conversation_id])
        answer = append(api, conversation_id, content)
        assert answer.status_code == 201
        wait_until(lambda: waiting_on_a_lock(dsn) > 0, message="the worker to be inside the persist task")
        yield answer, blocker


def test_a_worker_says_which_writes_it_holds_and_the_ledger_tells_its_own_from_lost_ones(api, tenant, worker):
    with held_in_the_worker(api, "held", "held inside the worker's statement") as (answer, blocker):
        inquiry = services.worker_inquiry()
        assert (tenant.slug, "held", [answer.json()["messages"][0]["id"]]) in inquiry.held
        assert ledger._held_unknown(inquiry) is False  # acknowledged under this ledger: Redis holds it
        get_redis_connection("default").flushdb()  # Redis lost it while the worker holds it
        assert ledger._held_unknown(services.worker_inquiry()) is True  # a round waits the whole slack
        blocker.rollback()
    wait_for_rows(Message, tenant, 1)


def test_a_pool_process_lost_mid_task_disturbs_a_ledger_redis_lost(api, tenant, worker):
    with held_in_the_worker(api, "lost", "in the pool process that dies") as (_, blocker):
        ledger_lost_and_drained()
        for pid in children(worker.process.pid):  # the pool process only: the worker lives on
            os.kill(pid, signal.SIGKILL)
        wait_until(ledger_disturbed, message="the worker to report the message it handed back")
        blocker.rollback()
    wait_for_rows(Message, tenant, 1)


@pytest.mark.worker
def test_a_worker_that_reconnects_to_the_broker_disturbs_a_ledger_redis_lost(worker_env, no_worker, broker_proxy):
    broker = urlsplit(settings.CELERY_BROKER_URL)
    proxied = urlunsplit(broker._replace(netloc=f"{broker.username}:{broker.password}@127.0.0.1:{broker_proxy.port}"))
    worker = CeleryWorker(env={**worker_env, "CELERY_BROKER_URL": proxied}, name="ledger", pool="threads", concurrency=2)
    worker.start()
    try:

        def generation() -> str | None:
            found = [value for name, value in services.worker_generations().items() if name.startswith("ledger-")]
            return found[0] if found else None

        wait_until(lambda: generation() is not None, message="the worker to answer a round's inquiry")
        before = generation()
        ledger_lost_and_drained()
        offset = worker.log_path.stat().st_size
        broker_proxy.cut()
        wait_until(lambda: "Connection to broker lost" in log_since(worker, offset), message="the worker to lose the broker")
        # Reported as it lost the connection, before it is back (Redis answers meanwhile).
        wait_until(ledger_disturbed, message="the worker to report what its lost channel handed back")
        assert generation() is None  # cut off: it cannot answer a round
        ledger_lost_and_drained()
        broker_proxy.restore()
        wait_until(ledger_disturbed, message="the worker, connected again, to report it")
        wait_until(lambda: generation() is not None, message="the worker to answer again")
        assert generation() != before  # a round begun before the cut sees it changed
    finally:
        worker.stop()


# --- 7. No silent loss ---------------------------------------------------------------------------


@pytest.mark.parametrize("bound", [2, 5])
def test_a_task_that_keeps_failing_stops_after_bounded_attempts_in_the_dead_letter_table(
    tenant, monkeypatch, transactional_db, bound
):
    attempts = []

    def always_unreachable(*, payload: dict) -> None:
        attempts.append(payload)
        raise OperationalError("connection refused")

    monkeypatch.setattr(persisting, "messages_persist", always_unreachable)
    payload = {"tenant_id": tenant.pk, "tenant_slug": tenant.slug, "conversation_id": "doomed", "messages": []}
    monkeypatch.setattr(tasks, "_backoff", lambda retries: 0)
    with override_settings(MEMORY_PERSIST_MAX_RETRIES=bound):  # above Celery's own default of 3 too
        tasks.messages_persist.apply(args=[payload])
    assert len(attempts) == bound + 1
    dead_letter = DeadLetter.objects.for_tenant(tenant).get()
    assert dead_letter.attempts == bound + 1
    assert dead_letter.payload == payload
    assert "connection refused" in dead_letter.error


def test_a_conflicting_write_lands_in_dead_letters_and_replays_once_fixed(api, tenant, worker):
    taken = append(api, "first", "original").json()["messages"][0]
    wait_for_rows(Message, tenant, 1)
    clash = {  # the same id with other content, as a resend that bypassed the web check would carry
        "id": taken["id"],
        "seq": message_shape._now_microseconds() + 3_600_000_000,
        "role": "user",
        "content": "clash",
        "metadata": {},
        "created_at": taken["created_at"],
        "token_count": 1,
    }
    publishing.publish(
        publishing.MESSAGES_PERSIST,
        {"tenant_id": tenant.pk, "tenant_slug": tenant.slug, "conversation_id": "first", "messages": [clash]},
    )
    wait_until(lambda: DeadLetter.objects.for_tenant(tenant).exists(), message="a dead letter")
    assert "already stored with other content" in DeadLetter.objects.for_tenant(tenant).get().error

    assert api.delete("/api/v1/conversations/first/").status_code == 200  # the operator removes the original
    call_command("replay_dead_letters", "--tenant", tenant.slug)
    wait_until(
        lambda: Message.objects.for_tenant(tenant).filter(conversation__conversation_id="first", content="clash").exists(),
        message="the replayed message",
    )
    assert DeadLetter.objects.for_tenant(tenant).get().replayed_at is not None


def test_a_worker_keeps_its_database_connection_across_tasks(api, tenant, worker):
    def sessions() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
            return cursor.fetchone()[0]

    append(api, "warm", "the worker connects once")
    wait_for_rows(Message, tenant, 1)
    before = sessions()
    for turn in range(20):
        append(api, f"reuse-{turn}", f"message {turn}")
    wait_for_rows(Message, tenant, 21)
    # Statistics are flushed lazily; a connection per task would add about 20 sessions.
    assert sessions() - before < 10

"""The queue type of the write path (``MEMORY_QUEUE_TYPE``): quorum by default on RabbitMQ, classic
on the embedded Redis broker; a queue the broker holds with the other type stops a worker with what
to do and keeps its messages, which ``broker_queues_migrate`` carries into a quorum queue; a task
with a countdown waits in RabbitMQ's delay queues, not in a worker's hands."""

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import amqp
import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings
from kombu import Queue

from conversations import services, tasks
from conversations.models import Message
from memoryproject.celery import EXIT_CONFIGURATION
from memoryproject.celery import app as celery_app
from memoryproject.settings import base
from tests.faults import ROOT, CeleryWorker, wait_until


def declare_classic(name: str) -> None:
    """Declare ``name`` as a plain classic queue; PreconditionFailed if it exists as a quorum queue."""
    with celery_app.connection_for_write() as broker:
        broker.default_channel.queue_declare(name, durable=True, auto_delete=False)


def ready(name: str) -> int:
    with celery_app.connection_for_write() as broker:
        return broker.default_channel.queue_declare(name, passive=True).message_count


def test_the_write_path_queues_are_quorum_queues_on_rabbitmq():
    assert base.broker_queue_type("amqp://guest:guest@127.0.0.1:5672//") == "quorum"
    assert base.broker_queue_type("amqp://a:5672//;amqp://b:5672//") == "quorum"
    assert settings.MEMORY_QUEUE_TYPE == "quorum"
    queue = celery_app.amqp.queues[settings.MEMORY_QUEUE]
    assert queue.queue_arguments == {"x-queue-type": "quorum", "x-delivery-limit": base.QUORUM_DELIVERY_LIMIT}
    assert queue.exchange.type == "topic"  # native delayed delivery
    with celery_app.connection_for_write() as broker:  # declared on this broker as a quorum queue
        queue.bind(broker.default_channel).declare()
    with pytest.raises(amqp.exceptions.PreconditionFailed, match="x-queue-type"):
        declare_classic(settings.MEMORY_QUEUE)


def test_the_embedded_redis_broker_keeps_classic_queues(monkeypatch):
    assert base.broker_queue_type("redis+socket:///tmp/redis.sock?virtual_host=1") == "classic"
    (queue,) = base.durable_queues("memory", queue_type="classic")
    assert not queue.queue_arguments
    assert queue.exchange.type == "direct"
    monkeypatch.setattr(base, "MEMORY_QUEUE_TYPE", "quorum")
    with pytest.raises(ImproperlyConfigured, match="needs RabbitMQ"):
        base.broker_queue_type("redis://127.0.0.1:6379/1")
    monkeypatch.setattr(base, "MEMORY_QUEUE_TYPE", "quorom")
    with pytest.raises(ImproperlyConfigured, match="use one of quorum, classic"):
        base.broker_queue_type("amqp://127.0.0.1//")
    monkeypatch.setattr(base, "MEMORY_QUEUE_TYPE", "classic")
    assert base.broker_queue_type("amqp://127.0.0.1//") == "classic"


@pytest.fixture
def classic_queue() -> Iterator[str]:
    """A classic queue holding three tasks, as a deployment of an earlier release leaves it."""
    name = f"{settings.MEMORY_QUEUE}-classic"
    with celery_app.connection_for_write() as broker:
        channel = broker.default_channel
        for queue in (name, f"{name}-derived", f"{name}.migrating", f"{name}-derived.migrating"):
            channel.queue_delete(queue)
    declare_classic(name)
    with celery_app.producer_or_acquire() as producer:
        for _ in range(3):
            headers, properties, body, _ = celery_app.amqp.as_task_v2(str(uuid.uuid4()), tasks.cache_repair_sweep.name, [], {})
            producer.publish(
                body, exchange="", routing_key=name, headers=headers, serializer="json", delivery_mode=2, **properties
            )
    try:
        yield name
    finally:
        with celery_app.connection_for_write() as broker:
            for queue in (name, f"{name}-derived", f"{name}.migrating", f"{name}-derived.migrating"):
                broker.default_channel.queue_delete(queue)


@pytest.mark.worker
def test_a_classic_queue_stops_the_worker_with_what_to_do_and_the_migration_keeps_its_messages(
    worker_env, classic_queue, transactional_db
):
    env = {**worker_env, "MEMORY_QUEUE": classic_queue, "MEMORY_DERIVED_QUEUE": f"{classic_queue}-derived"}
    refused = CeleryWorker(env=env, name="classic")
    with pytest.raises(AssertionError, match=f"exited with {EXIT_CONFIGURATION}"):
        refused.start()
    log = refused.log_path.read_text()
    assert "broker_queue_type_mismatch" in log
    assert "broker_queues_migrate" in log
    assert "MEMORY_QUEUE_TYPE=classic" in log
    assert ready(classic_queue) == 3, "the classic queue lost messages"

    migrated = subprocess.run(
        [sys.executable, "manage.py", "broker_queues_migrate"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert migrated.returncode == 0, migrated.stderr[-2000:]
    assert f"{classic_queue} declared anew, 3 messages moved" in migrated.stdout
    with pytest.raises(amqp.exceptions.PreconditionFailed, match="x-queue-type"):
        declare_classic(classic_queue)  # a quorum queue now
    wait_until(lambda: ready(classic_queue) == 3, timeout=10, message="the three tasks in the quorum queue")

    worker = CeleryWorker(env=env, name="migrated")
    worker.start()
    try:
        wait_until(lambda: ready(classic_queue) == 0, timeout=30, message="the worker to consume the migrated tasks")
    finally:
        worker.stop()


@pytest.mark.worker
def test_a_task_with_a_countdown_waits_in_the_broker_not_in_a_worker(worker, no_worker_consumes_meanwhile):
    # A worker has declared RabbitMQ's delay queues and bound the persist queue to them, then stopped.
    tasks.cache_repair_sweep.apply_async(countdown=2, queue=settings.MEMORY_QUEUE)
    published = time.monotonic()
    assert ready(settings.MEMORY_QUEUE) == 0, "a countdown task went straight to the queue (a worker would hold it)"
    wait_until(lambda: ready(settings.MEMORY_QUEUE) == 1, timeout=20, message="the task to come out of the delay queues")
    assert time.monotonic() - published >= 1.5


@pytest.fixture
def no_worker_consumes_meanwhile(worker: CeleryWorker) -> Iterator[None]:
    worker.stop()
    try:
        yield
    finally:
        with celery_app.connection_for_write() as broker:
            broker.default_channel.queue_purge(settings.MEMORY_QUEUE)


def test_an_append_meeting_a_queue_of_the_other_type_is_refused_and_nothing_is_kept(api, tenant, classic_queue, transactional_db):
    # A web process of the new release before the migration: the broker refuses to declare the
    # persist queue as a quorum queue. Nothing was sent: a refusal, not an indeterminate write.
    (quorum,) = base.durable_queues(classic_queue, queue_type="quorum")
    celery_app.amqp.queues.add(quorum)
    try:
        with override_settings(MEMORY_QUEUE=classic_queue):
            answer = api.post("/api/v1/conversations/mismatch/messages/", {"role": "user", "content": "not kept"}, format="json")
    finally:
        celery_app.amqp.queues.pop(classic_queue)
    assert answer.status_code == 503
    assert answer.json()["error"]["code"] == "broker_unavailable"
    assert ready(classic_queue) == 3
    assert not Message.objects.for_tenant(tenant).exists()
    assert api.get("/api/v1/conversations/mismatch/messages/").json().get("messages", []) == []


def test_an_append_declares_the_write_queue_once_per_broker_connection(tenant, monkeypatch):
    """The write queue is declared on a connection's first publish and not again on the next ones; a
    connection the broker dropped (closed under the pool, as by a broker restart) declares it again when
    it reconnects, so a queue the broker lost is there before the next message is published to it."""
    declared: list[str] = []
    declare = Queue.declare

    def counted(self, *args, **kwargs):
        declared.append(self.name)
        return declare(self, *args, **kwargs)

    monkeypatch.setattr(Queue, "declare", counted)

    def drop_connection() -> None:
        with celery_app.producer_or_acquire() as producer:
            producer.connection.close()

    def append(number: int) -> None:
        services.message_append(tenant=tenant, conversation_id=f"declared-{number}", messages=[{"role": "user", "content": "hi"}])

    drop_connection()
    append(1)
    append(2)
    append(3)
    assert declared.count(settings.MEMORY_QUEUE) == 1
    drop_connection()
    append(4)
    assert declared.count(settings.MEMORY_QUEUE) == 2
    assert Message.objects.for_tenant(tenant).count() == 0  # nothing persisted yet: the four are queued
    assert ready(settings.MEMORY_QUEUE) >= 4

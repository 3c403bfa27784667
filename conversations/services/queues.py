"""The broker's queues of the write path: their type (``MEMORY_QUEUE_TYPE``) checked, and a classic
queue migrated to a quorum queue without losing a message.

RabbitMQ never changes the type of a queue it holds: declaring ``memory`` as a quorum queue where a
classic ``memory`` exists fails (PRECONDITION_FAILED, inequivalent arg 'x-queue-type'). Every
process that declares the queues meets that refusal: a web process answers 503 ``broker_unavailable``
(nothing acknowledged, nothing lost), a worker stops at start with ``QueueTypeMismatch``, which says
what to do (the classic queue keeps its messages meanwhile). ``queue_migrate`` is the way over:
every message moves to a holding quorum queue, confirmed, before the classic queue is deleted, then
back into the quorum queue of the same name.
"""

from dataclasses import dataclass
from typing import Any

import amqp
import structlog
from celery import current_app
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from kombu import Queue

logger = structlog.get_logger(__name__)

MIGRATION_COMMAND = "python manage.py broker_queues_migrate"


class QueueTypeMismatch(ImproperlyConfigured):
    """A queue exists on the broker with another type than ``MEMORY_QUEUE_TYPE`` asks for."""

    def __init__(self, queue: str, detail: str) -> None:
        wanted = settings.MEMORY_QUEUE_TYPE
        other = "classic" if wanted == "quorum" else "quorum"
        super().__init__(
            f"The broker holds a {other} queue {queue!r} but MEMORY_QUEUE_TYPE is {wanted} (RabbitMQ said: {detail}). "
            f"Either set MEMORY_QUEUE_TYPE={other} to keep it, or stop the web processes and workers and run "
            f"'{MIGRATION_COMMAND}', which moves its messages into a {wanted} queue of the same name "
            "(docs/operations.md, 'Queue type'). Nothing was consumed from it."
        )
        self.queue = queue


def is_type_mismatch(error: BaseException) -> bool:
    """Whether the broker refused a declare because the queue exists with another type."""
    return isinstance(error, amqp.exceptions.PreconditionFailed) and "x-queue-type" in str(error)


def configured_queues() -> list[Queue]:
    """The persist and derived queues, as Celery declares them (``CELERY_TASK_QUEUES``)."""
    return [current_app.amqp.queues[name] for name in (settings.MEMORY_QUEUE, settings.MEMORY_DERIVED_QUEUE)]


def queues_declare(*, connection: Any) -> None:
    """Declare the write path's queues with their configured type on ``connection`` (a kombu
    connection); ``QueueTypeMismatch`` names the first the broker holds with the other type."""
    for queue in configured_queues():
        channel = connection.channel()
        try:
            queue.bind(channel).declare()
        except amqp.exceptions.PreconditionFailed as error:
            if is_type_mismatch(error):
                raise QueueTypeMismatch(queue.name, str(error)) from error
            raise
        finally:
            try:
                channel.close()
            except Exception:  # noqa: S110 - a channel the broker closed with the error
                pass


@dataclass(frozen=True)
class Migration:
    queue: str
    moved: int  # messages carried over into the new queue (0: the queue was empty or already of its type)
    created: bool  # whether the queue was declared anew with the configured type


def _arguments(queue: Queue) -> dict[str, Any]:
    return dict(queue.queue_arguments or {})


def _declare(channel: Any, queue: Queue) -> None:
    """The queue, its exchange and its binding, as Celery declares them."""
    channel.exchange_declare(queue.exchange.name, queue.exchange.type, durable=True, auto_delete=False)
    channel.queue_declare(queue.name, durable=True, auto_delete=False, arguments=_arguments(queue))
    channel.queue_bind(queue.name, queue.exchange.name, routing_key=queue.routing_key)


def _delete_empty(channel: Any, name: str) -> None:
    """Delete a queue found empty (quorum queues take no if-empty flag; no publisher runs now)."""
    _, messages, _ = channel.queue_declare(name, passive=True)
    if messages:
        raise RuntimeError(
            f"{name!r} received {messages} message(s) during the migration: stop every publisher, then run it again."
        )
    channel.queue_delete(name)


def _move(channel: Any, source: str, target: str) -> int:
    """Every message ready in ``source`` published to ``target`` (confirmed) then acknowledged:
    a message is in one queue or both, never in none."""
    moved = 0
    while (message := channel.basic_get(source, no_ack=False)) is not None:
        channel.basic_publish(amqp.Message(message.body, **dict(message.properties)), exchange="", routing_key=target)
        channel.basic_ack(message.delivery_tag)
        moved += 1
    return moved


def queue_migrate(*, queue: Queue, host: str, userid: str, password: str, virtual_host: str = "/") -> Migration:
    """Give ``queue`` its configured type on the broker, keeping every message it holds.

    Refuses (``RuntimeError``) while a consumer reads the queue: the workers must be stopped, and the
    web processes too (a publish while the queue is being replaced may be routed nowhere). A holding
    queue ``<name>.migrating`` of the new type takes the messages first; if the command is stopped
    half-way, running it again finishes the move."""
    holding = f"{queue.name}.migrating"
    arguments = _arguments(queue)
    connection = amqp.Connection(
        host=host, userid=userid, password=password, virtual_host=virtual_host, confirm_publish=True, connect_timeout=10
    )
    connection.connect()
    try:
        channel = connection.channel()
        channel.queue_declare(holding, durable=True, auto_delete=False, arguments=arguments)
        try:
            _declare(channel, queue)
            created = False
        except amqp.exceptions.PreconditionFailed as error:
            if not is_type_mismatch(error):
                raise
            channel = connection.channel()
            _, _, consumers = channel.queue_declare(queue.name, passive=True)
            if consumers:
                raise RuntimeError(
                    f"{consumers} consumer(s) read {queue.name!r}: stop the workers (and the web processes) first."
                ) from error
            moved = _move(channel, queue.name, holding)
            _delete_empty(channel, queue.name)
            logger.info("broker_queue_emptied", queue=queue.name, moved=moved)
            _declare(channel, queue)
            created = True
        # A new channel: RabbitMQ 3.10's channel that knew the classic queue crashes publishing to
        # the quorum queue now holding its name (INTERNAL_ERROR, nothing lost, nothing published).
        channel = connection.channel()
        moved = _move(channel, holding, queue.name)
        _delete_empty(channel, holding)
        logger.info("broker_queue_migrated", queue=queue.name, moved=moved, created=created)
        return Migration(queue=queue.name, moved=moved, created=created)
    finally:
        connection.close()

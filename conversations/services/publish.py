"""Publish (step 2 of the write path): the persist task reaches the broker, confirmed, before the
append answers.

The services publish tasks by their names (``MESSAGES_PERSIST``...): ``conversations.tasks`` defines
them under these names and calls the services, so the services never import it (tasks sit above
services).

``publish`` and ``publish_args`` wait for the broker's confirm and turn every failure into a 503 that
says whether the write may be queued (``PublishIndeterminate``) or surely is not. ``_send_task`` builds
the message as Celery's ``apply_async`` would, persistent on the durable queue. Concurrent appenders
of one process share a confirm round trip (``PersistGroup``, a group commit built on ``_Relay``).
"""

import copy
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import structlog
from amqp.exceptions import MessageNacked
from celery import current_app
from django.conf import settings
from kombu.entity import PERSISTENT_DELIVERY_MODE
from kombu.utils.uuid import uuid as kombu_uuid

from conversations import metrics
from conversations.services import queues
from core.exceptions import ServiceUnavailable
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


# The tasks of ``conversations.tasks`` the services publish.
MESSAGES_PERSIST = "conversations.tasks.messages_persist"
MESSAGES_PERSIST_MANY = "conversations.tasks.messages_persist_many"
MEMORY_PERSIST = "conversations.tasks.memory_persist"
LEDGER_BARRIER = "conversations.tasks.ledger_barrier"
CACHE_REBUILD = "conversations.tasks.cache_rebuild"
TENANT_CACHE_REBUILD = "conversations.tasks.tenant_cache_rebuild"
CACHE_REPAIR_SWEEP = "conversations.tasks.cache_repair_sweep"


def queue_depth(queue: str) -> int:
    """Messages ready in a broker queue (not counting those delivered to a worker)."""
    with current_app.producer_or_acquire() as producer:
        _, depth, _ = producer.channel.queue_declare(queue, passive=True)
        return depth


def _persist_payload(
    *, tenant: Tenant, conversation_id: str, messages: list[dict[str, Any]], user_id: str, agent_id: str
) -> dict[str, Any]:
    return {
        "tenant_id": tenant.pk,
        "tenant_slug": tenant.slug,
        "conversation_id": conversation_id,
        "user_id": user_id,
        "agent_id": agent_id,
        "acknowledged_at": time.time(),
        "messages": messages,
    }


def _publish_persist(
    *, tenant: Tenant, conversation_id: str, messages: list[dict[str, Any]], user_id: str, agent_id: str
) -> None:
    _persist_group.publish(
        _persist_payload(tenant=tenant, conversation_id=conversation_id, messages=messages, user_id=user_id, agent_id=agent_id)
    )


def own_error(error: BaseException) -> BaseException:
    """A copy of ``error`` for one thread to raise: an exception raised in several threads at once
    would share its traceback and its ``details``, so one request's answer could carry another's ids.
    Its cause, context and traceback stay; ``details`` is copied. An exception that cannot be copied
    is given as it is."""
    try:
        clone = copy.copy(error)
    except Exception:
        return error
    if clone is error or type(clone) is not type(error):
        return error
    clone.__cause__, clone.__context__ = error.__cause__, error.__context__
    clone.__suppress_context__ = error.__suppress_context__
    clone.__traceback__ = error.__traceback__
    if isinstance(getattr(error, "details", None), dict):
        clone.details = copy.deepcopy(error.details)  # type: ignore[attr-defined]
    return clone


@dataclass(eq=False)
class _Waiting:
    payload: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False  # handed the work over by the previous leader (or first to come)
    error: BaseException | None = None


class _Relay:
    """Payloads of concurrent threads and the one thread that works through them (group commit).

    A thread queues its payload (``_join``); the first to come leads at once. A leader takes what
    waits (``_take``, at most a group), does the work for all of it, then hands the lead to the next
    waiting thread and wakes the ones it did the work for (``_hand_over``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[_Waiting] = []
        self._running = False

    def _join(self, payload: dict[str, Any]) -> _Waiting:
        mine = _Waiting(payload)
        with self._lock:
            self._queue.append(mine)
            mine.lead = not self._running
            self._running = True
        return mine

    def _take(self, limit: int) -> list[_Waiting]:
        with self._lock:
            batch = self._queue[:limit]
            del self._queue[: len(batch)]
        return batch

    @staticmethod
    def _fail(batch: list[_Waiting], error: BaseException) -> None:
        """Give every payload of ``batch`` the error the work met, each its own copy (``own_error``):
        their threads raise it at once and may add their own details to it."""
        for waiting in batch:
            waiting.error = own_error(error)

    def _hand_over(self, batch: list[_Waiting], mine: _Waiting) -> None:
        with self._lock:
            successor = self._queue[0] if self._queue else None
            self._running = successor is not None
            if successor is not None:
                successor.lead = True
        if successor is not None:
            successor.done.set()
        for waiting in batch:
            if waiting is not mine:
                waiting.done.set()


class PersistGroup(_Relay):
    """Concurrent appenders of one process share the broker's confirm round trip (group commit).

    The first appender publishes its payload at once, alone. Payloads that arrive while a publish
    waits for its confirm queue up; when it is confirmed, the next waiting appender publishes all of
    them as one ``messages_persist_many`` task, and so on. Nobody returns before the message holding
    its payload is confirmed, so a 201 still means durable; one client alone never waits for others.
    """

    def publish(self, payload: dict[str, Any]) -> None:
        mine = self._join(payload)
        if not mine.lead:
            if not mine.done.wait(settings.MEMORY_PUBLISH_WAIT):
                self._give_up(mine)
            if mine.error is not None:
                raise mine.error
            if not mine.lead:
                return
        self._publish_queued(mine)
        if mine.error is not None:
            raise mine.error

    def _give_up(self, mine: _Waiting) -> None:
        """Waited too long: leave the queue unpublished (503). A payload already handed the publishing,
        or already in a message being published, stays to see it through, so the group never stalls."""
        with self._lock:
            queued = not mine.lead and mine in self._queue
            if queued:
                self._queue.remove(mine)
        if queued:
            raise ServiceUnavailable(
                "The message broker did not confirm the write in time, so it was not stored. Retry shortly.",
                code="broker_unavailable",
            )
        mine.done.wait()  # the publish holding it ends within the broker's confirm and connect timeouts

    def _publish_queued(self, mine: _Waiting) -> None:
        """Publish what is queued (ours first among it), then hand over to the next waiting appender."""
        batch = self._take(settings.MEMORY_PUBLISH_GROUP)
        try:
            if len(batch) == 1:
                publish(MESSAGES_PERSIST, batch[0].payload)
            else:
                publish_args(MESSAGES_PERSIST_MANY, [waiting.payload for waiting in batch])
        except BaseException as error:
            self._fail(batch, error)
        finally:
            self._hand_over(batch, mine)


_persist_group = PersistGroup()


def publish(task: str, payload: dict[str, Any]) -> None:
    """Publish the task named ``task`` and wait for the broker's confirm; 503 if it refuses, cannot be
    reached, or its confirm is lost (``PublishIndeterminate``)."""
    publish_args(task, payload)


class PublishIndeterminate(ServiceUnavailable):
    """The message was sent but its confirm never came (the connection or the broker went away, or
    the confirm timed out): the broker may hold it or not. Not a refusal: a resend with the same ids
    is answered with the same seqs."""

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__(message, code="write_indeterminate", details=details)


def publish_args(task: str, *args: Any) -> None:
    try:
        _send_task(task, list(args))
    except _Indeterminate as error:
        metrics.publish_failures.labels(outcome="indeterminate").inc()
        logger.error("publish_indeterminate", task=task, error=repr(error.__cause__))
        raise PublishIndeterminate(
            "The message broker may or may not have stored the write (its confirm was lost). Resend the same "
            "messages with the ids listed here: the service answers them with the same seqs, never twice."
        ) from error.__cause__
    except Exception as error:  # refused (nacked), or never sent: the broker could not be reached
        metrics.publish_failures.labels(outcome="refused").inc()
        if queues.is_type_mismatch(error):  # an operator's to fix: the log says how
            logger.error(
                "broker_queue_type_mismatch",
                task=task,
                error=str(queues.QueueTypeMismatch(settings.MEMORY_QUEUE, str(error))),
            )
        else:
            logger.error("publish_failed", task=task, error=repr(error))
        raise ServiceUnavailable(
            "The message broker did not take the write, so nothing was stored. Retry shortly.",
            code="broker_unavailable",
        ) from error


class _Indeterminate(Exception):
    """Raised from a publish whose message may have reached the broker (see ``PublishIndeterminate``)."""


DECLARATIONS = ("Queue.declare", "Exchange.declare", "Queue.bind")  # AMQP methods sent before the message


def _sent(error: BaseException) -> bool:
    """Whether a publish that raised ``error`` had written its message: the failure came while it
    waited for the confirm (a read), not while it connected or wrote. A nack is a refusal, and so
    is the broker's refusal of the queue's declaration, which comes before the message is written
    (a queue of another type: PRECONDITION_FAILED on Queue.declare)."""
    if isinstance(error, MessageNacked):
        return False
    if getattr(error, "method_name", None) in DECLARATIONS:
        return False
    trace = error.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if code.co_name in ("wait", "drain_events", "read_frame") and "/amqp/" in code.co_filename:
            return True
        trace = trace.tb_next
    return isinstance(error, TimeoutError | socket.timeout)


def _send_task(task: str, args: list[Any]) -> None:
    """Publish the message ``apply_async`` of the task named ``task`` would, built by the current
    Celery app's own builder (``as_task_v2``),
    without the routing and signal machinery around it: a quarter of what an append spends publishing.

    Persistent, on the durable queue (declared once per connection), confirmed by the broker before
    this returns. The first attempt does not retry: a pooled connection the broker dropped (a
    restart) is retried as ``apply_async`` would, reconnecting under ``CELERY_TASK_PUBLISH_RETRY_POLICY``.
    A failure after the message was written raises ``_Indeterminate`` (the broker may hold it).
    Celery would put a repr of the payload in a header too: time spent on every append for a copy
    nobody needs (the payload is the body).
    """
    app = current_app
    headers, properties, body, _ = app.amqp.as_task_v2(
        kombu_uuid(), task, args, {}, argsrepr=f"({len(args)} withheld)", kwargsrepr="{}"
    )
    queue = app.amqp.queues[settings.MEMORY_QUEUE]
    options = dict(
        exchange="",
        routing_key=queue.name,
        serializer="json",
        delivery_mode=PERSISTENT_DELIVERY_MODE,
        headers=headers,
        **properties,
    )
    confirm_timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("confirm_timeout")
    if confirm_timeout is not None:
        # Kombu hands transport options to py-amqp's Connection, which ignores ``confirm_timeout``:
        # without it here, a publish would wait for its confirm for ever. (The embedded run's Redis
        # transport has no confirms, and no such option.)
        options["confirm_timeout"] = confirm_timeout
    with app.producer_or_acquire() as producer:
        connection = producer.connection
        sent = False
        # The queue is declared once per connection: kombu keeps what it declared, and forgets it when
        # the connection is lost. Asking kombu each time costs a copy of the queue bound to the channel.
        declared = hash(queue) in (connection.declared_entities or ())
        try:
            producer.publish(body, retry=False, declare=[] if declared else [queue], **options)
            return
        except connection.recoverable_connection_errors + connection.recoverable_channel_errors as error:
            sent = _sent(error)
        except Exception as error:
            if _sent(error):
                raise _Indeterminate() from error
            raise
        try:
            producer.publish(body, retry=True, retry_policy=app.conf.task_publish_retry_policy, declare=[queue], **options)
        except Exception as error:
            if sent or _sent(error):
                raise _Indeterminate() from error
            raise

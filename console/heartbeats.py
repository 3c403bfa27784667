"""Each Celery worker says it lives: a bootstep (``Heartbeat``, added to every worker by
``memoryproject/celery.py``) runs a thread of the worker's main process that records the worker
(node name, pid, the queues it consumes, whether its consumer holds a connection to the broker, the
time) in PostgreSQL every ``HEARTBEAT_SECONDS``, and removes that record when the worker stops cleanly.

PostgreSQL rather than Redis: the record is read by the health page while Redis is down, which is
when an operator looks. A worker whose record is older than ``MISSING_AFTER_SECONDS`` (three beats)
was lost without a word; the broker's consumer counts (``console.selectors``) tell the same from the
other side, sooner: a worker whose last beat said it was connected, on a queue the broker counts no
consumer on, stopped since (or lost the broker without noticing yet); one whose last beat said it was
not connected is connecting (at its start, or after losing the broker) and says so itself. The thread is the worker's own, not the event loop's timer: a PostgreSQL that does not
answer delays the next beat, never the consumer's heartbeats to the broker or its acknowledgements.
A failed beat is logged and tried again at the next one.
"""

import os
import threading
import time
from typing import Any

import structlog
from celery import bootsteps

logger = structlog.get_logger(__name__)

HEARTBEAT_SECONDS = 10.0
# A worker not heard from for three beats is missing (one late beat is a slow database, not a loss).
MISSING_AFTER_SECONDS = 3 * HEARTBEAT_SECONDS
# How often the thread looks at its consumer's broker connection (a read of two attributes).
STATE_POLL_SECONDS = 1.0


def broker_connected(worker: Any) -> bool:
    """Whether the worker's consumer holds an open connection to the broker now (Celery sets it to
    None while it connects, and again while it reconnects after losing the broker)."""
    connection = getattr(getattr(worker, "consumer", None), "connection", None)
    try:
        return bool(connection is not None and connection.connected)
    except Exception:  # a connection torn down by the consumer's thread meanwhile: not connected
        return False


def consumed_queues(worker: Any) -> list[str]:
    """The queues a worker consumes (its ``-Q``), as Celery resolved them when it set up."""
    return sorted(worker.app.amqp.queues.consume_from)  # every queue when no -Q narrowed them


class Heartbeat(bootsteps.StartStopStep):
    """A worker bootstep: a daemon thread recording the worker every ``HEARTBEAT_SECONDS`` from its
    start to its stop, and at once (within ``STATE_POLL_SECONDS``) when its consumer connects to the
    broker or loses it, so that the page never reads a connection state a beat old."""

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._identity: dict[str, Any] = {}

    def start(self, parent: Any) -> None:
        from django.utils import timezone

        self._identity = {
            "hostname": parent.hostname,
            "pid": os.getpid(),
            "queues": consumed_queues(parent),
            "started_at": timezone.now(),
        }
        self._stopping.clear()
        self._thread = threading.Thread(target=self._beat, args=(parent,), name="console-heartbeat", daemon=True)
        self._thread.start()

    def stop(self, parent: Any) -> None:
        from console import services

        self._stopping.set()
        if self._thread is not None:
            self._thread.join(timeout=HEARTBEAT_SECONDS)
        try:
            services.heartbeat_forget(hostname=self._identity.get("hostname", parent.hostname))
        except Exception as error:  # the record goes stale and is shown missing: the truth, if a late one
            logger.warning("worker_heartbeat_not_removed", error=str(error)[:200])

    shutdown = stop

    def _beat(self, parent: Any) -> None:
        from django.db import close_old_connections, connection

        from console import services

        said: bool | None = None  # the connection state the last beat recorded
        next_beat = 0.0
        while not self._stopping.is_set():
            connected = broker_connected(parent)
            if connected != said or time.monotonic() >= next_beat:
                close_old_connections()  # a connection PostgreSQL dropped since the last beat is not reused
                try:
                    services.heartbeat_record(**self._identity, broker_connected=connected)
                except Exception as error:  # PostgreSQL down: the page shows it so, and this worker as unheard
                    logger.warning("worker_heartbeat_failed", error=str(error)[:200])
                said, next_beat = connected, time.monotonic() + HEARTBEAT_SECONDS  # a failed beat waits for the next
            self._stopping.wait(STATE_POLL_SECONDS)
        connection.close()

"""The Celery app: configured from Django settings (``CELERY_`` namespace), JSON only."""

import os
import sys
import uuid

import structlog
from celery import Celery, bootsteps, signals
from celery.worker.control import inspect_command

from console.heartbeats import Heartbeat

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.local")

app = Celery("memoryproject")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# The apps reach it as ``celery.current_app`` (and their tasks as ``shared_task``), never by importing
# this module: current in every thread, not only the one that created it.
app.set_default()


# The generation of this worker's broker connection: a new one each time its consumer starts, none
# while it is down. A round of ledger barriers asks for it (``ledger_generation``): a worker that
# reconnected since the round began may have handed messages back to the queue behind it.
_connection = {"generation": None}


class LedgerDisturbance(bootsteps.StartStopStep):
    """Each time the worker's consumer stops or starts (the worker started or stopped, or its broker
    connection was lost and came back), the persist messages it held went back to the broker: the
    ledger of pending writes, if Redis lost it and it is not whole yet, needs a new round of
    barriers behind them."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: object) -> None:
        from conversations import services

        _connection["generation"] = uuid.uuid4().hex
        services.ledger_disturbed_soon(why="worker_connected")

    def stop(self, parent: object) -> None:
        from conversations import services

        _connection["generation"] = None
        services.ledger_disturbed_soon(why="worker_disconnected")

    shutdown = stop


@inspect_command()
def ledger_generation(state: object) -> dict[str, object]:
    """This worker's broker connection generation, the queues it consumes (see ``LedgerDisturbance``)
    and the writes of the persist messages it holds (``held_writes``)."""
    task_consumer = getattr(getattr(state, "consumer", None), "task_consumer", None)
    queues = [queue.name for queue in getattr(task_consumer, "queues", None) or ()]
    return {"generation": _connection["generation"], "queues": queues, "held": held_writes()}


PERSIST_TASKS = ("conversations.tasks.messages_persist", "conversations.tasks.messages_persist_many")


def held_writes() -> list[list[object]] | None:
    """The writes of the persist messages this worker holds, prefetched or running, as [tenant slug,
    conversation id, message ids] each; None when one cannot be read. A round of ledger barriers
    asks: a write the ledger does not hold may be one acknowledged before Redis lost it."""
    from celery.worker import state as worker_state

    try:
        held: list[list[object]] = []
        for request in set(worker_state.reserved_requests) | set(worker_state.active_requests):
            if request.name not in PERSIST_TASKS:
                continue
            payloads = request.args[0] if request.name == PERSIST_TASKS[1] else [request.args[0]]
            held += [[p["tenant_slug"], p["conversation_id"], [m["id"] for m in p["messages"]]] for p in payloads]
        return held
    except Exception:  # a message of another shape: the round waits its whole slack
        return None


app.steps["consumer"].add(LedgerDisturbance)
# Every worker records itself for the health page while it runs (console.heartbeats).
app.steps["worker"].add(Heartbeat)

EXIT_CONFIGURATION = 78  # EX_CONFIG: a supervisor told "do not restart me as I am"


@signals.worker_init.connect
def check_queue_types(**kwargs: object) -> None:
    """Before a worker consumes, the write path's queues are declared with their configured type
    (``MEMORY_QUEUE_TYPE``): a queue the broker holds with the other type stops the worker at once
    with what to do, rather than a bare PRECONDITION_FAILED from Celery's own declare. A broker
    that cannot be reached now is left to the worker's reconnection."""
    from kombu.exceptions import OperationalError

    from conversations.services import queues

    with app.connection_for_write() as connection:
        if connection.transport.driver_type != "amqp":
            return
        try:
            connection.ensure_connection(max_retries=2)
            queues.queues_declare(connection=connection)
        except queues.QueueTypeMismatch as error:
            structlog.get_logger(__name__).critical("broker_queue_type_mismatch", queue=error.queue, error=str(error))
            sys.exit(EXIT_CONFIGURATION)
        except (OperationalError, OSError):
            return


@signals.task_prerun.connect
@signals.task_postrun.connect
def recycle_database_connections(task: object = None, **kwargs: object) -> None:
    """Before and after each task, what Django does around each request: close a connection that is
    broken (PostgreSQL restarted) or older than ``CONN_MAX_AGE``, keep the others. A task run in
    place (``apply``) runs inside its caller's connection and transaction, so it is left alone."""
    from django.db import close_old_connections

    if not getattr(getattr(task, "request", None), "is_eager", False):
        close_old_connections()

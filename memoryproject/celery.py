"""The Celery app: configured from Django settings (``CELERY_`` namespace), JSON only."""

import os
import uuid

from celery import Celery, bootsteps, signals
from celery.worker.control import inspect_command

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.local")

app = Celery("memoryproject")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# The generation of this worker's hold on persist messages: a new one when its consumer first starts,
# and again each time the consumer stops (its broker connection lost, the worker stopping) while it
# held a message that may be older than the ledger of pending writes. A round of ledger barriers
# asks for it (``ledger_generation``): a worker whose generation changed since the round began
# handed such a message back to the queue, maybe behind the round's barriers.
_connection = {"generation": None}

PERSIST_TASKS = ("conversations.tasks.messages_persist", "conversations.tasks.messages_persist_many")


class LedgerDisturbance(bootsteps.StartStopStep):
    """Watches the consumer for the ledger's sake: when it stops, the persist messages the worker held
    (running or prefetched) go back to the broker; if one may be older than the ledger (Redis lost
    the record of it), the round of barriers under way is void and this worker's generation changes."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: object) -> None:
        if _connection["generation"] is None:
            _connection["generation"] = uuid.uuid4().hex

    def stop(self, parent: object) -> None:
        from celery.worker import state

        from conversations import cache, services

        held = [request for request in (*state.active_requests, *state.reserved_requests) if request.name in PERSIST_TASKS]
        seqs = [services.persist_oldest_seq(request.name, request.args) for request in held]
        if not held:
            return
        try:
            since = cache.ledger_since()
        except cache.CacheUnavailable:
            since = None  # cannot tell: taken as older
        oldest = min((seq for seq in seqs if seq is not None), default=None)
        if since is not None and oldest is not None and None not in seqs and oldest >= since:
            return  # every message it held is younger than the ledger: a resend finds its id in Redis
        _connection["generation"] = uuid.uuid4().hex
        services.ledger_disturbed_soon(why="worker_disconnected", oldest_seq=oldest if None not in seqs else None)

    shutdown = stop


@inspect_command()
def ledger_generation(state: object) -> dict[str, object]:
    """This worker's broker connection generation and the queues it consumes (see ``LedgerDisturbance``)."""
    task_consumer = getattr(getattr(state, "consumer", None), "task_consumer", None)
    queues = [queue.name for queue in getattr(task_consumer, "queues", None) or ()]
    return {"generation": _connection["generation"], "queues": queues}


app.steps["consumer"].add(LedgerDisturbance)


@signals.task_prerun.connect
@signals.task_postrun.connect
def recycle_database_connections(task: object = None, **kwargs: object) -> None:
    """Before and after each task, what Django does around each request: close a connection that is
    broken (PostgreSQL restarted) or older than ``CONN_MAX_AGE``, keep the others. A task run in
    place (``apply``) runs inside its caller's connection and transaction, so it is left alone."""
    from django.db import close_old_connections

    if not getattr(getattr(task, "request", None), "is_eager", False):
        close_old_connections()

"""The Celery app: configured from Django settings (``CELERY_`` namespace), JSON only."""

import os

from celery import Celery, bootsteps, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.local")

app = Celery("memoryproject")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


class LedgerDisturbance(bootsteps.StartStopStep):
    """Each time the worker's consumer starts (the worker started, or its broker connection came
    back), the persist messages it held before were handed back to the broker: the ledger of pending
    writes, if Redis lost it and it is not whole yet, needs a new barrier behind them."""

    requires = {"celery.worker.consumer.tasks:Tasks"}

    def start(self, parent: object) -> None:
        from conversations import services

        services.ledger_disturbed_soon(why="worker_connected")


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

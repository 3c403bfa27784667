"""The Celery app: configured from Django settings (``CELERY_`` namespace), JSON only."""

import os

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.local")

app = Celery("memoryproject")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@signals.task_prerun.connect
@signals.task_postrun.connect
def recycle_database_connections(task: object = None, **kwargs: object) -> None:
    """Before and after each task, what Django does around each request: close a connection that is
    broken (PostgreSQL restarted) or older than ``CONN_MAX_AGE``, keep the others. A task run in
    place (``apply``) runs inside its caller's connection and transaction, so it is left alone."""
    from django.db import close_old_connections

    if not getattr(getattr(task, "request", None), "is_eager", False):
        close_old_connections()

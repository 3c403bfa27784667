"""The Celery app: configured from Django settings (``CELERY_`` namespace), JSON only."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.local")

app = Celery("memoryproject")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

"""The periodic side of the store's TTL sweep (Celery beat, ``store-ttl-sweep``): idempotent, so
``acks_late``; retried only while PostgreSQL does not answer."""

from celery import shared_task
from django.db import OperationalError

from store import services


@shared_task(
    acks_late=True,
    name="store.tasks.store_sweep",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def store_sweep() -> int:
    return services.store_sweep()

"""The periodic side of the tenants' usage (Celery beat, ``usage-rollup``): each hour, yesterday's
messages and storage are measured for the tenants not yet rolled up for it. Idempotent, so
``acks_late``; retried only while PostgreSQL does not answer."""

from celery import shared_task
from django.db import OperationalError

from tenants import usage


@shared_task(
    acks_late=True,
    name="tenants.tasks.usage_rollup_due",
    autoretry_for=(OperationalError,),
    retry_backoff=True,
    max_retries=5,
)
def usage_rollup_due() -> int:
    return usage.usage_rollup_due()

"""Celery tasks of search: thin, idempotent, on the derived-memory queue.

A conversation erased meanwhile is no error (nothing to embed). Transient errors retry with backoff,
a bounded number of times; a vector that is still missing afterwards is found by the hourly backfill.
"""

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from conversations.services import derived_started
from search import services
from tenants.models import Tenant

TRANSIENT = (OperationalError, InterfaceError)


@shared_task(
    bind=True,
    acks_late=True,
    name=services.CONVERSATION_EMBED,
    autoretry_for=TRANSIENT,
    retry_backoff=True,
    retry_backoff_max=60,
    max_retries=8,
)
def conversation_embed(self: Task, tenant_id: int, conversation_id: str) -> int:
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return 0
    derived_started(tenant_slug=tenant.slug, conversation_id=conversation_id, task=self.name)
    return services.conversation_embed(tenant=tenant, conversation_id=conversation_id)


@shared_task(acks_late=True, name="search.tasks.embeddings_backfill", autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def embeddings_backfill() -> int:
    return services.embeddings_backfill()

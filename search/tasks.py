"""Celery tasks of search: thin, idempotent, on the derived-memory queue.

A conversation erased meanwhile is no error (nothing to embed). Transient database errors retry with
backoff, a bounded number of times; a vector that is still missing afterwards is found by the hourly
backfill. An embedding model that cannot answer now (a server down, slow, refusing) leaves the
conversation waiting (``services.embedding_wait``): ``embeddings_resume`` (scheduled by the wait itself,
and by beat every minute) queues it again once the server's breaker lets it be called.
"""

from celery import Task, shared_task
from django.db import InterfaceError, OperationalError

from conversations.services import derived_started
from search import embeddings, services
from search.embeddings import EmbeddingModelError
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
    try:
        return services.conversation_embed(tenant=tenant, conversation_id=conversation_id)
    except EmbeddingModelError as error:
        if not embeddings.served_remotely(tenant):
            raise  # a model of this process that cannot load: the task fails, and says so
        # The server is down, slow or refusing, or the tenant's configuration cannot work yet: the
        # messages keep waiting for their vector (found by their words meanwhile), and the sweep queues
        # them again once the server may be called. Never a dead letter: nothing was lost.
        retry_in = getattr(error, "retry_in", 0.0) or services.RESUME_AFTER_SECONDS
        services.embedding_wait(tenant=tenant, conversation_id=conversation_id, reason=str(error), retry_in=retry_in)
        return 0


@shared_task(acks_late=True, name=services.EMBEDDINGS_RESUME, autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def embeddings_resume() -> int:
    return services.embeddings_resume()


@shared_task(acks_late=True, name="search.tasks.embeddings_backfill", autoretry_for=TRANSIENT, retry_backoff=True, max_retries=3)
def embeddings_backfill() -> int:
    return services.embeddings_backfill()

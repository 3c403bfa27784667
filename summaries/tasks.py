"""Celery task of the summaries, on the derived-memory queue (``MEMORY_DERIVED_QUEUE``).

Published after every persisted batch with the tenant's id and the client's conversation id. It is
idempotent (one summary per conversation and pair count), so it is acknowledged only after it ran.
Transient database errors are retried with exponential backoff, ``MAX_RETRIES`` times; after that
the task gives up with an error in the log and loses nothing for good: a summary that is due stays
due, and the task published after the conversation's next persisted batch writes it. A model that
fails is not an error here: the summary falls back to the rule-based one.
"""

import random

import structlog
from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from conversations.services import derived_started
from summaries import services
from summaries.models import Summary
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

TRANSIENT = (OperationalError, InterfaceError)
MAX_RETRIES = 8


def _backoff(retries: int) -> float:
    # At least a second: on quorum queues a countdown waits in RabbitMQ's delay queues, which count
    # whole seconds, and Celery refuses one that rounds down to zero.
    return max(1.0, min(settings.MEMORY_RETRY_BACKOFF_MAX, 2**retries) * random.uniform(0.5, 1.0))


# max_retries on the task, not only on retry(): retry(max_retries=None) means Celery's default of 3.
# A retry names its queue: left to Celery it is published to the default queue, the persist queue.
@shared_task(bind=True, acks_late=True, max_retries=MAX_RETRIES, name="summaries.tasks.conversation_summarize")
def conversation_summarize(self: Task, tenant_id: int, conversation_id: str) -> int | None:
    """The id of the summary written, or None when none was due (or the tenant is gone)."""
    try:
        tenant = Tenant.objects.filter(pk=tenant_id).first()
        if tenant is None:
            logger.info("summary_skipped", tenant_id=tenant_id, conversation_id=conversation_id, reason="no_tenant")
            return None
        derived_started(tenant_slug=tenant.slug, conversation_id=conversation_id, task=self.name)
        summary: Summary | None = services.conversation_summarize(tenant=tenant, conversation_id=conversation_id)
    except TRANSIENT as error:
        if self.request.retries < MAX_RETRIES:
            logger.warning("task_retry", task=self.name, attempt=self.request.retries + 1, error=str(error))
            raise self.retry(exc=error, countdown=_backoff(self.request.retries), queue=settings.MEMORY_DERIVED_QUEUE) from error
        logger.error("summary_abandoned", tenant_id=tenant_id, conversation_id=conversation_id, error=str(error))
        return None
    return summary.pk if summary is not None else None

"""Celery tasks of the extraction, on the derived-memory queue (``MEMORY_DERIVED_QUEUE``); never on the
append path.

``conversation_extract`` is published after every persisted batch (with the embeddings and the
summaries) and by the quiet sweep; it does nothing unless the tenant extracts and a read is due
(``extraction.runs``). It is acknowledged only after it ran (``acks_late``), and every read it
applies is idempotent (the conversation's watermark), so a worker killed in the middle loses nothing
and repeats nothing: the message goes back to the queue and the next worker reads from the watermark.

A model that fails, times out or answers what cannot be applied is retried with exponential backoff
(``MEMORY_EXTRACTION_MAX_RETRIES`` times, at most ``MEMORY_RETRY_BACKOFF_MAX`` seconds apart); then the
read is recorded as a dead letter operators see (the admin, ``manage.py replay_dead_letters``) and the
conversation's later turns are read. Transient database errors are retried the same way.

``quiet_sweep`` (every minute, by beat) publishes a run for each conversation of an extracting
tenant that has been quiet for ``MEMORY_EXTRACTION_QUIET_SECONDS`` with turns not yet read.
"""

from __future__ import annotations

import random
from datetime import timedelta

import structlog
from celery import Task, shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError
from django.db.models import F, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from conversations.models import Conversation
from conversations.services import dead_letter_record, derived_started
from extraction import runs, selectors
from extraction.models import ExtractionWatermark
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

TRANSIENT = (OperationalError, InterfaceError)
NAME = "extraction.tasks.conversation_extract"
# Conversations the sweep publishes at most per tenant and minute, and how far back it looks.
SWEEP_BATCH = 500
SWEEP_HORIZON = timedelta(days=7)


def _backoff(retries: int) -> float:
    # At least a second: on quorum queues a countdown waits in RabbitMQ's delay queues, whole seconds.
    return max(1.0, min(settings.MEMORY_RETRY_BACKOFF_MAX, 2**retries) * random.uniform(0.5, 1.0))


# A retry names its queue: left to Celery it is published to the default queue, the persist queue.
@shared_task(bind=True, acks_late=True, max_retries=None, name=NAME)
def conversation_extract(
    self: Task,
    tenant_id: int,
    conversation_id: str,
    quiet: bool = False,
    after_seq: int | None = None,
    through_seq: int | None = None,
) -> dict[str, object] | None:
    """What the run did (``runs.RunResult`` as a dict), or None when the tenant is gone."""
    tenant = Tenant.objects.filter(pk=tenant_id).first()
    if tenant is None:
        return None
    if after_seq is None:
        derived_started(tenant_slug=tenant.slug, conversation_id=conversation_id, task=NAME)
    max_retries = settings.MEMORY_EXTRACTION_MAX_RETRIES
    try:
        result = runs.conversation_extract(
            tenant=tenant, conversation_id=conversation_id, quiet=quiet, after_seq=after_seq, through_seq=through_seq
        )
    except runs.ExtractionFailed as error:
        if self.request.retries < max_retries:
            logger.warning(
                "extraction_retry",
                tenant=tenant.slug,
                conversation_id=conversation_id,
                attempt=self.request.retries + 1,
                reason=error.reason,
                error=str(error),
            )
            raise self.retry(exc=error, countdown=_backoff(self.request.retries), queue=settings.MEMORY_DERIVED_QUEUE) from error
        dead_letter_record(
            task_name=NAME,
            payload={
                "tenant_id": tenant_id,
                "conversation_id": conversation_id,
                "after_seq": error.after_seq,
                "through_seq": error.through_seq,
            },
            error=f"{error.reason}: {error}",
            attempts=self.request.retries + 1,
        )
        runs.read_abandoned(tenant=tenant, conversation_id=conversation_id, through_seq=error.through_seq)
        return {"stopped": "dead_letter", "reason": error.reason}
    except TRANSIENT as error:
        if self.request.retries < max_retries:
            logger.warning("task_retry", task=self.name, attempt=self.request.retries + 1, error=str(error))
            raise self.retry(exc=error, countdown=_backoff(self.request.retries), queue=settings.MEMORY_DERIVED_QUEUE) from error
        logger.error("extraction_abandoned", tenant=tenant.slug, conversation_id=conversation_id, error=str(error))
        return None  # the turns stay unread: the quiet sweep publishes them again
    except Exception as error:  # a defect, not the model's: shown to operators as a dead letter, never lost silently
        logger.exception("extraction_failed", tenant=tenant.slug, conversation_id=conversation_id)
        dead_letter_record(
            task_name=NAME,
            payload={
                "tenant_id": tenant_id,
                "conversation_id": conversation_id,
                "after_seq": after_seq,
                "through_seq": through_seq,
            },
            error=f"error: {error!r}",
            attempts=self.request.retries + 1,
        )
        return {"stopped": "dead_letter", "reason": "error"}
    return {
        "stopped": result.stopped,
        "reads": result.reads,
        "turns": result.turns,
        "added": result.added,
        "updated": result.updated,
        "deleted": result.deleted,
        "merged": result.merged,
        "refused": len(result.refused),
    }


@shared_task(name="extraction.tasks.quiet_sweep")
def quiet_sweep() -> int:
    """Publish a run for the quiet conversations with unread turns of every extracting tenant. Returns how many."""
    published = 0
    now = timezone.now()
    for tenant in Tenant.objects.filter(active=True):
        quiet_seconds = int(tenant.setting("MEMORY_EXTRACTION_QUIET_SECONDS"))
        if quiet_seconds <= 0 or not selectors.extraction_status(tenant)["enabled"]:  # off, or no model that can be called
            continue
        if runs.over_daily_bounds(tenant):  # its unread turns wait for the next day, not counted again each minute
            continue
        read_through = (
            ExtractionWatermark.objects.for_tenant(tenant).filter(conversation=OuterRef("pk")).values("read_through_seq")[:1]
        )
        quiet = (
            Conversation.objects.for_tenant(tenant)
            .filter(updated_at__lt=now - timedelta(seconds=quiet_seconds), updated_at__gte=now - SWEEP_HORIZON)
            .exclude(user_id="")
            .annotate(read_through=Coalesce(Subquery(read_through), Value(0)))
            .filter(last_seq__gt=F("read_through"))
            .values_list("conversation_id", flat=True)[:SWEEP_BATCH]
        )
        for conversation_id in quiet:
            conversation_extract.apply_async(
                args=[tenant.pk, conversation_id], kwargs={"quiet": True}, queue=settings.MEMORY_DERIVED_QUEUE
            )
            published += 1
    if published:
        logger.info("extraction_quiet_sweep", published=published)
    return published

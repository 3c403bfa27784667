"""Writing embeddings: after a worker persists messages, and when a tenant changes model.

Contract
--------
* ``conversation_embed`` embeds every searchable message of a conversation that has no vector under
  the model yet, in batches of ``MEMORY_EMBEDDING_BATCH``. It is idempotent (the unique constraint
  and ``ignore_conflicts``), safe to run twice at once, and a message erased meanwhile is skipped.
* ``tenant_reembed`` computes every vector of a tenant under a model, then makes that model the
  tenant's and removes the vectors of any other. Search keeps answering throughout: until the switch
  it reads the old model's rows, after it the new.
* ``embeddings_backfill`` finds recently persisted messages that have no vector (a publish that
  failed, a worker that was down) and queues their conversations.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

import structlog
from celery import current_app
from django.conf import settings
from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, OuterRef, Subquery
from django.utils import timezone

from conversations.models import Conversation, Message
from core import redis_client
from search import coverage, embeddings, remote
from search.filters import SEARCHED_ROLES
from search.models import MessageEmbedding
from tenants.models import Tenant, tenant_choice_refusal

logger = structlog.get_logger(__name__)

# The task of ``search.tasks`` this module queues.
CONVERSATION_EMBED = "search.tasks.conversation_embed"


def _missing(*, tenant: Tenant, model: str):  # noqa: ANN202 - a queryset of messages
    # The vectors are asked with the tenant, so the anti-join reads the tenant's partition alone.
    vectors = MessageEmbedding.objects.for_tenant(tenant).filter(message=OuterRef("pk"), model=model)
    return Message.objects.for_tenant(tenant).filter(role__in=SEARCHED_ROLES).exclude(content="").exclude(Exists(vectors))


def conversation_embed(*, tenant: Tenant, conversation_id: str, model: str | None = None) -> int:
    """Embed what is missing of one conversation; returns the vectors written."""
    model = model if model is not None else tenant.setting("MEMORY_EMBEDDING_MODEL")
    if not model:
        return 0
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).only("pk").first()
    if conversation is None:
        return 0  # erased: nothing to embed
    return _embed(tenant=tenant, model=model, messages=_missing(tenant=tenant, model=model).filter(conversation=conversation))


def _embed(  # noqa: ANN001
    *, tenant: Tenant, model: str, messages, progress: Callable[[int], None] | None = None, stored_as: str | None = None
) -> int:
    """Embed ``messages`` with ``model``, the vectors stored under ``stored_as`` (default: the model's name)."""
    batch = remote.batch_size(tenant.setting("MEMORY_EMBEDDING_BATCH"))
    written = 0
    last_pk = 0
    while True:
        rows = list(
            messages.filter(pk__gt=last_pk)
            .order_by("pk")
            .only("pk", "conversation_id", "seq", "role", "content", "created_at", "metadata")[:batch]
        )
        if not rows:
            return written
        last_pk = rows[-1].pk
        spec = embeddings.model_spec(model)
        previous = _previous_turns(tenant=tenant, rows=rows) if spec.document == embeddings.EXCHANGE else {}
        texts = [
            embeddings.document_text(
                role=row.role,
                content=row.content,
                created_at=row.created_at,
                metadata=row.metadata,
                document=spec.document,
                previous=previous.get(row.pk),
            )
            for row in rows
        ]
        started = time.perf_counter()
        vectors = embeddings.embed_documents(model, texts, tenant=tenant)
        written += _store(
            tenant=tenant,
            model=stored_as or model,
            rows=rows,
            vectors=vectors,
            dimensions=None if spec.remote else spec.dimensions,
        )
        if spec.remote:
            _waiting_over(tenant)
        logger.info(
            "messages_embedded",
            tenant=tenant.slug,
            model=model,
            count=len(rows),
            milliseconds=round((time.perf_counter() - started) * 1000, 1),
        )
        if progress is not None:
            progress(len(rows))


def _store(*, tenant: Tenant, model: str, rows: list[Message], vectors, dimensions: int | None = None) -> int:  # noqa: ANN001
    """Store ``vectors`` of ``rows`` under ``model``. Their length must be ``dimensions`` (a model of known
    length, checked without a query), else that of the tenant's vectors already stored under ``model``."""
    if dimensions is None:
        dimensions = _stored_dimensions(tenant=tenant, model=model)
    if dimensions is not None and vectors.shape[1] != dimensions:
        raise embeddings.EmbeddingUnavailable(
            f"the model answered vectors of {vectors.shape[1]} dimensions where the tenant's vectors under {model} have "
            f"{dimensions}: they are never mixed. Re-index (manage.py reembed --tenant {tenant.slug} --reindex) to change "
            "the length, or set MEMORY_EMBEDDING_DIMENSIONS back."
        )
    objects = [
        MessageEmbedding(
            tenant=tenant,
            conversation_id=row.conversation_id,
            message_id=row.pk,
            seq=row.seq,
            model=model,
            dimensions=int(vector.shape[0]),
            vector=embeddings.to_bytes(vector),
        )
        for row, vector in zip(rows, vectors, strict=True)
    ]
    try:
        with transaction.atomic():
            _writing_vectors(tenant)
            MessageEmbedding.unscoped.bulk_create(objects, ignore_conflicts=True)  # this tenant's rows only
    except IntegrityError:
        # A message was erased after it was read: keep the vectors of those that still exist.
        alive = set(Message.objects.for_tenant(tenant).filter(pk__in=[row.pk for row in rows]).values_list("pk", flat=True))
        objects = [item for item in objects if item.message_id in alive]
        with transaction.atomic():
            _writing_vectors(tenant)
            MessageEmbedding.unscoped.bulk_create(objects, ignore_conflicts=True)  # this tenant's rows only
    return len(objects)


def _stored_dimensions(*, tenant: Tenant, model: str) -> int | None:
    """The length of the tenant's vectors stored under ``model`` (None: none stored yet), one index probe."""
    found = MessageEmbedding.objects.for_tenant(tenant).filter(model=model).values_list("dimensions", flat=True)[:1]
    return next(iter(found), None)


# The transaction-scoped advisory lock of a tenant's vectors (class, tenant): every write of vectors
# takes it shared, a re-index's swap exclusive, so no vector is written under the old index's name
# between the swap's catch-up and its commit.
VECTORS_LOCK = 0x5EC7


def _writing_vectors(tenant: Tenant, *, exclusive: bool = False) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT pg_advisory_xact_lock{'' if exclusive else '_shared'}(%s, %s)", [VECTORS_LOCK, tenant.pk])


def _previous_turns(*, tenant: Tenant, rows: list[Message]) -> dict[int, tuple[str, str]]:
    """For each message, who said the searched turn before it in its conversation, and what."""
    before = (
        Message.objects.for_tenant(tenant)
        .filter(conversation=OuterRef("conversation"), seq__lt=OuterRef("seq"), role__in=SEARCHED_ROLES)
        .order_by("-seq")
    )
    found = (
        Message.objects.for_tenant(tenant)
        .filter(pk__in=[row.pk for row in rows])
        .annotate(previous_pk=Subquery(before.values("pk")[:1]))
        .values_list("pk", "previous_pk")
    )
    previous_of = {pk: previous_pk for pk, previous_pk in found if previous_pk is not None}
    said = {
        row.pk: (embeddings.speaker_of(row.role, row.metadata), row.content)
        for row in Message.objects.for_tenant(tenant).filter(pk__in=set(previous_of.values())).only("role", "content", "metadata")
    }
    return {pk: said[previous_pk] for pk, previous_pk in previous_of.items() if previous_pk in said}


@dataclass(frozen=True)
class ReembedSummary:
    model: str
    embedded: int
    removed: int
    seconds: float


def tenant_reembed(
    *, tenant: Tenant, model: str, conversation_id: str | None = None, progress: Callable[[int], None] | None = None
) -> ReembedSummary:
    """Embed the whole tenant (or one conversation) under ``model``; for the whole tenant, switch it to
    that model and drop the vectors of any other. The switch is a tenant override, so ``model`` is one a
    tenant may choose (a name the deployment offers), or the deployment's own, which clears the override."""
    embeddings.model_spec(model)  # an unknown name fails before any work
    switching = conversation_id is None and model != settings.MEMORY_EMBEDDING_MODEL
    refusal = tenant_choice_refusal("MEMORY_EMBEDDING_MODEL", model) if switching else None
    if refusal:
        raise embeddings.EmbeddingModelError(refusal)
    started = time.perf_counter()
    messages = _missing(tenant=tenant, model=model)
    if conversation_id is not None:
        messages = messages.filter(conversation__conversation_id=conversation_id)
    embedded = _embed(tenant=tenant, model=model, messages=messages, progress=progress)
    removed = 0
    if conversation_id is None:
        with transaction.atomic():
            # No vector is written while the tenant switches: the messages persisted while the others were
            # embedded (their vectors written under the old model) are embedded under the new one here, so
            # the first search after the switch reads every message's vector, of one model.
            _writing_vectors(tenant, exclusive=True)
            embedded += _embed(tenant=tenant, model=model, messages=_missing(tenant=tenant, model=model))
            tenant.refresh_from_db(fields=["settings"])
            tenant.settings = {name: value for name, value in tenant.settings.items() if name != "MEMORY_EMBEDDING_MODEL"}
            if switching:
                tenant.settings["MEMORY_EMBEDDING_MODEL"] = model
            tenant.save(update_fields=["settings"])
            removed = MessageEmbedding.objects.for_tenant(tenant).exclude(model=model).delete()[0]
    logger.info("tenant_reembedded", tenant=tenant.slug, model=model, embedded=embedded, removed=removed)
    return ReembedSummary(model=model, embedded=embedded, removed=removed, seconds=time.perf_counter() - started)


def reindex_name(model: str) -> str:
    """Where a re-index writes its new vectors: a name no search reads."""
    return f"{model}#reindex"


def tenant_reindex(*, tenant: Tenant, progress: Callable[[int], None] | None = None) -> ReembedSummary:
    """Embed every searchable message of the tenant again under its model, as the indexing reads it now,
    without stopping search: the new vectors are written under ``reindex_name`` (no search reads it),
    then one transaction, holding the tenant's vectors lock exclusive, embeds what was persisted
    meanwhile, drops the old vectors and names the new ones the model's. Searches read either the old
    vectors or the new, never both (``search.vectors``). Vectors a stopped run wrote are reused."""
    model = tenant.setting("MEMORY_EMBEDDING_MODEL")
    if not model:
        raise embeddings.EmbeddingModelError(f"Tenant {tenant.slug} has embeddings turned off (MEMORY_EMBEDDING_MODEL is empty).")
    embeddings.model_spec(model)
    staging = reindex_name(model)
    started = time.perf_counter()
    embedded = _embed(
        tenant=tenant, model=model, messages=_missing(tenant=tenant, model=staging), progress=progress, stored_as=staging
    )
    with transaction.atomic():
        _writing_vectors(tenant, exclusive=True)
        embedded += _embed(tenant=tenant, model=model, messages=_missing(tenant=tenant, model=staging), stored_as=staging)
        vectors = MessageEmbedding.objects.for_tenant(tenant)
        removed = vectors.filter(model=model).delete()[0]
        vectors.filter(model=staging).update(model=model)
    logger.info("tenant_reindexed", tenant=tenant.slug, model=model, embedded=embedded, replaced=removed)
    return ReembedSummary(model=model, embedded=embedded, removed=removed, seconds=time.perf_counter() - started)


def reindex_pending_count(*, tenant: Tenant) -> int:
    model = tenant.setting("MEMORY_EMBEDDING_MODEL")
    return _missing(tenant=tenant, model=reindex_name(model)).count() if model else 0


def reembed_pending_count(*, tenant: Tenant, model: str, conversation_id: str | None = None) -> int:
    messages = _missing(tenant=tenant, model=model)
    if conversation_id is not None:
        messages = messages.filter(conversation__conversation_id=conversation_id)
    return messages.count()


def embeddings_backfill(*, within: timedelta = timedelta(days=1)) -> int:
    """Queue every conversation with a recently persisted message that has no vector; returns how many.
    The task is named (``search.tasks`` calls this module, never the other way round)."""
    queued = 0
    since = timezone.now() - within
    for tenant in Tenant.objects.filter(active=True):
        model = tenant.setting("MEMORY_EMBEDDING_MODEL")
        if not model:
            continue
        conversation_ids = (
            _missing(tenant=tenant, model=model)
            .filter(persisted_at__gte=since)
            .values_list("conversation__conversation_id", flat=True)
            .distinct()
        )
        for conversation_id in conversation_ids:
            current_app.send_task(CONVERSATION_EMBED, args=[tenant.pk, conversation_id], queue=settings.MEMORY_DERIVED_QUEUE)
            queued += 1
    return queued


# --- Messages waiting for an embedding server --------------------------------------------------------

# The conversations whose messages wait for a vector because the tenant's embedding server could not
# give it (``coverage.WAITING_KEY``: a sorted set of "tenant pk:conversation id", scored by when each
# began to wait), and per tenant why. Redis holds them so that a sweep can queue the conversations again
# the moment the server's breaker closes; if Redis loses them, the hourly backfill still finds every
# message without a vector.
WAITING_KEY = coverage.WAITING_KEY
# Conversations queued again per sweep at most (the rest wait for the next sweep).
RESUME_BATCH = 1000


# At most one resume is waiting to run (this key, expiring when it runs): beat's sweep runs every few
# seconds, and a deployment without beat still resumes, as the waits schedule it themselves.
RESUME_SCHEDULED_KEY = "memory:embeddings:resume-scheduled"
RESUME_AFTER_SECONDS = 10.0
EMBEDDINGS_RESUME = "search.tasks.embeddings_resume"


def embedding_wait(*, tenant: Tenant, conversation_id: str, reason: str, retry_in: float = RESUME_AFTER_SECONDS) -> None:
    """Note that a conversation's messages wait for the tenant's embedding server, and that a resume
    runs once the server may be called again (in ``retry_in`` seconds)."""
    logger.info("embeddings_waiting", tenant=tenant.slug, conversation_id=conversation_id, reason=reason)
    try:
        pipeline = redis_client.client().pipeline(transaction=False)
        pipeline.zadd(WAITING_KEY, {f"{tenant.pk}:{conversation_id}": time.time()}, nx=True)
        pipeline.set(f"{coverage.WAITING_REASON_PREFIX}{tenant.pk}", reason[:300], ex=coverage.WAITING_REASON_SECONDS)
        redis_client.call("embedding_wait", tenant.slug, pipeline.execute)
    except redis_client.CacheUnavailable:
        return  # the hourly backfill finds them
    _resume_later(retry_in)


def _resume_later(seconds: float) -> None:
    """Queue one resume to run in ``seconds`` unless one is already waiting to run."""
    seconds = max(1.0, seconds)
    try:
        scheduled = redis_client.call(
            "embedding_resume_schedule", "", redis_client.client().set, RESUME_SCHEDULED_KEY, "1", nx=True, px=int(seconds * 1000)
        )
    except redis_client.CacheUnavailable:
        return
    if scheduled:
        current_app.send_task(EMBEDDINGS_RESUME, countdown=seconds, queue=settings.MEMORY_DERIVED_QUEUE)


def _waiting_over(tenant: Tenant) -> None:
    """The tenant's server embedded a batch: what it said when it failed no longer holds."""
    try:
        redis_client.call(
            "embedding_waiting_over", tenant.slug, redis_client.client().delete, f"{coverage.WAITING_REASON_PREFIX}{tenant.pk}"
        )
    except redis_client.CacheUnavailable:
        pass


def embeddings_resume() -> int:
    """Queue again the waiting conversations of every tenant whose embedding server may be called
    (its breaker closed); returns how many were queued."""
    try:
        pipeline = redis_client.client().pipeline(transaction=False)
        pipeline.delete(RESUME_SCHEDULED_KEY)  # the one scheduled is this one: the next may be scheduled
        pipeline.zrange(WAITING_KEY, 0, RESUME_BATCH - 1)
        _, members = redis_client.call("embedding_resume", "", pipeline.execute)
    except redis_client.CacheUnavailable:
        return 0
    by_tenant: dict[int, list[str]] = {}
    for member in members:
        tenant_pk, _, conversation_id = (member.decode() if isinstance(member, bytes) else member).partition(":")
        by_tenant.setdefault(int(tenant_pk), []).append(conversation_id)
    queued = 0
    still_waiting = False
    tenants = list(Tenant.objects.filter(pk__in=by_tenant))
    for tenant in tenants:
        conversation_ids = by_tenant[tenant.pk]
        if embeddings.server_blocked(tenant) is not None:
            still_waiting = True
            continue
        try:
            redis_client.call(
                "embedding_resume",
                tenant.slug,
                redis_client.client().zrem,
                WAITING_KEY,
                *[f"{tenant.pk}:{item}" for item in conversation_ids],
            )
        except redis_client.CacheUnavailable:
            return queued
        for conversation_id in conversation_ids:
            current_app.send_task(CONVERSATION_EMBED, args=[tenant.pk, conversation_id], queue=settings.MEMORY_DERIVED_QUEUE)
            queued += 1
    gone = set(by_tenant) - {tenant.pk for tenant in tenants}
    for tenant_pk in gone:  # deleted tenants wait for nothing
        redis_client.call(
            "embedding_resume",
            "",
            redis_client.client().zrem,
            WAITING_KEY,
            *[f"{tenant_pk}:{item}" for item in by_tenant[tenant_pk]],
        )
    if queued:
        logger.info("embeddings_resumed", conversations=queued)
    if still_waiting or len(members) == RESUME_BATCH:
        _resume_later(RESUME_AFTER_SECONDS)
    return queued

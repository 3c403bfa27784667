"""How much of a history search covers: the messages persisted but not embedded yet, and those
appended but not persisted yet.

Contract
--------
* ``conversation_coverage(tenant=, conversation=)`` and ``user_coverage(tenant=, user_id=)`` answer a
  ``SearchCoverage``. ``messages`` counts the persisted messages the embedder embeds (user and
  assistant messages with content, archived or not: ``search.services._missing`` skips the rest),
  ``embedded`` those with a vector under the tenant's current model, ``pending_persist`` the writes
  acknowledged but still pending in Redis (any role; None when Redis does not answer).
  ``searchable`` is true once there is something to search and every message appended so far is
  persisted and embedded: a client that loaded a history polls until it is. When it is false,
  ``reason`` says why, as a code a client acts on (``REASONS``): wait and poll again
  (``pending_persist``, ``not_embedded``), poll slowly while the tenant's embedding server cannot be
  called (``embedding_unavailable``, ``embedding_waiting`` saying why: its breaker is open, or its
  configuration cannot work), retry later (``pending_unknown``), or stop polling until
  it appends something (``no_messages``: none appended, all erased, or only system, tool and empty
  messages, which are never searched). A tenant without an embedding model searches by words only,
  so nothing awaits a vector there.
* ``embedding_backlog()`` answers, per active tenant with a model, the messages persisted within the
  backfill's window that have no vector and the persist time of the oldest: what ``/metrics`` shows
  as the derived queue's lag. Older ones are left to ``manage.py reembed``, as the backfill leaves them.

Every count is one index-backed query: the user's conversations (``conversation_user_recent``), their
messages (``message_by_date``), an anti-join on the vectors' unique (message, model, tenant) index.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

import redis
import structlog
from django.db.models import Count, Exists, FilteredRelation, Min, OuterRef, Q, QuerySet
from django.utils import timezone

from conversations import cache
from conversations.models import Conversation, Message
from core import redis_client
from search import embeddings
from search.filters import SEARCHED_ROLES
from search.models import MessageEmbedding
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

# The persisted messages the backlog looks at: the backfill's window (search.services.embeddings_backfill).
BACKLOG_WINDOW = timedelta(days=1)


# Why a history is not searchable (``SearchCoverage.reason``), in the order they are told: each
# code with what a client does about it (the API's help text).
REASONS = {
    "pending_unknown": "the cache does not answer, so the writes not persisted yet are unknown: ask again later",
    "pending_persist": "messages were acknowledged but not persisted yet: poll until they are",
    "embedding_unavailable": "persisted messages wait for their vector because the embedding server cannot give it now "
    "(embedding_waiting says why; found by their words already): they are embedded once it answers, so poll, slowly",
    "not_embedded": "persisted messages wait for their vector (found by their words already): poll until embedded",
    "no_messages": "there is nothing to search: no user or assistant message with content was appended (or every "
    "one was erased); append messages before polling",
}


@dataclass(frozen=True)
class SearchCoverage:
    embedding_model: str | None
    messages: int
    embedded: int
    not_embedded: int
    pending_persist: int | None
    oldest_not_embedded_at: datetime | None
    # Why messages wait for their vector beyond the worker's pace: the tenant's embedding server cannot
    # be called now (its breaker is open, or its configuration cannot work); None: nothing stops it.
    embedding_waiting: str | None = None

    @property
    def reason(self) -> str | None:
        """Why search does not cover the history now (a key of ``REASONS``); None: it does."""
        if self.pending_persist is None:
            return "pending_unknown"
        if self.pending_persist:
            return "pending_persist"
        if self.not_embedded:
            return "embedding_unavailable" if self.embedding_waiting else "not_embedded"
        if not self.messages:
            return "no_messages"
        return None

    @property
    def searchable(self) -> bool:
        """There is something to search, and every message appended so far is persisted and embedded
        (unknown while Redis is down: false)."""
        return self.reason is None


@dataclass(frozen=True)
class TenantBacklog:
    tenant: str
    not_embedded: int
    oldest_persisted_at: datetime | None


def conversation_coverage(*, tenant: Tenant, conversation: Conversation) -> SearchCoverage:
    messages = Message.objects.for_tenant(tenant).filter(conversation=conversation)
    return _coverage(tenant=tenant, messages=messages, conversation_ids=[conversation.conversation_id])


def user_coverage(*, tenant: Tenant, user_id: str) -> SearchCoverage:
    conversations = Conversation.objects.for_tenant(tenant).filter(user_id=user_id)
    messages = Message.objects.for_tenant(tenant).filter(conversation__in=conversations.values("pk"))
    conversation_ids = list(conversations.values_list("conversation_id", flat=True))
    return _coverage(tenant=tenant, messages=messages, conversation_ids=conversation_ids)


def embedding_backlog(*, within: timedelta = BACKLOG_WINDOW) -> list[TenantBacklog]:
    since = timezone.now() - within
    backlog = []
    for tenant in Tenant.objects.filter(active=True).order_by("slug"):
        model = tenant.setting("MEMORY_EMBEDDING_MODEL")
        if not model:
            continue
        recent = _searched(Message.objects.for_tenant(tenant).filter(persisted_at__gte=since))
        figures = recent.exclude(Exists(_vectors(tenant=tenant, model=model))).aggregate(
            not_embedded=Count("pk"), oldest=Min("persisted_at")
        )
        backlog.append(
            TenantBacklog(tenant=tenant.slug, not_embedded=figures["not_embedded"], oldest_persisted_at=figures["oldest"])
        )
    return backlog


def _coverage(*, tenant: Tenant, messages: QuerySet[Message], conversation_ids: list[str]) -> SearchCoverage:
    model = tenant.setting("MEMORY_EMBEDDING_MODEL") or None
    messages = _searched(messages)
    if model is None:
        figures = {"messages": messages.count(), "embedded": 0, "oldest": None}
    else:
        # One pass: each message joined to its vector under the model, if any (unique per message and
        # model), in the tenant's partition of the vectors.
        vector = FilteredRelation("embeddings", condition=Q(embeddings__model=model, embeddings__tenant=tenant))
        figures = messages.annotate(vector=vector).aggregate(
            messages=Count("pk"),
            embedded=Count("vector"),
            oldest=Min("persisted_at", filter=Q(vector__isnull=True)),
        )
    return SearchCoverage(
        embedding_model=model,
        messages=figures["messages"],
        embedded=figures["embedded"],
        not_embedded=0 if model is None else figures["messages"] - figures["embedded"],
        pending_persist=_pending_persist(tenant=tenant, conversation_ids=conversation_ids),
        oldest_not_embedded_at=figures["oldest"],
        embedding_waiting=embeddings.server_blocked(tenant)
        if model is not None and figures["messages"] > figures["embedded"]
        else None,
    )


# What waits for the tenants' embedding servers (``search.services.embedding_wait``): the conversations,
# and per tenant why, until a batch of its messages is embedded again.
WAITING_KEY = "memory:embeddings:waiting"
WAITING_REASON_PREFIX = "memory:embeddings:why:"
WAITING_REASON_SECONDS = 7 * 86_400


def waiting_reason(tenant: Tenant) -> str | None:
    """Why the tenant's messages wait for their vector: its embedding server's breaker is open, its
    configuration cannot work, or its last call failed and no call has succeeded since; None: none of these."""
    blocked = embeddings.server_blocked(tenant)
    if blocked is not None or not embeddings.served_remotely(tenant):
        return blocked
    try:
        found = redis_client.call(
            "embedding_waiting", tenant.slug, redis_client.client().get, f"{WAITING_REASON_PREFIX}{tenant.pk}"
        )
    except redis_client.CacheUnavailable:
        return None
    return f"the embedding server's last call failed ({found.decode() if isinstance(found, bytes) else found})" if found else None


def _searched(messages: QuerySet[Message]) -> QuerySet[Message]:
    """The messages the embedder embeds (``search.services._missing`` without the vector test)."""
    return messages.filter(role__in=SEARCHED_ROLES).exclude(content="")


def _vectors(*, tenant: Tenant, model: str) -> QuerySet[MessageEmbedding]:
    return MessageEmbedding.objects.for_tenant(tenant).filter(message=OuterRef("pk"), model=model)


def _pending_persist(*, tenant: Tenant, conversation_ids: list[str]) -> int | None:
    """The writes acknowledged but not persisted yet: the size of each conversation's pending hash."""
    if not conversation_ids:
        return 0
    try:
        pipeline = cache.client().pipeline(transaction=False)
        for conversation_id in conversation_ids:
            pipeline.hlen(cache.ConversationKeys.of(tenant.slug, conversation_id).pending)
        return sum(pipeline.execute())
    except redis.RedisError as error:
        logger.warning("search_coverage_pending_unknown", tenant=tenant.slug, error=str(error)[:200])
        return None

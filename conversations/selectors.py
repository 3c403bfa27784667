"""Reads: the window (the read path), conversations, one message, the memory document, status.

The window is served from the cached list when it can answer exactly; otherwise from PostgreSQL
merged with the writes still pending in Redis, so that the answer is the same whether the cache
is warm, cold or down. On a miss, one reader per conversation rebuilds the list (the others read
PostgreSQL and do not wait).
"""

import logging
import secrets
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from celery import current_app
from django.conf import settings
from django.contrib.postgres.search import SearchQuery
from django.db import DatabaseError, connection
from django.db.models import QuerySet
from prometheus_client.core import GaugeMetricFamily, Metric

from conversations import cache, context, metrics, services
from conversations.models import CONTENT_WORDS, CacheRepair, Conversation, Message
from core.exceptions import NotFound, ServiceUnavailable
from core.metrics import fallbacks, registry
from core.replica import stale_read, stale_reads_allowed
from tenants.models import Tenant

logger = structlog.get_logger(__name__)
# What decides whether ``logger.debug`` emits (structlog filters by this logger's level): asked first on
# the hot path, where an event that is dropped would still go through the processors before the filter.
_stdlib_logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowQuery:
    limit: int
    skip: int = 0
    role: str | None = None
    start_date: datetime | None = None
    end_date: datetime | None = None
    include_archived: bool = False

    @property
    def filtered(self) -> bool:
        return bool(self.role or self.start_date or self.end_date)

    def matches(self, message: dict[str, Any]) -> bool:
        if self.role and message["role"] != self.role:
            return False
        created_at = datetime.fromisoformat(message["created_at"])
        if self.start_date and created_at < self.start_date:
            return False
        return not (self.end_date and created_at > self.end_date)

    def page(self, ordered: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Newest ``limit`` after skipping the newest ``skip`` matches, returned oldest first."""
        matching = [message for message in ordered if self.matches(message)] if self.filtered else ordered
        end = len(matching) - self.skip
        return matching[max(0, end - self.limit) : max(0, end)]


class Window:
    """A page of messages, oldest first, and where it came from (cache, rebuild, database).

    A page the cache answered unfiltered keeps its messages as the JSON the cache holds
    (``elements``) and decodes them only when ``messages`` is read: an API answer sends that JSON
    as it is."""

    __slots__ = ("source", "elements", "_messages")

    def __init__(self, *, source: str, messages: list[dict[str, Any]] | None = None, elements: list[bytes] | None = None):
        if (messages is None) == (elements is None):
            raise TypeError("A window is given its messages or their cached JSON, one of the two.")
        self.source = source
        self.elements = elements
        self._messages = messages

    @property
    def messages(self) -> list[dict[str, Any]]:
        if self._messages is None:
            self._messages = cache.decode_elements(self.elements)
        return self._messages


def window_reads(*, tenant: Tenant, conversation_id: str, query: WindowQuery) -> list[tuple[Any, ...]]:
    """The Redis read ``conversation_window`` begins with, when it begins with one (an unfiltered
    window of the cache): the read an API request may have sent with its key's (``tenants.piggyback``)."""
    if query.include_archived or query.filtered:
        return []
    return [cache.window_command(tenant_slug=tenant.slug, conversation_id=conversation_id, count=query.skip + query.limit)]


def conversation_window(
    *, tenant: Tenant, conversation_id: str, query: WindowQuery, answered: dict[tuple[Any, ...], Any] | None = None
) -> Window:
    """The page ``query`` asks for; ``answered`` may hold the answer to ``window_reads`` already."""
    if query.include_archived:
        return _window_from_database(tenant=tenant, conversation_id=conversation_id, query=query, with_pending=True)
    filtered = query.filtered
    wanted = settings.MEMORY_CACHE_LIST_LIMIT + 1 if filtered else query.skip + query.limit
    token = secrets.token_hex(16)
    try:
        found = cache.window_or_rebuild_lock(
            tenant_slug=tenant.slug, conversation_id=conversation_id, count=wanted, token=token, answered=answered
        )
    except cache.CacheUnavailable:
        metrics.track_cache(tenant=tenant.slug, data_type="messages", hit=None)
        fallbacks.labels(kind="read_without_cache").inc()
        logger.warning("window_cache_unavailable", tenant=tenant.slug, conversation_id=conversation_id)
        return _window_from_database(tenant=tenant, conversation_id=conversation_id, query=query, with_pending=False)
    if isinstance(found, cache.WindowMiss):
        metrics.track_cache(tenant=tenant.slug, data_type="messages", hit=False)
        # A miss: the same script took the rebuild lock for this reader (unless another reader holds
        # it) and read the snapshot. Cache what the read needs: an unfiltered read needs only its page
        # (a cold read stays one short indexed query); a filtered one, all.
        if found.locked:
            rebuilt = _rebuild_locked(
                tenant=tenant,
                conversation_id=conversation_id,
                limit=settings.MEMORY_CACHE_LIST_LIMIT if filtered else wanted,
                snapshot=found.snapshot,
                token=token,
            )
            window = _rebuilt_window(rebuilt, conversation_id=conversation_id, query=query, wanted=wanted)
            if window is not None:
                return window
        # Another reader is rebuilding, or the rebuild cannot answer: PostgreSQL plus the pending
        # writes the snapshot read before it.
        return _window_from_database(
            tenant=tenant, conversation_id=conversation_id, query=query, with_pending=True, pending=found.snapshot.pending
        )
    if found.complete or (not filtered and len(found.elements) >= wanted):
        metrics.track_cache(tenant=tenant.slug, data_type="messages", hit=True)
        if _debug_enabled():
            logger.debug("context_loaded_from_cache", tenant=tenant.slug, conversation_id=conversation_id)
        if filtered:
            return Window(messages=query.page(found.messages), source="cache")
        return Window(elements=query.page(found.elements), source="cache")
    metrics.track_cache(tenant=tenant.slug, data_type="messages", hit=False)
    # A partial list too short for this page: an unfiltered read rebuilds it as deep as the page.
    if not filtered and wanted <= settings.MEMORY_CACHE_LIST_LIMIT:
        rebuilt = _rebuild_once(tenant=tenant, conversation_id=conversation_id, limit=wanted)
        window = _rebuilt_window(rebuilt, conversation_id=conversation_id, query=query, wanted=wanted)
        if window is not None:
            return window
    # A partial list cannot answer this query: PostgreSQL plus what is still pending.
    return _window_from_database(tenant=tenant, conversation_id=conversation_id, query=query, with_pending=True)


def _debug_enabled() -> bool:
    return _stdlib_logger.isEnabledFor(logging.DEBUG)


def _rebuilt_window(
    rebuilt: services.RebuildResult | None, *, conversation_id: str, query: WindowQuery, wanted: int
) -> Window | None:
    """The page from a rebuild, when the rebuilt list holds it; None when the database must answer."""
    if rebuilt is None:
        return None
    if not rebuilt.exists:
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    if rebuilt.complete or (not query.filtered and len(rebuilt.messages) >= wanted):
        return Window(messages=query.page(rebuilt.messages), source="rebuild")
    return None


def _rebuild_once(*, tenant: Tenant, conversation_id: str, limit: int) -> services.RebuildResult | None:
    """Rebuild (the newest ``limit`` messages) if no other reader is rebuilding this conversation; None if one is."""
    token = secrets.token_hex(16)
    try:
        if not cache.try_lock_rebuild(tenant_slug=tenant.slug, conversation_id=conversation_id, token=token):
            return None
    except cache.CacheUnavailable:
        return None
    return _rebuild_locked(tenant=tenant, conversation_id=conversation_id, limit=limit, snapshot=None, token=token)


def _rebuild_locked(
    *, tenant: Tenant, conversation_id: str, limit: int, snapshot: cache.Snapshot | None, token: str
) -> services.RebuildResult | None:
    """Rebuild under the rebuild lock held with ``token``: the rebuild's install releases it (on the
    background install thread: the reader answers from the rows it read without waiting for Redis),
    and a rebuild that fails on the way releases it here. None when Redis failed."""
    rebuilt = None
    try:
        if snapshot is None:  # the pending writes first, then how far the replica must have replayed
            snapshot = cache.snapshot(tenant_slug=tenant.slug, conversation_id=conversation_id)
        # The rows may come from the replica, once it has replayed every write committed before this
        # read began (read-your-writes with Redis emptied: core/replica.py).
        rebuilt = stale_read(
            lambda: services.cache_rebuild(
                tenant=tenant, conversation_id=conversation_id, limit=limit, snapshot=snapshot, rebuild_token=token, later=True
            ),
            read_your_writes=True,
        )
    except cache.CacheUnavailable:
        return None
    except DatabaseError as error:
        raise _database_unavailable() from error
    finally:
        if rebuilt is None:
            try:
                cache.unlock_rebuild(tenant_slug=tenant.slug, conversation_id=conversation_id, token=token)
            except cache.CacheUnavailable:
                pass  # the lock expires after MEMORY_REBUILD_LOCK_TTL
    return rebuilt


def _window_from_database(
    *,
    tenant: Tenant,
    conversation_id: str,
    query: WindowQuery,
    with_pending: bool,
    pending: list[dict[str, Any]] | None = None,
) -> Window:
    """The page from PostgreSQL, merged ``with_pending`` with the writes still pending in Redis: read
    here before the rows, or given as ``pending`` by a caller that read them already (before the rows
    too, so that a write persisted in between is in the rows)."""
    if not with_pending:
        pending = []
    elif pending is None:
        try:
            pending = cache.pending(tenant_slug=tenant.slug, conversation_id=conversation_id)
        except cache.CacheUnavailable:
            fallbacks.labels(kind="read_without_cache").inc()
            pending = []
    try:
        rows = _filtered_rows(tenant=tenant, conversation_id=conversation_id, query=query)
        if (
            not rows
            and not pending
            and not Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).exists()
        ):
            raise NotFound(f"Conversation {conversation_id} does not exist.")
    except DatabaseError as error:
        raise _database_unavailable() from error
    if pending and query.filtered:
        pending = [m for m in pending if query.matches(m)]
    merged = services.merge_messages(rows, pending)
    return Window(messages=query.page(merged), source="database")


# Read after the pending writes: on the replica once it has replayed every write committed before the read began.
@stale_reads_allowed(read_your_writes=True)
def _filtered_rows(*, tenant: Tenant, conversation_id: str, query: WindowQuery) -> list[dict[str, Any]]:
    """The newest rows the query can show (``skip + limit`` of those it matches), oldest first."""
    return services.conversation_messages(
        tenant=tenant,
        conversation_id=conversation_id,
        limit=query.skip + query.limit,
        include_archived=query.include_archived,
        role=query.role,
        start_date=query.start_date,
        end_date=query.end_date,
    )


def _database_unavailable() -> ServiceUnavailable:
    fallbacks.labels(kind="read_unavailable").inc()
    return ServiceUnavailable(
        "PostgreSQL is unreachable and this conversation is not cached; retry shortly.", code="database_unavailable"
    )


# --- What the LLM is sent: the LLM window and the context ----------------------------------------


def conversation_llm_window(*, tenant: Tenant, conversation_id: str, limit: int, format: str) -> Window:
    """``get_window_for_llm``: the newest ``limit`` messages in an LLM format, starting at a
    turn, or inside a turn longer than the page at an assistant message, with tool sequences repaired
    (``context.llm_window``)."""
    window = conversation_window(tenant=tenant, conversation_id=conversation_id, query=WindowQuery(limit=limit))
    messages = context.llm_window(window.messages, complete=len(window.messages) < limit)  # a full page may begin inside a turn
    return Window(messages=[context.render_message(message, format) for message in messages], source=window.source)


# What long-term memory adds to a context (``memory.context``): given the history (the current message
# left out), the request and the current message's id, it answers the memory bundle, the prompt
# rendered from it and the request whose system prompt carries it.
MemoryAddition = Callable[..., tuple[dict[str, Any], str, context.ContextRequest]]


def conversation_context(
    *,
    tenant: Tenant,
    conversation_id: str,
    request: context.ContextRequest,
    memory: MemoryAddition | None = None,
) -> dict[str, Any]:
    """``build_agent_context``: the messages to send and what they were built from.

    Served from the context cache while the conversation has not changed since it was built (its
    version guards the entry); otherwise built from the window and cached. With ``memory`` (the
    long-term memory of ``memory.context``: summaries, the user's facts, the older messages relevant
    to the query) the system message carries what it adds and the answer its bundle and prompt;
    facts change without the conversation changing, so such a context is never served from the cache.
    """
    return _context(tenant=tenant, conversation_id=conversation_id, request=request, memory=memory)


def _context(
    *, tenant: Tenant, conversation_id: str, request: context.ContextRequest, memory: MemoryAddition | None = None
) -> dict[str, Any]:
    parameters = {"conversation_id": conversation_id, **request.__dict__}
    version = None
    if memory is None:  # facts change without the conversation changing: a context with memory is never cached
        try:
            cached = cache.get_context(tenant_slug=tenant.slug, conversation_id=conversation_id, parameters=parameters)
            metrics.track_cache(tenant=tenant.slug, data_type="context", hit=cached.context is not None)
            if cached.context is not None:
                logger.debug("context_loaded_from_cache", tenant=tenant.slug, conversation_id=conversation_id)
                return cached.context | {"cached": True}
            version = cached.version
        except cache.CacheUnavailable:
            metrics.track_cache(tenant=tenant.slug, data_type="context", hit=None)
    turns_wanted = request.short_term_turns + request.long_term_turns
    history, older_turns, source = _context_history(tenant=tenant, conversation_id=conversation_id, turns_wanted=turns_wanted)
    current = None
    if request.query is not None and history and history[-1]["role"] == "user" and history[-1]["content"] == request.query:
        current, history = history[-1], history[:-1]  # the current message, stored before asking: sent once, as the query
    bundle = rendered_prompt = None
    if memory is not None:
        bundle, rendered_prompt, request = memory(request=request, history=history, current_id=current["id"] if current else None)
    built = context.build(history=history, request=request, older_turns=older_turns)
    answer = {
        "conversation_id": conversation_id,
        "format": request.format,
        "messages": built.messages,
        "session_summary": built.session_summary,
        "compressed": built.compressed,
        "total_turns": built.total_turns,
        "turns_in_full": built.turns_in_full,
        "summarized_turns": built.summarized_turns,
        "estimated_tokens": built.estimated_tokens,
        "content_tokens": built.content_tokens,
        "max_tokens": request.max_tokens,
        "tokens_remaining": request.max_tokens - built.estimated_tokens,
        "entities": built.entities,
        "source": source,
    }
    logger.info(
        "context_compressed" if built.compressed else "context_loaded",
        tenant=tenant.slug,
        conversation_id=conversation_id,
        source=source,
        total_turns=built.total_turns,
        turns_in_full=built.turns_in_full,
        summarized_turns=built.summarized_turns,
        estimated_tokens=built.estimated_tokens,
        max_tokens=request.max_tokens,
    )
    if bundle is not None:
        answer |= {"memory": bundle, "rendered_prompt": rendered_prompt}
    if version is not None:
        try:
            cache.set_context(
                tenant_slug=tenant.slug,
                conversation_id=conversation_id,
                parameters=parameters,
                version=version,
                context=answer,
                ttl=tenant.setting("MEMORY_CONTEXT_TTL"),
            )
        except cache.CacheUnavailable:
            pass
    return answer | {"cached": False}


def _context_history(*, tenant: Tenant, conversation_id: str, turns_wanted: int) -> tuple[list[dict[str, Any]], int, str]:
    """(the newest messages holding ``turns_wanted`` whole turns, the turns before them, the source).

    Reads a window of about two messages a turn and widens it while turns are missing, up to the
    cached list's length; the oldest, partial turn of a window that did not reach the start is left
    out, and the turns before the window are counted in PostgreSQL.
    """
    cap = settings.MEMORY_CACHE_LIST_LIMIT
    limit = min(cap, max(20, 2 * turns_wanted + 2))
    while True:
        window = conversation_window(tenant=tenant, conversation_id=conversation_id, query=WindowQuery(limit=limit))
        messages = window.messages
        if len(messages) < limit:
            return messages, 0, window.source  # the whole conversation
        questions = sum(1 for message in messages if message["role"] == "user")
        if questions > turns_wanted or limit >= cap:
            first = next((index for index, message in enumerate(messages) if message["role"] == "user"), len(messages))
            history = messages[first:]
            before_seq = history[0]["seq"] if history else messages[-1]["seq"] + 1
            return history, _turns_before(tenant=tenant, conversation_id=conversation_id, seq=before_seq), window.source
        limit = min(cap, limit * 2)


def _turns_before(*, tenant: Tenant, conversation_id: str, seq: int) -> int:
    try:
        return (
            Message.objects.for_tenant(tenant)
            .filter(conversation__conversation_id=conversation_id, archived=False, role="user", seq__lt=seq)
            .count()
        )
    except DatabaseError:
        logger.warning("context_turn_count_unavailable", tenant=tenant.slug, conversation_id=conversation_id)
        return 0


def message_get(*, tenant: Tenant, conversation_id: str, message_id: str) -> dict[str, Any]:
    try:
        uuid.UUID(message_id)
    except ValueError as error:
        raise NotFound(f"Message {message_id} does not exist.") from error
    try:
        found = cache.get_messages_by_id(tenant_slug=tenant.slug, conversation_id=conversation_id, message_ids=[message_id])
        metrics.track_cache(tenant=tenant.slug, data_type="message", hit=bool(found))
        if found:
            return found[message_id]
    except cache.CacheUnavailable:
        metrics.track_cache(tenant=tenant.slug, data_type="message", hit=None)
    try:
        row = (
            Message.objects.for_tenant(tenant)
            .filter(message_id=message_id, conversation__conversation_id=conversation_id)
            .first()
        )
    except DatabaseError as error:
        raise _database_unavailable() from error
    if row is None:
        raise NotFound(f"Message {message_id} does not exist in conversation {conversation_id}.")
    return services.message_to_dict(row)


def conversation_list(
    *, tenant: Tenant, user_id: str | None = None, agent_id: str | None = None, archived: bool | None = None
) -> QuerySet[Conversation]:
    queryset = Conversation.objects.for_tenant(tenant)
    if user_id is not None:
        queryset = queryset.filter(user_id=user_id)
    if agent_id is not None:
        queryset = queryset.filter(agent_id=agent_id)
    if archived is not None:
        queryset = queryset.filter(archived=archived)
    return queryset.order_by("-updated_at", "-pk")


def conversation_get(*, tenant: Tenant, conversation_id: str) -> Conversation:
    try:
        return services.conversation_or_404(tenant=tenant, conversation_id=conversation_id)
    except DatabaseError as error:
        raise _database_unavailable() from error


def memory_get(*, tenant: Tenant, conversation_id: str) -> dict[str, Any]:
    """The memory document (``get_memory``): the cache first, then PostgreSQL (and cache it)."""
    try:
        document = cache.get_memory(tenant_slug=tenant.slug, conversation_id=conversation_id)
        metrics.track_cache(tenant=tenant.slug, data_type="memory", hit=document is not None)
        if document is not None:
            logger.debug("memory_loaded_from_cache", tenant=tenant.slug, conversation_id=conversation_id)
            return document
    except cache.CacheUnavailable:
        metrics.track_cache(tenant=tenant.slug, data_type="memory", hit=None)
    conversation = conversation_get(tenant=tenant, conversation_id=conversation_id)
    document = services.memory_document(tenant=tenant, conversation=conversation)
    try:
        cache.set_memory(
            tenant_slug=tenant.slug,
            conversation_id=conversation_id,
            document=document,
            revision=conversation.memory_revision,
            ttl=tenant.setting("MEMORY_TTL_STANDARD"),
        )
    except cache.CacheUnavailable:
        pass
    return document


class DerivedMemoryCollector:
    """How far the derived-memory queue (vectors, summaries) is behind, read when ``/metrics`` is
    scraped (``metrics.scrape``): the tasks waiting in its queue (the vectors' own backlog per tenant
    is ``search.metrics``'). A broker that does not answer leaves its figure out of the scrape."""

    def collect(self) -> Iterator[Metric]:
        broker = broker_status()
        if broker["ok"]:
            depth = GaugeMetricFamily(
                "memory_derived_queue_depth", "Tasks waiting in the derived-memory queue (vectors, summaries)."
            )
            depth.add_metric([], broker["derived_queue_depth"])
            yield depth


def backend_status() -> dict[str, Any]:
    """The backends' status for the deployment's operators: reachability with the error
    texts, queue depths, hit rate and fallbacks of every tenant. Never for a tenant's key
    (``tenant_status`` is theirs)."""
    status: dict[str, Any] = {"scope": "deployment"}
    status["database"] = _database_status()
    try:
        status["cache"] = {"ok": True, "latency_ms": round(cache.ping(), 2)}
    except cache.CacheUnavailable as error:
        status["cache"] = {"ok": False, "error": str(error)[:200]}
    status["broker"] = broker_status()
    status["metrics"] = _counters()
    status["ok"] = all(status[name]["ok"] for name in ("database", "cache", "broker"))
    # Which backend serves, and how many conversations await a cache repair
    # (writes taken while Redis was down: served from PostgreSQL until the sweeper repairs them).
    fallback_sessions = None
    if status["database"]["ok"]:
        try:
            fallback_sessions = CacheRepair.unscoped.count()  # every tenant: a deployment figure
        except DatabaseError:
            fallback_sessions = None
    status["flags"] = _flags(status, fallback_sessions)
    return status


# Sections the features above conversations add to a tenant's status (name -> function of the
# tenant), registered when their app is ready (``status_section_register``).
STATUS_SECTIONS: dict[str, Callable[[Tenant], dict[str, Any]]] = {}


def status_section_register(name: str, section: Callable[[Tenant], dict[str, Any]]) -> None:
    STATUS_SECTIONS[name] = section


def tenant_status(*, tenant: Tenant) -> dict[str, Any]:
    """What a tenant's key may learn of the service: whether each backend answers (no error text, no
    latency), and the tenant's own figures (its cache lookups in this process, its conversations
    awaiting a cache repair). Nothing of other tenants, of the queues or of the deployment."""
    status: dict[str, Any] = {"scope": "tenant", "tenant": tenant.slug}
    status["database"] = {"ok": _database_status()["ok"]}
    try:
        cache.ping()
        status["cache"] = {"ok": True}
    except cache.CacheUnavailable:
        status["cache"] = {"ok": False}
    status["broker"] = {"ok": broker_status()["ok"]}
    counters = _counters(tenant=tenant.slug)
    counters.pop("fallbacks")  # counted for the whole deployment, not per tenant
    status["metrics"] = counters
    status["ok"] = all(status[name]["ok"] for name in ("database", "cache", "broker"))
    fallback_sessions = None
    if status["database"]["ok"]:
        try:
            fallback_sessions = CacheRepair.objects.for_tenant(tenant).count()
        except DatabaseError:
            fallback_sessions = None
    status["flags"] = _flags(status, fallback_sessions)
    for name, section in STATUS_SECTIONS.items():
        try:
            status[name] = section(tenant)
        except DatabaseError:
            status[name] = None  # PostgreSQL does not answer: the database's own section says so
    return status


def _database_status() -> dict[str, Any]:
    started = time.perf_counter()
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        return {"ok": False, "error": str(error).strip()[:200]}
    return {"ok": True, "latency_ms": round((time.perf_counter() - started) * 1000, 2)}


def _flags(status: dict[str, Any], fallback_sessions: int | None) -> dict[str, Any]:
    return {
        "using_pg": status["database"]["ok"],
        "using_redis": status["cache"]["ok"],
        "using_broker": status["broker"]["ok"],
        "degraded": not status["ok"],
        "fallback_sessions": fallback_sessions,
    }


def broker_status() -> dict[str, Any]:
    """Whether a broker connection opens, and the persist and derived queues' depths and consumers
    (None where the broker cannot say: the embedded run's Redis transport); it also sets the
    ``memory_queue_depth`` gauge. Never raises: a broker error is ``{"ok": False, "error": ...}``."""
    started = time.perf_counter()
    try:
        with current_app.connection_for_write() as broker:
            broker.ensure_connection(max_retries=1, timeout=settings.CELERY_BROKER_CONNECTION_TIMEOUT)
            depth, consumers = _queue_depth(broker, settings.MEMORY_QUEUE)
            try:
                derived_depth, derived_consumers = _queue_depth(broker, settings.MEMORY_DERIVED_QUEUE)
            except Exception:  # not declared yet: no derived task was ever queued
                derived_depth, derived_consumers = 0, None
        metrics.queue_depth.set(depth)
        return {
            "ok": True,
            "latency_ms": round((time.perf_counter() - started) * 1000, 2),
            "queue": settings.MEMORY_QUEUE,
            "queue_depth": depth,
            "consumers": consumers,
            "derived_queue": settings.MEMORY_DERIVED_QUEUE,
            "derived_queue_depth": derived_depth,
            "derived_consumers": derived_consumers,
        }
    except Exception as error:  # any broker error is reported, not raised: this is the status page
        return {"ok": False, "error": repr(error)[:200]}


def _queue_depth(broker: Any, queue: str) -> tuple[int, int | None]:
    """(messages waiting, consumers) of a queue; a queue that does not exist raises."""
    if broker.transport.driver_type == "redis":
        # kombu's Redis transport has no passive declare for an empty queue: the list length is the depth.
        return broker.default_channel.client.llen(queue), None
    channel = broker.channel()  # its own channel: a failed passive declare closes it, not the default one
    try:
        _, depth, consumers = channel.queue_declare(queue, passive=True)
    finally:
        try:
            channel.close()
        except Exception:  # noqa: S110 - already closed by the broker
            pass
    return depth, consumers


def _counters(*, tenant: str | None = None) -> dict[str, Any]:
    """Cache and fallback counters of this process (of every process with PROMETHEUS_MULTIPROC_DIR);
    with ``tenant``, only the lookups labelled with that tenant."""
    hits = misses = errors = 0.0
    context_hits = context_lookups = 0.0
    fallbacks: dict[str, float] = {}
    for family in registry().collect():
        for sample in family.samples:
            if tenant is not None and sample.name == "memory_cache_requests_total" and sample.labels.get("tenant") != tenant:
                continue
            if sample.name == "memory_cache_requests_total" and sample.labels.get("data_type") == "context":
                # Contexts differ by query, so they are counted apart from the cache-aside hit rate.
                context_lookups += sample.value
                context_hits += sample.value if sample.labels.get("result") == "hit" else 0
            elif sample.name == "memory_cache_requests_total":
                result = sample.labels.get("result")
                if result == "hit":
                    hits += sample.value
                elif result == "miss":
                    misses += sample.value
                else:
                    errors += sample.value
            elif sample.name == "memory_fallbacks_total":
                fallbacks[sample.labels["kind"]] = fallbacks.get(sample.labels["kind"], 0) + sample.value
    lookups = hits + misses + errors
    return {
        "cache_hits": int(hits),
        "cache_misses": int(misses),
        "cache_errors": int(errors),
        "cache_hit_rate": round(hits / lookups, 4) if lookups else None,
        "context_cache_hit_rate": round(context_hits / context_lookups, 4) if context_lookups else None,
        "fallbacks": {name: int(value) for name, value in fallbacks.items()},
    }


# --- The operators' views (admin): transcript pages and exports ---------------------------------


@dataclass(frozen=True)
class TranscriptPage:
    """One page of a conversation's transcript, oldest first, each message with its persist status."""

    messages: list[dict[str, Any]]  # message dicts plus "status" (persisted, pending) and "persisted_at"
    number: int
    pages: int
    count: int  # persisted messages
    pending: int  # acknowledged writes not yet persisted (shown on the last page)
    cache_reached: bool


def conversation_transcript(*, conversation: Conversation, page: int | None, per_page: int = 100) -> TranscriptPage:
    """A page of the whole history (archived messages too); the last page, the newest, by default.

    Pages are numbered from the oldest; the writes still pending in Redis join the last page, so an
    operator sees what the API acknowledged and no worker has persisted yet.
    """
    tenant = conversation.tenant
    rows = Message.objects.for_tenant(tenant).filter(conversation=conversation).order_by("seq")
    count = rows.count()
    pages = max(1, -(-count // per_page))
    number = pages if page is None else min(max(1, page), pages)
    shown = [
        services.message_to_dict(row) | {"status": "persisted", "persisted_at": row.persisted_at, "archived": row.archived}
        for row in rows[(number - 1) * per_page : number * per_page]
    ]
    pending: list[dict[str, Any]] = []
    cache_reached = True
    try:
        pending = cache.pending(tenant_slug=tenant.slug, conversation_id=conversation.conversation_id)
    except cache.CacheUnavailable:
        cache_reached = False
    if number == pages and pending:
        persisted_ids = set(
            Message.objects.for_tenant(tenant)
            .filter(conversation=conversation, message_id__in=[m["id"] for m in pending])
            .values_list("message_id", flat=True)
        )
        waiting = [m | {"status": "pending", "persisted_at": None} for m in pending if uuid.UUID(m["id"]) not in persisted_ids]
        shown = sorted(shown + waiting, key=lambda message: message["seq"])
    for index, message in enumerate(shown, start=(number - 1) * per_page + 1):
        message["position"] = index  # its place in the conversation, oldest first: what a person reads, not its seq
    return TranscriptPage(
        messages=shown, number=number, pages=pages, count=count, pending=len(pending), cache_reached=cache_reached
    )


def messages_matching(messages: QuerySet[Message], *, words: str) -> QuerySet[Message]:
    """The messages whose content holds every one of ``words`` (web-search syntax: "a phrase", -not)."""
    query = SearchQuery(words, config="simple", search_type="websearch")
    return messages.alias(content_words=CONTENT_WORDS).filter(content_words=query)


@dataclass(frozen=True)
class ConversationExport:
    """One conversation as the admin exports it: ``head`` (everything but the messages) and
    ``messages``, streamed: every acknowledged message, persisted or still pending."""

    head: dict[str, Any]
    messages: Iterator[dict[str, Any]]


def conversation_export(*, conversation: Conversation) -> ConversationExport:
    """Everything of a conversation the API acknowledged, whether a worker has persisted it yet or not.

    The writes still pending in Redis are read first, then the rows: a write persisted in between is
    a row by then, and rows win over pending writes of the same id, so each message appears once,
    in seq order. Each message carries ``status`` (``persisted`` or ``pending``) and ``persisted_at``
    (null while pending), as the transcript shows them. The memory document is the one last saved
    (the cache's, which a save writes before any worker stores it), else the stored one. With Redis
    unreachable the export holds the persisted rows only, and ``pending_included`` says so.
    """
    tenant = conversation.tenant
    pending: list[dict[str, Any]] = []
    memory = None
    try:
        pending = cache.pending(tenant_slug=tenant.slug, conversation_id=conversation.conversation_id)
        memory = cache.get_memory(tenant_slug=tenant.slug, conversation_id=conversation.conversation_id)
        pending_included = True
    except cache.CacheUnavailable:
        pending_included = False
    head = {
        "tenant": tenant.slug,
        "conversation_id": conversation.conversation_id,
        "user_id": conversation.user_id,
        "agent_id": conversation.agent_id,
        "archived": conversation.archived,
        "metadata": conversation.metadata,
        "memory": memory if memory is not None else services.memory_document(tenant=tenant, conversation=conversation),
        "message_count": conversation.message_count,
        "pending_included": pending_included,
        "created_at": conversation.created_at.isoformat(),
        "updated_at": conversation.updated_at.isoformat(),
    }
    return ConversationExport(head=head, messages=_export_messages(conversation=conversation, pending=pending))


def _export_messages(*, conversation: Conversation, pending: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The rows in seq order, streamed from the database, with ``pending`` merged in by seq."""
    waiting = sorted(pending, key=lambda message: message["seq"])
    position = 0
    rows = Message.objects.for_tenant(conversation.tenant).filter(conversation=conversation).order_by("seq")
    for row in rows.iterator(chunk_size=2000):
        message = services.message_to_dict(row) | {
            "archived": row.archived,
            "status": "persisted",
            "persisted_at": row.persisted_at.isoformat() if row.persisted_at else None,
        }
        while position < len(waiting) and waiting[position]["seq"] < message["seq"]:
            yield _pending_export(waiting[position])
            position += 1
        # A write persisted since the pending writes were read: its row stands for it (same id, same seq).
        while position < len(waiting) and waiting[position]["seq"] == message["seq"]:
            if waiting[position]["id"] != message["id"]:
                logger.warning(
                    "export_pending_seq_taken",
                    tenant=conversation.tenant.slug,
                    conversation_id=conversation.conversation_id,
                    seq=message["seq"],
                )
            position += 1
        yield message
    for message in waiting[position:]:
        yield _pending_export(message)


def _pending_export(message: dict[str, Any]) -> dict[str, Any]:
    return message | {"archived": False, "status": "pending", "persisted_at": None}

"""Admission of chat runs: what a chat turn must hold before its user message is stored, and gives
back on every way out.

A chat turn waits on a model for up to ``MEMORY_CHAT_TIMEOUT`` seconds, holding a web thread, and
the model server may be the tenant's own, slow or hanging. Three bounds keep that wait from
hurting anyone else, checked in this order:

1. **One run per conversation.** The lock ``<tenant>:<conv>:run`` (``conversations.cache.RUN_LOCK``)
   holds the run's owner token for the chat timeout plus ``LOCK_MARGIN`` seconds, and is released
   by compare-and-delete, so an expired lock taken by another run is never released by the first.
   Taken: 409 ``run_active`` (``chat_in_progress`` when the active run answers the same
   ``message_id``), and nothing is stored: two messages sent at once can no longer be answered in
   the opposite order, which paired questions with the wrong answers in the next prompt.
2. **At most ``MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT`` runs per tenant**, whichever web process
   serves them: a sorted set ``chat:runs:<tenant id>`` of owner tokens scored by their expiry,
   pruned of expired runs (a process that died) by the same script that admits
   (``conversations.cache.RUN_ADMIT``). Over it: 429 ``chat_limit_reached``.
3. **At most a share of this process's threads** (``MEMORY_CHAT_THREAD_SHARE`` of gunicorn's
   ``threads``, at least one and never all of them): a semaphore taken without waiting. Over it:
   503 ``chat_capacity``, at once rather than queued, so the other threads stay free for reads.

Every refusal carries ``Retry-After``. A run that streams pushes its expiries back while chunks
flow (``keep``), so a long answer keeps its lock. With Redis unreachable, 1 and 2 are skipped (a
cache outage must not stop chats: logged as ``chat_run_unguarded`` and counted in
``memory_fallbacks_total{kind="chat_run_unguarded"}``); 3 holds.
"""

import threading
import time
import uuid
from dataclasses import dataclass, field

import structlog
from django.conf import settings

from conversations import cache
from core.exceptions import Conflict, MemoryServiceError, ServiceUnavailable
from core.metrics import fallbacks
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

# Seconds a run's lock and slot outlive its chat timeout: storing the answer and the memory document.
LOCK_MARGIN = 30
# What a refused client is told to wait: a run ends within the chat timeout, usually far sooner.
RETRY_AFTER = 2


class RunActive(Conflict):
    code = "run_active"

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__(message, details=details)
        self.retry_after = RETRY_AFTER


class ChatInProgress(RunActive):
    code = "chat_in_progress"


class ChatLimitReached(MemoryServiceError):
    code = "chat_limit_reached"
    status = 429

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__(message, details=details)
        self.retry_after = RETRY_AFTER


class ChatCapacity(ServiceUnavailable):
    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__(message, retry_after=RETRY_AFTER, code="chat_capacity", details=details)


# --- This process's share of threads ------------------------------------------------------------


@dataclass
class _ProcessSlots:
    threads: int
    slots: int
    semaphore: threading.BoundedSemaphore


_process: _ProcessSlots | None = None


def process_threads_set(threads: int | None) -> int | None:
    """This process serves requests on ``threads`` threads (gunicorn.conf.py says so in each worker):
    chats may hold ``MEMORY_CHAT_THREAD_SHARE`` of them. None: no bound. Returns the chat slots."""
    global _process
    if not threads:
        _process = None
        return None
    slots = max(1, min(int(threads * settings.MEMORY_CHAT_THREAD_SHARE), threads - 1))
    _process = _ProcessSlots(threads=threads, slots=slots, semaphore=threading.BoundedSemaphore(slots))
    if slots >= threads:
        logger.warning(
            "chat_may_hold_every_thread",
            threads=threads,
            detail="a web process with one thread has none left while a chat waits on its model; serve with gthread",
        )
    return slots


def process_slots() -> int | None:
    return _process.slots if _process is not None else None


# --- A run ------------------------------------------------------------------------------------------


@dataclass
class Run:
    """A chat run admitted: what it holds, given back once by ``release()``."""

    tenant: Tenant
    conversation_id: str
    token: str
    ttl_ms: int
    locked: bool = False
    counted: bool = False
    semaphore: threading.BoundedSemaphore | None = None
    kept_at: float = field(default_factory=time.monotonic)
    _released: bool = False
    _mutex: threading.Lock = field(default_factory=threading.Lock)

    def keep(self) -> None:
        """Still running (a stream's chunk): push back the expiries once a third of the TTL has passed."""
        if self._released or time.monotonic() - self.kept_at < self.ttl_ms / 3000:
            return
        self.kept_at = time.monotonic()
        try:
            if self.locked and not cache.run_extend(
                tenant_slug=self.tenant.slug, conversation_id=self.conversation_id, token=self.token, ttl_ms=self.ttl_ms
            ):
                logger.warning("chat_run_lock_lost", tenant=self.tenant.slug, conversation_id=self.conversation_id)
                self.locked = False
            if self.counted:
                cache.runs_prolong(tenant_slug=self.tenant.slug, tenant_id=self.tenant.pk, token=self.token, ttl_ms=self.ttl_ms)
        except cache.CacheUnavailable:
            pass  # they expire as set; the next chunk tries again

    def release(self) -> None:
        """The run is over, however it ended: its slot, its tenant's count and its lock, once."""
        with self._mutex:
            if self._released:
                return
            self._released = True
        if self.semaphore is not None:
            self.semaphore.release()
        try:
            if self.counted:
                cache.runs_leave(tenant_slug=self.tenant.slug, tenant_id=self.tenant.pk, token=self.token)
            if self.locked:
                cache.run_unlock(tenant_slug=self.tenant.slug, conversation_id=self.conversation_id, token=self.token)
        except cache.CacheUnavailable as error:  # both expire by themselves
            logger.warning(
                "chat_run_release_failed", tenant=self.tenant.slug, conversation_id=self.conversation_id, error=str(error)
            )


def run_admit(*, tenant: Tenant, conversation_id: str, message_id: str | None, timeout: float) -> Run:
    """Admit a chat run on the conversation (see the module's docstring), or raise the refusal."""
    run = Run(
        tenant=tenant,
        conversation_id=conversation_id,
        token=f"{uuid.uuid4().hex}|{message_id or ''}",
        ttl_ms=int((timeout + LOCK_MARGIN) * 1000),
    )
    try:
        _lock(run, message_id)
        _count(run)
        _take_thread(run)
    except BaseException:
        run.release()
        raise
    return run


def _lock(run: Run, message_id: str | None) -> None:
    try:
        holder = cache.run_lock(
            tenant_slug=run.tenant.slug, conversation_id=run.conversation_id, token=run.token, ttl_ms=run.ttl_ms
        )
    except cache.CacheUnavailable as error:
        _unguarded(run, "run_lock", error)
        return
    if holder is None:
        run.locked = True
        return
    if message_id and holder.partition("|")[2] == message_id:
        raise ChatInProgress(
            f"Message {message_id} is being answered by another request; wait for that answer, or send the message "
            "again once it has ended.",
            details={"user_message_id": message_id},
        )
    raise RunActive(
        f"Conversation {run.conversation_id} is answering another message; one chat turn runs at a time in a "
        "conversation, so that each answer follows its question. Nothing was stored: send this message again once "
        "that turn has ended.",
        details={"conversation_id": run.conversation_id},
    )


def _count(run: Run) -> None:
    limit = int(run.tenant.setting("MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT"))
    if limit <= 0:
        return
    try:
        admitted, running = cache.runs_admit(
            tenant_slug=run.tenant.slug, tenant_id=run.tenant.pk, token=run.token, limit=limit, ttl_ms=run.ttl_ms
        )
    except cache.CacheUnavailable as error:
        _unguarded(run, "runs_admit", error)
        return
    if not admitted:
        logger.info("chat_limit_reached", tenant=run.tenant.slug, running=running, limit=limit)
        raise ChatLimitReached(
            f"Tenant {run.tenant.slug} already has {running} chat turns running, its limit "
            f"(MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT={limit}); nothing was stored. Send the message again once one "
            "has ended.",
            details={"running": running, "limit": limit},
        )
    run.counted = True


def _take_thread(run: Run) -> None:
    process = _process
    if process is None:
        return
    if not process.semaphore.acquire(blocking=False):
        logger.warning("chat_capacity", tenant=run.tenant.slug, slots=process.slots, threads=process.threads)
        raise ChatCapacity(
            f"This server's chat capacity is in use ({process.slots} chat turns at once per web process, of "
            f"{process.threads} threads; MEMORY_CHAT_THREAD_SHARE); nothing was stored. Try again shortly.",
            details={"slots": process.slots},
        )
    run.semaphore = process.semaphore


def _unguarded(run: Run, operation: str, error: Exception) -> None:
    logger.warning(
        "chat_run_unguarded", tenant=run.tenant.slug, conversation_id=run.conversation_id, operation=operation, error=str(error)
    )
    fallbacks.labels(kind="chat_run_unguarded").inc()

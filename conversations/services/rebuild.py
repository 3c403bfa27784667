"""Rebuild: a conversation's cached list made again from PostgreSQL and the pending writes.

``cache_rebuild`` never replaces a newer list with an older one (the version read first guards the
install) and never drops a pending write; cold readers hand the install to ``background_installs``.
``tenant_cache_rebuild`` does it for a whole tenant (the admin, ``rebuild_cache``), and
``cache_repair_sweep`` invalidates the lists of conversations whose cache missed a write.
"""

import contextvars
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError

from conversations import cache
from conversations.models import CacheRepair, Conversation
from conversations.services import publish
from conversations.services.document import memory_document
from conversations.services.lifecycle import _tombstone_floors
from conversations.services.messages import conversation_messages
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


@dataclass(frozen=True)
class RebuildResult:
    messages: list[dict[str, Any]]
    complete: bool
    installed: bool | None  # None: handed to the background installs (``later=True``)
    exists: bool


class BackgroundInstalls:
    """Installs of rebuilt lists that the reader who rebuilt them does not wait for.

    A cold read answers from the rows it read; putting them in Redis is work only later reads need.
    One thread per process runs them in order (its executor is made again in a forked child, where
    the parent's thread does not exist). At most ``limit`` wait: past that, the reader installs
    itself, so a burst of cold reads slows down rather than queueing without bound.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._lock = threading.Lock()
        self._pid = 0
        self._executor: ThreadPoolExecutor | None = None
        self._slots = threading.BoundedSemaphore(limit)

    def _current(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None or self._pid != os.getpid():
                self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cache-install")
                self._slots = threading.BoundedSemaphore(self.limit)
                self._pid = os.getpid()
            return self._executor

    def submit(self, install: Callable[[], None]) -> bool:
        """Run ``install`` on the install thread; False (nothing done) when ``limit`` already wait."""
        executor = self._current()
        slots = self._slots
        if not slots.acquire(blocking=False):
            return False

        context = contextvars.copy_context()  # its log lines carry the request's fields

        def run() -> None:
            try:
                context.run(install)
            except Exception:  # a thread of its own: nobody else would see it
                logger.exception("cache_install_failed")
            finally:
                slots.release()

        executor.submit(run)
        return True

    def wait(self, timeout: float | None = None) -> None:
        """Return once every install submitted before the call has run (tests, shutdown)."""
        marker: Future = self._current().submit(lambda: None)
        marker.result(timeout)


background_installs = BackgroundInstalls(limit=64)


def cache_rebuild(
    *,
    tenant: Tenant,
    conversation_id: str,
    allow_empty: bool = False,
    limit: int | None = None,
    snapshot: cache.Snapshot | None = None,
    rebuild_token: str = "",
    later: bool = False,
) -> RebuildResult:
    """Rebuild a conversation's cached list from PostgreSQL merged with the pending writes.

    The pending writes and the version are read first, then the rows: a write persisted in
    between is in the rows, a write acknowledged in between bumps the version and the install is
    skipped (the live list is never replaced by an older one). The list holds the newest ``limit``
    messages (``MEMORY_CACHE_LIST_LIMIT`` unless less is asked for). A reader that missed passes the
    ``snapshot`` its window read took, and the rebuild lock it took with it (``rebuild_token``): the
    install releases the lock in its own script; a rebuild that installs nothing releases it apart.
    ``later`` hands the install to ``background_installs`` (a reader that has what it needs to answer):
    the version guard and the lock work the same, only the caller does not wait for them.
    Raises DatabaseError or CacheUnavailable.
    """
    limit = min(limit or settings.MEMORY_CACHE_LIST_LIMIT, settings.MEMORY_CACHE_LIST_LIMIT)
    if snapshot is None:
        snapshot = cache.snapshot(tenant_slug=tenant.slug, conversation_id=conversation_id)
    # One indexed query in the common case: the conversation's row is needed only to tell an empty
    # conversation from none, the tombstone only to drop erased pending writes.
    rows = conversation_messages(tenant=tenant, conversation_id=conversation_id, limit=limit + 1)
    pending = snapshot.pending
    if pending:
        erased_before = _tombstone_floors(tenant=tenant, conversation_id=conversation_id).erased_before_seq
        pending = [m for m in pending if m["seq"] >= erased_before]
    merged = merge_messages(rows, pending)
    complete = len(rows) <= limit and len(merged) <= limit
    merged = merged[-limit:]
    exists = (
        bool(rows) or bool(pending) or Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).exists()
    )
    if not (exists or allow_empty):
        if rebuild_token:
            cache.unlock_rebuild(tenant_slug=tenant.slug, conversation_id=conversation_id, token=rebuild_token)
        return RebuildResult(messages=merged, complete=complete, installed=False, exists=exists)
    ttl = tenant.setting("MEMORY_TTL_EXTENDED")

    def install() -> bool:
        installed = cache.install(
            tenant_slug=tenant.slug,
            conversation_id=conversation_id,
            version=snapshot.version,
            messages=merged,
            complete=complete,
            ttl=ttl,
            rebuild_token=rebuild_token,
        )
        logger.info(
            "cache_rebuilt" if installed else "cache_rebuild_skipped",
            tenant=tenant.slug,
            conversation_id=conversation_id,
            messages=len(merged),
            pending=len(pending),
        )
        return installed

    def install_quietly() -> None:
        try:
            install()
        except cache.CacheUnavailable as error:  # the lock expires by itself; the next read rebuilds
            logger.warning("cache_install_failed", tenant=tenant.slug, conversation_id=conversation_id, error=str(error))

    if later and background_installs.submit(install_quietly):
        return RebuildResult(messages=merged, complete=complete, installed=None, exists=exists)
    return RebuildResult(messages=merged, complete=complete, installed=install(), exists=exists)


def merge_messages(rows: list[dict[str, Any]], pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows and pending writes in seq order, one per id (the row wins)."""
    if not pending:  # rows (of one conversation) are unique by id, and in order already: the sort sees one run
        return sorted(rows, key=lambda m: m["seq"])
    by_id = {m["id"]: m for m in pending}
    by_id.update({m["id"]: m for m in rows})
    return sorted(by_id.values(), key=lambda m: m["seq"])


def memory_cache_rebuild(*, tenant: Tenant, conversation: Conversation) -> None:
    cache.set_memory(
        tenant_slug=tenant.slug,
        conversation_id=conversation.conversation_id,
        document=memory_document(tenant=tenant, conversation=conversation),
        revision=conversation.memory_revision,
        ttl=tenant.setting("MEMORY_TTL_STANDARD"),
    )


@dataclass(frozen=True)
class TenantRebuildSummary:
    conversations: int
    messages: int
    failed: list[str]
    seconds: float


def tenant_cache_rebuild(
    *, tenant: Tenant, conversation_ids: Sequence[str] | None = None, progress: Any = None
) -> TenantRebuildSummary:
    """Rebuild the cache of a tenant: every active conversation, or the ones named."""
    started = time.perf_counter()
    conversations = Conversation.objects.for_tenant(tenant).filter(archived=False)
    if conversation_ids is not None:
        conversations = Conversation.objects.for_tenant(tenant).filter(conversation_id__in=list(conversation_ids))
    count = messages = 0
    failed: list[str] = []
    for conversation in conversations.order_by("pk").iterator(chunk_size=500):
        try:
            result = cache_rebuild(tenant=tenant, conversation_id=conversation.conversation_id, allow_empty=True)
            if not result.installed:  # a write raced us: the live list is newer, rebuild once more
                result = cache_rebuild(tenant=tenant, conversation_id=conversation.conversation_id, allow_empty=True)
            memory_cache_rebuild(tenant=tenant, conversation=conversation)
            messages += len(result.messages)
            count += 1
        except (cache.CacheUnavailable, DatabaseError) as error:
            failed.append(conversation.conversation_id)
            logger.error(
                "cache_rebuild_failed", tenant=tenant.slug, conversation_id=conversation.conversation_id, error=str(error)
            )
        if progress is not None:
            progress(1)
    return TenantRebuildSummary(conversations=count, messages=messages, failed=failed, seconds=time.perf_counter() - started)


def tenant_cache_rebuild_queue(*, tenant: Tenant) -> None:
    """Queue ``tenant_cache_rebuild`` for a worker (the admin's whole-tenant rebuild)."""
    publish.publish_args(publish.TENANT_CACHE_REBUILD, tenant.pk)


def cache_repair_sweep() -> int:
    """Invalidate the cached lists of conversations whose cache missed a write; returns how many."""
    repaired = 0
    for repair in CacheRepair.unscoped.select_related("tenant").order_by("pk")[:1000]:  # sweeper: all tenants
        if repair.erase:
            cache.erase(tenant_slug=repair.tenant.slug, conversation_id=repair.conversation_id)
        else:
            cache.invalidate(tenant_slug=repair.tenant.slug, conversation_id=repair.conversation_id)
        CacheRepair.unscoped.filter(pk=repair.pk, created_at=repair.created_at).delete()
        repaired += 1
    if repaired:
        logger.info("cache_repaired", conversations=repaired)
    return repaired

"""The ledger after Redis lost it: when a resent message id can be told new again.

Redis's ledger (reserved and pending writes, message keys) answers whether an id is known. A Redis
that restarts empty loses it while persist messages may still be queued; until a round of barriers
through the persist queue proves none is left (``ledger_barrier_reached``), an unknown client id is
answered 503 ``idempotency_unknown`` rather than taken as new (``ledger_is_whole``). Workers report
what may have put a message back in the queue (``ledger_disturbed``) and re-assert the pending writes
they still hold (``messages_reassert_pending``).
"""

import threading
import time
from typing import Any

import structlog
from celery import current_app
from django.conf import settings
from django.db import DatabaseError, transaction

from conversations import cache, metrics
from conversations.models import LedgerEpoch
from conversations.services import publish
from core.exceptions import ServiceUnavailable
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


def ledger_is_whole(*, tenant: Tenant, conversation_id: str) -> bool:
    """Whether no write acknowledged before this Redis's ledger began can still be on its way.

    A Redis that restarts empty loses the pending and reserved writes: an id of one of them, resent,
    would look new. They are still in the broker (queued, or held by a worker waiting for
    PostgreSQL). The ledger is whole again once a round of barriers (``ledger_barrier_reached``)
    found every persist message queued before it delivered, and every worker that could hold one
    still connected, long enough for each to have committed it or put it back among the pending
    writes (``messages_reassert_pending``). The first append to see the ledger not whole begins a
    round; one that finds no round under way (a disturbance voided it) or one long stalled begins
    another. Once whole, the ledger says so for every conversation (a later disturbance concerns
    writes this ledger holds), and each conversation's state says so too, so this is not asked
    again for it.
    """
    status = cache.ledger_status()
    if status.begun_now:
        _ledger_begun(status)
        status = cache.ledger_status()
    if status.whole_at is not None:
        cache.ledger_whole(tenant_slug=tenant.slug, conversation_id=conversation_id)
        return True
    if status.barrier_at is None or status.now - status.barrier_at > LEDGER_ROUND_STALLED_SECONDS * 1_000_000:
        ledger_round_begin(since=status.since)
    return False


# Whether this process has seen the deployment's ledger recorded in PostgreSQL (``ledger_recorded``).
_recorded = False


def ledger_recorded() -> None:
    """Before a process acknowledges its first write of any kind: the ledger is begun and its epoch
    recorded in PostgreSQL, once per process.

    The first ledger a deployment begins is whole at once (``_ledger_begun``), which is right only if
    no write was acknowledged before it. Were a ledger begun only by a client id's lookup, a
    deployment whose writes so far carried no client id would begin its first ledger after a Redis
    loss, take it for the first, and answer a resent server id (a 201's, or one ``write_indeterminate``
    handed out) as new: a second seq for one message. Best effort: when Redis or PostgreSQL does not
    answer, the next append tries again."""
    global _recorded
    if _recorded:
        return
    try:
        status = cache.ledger_status()
    except cache.CacheUnavailable as error:
        logger.warning("ledger_unrecorded", error=str(error))
        return
    # A ledger found begun was recorded by whoever began it (``_ledger_begun``); one begun now is
    # recorded here, and a failure to record it is tried again by the next append.
    _recorded = not status.begun_now or _ledger_begun(status)


# Seconds a persist statement in flight when Redis lost the ledger may still take, and seconds a
# message delivered just before a barrier may take to be committed or put back among the pending.
LEDGER_SLACK_SECONDS = 5


# A round of barriers with no result after this long is taken as lost and begun again (a step that
# fails voids its round at once; this is for a step Redis could not hear of). Rounds wait behind the
# queue, which may be held up by an outage for as long as the workers hold their messages.
LEDGER_ROUND_STALLED_SECONDS = 120


# Seconds a round waits for the workers to answer who they are.
LEDGER_INQUIRY_SECONDS = 1.0


def ledger_slack_seconds() -> int:
    """How long a worker holding a message may take to try it again: the backoff cap, and a few seconds."""
    return settings.MEMORY_RETRY_BACKOFF_MAX + LEDGER_SLACK_SECONDS


def ledger_round_begin(*, since: int) -> None:
    """Begin a round of barriers for the ledger begun at ``since``: its token (the time it began) is
    recorded before the first barrier is published, so the worker that reaches it finds it current."""
    from conversations import tasks

    barrier = cache.ledger_mark(since=since, event="barrier_at")
    if not barrier:
        return
    try:
        publish.publish_args(tasks.ledger_barrier, since, barrier)
        logger.info("ledger_barrier_published", since=since, barrier=barrier)
    except ServiceUnavailable as error:
        logger.warning("ledger_barrier_unpublished", since=since, error=error.message)
        _void_quietly(since=since, barrier=barrier)


def _void_quietly(*, since: int, barrier: int) -> None:
    """A round that cannot go on: void it so the next append begins another (Redis willing)."""
    try:
        cache.ledger_round_void(since=since, barrier=barrier)
    except cache.CacheUnavailable:
        pass  # a round with no result is begun again after LEDGER_ROUND_STALLED_SECONDS


def _ledger_begun(status: cache.LedgerStatus) -> bool:
    """This append began the ledger: the first a deployment ever begins is whole at once (no write
    was acknowledged before it); a later one replaces a ledger Redis lost. PostgreSQL keeps the
    record; if it cannot be asked, the ledger is taken as a replacement (the safe side). Returns
    whether the record was kept."""
    try:
        with transaction.atomic():
            first = not LedgerEpoch.objects.exists()
            LedgerEpoch.objects.get_or_create(since=status.since)
    except DatabaseError as error:
        logger.warning("ledger_epoch_unrecorded", since=status.since, error=str(error))
        return False
    if first:
        cache.ledger_mark(since=status.since, event="drained_at")
        cache.ledger_mark(since=status.since, event="whole_at")
    logger.info("ledger_begun", since=status.since, first=first)
    return True


def ledger_barrier_reached(*, since: int, barrier: int | None = None, phase: int = 1, workers: dict | None = None) -> bool:
    """One step of the round of barriers ``barrier`` for the ledger begun at ``since``, run by a worker.

    1. The first barrier asks the workers consuming the persist queue who they are (their name and
       the generation of their broker connection), and publishes the second barrier behind whatever
       went back to the queue before they answered.
    2. The second barrier, reached, proves every message queued before it delivered. If the same
       workers answer with the same connections, the queue is drained: the third step is published
       to run once a worker holding an older message has had time to try it again.
    3. The same workers, still on the same connections (none lost a message back to the queue): the
       ledger is whole.

    A worker gone or reconnected voids the round, and so does any disturbance reported meanwhile
    (``ledger_disturbed``): a round that is no longer current stops. Returns whether this step
    counted. A round of an older release (no ``barrier``) never counts: a new one is begun.
    """
    from conversations import tasks

    if barrier is None:
        return False
    try:
        if not cache.ledger_mark(since=since, event="round_at", barrier=barrier):
            return False  # voided, or Redis restarted again: its ledger has a round of its own
        present = worker_generations()
        if phase == 1:
            tasks.ledger_barrier.apply_async(args=[since, barrier, 2, present], queue=settings.MEMORY_QUEUE)
            return True
        if not _same_workers(workers or {}, present):
            logger.info("ledger_round_void", since=since, barrier=barrier, phase=phase, why="a worker left or reconnected")
            if cache.ledger_disturb():
                metrics.ledger_disturbances.labels(why="worker_changed").inc()
            return False
        if phase == 2:
            if not cache.ledger_mark(since=since, event="drained_at", barrier=barrier):
                return False
            waited = (cache.ledger_status().now - since) / 1_000_000
            countdown = max(float(LEDGER_SLACK_SECONDS), ledger_slack_seconds() - waited)
            tasks.ledger_barrier.apply_async(args=[since, barrier, 3, workers], countdown=countdown, queue=settings.MEMORY_QUEUE)
            logger.info("ledger_barrier_reached", since=since, barrier=barrier, workers=len(present))
            return True
        whole = bool(cache.ledger_mark(since=since, event="whole_at", barrier=barrier))
        logger.info("ledger_whole" if whole else "ledger_round_void", since=since, barrier=barrier)
        return whole
    except cache.CacheUnavailable:
        # Redis did not answer: this step again shortly. (If Redis restarted instead, the step finds
        # its ledger gone and stops: the new ledger has a round of its own.)
        try:
            tasks.ledger_barrier.apply_async(args=[since, barrier, phase, workers], countdown=2, queue=settings.MEMORY_QUEUE)
        except Exception as error:  # the broker too: the round is begun again once stalled
            logger.warning("ledger_round_failed", since=since, barrier=barrier, phase=phase, error=repr(error))
        return False
    except Exception as error:  # the broker failed the inquiry or the next step's publish
        logger.warning("ledger_round_failed", since=since, barrier=barrier, phase=phase, error=repr(error))
        _void_quietly(since=since, barrier=barrier)
        return False


def worker_generations() -> dict[str, str]:
    """The workers consuming the persist queue, by name, with the generation of their broker
    connection (a new one each time it connects): who could hold a persist message now."""
    replies = current_app.control.broadcast("ledger_generation", reply=True, timeout=LEDGER_INQUIRY_SECONDS)
    present = {}
    for reply in replies or []:
        for name, answer in reply.items():
            if isinstance(answer, dict) and answer.get("generation") and settings.MEMORY_QUEUE in answer.get("queues", ()):
                present[name] = answer["generation"]
    return present


def _same_workers(before: dict[str, str], now: dict[str, str]) -> bool:
    """Every worker of ``before`` still there on the same connection (new workers hold nothing older)."""
    return all(now.get(name) == generation for name, generation in before.items())


def ledger_disturbed(*, why: str) -> bool | None:
    """A persist message may have gone back to the broker (``why``): a ledger not yet whole needs a
    new barrier. Returns whether it was recorded (False: the ledger is whole or not begun, nothing
    to void), or None when Redis does not answer."""
    try:
        disturbed = cache.ledger_disturb()
    except cache.CacheUnavailable as error:
        logger.warning("ledger_disturbance_unrecorded", why=why, error=str(error))
        return None
    if disturbed:
        logger.info("ledger_disturbed", why=why)
        metrics.ledger_disturbances.labels(why=why).inc()
    return disturbed


def ledger_disturbed_soon(*, why: str) -> threading.Thread:
    """``ledger_disturbed`` from a thread of its own, tried again each second while Redis does not
    answer (for at most ``MEMORY_PERSIST_HOLD`` seconds): for a worker's main process, whose event
    loop must not wait on Redis."""

    def report() -> None:
        deadline = time.monotonic() + settings.MEMORY_PERSIST_HOLD
        while ledger_disturbed(why=why) is None and time.monotonic() < deadline:
            time.sleep(1.0)

    thread = threading.Thread(target=report, name=f"ledger-disturbed-{why}", daemon=True)
    thread.start()
    return thread


def messages_reassert_pending(*, payload: dict[str, Any]) -> None:
    """A persist payload still waiting for PostgreSQL: its messages are pending again in Redis if
    Redis lost them, so a resend of their ids is answered with their seqs (best effort)."""
    try:
        cache.merge(
            tenant_slug=payload["tenant_slug"],
            conversation_id=payload["conversation_id"],
            messages=payload["messages"],
            mode="reassert",
            ttl=settings.MEMORY_TTL_EXTENDED,
        )
    except (cache.CacheUnavailable, KeyError, TypeError) as error:
        logger.warning("persist_reassert_failed", conversation_id=payload.get("conversation_id"), error=str(error))

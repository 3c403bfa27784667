"""The ledger after Redis lost it: when a resent message id can be told new again.

Redis's ledger (reserved and pending writes, message keys) answers whether an id is known. A Redis
that restarts empty loses it while persist messages may still be queued; until a round of barriers
through the persist queue proves none is left (``ledger_barrier_reached``), an unknown client id is
answered 503 ``idempotency_unknown`` rather than taken as new (``ledger_is_whole``), unless it is a
UUIDv7 made after the ledger began (``ledger_vouches_new``, ``message_ids``). Workers report
what may have put a message back in the queue (``ledger_disturbed``) and re-assert the pending writes
they still hold (``messages_reassert_pending``).
"""

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from celery import current_app
from django.conf import settings
from django.db import DatabaseError, transaction

from conversations import cache, metrics
from conversations.models import LedgerEpoch
from conversations.services import message_ids, publish
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
    return _ledger_status(tenant=tenant, conversation_id=conversation_id).whole_at is not None


def ledger_vouches_new(*, tenant: Tenant, conversation_id: str, ids: Sequence[str]) -> bool:
    """Whether client ids found neither in the ledger nor in PostgreSQL are new: the ledger is whole
    (``ledger_is_whole``), or each id is a UUIDv7 made after the ledger began (``message_ids.made_after``),
    so acknowledged, if ever, where the ledger or PostgreSQL would show it. Counted by
    ``memory_ledger_vouched_total``: how many lookups an id's stamp answered before the round did."""
    status = _ledger_status(tenant=tenant, conversation_id=conversation_id)
    if status.whole_at is not None:
        return True
    if all(message_ids.made_after(message_id, status.since) for message_id in ids):
        metrics.ledger_vouched.inc()
        return True
    return False


def _ledger_status(*, tenant: Tenant, conversation_id: str) -> cache.LedgerStatus:
    """The ledger's status, a round of barriers begun if none is under way while it is not whole."""
    status = cache.ledger_status()
    if status.begun_now:
        _ledger_begun(status)
        status = cache.ledger_status()
    if status.whole_at is not None:
        cache.ledger_whole(tenant_slug=tenant.slug, conversation_id=conversation_id)
        return status
    if status.barrier_at is None or status.now - status.barrier_at > LEDGER_ROUND_STALLED_SECONDS * 1_000_000:
        ledger_round_begin(since=status.since)
    return status


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


# Seconds the third step of a round waits when no worker held an older write at the second (the
# short slack): a message still on its way into a worker becomes a request it reports, and a
# disturbance (a worker losing its connection or a pool process) is reported, within it.
LEDGER_SHORT_SLACK_SECONDS = 2


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
    barrier = cache.ledger_mark(since=since, event="barrier_at")
    if not barrier:
        return
    try:
        publish.publish_args(publish.LEDGER_BARRIER, since, barrier)
        logger.info("ledger_barrier_published", since=since, barrier=barrier)
    except ServiceUnavailable as error:
        logger.warning("ledger_barrier_unpublished", since=since, error=error.message)
        _void_quietly(since=since, barrier=barrier)


def _barrier_step(since: int, barrier: int, phase: int, workers: dict | None, *, countdown: float | None = None) -> None:
    """Publish the next step of a round (``ledger_barrier``) behind what the persist queue holds."""
    current_app.send_task(
        publish.LEDGER_BARRIER, args=[since, barrier, phase, workers], countdown=countdown, queue=settings.MEMORY_QUEUE
    )


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
       to run once a worker holding an older message has had time to try it again (the slack,
       ``ledger_slack_seconds`` after the ledger began). When no worker holds a write the ledger
       does not (each message it holds is a write acknowledged since, or one put back among the
       pending), the third step runs after the short slack (``LEDGER_SHORT_SLACK_SECONDS``) instead:
       time for a message on its way into a worker to arrive, and for a disturbance to be reported.
    3. The same workers, still on the same connections (none lost a message back to the queue): the
       ledger is whole. After the short slack the workers must still hold no write the ledger does
       not; if one does, this step runs again at the end of the whole slack.

    A worker gone or reconnected voids the round, and so does any disturbance reported meanwhile
    (``ledger_disturbed``): a round that is no longer current stops. Returns whether this step
    counted. A round of an older release (no ``barrier``) never counts: a new one is begun.
    """
    if barrier is None:
        return False
    try:
        if not cache.ledger_mark(since=since, event="round_at", barrier=barrier):
            # Voided, or Redis restarted again: its ledger has a round of its own.
            logger.info("ledger_step_stale", since=since, barrier=barrier, phase=phase)
            return False
        inquiry = worker_inquiry()
        present = inquiry.generations
        if phase == 1:
            _barrier_step(since, barrier, 2, present)
            return True
        if not _same_workers(workers or {}, present):
            logger.info("ledger_round_void", since=since, barrier=barrier, phase=phase, why="a worker left or reconnected")
            if cache.ledger_disturb():
                metrics.ledger_disturbances.labels(why="worker_changed").inc()
            return False
        if phase == 2:
            if not cache.ledger_mark(since=since, event="drained_at", barrier=barrier):
                return False
            slack = ledger_slack_seconds() - (cache.ledger_status().now - since) / 1_000_000
            held = _held_unknown(inquiry)
            # Nothing older held: the short slack (a message still on its way into a worker, a
            # disturbance still being reported); the third step asks again.
            countdown = max(float(LEDGER_SLACK_SECONDS), slack) if held else float(LEDGER_SHORT_SLACK_SECONDS)
            _barrier_step(since, barrier, 3, workers, countdown=countdown)
            logger.info(
                "ledger_barrier_reached", since=since, barrier=barrier, workers=len(present), held=held, countdown=countdown
            )
            return True
        slack = ledger_slack_seconds() - (cache.ledger_status().now - since) / 1_000_000
        if slack > 0 and _held_unknown(inquiry):  # the short slack, and now a worker holds an older write: the whole slack
            _barrier_step(since, barrier, 3, workers, countdown=slack)
            logger.info("ledger_round_slack", since=since, barrier=barrier, countdown=slack)
            return True
        whole = bool(cache.ledger_mark(since=since, event="whole_at", barrier=barrier))
        logger.info("ledger_whole" if whole else "ledger_round_void", since=since, barrier=barrier)
        return whole
    except cache.CacheUnavailable:
        # Redis did not answer: this step again shortly. (If Redis restarted instead, the step finds
        # its ledger gone and stops: the new ledger has a round of its own.)
        try:
            _barrier_step(since, barrier, phase, workers, countdown=2)
        except Exception as error:  # the broker too: the round is begun again once stalled
            logger.warning("ledger_round_failed", since=since, barrier=barrier, phase=phase, error=repr(error))
        return False
    except Exception as error:  # the broker failed the inquiry or the next step's publish
        logger.warning("ledger_round_failed", since=since, barrier=barrier, phase=phase, error=repr(error))
        _void_quietly(since=since, barrier=barrier)
        return False


@dataclass(frozen=True)
class Inquiry:
    """What the workers consuming the persist queue answered a round: each one's name with the
    generation of its broker connection (a new one each time it connects), and the writes of the
    persist messages they hold, prefetched or running, as (tenant slug, conversation id, message
    ids); ``held`` is None when a worker could not say."""

    generations: dict[str, str]
    held: list[tuple[str, str, list[str]]] | None


def worker_inquiry() -> Inquiry:
    """Ask the workers who they are and what they hold (``memoryproject.celery.ledger_generation``)."""
    replies = current_app.control.broadcast("ledger_generation", reply=True, timeout=LEDGER_INQUIRY_SECONDS)
    present: dict[str, str] = {}
    held: list[tuple[str, str, list[str]]] | None = []
    for reply in replies or []:
        for name, answer in reply.items():
            if isinstance(answer, dict) and answer.get("generation") and settings.MEMORY_QUEUE in answer.get("queues", ()):
                present[name] = answer["generation"]
                writes = answer.get("held")
                if held is None or not isinstance(writes, list):
                    held = None  # a worker of an older release, or one that could not read its messages
                else:
                    held += [(str(tenant), str(conversation), [str(i) for i in ids]) for tenant, conversation, ids in writes]
    return Inquiry(generations=present, held=held)


def worker_generations() -> dict[str, str]:
    """The workers consuming the persist queue, by name, with the generation of their broker
    connection: who could hold a persist message now."""
    return worker_inquiry().generations


def _held_unknown(inquiry: Inquiry) -> bool:
    """Whether a worker holds a write the ledger does not (acknowledged before the ledger began, and
    neither committed nor put back among the pending yet), or could not say what it holds."""
    if inquiry.held is None:
        return True
    return any(
        not cache.ledger_holds(tenant_slug=tenant, conversation_id=conversation, message_ids=ids)
        for tenant, conversation, ids in inquiry.held
    )


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

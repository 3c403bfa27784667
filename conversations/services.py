"""Writes: the write path and its promises, cache rebuilds, the memory document, erasure.

The append path, in order (``message_append``):

1. Every value passes the storable door (``conversations.storable``): what PostgreSQL, Redis or
   JSON would refuse later is refused now, with a 400 naming the field.
2. Redis takes the conversation's append lock and hands out the seqs (``cache.reserve``); under that
   lock each message id is looked up in the ledger of writes not yet known to be persisted
   (reserved, pending, message keys), then in PostgreSQL: an id already known comes back with the
   seq it was given (the same content) or is a 409 (other content); an id that cannot be told new
   (Redis lost writes that may still be queued, or PostgreSQL cannot be asked) is a 503
   ``idempotency_unknown``. The new ones are reserved, with their seqs, before anything is sent.
3. The persist task is published and confirmed by the broker (persistent message, durable queue).
   Refused or unreachable: the lock and the new reservations are released, nothing was written, 503
   ``broker_unavailable``. Sent but not confirmed: 503 ``write_indeterminate`` with the ids and
   seqs, the reservations kept, so a resend publishes the same seqs again.
4. The messages join the cached list and the pending hash in one script, which releases the lock:
   they are in the window at once (read-your-writes) and survive a rebuild until persisted.
5. A worker commits the rows (``messages_persist``), idempotently, then settles the cache; the
   persist tasks it runs at once share one statement (``PersistCommits``).

With Redis down, the messages are committed to PostgreSQL in the request, with seqs from the
conversation row, and the conversation is marked for cache repair; with PostgreSQL down, the Redis
path needs nothing from it but the check of a client's ids the ledger does not hold.
"""

import contextvars
import dataclasses
import json
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import structlog
from amqp.exceptions import MessageNacked
from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, transaction
from django.db.models import Max, Q
from django.utils import timezone
from kombu.entity import PERSISTENT_DELIVERY_MODE
from kombu.utils.uuid import uuid as kombu_uuid

from conversations import cache, metrics, storable, tokens
from conversations.exceptions import Conflict, NotFound, ServiceUnavailable
from conversations.models import (
    CacheRepair,
    Conversation,
    DeadLetter,
    LedgerEpoch,
    Message,
    Tombstone,
    tombstone_keys,
)
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


# --- Message shape ----------------------------------------------------------------------------


MESSAGE_COLUMNS = ("message_id", "seq", "role", "content", "metadata", "created_at", "token_count")


def message_from_values(values: dict[str, Any]) -> dict[str, Any]:
    """The message's JSON shape from its columns, as ``.values(*MESSAGE_COLUMNS)`` reads them (no model
    instance: faster for a page of rows). ``conversation_messages`` builds the same shape from its
    statement's rows (a test holds the two equal)."""
    return {
        "id": str(values["message_id"]),
        "seq": values["seq"],
        "role": values["role"],
        "content": values["content"],
        "metadata": values["metadata"],
        "created_at": values["created_at"].astimezone(UTC).isoformat(),
        "token_count": values["token_count"],
    }


def message_to_dict(message: Message) -> dict[str, Any]:
    """The one JSON shape of a message, in the cache, the task payload and the API."""
    return message_from_values({column: getattr(message, column) for column in MESSAGE_COLUMNS})


# The newest messages of a conversation named by its id, in one statement that reads the window index
# in order: the conversation's pk is a scalar subquery (a join would make PostgreSQL sort every message
# of the conversation to return the newest 50). Both parts are scoped by tenant_id, as ``for_tenant``
# scopes the ORM's queries. A constant statement (``{filters}`` is one of a few fixed clauses): a cold
# window read builds no query. ``created_at`` comes as microseconds since the epoch: the timestamp
# loader Django installs runs in Python and cost more than the rest of the row.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CONVERSATION_MESSAGES_SQL = """
    SELECT message_id::text, seq, role, content, metadata::text, (extract(epoch FROM created_at) * 1000000)::bigint,
        token_count
    FROM conversation_messages
    WHERE tenant_id = %s
        AND conversation_id = (
            SELECT id FROM conversation_memories WHERE tenant_id = %s AND conversation_id = %s LIMIT 1
        ){filters}
    ORDER BY seq DESC
    LIMIT %s
"""


def conversation_messages(
    *,
    tenant: Tenant,
    conversation_id: str,
    limit: int,
    include_archived: bool = False,
    role: str | None = None,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
) -> list[dict[str, Any]]:
    """The newest ``limit`` messages of a conversation (archived ones only with ``include_archived``;
    of ``role``, created between ``start_date`` and ``end_date`` when given), oldest first, in the
    shape of ``message_from_values``. Raises DatabaseError."""
    filters = "" if include_archived else " AND NOT archived"
    parameters: list[Any] = [tenant.pk, tenant.pk, conversation_id]
    if role:
        filters += " AND role = %s"
        parameters.append(role)
    if start_date:
        filters += " AND created_at >= %s"
        parameters.append(start_date)
    if end_date:
        filters += " AND created_at <= %s"
        parameters.append(end_date)
    parameters.append(limit)
    with connection.cursor() as cursor:
        cursor.execute(CONVERSATION_MESSAGES_SQL.format(filters=filters), parameters)
        rows = cursor.fetchall()
    rows.reverse()
    return [
        {
            "id": message_id,
            "seq": seq,
            "role": message_role,
            "content": content,
            "metadata": {} if metadata == "{}" else json.loads(metadata),
            "created_at": (_EPOCH + timedelta(microseconds=created_at)).isoformat(),
            "token_count": token_count,
        }
        for message_id, seq, message_role, content, metadata, created_at, token_count in rows
    ]


def _same_message(stored: dict[str, Any], new: dict[str, Any]) -> bool:
    return (
        stored["role"] == new["role"]
        and stored["content"] == new["content"]
        and same_json(stored.get("metadata", {}), new.get("metadata", {}))
    )


def same_json(left: Any, right: Any) -> bool:
    """Whether two JSON values are equal as PostgreSQL's jsonb compares them: numbers by value
    (jsonb gives ``1e23`` back as ``100000000000000000000000``, an int Python holds unequal to the float)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return Decimal(repr(left) if isinstance(left, float) else left) == Decimal(
            repr(right) if isinstance(right, float) else right
        )
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_json(left[name], right[name]) for name in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_json(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right


def _now_microseconds() -> int:
    return time.time_ns() // 1000


# --- Append -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class AppendResult:
    messages: list[dict[str, Any]]
    created: bool  # some message got a seq now (201); False: every one was known already (200)


def message_append(
    *,
    tenant: Tenant,
    conversation_id: str,
    messages: Sequence[dict[str, Any]],
    user_id: str = "",
    agent_id: str = "",
) -> AppendResult:
    """Append one message or a batch; durable (broker-confirmed, or committed) when it returns.

    Each item holds ``role``, ``content`` and optionally ``id``, ``metadata``, ``created_at``; every
    value passes the storable door first (``conversations.storable``), so nothing acknowledged is
    refused later. A message whose id the service already knows (acknowledged, persisted, or sent in
    an attempt whose outcome was indeterminate) comes back with the seq it was given then; see
    ``_append_through_cache`` for how that is decided.
    """
    now = timezone.now()
    prepared = []
    client_ids: set[str] = set()
    for index, item in enumerate(messages):
        field = f"messages[{index}]" if len(messages) > 1 else ""
        created_at = item.get("created_at")
        content = storable.storable_text(item["content"], field=_field(field, "content"))
        if item.get("id"):
            client_ids.add(str(item["id"]))
        prepared.append(
            {
                "id": str(item.get("id") or uuid.uuid4()),
                "role": item["role"],
                "content": content,
                "metadata": storable.storable_json(item.get("metadata") or {}, field=_field(field, "metadata")),
                "created_at": (storable.storable_datetime(created_at, field=_field(field, "created_at")) if created_at else now)
                .astimezone(UTC)
                .isoformat(),
                "token_count": tokens.count(content),
            }
        )
    append = dict(
        tenant=tenant,
        conversation_id=conversation_id,
        messages=prepared,
        client_ids=client_ids,
        user_id=user_id,
        agent_id=agent_id,
    )
    try:
        result = _append_through_cache(**append)
    except cache.CacheUnavailable as error:
        logger.warning("append_cache_unavailable", tenant=tenant.slug, conversation_id=conversation_id, error=str(error))
        metrics.fallbacks.labels(kind="write_without_cache").inc()
        result = _append_through_database(**append)
    created = [message for message, new in zip(result.messages, result.new, strict=True) if new]
    if created:
        metrics.messages_accepted.labels(tenant=tenant.slug).inc(len(created))
        logger.info(
            "messages_appended",
            tenant=tenant.slug,
            conversation_id=conversation_id,
            count=len(created),
            first_seq=created[0]["seq"],
        )
    return AppendResult(messages=result.messages, created=bool(created))


def _field(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


@dataclass(frozen=True)
class _Appended:
    messages: list[dict[str, Any]]  # in the order asked, each with its seq
    new: list[bool]  # per message: given a seq now (False: known already)


def _known(stored: dict[str, Any], message: dict[str, Any]) -> dict[str, Any]:
    """The known message ``stored`` under ``message``'s id, or a 409 if it holds other content."""
    if not _same_message(stored, message):
        raise Conflict(
            f"Message id {message['id']} is already used by another message; send a new id, or the "
            "same role, content and metadata to get the stored message back.",
            details={"id": message["id"]},
        )
    return stored


def _idempotency_unknown(conversation_id: str, why: str) -> ServiceUnavailable:
    metrics.idempotency_unknown.inc()
    logger.warning("append_idempotency_unknown", conversation_id=conversation_id, why=why)
    return ServiceUnavailable(
        f"The service cannot tell now whether these message ids were already stored ({why}); nothing was "
        "written. Retry shortly with the same ids and content.",
        retry_after=max(1, settings.MEMORY_RETRY_BACKOFF_MAX // 2),
        code="idempotency_unknown",
    )


def _reserve_locked(
    *, tenant: Tenant, conversation_id: str, count: int, token: str, messages: Sequence[dict[str, Any]] = ()
) -> cache.Reservation:
    """Take the conversation's append lock and ``count`` seqs, waiting briefly for other appenders;
    ``messages`` are looked up in the ledger and reserved (``cache.reserve``)."""
    lock_ms = int(settings.MEMORY_APPEND_LOCK_TIMEOUT * 1000)
    deadline = time.monotonic() + settings.MEMORY_APPEND_LOCK_TIMEOUT
    pause = 0.001
    while True:
        reservation = cache.reserve(
            tenant_slug=tenant.slug,
            conversation_id=conversation_id,
            count=count,
            token=token,
            lock_ms=lock_ms,
            messages=messages,
        )
        if reservation is not None:
            return _above_database_floor(
                tenant=tenant, conversation_id=conversation_id, count=count, reservation=reservation, messages=messages
            )
        if time.monotonic() > deadline:
            raise ServiceUnavailable(
                f"Conversation {conversation_id} is busy with other writes; retry shortly.",
                retry_after=1,
                code="conversation_busy",
            )
        time.sleep(pause)
        pause = min(pause * 2, 0.02)


def _above_database_floor(
    *,
    tenant: Tenant,
    conversation_id: str,
    count: int,
    reservation: cache.Reservation,
    messages: Sequence[dict[str, Any]] = (),
) -> cache.Reservation:
    """Reserve again above the database's highest seq when Redis had forgotten the last one.

    Redis keeps the last seq for a while after the last write; once it expires or Redis restarts,
    the clock alone could fall below a seq the database holds (handed out while Redis was down, by
    a host whose clock runs ahead) or below an erased conversation's tombstone.
    """
    if reservation.known:
        return reservation
    try:
        floor = _database_seq_floor(tenant=tenant, conversation_id=conversation_id)
    except DatabaseError:
        return reservation  # nothing to compare with; the clock is the best we have
    if floor < reservation.first_seq:
        return reservation
    # We hold the lock (or need none): reserve again without taking it, recording the messages not
    # found with their new seqs. The skipped seqs are unused.
    fresh = [message for message, found in zip(messages, reservation.found, strict=True) if found is None]
    again = cache.reserve(
        tenant_slug=tenant.slug,
        conversation_id=conversation_id,
        count=count,
        token="",
        lock_ms=0,
        seq_floor=floor,
        messages=fresh,
        look_up=False,
    )
    return dataclasses.replace(reservation, first_seq=again.first_seq)


def _database_seq_floor(*, tenant: Tenant, conversation_id: str) -> int:
    """The highest seq or revision the database holds for this conversation, erased or not."""
    conversation = (
        Conversation.objects.for_tenant(tenant)
        .filter(conversation_id=conversation_id)
        .values_list("last_seq", "memory_revision")
        .first()
    )
    tombstone = _tombstone_floors(tenant=tenant, conversation_id=conversation_id)
    return max(*(conversation or (0, 0)), tombstone.erased_before_seq)


def _append_through_cache(
    *,
    tenant: Tenant,
    conversation_id: str,
    messages: list[dict[str, Any]],
    client_ids: set[str],
    user_id: str,
    agent_id: str,
) -> _Appended:
    """The append path with Redis up. Under the conversation's append lock:

    1. ``cache.reserve`` hands out the seqs and looks each id up in the ledger: acknowledged or
       persisted (its message key, the pending writes) comes back as it was stored (or 409 if the
       content differs); reserved (an earlier attempt crashed or its publish was indeterminate) is
       published again with its own seq; not found, it is reserved with its new seq.
    2. A client's id not in the ledger is looked for in PostgreSQL. If PostgreSQL does not answer,
       or the ledger is not whole (Redis lost pending writes that may still be queued:
       ``ledger_whole``) and PostgreSQL does not have it, it is unknown: 503 ``idempotency_unknown``,
       nothing written. (A cached list cannot stand in for PostgreSQL: a row committed while Redis
       did not answer, or a write on its way, may be missing from it.)
    3. The persist task is published and confirmed. Refused: 503 ``broker_unavailable``, the new
       reservations dropped. Indeterminate (sent, confirm lost): 503 ``write_indeterminate`` with the
       ids and seqs, the reservations kept, so a resend publishes the same seqs again.
    4. The messages join the cached list and the pending writes, leaving the reserved ones; the lock
       is released in the same script.
    """
    token = uuid.uuid4().hex
    reservation = _reserve_locked(
        tenant=tenant, conversation_id=conversation_id, count=len(messages), token=token, messages=messages
    )
    fresh: list[str] = []  # reserved now: dropped unless published
    published = False
    try:
        answers: list[dict[str, Any] | None] = [None] * len(messages)
        to_publish: list[dict[str, Any]] = []
        new = [False] * len(messages)
        unknown: list[int] = []
        for index, (message, found) in enumerate(zip(messages, reservation.found, strict=True)):
            if found is None:
                fresh.append(message["id"])
                if message["id"] in client_ids:
                    unknown.append(index)
                else:
                    answers[index] = message | {"seq": reservation.first_seq + index}
                    new[index] = True
            elif found.stored:
                answers[index] = _known(found.message, message)
            else:  # reserved by an earlier attempt: publish it again with its own seq
                answers[index] = _known(found.message, message)
                to_publish.append(answers[index])
        if unknown:
            stored = _look_up_unknown(
                tenant=tenant,
                conversation_id=conversation_id,
                ids=[messages[index]["id"] for index in unknown],
                ledger_whole=reservation.ledger_whole,
            )
            for index in unknown:
                message = messages[index]
                if message["id"] in stored:
                    answers[index] = _known(stored[message["id"]], message)
                else:
                    answers[index] = message | {"seq": reservation.first_seq + index}
                    new[index] = True
        to_publish += [answer for answer, is_new in zip(answers, new, strict=True) if is_new and answer is not None]
        to_publish.sort(key=lambda message: message["seq"])
        if not to_publish:
            _release_quietly(tenant=tenant, conversation_id=conversation_id, token=token, unreserve=fresh)
            return _Appended(messages=[answer for answer in answers if answer is not None], new=new)
        try:
            _publish_persist(
                tenant=tenant, conversation_id=conversation_id, messages=to_publish, user_id=user_id, agent_id=agent_id
            )
        except PublishIndeterminate as error:
            published = True  # it may be in the queue: every reservation stays for the resend
            error.details = {"messages": [{"id": answer["id"], "seq": answer["seq"]} for answer in answers if answer]}
            raise
    except BaseException:
        # Not published: the reservations made now go; the ones of earlier attempts stay (their
        # first publish may be in the queue).
        _release_quietly(tenant=tenant, conversation_id=conversation_id, token=token, unreserve=[] if published else fresh)
        raise
    # Durable from here on: whatever fails next, the answer is 201 and the worker completes the cache.
    try:
        if not reservation.cached:
            # Warm the cache under our lock so the list the messages join holds the whole window.
            try:
                conversation_ensure(tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
                cache_rebuild(tenant=tenant, conversation_id=conversation_id, allow_empty=True)
            except DatabaseError:
                metrics.fallbacks.labels(kind="write_without_database").inc()
                logger.warning("append_database_unavailable", tenant=tenant.slug, conversation_id=conversation_id)
        stale = [message_id for message_id in fresh if message_id not in {m["id"] for m in to_publish}]
        if stale:  # found in PostgreSQL after all: not published, not pending
            _release_quietly(tenant=tenant, conversation_id=conversation_id, token="", unreserve=stale)
        cache.merge(
            tenant_slug=tenant.slug,
            conversation_id=conversation_id,
            messages=to_publish,
            mode="pending",
            ttl=tenant.setting("MEMORY_TTL_EXTENDED"),
            token=token,
        )
    except cache.CacheUnavailable as error:
        logger.warning("append_cache_merge_failed", tenant=tenant.slug, conversation_id=conversation_id, error=str(error))
        _release_quietly(tenant=tenant, conversation_id=conversation_id, token=token)
    return _Appended(messages=[answer for answer in answers if answer is not None], new=new)


def _look_up_unknown(*, tenant: Tenant, conversation_id: str, ids: list[str], ledger_whole: bool) -> dict[str, dict[str, Any]]:
    """Client ids the ledger does not hold: the ones PostgreSQL has, by id.

    Raises ServiceUnavailable (``idempotency_unknown``) when an id found nowhere may still be a
    write on its way to PostgreSQL, or PostgreSQL cannot be asked.
    """
    try:
        stored = _stored_messages(tenant=tenant, conversation_id=conversation_id, message_ids=ids)
    except DatabaseError:
        raise _idempotency_unknown(conversation_id, "PostgreSQL does not answer") from None
    if len(stored) < len(ids) and not (ledger_whole or ledger_is_whole(tenant=tenant, conversation_id=conversation_id)):
        raise _idempotency_unknown(conversation_id, "Redis lost writes that may still be queued")
    return stored


def _stored_messages(*, tenant: Tenant, conversation_id: str, message_ids: list[str]) -> dict[str, dict[str, Any]]:
    """This conversation's rows with these ids, by id. Raises DatabaseError."""
    rows = (
        Message.objects.for_tenant(tenant)
        .filter(conversation__conversation_id=conversation_id, message_id__in=message_ids)
        .values(*MESSAGE_COLUMNS)
    )
    return {str(values["message_id"]): message_from_values(values) for values in rows}


# --- The ledger after Redis lost it ------------------------------------------------------------------


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
        publish_args(tasks.ledger_barrier, since, barrier)
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


def _ledger_begun(status: cache.LedgerStatus) -> None:
    """This append began the ledger: the first a deployment ever begins is whole at once (no write
    was acknowledged before it); a later one replaces a ledger Redis lost. PostgreSQL keeps the
    record; if it cannot be asked, the ledger is taken as a replacement (the safe side)."""
    try:
        with transaction.atomic():
            first = not LedgerEpoch.objects.exists()
            LedgerEpoch.objects.get_or_create(since=status.since)
    except DatabaseError as error:
        logger.warning("ledger_epoch_unrecorded", since=status.since, error=str(error))
        return
    if first:
        cache.ledger_mark(since=status.since, event="drained_at")
        cache.ledger_mark(since=status.since, event="whole_at")
    logger.info("ledger_begun", since=status.since, first=first)


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
    from memoryproject.celery import app

    replies = app.control.broadcast("ledger_generation", reply=True, timeout=LEDGER_INQUIRY_SECONDS)
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


def conversation_ensure(*, tenant: Tenant, conversation_id: str, user_id: str = "", agent_id: str = "") -> Conversation:
    """The conversation row, created now if this is its first write (loaded without its memory document).

    Appends need it at once only for the first write (a cold cache is the cheap sign of that; the
    worker creates the row anyway, so a database that does not answer only delays it); checkpoints
    are written synchronously and need it always.
    """
    conversations = Conversation.objects.for_tenant(tenant).defer("memory", "metadata")
    try:
        with transaction.atomic():
            conversation, _ = conversations.get_or_create(
                tenant=tenant, conversation_id=conversation_id, defaults={"user_id": user_id, "agent_id": agent_id}
            )
            return conversation
    except IntegrityError:
        return conversations.get(conversation_id=conversation_id)  # created concurrently


def _release_quietly(*, tenant: Tenant, conversation_id: str, token: str, unreserve: Sequence[str] = ()) -> None:
    try:
        cache.release(tenant_slug=tenant.slug, conversation_id=conversation_id, token=token, unreserve=unreserve)
    except cache.CacheUnavailable:
        pass  # The lock expires by itself; a reservation left behind only makes a resend publish again.


def _append_through_database(
    *,
    tenant: Tenant,
    conversation_id: str,
    messages: list[dict[str, Any]],
    client_ids: set[str],
    user_id: str,
    agent_id: str,
) -> _Appended:
    """Redis is down: the messages are committed to PostgreSQL here, under the conversation row's
    lock, with seqs from that row (the same hybrid clock); the 201 means committed.

    Redis's ledger cannot be asked, so a client's id PostgreSQL does not hold is unknown: it may be a
    write acknowledged a moment ago, still queued or inside a worker's statement (a queue's count
    does not show the messages workers hold). 503 ``idempotency_unknown``; writes without ids are taken.
    The conversation is marked for cache repair, and a persist task is published (best effort) so
    a worker settles the rows into the cache once Redis is back.
    """
    try:
        with transaction.atomic():
            last_seq = _reserve_seqs_in_database(
                tenant=tenant, conversation_id=conversation_id, count=len(messages), user_id=user_id, agent_id=agent_id
            )
            asked = [message["id"] for message in messages if message["id"] in client_ids]
            stored = _stored_messages(tenant=tenant, conversation_id=conversation_id, message_ids=asked) if asked else {}
            if len(stored) < len(asked):
                raise _idempotency_unknown(conversation_id, "Redis does not answer and writes may still be queued")
            first = last_seq - len(messages) + 1
            answers = [
                _known(stored[message["id"]], message) if message["id"] in stored else message | {"seq": first + index}
                for index, message in enumerate(messages)
            ]
            new = [message["id"] not in stored for message in messages]
            fresh = [answer for answer, is_new in zip(answers, new, strict=True) if is_new]
            if fresh:
                payload = _persist_payload(
                    tenant=tenant, conversation_id=conversation_id, messages=fresh, user_id=user_id, agent_id=agent_id
                )
                outcome = _persist_outcome(payload=payload, persisted=_persist_rows([payload])[_persist_key(payload)])
                if outcome.conflicts:  # stored concurrently with other content
                    raise Conflict(
                        f"Message id {outcome.conflicts[0]} is already used by another message.",
                        details={"id": outcome.conflicts[0]},
                    )
                # A worker committed one of them in between (with the seq it was acknowledged with): that one stands.
                raced = {m["id"] for m in outcome.removed}
                if raced:
                    again = _stored_messages(tenant=tenant, conversation_id=conversation_id, message_ids=list(raced))
                    for index, message in enumerate(messages):
                        if message["id"] in again:
                            answers[index], new[index] = _known(again[message["id"]], message), False
            CacheRepair.unscoped.get_or_create(tenant=tenant, conversation_id=conversation_id)  # any tenant: repair queue
    except DatabaseError as error:
        raise ServiceUnavailable(
            "Neither Redis nor PostgreSQL answers; the message was not stored. Retry shortly.", code="backends_unavailable"
        ) from error
    if fresh:
        try:  # the rows are committed: this only brings them into the cache sooner
            publish(_task("messages_persist"), payload)
        except ServiceUnavailable:
            logger.warning("append_settle_unpublished", tenant=tenant.slug, conversation_id=conversation_id)
    return _Appended(messages=answers, new=new)


def _task(name: str) -> Any:
    from conversations import tasks

    return getattr(tasks, name)


def queue_depth(queue: str) -> int:
    """Messages ready in a broker queue (not counting those delivered to a worker)."""
    from memoryproject.celery import app

    with app.producer_or_acquire() as producer:
        _, depth, _ = producer.channel.queue_declare(queue, passive=True)
        return depth


# Seqs from PostgreSQL when Redis is down: the same hybrid clock, kept on the conversation row.
RESERVE_SEQS_SQL = """
    INSERT INTO conversation_memories
        (tenant_id, conversation_id, user_id, agent_id, archived, memory, metadata, memory_revision,
         last_seq, message_count, token_count, created_at, updated_at)
    VALUES (%s, %s, %s, %s, false, '{}', '{}', 0, %s, 0, 0, now(), now())
    ON CONFLICT (tenant_id, conversation_id) DO UPDATE
        SET last_seq = GREATEST(conversation_memories.last_seq + %s, EXCLUDED.last_seq)
    RETURNING last_seq
"""


def _reserve_seqs_in_database(*, tenant: Tenant, conversation_id: str, count: int, user_id: str, agent_id: str) -> int:
    with connection.cursor() as cursor:
        cursor.execute(RESERVE_SEQS_SQL, [tenant.pk, conversation_id, user_id, agent_id, _now_microseconds() + count - 1, count])
        return cursor.fetchone()[0]


def _persist_payload(
    *, tenant: Tenant, conversation_id: str, messages: list[dict[str, Any]], user_id: str, agent_id: str
) -> dict[str, Any]:
    return {
        "tenant_id": tenant.pk,
        "tenant_slug": tenant.slug,
        "conversation_id": conversation_id,
        "user_id": user_id,
        "agent_id": agent_id,
        "acknowledged_at": time.time(),
        "messages": messages,
    }


def _publish_persist(
    *, tenant: Tenant, conversation_id: str, messages: list[dict[str, Any]], user_id: str, agent_id: str
) -> None:
    _persist_group.publish(
        _persist_payload(tenant=tenant, conversation_id=conversation_id, messages=messages, user_id=user_id, agent_id=agent_id)
    )


@dataclass(eq=False)
class _Waiting:
    payload: dict[str, Any]
    done: threading.Event = field(default_factory=threading.Event)
    lead: bool = False  # handed the work over by the previous leader (or first to come)
    error: BaseException | None = None


class _Relay:
    """Payloads of concurrent threads and the one thread that works through them (group commit).

    A thread queues its payload (``_join``); the first to come leads at once. A leader takes what
    waits (``_take``, at most a group), does the work for all of it, then hands the lead to the next
    waiting thread and wakes the ones it did the work for (``_hand_over``).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: list[_Waiting] = []
        self._running = False

    def _join(self, payload: dict[str, Any]) -> _Waiting:
        mine = _Waiting(payload)
        with self._lock:
            self._queue.append(mine)
            mine.lead = not self._running
            self._running = True
        return mine

    def _take(self, limit: int) -> list[_Waiting]:
        with self._lock:
            batch = self._queue[:limit]
            del self._queue[: len(batch)]
        return batch

    def _hand_over(self, batch: list[_Waiting], mine: _Waiting) -> None:
        with self._lock:
            successor = self._queue[0] if self._queue else None
            self._running = successor is not None
            if successor is not None:
                successor.lead = True
        if successor is not None:
            successor.done.set()
        for waiting in batch:
            if waiting is not mine:
                waiting.done.set()


class PersistGroup(_Relay):
    """Concurrent appenders of one process share the broker's confirm round trip (group commit).

    The first appender publishes its payload at once, alone. Payloads that arrive while a publish
    waits for its confirm queue up; when it is confirmed, the next waiting appender publishes all of
    them as one ``messages_persist_many`` task, and so on. Nobody returns before the message holding
    its payload is confirmed, so a 201 still means durable; one client alone never waits for others.
    """

    def publish(self, payload: dict[str, Any]) -> None:
        mine = self._join(payload)
        if not mine.lead:
            if not mine.done.wait(settings.MEMORY_PUBLISH_WAIT):
                self._give_up(mine)
            if mine.error is not None:
                raise mine.error
            if not mine.lead:
                return
        self._publish_queued(mine)
        if mine.error is not None:
            raise mine.error

    def _give_up(self, mine: _Waiting) -> None:
        """Waited too long: leave the queue unpublished (503). A payload already handed the publishing,
        or already in a message being published, stays to see it through, so the group never stalls."""
        with self._lock:
            queued = not mine.lead and mine in self._queue
            if queued:
                self._queue.remove(mine)
        if queued:
            raise ServiceUnavailable(
                "The message broker did not confirm the write in time, so it was not stored. Retry shortly.",
                code="broker_unavailable",
            )
        mine.done.wait()  # the publish holding it ends within the broker's confirm and connect timeouts

    def _publish_queued(self, mine: _Waiting) -> None:
        """Publish what is queued (ours first among it), then hand over to the next waiting appender."""
        from conversations import tasks

        batch = self._take(settings.MEMORY_PUBLISH_GROUP)
        try:
            if len(batch) == 1:
                publish(tasks.messages_persist, batch[0].payload)
            else:
                publish_args(tasks.messages_persist_many, [waiting.payload for waiting in batch])
        except BaseException as error:
            for waiting in batch:
                waiting.error = error
        finally:
            self._hand_over(batch, mine)


_persist_group = PersistGroup()


def publish(task: Any, payload: dict[str, Any]) -> None:
    """Publish a task and wait for the broker's confirm; 503 if it refuses, cannot be reached, or
    its confirm is lost (``PublishIndeterminate``)."""
    publish_args(task, payload)


class PublishIndeterminate(ServiceUnavailable):
    """The message was sent but its confirm never came (the connection or the broker went away, or
    the confirm timed out): the broker may hold it or not. Not a refusal: a resend with the same ids
    is answered with the same seqs."""

    def __init__(self, message: str) -> None:
        super().__init__(message, code="write_indeterminate")


def publish_args(task: Any, *args: Any) -> None:
    try:
        _send_task(task, list(args))
    except _Indeterminate as error:
        metrics.publish_failures.labels(outcome="indeterminate").inc()
        logger.error("publish_indeterminate", task=task.name, error=repr(error.__cause__))
        raise PublishIndeterminate(
            "The message broker may or may not have stored the write (its confirm was lost). Resend the same "
            "messages with the ids listed here: the service answers them with the same seqs, never twice."
        ) from error.__cause__
    except Exception as error:  # refused (nacked), or never sent: the broker could not be reached
        metrics.publish_failures.labels(outcome="refused").inc()
        logger.error("publish_failed", task=task.name, error=repr(error))
        raise ServiceUnavailable(
            "The message broker did not take the write, so nothing was stored. Retry shortly.",
            code="broker_unavailable",
        ) from error


class _Indeterminate(Exception):
    """Raised from a publish whose message may have reached the broker (see ``PublishIndeterminate``)."""


def _sent(error: BaseException) -> bool:
    """Whether a publish that raised ``error`` had written its message: the failure came while it
    waited for the confirm (a read), not while it connected or wrote. A nack is a refusal."""
    if isinstance(error, MessageNacked):
        return False
    trace = error.__traceback__
    while trace is not None:
        code = trace.tb_frame.f_code
        if code.co_name in ("wait", "drain_events", "read_frame") and "/amqp/" in code.co_filename:
            return True
        trace = trace.tb_next
    return isinstance(error, TimeoutError | socket.timeout)


def _send_task(task: Any, args: list[Any]) -> None:
    """Publish the message ``apply_async`` would, built by Celery's own builder (``as_task_v2``),
    without the routing and signal machinery around it: a quarter of what an append spends publishing.

    Persistent, on the durable queue (declared once per channel), confirmed by the broker before
    this returns. The first attempt does not retry: a pooled connection the broker dropped (a
    restart) is retried as ``apply_async`` would, reconnecting under ``CELERY_TASK_PUBLISH_RETRY_POLICY``.
    A failure after the message was written raises ``_Indeterminate`` (the broker may hold it).
    Celery would put a repr of the payload in a header too: time spent on every append for a copy
    nobody needs (the payload is the body).
    """
    app = task.app
    headers, properties, body, _ = app.amqp.as_task_v2(
        kombu_uuid(), task.name, args, {}, argsrepr=f"({len(args)} withheld)", kwargsrepr="{}"
    )
    queue = app.amqp.queues[settings.MEMORY_QUEUE]
    options = dict(
        exchange="",
        routing_key=queue.name,
        serializer="json",
        delivery_mode=PERSISTENT_DELIVERY_MODE,
        declare=[queue],
        headers=headers,
        **properties,
    )
    confirm_timeout = settings.CELERY_BROKER_TRANSPORT_OPTIONS.get("confirm_timeout")
    if confirm_timeout is not None:
        # Kombu hands transport options to py-amqp's Connection, which ignores ``confirm_timeout``:
        # without it here, a publish would wait for its confirm for ever. (The embedded run's Redis
        # transport has no confirms, and no such option.)
        options["confirm_timeout"] = confirm_timeout
    with app.producer_or_acquire() as producer:
        connection = producer.connection
        sent = False
        try:
            producer.publish(body, retry=False, **options)
            return
        except connection.recoverable_connection_errors + connection.recoverable_channel_errors as error:
            sent = _sent(error)
        except Exception as error:
            if _sent(error):
                raise _Indeterminate() from error
            raise
        try:
            producer.publish(body, retry=True, retry_policy=app.conf.task_publish_retry_policy, **options)
        except Exception as error:
            if sent or _sent(error):
                raise _Indeterminate() from error
            raise


# --- Persist (worker side) --------------------------------------------------------------------


class PersistConflict(Exception):
    """A message id is already stored with other content: retrying cannot help."""


# Payloads persisted in one statement, whatever their tenants and conversations: each message not
# erased by its conversation's tombstone is inserted (one already stored, by id or by seq, is
# skipped: ON CONFLICT), each conversation's counters grow by what was inserted into it and an empty
# owner is filled in. It answers, per conversation, its pk (NULL: no row yet, nothing inserted), the
# tombstone's floor and the (message id, seq) pairs it inserted.
PERSIST_SQL = """
    WITH payload AS (
        SELECT * FROM jsonb_to_recordset(%(payloads)s::jsonb) AS p(
            tenant bigint, conversation text, tombstones jsonb, user_id text, agent_id text, messages jsonb
        )
    ), conversation AS (
        SELECT DISTINCT ON (p.tenant, p.conversation) p.tenant, p.conversation, c.id,
            COALESCE((
                SELECT max(t.erased_before_seq) FROM conversations_tombstone t
                WHERE t.tenant_id = p.tenant
                    AND t.conversation_key = ANY (ARRAY(SELECT jsonb_array_elements_text(p.tombstones)))
            ), 0) AS floor
        FROM payload p
        LEFT JOIN conversation_memories c ON c.tenant_id = p.tenant AND c.conversation_id = p.conversation
    ), inserted AS (
        INSERT INTO conversation_messages
            (message_id, tenant_id, conversation_id, seq, role, content, metadata, archived, token_count,
             created_at, persisted_at)
        SELECT m.id, k.tenant, k.id, m.seq, m.role, m.content, COALESCE(m.metadata, '{}'), false,
               COALESCE(m.token_count, 0), m.created_at, now()
        FROM payload p
        JOIN conversation k ON k.tenant = p.tenant AND k.conversation = p.conversation AND k.id IS NOT NULL
        CROSS JOIN LATERAL jsonb_to_recordset(p.messages) AS m(
            id uuid, seq bigint, role text, content text, metadata jsonb, token_count integer, created_at timestamptz
        )
        WHERE m.seq >= k.floor
        ORDER BY k.id, m.seq
        ON CONFLICT DO NOTHING
        RETURNING conversation_id, message_id, seq, token_count
    ), added AS (
        SELECT conversation_id, count(*) AS count, sum(token_count) AS tokens, max(seq) AS last_seq
        FROM inserted GROUP BY conversation_id
    ), owner AS (
        SELECT tenant, conversation, max(NULLIF(user_id, '')) AS user_id, max(NULLIF(agent_id, '')) AS agent_id
        FROM payload GROUP BY tenant, conversation
    ), counted AS (
        UPDATE conversation_memories AS c
        SET message_count = c.message_count + COALESCE(a.count, 0),
            token_count = c.token_count + COALESCE(a.tokens, 0),
            last_seq = GREATEST(c.last_seq, a.last_seq),
            updated_at = CASE WHEN a.count > 0 THEN now() ELSE c.updated_at END,
            user_id = CASE WHEN c.user_id = '' THEN COALESCE(o.user_id, '') ELSE c.user_id END,
            agent_id = CASE WHEN c.agent_id = '' THEN COALESCE(o.agent_id, '') ELSE c.agent_id END
        FROM conversation k
        JOIN owner o ON o.tenant = k.tenant AND o.conversation = k.conversation
        LEFT JOIN added a ON a.conversation_id = k.id
        WHERE c.id = k.id
            AND (a.count > 0 OR (c.user_id = '' AND o.user_id IS NOT NULL) OR (c.agent_id = '' AND o.agent_id IS NOT NULL))
    )
    SELECT k.tenant, k.conversation, k.id, k.floor,
        (SELECT json_agg(json_build_array(i.message_id, i.seq)) FROM inserted i WHERE i.conversation_id = k.id)
    FROM conversation k
"""


@dataclass(frozen=True)
class _Persisted:
    """What ``PERSIST_SQL`` answered for one conversation."""

    pk: int | None
    floor: int
    inserted: frozenset[tuple[str, int]]  # (message id, seq)


def _persist_key(payload: dict[str, Any]) -> tuple[int, str]:
    return payload["tenant_id"], payload["conversation_id"]


def _persist_statement(payloads: Sequence[dict[str, Any]]) -> dict[tuple[int, str], _Persisted]:
    rows = [
        {
            "tenant": payload["tenant_id"],
            "conversation": payload["conversation_id"],
            "tombstones": tombstone_keys(payload["conversation_id"]),
            "user_id": payload.get("user_id", ""),
            "agent_id": payload.get("agent_id", ""),
            "messages": payload["messages"],
        }
        for payload in payloads
    ]
    with connection.cursor() as cursor:
        cursor.execute(PERSIST_SQL, {"payloads": json.dumps(rows)})
        return {
            (tenant, conversation): _Persisted(pk=pk, floor=floor, inserted=frozenset(map(tuple, inserted or ())))
            for tenant, conversation, pk, floor, inserted in cursor.fetchall()
        }


def _persist_rows(payloads: Sequence[dict[str, Any]]) -> dict[tuple[int, str], _Persisted]:
    """Run ``PERSIST_SQL`` for these payloads. A conversation without a row is created, then its
    payloads run again: one statement cannot insert a conversation and rows that refer to it."""
    found = _persist_statement(payloads)
    missing = []
    for payload in payloads:
        persisted = found[_persist_key(payload)]
        if persisted.pk is None and any(m["seq"] >= persisted.floor for m in payload["messages"]):
            missing.append(payload)
    if missing:
        for payload in missing:
            _conversation_create(
                tenant_id=payload["tenant_id"],
                conversation_id=payload["conversation_id"],
                user_id=payload.get("user_id", ""),
                agent_id=payload.get("agent_id", ""),
            )
        found.update(_persist_statement(missing))
    return found


def messages_persist(*, payload: dict[str, Any]) -> int:
    """Commit a batch of acknowledged messages; idempotent. Returns the rows inserted."""
    found = _persist_rows([payload])
    outcome = _persist_outcome(payload=payload, persisted=found[_persist_key(payload)])
    _settle([outcome])
    if (conflict := outcome.conflict()) is not None:
        raise conflict
    return outcome.inserted


def messages_persist_group(*, payloads: Sequence[dict[str, Any]]) -> list[Exception | None]:
    """Commit the payloads of concurrent appends together: one statement, or each on its own if that
    statement fails (one bad payload must not hold the others back). Answers, per payload, the error
    it met (to be retried alone) or None; what they committed settles in one Redis round trip, and
    the derived memory is queued once per conversation."""
    try:
        with transaction.atomic():  # a savepoint when the caller holds a transaction
            found: dict[tuple[int, str], _Persisted] | None = _persist_rows(payloads)
    except DatabaseError as error:
        logger.warning("persist_group_split", payloads=len(payloads), error=str(error))
        found = None

    def outcome_of(payload: dict[str, Any]) -> _Outcome:
        if found is not None:
            return _persist_outcome(payload=payload, persisted=found[_persist_key(payload)])
        with transaction.atomic():
            return _persist_outcome(payload=payload, persisted=_persist_rows([payload])[_persist_key(payload)])

    outcomes: list[_Outcome | Exception] = []
    for payload in payloads:
        try:
            outcomes.append(outcome_of(payload))
        except Exception as error:  # retried alone by the caller, with its own retries and dead letter
            outcomes.append(error)
    _settle([outcome for outcome in outcomes if isinstance(outcome, _Outcome)])
    return [outcome if isinstance(outcome, Exception) else outcome.conflict() for outcome in outcomes]


class PersistCommits(_Relay):
    """Persist tasks running at once in one worker process share a statement (group commit, as
    ``PersistGroup`` shares a publish on the appending side).

    The first task persists its payload at once, alone. Payloads whose tasks start while a statement
    runs wait; when it is done, the next waiting task persists all of them together
    (``messages_persist_group``, one statement, and each payload alone if that one fails). Each task
    still answers for its own payload only: it returns once that payload is committed and settled,
    or raises that payload's own error, to be retried or dead-lettered as if it had run alone. A
    worker under load spends one statement, not one per task: a single-message payload costs
    PostgreSQL about 1.5 ms of CPU alone and 0.5 ms in a group of eight.
    """

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def persist(self, payload: dict[str, Any]) -> None:
        mine = self._join(payload)
        if not mine.lead:
            mine.done.wait()  # set by the task whose statement holds this payload, or hands over to us
        if mine.lead:
            self._persist_queued(mine)
        if mine.error is not None:
            raise mine.error

    def _persist_queued(self, mine: _Waiting) -> None:
        batch = self._take(self.limit)
        try:
            if len(batch) == 1:
                try:
                    messages_persist(payload=batch[0].payload)
                except Exception as error:
                    batch[0].error = error
            else:
                errors = messages_persist_group(payloads=[waiting.payload for waiting in batch])
                for waiting, error in zip(batch, errors, strict=True):
                    waiting.error = error
        except BaseException as error:  # what the group could not even try: every payload's error
            for waiting in batch:
                waiting.error = error
        finally:
            self._hand_over(batch, mine)


persist_commits = PersistCommits(limit=64)


@dataclass
class _Outcome:
    """What the statement did with one payload, and what the cache must do about it."""

    payload: dict[str, Any]
    inserted: int
    settled: list[dict[str, Any]]  # committed by this payload, or before it with the same seq (a redelivery)
    removed: list[dict[str, Any]]  # erased before the commit, or a resend's second copy
    conflicts: list[str]  # ids stored with other content

    def conflict(self) -> PersistConflict | None:
        if not self.conflicts:
            return None
        return PersistConflict(f"message ids already stored with other content: {', '.join(self.conflicts)}")


def _persist_outcome(*, payload: dict[str, Any], persisted: _Persisted) -> _Outcome:
    """After the statement, one payload: what it inserted settles in the cache; a message it did not
    insert is read back. A redelivery finds its rows stored (settled), a resend that got a second seq
    finds the first copy (its own seq leaves the cache), an id stored with other content, or a seq
    taken by another message, is a conflict. Logs the payload's rows and lag."""
    tenant_id, conversation_id, messages = payload["tenant_id"], payload["conversation_id"], payload["messages"]
    erased = [m for m in messages if m["seq"] < persisted.floor]
    mine = {(m["id"], m["seq"]) for m in messages} & persisted.inserted
    stored_before = {m["id"] for m in messages if m["seq"] >= persisted.floor and (m["id"], m["seq"]) not in mine}
    if stored_before and persisted.pk is None:  # the create failed for want of its tenant
        raise PersistConflict(f"conversation {conversation_id} cannot be created: tenant {tenant_id} does not exist")
    rows = {}
    if stored_before:
        rows = {
            str(values["message_id"]): message_from_values(values)
            for values in Message.objects.for_tenant(tenant_id)
            .filter(conversation_id=persisted.pk, message_id__in=list(stored_before))
            .values(*MESSAGE_COLUMNS)
        }
    settled, losers, conflicts = [], [], []
    for m in messages:
        if (m["id"], m["seq"]) in mine:
            settled.append(m)
        elif m["id"] in stored_before:
            row = rows.get(m["id"])
            if row is None or not _same_message(row, m):
                conflicts.append(m["id"])
            elif row["seq"] == m["seq"]:
                settled.append(m)  # persisted before: a redelivery
            else:
                losers.append(m)  # a resend that got a second seq: the first copy stays
    inserted = len(mine)
    lag = max(0.0, time.time() - payload.get("acknowledged_at", time.time()))
    metrics.persisted.inc(inserted)
    metrics.persist_lag.observe(lag)
    logger.info(
        "messages_persisted",
        tenant=payload.get("tenant_slug"),
        conversation_id=conversation_id,
        inserted=inserted,
        lag_ms=round(lag * 1000, 3),
    )
    return _Outcome(payload=payload, inserted=inserted, settled=settled, removed=losers + erased, conflicts=conflicts)


def _settle(outcomes: Sequence[_Outcome]) -> None:
    """What a statement committed, in the cache in one Redis round trip: every payload's messages
    settle, and the conversations it added rows to claim their derived memory, once each, published
    here. A payload the cache could not settle is marked for repair.

    Each derived task reads the conversation's messages when it starts, so one already queued for
    the conversation (marked in Redis) will find these too: it is not queued twice. A task clears its
    mark before reading (``derived_started``), so a write persisted after that queues it again. Best
    effort: the messages are committed whatever happens here. A vector missed now is found by the
    hourly backfill; a summary missed now is made by the next persist, which finds it still due.
    """
    changed = {_persist_key(o.payload): o.payload["tenant_slug"] for o in outcomes if o.inserted}
    settlements = [
        cache.Settlement(
            tenant_slug=o.payload["tenant_slug"],
            conversation_id=o.payload["conversation_id"],
            settled=o.settled,
            removed=o.removed,
        )
        for o in outcomes
    ]
    claims = [(tenant_slug, conversation_id) for (_, conversation_id), tenant_slug in changed.items()]
    try:
        result = cache.settle(
            settlements,
            ttl=settings.MEMORY_TTL_EXTENDED,
            claims=claims,
            tasks=DERIVED_TASKS,
            claim_ttl=DERIVED_QUEUED_TTL,
        )
        failed, claimed = result.failed, result.claimed
    except cache.CacheUnavailable as error:
        failed, claimed = [str(error)] * len(outcomes), [None] * len(claims)
    for outcome, error in zip(outcomes, failed, strict=True):
        if error:
            _settle_failed(payload=outcome.payload, error=error)
    for ((tenant_id, conversation_id), tenant_slug), names in zip(changed.items(), claimed, strict=True):
        _derived_publish(
            tenant_id=tenant_id,
            tenant_slug=tenant_slug,
            conversation_id=conversation_id,
            names=list(DERIVED_TASKS) if names is None else names,  # no marks to go by: queue them all
        )


def _settle_failed(*, payload: dict[str, Any], error: str) -> None:
    """The cached list may now miss a committed row: mark it, the sweeper invalidates it later."""
    tenant_slug, conversation_id = payload["tenant_slug"], payload["conversation_id"]
    logger.warning("persist_cache_settle_failed", tenant=tenant_slug, conversation_id=conversation_id, error=error)
    CacheRepair.unscoped.get_or_create(tenant_id=payload["tenant_id"], conversation_id=conversation_id)  # repair queue
    from conversations import tasks

    tasks.cache_repair_sweep.apply_async(countdown=5)


DERIVED_TASKS = ("search.tasks.conversation_embed", "summaries.tasks.conversation_summarize")
# How long a derived task counts as queued for its conversation: past it, a write queues it again.
DERIVED_QUEUED_TTL = 60


def _derived_publish(*, tenant_id: int, tenant_slug: str, conversation_id: str, names: Sequence[str]) -> None:
    """Publish the derived tasks claimed for a conversation; one the broker refuses gives its mark back."""
    from memoryproject.celery import app

    for name in names:
        try:
            app.send_task(name, args=[tenant_id, conversation_id], queue=settings.MEMORY_DERIVED_QUEUE)
        except Exception as error:  # the broker refused: best effort (see _settle)
            logger.warning("derived_memory_unscheduled", task=name, conversation_id=conversation_id, error=repr(error))
            derived_started(tenant_slug=tenant_slug, conversation_id=conversation_id, task=name)


def derived_started(*, tenant_slug: str, conversation_id: str, task: str) -> None:
    """A derived task is about to read the conversation: later writes must queue it again."""
    try:
        cache.derived_release(tenant_slug=tenant_slug, conversation_id=conversation_id, task=task)
    except cache.CacheUnavailable:
        pass  # the mark expires by itself (DERIVED_QUEUED_TTL)


def _conversation_create(*, tenant_id: int, conversation_id: str, user_id: str, agent_id: str) -> None:
    try:
        with transaction.atomic():
            Conversation.objects.for_tenant(tenant_id).get_or_create(
                tenant_id=tenant_id, conversation_id=conversation_id, defaults={"user_id": user_id, "agent_id": agent_id}
            )
    except IntegrityError:
        pass  # created concurrently by another worker


def _conversation_for_update(*, tenant_id: int, conversation_id: str, user_id: str, agent_id: str) -> Conversation:
    _conversation_create(tenant_id=tenant_id, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
    conversation = Conversation.objects.for_tenant(tenant_id).select_for_update().get(conversation_id=conversation_id)
    if (user_id and not conversation.user_id) or (agent_id and not conversation.agent_id):
        conversation.user_id = conversation.user_id or user_id
        conversation.agent_id = conversation.agent_id or agent_id
        conversation.save(update_fields=["user_id", "agent_id"])
    return conversation


def dead_letter_record(*, task_name: str, payload: dict[str, Any], error: str, attempts: int) -> DeadLetter:
    """Keep a task that failed for good, whatever its payload holds: one PostgreSQL would refuse
    (a NUL, an unpaired surrogate, a non-finite number) is kept as its JSON text under ``"json"``,
    beside the ids that name its tenant and conversation. Raises DatabaseError (PostgreSQL down)."""
    storable_payload, kept_as_text = storable.recordable(payload)
    dead_letter = DeadLetter.unscoped.create(  # written by workers, for any tenant
        tenant_id=_tenant_id_of(payload),
        task_name=task_name,
        payload=storable_payload,
        error=storable.cleaned_text(error)[:10_000],
        attempts=attempts,
    )
    metrics.dead_letters.labels(task=task_name, storable=str(not kept_as_text).lower()).inc()
    logger.error("dead_letter_recorded", task=task_name, dead_letter=dead_letter.pk, error=error, payload_as_text=kept_as_text)
    return dead_letter


def _tenant_id_of(payload: Any) -> int | None:
    tenant_id = payload.get("tenant_id") if isinstance(payload, dict) else None
    if type(tenant_id) is not int or not Tenant.objects.filter(pk=tenant_id).exists():
        return None
    return tenant_id


def dead_letter_replay(*, dead_letter: DeadLetter) -> None:
    """Publish a dead letter's task again; its payload is idempotent, so replaying twice is safe."""
    from conversations import tasks

    task = {
        "conversations.tasks.messages_persist": tasks.messages_persist,
        "conversations.tasks.memory_persist": tasks.memory_persist,
    }[dead_letter.task_name]
    if storable.RECORDED_AS_TEXT in dead_letter.payload:
        raise Conflict(
            f"Dead letter {dead_letter.pk} holds values PostgreSQL cannot store (kept as JSON text): edit its payload "
            "into storable JSON before replaying it.",
            details={"dead_letter": dead_letter.pk},
        )
    publish(task, dead_letter.payload)
    DeadLetter.unscoped.filter(pk=dead_letter.pk).update(replayed_at=timezone.now())  # operator action
    logger.info("dead_letter_replayed", dead_letter=dead_letter.pk, task=dead_letter.task_name)


# --- Rebuild ----------------------------------------------------------------------------------


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
    from conversations import tasks

    publish_args(tasks.tenant_cache_rebuild, tenant.pk)


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


# --- Conversations ----------------------------------------------------------------------------


def conversation_create(
    *, tenant: Tenant, conversation_id: str, user_id: str = "", agent_id: str = "", metadata: dict | None = None
) -> Conversation:
    try:
        with transaction.atomic():
            return Conversation.objects.for_tenant(tenant).create(
                tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id, metadata=metadata or {}
            )
    except IntegrityError as error:
        raise Conflict(f"Conversation {conversation_id} already exists.", details={"conversation_id": conversation_id}) from error


def conversation_update(*, tenant: Tenant, conversation_id: str, changes: dict[str, Any]) -> Conversation:
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).first()
    if conversation is None:
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    for name, value in changes.items():
        setattr(conversation, name, value)
    conversation.save(update_fields=[*changes, "updated_at"])
    return conversation


@dataclass(frozen=True)
class TombstoneFloors:
    """What an erased conversation's tombstones say: seqs (and memory revisions) below these were erased."""

    erased_before_seq: int = 0
    memory_erased_before: int = 0


def _tombstone_floors(*, tenant: Tenant | int, conversation_id: str) -> TombstoneFloors:
    """The highest floors of the conversation's tombstones, under any of the tombstone secrets."""
    floors = (
        Tombstone.objects.for_tenant(tenant)
        .filter(conversation_key__in=tombstone_keys(conversation_id))
        .aggregate(seq=Max("erased_before_seq"), memory=Max("memory_erased_before"))
    )
    return TombstoneFloors(erased_before_seq=floors["seq"] or 0, memory_erased_before=floors["memory"] or 0)


def _tombstone_raise(*, tenant: Tenant, conversation_id: str, erased_before_seq: int, memory_erased_before: int) -> None:
    """Raise the conversation's tombstone to these floors (never lower it), creating it if needed. A
    tombstone keyed with an older secret is keyed again with the newest one (``tombstone_key``)."""
    keys = tombstone_keys(conversation_id)
    tombstones = list(Tombstone.objects.for_tenant(tenant).filter(conversation_key__in=keys).select_for_update())
    if not tombstones:
        tombstone, created = Tombstone.objects.for_tenant(tenant).get_or_create(
            tenant=tenant,
            conversation_key=keys[0],
            defaults={"erased_before_seq": erased_before_seq, "memory_erased_before": memory_erased_before},
        )
        if created:
            return
        tombstones = [tombstone]  # created meanwhile by another erase
    kept, *older = sorted(tombstones, key=lambda tombstone: keys.index(tombstone.conversation_key))
    kept.conversation_key = keys[0]
    kept.erased_before_seq = max(erased_before_seq, *(tombstone.erased_before_seq for tombstone in tombstones))
    kept.memory_erased_before = max(memory_erased_before, *(tombstone.memory_erased_before for tombstone in tombstones))
    if older:
        Tombstone.objects.for_tenant(tenant).filter(pk__in=[tombstone.pk for tombstone in older]).delete()
    kept.save(update_fields=["conversation_key", "erased_before_seq", "memory_erased_before"])


@dataclass(frozen=True)
class EraseResult:
    messages: int
    cache_keys: int


def conversation_erase(*, tenant: Tenant, conversation_id: str, messages_only: bool = False) -> EraseResult:
    """Erase a conversation everywhere: rows, cache keys, and writes still queued for it.

    With ``messages_only`` (clearing a chat history) the conversation row, its memory document and
    its checkpoints stay; its messages go. A tombstone with the next seq makes workers drop any
    queued message with an older seq (and, for a whole erase, any older memory save). The append
    lock is held throughout, so appends in flight finish first and their seqs are older.
    """
    token = uuid.uuid4().hex
    try:
        erased_before = _reserve_locked(tenant=tenant, conversation_id=conversation_id, count=1, token=token).first_seq
        cache_reached = True
    except cache.CacheUnavailable:
        cache_reached = False
        erased_before = _now_microseconds()
    try:
        pending = cache.pending(tenant_slug=tenant.slug, conversation_id=conversation_id) if cache_reached else []
        with transaction.atomic():
            conversation = (
                Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).select_for_update().first()
            )
            if conversation is None and not pending:
                raise NotFound(f"Conversation {conversation_id} does not exist.")
            if conversation is not None:
                erased_before = max(erased_before, conversation.last_seq + 1)
            # Counted apart from what goes with the messages (their vectors).
            deleted = (
                Message.objects.for_tenant(tenant)
                .filter(conversation__conversation_id=conversation_id)
                .delete()[1]
                .get(Message._meta.label, 0)
            )
            if messages_only:
                from summaries.models import Summary

                Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).update(
                    message_count=0, token_count=0, last_seq=erased_before, updated_at=timezone.now()
                )
                # Summaries quote the messages: they go with them (vectors go by cascade).
                Summary.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id).delete()
            else:
                Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).delete()
            _tombstone_raise(
                tenant=tenant,
                conversation_id=conversation_id,
                erased_before_seq=erased_before,
                memory_erased_before=0 if messages_only else erased_before,
            )
            CacheRepair.objects.for_tenant(tenant).filter(conversation_id=conversation_id).delete()
            if not cache_reached:
                CacheRepair.objects.for_tenant(tenant).create(tenant=tenant, conversation_id=conversation_id, erase=True)
    except BaseException:
        if cache_reached:
            _release_quietly(tenant=tenant, conversation_id=conversation_id, token=token)
        raise
    keys = 0
    if cache_reached:
        try:
            if messages_only:  # the memory document and the seq clock stay cached
                keys = cache.clear_messages(
                    tenant_slug=tenant.slug, conversation_id=conversation_id, token=token, erased_before=erased_before
                )
            else:  # the lock goes too
                keys = cache.erase(tenant_slug=tenant.slug, conversation_id=conversation_id, erased_before=erased_before)
        except cache.CacheUnavailable:
            CacheRepair.objects.for_tenant(tenant).get_or_create(
                tenant=tenant, conversation_id=conversation_id, defaults={"erase": True}
            )
    logger.info(
        "conversation_messages_cleared" if messages_only else "conversation_erased",
        tenant=tenant.slug,
        conversation_id=conversation_id,
        messages=deleted,
        cache_keys=keys,
    )
    return EraseResult(messages=deleted, cache_keys=keys)


@dataclass(frozen=True)
class UserEraseResult:
    conversations: int
    messages: int
    embeddings: int
    summaries: int
    checkpoints: int
    facts: int
    dead_letters: int
    cache_keys: int


def user_erase(*, tenant: Tenant, user_id: str) -> UserEraseResult:
    """Erase one user of a tenant everywhere: each of their conversations as ``conversation_erase``
    does (rows, cache keys, queued writes; with them their vectors, summaries and checkpoints), their
    facts and fact history, and the dead letters of their conversations. What stays is a tombstone per
    conversation holding a digest of its id, never the id. Repeating it erases what arrived since.
    """
    from checkpoints.models import Checkpoint
    from facts.services import user_facts_erase
    from search.models import MessageEmbedding
    from summaries.models import Summary

    conversation_ids = list(
        Conversation.objects.for_tenant(tenant).filter(user_id=user_id).values_list("conversation_id", flat=True)
    )
    owned = {"conversation__tenant": tenant, "conversation__user_id": user_id}
    embeddings = MessageEmbedding.objects.for_tenant(tenant).filter(**owned).count()
    summaries = Summary.objects.for_tenant(tenant).filter(**owned).count()
    checkpoints = Checkpoint.objects.for_tenant(tenant).filter(**owned).count()
    messages = cache_keys = 0
    for conversation_id in conversation_ids:
        try:
            result = conversation_erase(tenant=tenant, conversation_id=conversation_id)
        except NotFound:
            continue  # erased meanwhile
        messages += result.messages
        cache_keys += result.cache_keys
    facts = user_facts_erase(tenant=tenant, user_id=user_id)
    dead_letters = (
        DeadLetter.objects.for_tenant(tenant)
        .filter(Q(payload__conversation_id__in=conversation_ids) | Q(payload__user_id=user_id))
        .delete()[0]
    )
    logger.info("user_erased", tenant=tenant.slug, conversations=len(conversation_ids), messages=messages, facts=facts)
    return UserEraseResult(
        conversations=len(conversation_ids),
        messages=messages,
        embeddings=embeddings,
        summaries=summaries,
        checkpoints=checkpoints,
        facts=facts,
        dead_letters=dead_letters,
        cache_keys=cache_keys,
    )


def retention_sweep(*, now: datetime | None = None) -> int:
    """Erase every conversation idle for longer than its tenant's ``MEMORY_RETENTION_DAYS`` (0: kept);
    returns how many. Each goes as ``conversation_erase`` erases it, so nothing is left behind."""
    now = now or timezone.now()
    erased = 0
    for tenant in Tenant.objects.all():
        days = tenant.setting("MEMORY_RETENTION_DAYS")
        if not days:
            continue
        expired = Conversation.objects.for_tenant(tenant).filter(updated_at__lt=now - timedelta(days=days))
        count = 0
        for conversation_id in list(expired.values_list("conversation_id", flat=True)):
            try:
                conversation_erase(tenant=tenant, conversation_id=conversation_id)
            except NotFound:
                continue
            count += 1
        if count:
            logger.info("retention_swept", tenant=tenant.slug, days=days, conversations=count)
        erased += count
    return erased


# --- Memory document (save_memory) -------------------------------------------------------------


def memory_document(*, tenant: Tenant, conversation: Conversation) -> dict[str, Any]:
    """The memory document with its standardised metadata."""
    memory = conversation.memory or {}
    if memory.get("metadata"):
        return {"messages": memory.get("messages", []), "metadata": memory["metadata"]}  # as saved, as cached
    return {
        "messages": memory.get("messages", []),
        "metadata": {
            **(memory.get("metadata") or {}),
            "tenant_id": tenant.slug,
            "conversation_id": conversation.conversation_id,
            "agent_id": conversation.agent_id,
            "user_id": conversation.user_id,
            "updated_at": conversation.updated_at.astimezone(UTC).isoformat() if conversation.updated_at else None,
        },
    }


def memory_save(
    *, tenant: Tenant, conversation_id: str, document: dict[str, Any], agent_id: str = "", user_id: str = ""
) -> dict[str, Any]:
    """Save the memory document: broker-confirmed, then cached; a later save always wins. Its values
    pass the storable door first (400 naming the field)."""
    document = {
        "messages": storable.storable_json(document.get("messages", []), field="messages"),
        "metadata": storable.storable_json(document.get("metadata") or {}, field="metadata"),
    }
    revision = _memory_revision(tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
    now = timezone.now().astimezone(UTC).isoformat()
    metadata = {
        **(document.get("metadata") or {}),
        "tenant_id": tenant.slug,
        "conversation_id": conversation_id,
        "updated_at": now,
    }
    if agent_id:
        metadata["agent_id"] = agent_id
    if user_id:
        metadata["user_id"] = user_id
    saved = {"messages": document.get("messages", []), "metadata": metadata}
    from conversations import tasks

    publish(
        tasks.memory_persist,
        {
            "tenant_id": tenant.pk,
            "tenant_slug": tenant.slug,
            "conversation_id": conversation_id,
            "revision": revision,
            "document": saved,
            "user_id": user_id,
            "agent_id": agent_id,
        },
    )
    try:
        cache.set_memory(
            tenant_slug=tenant.slug,
            conversation_id=conversation_id,
            document=saved,
            revision=revision,
            ttl=tenant.setting("MEMORY_TTL_STANDARD"),
        )
    except cache.CacheUnavailable:
        metrics.fallbacks.labels(kind="write_without_cache").inc()
    return saved


def _memory_revision(*, tenant: Tenant, conversation_id: str, user_id: str, agent_id: str) -> int:
    try:
        reservation = cache.reserve(tenant_slug=tenant.slug, conversation_id=conversation_id, count=1, token="", lock_ms=0)
        if not reservation.known:  # possibly the first write of this conversation
            try:
                conversation_ensure(tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
            except DatabaseError:
                metrics.fallbacks.labels(kind="write_without_database").inc()
        return _above_database_floor(tenant=tenant, conversation_id=conversation_id, count=1, reservation=reservation).first_seq
    except cache.CacheUnavailable:
        return _now_microseconds()


def memory_persist(*, payload: dict[str, Any]) -> bool:
    """Store a memory document unless a newer revision is already stored (idempotent)."""
    tenant_id, conversation_id = payload["tenant_id"], payload["conversation_id"]
    with transaction.atomic():
        tombstone = _tombstone_floors(tenant=tenant_id, conversation_id=conversation_id)
        if payload["revision"] < tombstone.memory_erased_before:
            return False
        conversation = _conversation_for_update(
            tenant_id=tenant_id,
            conversation_id=conversation_id,
            user_id=payload.get("user_id", ""),
            agent_id=payload.get("agent_id", ""),
        )
        if conversation.memory_revision >= payload["revision"]:
            return False
        conversation.memory = payload["document"]
        conversation.memory_revision = payload["revision"]
        conversation.save(update_fields=["memory", "memory_revision", "updated_at"])
    return True


def conversation_or_404(*, tenant: Tenant, conversation_id: str) -> Conversation:
    conversation = Conversation.objects.for_tenant(tenant).filter(conversation_id=conversation_id).first()
    if conversation is None:
        raise NotFound(f"Conversation {conversation_id} does not exist.")
    return conversation

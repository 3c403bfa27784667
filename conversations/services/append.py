"""Append (step 1 of the write path): ``message_append``, from the API's request to a durable answer.

1. Every value passes the storable door (``core.storable``): what PostgreSQL, Redis or
   JSON would refuse later is refused now, with a 400 naming the field; so does a UUIDv7 id stamped
   ahead of the service's clock (``message_ids.check_stamp``).
2. Redis takes the conversation's append lock and hands out the seqs (``seqs._reserve_locked``),
   and says whose the conversation is: a ``user_id`` other than its user is a 409 ``user_mismatch``,
   nothing written (``lifecycle.user_check``);
   under that lock each message id is looked up in the ledger of writes not yet known to be
   persisted (reserved, pending, message keys), then in PostgreSQL: an id already known comes back
   with the seq it was given (the same content) or is a 409 (other content); an id that cannot be
   told new (Redis lost writes that may still be queued: ``ledger``, or PostgreSQL cannot be asked)
   is a 503 ``idempotency_unknown``, unless its UUIDv7 stamp proves it younger than the ledger
   (``message_ids``). The new ones are reserved, with their seqs, before anything is sent.
3. The persist task is published and confirmed by the broker (``publish``). Refused or unreachable:
   the lock and the new reservations are released, nothing was written, 503 ``broker_unavailable``.
   Sent but not confirmed: 503 ``write_indeterminate`` with the ids and seqs, the reservations kept,
   so a resend publishes the same seqs again.
4. The messages join the cached list and the pending hash in one script, which releases the lock:
   they are in the window at once (read-your-writes) and survive a rebuild until persisted.

With Redis down (``_append_through_database``), the messages are committed to PostgreSQL in the
request, with seqs from the conversation row, and the conversation is marked for cache repair; with
PostgreSQL down, the Redis path needs nothing from it but the check of a client's ids the ledger
does not hold.
"""

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from conversations import cache, metrics, tokens
from conversations.models import CacheRepair
from conversations.services import message_ids, publish
from conversations.services.ledger import ledger_recorded, ledger_vouches_new
from conversations.services.lifecycle import conversation_ensure
from conversations.services.messages import _same_message, stored_messages
from conversations.services.persist import _persist_key, _persist_outcome, _persist_rows
from conversations.services.publish import PublishIndeterminate, _persist_payload, _publish_persist
from conversations.services.rebuild import cache_rebuild
from conversations.services.seqs import _release_quietly, _reserve_locked, _reserve_seqs_in_database, _user_claimed
from core import storable
from core.exceptions import Conflict, ServiceUnavailable
from core.metrics import fallbacks
from core.redis_client import cluster_answers
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


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
    value passes the storable door first (``core.storable``), so nothing acknowledged is
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
            message_ids.check_stamp(item["id"], field=_field(field, "id"))
            client_ids.add(str(item["id"]))
        prepared.append(
            {
                "id": str(item.get("id") or message_ids.new_message_id()),
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
        fallbacks.labels(kind="write_without_cache").inc()
        result = _append_through_database(**append)
        if settings.MEMORY_REDIS_CLUSTER:
            _forget_cached_window(tenant=tenant, conversation_id=conversation_id)
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


def _forget_cached_window(*, tenant: Tenant, conversation_id: str) -> None:
    """On Redis Cluster, one slot's primary failing (a failover under way) sends an append through
    PostgreSQL while the other slots, and soon this one, still serve windows. The conversation's
    cached window, which lacks the rows just committed, must go before the 201: the replica that
    takes the slot over holds it, and a read after the answer would miss the write. So while the rest
    of the cluster answers, this waits for the slot to come back (``MEMORY_REDIS_FAILOVER_WAIT``) and
    drops the window there. With the whole cluster down, or past the wait, the window is rebuilt by
    the cache repair sweep, or completed by the worker's settle of these rows, as with a single Redis
    that was down (``_append_through_database``)."""
    deadline = time.monotonic() + settings.MEMORY_REDIS_FAILOVER_WAIT
    pause = 0.05
    while True:
        try:
            cache.invalidate(tenant_slug=tenant.slug, conversation_id=conversation_id)
            return
        except cache.CacheUnavailable:
            if time.monotonic() + pause > deadline or not cluster_answers():
                logger.warning("append_window_not_forgotten", tenant=tenant.slug, conversation_id=conversation_id)
                return
            time.sleep(pause)
            pause = min(pause * 2, 0.4)


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
       nothing written; unless it is a UUIDv7 made after the ledger began (``message_ids``). (A cached list cannot stand in for PostgreSQL: a row committed while Redis
       did not answer, or a write on its way, may be missing from it.)
    3. The persist task is published and confirmed. Refused: 503 ``broker_unavailable``, the new
       reservations dropped. Indeterminate (sent, confirm lost): 503 ``write_indeterminate`` with the
       ids and seqs, the reservations kept, so a resend publishes the same seqs again.
    4. The messages join the cached list and the pending writes, leaving the reserved ones; the lock
       is released in the same script.
    """
    token = uuid.uuid4().hex
    try:
        reservation = _reserve_locked(
            tenant=tenant, conversation_id=conversation_id, count=len(messages), token=token, messages=messages, user_id=user_id
        )
    except cache.ReplicaUnconfirmed as error:
        # Nothing is published: the lock goes, and so do the reservations this request made (the ids
        # found nowhere before it, the client's as well as made-up ones), as when the broker refuses a
        # publish: the 503 says nothing was written, and a resend is a new write with a new seq. Ids
        # reserved by an earlier attempt stay: its publish may be in the queue.
        _release_quietly(
            tenant=tenant, conversation_id=conversation_id, token=token, unreserve=getattr(error, "reserved_now", [])
        )
        raise _replica_unavailable(conversation_id, str(error)) from error
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
        ledger_recorded()  # once per process, before its first acknowledgement: a ledger lost later is never the first
        try:
            _publish_persist(
                tenant=tenant, conversation_id=conversation_id, messages=to_publish, user_id=user_id, agent_id=agent_id
            )
        except PublishIndeterminate as error:
            published = True  # it may be in the queue: every reservation stays for the resend
            raise PublishIndeterminate(error.message, details=_resend_details(answers)) from error.__cause__
    except BaseException:
        # Not published: the reservations made now go; the ones of earlier attempts stay (their
        # first publish may be in the queue).
        _release_quietly(tenant=tenant, conversation_id=conversation_id, token=token, unreserve=[] if published else fresh)
        raise
    # Durable from here on: whatever fails next, the answer is 201 and the worker completes the cache.
    _user_claimed(tenant=tenant, conversation_id=conversation_id, reservation=reservation, user_id=user_id)
    try:
        if not reservation.cached:
            # Warm the cache under our lock so the list the messages join holds the whole window.
            try:
                conversation_ensure(tenant=tenant, conversation_id=conversation_id, user_id=user_id, agent_id=agent_id)
                cache_rebuild(tenant=tenant, conversation_id=conversation_id, allow_empty=True)
            except DatabaseError:
                fallbacks.labels(kind="write_without_database").inc()
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
        if settings.MEMORY_REDIS_WAIT_REPLICAS > 0:
            # Durable in the broker, but the window and the pending writes may be only on a primary a
            # failover would undo (or on none): a 201 would promise read-your-writes it cannot keep.
            # The reservations, confirmed by a replica before the publish, answer the resend with
            # these seqs wherever the conversation's slot is served from.
            raise PublishIndeterminate(
                "The write is queued, but Redis could not confirm it on a replica; resend the same messages "
                "with the ids listed here: the service answers them with the same seqs, never twice.",
                details=_resend_details(answers),
            ) from error
    return _Appended(messages=[answer for answer in answers if answer is not None], new=new)


def _resend_details(answers: list[dict[str, Any] | None]) -> dict[str, Any]:
    """A ``write_indeterminate`` answer's details: this request's own (id, seq) pairs, to resend with."""
    return {"messages": [{"id": answer["id"], "seq": answer["seq"]} for answer in answers if answer]}


def _replica_unavailable(conversation_id: str, why: str) -> ServiceUnavailable:
    metrics.replica_unconfirmed.inc()
    logger.warning("append_replica_unconfirmed", conversation_id=conversation_id, why=why)
    return ServiceUnavailable(
        f"Redis could not copy the conversation's seqs to a replica ({why}); nothing was written. Retry "
        "shortly with the same ids and content.",
        retry_after=1,
        code="replica_unavailable",
    )


def _look_up_unknown(*, tenant: Tenant, conversation_id: str, ids: list[str], ledger_whole: bool) -> dict[str, dict[str, Any]]:
    """Client ids the ledger does not hold: the ones PostgreSQL has, by id.

    Raises ServiceUnavailable (``idempotency_unknown``) when an id found nowhere may still be a
    write on its way to PostgreSQL, or PostgreSQL cannot be asked.
    """
    try:
        stored = _stored_messages(tenant=tenant, conversation_id=conversation_id, message_ids=ids)
    except DatabaseError:
        raise _idempotency_unknown(conversation_id, "PostgreSQL does not answer") from None
    missing = [message_id for message_id in ids if message_id not in stored]
    if missing and not (ledger_whole or ledger_vouches_new(tenant=tenant, conversation_id=conversation_id, ids=missing)):
        raise _idempotency_unknown(conversation_id, "Redis lost writes that may still be queued")
    return stored


def _stored_messages(*, tenant: Tenant, conversation_id: str, message_ids: list[str]) -> dict[str, dict[str, Any]]:
    """This conversation's rows with these ids, by id. Raises DatabaseError."""
    return stored_messages(tenant=tenant, conversation_id=conversation_id, message_ids=message_ids)


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
            publish.publish(publish.MESSAGES_PERSIST, payload)
        except ServiceUnavailable:
            logger.warning("append_settle_unpublished", tenant=tenant.slug, conversation_id=conversation_id)
    return _Appended(messages=answers, new=new)

"""Persist (step 3 of the write path, worker side): the rows committed, then the cache settled.

``messages_persist`` commits a payload in one statement (``PERSIST_SQL``), idempotently: a
redelivery finds its rows, an erased conversation's tombstone drops what it erased, an id stored with
other content is a ``PersistConflict``. Persist tasks running at once in a worker share a statement
(``PersistCommits``). ``_settle`` then moves what was committed from the pending writes into the
cached list and queues the derived memory (vectors, summaries) once per conversation. A task that
fails for good is kept as a dead letter (``dead_letter_record``) and can be replayed.
"""

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from celery import current_app
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from conversations import cache, metrics
from conversations.models import CacheRepair, DeadLetter, Message, tombstone_keys
from conversations.services import publish
from conversations.services.lifecycle import _conversation_create
from conversations.services.messages import MESSAGE_COLUMNS, _same_message, message_from_values
from conversations.services.publish import _Relay, _Waiting
from core import storable
from core.exceptions import Conflict, ServiceUnavailable
from core.jsonb import JsonbEncoder
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


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
        cursor.execute(PERSIST_SQL, {"payloads": json.dumps(rows, cls=JsonbEncoder)})  # floats stay floats (core.jsonb)
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
            self._fail(batch, error)
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
    claims = [
        (tenant_slug, conversation_id, _derived_tasks_of(tenant_id))
        for (tenant_id, conversation_id), tenant_slug in changed.items()
    ]
    try:
        result = cache.settle(settlements, ttl=settings.MEMORY_TTL_EXTENDED, claims=claims, claim_ttl=DERIVED_QUEUED_TTL)
        failed, claimed = result.failed, result.claimed
    except cache.CacheUnavailable as error:
        failed, claimed = [str(error)] * len(outcomes), [None] * len(claims)
    for outcome, error in zip(outcomes, failed, strict=True):
        if error:
            _settle_failed(payload=outcome.payload, error=error)
    for (tenant_id, _), (tenant_slug, conversation_id, wanted), names in zip(changed, claims, claimed, strict=True):
        _derived_publish(
            tenant_id=tenant_id,
            tenant_slug=tenant_slug,
            conversation_id=conversation_id,
            names=list(wanted) if names is None else names,  # no marks to go by: queue them all
        )


def _settle_failed(*, payload: dict[str, Any], error: str) -> None:
    """The cached list may now miss a committed row: mark it, the sweeper invalidates it later."""
    tenant_slug, conversation_id = payload["tenant_slug"], payload["conversation_id"]
    logger.warning("persist_cache_settle_failed", tenant=tenant_slug, conversation_id=conversation_id, error=error)
    CacheRepair.unscoped.get_or_create(tenant_id=payload["tenant_id"], conversation_id=conversation_id)  # repair queue
    current_app.send_task(publish.CACHE_REPAIR_SWEEP, countdown=5)


DERIVED_TASKS = (
    "search.tasks.conversation_embed",
    "summaries.tasks.conversation_summarize",
    "extraction.tasks.conversation_extract",
)


# How long a derived task counts as queued for its conversation: past it, a write queues it again.
DERIVED_QUEUED_TTL = 60

# Derived tasks only some tenants want (extraction is opt-in): the app of the task registers who
# does, by tenant id (``derived_task_wanted_register``), and the others are not sent the task at all.
DERIVED_TASK_WANTED: dict[str, Callable[[int], bool]] = {}


def derived_task_wanted_register(name: str, wanted: Callable[[int], bool]) -> None:
    DERIVED_TASK_WANTED[name] = wanted


def _derived_tasks_of(tenant_id: int) -> tuple[str, ...]:
    """The derived tasks a tenant's writes are sent to (neither claimed nor published: the others)."""
    return tuple(name for name in DERIVED_TASKS if name not in DERIVED_TASK_WANTED or DERIVED_TASK_WANTED[name](tenant_id))


def _derived_publish(*, tenant_id: int, tenant_slug: str, conversation_id: str, names: Sequence[str]) -> None:
    """Publish the derived tasks claimed for a conversation; one the broker refuses gives its mark back."""
    for name in names:
        try:
            current_app.send_task(name, args=[tenant_id, conversation_id], queue=settings.MEMORY_DERIVED_QUEUE)
        except Exception as error:  # the broker refused: best effort (see _settle)
            logger.warning("derived_memory_unscheduled", task=name, conversation_id=conversation_id, error=repr(error))
            derived_started(tenant_slug=tenant_slug, conversation_id=conversation_id, task=name)


def derived_started(*, tenant_slug: str, conversation_id: str, task: str) -> None:
    """A derived task is about to read the conversation: later writes must queue it again."""
    try:
        cache.derived_release(tenant_slug=tenant_slug, conversation_id=conversation_id, task=task)
    except cache.CacheUnavailable:
        pass  # the mark expires by itself (DERIVED_QUEUED_TTL)


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
    """Publish a dead letter's task again; its payload is idempotent, so replaying twice is safe.

    A write (persist) is published as it was, confirmed by the broker; a derived task (one of
    ``DERIVED_TASKS``, whose payload is its keyword arguments) goes back to the derived queue."""
    if storable.RECORDED_AS_TEXT in dead_letter.payload:
        raise Conflict(
            f"Dead letter {dead_letter.pk} holds values PostgreSQL cannot store (kept as JSON text): edit its payload "
            "into storable JSON before replaying it.",
            details={"dead_letter": dead_letter.pk},
        )
    if dead_letter.task_name in (publish.MESSAGES_PERSIST, publish.MEMORY_PERSIST):
        publish.publish(dead_letter.task_name, dead_letter.payload)
    elif dead_letter.task_name in DERIVED_TASKS:
        try:
            current_app.send_task(dead_letter.task_name, kwargs=dead_letter.payload, queue=settings.MEMORY_DERIVED_QUEUE)
        except Exception as error:  # the broker refused
            raise ServiceUnavailable(
                f"The broker refused dead letter {dead_letter.pk}'s task: {error!r}", retry_after=5
            ) from error
    else:
        raise Conflict(
            f"Dead letter {dead_letter.pk}'s task {dead_letter.task_name} cannot be replayed.",
            details={"dead_letter": dead_letter.pk},
        )
    DeadLetter.unscoped.filter(pk=dead_letter.pk).update(replayed_at=timezone.now())  # operator action
    logger.info("dead_letter_replayed", dead_letter=dead_letter.pk, task=dead_letter.task_name)

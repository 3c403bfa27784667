"""Seqs: the conversation's append lock and the hybrid clock that numbers its messages.

``_reserve_locked`` takes the lock and the seqs in Redis (``cache.reserve``), above the database's
highest seq when Redis had forgotten it (``_above_database_floor``); with Redis down the conversation
row hands them out (``_reserve_seqs_in_database``). Appends, erases and memory saves all take their
seqs (or revision) here, so an erase's tombstone and a save's revision order with the messages.
"""

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError, connection

from conversations import cache
from conversations.exceptions import ServiceUnavailable
from conversations.models import Conversation
from conversations.services.lifecycle import _tombstone_floors
from conversations.services.messages import _now_microseconds
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


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


def _release_quietly(*, tenant: Tenant, conversation_id: str, token: str, unreserve: Sequence[str] = ()) -> None:
    try:
        cache.release(tenant_slug=tenant.slug, conversation_id=conversation_id, token=token, unreserve=unreserve)
    except cache.CacheUnavailable:
        pass  # The lock expires by itself; a reservation left behind only makes a resend publish again.


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

"""Seqs: the conversation's append lock and the hybrid clock that numbers its messages.

``_reserve_locked`` takes the lock and the seqs in Redis (``cache.reserve``), above the database's
highest seq when Redis had forgotten it (``_above_database_floor``); with Redis down the conversation
row hands them out (``_reserve_seqs_in_database``). Appends, erases and memory saves all take their
seqs (or revision) here, so an erase's tombstone and a save's revision order with the messages.

The reservation also says whose the conversation is (``Reservation.user``): Redis's state hash
keeps its user, read from PostgreSQL with the floor when Redis does not know it, so a write naming
another user is refused under the lock (``lifecycle.user_check``) without a database round trip.
"""

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError, connection

from conversations import cache
from conversations.models import Conversation
from conversations.services.lifecycle import UserMismatch, _tombstone_floors, user_check
from conversations.services.messages import _now_microseconds
from core.exceptions import ServiceUnavailable
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


def _reserve_locked(
    *,
    tenant: Tenant,
    conversation_id: str,
    count: int,
    token: str,
    messages: Sequence[dict[str, Any]] = (),
    user_id: str = "",
) -> cache.Reservation:
    """Take the conversation's append lock and ``count`` seqs, waiting briefly for other appenders;
    ``messages`` are looked up in the ledger and reserved (``cache.reserve``). A write naming a user
    other than the conversation's is refused here (``UserMismatch``), the lock and the reservations
    it made released."""
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
            reservation = _above_database_floor(
                tenant=tenant,
                conversation_id=conversation_id,
                count=count,
                reservation=reservation,
                messages=messages,
                user_id=user_id,
            )
            try:
                user_check(conversation_id=conversation_id, conversation_user_id=reservation.user, user_id=user_id)
            except UserMismatch:
                reserved_now = [message["id"] for message, found in zip(messages, reservation.found, strict=True) if not found]
                _release_quietly(tenant=tenant, conversation_id=conversation_id, token=token, unreserve=reserved_now)
                raise
            return reservation
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
    user_id: str = "",
) -> cache.Reservation:
    """Reserve again above the database's highest seq when Redis had forgotten the last one.

    Redis keeps the last seq for a while after the last write; once it expires or Redis restarts,
    the clock alone could fall below a seq the database holds (handed out while Redis was down, by
    a host whose clock runs ahead) or below an erased conversation's tombstone. The conversation's
    user is read in the same query when a write names a user and Redis does not know it, and
    recorded in Redis for the next writes (``_user_learned``).
    """
    learn = bool(user_id) and reservation.user is None
    if reservation.known and not learn:
        return reservation
    try:
        floor, user = _database_floor_and_user(tenant=tenant, conversation_id=conversation_id, floor=not reservation.known)
    except DatabaseError:
        return reservation  # nothing to compare with; the clock is the best we have (and the user unknown)
    if learn:
        reservation = dataclasses.replace(
            reservation, user=_user_learned(tenant=tenant, conversation_id=conversation_id, user=user)
        )
    if reservation.known or floor < reservation.first_seq:
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
    return _database_floor_and_user(tenant=tenant, conversation_id=conversation_id)[0]


def _database_floor_and_user(*, tenant: Tenant, conversation_id: str, floor: bool = True) -> tuple[int, str]:
    """The conversation's seq floor (``_database_seq_floor``; 0 unless ``floor``) and its user ('' none),
    from its row. Raises DatabaseError."""
    conversation = (
        Conversation.objects.for_tenant(tenant)
        .filter(conversation_id=conversation_id)
        .values_list("last_seq", "memory_revision", "user_id")
        .first()
    )
    last_seq, memory_revision, user = conversation or (0, 0, "")
    if not floor:
        return 0, user
    tombstone = _tombstone_floors(tenant=tenant, conversation_id=conversation_id)
    return max(last_seq, memory_revision, tombstone.erased_before_seq), user


def _user_learned(*, tenant: Tenant, conversation_id: str, user: str) -> str:
    """The conversation's user as its row says, recorded in Redis unless a writer recorded one meanwhile
    (which is then the answer). Redis not answering: the row's, unrecorded."""
    try:
        return cache.user_record(tenant_slug=tenant.slug, conversation_id=conversation_id, user_id=user, claim=False)
    except cache.CacheUnavailable:
        return user


def _user_claimed(*, tenant: Tenant, conversation_id: str, reservation: cache.Reservation, user_id: str) -> None:
    """A write naming ``user_id`` was accepted for a conversation without a user: it is now the user's
    (the worker writes it to the row), and later writes naming another are refused. Redis not
    answering: the next write reads the row."""
    if not user_id or reservation.user != "":
        return
    try:
        cache.user_record(tenant_slug=tenant.slug, conversation_id=conversation_id, user_id=user_id, claim=True)
    except cache.CacheUnavailable:
        pass


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
    RETURNING last_seq, user_id
"""


def _reserve_seqs_in_database(*, tenant: Tenant, conversation_id: str, count: int, user_id: str, agent_id: str) -> int:
    """The last of ``count`` seqs from the conversation row (created now if new). A write naming a user
    other than the row's is refused (``UserMismatch``): the caller's transaction, rolled back, keeps nothing."""
    with connection.cursor() as cursor:
        cursor.execute(RESERVE_SEQS_SQL, [tenant.pk, conversation_id, user_id, agent_id, _now_microseconds() + count - 1, count])
        last_seq, conversation_user_id = cursor.fetchone()
    user_check(conversation_id=conversation_id, conversation_user_id=conversation_user_id, user_id=user_id)
    return last_seq

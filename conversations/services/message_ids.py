"""Message ids that carry the time they were made (UUIDv7, RFC 9562), and what that time proves.

The service makes its own message ids as UUIDv7 (``new_message_id``); a client may send any UUID, and
is advised to send UUIDv7 too. A UUIDv7's first 48 bits are the Unix time, in milliseconds, it was
made at. Every way into the write path passes ``check_stamp``: a UUIDv7 stamped more than
``MEMORY_MESSAGE_ID_CLOCK_SKEW`` seconds ahead of the service's clock is refused (400 ``clock_skew``).
So no message id the service ever acknowledged was stamped later than that long after its
acknowledgement.

That is what lets a resend be told new while Redis's ledger is not whole (``made_after``): after a
Redis loss, client ids found neither in the ledger nor in PostgreSQL are 503 ``idempotency_unknown``
until a round of barriers proves no older write is still on its way (``ledger``), because such an id
may be a write acknowledged before the loss. An id stamped more than the skew (and a second for the
service's own hosts, which keep their clocks with NTP) after the ledger began cannot be one: it was
acknowledged, if ever, after the ledger began, so the ledger or PostgreSQL would hold it. A UUIDv4
carries no time and waits for the round.
"""

import os
import time
import uuid

from django.conf import settings

from core.exceptions import ClockSkew

# How far apart the clocks of the service's own hosts (web processes, Redis) may be, in milliseconds.
HOSTS_SKEW_MS = 1_000

_MS_BITS = (1 << 48) - 1
_RANDOM_BITS = (1 << 80) - 1


def new_message_id(*, at_ms: int | None = None) -> str:
    """A new UUIDv7: 48 bits of Unix milliseconds (now, or ``at_ms``), the version, 74 random bits, the variant."""
    ms = time.time_ns() // 1_000_000 if at_ms is None else at_ms
    value = (ms & _MS_BITS) << 80 | int.from_bytes(os.urandom(10), "big") & _RANDOM_BITS
    value = value & ~(0xF << 76) | 0x7 << 76  # version 7
    value = value & ~(0x3 << 62) | 0x2 << 62  # the RFC's variant (0b10)
    return str(uuid.UUID(int=value))


def stamped_ms(message_id: str | uuid.UUID) -> int | None:
    """The Unix time in milliseconds a UUIDv7 was made at; None for any other id."""
    try:
        value = message_id if isinstance(message_id, uuid.UUID) else uuid.UUID(str(message_id))
    except ValueError:
        return None
    if value.variant != uuid.RFC_4122 or value.version != 7:
        return None
    return value.int >> 80


def check_stamp(message_id: str | uuid.UUID, *, field: str) -> None:
    """Refuse a UUIDv7 stamped more than ``MEMORY_MESSAGE_ID_CLOCK_SKEW`` seconds ahead of this clock."""
    stamped = stamped_ms(message_id)
    if stamped is None:
        return
    ahead_ms = stamped - time.time_ns() // 1_000_000
    limit = settings.MEMORY_MESSAGE_ID_CLOCK_SKEW
    if ahead_ms > limit * 1_000:
        raise ClockSkew(field=field, message_id=str(message_id), ahead_seconds=round(ahead_ms / 1_000, 3), limit_seconds=limit)


def made_after(message_id: str, since_us: int) -> bool:
    """Whether ``message_id`` cannot have been acknowledged before ``since_us`` (Unix microseconds,
    Redis's clock): a UUIDv7 stamped later than that by more than the skew ``check_stamp`` allows and
    the service's own hosts' skew."""
    stamped = stamped_ms(message_id)
    if stamped is None:
        return False
    margin_ms = settings.MEMORY_MESSAGE_ID_CLOCK_SKEW * 1_000 + HOSTS_SKEW_MS
    return stamped > since_us // 1_000 + margin_ms

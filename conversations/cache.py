"""The Redis layer of the conversation cache (cache-aside).

Keys, all built by :func:`key`:

* ``<tenant>:<conv>:messages``      list of message JSON, oldest first, newest ``MEMORY_CACHE_LIST_LIMIT``
* ``<tenant>:<conv>:message:<id>``  one message JSON
* ``<tenant>:<conv>:memory``        the memory document
* ``<tenant>:<conv>:state``         hash: ``version`` (bumped by every change), ``last_seq``, ``memory_rev``,
                                    ``user`` (``=`` and the conversation's user id, for the appends' check)
* ``<tenant>:<conv>:pending``       hash id -> JSON of writes acknowledged but not yet persisted
* ``<tenant>:<conv>:reserved``      hash id -> JSON of writes being published, or whose publish was
                                    indeterminate: the id and seq a resend must get back
* ``<tenant>:<conv>:lock``          the append lock (one appender per conversation at a time)
* ``<tenant>:<conv>:rebuild``       the rebuild lock (one rebuild per conversation at a time)
* ``<tenant>:<conv>:context:<hash>`` a built context, valid only at the version it was built at
* ``<tenant>:<conv>:run``           the chat run lock (one chat turn per conversation at a time), its
                                    value the run's owner token, expiring by itself
* ``chat:runs:<tenant id>``         sorted set of a tenant's chat runs: owner token -> expiry (ms),
                                    pruned of expired runs whenever a run is admitted
* ``memory:ledger``                 hash ``since`` (when this Redis began keeping pending writes),
                                    ``barrier_at``, ``drained_at``, ``disturbed_at``, ``whole_at``:
                                    see ``ledger_status``

Together, ``reserved``, ``pending`` and the message keys are the ledger of writes not yet known to
be persisted: what tells a resend of an acknowledged id from a new message. The state hash's
``ledger`` field says the conversation's ledger is whole (Redis did not lose writes that may still
be queued); without it, an id found nowhere may still be on its way to PostgreSQL.

The messages list always starts with a header element ``{"seq":0,"complete":...}``: the list
exists exactly when the conversation is cached (an empty conversation is a header alone), and
``complete`` says whether it holds the whole conversation or only its newest messages. Every
other element is a message JSON whose first member is its ``seq``, so scripts can read the order
without decoding.

Every multi-step change is one Lua script. All calls here use the strict client (``core.redis_client``):
a Redis error raises :class:`CacheUnavailable`, and the caller decides on purpose what degraded mode to take.

Redis Cluster: every script names its keys in ``KEYS`` and builds none of its own, and the keys of
one call are one conversation's (a hash tag: one slot), the ledger's, or one chat-run key. Pipelines
of several conversations (``settle``, ``states``) are split by slot by the cluster client. The two
scripts an acknowledgement depends on, ``reserve`` (the lock, the seqs, the reservations) and
``merge`` of pending writes (the window, the ledger), wait for a replica (``replicated``), so the
replica a failover promotes holds every acknowledged write: see ``docs/operations.md``.
"""

import functools
import hashlib
import hmac
import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.crc
from django.conf import settings

from conversations.models import tombstone_secrets
from core.redis_client import CacheUnavailable, ReplicaUnconfirmed, Scripts, call, client, replicated, scan_keys

HEADER_PREFIX = '{"seq":0,'
HEADER_BYTES = HEADER_PREFIX.encode()


def key(tenant_slug: str, conversation_id: str, suffix: str) -> str:
    """Build every cache key of a conversation: ``<tenant>:<conv>:<suffix>``.

    With ``MEMORY_REDIS_HASH_TAGS`` on (Redis Cluster), ``<tenant>:<conv>`` is wrapped in a hash
    tag so that all keys of one conversation live in one slot and the scripts stay legal.
    """
    return f"{_prefix(tenant_slug, conversation_id)}:{suffix}"


def _prefix(tenant_slug: str, conversation_id: str) -> str:
    prefix = f"{tenant_slug}:{conversation_id}"
    if settings.MEMORY_REDIS_HASH_TAGS:
        prefix = "{" + prefix + "}"
    return prefix


@dataclass(frozen=True)
class ConversationKeys:
    state: str
    messages: str
    pending: str
    lock: str
    rebuild: str
    memory: str
    reserved: str

    @classmethod
    def of(cls, tenant_slug: str, conversation_id: str) -> "ConversationKeys":
        prefix = _prefix(tenant_slug, conversation_id)
        return cls(
            state=f"{prefix}:state",
            messages=f"{prefix}:messages",
            pending=f"{prefix}:pending",
            lock=f"{prefix}:lock",
            rebuild=f"{prefix}:rebuild",
            memory=f"{prefix}:memory",
            reserved=f"{prefix}:reserved",
        )


def erase_floor_key(tenant_slug: str, conversation_id: str) -> str:
    """Where an erase or clear leaves its floor (the first seq it did not erase), read by MERGE.

    It outlives the conversation's other keys, so it names the conversation by an HMAC keyed with
    the deployment's secret (the tombstones' newest, ``conversations.models.tombstone_secrets``): an
    erased conversation (or user) leaves nothing in Redis from which its id can be read or a guessed
    id confirmed. With hash tags on (Redis Cluster) it must share the conversation's slot, so its tag
    is a short one of that slot (``slot_tag``), never the conversation's own.

    A floor is read under the newest secret only: floors left before a rotation of the secret are not
    seen after it. They matter for the seconds a worker's settle may trail an erase; what is stored
    stays guarded by the PostgreSQL tombstones, which are found under every secret.
    """
    mac = _erase_floor_mac(tombstone_secrets()[0], conversation_id)
    if settings.MEMORY_REDIS_HASH_TAGS:
        slot = redis.crc.key_slot(_prefix(tenant_slug, conversation_id).encode())
        return "{" + slot_tag(slot) + "}" + f":{tenant_slug}:erased:{mac}"
    return f"{tenant_slug}:erased:{mac}"


@functools.lru_cache(maxsize=4096)
def _erase_floor_mac(secret: str, conversation_id: str) -> str:
    """Every append reads its conversation's erase floor: the HMAC of its id, kept for the conversations
    written to most recently (under the secret it was made with, so a rotation makes new ones)."""
    return hmac.new(f"memory-service erase floors:{secret}".encode(), conversation_id.encode(), hashlib.sha256).hexdigest()


@functools.cache
def slot_tag(slot: int) -> str:
    """The first hexadecimal number whose Redis Cluster slot is ``slot``: a hash tag that places a key
    beside a conversation's without naming it (found in about 16,000 tries, then kept)."""
    number = 0
    while redis.crc.key_slot(format(number, "x").encode()) != slot:
        number += 1
    return format(number, "x")


def message_key(tenant_slug: str, conversation_id: str, message_id: str) -> str:
    return key(tenant_slug, conversation_id, f"message:{message_id}")


# One encoder for every message: json.dumps with options builds a new encoder on each call.
_MESSAGE_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, sort_keys=True)
_encode_string = json.encoder.c_encode_basestring or json.encoder.py_encode_basestring  # as that encoder does
_MESSAGE_FIELDS = frozenset(("id", "seq", "role", "content", "metadata", "created_at", "token_count"))


def message_json(message: dict[str, Any]) -> str:
    """Serialise a message with ``seq`` first, the shape the scripts read."""
    if message.keys() == _MESSAGE_FIELDS and _of_message_types(message):
        # What the encoder writes below (keys sorted, compact), a field at a time: a third cheaper,
        # and a rebuild serialises every message it installs.
        return (
            f'{{"seq":{message["seq"]},"content":{_encode_string(message["content"])},'
            f'"created_at":{_encode_string(message["created_at"])},"id":{_encode_string(message["id"])},'
            f'"metadata":{_MESSAGE_ENCODER.encode(message["metadata"])},"role":{_encode_string(message["role"])},'
            f'"token_count":{message["token_count"]}}}'
        )
    rest = {name: value for name, value in message.items() if name != "seq"}
    body = _MESSAGE_ENCODER.encode(rest)
    seq = int(message["seq"])
    if body == "{}":
        return f'{{"seq":{seq}}}'
    return f'{{"seq":{seq},' + body[1:]


def _of_message_types(message: dict[str, Any]) -> bool:
    return (
        type(message["seq"]) is int
        and type(message["token_count"]) is int
        and type(message["content"]) is str
        and type(message["created_at"]) is str
        and type(message["id"]) is str
        and type(message["role"]) is str
    )


def header_json(*, complete: bool) -> str:
    return HEADER_PREFIX + ('"complete":true}' if complete else '"complete":false}')


def is_header(element: str | bytes) -> bool:
    return element.startswith(HEADER_BYTES if isinstance(element, bytes) else HEADER_PREFIX)


# --- Scripts ------------------------------------------------------------------------------------

_SEQ_OF = """
local function seq_of(s) return tonumber(string.match(s, '^{"seq":(%d+)')) end
"""

# Versions never repeat, even after Redis lost the state hash (restart, erase): a bump takes
# max(version + 1, Redis time in microseconds), so a rebuild that snapshotted before the loss can
# never match a later version.
_BUMP = """
local function bump(state)
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local version = tonumber(redis.call('HGET', state, 'version') or '0')
  redis.call('HSET', state, 'version', string.format('%d', math.max(version + 1, now)))
end
"""

# Take the append lock (unless no token is given) and hand out `count` seqs. A seq is a hybrid
# clock: max(last seq + 1, floor + 1, Redis time in microseconds), so it keeps increasing after Redis
# loses its state, and is identical wherever the message is stored. `known` says whether the last
# seq was in Redis; when it was not, the caller checks the database's and reserves again above it.
# Under the lock, each message id is looked up in the ledger (its message key, the pending writes,
# the reserved ones): found, its JSON comes back with where it was found ('k', 'p', 'r'); not found,
# it is recorded as reserved with the seq it gets here (message n: first + n - 1), before anything is
# published, so that a resend after a crash or an indeterminate publish gets the same seq back.
# With mode 'record' (a second reservation above the database's floor) nothing is looked up: the
# reserved entries are written again with the new seqs. The conversation's user, as recorded by
# USER_RECORD ('=' and the id; '' when Redis does not know it), comes back for the caller to check.
# KEYS: state, lock, messages, reserved, pending, message keys...
# ARGV: token, count, lock_ms, pending_ttl, floor, mode, then id and JSON-without-seq pairs.
# Returns {first seq, cached, known, ledger whole, user, then kind and JSON per message ('' and '' if new)}.
RESERVE = """
if ARGV[1] ~= '' then
  if not redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[3]) then return {'-1'} end
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local stored = redis.call('HGET', KEYS[1], 'last_seq')
local last = tonumber(stored or '0')
local floor = tonumber(ARGV[5])
if floor > last then last = floor end
local first = math.max(last + 1, now)
redis.call('HSET', KEYS[1], 'last_seq', string.format('%d', first + tonumber(ARGV[2]) - 1))
redis.call('EXPIRE', KEYS[1], ARGV[4])
local cached = '0'
if redis.call('EXISTS', KEYS[3]) == 1 then cached = '1' end
local known = '0'
if stored then known = '1' end
local reply = {string.format('%d', first), cached, known, redis.call('HGET', KEYS[1], 'ledger') or '0',
               redis.call('HGET', KEYS[1], 'user') or ''}
local n = 0
for i = 7, #ARGV, 2 do
  n = n + 1
  local found, kind = false, ''
  if ARGV[6] == 'lookup' then
    found = redis.call('GET', KEYS[5 + n])
    kind = 'k'
    if not found then found = redis.call('HGET', KEYS[5], ARGV[i]) kind = 'p' end
    if not found then found = redis.call('HGET', KEYS[4], ARGV[i]) kind = 'r' end
  end
  if found then
    reply[#reply + 1] = kind
    reply[#reply + 1] = found
  else
    redis.call('HSET', KEYS[4], ARGV[i], '{"seq":' .. string.format('%d', first + n - 1) .. ',' .. ARGV[i + 1])
    reply[#reply + 1] = ''
    reply[#reply + 1] = ''
  end
end
if n > 0 then redis.call('EXPIRE', KEYS[4], ARGV[4]) end
return reply
"""

# Merge messages into the cached list in seq order (normally an RPUSH), record them as pending
# (web, after the broker confirmed: they leave the reserved ones) or settle them (worker, after the
# row committed), bump the version, refresh TTLs and release the append lock if we hold it. Mode
# 'reassert' (a worker still waiting for the database) records as pending only what the ledger lost
# (a Redis restart), and changes nothing otherwise.
# KEYS: state, messages, pending, lock, erase floor, reserved, message keys...   ARGV: token, ttl,
# cap, pending_ttl, mode, then id, json pairs.
MERGE = (
    _SEQ_OF
    + _BUMP
    + """
local state, list, pending, lock = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local ttl, cap, pending_ttl, mode = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]

-- Place one message in seq order; true when it was inserted.
local function place(json, seq)
  local last = redis.call('LINDEX', list, -1)
  if seq_of(last) < seq then redis.call('RPUSH', list, json) return true end
  local len = redis.call('LLEN', list)
  local stop = -1
  while true do
    local start = stop - 63
    local chunk = redis.call('LRANGE', list, start, stop)
    for i = #chunk, 1, -1 do
      local s = seq_of(chunk[i])
      if s == seq then return false end
      if s < seq then
        -- Older than the cached tail of an incomplete list: it belongs to the database part.
        if s == 0 and string.find(chunk[i], '"complete":false', 1, true) then return false end
        redis.call('LINSERT', list, 'AFTER', chunk[i], json)
        return true
      end
    end
    if -start >= len then return false end
    stop = start - 1
  end
end

local cached = redis.call('EXISTS', list) == 1
-- An erase or clear left its floor here: a worker settling a row committed just before it must not
-- bring the erased message back into the cache.
local erased_before = tonumber(redis.call('GET', KEYS[5]) or '0')
-- A change a concurrent rebuild may not have seen bumps the version, so that rebuild is not
-- installed. Settling a message the rebuild saw as pending changes nothing it could miss.
local changed = mode == 'pending'
local n = 0
for i = 6, #ARGV, 2 do
  local id, json = ARGV[i], ARGV[i + 1]
  local settled = false
  n = n + 1
  local skip = false
  if mode ~= 'reassert' then redis.call('HDEL', KEYS[6], id) end
  if seq_of(json) < erased_before then
    redis.call('HDEL', pending, id)
  elseif mode == 'pending' then
    -- A worker fast enough to settle it before this merge already wrote its key: nothing is pending.
    if redis.call('GET', KEYS[6 + n]) ~= json then redis.call('HSET', pending, id, json) end
  elseif mode == 'reassert' then
    if redis.call('GET', KEYS[6 + n]) == json or redis.call('HGET', pending, id) == json then
      skip = true
    else
      redis.call('HSET', pending, id, json)
      changed = true
    end
  elseif redis.call('HGET', pending, id) == json then
    -- Settling a pending write: a cached list already holds it (the append merged it, a rebuild
    -- installs the pending writes), so it is not looked for, a scan from the tail per message.
    redis.call('HDEL', pending, id)
    settled = true
  else
    changed = true
  end
  if seq_of(json) >= erased_before and not skip then
    redis.call('SET', KEYS[6 + n], json, 'EX', ttl)
    if cached and not settled and place(json, seq_of(json)) then changed = true end
  end
end
if cached then
  local len = redis.call('LLEN', list)
  if len > cap + 1 then
    redis.call('LPOP', list)
    redis.call('LTRIM', list, -cap, -1)
    redis.call('LPUSH', list, '{"seq":0,"complete":false}')
  end
  redis.call('EXPIRE', list, ttl)
end
if changed then bump(state) end
redis.call('EXPIRE', state, pending_ttl)
if redis.call('EXISTS', pending) == 1 then redis.call('EXPIRE', pending, pending_ttl) end
if ARGV[1] ~= '' and redis.call('GET', lock) == ARGV[1] then redis.call('DEL', lock) end
return n
"""
)

# Record the conversation's user in its state hash ('=' and the id; '=' alone: it has none): mode
# 'learn' (read from PostgreSQL) only where Redis knew none, 'claim' (a write naming a user was
# accepted for a conversation without one) also over '='. The hash keeps its TTL (a new one gets
# the pending writes'). KEYS: state   ARGV: '=' .. user, mode, pending_ttl.   Returns the user recorded.
USER_RECORD = """
local user = redis.call('HGET', KEYS[1], 'user')
if not user or (ARGV[2] == 'claim' and user == '=') then
  user = ARGV[1]
  redis.call('HSET', KEYS[1], 'user', user)
  if redis.call('TTL', KEYS[1]) < 0 then redis.call('EXPIRE', KEYS[1], ARGV[3]) end
end
return user
"""

# Release the append lock, and drop the reserved entries of messages that will never be published
# (the broker refused them, or they turned out to be stored already).
# KEYS: lock, reserved   ARGV: token, ids...
RELEASE = """
for i = 2, #ARGV do redis.call('HDEL', KEYS[2], ARGV[i]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# The ledger's state in this Redis (see ``ledger_status``), created with ``since`` = now if missing.
# KEYS: ledger   Returns {since, barrier_at or '', drained_at or '', whole_at or '', now, 1 if begun now,
# disturbed_at or ''}.
LEDGER = """
local t = redis.call('TIME')
local now = string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2]))
local since = redis.call('HGET', KEYS[1], 'since')
local begun = 0
if not since then
  redis.call('HSET', KEYS[1], 'since', now)
  since = now
  begun = 1
end
return {since, redis.call('HGET', KEYS[1], 'barrier_at') or '', redis.call('HGET', KEYS[1], 'drained_at') or '',
        redis.call('HGET', KEYS[1], 'whole_at') or '', now, begun, redis.call('HGET', KEYS[1], 'disturbed_at') or ''}
"""

# Record a ledger event (ARGV[2]: barrier_at, drained_at or whole_at) at Redis time, if the ledger is
# still the one that began at ARGV[1] and, given ARGV[3], its current barrier is that one (a barrier
# published before the last disturbance proves nothing). Returns the time recorded, or 0.
# KEYS: ledger
LEDGER_MARK = """
if redis.call('HGET', KEYS[1], 'since') ~= ARGV[1] then return 0 end
if ARGV[3] and redis.call('HGET', KEYS[1], 'barrier_at') ~= ARGV[3] then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('HSET', KEYS[1], ARGV[2], string.format('%d', now))
return now
"""

# A persist message may have gone back to the broker (a worker lost its connection or a pool process,
# a message was requeued): the round of barriers under way proves nothing about it. Unless the
# ledger is already whole, the round is void; the next append begins another. KEYS: ledger
LEDGER_DISTURB = """
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HEXISTS', KEYS[1], 'whole_at') == 1 then return 0 end
local t = redis.call('TIME')
redis.call('HSET', KEYS[1], 'disturbed_at', string.format('%d', tonumber(t[1]) * 1000000 + tonumber(t[2])))
redis.call('HDEL', KEYS[1], 'barrier_at', 'drained_at')
return 1
"""

# Void the round of barriers ARGV[2] of the ledger begun at ARGV[1], if it is still the current one
# (one of its steps failed: the next append begins another). KEYS: ledger
LEDGER_ROUND_VOID = """
if redis.call('HGET', KEYS[1], 'since') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'barrier_at') ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], 'barrier_at', 'drained_at')
return 1
"""

# What a rebuild starts from: the version and the pending writes, read together.
SNAPSHOT = """
return {redis.call('HGET', KEYS[1], 'version') or '0', redis.call('HVALS', KEYS[2]),
        redis.call('HGET', KEYS[1], 'last_seq') or '0'}
"""

# Install a rebuilt list, only if nothing changed since its snapshot (the version guard) and it holds
# no message an erase left behind it (an erase of a conversation Redis knew nothing of leaves no
# version to move: its floor says what it erased), and release the rebuild lock held with the token,
# if one is given, installed or not.
# KEYS: state, messages, rebuild lock, erase floor   ARGV: expected version, ttl, pending_ttl, header,
# last seq, lock token ('' holds none), jsons... (oldest first)
INSTALL = (
    _BUMP
    + """
if ARGV[6] ~= '' and redis.call('GET', KEYS[3]) == ARGV[6] then redis.call('DEL', KEYS[3]) end
local version = redis.call('HGET', KEYS[1], 'version') or '0'
if version ~= ARGV[1] then return 0 end
local floor = tonumber(redis.call('GET', KEYS[4]) or '0')
if #ARGV >= 7 and tonumber(string.match(ARGV[7], '^{"seq":(%d+)')) < floor then return 0 end
redis.call('DEL', KEYS[2])
redis.call('RPUSH', KEYS[2], ARGV[4])
for i = 7, #ARGV, 1000 do
  redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
bump(KEYS[1])
local last = tonumber(redis.call('HGET', KEYS[1], 'last_seq') or '0')
if tonumber(ARGV[5]) > last then redis.call('HSET', KEYS[1], 'last_seq', ARGV[5]) end
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""
)

# A window read that found no list (a plain read is one LRANGE, see `window`): the rebuild lock
# taken for this reader and what a rebuild starts from, read together, so that a cold read costs no
# round trip beyond the rebuild's install. {0, 1 if this reader took the lock (0: another one holds
# it), version, pending writes, last seq}; or, if a writer cached the list since, the window after
# all: {1, complete, the newest `count` messages}.
# KEYS: messages, rebuild lock, state, pending   ARGV: count, lock token, lock ttl
WINDOW = """
local length = redis.call('LLEN', KEYS[1])
if length > 0 then
  local complete = 0
  if string.find(redis.call('LINDEX', KEYS[1], 0), '"complete":true', 1, true) then complete = 1 end
  return {1, complete, redis.call('LRANGE', KEYS[1], math.max(1, length - tonumber(ARGV[1])), -1)}
end
local locked = 0
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[3]) then locked = 1 end
return {0, locked, redis.call('HGET', KEYS[3], 'version') or '0', redis.call('HVALS', KEYS[4]),
        redis.call('HGET', KEYS[3], 'last_seq') or '0'}
"""

# Drop the cached list (next read rebuilds it) and the conversation's user (next write reads it from
# PostgreSQL) without forgetting version, seqs or pending writes.
INVALIDATE = (
    _BUMP
    + """
redis.call('DEL', KEYS[2])
redis.call('HDEL', KEYS[1], 'user')
bump(KEYS[1])
return 1
"""
)

# Remove one message everywhere in the cache (the losing copy of a duplicate id).
REMOVE = (
    _BUMP
    + """
redis.call('LREM', KEYS[2], 0, ARGV[2])
if redis.call('HGET', KEYS[3], ARGV[1]) == ARGV[2] then redis.call('HDEL', KEYS[3], ARGV[1]) end
if redis.call('GET', KEYS[4]) == ARGV[2] then redis.call('DEL', KEYS[4]) end
bump(KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
return 1
"""
)

# Clear a conversation's messages (list, pending writes, the given message and context keys), keep
# its seq clock and memory document, bump the version and release the append lock.
# KEYS: state, messages, pending, lock, other keys...   ARGV: token, pending_ttl
CLEAR_MESSAGES = (
    _BUMP
    + """
local removed = redis.call('DEL', KEYS[2], KEYS[3])
for i = 6, #KEYS do removed = removed + redis.call('DEL', KEYS[i]) end
local floor = tonumber(redis.call('GET', KEYS[5]) or '0')
redis.call('SET', KEYS[5], string.format('%d', math.max(floor, tonumber(ARGV[3]))), 'EX', ARGV[2])
bump(KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[2])
if redis.call('GET', KEYS[4]) == ARGV[1] then redis.call('DEL', KEYS[4]) end
return removed
"""
)

# Set the memory document only if its revision is not older than the cached one.
SET_MEMORY = """
local current = tonumber(redis.call('HGET', KEYS[2], 'memory_rev') or '0')
if tonumber(ARGV[1]) < current then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
redis.call('HSET', KEYS[2], 'memory_rev', ARGV[1])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
"""


# A built context, served only while the conversation is at the version it was built from: any
# change (an append, a rebuild, an erase) bumps the version, so a stale context is never served.
# KEYS: state, context   ARGV: none. Returns {current version, the context JSON or false}.
CONTEXT_GET = """
local version = redis.call('HGET', KEYS[1], 'version') or '0'
local stored = redis.call('GET', KEYS[2])
if stored and string.sub(stored, 1, #version + 1) == version .. '|' then
  return {version, string.sub(stored, #version + 2)}
end
return {version, false}
"""

# Keep a built context only if the conversation is still at the version it was built from.
# KEYS: state, context   ARGV: version, context JSON, ttl
CONTEXT_SET = """
if (redis.call('HGET', KEYS[1], 'version') or '0') ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[1] .. '|' .. ARGV[2], 'EX', ARGV[3])
return 1
"""


# A chat run's lock on its conversation (``chat.runs``), or who holds it. KEYS: lock   ARGV: token, ms.
# Returns {1} when taken, else {0, the holder's token}. Released with RELEASE (compare-and-delete).
RUN_LOCK = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {1} end
return {0, redis.call('GET', KEYS[1]) or ''}
"""

# A long run (a stream) keeps its lock: its expiry is pushed back while the owner still holds it.
# KEYS: lock   ARGV: token, ms. Returns 1 when extended, 0 when the lock is no longer the owner's.
RUN_EXTEND = """
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
return redis.call('PEXPIRE', KEYS[1], ARGV[2])
"""

# Admit a chat run among a tenant's runs, at most `limit` at once. Runs whose expiry has passed (their
# process died without releasing them) are pruned first, so a crash frees its slots by itself.
# KEYS: runs   ARGV: token, limit, ms the run may last. Returns {1 if admitted, runs counted}.
RUN_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local running = redis.call('ZCARD', KEYS[1])
if running >= tonumber(ARGV[2]) then return {0, running} end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, running + 1}
"""

# A run admitted by RUN_ADMIT lasts longer (a stream): its expiry is pushed back if it is still there.
# KEYS: runs   ARGV: token, ms.
RUN_PROLONG = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local updated = redis.call('ZADD', KEYS[1], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1])
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return updated
"""


# Registered once per client (``core.redis_client.Scripts``).
_scripts = Scripts(
    reserve=RESERVE,
    merge=MERGE,
    release=RELEASE,
    user_record=USER_RECORD,
    ledger=LEDGER,
    ledger_mark=LEDGER_MARK,
    ledger_disturb=LEDGER_DISTURB,
    ledger_round_void=LEDGER_ROUND_VOID,
    snapshot=SNAPSHOT,
    install=INSTALL,
    window=WINDOW,
    invalidate=INVALIDATE,
    remove=REMOVE,
    set_memory=SET_MEMORY,
    context_get=CONTEXT_GET,
    context_set=CONTEXT_SET,
    clear_messages=CLEAR_MESSAGES,
    run_lock=RUN_LOCK,
    run_extend=RUN_EXTEND,
    run_admit=RUN_ADMIT,
    run_prolong=RUN_PROLONG,
)


# --- Operations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """A message id already in the ledger: where (``stored``: its message key or the pending writes,
    so acknowledged or persisted; otherwise reserved: being published, or published indeterminately)
    and its JSON."""

    stored: bool
    message: dict[str, Any]


@dataclass(frozen=True)
class Reservation:
    first_seq: int
    cached: bool  # the conversation's list is in Redis
    known: bool = True  # Redis held the conversation's last seq (False after expiry or a restart)
    ledger_whole: bool = True  # Redis lost no pending write of this conversation that may still be queued
    found: tuple[Found | None, ...] = ()  # per message asked about, in order
    user: str | None = None  # the conversation's user ('' none); None: Redis does not know it


def reserve(
    *,
    tenant_slug: str,
    conversation_id: str,
    count: int,
    token: str,
    lock_ms: int,
    seq_floor: int = 0,
    messages: Sequence[dict[str, Any]] = (),
    look_up: bool = True,
) -> Reservation | None:
    """Take the append lock and hand out ``count`` seqs; None when another appender holds the lock.

    Each of ``messages`` (given without ``seq``; message n gets ``first_seq + n``) is looked up in
    the ledger, and recorded as reserved with its seq when not found (``look_up=False``: recorded
    without looking: a second reservation of the same messages). Confirmed by a replica before it
    returns (``replicated``), else ReplicaUnconfirmed: the lock is then held, the reservations made."""
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    args: list[Any] = [token, count, lock_ms, settings.MEMORY_PENDING_TTL, seq_floor, "lookup" if look_up else "record"]
    message_keys = []
    for message in messages:
        args += [message["id"], message_json(message | {"seq": 0})[len(HEADER_PREFIX) :]]
        message_keys.append(message_key(tenant_slug, conversation_id, message["id"]))
    try:
        reply = call(
            "reserve",
            tenant_slug,
            replicated,
            _scripts.reserve,
            keys=[keys.state, keys.lock, keys.messages, keys.reserved, keys.pending, *message_keys],
            args=args,
        )
    except ReplicaUnconfirmed as error:
        if int(error.reply[0]) < 0:  # the lock was busy: nothing was written, nothing to confirm
            return None
        # The ids this call reserved (found nowhere before it; every one when recording): the caller
        # publishes nothing and drops them, so its 503 stays true ("nothing was written") and a
        # resend is a new write (201) rather than an earlier attempt's (200).
        kinds = list(error.reply[5::2]) if look_up else []
        error.reserved_now = [message["id"] for index, message in enumerate(messages) if index >= len(kinds) or not kinds[index]]
        raise
    if int(reply[0]) < 0:
        return None
    found = tuple(
        Found(stored=_text(kind) != "r", message=json.loads(value)) if kind else None
        for kind, value in zip(reply[5::2], reply[6::2], strict=True)
    )
    user = _text(reply[4])
    return Reservation(
        first_seq=int(reply[0]),
        cached=reply[1] in (b"1", "1"),
        known=reply[2] in (b"1", "1"),
        ledger_whole=reply[3] in (b"1", "1"),
        found=found,
        user=user[1:] if user else None,
    )


def user_record(*, tenant_slug: str, conversation_id: str, user_id: str, claim: bool) -> str:
    """Record the conversation's user for the appends' check (``reserve`` hands it back): learned from
    PostgreSQL (``claim=False``: only if Redis knew none) or claimed by an accepted write naming a user
    for a conversation without one. Returns the user recorded, which a concurrent writer may have set."""
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    args = ["=" + user_id, "claim" if claim else "learn", settings.MEMORY_PENDING_TTL]
    return _text(call("user_record", tenant_slug, _scripts.user_record, keys=[keys.state], args=args))[1:]


def user_forget(*, tenant_slug: str, conversation_id: str) -> None:
    """Forget the conversation's user (it was changed): the next write reads it from PostgreSQL."""
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    call("user_forget", tenant_slug, client().hdel, keys.state, "user")


def release(*, tenant_slug: str, conversation_id: str, token: str, unreserve: Sequence[str] = ()) -> None:
    """Release the append lock held with ``token``, dropping the reserved entries of ``unreserve``."""
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    call("release", tenant_slug, _scripts.release, keys=[keys.lock, keys.reserved], args=[token, *unreserve])


LEDGER_KEY = "memory:ledger"


@dataclass(frozen=True)
class LedgerStatus:
    """This Redis's ledger of pending writes: since when it is kept (``since``, microseconds: a Redis
    that restarted empty starts a new one), when the current round of barriers began (its token),
    when that round found the queue drained, when it found the ledger whole, and when a persist
    message last went back to the broker (``disturbed_at``: the round under way then was void); all
    in Redis time, microseconds."""

    since: int
    barrier_at: int | None
    drained_at: int | None
    whole_at: int | None  # whole for every conversation (the first ledger of a deployment, or drained)
    now: int
    begun_now: bool
    disturbed_at: int | None = None


def ledger_status() -> LedgerStatus:
    """The ledger's state, begun now if this Redis has none (it restarted empty, or is new)."""
    reply = call("ledger", "-", _scripts.ledger, keys=[LEDGER_KEY], args=[])
    since, barrier_at, drained_at, whole_at, now, begun, disturbed_at = reply
    return LedgerStatus(
        since=int(since),
        barrier_at=int(barrier_at) if barrier_at else None,
        drained_at=int(drained_at) if drained_at else None,
        whole_at=int(whole_at) if whole_at else None,
        now=int(now),
        begun_now=bool(int(begun)),
        disturbed_at=int(disturbed_at) if disturbed_at else None,
    )


def ledger_mark(*, since: int, event: str, barrier: int | None = None) -> int:
    """Record ``event`` (``barrier_at``, ``drained_at`` or ``whole_at``) now, if the ledger begun at
    ``since`` is still this Redis's and, given ``barrier``, that barrier is still the current one.
    Returns the time recorded (Redis time, microseconds), or 0."""
    args: list[Any] = [since, event] if barrier is None else [since, event, barrier]
    return int(call("ledger", "-", _scripts.ledger_mark, keys=[LEDGER_KEY], args=args))


def ledger_disturb() -> bool:
    """A persist message may have gone back to the broker: void the round of barriers of a ledger not yet whole."""
    return bool(call("ledger", "-", _scripts.ledger_disturb, keys=[LEDGER_KEY], args=[]))


def ledger_round_void(*, since: int, barrier: int) -> bool:
    """Void the round of barriers ``barrier`` if it is still current (one of its steps failed)."""
    return bool(call("ledger", "-", _scripts.ledger_round_void, keys=[LEDGER_KEY], args=[since, barrier]))


def ledger_holds(*, tenant_slug: str, conversation_id: str, message_ids: Sequence[str]) -> bool:
    """Whether the ledger holds every one of these ids (its message key, or among the pending or the
    reserved writes): a resend of it is answered from Redis."""
    if not message_ids:
        return True
    keys = ConversationKeys.of(tenant_slug, conversation_id)

    def read() -> list[Any]:
        pipeline = client().pipeline(transaction=False)
        # By name, as get_messages_by_id: one conversation's keys, one slot.
        pipeline.execute_command("MGET", *[message_key(tenant_slug, conversation_id, i) for i in message_ids])
        pipeline.hmget(keys.pending, list(message_ids))
        pipeline.hmget(keys.reserved, list(message_ids))
        return pipeline.execute()

    keyed, pending, reserved = call("ledger_holds", tenant_slug, read)
    return all(any(found is not None for found in each) for each in zip(keyed, pending, reserved, strict=True))


def ledger_whole(*, tenant_slug: str, conversation_id: str) -> None:
    """Mark the conversation's ledger whole (it lost nothing that may still be queued), and drop its
    cached list: one built before may lack writes that were still on their way, and a list read as
    a list built before may lack writes that were still on their way."""
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    invalidate(tenant_slug=tenant_slug, conversation_id=conversation_id)
    call("ledger", tenant_slug, client().hset, keys.state, "ledger", 1)


def merge(
    *,
    tenant_slug: str,
    conversation_id: str,
    messages: Sequence[dict[str, Any]],
    mode: str,
    ttl: int,
    token: str = "",
) -> None:
    """Put messages into the cache in seq order; ``mode`` is ``pending`` (acknowledged, not yet
    persisted), ``settled`` (the row is committed) or ``reassert`` (pending again if Redis lost them).

    Pending writes are acknowledged next: they are confirmed by a replica first (``replicated``),
    else ReplicaUnconfirmed (merged on the primary, which a failover may undo)."""
    keys, args = _merge_call(tenant_slug, conversation_id, messages, mode=mode, ttl=ttl, token=token)
    if mode == "pending":
        call("merge", tenant_slug, replicated, _scripts.merge, keys=keys, args=args)
    else:
        call("merge", tenant_slug, _scripts.merge, keys=keys, args=args)


def _merge_call(
    tenant_slug: str, conversation_id: str, messages: Sequence[dict[str, Any]], *, mode: str, ttl: int, token: str = ""
) -> tuple[list[str], list[Any]]:
    """The keys and arguments of MERGE."""
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    args: list[Any] = [token, ttl, settings.MEMORY_CACHE_LIST_LIMIT, settings.MEMORY_PENDING_TTL, mode]
    message_keys = []
    for message in messages:
        args += [message["id"], message_json(message)]
        message_keys.append(message_key(tenant_slug, conversation_id, message["id"]))
    return [
        keys.state,
        keys.messages,
        keys.pending,
        keys.lock,
        erase_floor_key(tenant_slug, conversation_id),
        keys.reserved,
        *message_keys,
    ], args


@dataclass(frozen=True)
class Snapshot:
    version: str
    pending: list[dict[str, Any]]
    last_seq: int


def snapshot(*, tenant_slug: str, conversation_id: str) -> Snapshot:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    version, pending, last_seq = call("snapshot", tenant_slug, _scripts.snapshot, keys=[keys.state, keys.pending], args=[])
    return Snapshot(
        version=_text(version),
        pending=[json.loads(item) for item in pending],
        last_seq=int(last_seq),
    )


def pending(*, tenant_slug: str, conversation_id: str) -> list[dict[str, Any]]:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    values = call("pending", tenant_slug, client().hvals, keys.pending)
    return [json.loads(item) for item in values]


def install(
    *,
    tenant_slug: str,
    conversation_id: str,
    version: str,
    messages: Sequence[dict[str, Any]],
    complete: bool,
    ttl: int,
    rebuild_token: str = "",
) -> bool:
    """Replace the cached list atomically, unless the conversation changed since ``version``; with
    ``rebuild_token``, release the rebuild lock held with it in the same script, installed or not."""
    prefix = _prefix(tenant_slug, conversation_id)
    last_seq = max((message["seq"] for message in messages), default=0)
    installed = call(
        "install",
        tenant_slug,
        _scripts.install,
        keys=[f"{prefix}:state", f"{prefix}:messages", f"{prefix}:rebuild", erase_floor_key(tenant_slug, conversation_id)],
        args=[version, ttl, settings.MEMORY_PENDING_TTL, header_json(complete=complete), last_seq, rebuild_token]
        + [message_json(message) for message in messages],
    )
    return bool(installed)


@dataclass(frozen=True)
class CachedWindow:
    complete: bool  # the read reached the list's header, which says the list is the whole conversation
    elements: list[bytes]  # the messages' JSON as cached, oldest first

    @functools.cached_property
    def messages(self) -> list[dict[str, Any]]:
        return decode_elements(self.elements)


def decode_elements(elements: Sequence[bytes]) -> list[dict[str, Any]]:
    """Cached messages' JSON, decoded as one joined array instead of one decode per message."""
    return json.loads(b"[" + b",".join(elements) + b"]")


@dataclass(frozen=True)
class WindowMiss:
    """No list was cached: what a rebuild starts from, and whether this reader took the rebuild lock."""

    snapshot: Snapshot
    locked: bool


def window_command(*, tenant_slug: str, conversation_id: str, count: int) -> tuple[Any, ...]:
    """The one command ``window`` sends: an ``LRANGE`` of the newest ``count`` messages and one more."""
    return ("LRANGE", f"{_prefix(tenant_slug, conversation_id)}:messages", -count - 1, -1)


def window(
    *, tenant_slug: str, conversation_id: str, count: int, answered: dict[tuple[Any, ...], Any] | None = None
) -> CachedWindow | None:
    """The newest ``count`` cached messages, oldest first; None on a miss.

    One ``LRANGE`` of one element more than asked for: it either reaches the header (the list holds
    no more than ``count`` messages, and the header says whether they are the whole conversation) or
    holds one message too many, left out (the list holds more than the page). Not a script: a
    script's LRANGE copies every element into Lua and back, and joining them there cost more than
    the read itself (0.49 ms against 0.16 ms for 50 messages of about 1 KB). Not a MULTI of LLEN,
    LINDEX and LRANGE either: 0.04 ms against 0.07 ms."""
    if count < 1:
        raise ValueError(f"A window holds at least one message; count={count}.")
    command = window_command(tenant_slug=tenant_slug, conversation_id=conversation_id, count=count)
    if answered is not None and command in answered:  # read already, with the API key's record
        elements = answered[command]
    else:
        elements = call("window", tenant_slug, client().lrange, *command[1:])
    if not elements:
        return None
    first = elements[0]
    return CachedWindow(complete=is_header(first) and b'"complete":true' in first, elements=elements[1:])


def window_or_rebuild_lock(
    *, tenant_slug: str, conversation_id: str, count: int, token: str, answered: dict[tuple[Any, ...], Any] | None = None
) -> CachedWindow | WindowMiss:
    """The newest ``count`` cached messages, oldest first; on a miss, in one more round trip, the
    rebuild lock taken with ``token`` (unless another reader holds it) and the rebuild's snapshot.
    ``answered`` may hold the answer to ``window_command`` already (``tenants.piggyback``)."""
    cached = window(tenant_slug=tenant_slug, conversation_id=conversation_id, count=count, answered=answered)
    if cached is not None:
        return cached
    prefix = _prefix(tenant_slug, conversation_id)
    found = call(
        "window_miss",
        tenant_slug,
        _scripts.window,
        keys=[f"{prefix}:messages", f"{prefix}:rebuild", f"{prefix}:state", f"{prefix}:pending"],
        args=[count, token, settings.MEMORY_REBUILD_LOCK_TTL],
    )
    if found[0]:  # a writer cached the list in between
        _, complete, elements = found
        return CachedWindow(complete=bool(complete), elements=elements)
    _, locked, version, pending, last_seq = found
    snapshot = Snapshot(version=_text(version), pending=[json.loads(item) for item in pending], last_seq=int(last_seq))
    return WindowMiss(snapshot=snapshot, locked=bool(locked))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def invalidate(*, tenant_slug: str, conversation_id: str) -> None:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    call("invalidate", tenant_slug, _scripts.invalidate, keys=[keys.state, keys.messages], args=[])


def remove(*, tenant_slug: str, conversation_id: str, message: dict[str, Any]) -> None:
    keys, args = _remove_call(tenant_slug, conversation_id, message)
    call("remove", tenant_slug, _scripts.remove, keys=keys, args=args)


def _remove_call(tenant_slug: str, conversation_id: str, message: dict[str, Any]) -> tuple[list[str], list[Any]]:
    """The keys and arguments of REMOVE."""
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    return (
        [keys.state, keys.messages, keys.pending, message_key(tenant_slug, conversation_id, message["id"])],
        [message["id"], message_json(message), settings.MEMORY_PENDING_TTL],
    )


@dataclass(frozen=True)
class Settlement:
    """What one committed payload changes in the cache: its ``settled`` messages are rows now (no
    longer pending), its ``removed`` ones leave (erased before the commit, or a resend's second copy)."""

    tenant_slug: str
    conversation_id: str
    settled: Sequence[dict[str, Any]]
    removed: Sequence[dict[str, Any]] = ()


@dataclass(frozen=True)
class Settled:
    failed: list[str]  # per settlement: the error that left it unsettled, or ""
    claimed: list[list[str] | None]  # per claim: the tasks it marked queued; None when the claim failed


def settle(
    settlements: Sequence[Settlement],
    *,
    ttl: int,
    claims: Sequence[tuple[str, str, Sequence[str]]] = (),
    claim_ttl: int = 0,
) -> Settled:
    """What a persist statement committed, in one round trip: each settlement as ``merge`` (mode
    ``settled``) and ``remove`` would do it, then each claim, a (tenant, conversation, tasks) whose
    derived-memory tasks are marked queued (``<tenant>:<conv>:queued:<task>``) for ``claim_ttl``
    seconds. A settlement whose script fails fails alone; Redis unreachable raises CacheUnavailable."""
    scripts = _scripts
    calls: list[tuple[int, Any, list[str], list[Any]]] = []  # settlement, script, keys, args
    for index, settlement in enumerate(settlements):
        tenant_slug, conversation_id = settlement.tenant_slug, settlement.conversation_id
        if settlement.settled:
            keys, args = _merge_call(tenant_slug, conversation_id, settlement.settled, mode="settled", ttl=ttl)
            calls.append((index, scripts.merge, keys, args))
        for message in settlement.removed:
            calls.append((index, scripts.remove, *_remove_call(tenant_slug, conversation_id, message)))
    pipeline = client().pipeline(transaction=False)
    for _, script, keys, args in calls:
        # Not pipeline.evalsha: redis-py's cluster pipeline refuses it, as a script could name keys
        # of several slots; each of these names one conversation's, and the pipeline routes it there.
        pipeline.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
    for tenant_slug, conversation_id, tasks in claims:
        for task in tasks:
            pipeline.set(key(tenant_slug, conversation_id, f"queued:{task}"), 1, nx=True, ex=claim_ttl)
    tenants = {settlement.tenant_slug for settlement in settlements} | {tenant_slug for tenant_slug, _, _ in claims}
    label = tenants.pop() if len(tenants) == 1 else "-"
    replies = call("settle", label, pipeline.execute, raise_on_error=False) if len(pipeline) else []
    failed = [""] * len(settlements)
    for (index, script, keys, args), reply in zip(calls, replies[: len(calls)], strict=True):
        if isinstance(reply, redis.exceptions.NoScriptError):  # Redis restarted: the script loads again
            try:
                reply = call("settle", label, script, keys=keys, args=args)
            except CacheUnavailable as error:
                reply = error
        if isinstance(reply, Exception) and not failed[index]:
            failed[index] = str(reply)
    claimed: list[list[str] | None] = []
    marks = replies[len(calls) :]
    for _, _, tasks in claims:
        replied, marks = marks[: len(tasks)], marks[len(tasks) :]
        if any(isinstance(reply, Exception) for reply in replied):
            claimed.append(None)
        else:
            claimed.append([task for task, was_set in zip(tasks, replied, strict=True) if was_set])
    return Settled(failed=failed, claimed=claimed)


def get_messages_by_id(*, tenant_slug: str, conversation_id: str, message_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    ids = list(message_ids)
    if not ids:
        return {}
    pending = ConversationKeys.of(tenant_slug, conversation_id).pending

    def read() -> tuple[list[Any], list[Any]]:
        pipeline = client().pipeline(transaction=False)
        # MGET by name: redis-py's cluster pipeline refuses pipeline.mget (keys of several slots);
        # these are one conversation's keys, one slot, which the pipeline routes to.
        pipeline.execute_command("MGET", *[message_key(tenant_slug, conversation_id, i) for i in ids])
        pipeline.hmget(pending, ids)  # a pending write outlives its message key (7 days against 24 h)
        keyed, waiting = pipeline.execute()
        return keyed, waiting

    keyed, waiting = call("message_get", tenant_slug, read)
    return {
        message_id: json.loads(value if value is not None else queued)
        for message_id, value, queued in zip(ids, keyed, waiting, strict=True)
        if value is not None or queued is not None
    }


def try_lock_rebuild(*, tenant_slug: str, conversation_id: str, token: str) -> bool:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    return bool(
        call("rebuild_lock", tenant_slug, client().set, keys.rebuild, token, nx=True, ex=settings.MEMORY_REBUILD_LOCK_TTL)
    )


def unlock_rebuild(*, tenant_slug: str, conversation_id: str, token: str) -> None:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    call("rebuild_unlock", tenant_slug, _scripts.release, keys=[keys.rebuild], args=[token])


def get_memory(*, tenant_slug: str, conversation_id: str) -> dict[str, Any] | None:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    value = call("memory_get", tenant_slug, client().get, keys.memory)
    return None if value is None else json.loads(value)


def set_memory(*, tenant_slug: str, conversation_id: str, document: dict[str, Any], revision: int, ttl: int) -> bool:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    return bool(
        call(
            "memory_set",
            tenant_slug,
            _scripts.set_memory,
            keys=[keys.memory, keys.state],
            args=[revision, json.dumps(document, separators=(",", ":")), ttl, settings.MEMORY_PENDING_TTL],
        )
    )


def context_key(tenant_slug: str, conversation_id: str, parameters: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(parameters, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]
    return key(tenant_slug, conversation_id, f"context:{digest}")


@dataclass(frozen=True)
class CachedContext:
    version: str  # the conversation's version now: a context built from here on is stored under it
    context: dict[str, Any] | None


def get_context(*, tenant_slug: str, conversation_id: str, parameters: dict[str, Any]) -> CachedContext:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    version, stored = call(
        "context_get",
        tenant_slug,
        _scripts.context_get,
        keys=[keys.state, context_key(tenant_slug, conversation_id, parameters)],
        args=[],
    )
    return CachedContext(version=_text(version), context=json.loads(stored) if stored else None)


def set_context(
    *, tenant_slug: str, conversation_id: str, parameters: dict[str, Any], version: str, context: dict[str, Any], ttl: int
) -> bool:
    keys = ConversationKeys.of(tenant_slug, conversation_id)
    return bool(
        call(
            "context_set",
            tenant_slug,
            _scripts.context_set,
            keys=[keys.state, context_key(tenant_slug, conversation_id, parameters)],
            args=[version, json.dumps(context, separators=(",", ":"), ensure_ascii=False), ttl],
        )
    )


def erase(*, tenant_slug: str, conversation_id: str, erased_before: int | None = None) -> int:
    """Delete every key of a conversation (SCAN over its prefix, on the one node of its slot in a
    cluster; ids never hold glob characters).

    With ``erased_before``, leave the erase's floor (``erase_floor_key``, for the pending TTL): a
    worker that committed a row just before the erase and settles it after must not put it back.
    """
    connection = client()
    pattern = key(tenant_slug, conversation_id, "*")
    floor = erase_floor_key(tenant_slug, conversation_id)

    def scan_and_delete() -> int:
        count = 0
        batch: list[bytes] = []
        for found in scan_keys(connection, pattern, slot_key=floor):
            batch.append(found)
            if len(batch) >= 500:
                count += connection.unlink(*batch)
                batch = []
        if batch:
            count += connection.unlink(*batch)
        if erased_before is not None:
            connection.set(floor, erased_before, ex=settings.MEMORY_PENDING_TTL)
        return count

    return call("erase", tenant_slug, scan_and_delete)


def clear_messages(*, tenant_slug: str, conversation_id: str, token: str, erased_before: int) -> int:
    """Drop every cached message of a conversation (SCAN for its message and context keys), keep its
    memory document and seq clock, record ``erased_before`` (settles of older seqs are ignored), and
    release the append lock held with ``token``."""
    connection = client()
    keys = ConversationKeys.of(tenant_slug, conversation_id)

    def scan_and_clear() -> int:
        found: list[bytes] = []
        for suffix in ("message:*", "context:*"):
            found.extend(scan_keys(connection, key(tenant_slug, conversation_id, suffix), slot_key=keys.state))
        return _scripts.clear_messages(
            keys=[
                keys.state,
                keys.messages,
                keys.pending,
                keys.lock,
                erase_floor_key(tenant_slug, conversation_id),
                keys.reserved,
                *found,
            ],
            args=[token, settings.MEMORY_PENDING_TTL, erased_before],
        )

    return call("clear_messages", tenant_slug, scan_and_clear)


@dataclass(frozen=True)
class CacheState:
    """What Redis holds for one conversation, as the admin shows it."""

    cached: bool  # the message list exists
    ttl: int | None  # seconds the list has left (None: not cached)
    length: int  # cached messages (the list without its header)
    pending: int  # acknowledged writes no worker has persisted yet
    memory_cached: bool


def states(*, conversations: Sequence[tuple[str, str]]) -> dict[tuple[str, str], CacheState]:
    """The cache state of many conversations, ``(tenant slug, conversation id)`` each, in one round trip."""
    if not conversations:
        return {}
    pipeline = client().pipeline(transaction=False)
    for tenant_slug, conversation_id in conversations:
        keys = ConversationKeys.of(tenant_slug, conversation_id)
        pipeline.ttl(keys.messages)
        pipeline.llen(keys.messages)
        pipeline.hlen(keys.pending)
        pipeline.exists(keys.memory)
    answers = call("states", conversations[0][0], pipeline.execute)
    found = {}
    for index, pair in enumerate(conversations):
        ttl, length, pending_count, memory = answers[index * 4 : index * 4 + 4]
        cached = length > 0
        found[pair] = CacheState(
            cached=cached,
            ttl=ttl if cached and ttl >= 0 else None,
            length=max(0, length - 1),
            pending=pending_count,
            memory_cached=bool(memory),
        )
    return found


def derived_release(*, tenant_slug: str, conversation_id: str, task: str) -> None:
    """The task runs now: a write persisted from here on queues it again."""
    call("derived_release", tenant_slug, client().delete, key(tenant_slug, conversation_id, f"queued:{task}"))


def ping() -> float:
    """Round trip to Redis in milliseconds; raises CacheUnavailable."""
    started = time.perf_counter()
    call("ping", "-", client().ping)
    return (time.perf_counter() - started) * 1000


def run_key(tenant_slug: str, conversation_id: str) -> str:
    return key(tenant_slug, conversation_id, "run")


def tenant_runs_key(tenant_id: int) -> str:
    return f"chat:runs:{tenant_id}"


def run_lock(*, tenant_slug: str, conversation_id: str, token: str, ttl_ms: int) -> str | None:
    """Take the conversation's chat run lock for ``ttl_ms``; None when taken, else the holder's token."""
    reply = call("run_lock", tenant_slug, _scripts.run_lock, keys=[run_key(tenant_slug, conversation_id)], args=[token, ttl_ms])
    return None if int(reply[0]) == 1 else _text(reply[1])


def run_extend(*, tenant_slug: str, conversation_id: str, token: str, ttl_ms: int) -> bool:
    """Push back the expiry of the run lock held with ``token``; False when it is no longer held."""
    keys = [run_key(tenant_slug, conversation_id)]
    return bool(call("run_extend", tenant_slug, _scripts.run_extend, keys=keys, args=[token, ttl_ms]))


def run_unlock(*, tenant_slug: str, conversation_id: str, token: str) -> None:
    """Release the run lock if ``token`` still holds it (a lock that expired and was taken again is left)."""
    call("run_unlock", tenant_slug, _scripts.release, keys=[run_key(tenant_slug, conversation_id)], args=[token])


def runs_admit(*, tenant_slug: str, tenant_id: int, token: str, limit: int, ttl_ms: int) -> tuple[bool, int]:
    """Count a chat run among the tenant's, if fewer than ``limit`` run: (admitted, runs counted)."""
    reply = call("runs_admit", tenant_slug, _scripts.run_admit, keys=[tenant_runs_key(tenant_id)], args=[token, limit, ttl_ms])
    return int(reply[0]) == 1, int(reply[1])


def runs_prolong(*, tenant_slug: str, tenant_id: int, token: str, ttl_ms: int) -> None:
    call("runs_prolong", tenant_slug, _scripts.run_prolong, keys=[tenant_runs_key(tenant_id)], args=[token, ttl_ms])


def runs_leave(*, tenant_slug: str, tenant_id: int, token: str) -> None:
    call("runs_leave", tenant_slug, client().zrem, tenant_runs_key(tenant_id), token)

"""HTTP client of the memory service (API v1), sync and async, without Django.

Contract:

* Every request carries ``Authorization: Api-Key <key>`` and speaks JSON. Every operation of the API
  has a method, and its async twin with an ``a`` prefix (``window`` and ``awindow``).
* A service error ``{"error": {"code", "message", "details"}}`` is raised as a
  :class:`MemoryServiceError` (``status``, ``code``, ``message``, ``details``, ``retry_after``) of the
  subclass named by its status: :class:`BadRequest` (400), :class:`Unauthorized` (401),
  :class:`Forbidden` (403), :class:`NotFound` (404), :class:`Conflict` (409),
  :class:`PayloadTooLarge` (413), :class:`RateLimited` (429), :class:`ServiceUnavailable` (503); any
  other status is the base class. A service that cannot be reached after the retries is
  :class:`Unreachable` (``status=None``, ``code="unreachable"``). Errors survive ``copy.deepcopy``
  and being sent between processes.
* A conversation id the service would refuse (see :func:`check_conversation_id`), and a user id,
  fact key or memory id that cannot be one segment of a URL path, raise ``ValueError`` before any
  request.
* Every body is encoded as UTF-8 JSON when the call is made, before any request. A value no JSON
  body can carry (NaN or Infinity; a string or key holding a lone UTF-16 surrogate such as
  ``"\\ud800"``; an integer of more than ``MAX_INT_DIGITS`` digits; a value that is not JSON, such as
  a ``datetime`` or a ``set``; one that contains itself), and a lone surrogate in a query parameter,
  raise :class:`BadRequest` (``validation_error``) worded as the service's own 400 for the same
  value: ``details["field"]`` is its path in the body (``messages[2].metadata.items[3]``,
  ``operations[0].value.score``) and ``details["reason"]`` the reason. Nothing is sent, so nothing
  is written, for a batch sent in several requests too.
* Numbers keep their value and their Python type (a float of magnitude ``1e16`` or more comes back
  as a float, from the cache and from the database alike), except ``-0.0``, which comes back from
  the database as ``0.0`` (PostgreSQL's ``jsonb`` keeps every number as ``numeric``, which has no
  negative zero). ``memory_client.langgraph`` stores ``-0.0`` typed, so a graph's state keeps it.
* Reads of something that may not exist yet answer an empty value instead of raising: the window
  and message list of an unknown conversation are ``[]``, its summaries ``[]``, a missing
  conversation, memory document, message, fact, extracted memory or checkpoint is ``None``, a fact's
  history is an empty page, and clearing, erasing or deleting what does not exist is a no-op. Only
  the service's own ``not_found`` answer counts: a 404 from a path the service does not know (an
  older deployment, a proxy) still raises.
* Retries: a 503 (waiting ``Retry-After``, capped at ``RETRY_AFTER_CAP`` seconds), a refused or
  dropped connection and a timeout are retried up to ``retries`` times, with exponential backoff.
  Every call is safe to repeat, because what a write says is fixed before the first attempt and the
  resend is the same request: each appended message gets its UUID ``id`` on the client (the service
  answers a resend with the same id and content with the stored message and its first seq, which is
  also how a ``write_indeterminate`` 503 is settled), a chat turn's message gets its ``message_id``
  first too, a checkpoint is put under its own id, writes are keyed by task and index, the memory
  document, facts and conversation changes are replaced by value (sending them again changes
  nothing), a summary asked for again is the one filed, and deletes are idempotent. An extracted
  memory's correction is by value too and a resent delete leaves it taken back, though its history
  records a resent correction or delete once more (and the delete's time is the resend's). A
  conversation create whose resend meets ``conflict`` (the first attempt stored it, its answer was
  lost) answers the conversation when it holds what was sent. A 503 that no retry changes
  (``PERMANENT_UNAVAILABLE``: the tenant's chat model is not configured or usable) is raised at
  once. A 429 is raised, not retried: its ``retry_after`` says when to try again.
* Appends, checkpoint writes and store operations are sent in parts of at most ``MAX_BATCH``, in
  order, each part one request that the service stores all or nothing. A service that takes fewer
  items per request (its ``MEMORY_MAX_BATCH``) refuses a longer part whole, storing nothing, and names
  its limit (``details["limit"]``): the client then sends that part and the rest of the batch in
  parts of that limit, the same items (messages with the same ids) in the same order, and its later
  batches too. A batch within the service's limit is therefore stored whole or not at all; in a
  longer one, an error stops it at the
  failing part: the parts before it stay stored, and neither it nor any after it is (after
  ``Unreachable`` or ``ServiceUnavailable`` the failing part itself may be stored). The error names an
  item by its index in the caller's batch (``operations[120]``, not ``operations[20]`` of the second
  part), and its ``details["applied"]`` counts the items stored before the failing part.
* The async methods use an ``httpx.AsyncClient`` created on first use, one per event loop, so a
  client may serve several ``asyncio.run`` calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import math
import random
import re
import time
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from types import TracebackType
from typing import Any, Final, Literal, TypedDict
from urllib.parse import quote

import httpx

API_PREFIX: Final = "/api/v1"
MAX_BATCH: Final = 100
RETRY_AFTER_CAP: Final = 5.0
BACKOFF_BASE: Final = 0.25
BACKOFF_CAP: Final = 4.0
# A chat call waits for the model: up to the service's MEMORY_CHAT_TIMEOUT (60 s by default).
CHAT_TIMEOUT: Final = 90.0
# 503s that no retry will change: the tenant's chat model is not configured, cannot be set up, or
# its provider's credential is missing from the deployment.
PERMANENT_UNAVAILABLE: Final = frozenset({"chat_model_not_configured", "chat_model_unavailable", "provider_credential_missing"})
# Errors after which the request may not have reached the service, or its answer was lost.
TRANSIENT_ERRORS: Final = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)

# The service's rule for conversation ids (conversations.api.serializers), and the longest it stores.
CONVERSATION_ID_RULE: Final = "letters, digits and . _ @ = + - (not starting with a symbol), at most 200 characters"
CONVERSATION_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@=+-]*")
MAX_ID_LENGTH: Final = 200

Role = Literal["system", "user", "assistant", "tool"]
MessageFormat = Literal["openai", "langchain"]
SearchMode = Literal["hybrid", "semantic", "keyword"]
SearchScope = Literal["auto", "conversation", "user"]
MemoryKind = Literal["fact", "preference", "event", "relation"]


# --- errors ---------------------------------------------------------------------------------------


class MemoryServiceError(Exception):
    """An error answered by the memory service, or its absence (``status=None``).

    ``code`` is the service's stable error code (``validation_error``, ``limit_exceeded``,
    ``not_found``, ``conflict``, ``throttled``, ``write_indeterminate``...) or ``http_<status>`` when
    the answer was not the service's JSON error; ``details`` its details (the per-field errors, a
    limit's ``field``, ``size`` and ``limit``); ``retry_after`` the seconds its ``Retry-After`` asked."""

    def __init__(
        self, status: int | None, code: str, message: str, details: Any = None, retry_after: float | None = None
    ) -> None:
        super().__init__(f"{code} ({status}): {message}" if status else f"{code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.details = details if details is not None else {}
        self.retry_after = retry_after

    def __reduce__(self) -> tuple[type[MemoryServiceError], tuple[int | None, str, str, Any, float | None]]:
        return type(self), (self.status, self.code, self.message, self.details, self.retry_after)

    @classmethod
    def from_response(cls, response: httpx.Response) -> MemoryServiceError:
        """The error a response answers: the service's JSON error, or the bare HTTP status, as the
        subclass of its status."""
        code, message, details = f"http_{response.status_code}", response.reason_phrase, {}
        try:
            body = response.json()
        except ValueError:
            body = None
        error = body.get("error") if isinstance(body, dict) else None
        if isinstance(error, dict) and isinstance(error.get("code"), str):
            code, message, details = error["code"], str(error.get("message", "")), error.get("details") or {}
        elif response.text:
            message = f"{message}: {response.text[:200]}"
        kind = ERROR_BY_STATUS.get(response.status_code, MemoryServiceError)
        return kind(response.status_code, code, message, details, _retry_after_seconds(response))


class BadRequest(MemoryServiceError):
    """400: the request broke a rule (``validation_error``) or a limit (``limit_exceeded``); the
    message names the field, ``details`` the rule."""


class Unauthorized(MemoryServiceError):
    """401: no API key, or one the service does not know (``authentication_failed``)."""


class Forbidden(MemoryServiceError):
    """403: the key may not do this (``permission_denied``)."""


class NotFound(MemoryServiceError):
    """404: the conversation, message, fact or checkpoint does not exist (or belongs to another tenant)."""


class Conflict(MemoryServiceError):
    """409: a message id holding other content, a conversation that exists, a chat turn running."""


class PayloadTooLarge(MemoryServiceError):
    """413: the body is over the service's size limit (``details``: ``limit``)."""


class RateLimited(MemoryServiceError):
    """429: the tenant's rate or concurrency limit; try again after ``retry_after`` seconds."""


class ServiceUnavailable(MemoryServiceError):
    """503 after the retries (or at once for ``PERMANENT_UNAVAILABLE``): ``code`` says which backend
    or model, and whether the write may be stored (``write_indeterminate``)."""


class Unreachable(MemoryServiceError):
    """No answer at all after the retries: refused or dropped connections, timeouts."""


ERROR_BY_STATUS: Final[Mapping[int, type[MemoryServiceError]]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    409: Conflict,
    413: PayloadTooLarge,
    429: RateLimited,
    503: ServiceUnavailable,
}


# --- what the service answers ----------------------------------------------------------------------
# Datetimes are ISO 8601 strings. Shapes are the API's (its OpenAPI schema at /api/schema/).


class MessageIn(TypedDict, total=False):
    """A message to append: ``role`` and ``content`` required; ``id`` (UUID) is set by the client when absent."""

    id: str
    role: Role
    content: str | None
    metadata: dict[str, Any]
    created_at: str
    tool_calls: list[dict[str, Any]]
    tool_call_id: str
    name: str


class StoredMessage(TypedDict):
    """A message as the service keeps it; ``seq`` orders the conversation."""

    id: str
    conversation_id: str
    seq: int
    role: Role
    content: str
    metadata: dict[str, Any]
    created_at: str
    token_count: int


class Conversation(TypedDict):
    conversation_id: str
    user_id: str
    agent_id: str
    archived: bool
    metadata: dict[str, Any]
    message_count: int
    token_count: int
    last_seq: int
    created_at: str
    updated_at: str


class ConversationPage(TypedDict):
    """One page of conversations, newest activity first: ``count`` of all, links to the neighbours."""

    count: int
    next: str | None
    previous: str | None
    results: list[Conversation]


class ConversationErased(TypedDict):
    conversation_id: str
    messages_erased: int
    cache_keys_erased: int


class UserErased(TypedDict):
    user_id: str
    conversations_erased: int
    messages_erased: int
    embeddings_erased: int
    summaries_erased: int
    checkpoints_erased: int
    facts_erased: int
    memories_erased: int
    dead_letters_erased: int
    cache_keys_erased: int


class MemoryDocument(TypedDict):
    """The conversation's memory document: the agent's own ``messages`` and ``metadata`` (to which
    the service adds ``tenant_id``, ``conversation_id``, ``updated_at`` and the owner ids)."""

    messages: list[Any]
    metadata: dict[str, Any]


class SearchHit(TypedDict):
    message_id: str
    conversation_id: str
    seq: int
    role: str
    content: str
    created_at: str
    metadata: dict[str, Any]
    similarity: float | None
    keyword_score: float | None
    score: float


class SearchFilters(TypedDict, total=False):
    """What a search may be narrowed to, before ranking (AND across keys, OR within a list)."""

    start_date: str | datetime
    end_date: str | datetime
    role: list[str]
    name: list[str]
    agent_id: list[str]
    conversation_id: list[str]
    metadata: dict[str, Any]  # top-level key: a value, or {"in": [values]}


class SearchStatus(TypedDict):
    """Whether search covers a user's history: messages persisted and embedded, and still waiting."""

    user_id: str
    embedding_model: str | None
    messages: int
    embedded: int
    not_embedded: int
    pending_persist: int | None
    searchable: bool
    # None when searchable; else pending_persist, not_embedded or pending_unknown (poll), or no_messages
    # (nothing to search: polling will not change it).
    reason: str | None
    oldest_not_embedded_at: str | None


class SearchResult(TypedDict):
    """Hits best first, with what the search covered."""

    query: str
    mode: str
    scope: str
    conversations: int
    candidates: int
    embedding_model: str
    query_embedding_dim: int | None
    results: list[SearchHit]


class FusedTurnHit(SearchHit):
    """A turn of the user search with memories: the message hit, ``memory_ids`` the user's memories read from it."""

    kind: Literal["turn"]
    memory_ids: list[str]


class FusedMemoryHit(TypedDict):
    """A memory of the user search with memories: ``message_ids`` the turns it was read from."""

    kind: Literal["memory"]
    memory_id: str
    memory_kind: str
    subject: str
    text: str
    valid_from: str | None
    valid_to: str | None
    message_ids: list[str]
    conversation_ids: list[str]
    memory_score: float | None
    score: float


class FusedSearchResult(TypedDict):
    """Turns and memories in one ranking, best first (each result's ``kind`` says which), with what
    the turns' search covered and how many memories were considered."""

    query: str
    mode: str
    scope: str
    conversations: int
    candidates: int
    embedding_model: str
    query_embedding_dim: int | None
    results: list[FusedTurnHit | FusedMemoryHit]
    memories_considered: int


class Summary(TypedDict):
    text: str
    model: str
    message_count: int
    pair_count: int
    first_seq: int
    last_seq: int
    token_count: int
    created_at: str


class Fact(TypedDict):
    key: str
    value: str
    token_count: int
    created_at: str
    updated_at: str


class FactList(TypedDict):
    """The user's facts, most recently updated first, and their tokens in all."""

    user_id: str
    facts: list[Fact]
    total_tokens: int


class FactsWritten(TypedDict):
    """The facts sent, in order, as now stored; ``created`` the keys the answering attempt created."""

    user_id: str
    facts: list[Fact]
    created: list[str]


class FactChange(TypedDict):
    key: str
    action: Literal["set", "delete"]
    value: str
    previous_value: str | None
    changed_at: str


class FactHistoryPage(TypedDict):
    """One page of changes, newest first."""

    count: int
    next: str | None
    previous: str | None
    results: list[FactChange]


class ExtractionStatus(TypedDict):
    """Whether the service extracts memories from the tenant's conversations, with which ``model``,
    and when it does not, why: ``reason`` ``"disabled"`` or ``"no_model"``, ``detail`` what to set."""

    enabled: bool
    model: str | None
    reason: Literal["disabled", "no_model"] | None
    detail: str | None


class Memory(TypedDict):
    """One statement the service extracted from a user's conversations, about a ``subject`` (the user,
    or someone they named). It holds from ``valid_from`` (None: since it was said) and is ``current``
    until an update or a delete took it back (``valid_to``). ``message_ids`` and ``conversation_ids``
    are what it was read from; ``model`` what last changed it (a chat model, ``"api"``, ``"mcp"``);
    ``score`` its rank in a search (None in a list)."""

    memory_id: str
    kind: MemoryKind
    subject: str
    text: str
    valid_from: str | None
    valid_to: str | None
    current: bool
    confidence: float
    message_ids: list[str]
    conversation_ids: list[str]
    model: str
    created_at: str
    updated_at: str
    score: float | None


class MemoryChange(TypedDict):
    """One change of a memory: the version it made (``text``...) and the text it replaced."""

    action: Literal["add", "update", "delete", "merge"]
    text: str
    previous_text: str | None
    valid_from: str | None
    valid_to: str | None
    confidence: float
    message_ids: list[str]
    model: str
    changed_at: str


class MemoryDetail(Memory):
    """A memory with its ``history``, newest change first."""

    history: list[MemoryChange]


class MemoryList(TypedDict):
    """A user's memories (``count`` of all that match; with a query, the hits answered) and whether the
    tenant extracts at all (``extraction``), so that an empty list says why."""

    user_id: str
    extraction: ExtractionStatus
    count: int
    results: list[Memory]


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


# A correction's ``valid_to`` when not given: left as it is (``None`` makes the memory current again).
UNCHANGED: Final = _Unchanged()


# --- one request ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """One request: what to send, whether the service's "not found" means an empty answer, and
    whether a ``conflict`` answering a resend may be the first attempt's own write.

    The body is encoded when the call is made, before anything is sent (``content``); a body or query
    parameter that cannot be sent raises :class:`BadRequest` there (see :func:`_encoded`)."""

    method: str
    path: str
    params: Mapping[str, Any] | None = None
    body: Any = None
    missing_ok: bool = False
    timeout: float | None = None  # the client's own when None
    conflict_may_be_ours: bool = False
    content: bytes | None = field(init=False, default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_params(self.params)
        if self.body is not None:
            object.__setattr__(self, "content", _encoded(self.body))

    @property
    def headers(self) -> dict[str, str] | None:
        return JSON_CONTENT if self.content is not None else None


_MISSING: Final = object()
_OURS_PERHAPS: Final = object()


# --- what a request may carry ---------------------------------------------------------------------
# A body is sent as UTF-8 JSON, which has no NaN or Infinity and cannot encode half of a UTF-16
# surrogate pair. What the encoder refuses is named as the service names a value it refuses
# (core.storable): the path of the value from the top of the body, the reason, what to send instead.

JSON_CONTENT: Final = {"Content-Type": "application/json"}
# The service's limits for a JSON value: Python's own for turning an integer into text, and the
# levels of objects and arrays.
MAX_INT_DIGITS: Final = 4300
MAX_JSON_DEPTH: Final = 100
_INT_BOUND: Final = 10**MAX_INT_DIGITS

_SURROGATE: Final = re.compile(r"[\ud800-\udfff]")
_PLAIN_KEY: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_KEY_SHOWN_CHARS: Final = 40
_PATH_SHOWN_SEGMENTS: Final = 12

_HAS_SURROGATE: Final = (
    "contains an unpaired UTF-16 surrogate",
    "send valid Unicode text (half of a surrogate pair alone is not a character; pair it or remove it)",
)
_NOT_FINITE: Final = ("is not a finite number", 'send a finite number, null, or the value as a string such as "Infinity"')
_TOO_MANY_DIGITS: Final = (f"is an integer of more than {MAX_INT_DIGITS} digits", "send it as a string")
_TOO_DEEP: Final = (
    f"nests more than {MAX_JSON_DEPTH} levels",
    f"flatten it to at most {MAX_JSON_DEPTH} levels of objects and arrays",
)
_CONTAINS_ITSELF: Final = ("contains itself", "send a value without a reference to itself")
_NOT_JSON_ADVICE: Final = "send an object, array, string, number, true, false or null (a date as an ISO 8601 string)"


def _encoded(body: Any) -> bytes:
    """``body`` as the UTF-8 JSON the service reads. A value JSON cannot carry raises
    :class:`BadRequest` (``validation_error``, ``details`` its ``field`` and ``reason``): NaN or
    Infinity, a string or key holding a lone surrogate, an integer too long to write, a value that is
    not JSON (a ``datetime``, a ``set``...), one that contains itself."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    except (ValueError, TypeError, RecursionError) as error:  # UnicodeEncodeError is a ValueError
        found = _first_unsendable(body)
        if found is None:  # the encoder's own limit, narrower than the service's
            raise _refusal("body", "cannot be encoded as JSON", str(error)) from None
        raise _refusal(*found) from None


def _check_params(params: Mapping[str, Any] | None) -> None:
    """Query parameters are sent as UTF-8 too: a lone surrogate in one raises :class:`BadRequest`."""
    for name, value in (params or {}).items():
        for text in value if isinstance(value, list | tuple) else [value]:
            if isinstance(text, str) and _SURROGATE.search(text):
                raise _refusal(name, *_HAS_SURROGATE)


def _refusal(where: str, reason: str, advice: str) -> BadRequest:
    """The refusal of a value, worded as the service words its own 400 for it; nothing was sent."""
    return BadRequest(400, "validation_error", f"{where} {reason}; {advice}.", {"field": where, "reason": reason})


def _first_unsendable(body: Any) -> tuple[str, str, str] | None:
    """The path, reason and advice of the first value of ``body`` (in document order) that JSON
    cannot carry, or one nested deeper than ``MAX_JSON_DEPTH``; ``None`` when there is none.

    A loop, not recursion: it must answer for a value nested beyond the stack."""
    # (value, its path as (parent path, key) or (), its level, the ids of the arrays and objects holding it)
    pending: list[tuple[Any, tuple[Any, ...], int, frozenset[int]]] = [(body, (), 0, frozenset())]
    while pending:
        item, path, depth, holders = pending.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return (_path_text(path), *_HAS_SURROGATE)
        elif isinstance(item, dict | list | tuple):
            if id(item) in holders:
                return (_path_text(path), *_CONTAINS_ITSELF)
            if depth > MAX_JSON_DEPTH:
                return (_path_text(path), *_TOO_DEEP)
            if isinstance(item, dict):
                problem = _key_problem(item)
                if problem is not None:
                    return (_path_text(path), *problem)
                children = [(key if isinstance(key, str) else json.dumps(key), child) for key, child in item.items()]
            else:
                children = list(enumerate(item))
            inside = holders | {id(item)}
            pending.extend((child, (path, key), depth + 1, inside) for key, child in reversed(children))
        elif item is None or isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not -_INT_BOUND < item < _INT_BOUND:
                return (_path_text(path), *_TOO_MANY_DIGITS)
        elif isinstance(item, float):
            if not math.isfinite(item):
                return (_path_text(path), *_NOT_FINITE)
        else:
            return (_path_text(path), f"is not a JSON value ({type(item).__name__})", _NOT_JSON_ADVICE)
    return None


def _key_problem(item: dict[Any, Any]) -> tuple[str, str] | None:
    """What makes the keys of an object unsendable: a key JSON cannot write, or one with a lone surrogate."""
    for key in item:
        if isinstance(key, str):
            if _SURROGATE.search(key):
                return f"has a key that {_HAS_SURROGATE[0]}", _HAS_SURROGATE[1]
        elif key is not None and not isinstance(key, int | float):  # JSON writes these as their text
            return f"has a non-string key ({type(key).__name__})", "use strings as the keys of an object"
    return None


def _path_text(path: tuple[Any, ...]) -> str:
    """The keys and indexes of ``path`` from the top of the body: ``value.items[3]``, ``state["a b"]``."""
    segments: list[str] = []
    while path:
        path, key = path
        if isinstance(key, int):  # an index; an object's keys are all text here
            segments.append(f"[{key}]")
        elif _PLAIN_KEY.match(key):
            segments.append(f".{key}")
        else:
            shown = key if len(key) <= _KEY_SHOWN_CHARS else key[:_KEY_SHOWN_CHARS] + "…"
            segments.append(f"[{json.dumps(shown, ensure_ascii=False)}]")
    segments.reverse()
    if len(segments) > _PATH_SHOWN_SEGMENTS:  # a value nested 101 levels deep: its path, abridged
        segments = [*segments[:6], f"…({len(segments) - 11} more)…", *segments[-5:]]
    return "".join(segments).removeprefix(".") or "body"


def check_conversation_id(conversation_id: str) -> str:
    """The id, if the service could store it; else ``ValueError`` naming the rule."""
    if not isinstance(conversation_id, str) or not conversation_id:
        raise ValueError(f"A conversation id is required: {CONVERSATION_ID_RULE}.")
    if len(conversation_id) > MAX_ID_LENGTH or not CONVERSATION_ID.fullmatch(conversation_id):
        raise ValueError(f"Invalid conversation id {conversation_id[:60]!r}: a conversation id is {CONVERSATION_ID_RULE}.")
    return conversation_id


def _segment(value: str, *, what: str) -> str:
    """``value`` percent-encoded as one URL path segment; ``ValueError`` when no segment can carry it."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"A {what} is required (not blank).")
    if "/" in value or value in (".", ".."):
        raise ValueError(f'Invalid {what} {value[:60]!r}: it must not contain "/" nor be "." or "..".')
    if _SURROGATE.search(value):
        raise ValueError(f"Invalid {what} {value[:60]!r}: it {_HAS_SURROGATE[0]}, which no URL can carry.")
    return quote(value, safe="")


def _conversation_path(conversation_id: str, *rest: str) -> str:
    parts = [check_conversation_id(conversation_id), *(quote(str(part), safe="") for part in rest)]
    return f"{API_PREFIX}/conversations/{'/'.join(parts)}/"


def _search_request(path: str, parameters: dict[str, Any], filters: Mapping[str, Any] | None) -> _Call:
    """A search: a GET, or with filters the same search as a POST carrying them in its body (a read,
    safe to resend)."""
    if not filters:
        return _Call("GET", path, params=parameters)
    return _Call("POST", path, body={**parameters, **_jsonable_filters(filters)})


def _jsonable_filters(filters: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not filters:
        return None
    return {name: value.isoformat() if isinstance(value, datetime) else value for name, value in filters.items()}


def _user_path(user_id: str, *rest: str) -> str:
    parts = [_segment(user_id, what="user id"), *rest]
    return f"{API_PREFIX}/users/{'/'.join(parts)}/"


def _fact_path(user_id: str, key: str, *rest: str) -> str:
    if key.strip() == "history":
        raise ValueError('The fact key "history" is reserved by the service (it names a path of the API).')
    return _user_path(user_id, "facts", _segment(key, what="fact key"), *rest)


def _memory_path(user_id: str, memory_id: str | uuid.UUID) -> str:
    return _user_path(user_id, "memories", _segment(str(memory_id), what="memory id"))


def _day_or_time(value: date | str | None) -> str | None:
    """A date as ``YYYY-MM-DD``, a datetime in ISO 8601 (the service refuses one without its offset)."""
    return value.isoformat() if isinstance(value, date) else value


def _params(**values: Any) -> dict[str, Any]:
    """Query parameters: ``None`` left out, booleans as the service reads them, datetimes in ISO 8601."""
    params: dict[str, Any] = {}
    for name, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, datetime):
            value = value.isoformat()
        params[name] = value
    return params


@dataclass(frozen=True)
class _Batch:
    """A batch of ``items``, the body's list ``name``, sent in parts of consecutive items, in order;
    ``call_of`` makes the request of one part."""

    name: str
    items: Sequence[Any]
    call_of: Callable[[list[Any]], _Call]

    def parts(self, size: int, *, start: int = 0) -> list[tuple[int, _Call]]:
        """The requests of the items from ``start`` on, one per part of at most ``size``, each with
        the index of its first item. Every part is made, hence encoded, before any is sent: a value
        no request can carry is refused naming its index in ``items``, and nothing is written."""
        calls: list[tuple[int, _Call]] = []
        for first in range(start, len(self.items), size):
            try:
                calls.append((first, self.call_of(list(self.items[first : first + size]))))
            except MemoryServiceError as error:
                raise _in_batch(error, self.name, first, applied=0) from None
        return calls


def _service_limit(error: MemoryServiceError, field: str, asked: int) -> int | None:
    """The most items the service takes in one request (its ``MEMORY_MAX_BATCH``, ``field`` the
    batch's list) or answers in one page (its ``MEMORY_MAX_PAGE_SIZE``, ``field`` the page's
    ``limit``), when ``error`` is its refusal of ``asked`` items as more than that
    (``limit_exceeded`` naming ``field`` and the limit); ``None`` for any other error. Such a refusal
    stores and answers nothing."""
    details = error.details if isinstance(error.details, Mapping) else {}
    limit = details.get("limit")
    if error.code != "limit_exceeded" or details.get("field") != field or type(limit) is not int:
        return None
    return limit if 0 < limit < asked else None


def _in_batch(error: MemoryServiceError, name: str, start: int, *, applied: int) -> MemoryServiceError:
    """``error``, met by the part of a batch that begins at item ``start``, as the caller's batch
    reads it: the item's index renumbered to its index in the whole batch wherever the error names
    it (``name[i]`` or ``name.i`` in the message and ``details["field"]``, the per-item errors
    ``details[name]``), and ``details["applied"]`` the number of items before the part, which
    earlier requests stored (the message says so when there are some)."""
    index = re.compile(rf"(?<![\w.\]]){re.escape(name)}(?:\[(\d+)\]|\.(\d+)\b)")

    def renumbered(text: str) -> str:
        def shifted(found: re.Match[str]) -> str:
            if found.group(1) is not None:
                return f"{name}[{int(found.group(1)) + start}]"
            return f"{name}.{int(found.group(2)) + start}"

        return index.sub(shifted, text)

    message = renumbered(error.message)
    if applied:
        message += f" (the batch was sent in parts: {name}[0] to {name}[{applied - 1}] were applied)"
    details = error.details
    if isinstance(details, Mapping):
        details = {**details, "applied": applied}
        if isinstance(details.get("field"), str):
            details["field"] = renumbered(details["field"])
        per_item = details.get(name)
        if isinstance(per_item, Mapping) and all(isinstance(key, str) and key.isdigit() for key in per_item):
            details[name] = {str(int(key) + start): value for key, value in per_item.items()}
    return type(error)(error.status, error.code, message, details, error.retry_after)


def _identified(messages: Sequence[Mapping[str, Any]], *, stamped: bool = True) -> list[dict[str, Any]]:
    """The messages, each with its id (a new UUIDv7, or UUIDv4 unless ``stamped``, unless given),
    fixed before the first attempt."""
    return [{**message, "id": str(message.get("id") or (uuid7() if stamped else uuid.uuid4()))} for message in messages]


def uuid7() -> str:
    """A new UUIDv7 (RFC 9562): 48 bits of Unix milliseconds, the version, 74 random bits, the variant.

    The ids this client makes for messages: after the service lost its record of writes in flight, an
    id made after that is told new at once, where a UUIDv4 waits (``idempotency_unknown``) until the
    service proves no older write is on its way."""
    value = (time.time_ns() // 1_000_000 & (1 << 48) - 1) << 80 | random.getrandbits(80)  # noqa: S311 (not a secret)
    value = value & ~(0xF << 76) | 0x7 << 76
    return str(uuid.UUID(int=value & ~(0x3 << 62) | 0x2 << 62))


def _one_message(
    role: str, content: str | None, metadata: Mapping[str, Any] | None, message_id: str | None, created_at: datetime | str | None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": content, "metadata": dict(metadata or {})}
    if message_id is not None:
        message["id"] = str(message_id)
    if created_at is not None:
        message["created_at"] = created_at.isoformat() if isinstance(created_at, datetime) else created_at
    return message


def _error_code(response: httpx.Response) -> str | None:
    try:
        return response.json()["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return None


def _retry_after_seconds(response: httpx.Response) -> float | None:
    """The wait ``Retry-After`` asks for, in seconds (either of its forms); ``None`` without one."""
    value = response.headers.get("Retry-After")
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:  # the HTTP-date form
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return max(seconds, 0.0)


def _retry_after(response: httpx.Response) -> float | None:
    seconds = _retry_after_seconds(response)
    return None if seconds is None else min(seconds, RETRY_AFTER_CAP)


class MemoryClient:
    """A client of one memory service deployment, authenticated as one tenant by its API key."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = 10.0,
        retries: int = 3,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        """``transport`` and ``async_transport`` replace httpx's own (a proxy, ``httpx.MockTransport``)."""
        if not base_url:
            raise ValueError("base_url is required, e.g. http://127.0.0.1:8000")
        if not api_key:
            raise ValueError("api_key is required (python manage.py create_api_key --tenant <slug>).")
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.retries = max(0, retries)
        self._headers = {"Authorization": f"Api-Key {api_key}", "Accept": "application/json"}
        self._client = httpx.Client(base_url=self.base_url, headers=self._headers, timeout=timeout, transport=transport)
        self._async_transport = async_transport
        self._async_client: httpx.AsyncClient | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        self._stamped_ids = True  # message ids made as UUIDv7 (see append), until the service finds this clock ahead
        # Items per request of a batch: MAX_BATCH, or the service's own limit once it refused more.
        self._batch_size = MAX_BATCH
        # Items per page of a list the integrations page through (checkpoints, store searches): as
        # many as they want, or at most the service's own limit once it refused more.
        self._page_limit: int | None = None

    def __repr__(self) -> str:
        return f"MemoryClient({self.base_url!r})"

    # --- lifecycle ------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connections (an async client left open is closed by ``aclose``)."""
        self._client.close()

    async def aclose(self) -> None:
        """Close every connection, sync and async."""
        if self._async_client is not None and self._async_loop is asyncio.get_running_loop():
            await self._async_client.aclose()
        self._async_client = self._async_loop = None
        self._client.close()

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.close()

    async def __aenter__(self) -> MemoryClient:
        return self

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        await self.aclose()

    # --- messages -------------------------------------------------------------------------------

    def append(
        self, conversation_id: str, messages: Sequence[Mapping[str, Any]], *, user_id: str = "", agent_id: str = ""
    ) -> list[dict[str, Any]]:
        """Append messages (``role``, ``content``, optional ``metadata``, ``id``, ``created_at``) in
        order; the conversation is created on first write. Returns the stored messages, with ``seq``.

        Sent in parts of at most ``MAX_BATCH`` messages (fewer if the service takes fewer per
        request, see the module's contract), each stored all or nothing; when a part fails, the
        parts before it stay stored (``details["applied"]`` counts their messages) and the error
        names a message by its index in ``messages``. Every message gets its id before the first
        part is sent, so calling again with the same messages stores each once.

        Ids this client makes are UUIDv7, stamped with this machine's clock. A service that finds the
        clock too far ahead of its own refuses them, with nothing stored (``clock_skew``): the
        client then makes UUIDv4 ids instead, for this call and every later one, and sends again."""
        batch = self._append_batch(conversation_id, messages, user_id, agent_id, stamped=self._stamped_ids)
        try:
            answers = self._send_batch(batch)
        except BadRequest as error:
            if not self._unstamp(error, messages):
                raise
            answers = self._send_batch(self._append_batch(conversation_id, messages, user_id, agent_id, stamped=False))
        return [message for answer in answers for message in answer["messages"]]

    async def aappend(
        self, conversation_id: str, messages: Sequence[Mapping[str, Any]], *, user_id: str = "", agent_id: str = ""
    ) -> list[dict[str, Any]]:
        batch = self._append_batch(conversation_id, messages, user_id, agent_id, stamped=self._stamped_ids)
        try:
            answers = await self._asend_batch(batch)
        except BadRequest as error:
            if not self._unstamp(error, messages):
                raise
            answers = await self._asend_batch(self._append_batch(conversation_id, messages, user_id, agent_id, stamped=False))
        return [message for answer in answers for message in answer["messages"]]

    def _unstamp(self, error: BadRequest, messages: Sequence[Mapping[str, Any]]) -> bool:
        """Whether ``error`` refused, before anything was stored, a UUIDv7 this client made (its clock
        is ahead of the service's): from now on it makes UUIDv4 ids, and the call is sent again."""
        details = error.details if isinstance(error.details, Mapping) else {}
        given = {str(message.get("id")) for message in messages if message.get("id")}
        if error.code != "clock_skew" or details.get("applied") != 0 or details.get("id") in given:
            return False
        self._stamped_ids = False
        return True

    def window(self, conversation_id: str, *, limit: int | None = None, format: str = "langchain") -> list[dict[str, Any]]:
        """The newest ``limit`` messages (the service's default when ``None``), oldest first, in
        ``format`` ``"langchain"`` (``message_to_dict`` items) or ``"openai"``; ``[]`` when unknown."""
        return self._messages_of(self._send(self._window_call(conversation_id, limit, format)))

    async def awindow(self, conversation_id: str, *, limit: int | None = None, format: str = "langchain") -> list[dict[str, Any]]:
        return self._messages_of(await self._asend(self._window_call(conversation_id, limit, format)))

    def messages(
        self,
        conversation_id: str,
        *,
        limit: int | None = None,
        skip: int | None = None,
        role: Role | None = None,
        start_date: datetime | str | None = None,
        end_date: datetime | str | None = None,
        include_archived: bool | None = None,
    ) -> list[StoredMessage]:
        """The stored messages as the service keeps them (``id``, ``seq``, ``role``, ``content``,
        ``metadata``...), oldest first: the newest ``limit`` (the tenant's ``MEMORY_HISTORY_LIMIT``
        when ``None``) after skipping the newest ``skip``, of one ``role``, created between
        ``start_date`` and ``end_date``, archived ones too when ``include_archived``; ``[]`` when the
        conversation is unknown."""
        call = self._messages_call(conversation_id, limit, skip, role, start_date, end_date, include_archived)
        return self._messages_of(self._send(call))

    async def amessages(
        self,
        conversation_id: str,
        *,
        limit: int | None = None,
        skip: int | None = None,
        role: Role | None = None,
        start_date: datetime | str | None = None,
        end_date: datetime | str | None = None,
        include_archived: bool | None = None,
    ) -> list[StoredMessage]:
        call = self._messages_call(conversation_id, limit, skip, role, start_date, end_date, include_archived)
        return self._messages_of(await self._asend(call))

    def append_message(
        self,
        conversation_id: str,
        role: Role,
        content: str | None,
        *,
        metadata: Mapping[str, Any] | None = None,
        message_id: str | None = None,
        created_at: datetime | str | None = None,
        user_id: str = "",
        agent_id: str = "",
    ) -> StoredMessage:
        """Append one message (see :meth:`append`); returns it as stored, with its ``id`` and ``seq``."""
        message = _one_message(role, content, metadata, message_id, created_at)
        return self.append(conversation_id, [message], user_id=user_id, agent_id=agent_id)[0]

    async def aappend_message(
        self,
        conversation_id: str,
        role: Role,
        content: str | None,
        *,
        metadata: Mapping[str, Any] | None = None,
        message_id: str | None = None,
        created_at: datetime | str | None = None,
        user_id: str = "",
        agent_id: str = "",
    ) -> StoredMessage:
        message = _one_message(role, content, metadata, message_id, created_at)
        return (await self.aappend(conversation_id, [message], user_id=user_id, agent_id=agent_id))[0]

    def get_message(self, conversation_id: str, message_id: str) -> StoredMessage | None:
        """One stored message by its id; ``None`` when the conversation or the message does not exist."""
        return self._found(self._send(self._get_message_call(conversation_id, message_id)))

    async def aget_message(self, conversation_id: str, message_id: str) -> StoredMessage | None:
        return self._found(await self._asend(self._get_message_call(conversation_id, message_id)))

    def clear(self, conversation_id: str) -> None:
        """Remove the conversation's messages (its memory and checkpoints stay); no-op when unknown."""
        self._send(_Call("DELETE", _conversation_path(conversation_id, "messages"), missing_ok=True))

    async def aclear(self, conversation_id: str) -> None:
        await self._asend(_Call("DELETE", _conversation_path(conversation_id, "messages"), missing_ok=True))

    def context(
        self,
        conversation_id: str,
        *,
        query: str | None = None,
        system_prompt: str | None = None,
        max_tokens: int | None = None,
        short_term_turns: int | None = None,
        long_term_turns: int | None = None,
        compression_threshold: float | None = None,
        format: MessageFormat | None = None,
        checkpoint_namespace: str | None = None,
        use_memory: bool | None = None,
        top_k: int | None = None,
        memory_filters: SearchFilters | None = None,
    ) -> dict[str, Any]:
        """The messages to send the model before its next call, within ``max_tokens``: the system
        prompt (with the summary of older turns), recent turns in full, then ``query``; with the
        figures behind them (``estimated_tokens``, ``tokens_remaining``, ``compressed``, ``entities``...),
        the latest checkpoint of ``checkpoint_namespace`` when given, and with ``use_memory`` the
        summaries, the user's facts and the relevant older messages (``memory``, ``rendered_prompt``).
        Each ``None`` is the tenant's setting; ``format`` is ``"openai"`` unless given. A
        conversation that does not exist is :class:`NotFound` (the service answers ``not_found``);
        one that exists without messages answers the system prompt and the query alone."""
        call = self._context_call(
            conversation_id,
            query=query,
            system_prompt=system_prompt,
            max_tokens=max_tokens,
            short_term_turns=short_term_turns,
            long_term_turns=long_term_turns,
            compression_threshold=compression_threshold,
            format=format,
            checkpoint_namespace=checkpoint_namespace,
            use_memory=use_memory,
            top_k=top_k,
            memory_filters=_jsonable_filters(memory_filters),
        )
        return self._send(call)

    async def acontext(
        self,
        conversation_id: str,
        *,
        query: str | None = None,
        system_prompt: str | None = None,
        max_tokens: int | None = None,
        short_term_turns: int | None = None,
        long_term_turns: int | None = None,
        compression_threshold: float | None = None,
        format: MessageFormat | None = None,
        checkpoint_namespace: str | None = None,
        use_memory: bool | None = None,
        top_k: int | None = None,
        memory_filters: SearchFilters | None = None,
    ) -> dict[str, Any]:
        call = self._context_call(
            conversation_id,
            query=query,
            system_prompt=system_prompt,
            max_tokens=max_tokens,
            short_term_turns=short_term_turns,
            long_term_turns=long_term_turns,
            compression_threshold=compression_threshold,
            format=format,
            checkpoint_namespace=checkpoint_namespace,
            use_memory=use_memory,
            top_k=top_k,
            memory_filters=_jsonable_filters(memory_filters),
        )
        return await self._asend(call)

    def chat(self, conversation_id: str, content: str, **options: Any) -> dict[str, Any]:
        """One turn of the service's agent loop: it stores ``content``, builds the context, asks the
        tenant's chat model, stores and returns both messages (``user_message``, ``assistant_message``)
        with the context used. ``options`` are the endpoint's: ``system_prompt``, ``model``,
        ``temperature``, ``max_tokens``, ``use_memory``, ``metadata``, ``user_id``, ``agent_id``.
        The message gets its ``message_id`` here, before the first attempt: a retried call stores it
        once and asks the model once. A failed model is a :class:`MemoryServiceError` with
        ``code="model_error"`` (502) or ``"model_timeout"`` (504); the message stays stored."""
        return self._send(self._chat_call(conversation_id, content, options))

    async def achat(self, conversation_id: str, content: str, **options: Any) -> dict[str, Any]:
        return await self._asend(self._chat_call(conversation_id, content, options))

    def chat_stream(self, conversation_id: str, content: str, **options: Any) -> Iterator[tuple[str, dict[str, Any]]]:
        """The same turn as it streams: ``(event, data)`` pairs, ``("start", ...)``, a ``("token",
        {"text": ...})`` per piece of the answer, then ``("done", <the chat() answer>)`` or ``("error",
        {"error": ...})``. Not retried once the stream has begun; leaving the loop early closes the
        connection, which stops the model, and no answer is stored."""
        call = self._chat_call(conversation_id, content, {**options, "stream": True})
        with self._client.stream("POST", call.path, content=call.content, headers=call.headers, timeout=call.timeout) as response:
            if not response.is_success:
                response.read()
                raise MemoryServiceError.from_response(response)
            event = "message"
            for line in response.iter_lines():
                if line.startswith("event: "):
                    event = line[len("event: ") :]
                elif line.startswith("data: "):
                    yield event, json.loads(line[len("data: ") :])

    def status(self) -> dict[str, Any]:
        """Whether the service's database, cache and broker answer, with queue and cache figures."""
        return self._send(_Call("GET", f"{API_PREFIX}/status/"))

    async def astatus(self) -> dict[str, Any]:
        return await self._asend(_Call("GET", f"{API_PREFIX}/status/"))

    def api_root(self) -> dict[str, Any]:
        """What the API offers: its ``version``, how to authenticate, and the addresses of the
        conversations, status, docs and schema (the one endpoint that needs no key)."""
        return self._send(_Call("GET", f"{API_PREFIX}/"))

    async def aapi_root(self) -> dict[str, Any]:
        return await self._asend(_Call("GET", f"{API_PREFIX}/"))

    # --- conversations --------------------------------------------------------------------------

    def list_conversations(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> ConversationPage:
        """One page of the tenant's conversations, of one user or agent, archived or not (both when
        ``None``): ``limit`` of them (50 by default) after ``offset``, with the ``count`` of all."""
        return self._send(self._list_conversations_call(user_id, agent_id, archived, limit, offset))

    async def alist_conversations(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        archived: bool | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> ConversationPage:
        return await self._asend(self._list_conversations_call(user_id, agent_id, archived, limit, offset))

    def create_conversation(
        self, conversation_id: str, *, user_id: str = "", agent_id: str = "", metadata: Mapping[str, Any] | None = None
    ) -> Conversation:
        """Create an empty conversation (appending creates one too). :class:`Conflict` when it exists,
        unless the conflict answers a resend and the conversation holds what was sent."""
        call = self._create_conversation_call(conversation_id, user_id, agent_id, metadata)
        answer = self._send(call)
        if answer is _OURS_PERHAPS:
            return self._created_by_resend(call, self.get_conversation(conversation_id))
        return answer

    async def acreate_conversation(
        self, conversation_id: str, *, user_id: str = "", agent_id: str = "", metadata: Mapping[str, Any] | None = None
    ) -> Conversation:
        call = self._create_conversation_call(conversation_id, user_id, agent_id, metadata)
        answer = await self._asend(call)
        if answer is _OURS_PERHAPS:
            return self._created_by_resend(call, await self.aget_conversation(conversation_id))
        return answer

    def get_conversation(self, conversation_id: str) -> Conversation | None:
        """The conversation's owners, metadata and figures (``message_count``, ``token_count``,
        ``last_seq``); ``None`` when it does not exist."""
        return self._found(self._send(self._get_conversation_call(conversation_id)))

    async def aget_conversation(self, conversation_id: str) -> Conversation | None:
        return self._found(await self._asend(self._get_conversation_call(conversation_id)))

    def update_conversation(
        self,
        conversation_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        archived: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Conversation:
        """Change the given fields (``metadata`` is replaced whole); returns the conversation.
        :class:`NotFound` when it does not exist."""
        return self._send(self._update_conversation_call(conversation_id, user_id, agent_id, archived, metadata))

    async def aupdate_conversation(
        self,
        conversation_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        archived: bool | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> Conversation:
        return await self._asend(self._update_conversation_call(conversation_id, user_id, agent_id, archived, metadata))

    def erase_conversation(self, conversation_id: str) -> ConversationErased:
        """Erase the conversation everywhere: messages, memory document, vectors, summaries,
        checkpoints, cache keys and writes still queued. Answers what was erased; nothing (zeros) when
        it does not exist, as a resend after a lost answer also reads."""
        return self._erased(conversation_id, self._send(self._erase_conversation_call(conversation_id)))

    async def aerase_conversation(self, conversation_id: str) -> ConversationErased:
        return self._erased(conversation_id, await self._asend(self._erase_conversation_call(conversation_id)))

    # --- the memory document --------------------------------------------------------------------

    def get_memory(self, conversation_id: str) -> MemoryDocument | None:
        """The conversation's memory document; ``None`` when the conversation does not exist."""
        return self._found(self._send(self._get_memory_call(conversation_id)))

    async def aget_memory(self, conversation_id: str) -> MemoryDocument | None:
        return self._found(await self._asend(self._get_memory_call(conversation_id)))

    def put_memory(
        self, conversation_id: str, *, messages: Sequence[Any] = (), metadata: Mapping[str, Any] | None = None
    ) -> MemoryDocument:
        """Replace the memory document (the conversation is created if needed); a later put wins.
        Returns the document as saved, with the service's metadata added."""
        return self._send(self._put_memory_call(conversation_id, messages, metadata))

    async def aput_memory(
        self, conversation_id: str, *, messages: Sequence[Any] = (), metadata: Mapping[str, Any] | None = None
    ) -> MemoryDocument:
        return await self._asend(self._put_memory_call(conversation_id, messages, metadata))

    # --- search ---------------------------------------------------------------------------------

    def search(
        self,
        conversation_id: str,
        query: str,
        *,
        mode: SearchMode | None = None,
        scope: SearchScope | None = None,
        top_k: int | None = None,
        min_similarity: float | None = None,
        vector_fetch_limit: int | None = None,
        cross_session_trigger: int | None = None,
        candidate_limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> SearchResult:
        """The messages of the conversation most relevant to ``query``, best first (hybrid semantic
        and keyword search unless ``mode`` says otherwise); with ``scope`` ``"auto"`` also the same
        user's other conversations while this one is short. Each ``None`` is the tenant's setting.
        ``filters`` narrow the messages searched before ranking (dates, roles, speaker names, agent
        ids, conversation ids, metadata values); a filtered search is sent as a POST."""
        call = self._search_call(
            conversation_id,
            query,
            mode,
            scope,
            top_k,
            min_similarity,
            vector_fetch_limit,
            cross_session_trigger,
            candidate_limit,
            filters,
        )
        return self._send(call)

    async def asearch(
        self,
        conversation_id: str,
        query: str,
        *,
        mode: SearchMode | None = None,
        scope: SearchScope | None = None,
        top_k: int | None = None,
        min_similarity: float | None = None,
        vector_fetch_limit: int | None = None,
        cross_session_trigger: int | None = None,
        candidate_limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> SearchResult:
        call = self._search_call(
            conversation_id,
            query,
            mode,
            scope,
            top_k,
            min_similarity,
            vector_fetch_limit,
            cross_session_trigger,
            candidate_limit,
            filters,
        )
        return await self._asend(call)

    def search_user(
        self,
        user_id: str,
        query: str,
        *,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        min_similarity: float | None = None,
        vector_fetch_limit: int | None = None,
        candidate_limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> SearchResult:
        """The messages of every conversation of the user (the ``user_id`` given when they were
        appended) most relevant to ``query``, best first."""
        return self._send(
            self._search_user_call(user_id, query, mode, top_k, min_similarity, vector_fetch_limit, candidate_limit, filters)
        )

    async def asearch_user(
        self,
        user_id: str,
        query: str,
        *,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        min_similarity: float | None = None,
        vector_fetch_limit: int | None = None,
        candidate_limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> SearchResult:
        return await self._asend(
            self._search_user_call(user_id, query, mode, top_k, min_similarity, vector_fetch_limit, candidate_limit, filters)
        )

    def search_user_with_memories(
        self,
        user_id: str,
        query: str,
        *,
        include_past_memories: bool | None = None,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        min_similarity: float | None = None,
        vector_fetch_limit: int | None = None,
        candidate_limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> FusedSearchResult:
        """The user search with the user's extracted memories ranked beside the turns, in one list
        best first (``include_memories=true``): each result's ``kind`` is ``"turn"`` (a message hit,
        with the ids of the memories read from it) or ``"memory"`` (with the ids of the messages it
        was read from). Current memories only unless ``include_past_memories``. The filters narrow
        the turns; of them, ``conversation_id`` narrows the memories too."""
        call = self._search_user_call(
            user_id, query, mode, top_k, min_similarity, vector_fetch_limit, candidate_limit, filters, True, include_past_memories
        )
        return self._send(call)

    async def asearch_user_with_memories(
        self,
        user_id: str,
        query: str,
        *,
        include_past_memories: bool | None = None,
        mode: SearchMode | None = None,
        top_k: int | None = None,
        min_similarity: float | None = None,
        vector_fetch_limit: int | None = None,
        candidate_limit: int | None = None,
        filters: SearchFilters | None = None,
    ) -> FusedSearchResult:
        call = self._search_user_call(
            user_id, query, mode, top_k, min_similarity, vector_fetch_limit, candidate_limit, filters, True, include_past_memories
        )
        return await self._asend(call)

    # --- summaries ------------------------------------------------------------------------------

    def summaries(self, conversation_id: str, *, limit: int | None = None) -> list[Summary]:
        """The conversation's summaries, newest first (20 unless ``limit``); ``[]`` when unknown."""
        return self._summaries_of(self._send(self._summaries_call(conversation_id, limit)))

    async def asummaries(self, conversation_id: str, *, limit: int | None = None) -> list[Summary]:
        return self._summaries_of(await self._asend(self._summaries_call(conversation_id, limit)))

    def summarize(self, conversation_id: str) -> Summary:
        """Summarise the conversation's latest persisted messages now and return the summary (the
        one already filed for its current pair count, if any). :class:`Conflict` when no message is
        persisted yet, :class:`NotFound` when the conversation does not exist."""
        return self._send(self._summarize_call(conversation_id))

    async def asummarize(self, conversation_id: str) -> Summary:
        return await self._asend(self._summarize_call(conversation_id))

    # --- extracted memories ---------------------------------------------------------------------

    def list_memories(
        self,
        user_id: str,
        *,
        query: str | None = None,
        top_k: int | None = None,
        kind: MemoryKind | None = None,
        subject: str | None = None,
        valid_at: datetime | str | None = None,
        include_past: bool | None = None,
        conversation_ids: Sequence[str] | None = None,
        start_date: datetime | str | None = None,
        end_date: datetime | str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> MemoryList:
        """The memories the service extracted from the user's conversations: the current ones, newest
        change first (``limit``, 50 unless given, after ``offset``), or with ``query`` the ``top_k``
        best matches (the tenant's ``MEMORY_TOP_K`` unless given), each with its ``score``. ``kind``,
        ``subject`` (case aside), ``valid_at`` (those that held then), ``include_past`` (those taken back
        too), ``conversation_ids`` (read from these conversations) and ``start_date``/``end_date``
        (holding from within them) narrow either. ``extraction`` says whether the tenant extracts at
        all, and if not why."""
        call = self._list_memories_call(
            user_id, query, top_k, kind, subject, valid_at, include_past, conversation_ids, start_date, end_date, limit, offset
        )
        return self._send(call)

    async def alist_memories(
        self,
        user_id: str,
        *,
        query: str | None = None,
        top_k: int | None = None,
        kind: MemoryKind | None = None,
        subject: str | None = None,
        valid_at: datetime | str | None = None,
        include_past: bool | None = None,
        conversation_ids: Sequence[str] | None = None,
        start_date: datetime | str | None = None,
        end_date: datetime | str | None = None,
        limit: int | None = None,
        offset: int | None = None,
    ) -> MemoryList:
        call = self._list_memories_call(
            user_id, query, top_k, kind, subject, valid_at, include_past, conversation_ids, start_date, end_date, limit, offset
        )
        return await self._asend(call)

    def get_user_memory(self, user_id: str, memory_id: str | uuid.UUID) -> MemoryDetail | None:
        """One extracted memory of the user with its ``history`` (every change, newest first), current
        or taken back; ``None`` when the user has no memory of this id. (``get_memory`` is the
        conversation's memory document.)"""
        return self._found(self._send(_Call("GET", _memory_path(user_id, memory_id), missing_ok=True)))

    async def aget_user_memory(self, user_id: str, memory_id: str | uuid.UUID) -> MemoryDetail | None:
        return self._found(await self._asend(_Call("GET", _memory_path(user_id, memory_id), missing_ok=True)))

    def correct_memory(
        self,
        user_id: str,
        memory_id: str | uuid.UUID,
        *,
        kind: MemoryKind | None = None,
        subject: str | None = None,
        text: str | None = None,
        valid_from: date | str | None = None,
        valid_to: date | str | None | _Unchanged = UNCHANGED,
        confidence: float | None = None,
    ) -> MemoryDetail:
        """Correct a memory by hand: the fields given change (dates as ``YYYY-MM-DD``, or a datetime
        with its offset), the version replaced is kept in its history, recorded as made by ``"api"``.
        ``valid_to`` takes it back from then; ``valid_to=None`` makes it current again. Returns the
        memory with its history; :class:`NotFound` when there is none, :class:`BadRequest` naming a
        value the service refuses."""
        call = self._correct_memory_call(user_id, memory_id, kind, subject, text, valid_from, valid_to, confidence)
        return self._send(call)

    async def acorrect_memory(
        self,
        user_id: str,
        memory_id: str | uuid.UUID,
        *,
        kind: MemoryKind | None = None,
        subject: str | None = None,
        text: str | None = None,
        valid_from: date | str | None = None,
        valid_to: date | str | None | _Unchanged = UNCHANGED,
        confidence: float | None = None,
    ) -> MemoryDetail:
        call = self._correct_memory_call(user_id, memory_id, kind, subject, text, valid_from, valid_to, confidence)
        return await self._asend(call)

    def delete_memory(self, user_id: str, memory_id: str | uuid.UUID) -> None:
        """Take a memory back: it stops being current (``valid_to`` now) and keeps its history (erasing
        the user or the conversation it was read from erases it). No-op when there is none."""
        self._send(_Call("DELETE", _memory_path(user_id, memory_id), missing_ok=True))

    async def adelete_memory(self, user_id: str, memory_id: str | uuid.UUID) -> None:
        await self._asend(_Call("DELETE", _memory_path(user_id, memory_id), missing_ok=True))

    # --- facts and users ------------------------------------------------------------------------

    def list_facts(self, user_id: str, *, limit: int | None = None) -> FactList:
        """The user's facts, most recently updated first (all unless ``limit``), with their tokens;
        a user without facts has none."""
        return self._send(_Call("GET", _user_path(user_id, "facts"), params=_params(limit=limit)))

    async def alist_facts(self, user_id: str, *, limit: int | None = None) -> FactList:
        return await self._asend(_Call("GET", _user_path(user_id, "facts"), params=_params(limit=limit)))

    def get_fact(self, user_id: str, key: str) -> Fact | None:
        """One fact of the user; ``None`` when there is none with this key."""
        return self._found(self._send(_Call("GET", _fact_path(user_id, key), missing_ok=True)))

    async def aget_fact(self, user_id: str, key: str) -> Fact | None:
        return self._found(await self._asend(_Call("GET", _fact_path(user_id, key), missing_ok=True)))

    def set_fact(self, user_id: str, key: str, value: str) -> Fact:
        """Set one fact (a changed value goes to its history; the same value changes nothing)."""
        return self._send(_Call("PUT", _fact_path(user_id, key), body={"value": value}))

    async def aset_fact(self, user_id: str, key: str, value: str) -> Fact:
        return await self._asend(_Call("PUT", _fact_path(user_id, key), body={"value": value}))

    def set_facts(self, user_id: str, facts: Mapping[str, str]) -> FactsWritten:
        """Set several facts, all or none (at most the service's ``MEMORY_MAX_BATCH``, in one request)."""
        return self._send(_Call("POST", _user_path(user_id, "facts"), body={"facts": dict(facts)}))

    async def aset_facts(self, user_id: str, facts: Mapping[str, str]) -> FactsWritten:
        return await self._asend(_Call("POST", _user_path(user_id, "facts"), body={"facts": dict(facts)}))

    def delete_fact(self, user_id: str, key: str) -> None:
        """Delete a fact (its history keeps the value); no-op when there is none."""
        self._send(_Call("DELETE", _fact_path(user_id, key), missing_ok=True))

    async def adelete_fact(self, user_id: str, key: str) -> None:
        await self._asend(_Call("DELETE", _fact_path(user_id, key), missing_ok=True))

    def fact_history(self, user_id: str, key: str, *, limit: int | None = None, offset: int | None = None) -> FactHistoryPage:
        """One page of the changes of one key, newest first, also after the fact was deleted; an
        empty page when the key never existed."""
        return self._page_of(self._send(self._history_call(_fact_path(user_id, key, "history"), limit, offset)))

    async def afact_history(
        self, user_id: str, key: str, *, limit: int | None = None, offset: int | None = None
    ) -> FactHistoryPage:
        return self._page_of(await self._asend(self._history_call(_fact_path(user_id, key, "history"), limit, offset)))

    def user_fact_history(self, user_id: str, *, limit: int | None = None, offset: int | None = None) -> FactHistoryPage:
        """One page of every change of the user's facts (sets and deletes), newest first."""
        return self._page_of(self._send(self._history_call(_user_path(user_id, "facts", "history"), limit, offset)))

    async def auser_fact_history(self, user_id: str, *, limit: int | None = None, offset: int | None = None) -> FactHistoryPage:
        return self._page_of(await self._asend(self._history_call(_user_path(user_id, "facts", "history"), limit, offset)))

    def erase_user(self, user_id: str) -> UserErased:
        """Erase the user everywhere: their conversations (as :meth:`erase_conversation`), facts and
        fact history, extracted memories and their history, dead letters and cache keys. Answers what was erased; repeating it erases what
        arrived since."""
        return self._send(_Call("DELETE", _user_path(user_id)))

    async def aerase_user(self, user_id: str) -> UserErased:
        return await self._asend(_Call("DELETE", _user_path(user_id)))

    def search_status(self, user_id: str) -> SearchStatus:
        """Whether search covers the user's history yet: ``searchable`` once there is something to search
        and every message appended is persisted and embedded (``not_embedded`` and ``pending_persist``
        count what is waiting); ``reason`` says why not, ``no_messages`` when polling will not help."""
        return self._send(_Call("GET", _user_path(user_id, "search", "status")))

    async def asearch_status(self, user_id: str) -> SearchStatus:
        return await self._asend(_Call("GET", _user_path(user_id, "search", "status")))

    # --- checkpoints ----------------------------------------------------------------------------

    def put_checkpoint(
        self,
        conversation_id: str,
        *,
        state: Mapping[str, Any],
        checkpoint_id: str | None = None,
        namespace: str = "",
        parent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        """Store a checkpoint (the same id replaces it); the service keeps the newest
        ``MEMORY_MAX_CHECKPOINTS`` per conversation and namespace. Returns the stored checkpoint."""
        return self._send(self._put_checkpoint_call(conversation_id, state, checkpoint_id, namespace, parent_id, metadata))

    async def aput_checkpoint(
        self,
        conversation_id: str,
        *,
        state: Mapping[str, Any],
        checkpoint_id: str | None = None,
        namespace: str = "",
        parent_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> dict[str, Any]:
        call = self._put_checkpoint_call(conversation_id, state, checkpoint_id, namespace, parent_id, metadata)
        return await self._asend(call)

    def list_checkpoints(
        self, conversation_id: str, *, namespace: str | None = None, before: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Checkpoints newest first, of one namespace (every namespace when ``None``), older than
        ``before``; ``[]`` when the conversation is unknown."""
        return self._checkpoints_of(self._send(self._list_checkpoints_call(conversation_id, namespace, before, limit)))

    async def alist_checkpoints(
        self, conversation_id: str, *, namespace: str | None = None, before: str | None = None, limit: int | None = None
    ) -> list[dict[str, Any]]:
        return self._checkpoints_of(await self._asend(self._list_checkpoints_call(conversation_id, namespace, before, limit)))

    def latest_checkpoint(self, conversation_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        """The newest checkpoint of the namespace, with its writes; ``None`` when there is none."""
        return self._found(self._send(self._checkpoint_call(conversation_id, "latest", namespace)))

    async def alatest_checkpoint(self, conversation_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        return self._found(await self._asend(self._checkpoint_call(conversation_id, "latest", namespace)))

    def get_checkpoint(self, conversation_id: str, checkpoint_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        """One checkpoint with its writes; ``None`` when it does not exist (or was retired)."""
        return self._found(self._send(self._checkpoint_call(conversation_id, checkpoint_id, namespace)))

    async def aget_checkpoint(self, conversation_id: str, checkpoint_id: str, *, namespace: str = "") -> dict[str, Any] | None:
        return self._found(await self._asend(self._checkpoint_call(conversation_id, checkpoint_id, namespace)))

    def put_writes(
        self,
        conversation_id: str,
        checkpoint_id: str,
        *,
        task_id: str,
        writes: Sequence[Mapping[str, Any]],
        namespace: str = "",
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes (``idx``, ``channel``, ``value``) on a checkpoint: for an
        ``idx`` >= 0 the first write wins, a negative ``idx`` (errors, interrupts) is replaced. Sent
        in parts of at most ``MAX_BATCH`` writes (fewer if the service takes fewer per request),
        each stored all or nothing; when a part fails, the parts
        before it stay stored (``details["applied"]`` counts their writes) and the error names a
        write by its index in ``writes``."""
        self._send_batch(self._put_writes_batch(conversation_id, checkpoint_id, task_id, writes, namespace, task_path))

    async def aput_writes(
        self,
        conversation_id: str,
        checkpoint_id: str,
        *,
        task_id: str,
        writes: Sequence[Mapping[str, Any]],
        namespace: str = "",
        task_path: str = "",
    ) -> None:
        await self._asend_batch(self._put_writes_batch(conversation_id, checkpoint_id, task_id, writes, namespace, task_path))

    def delete_checkpoints(self, conversation_id: str, *, namespace: str | None = None) -> None:
        """Delete the checkpoints (and their writes) of a namespace, or of all when ``None``."""
        self._send(self._delete_checkpoints_call(conversation_id, namespace))

    async def adelete_checkpoints(self, conversation_id: str, *, namespace: str | None = None) -> None:
        await self._asend(self._delete_checkpoints_call(conversation_id, namespace))

    # --- the requests ---------------------------------------------------------------------------

    def _chat_call(self, conversation_id: str, content: str, options: Mapping[str, Any]) -> _Call:
        body = {"message_id": str(uuid.uuid4()), **options, "content": content}
        return _Call("POST", _conversation_path(conversation_id, "chat"), body=body, timeout=max(self.timeout, CHAT_TIMEOUT))

    @staticmethod
    def _context_call(conversation_id: str, **options: Any) -> _Call:
        """The context request: the options given (``None`` is the tenant's setting), JSON-typed."""
        body = {name: value for name, value in options.items() if value is not None}
        return _Call("POST", _conversation_path(conversation_id, "context"), body=body)

    @staticmethod
    def _list_conversations_call(
        user_id: str | None, agent_id: str | None, archived: bool | None, limit: int | None, offset: int | None
    ) -> _Call:
        params = _params(user_id=user_id, agent_id=agent_id, archived=archived, limit=limit, offset=offset)
        return _Call("GET", f"{API_PREFIX}/conversations/", params=params)

    @staticmethod
    def _create_conversation_call(conversation_id: str, user_id: str, agent_id: str, metadata: Mapping[str, Any] | None) -> _Call:
        body = {
            "conversation_id": check_conversation_id(conversation_id),
            "user_id": user_id,
            "agent_id": agent_id,
            "metadata": dict(metadata or {}),
        }
        return _Call("POST", f"{API_PREFIX}/conversations/", body=body, conflict_may_be_ours=True)

    @staticmethod
    def _created_by_resend(call: _Call, conversation: Conversation | None) -> Conversation:
        """The conversation a resent create met, if it holds what was sent: the first attempt's."""
        sent = call.body
        if conversation is not None and all(conversation[name] == sent[name] for name in ("user_id", "agent_id", "metadata")):
            return conversation
        raise Conflict(409, "conflict", f"Conversation {sent['conversation_id']} already exists.", {})

    @staticmethod
    def _get_conversation_call(conversation_id: str) -> _Call:
        return _Call("GET", _conversation_path(conversation_id), missing_ok=True)

    @staticmethod
    def _update_conversation_call(
        conversation_id: str,
        user_id: str | None,
        agent_id: str | None,
        archived: bool | None,
        metadata: Mapping[str, Any] | None,
    ) -> _Call:
        changes = {"user_id": user_id, "agent_id": agent_id, "archived": archived, "metadata": metadata}
        body = {name: dict(value) if name == "metadata" else value for name, value in changes.items() if value is not None}
        if not body:
            raise ValueError("Nothing to change: give user_id, agent_id, archived or metadata.")
        return _Call("PATCH", _conversation_path(conversation_id), body=body)

    @staticmethod
    def _erase_conversation_call(conversation_id: str) -> _Call:
        return _Call("DELETE", _conversation_path(conversation_id), missing_ok=True)

    @staticmethod
    def _erased(conversation_id: str, answer: Any) -> ConversationErased:
        if answer is _MISSING:
            return {"conversation_id": conversation_id, "messages_erased": 0, "cache_keys_erased": 0}
        return answer

    @staticmethod
    def _get_memory_call(conversation_id: str) -> _Call:
        return _Call("GET", _conversation_path(conversation_id, "memory"), missing_ok=True)

    @staticmethod
    def _put_memory_call(conversation_id: str, messages: Sequence[Any], metadata: Mapping[str, Any] | None) -> _Call:
        body = {"messages": list(messages), "metadata": dict(metadata or {})}
        return _Call("PUT", _conversation_path(conversation_id, "memory"), body=body)

    @staticmethod
    def _search_call(
        conversation_id: str,
        query: str,
        mode: str | None,
        scope: str | None,
        top_k: int | None,
        min_similarity: float | None,
        vector_fetch_limit: int | None,
        cross_session_trigger: int | None,
        candidate_limit: int | None,
        filters: SearchFilters | None,
    ) -> _Call:
        options = _params(
            mode=mode,
            scope=scope,
            top_k=top_k,
            min_similarity=min_similarity,
            vector_fetch_limit=vector_fetch_limit,
            cross_session_trigger=cross_session_trigger,
            candidate_limit=candidate_limit,
        )
        return _search_request(_conversation_path(conversation_id, "search"), {"q": query, **options}, filters)

    @staticmethod
    def _search_user_call(
        user_id: str,
        query: str,
        mode: str | None,
        top_k: int | None,
        min_similarity: float | None,
        vector_fetch_limit: int | None,
        candidate_limit: int | None,
        filters: SearchFilters | None,
        include_memories: bool | None = None,
        include_past_memories: bool | None = None,
    ) -> _Call:
        options = _params(
            mode=mode,
            top_k=top_k,
            min_similarity=min_similarity,
            vector_fetch_limit=vector_fetch_limit,
            candidate_limit=candidate_limit,
            include_memories=include_memories,
            include_past_memories=include_past_memories,
        )
        return _search_request(_user_path(user_id, "search"), {"q": query, **options}, filters)

    @staticmethod
    def _list_memories_call(
        user_id: str,
        query: str | None,
        top_k: int | None,
        kind: str | None,
        subject: str | None,
        valid_at: datetime | str | None,
        include_past: bool | None,
        conversation_ids: Sequence[str] | None,
        start_date: datetime | str | None,
        end_date: datetime | str | None,
        limit: int | None,
        offset: int | None,
    ) -> _Call:
        params = _params(
            query=query,
            top_k=top_k,
            kind=kind,
            subject=subject,
            valid_at=valid_at,
            include_past=include_past,
            conversation_id=None if conversation_ids is None else list(conversation_ids),  # repeated, one per id
            start_date=start_date,
            end_date=end_date,
            limit=limit,
            offset=offset,
        )
        return _Call("GET", _user_path(user_id, "memories"), params=params)

    @staticmethod
    def _correct_memory_call(
        user_id: str,
        memory_id: str | uuid.UUID,
        kind: str | None,
        subject: str | None,
        text: str | None,
        valid_from: date | str | None,
        valid_to: date | str | None | _Unchanged,
        confidence: float | None,
    ) -> _Call:
        changes = {
            "kind": kind,
            "subject": subject,
            "text": text,
            "valid_from": _day_or_time(valid_from),
            "confidence": confidence,
        }
        body = {name: value for name, value in changes.items() if value is not None}
        if not isinstance(valid_to, _Unchanged):
            body["valid_to"] = _day_or_time(valid_to)
        if not body:
            raise ValueError("Nothing to correct: give kind, subject, text, valid_from, valid_to or confidence.")
        return _Call("PATCH", _memory_path(user_id, memory_id), body=body)

    def _summarize_call(self, conversation_id: str) -> _Call:
        return _Call("POST", _conversation_path(conversation_id, "summaries"), timeout=max(self.timeout, CHAT_TIMEOUT))

    @staticmethod
    def _get_message_call(conversation_id: str, message_id: str) -> _Call:
        path = _conversation_path(conversation_id, "messages", _segment(str(message_id), what="message id"))
        return _Call("GET", path, missing_ok=True)

    @staticmethod
    def _summaries_call(conversation_id: str, limit: int | None) -> _Call:
        return _Call("GET", _conversation_path(conversation_id, "summaries"), params=_params(limit=limit), missing_ok=True)

    @staticmethod
    def _history_call(path: str, limit: int | None, offset: int | None) -> _Call:
        return _Call("GET", path, params=_params(limit=limit, offset=offset), missing_ok=True)

    @staticmethod
    def _summaries_of(answer: Any) -> list[Summary]:
        return [] if answer is _MISSING else list(answer["summaries"])

    @staticmethod
    def _page_of(answer: Any) -> Any:
        return {"count": 0, "next": None, "previous": None, "results": []} if answer is _MISSING else answer

    @staticmethod
    def _append_batch(
        conversation_id: str, messages: Sequence[Mapping[str, Any]], user_id: str, agent_id: str, *, stamped: bool
    ) -> _Batch:
        path = _conversation_path(conversation_id, "messages")
        return _Batch(
            "messages",
            _identified(messages, stamped=stamped),
            lambda batch: _Call("POST", path, body={"messages": batch, "user_id": user_id, "agent_id": agent_id}),
        )

    @staticmethod
    def _window_call(conversation_id: str, limit: int | None, format: str) -> _Call:
        params = _params(limit=limit, format=format)
        return _Call("GET", _conversation_path(conversation_id, "window"), params=params, missing_ok=True)

    @staticmethod
    def _messages_call(
        conversation_id: str,
        limit: int | None,
        skip: int | None,
        role: str | None,
        start_date: datetime | str | None,
        end_date: datetime | str | None,
        include_archived: bool | None,
    ) -> _Call:
        params = _params(
            limit=limit, skip=skip, role=role, start_date=start_date, end_date=end_date, include_archived=include_archived
        )
        return _Call("GET", _conversation_path(conversation_id, "messages"), params=params, missing_ok=True)

    @staticmethod
    def _put_checkpoint_call(
        conversation_id: str,
        state: Mapping[str, Any],
        checkpoint_id: str | None,
        namespace: str,
        parent_id: str | None,
        metadata: Mapping[str, Any] | None,
    ) -> _Call:
        body: dict[str, Any] = {"namespace": namespace, "parent_id": parent_id, "state": state, "metadata": metadata or {}}
        if checkpoint_id is not None:
            body["checkpoint_id"] = checkpoint_id
        return _Call("POST", _conversation_path(conversation_id, "checkpoints"), body=body)

    @staticmethod
    def _list_checkpoints_call(conversation_id: str, namespace: str | None, before: str | None, limit: int | None) -> _Call:
        params = _params(namespace=namespace, before=before, limit=limit)
        return _Call("GET", _conversation_path(conversation_id, "checkpoints"), params=params, missing_ok=True)

    @staticmethod
    def _checkpoint_call(conversation_id: str, checkpoint_id: str, namespace: str) -> _Call:
        path = _conversation_path(conversation_id, "checkpoints", checkpoint_id)
        return _Call("GET", path, params={"namespace": namespace}, missing_ok=True)

    @staticmethod
    def _put_writes_batch(
        conversation_id: str,
        checkpoint_id: str,
        task_id: str,
        writes: Sequence[Mapping[str, Any]],
        namespace: str,
        task_path: str,
    ) -> _Batch:
        path = _conversation_path(conversation_id, "checkpoints", checkpoint_id, "writes")
        return _Batch(
            "writes",
            writes,
            lambda batch: _Call(
                "POST", path, body={"namespace": namespace, "task_id": task_id, "task_path": task_path, "writes": batch}
            ),
        )

    @staticmethod
    def _delete_checkpoints_call(conversation_id: str, namespace: str | None) -> _Call:
        path = _conversation_path(conversation_id, "checkpoints")
        return _Call("DELETE", path, params=_params(namespace=namespace), missing_ok=True)

    @staticmethod
    def _messages_of(answer: Any) -> list[dict[str, Any]]:
        return [] if answer is _MISSING else list(answer["messages"])

    @staticmethod
    def _checkpoints_of(answer: Any) -> list[dict[str, Any]]:
        return [] if answer is _MISSING else list(answer["checkpoints"])

    @staticmethod
    def _found(answer: Any) -> dict[str, Any] | None:
        return None if answer is _MISSING else answer

    # --- sending, with retries ------------------------------------------------------------------

    @classmethod
    def _finish(cls, call: _Call, response: httpx.Response, *, resent: bool) -> Any:
        """The answer to the call; a ``conflict`` answering a resend that may have met the first
        attempt's own write is left to the caller to settle (``_OURS_PERHAPS``)."""
        if resent and call.conflict_may_be_ours and response.status_code == 409 and _error_code(response) == "conflict":
            return _OURS_PERHAPS
        return cls._answer(call, response)

    def _request(self, client: httpx.Client | httpx.AsyncClient, call: _Call) -> httpx.Request:
        """The request of ``call``, its body as encoded when the call was made."""
        return client.build_request(
            call.method,
            call.path,
            params=call.params,
            content=call.content,
            headers=call.headers,
            timeout=call.timeout or self.timeout,
        )

    def _send(self, call: _Call) -> Any:
        attempt = 0
        while True:
            try:
                response = self._client.send(self._request(self._client, call))
            except TRANSIENT_ERRORS as error:
                delay = self._retry_delay(attempt, error=error)
            else:
                delay = self._retry_delay(attempt, response=response)
                if delay is None:
                    return self._finish(call, response, resent=attempt > 0)
            time.sleep(delay)
            attempt += 1

    def _send_batch(self, batch: _Batch) -> list[Any]:
        """The answers to the parts of a batch, sent in order (see :meth:`_parts_after`)."""
        answers = []
        parts = deque(batch.parts(self._batch_size))
        while parts:
            start, call = parts.popleft()
            try:
                answers.append(self._send(call))
            except MemoryServiceError as error:
                parts = deque(self._parts_after(batch, start, call, error))
        return answers

    async def _asend_batch(self, batch: _Batch) -> list[Any]:
        answers = []
        parts = deque(batch.parts(self._batch_size))
        while parts:
            start, call = parts.popleft()
            try:
                answers.append(await self._asend(call))
            except MemoryServiceError as error:
                parts = deque(self._parts_after(batch, start, call, error))
        return answers

    def _parts_after(self, batch: _Batch, start: int, call: _Call, error: MemoryServiceError) -> list[tuple[int, _Call]]:
        """What to send once the service answered ``error`` to the part of ``batch`` from item
        ``start``. A refusal of the part as more items than the service takes in one request stored
        nothing: the rest of the batch, that part included, is sent in parts of the limit it named,
        the same items with the same ids in the same order, and this client's later batches use that
        size too. Any other error is raised, naming the item by its index in the whole batch and
        counting the items the earlier parts stored (see :func:`_in_batch`)."""
        limit = _service_limit(error, batch.name, len(call.body[batch.name]))
        if limit is None:
            raise _in_batch(error, batch.name, start, applied=start) from error
        self._batch_size = limit
        return batch.parts(limit, start=start)

    def _page_size(self, wanted: int) -> int:
        """The items to ask for in one page when ``wanted``: at most the service's page limit once known."""
        return wanted if self._page_limit is None else min(wanted, self._page_limit)

    def _learn_page_limit(self, error: MemoryServiceError, field: str, asked: int) -> bool:
        """Whether ``error`` is the service's refusal of a page of ``asked`` items (``field`` its
        ``limit``) as more than it answers at once (its ``MEMORY_MAX_PAGE_SIZE``, named in
        ``details["limit"]``); then this client asks its later pages in that size. Such a refusal
        answers and stores nothing, so the page can be asked again."""
        limit = _service_limit(error, field, asked)
        if limit is not None:
            self._page_limit = limit
        return limit is not None

    async def _asend(self, call: _Call) -> Any:
        client = self._async()
        attempt = 0
        while True:
            try:
                response = await client.send(self._request(client, call))
            except TRANSIENT_ERRORS as error:
                delay = self._retry_delay(attempt, error=error)
            else:
                delay = self._retry_delay(attempt, response=response)
                if delay is None:
                    return self._finish(call, response, resent=attempt > 0)
            await asyncio.sleep(delay)
            attempt += 1

    def _async(self) -> httpx.AsyncClient:
        """The async client of the running event loop (connections cannot cross loops)."""
        loop = asyncio.get_running_loop()
        if self._async_client is None or self._async_loop is not loop or self._async_client.is_closed:
            self._async_client = httpx.AsyncClient(
                base_url=self.base_url, headers=self._headers, timeout=self.timeout, transport=self._async_transport
            )
            self._async_loop = loop
        return self._async_client

    def _retry_delay(
        self, attempt: int, *, response: httpx.Response | None = None, error: Exception | None = None
    ) -> float | None:
        """Seconds to wait before the next attempt; ``None`` when the response is the answer.

        Raises when the attempt failed and no retry is left."""
        if response is not None and (response.status_code != 503 or _error_code(response) in PERMANENT_UNAVAILABLE):
            return None
        if attempt >= self.retries:
            if response is not None:
                raise MemoryServiceError.from_response(response)
            raise Unreachable(
                None, "unreachable", f"{self.base_url} did not answer after {attempt + 1} attempts: {error!r}"
            ) from error
        backoff = min(BACKOFF_CAP, BACKOFF_BASE * 2**attempt) * (0.5 + random.random() / 2)  # noqa: S311
        waited = _retry_after(response) if response is not None else None
        return backoff if waited is None else waited

    @staticmethod
    def _answer(call: _Call, response: httpx.Response) -> Any:
        if response.is_success:
            return response.json() if response.content else None
        error = MemoryServiceError.from_response(response)
        if call.missing_ok and isinstance(error, NotFound) and error.code == "not_found":
            return _MISSING
        raise error

    # --- store ----------------------------------------------------------------------------------

    def store_batch(self, operations: Sequence[Mapping[str, Any]]) -> list[Any]:
        """Run LangGraph store operations (``{"op": "get" | "search" | "put" | "delete" |
        "list_namespaces", ...}``) in order; one result per operation, a later operation seeing an
        earlier one's write. Safe to repeat: a put is an upsert and deleting a missing item is a no-op.
        ``memory_client.store.ServiceStore`` is the LangGraph ``BaseStore`` over this.

        Up to ``MAX_BATCH`` (100) operations are one request, which the service runs in one
        transaction: every operation is applied, or after any error none is. (The service takes at most
        its ``MEMORY_MAX_BATCH`` operations per request, 100 unless its operator lowered it, and refuses
        a longer request whole, naming its limit: the client then sends the batch in parts of that
        limit, see the module's contract.) A longer batch is sent in parts, in order, each part its own
        transaction: when a part fails, the parts before it
        stay applied, and neither it nor any after it is (those after it are not sent; after
        ``Unreachable`` or ``ServiceUnavailable`` the failing part itself may have been applied).
        Every part is encoded before the first is sent, so a value no request can carry (NaN, a lone
        surrogate...) is refused with nothing applied. The error names the operation by its index in
        ``operations`` (``operations[120]``), and ``details["applied"]`` counts the operations applied
        before its part (100 for ``operations[120]`` in parts of 100)."""
        answers = self._send_batch(self._store_batch(operations))
        return [result for answer in answers for result in answer["results"]]

    async def astore_batch(self, operations: Sequence[Mapping[str, Any]]) -> list[Any]:
        answers = await self._asend_batch(self._store_batch(operations))
        return [result for answer in answers for result in answer["results"]]

    @staticmethod
    def _store_batch(operations: Sequence[Mapping[str, Any]]) -> _Batch:
        path = f"{API_PREFIX}/store/batch/"
        return _Batch("operations", operations, lambda batch: _Call("POST", path, body={"operations": batch}))

"""The one door into the write path: a value is storable in PostgreSQL, Redis and JSON alike, or refused.

Every way a value reaches storage (the API, the chat model's answer, the memory document,
checkpoints, facts, the admin, the commands) passes through here before anything is written or
acknowledged. A write that is acknowledged and then cannot be stored would sit in the cache while
its persist task fails forever, so whatever could not be stored is refused first.

What is storable:

* **Text** (``storable_text``): a ``str`` without NUL (PostgreSQL's ``text`` and ``jsonb`` cannot hold
  U+0000) and without any UTF-16 surrogate code point U+D800 to U+DFFF (UTF-8 cannot encode one, so
  neither psycopg, redis-py nor a UTF-8 JSON body can carry it). Every other character is storable,
  noncharacters such as U+FFFF included.
* **JSON** (``storable_json``): ``dict`` with string keys, ``list`` (or ``tuple``, stored as a list),
  ``str``, ``int``, ``float``, ``bool`` and ``None``, where every string and key is storable text,
  every float is finite (``jsonb`` has no Infinity or NaN, and JSON has neither), every integer has
  at most ``MAX_INT_DIGITS`` decimal digits (Python's own limit for turning one into text, which
  ``json.dumps`` needs), and objects and arrays nest at most ``MAX_JSON_DEPTH`` levels (the value
  itself is level 1), so that every serializer down the line stays within its stack.
* **Date and time** (``storable_datetime``): timezone-aware, and from ``EARLIEST_STORABLE`` to
  ``LATEST_STORABLE`` once in UTC: the years 1 to 9999 less a day at each end. PostgreSQL keeps
  times far outside them (before year 1, past 9999), which Python cannot read back; and a time within
  a day of either end is one that a reader showing it in another time zone cannot turn into that
  zone's date. Inside these bounds a stored time reads back, and shows, everywhere.

A refusal raises ``Unstorable`` (400 ``validation_error``) whose ``details`` name the path of the bad
value (``metadata.items[3]``) and the reason, and whose message says what to send instead.

A chat model's output is not the client's to fix, so it is cleaned instead of refused
(``cleaned_text``, ``cleaned_json``): NUL removed, a lone surrogate replaced by U+FFFD, a number that
cannot be stored replaced by null. What the client is shown is then exactly what is stored.

Every walk here is a loop, not recursion: a value nested beyond the stack must be refused, not crash.
"""

import json
import math
import re
from collections.abc import Hashable
from datetime import UTC, datetime, timedelta
from typing import Any

from core.exceptions import Unstorable

# Levels of objects and arrays, the value itself being the first. Agents' metadata and LangGraph
# states are a handful of levels deep; this leaves them room while every serializer stays safe.
MAX_JSON_DEPTH = 100
# Python refuses to turn a longer integer into text (``sys.int_info.default_max_str_digits``), and
# ``json.dumps`` must. A fixed figure, so that the web process and the workers agree.
MAX_INT_DIGITS = 4300
_INT_BOUND = 10**MAX_INT_DIGITS

# The first and last instants a stored time may hold (see the module's contract): a day inside
# Python's range at each end, so that every time zone (their offsets are under a day) can show them.
EARLIEST_STORABLE = datetime.min.replace(tzinfo=UTC) + timedelta(days=1)
LATEST_STORABLE = datetime.max.replace(tzinfo=UTC) - timedelta(days=1)

_UNSTORABLE_CHARACTER = re.compile(r"[\x00\ud800-\udfff]")
# A key shown as ``.name`` in a path; any other is shown quoted, ``["a key"]``.
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,63}$")
_KEY_SHOWN_CHARS = 40
_PATH_SHOWN_SEGMENTS = 12

NUL = "contains a NUL character"
SURROGATE = "contains an unpaired UTF-16 surrogate"
NOT_FINITE = "is not a finite number"
TOO_DEEP = f"nests more than {MAX_JSON_DEPTH} levels"
TOO_MANY_DIGITS = f"is an integer of more than {MAX_INT_DIGITS} digits"

_ADVICE = {
    NUL: "remove the NUL characters (U+0000), which PostgreSQL cannot store",
    SURROGATE: "send valid Unicode text (half of a surrogate pair alone is not a character; pair it or remove it)",
    NOT_FINITE: 'send a finite number, null, or the value as a string such as "Infinity"',
    TOO_DEEP: f"flatten it to at most {MAX_JSON_DEPTH} levels of objects and arrays",
    TOO_MANY_DIGITS: "send it as a string",
}
_NON_STRING_KEY_ADVICE = "use strings as the keys of an object"
_NOT_JSON_ADVICE = "send an object, array, string, number, true, false or null (a date as an ISO 8601 string)"


# --- Refusing -------------------------------------------------------------------------------------


def storable_text(value: Any, *, field: str) -> str:
    """``value`` unchanged if it is a string PostgreSQL, Redis and UTF-8 JSON can all hold."""
    if not isinstance(value, str):
        raise Unstorable(field=field, reason=f"is not a string ({type(value).__name__})", advice="send text")
    problem = _text_problem(value)
    if problem is not None:
        raise Unstorable(field=field, reason=problem, advice=_ADVICE[problem])
    return value


def storable_json(value: Any, *, field: str) -> Any:
    """``value`` unchanged (tuples, if any, turned into lists in a copy) if it is a JSON value that
    PostgreSQL's jsonb, Redis and JSON all accept; else ``Unstorable`` naming the path inside ``field``."""
    has_tuples = False
    # (value, where it is, its level if it is an object or array); a path is (parent path, key) or ().
    pending: list[tuple[Any, tuple, int]] = [(value, (), 1)]
    while pending:
        item, path, depth = pending.pop()
        if isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                raise Unstorable(field=_path_text(field, path), reason=problem, advice=_ADVICE[problem])
        elif isinstance(item, dict):
            if depth > MAX_JSON_DEPTH:
                raise Unstorable(field=_path_text(field, path), reason=TOO_DEEP, advice=_ADVICE[TOO_DEEP])
            for key, child in item.items():
                if not isinstance(key, str):
                    raise Unstorable(
                        field=_path_text(field, path),
                        reason=f"has a non-string key ({type(key).__name__})",
                        advice=_NON_STRING_KEY_ADVICE,
                    )
                problem = _text_problem(key)
                if problem is not None:
                    raise Unstorable(field=_path_text(field, path), reason=f"has a key that {problem}", advice=_ADVICE[problem])
                pending.append((child, (path, key), depth + 1))
        elif isinstance(item, list | tuple):
            if depth > MAX_JSON_DEPTH:
                raise Unstorable(field=_path_text(field, path), reason=TOO_DEEP, advice=_ADVICE[TOO_DEEP])
            has_tuples = has_tuples or isinstance(item, tuple)
            pending.extend((child, (path, index), depth + 1) for index, child in enumerate(item))
        elif item is None or isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not -_INT_BOUND < item < _INT_BOUND:
                raise Unstorable(field=_path_text(field, path), reason=TOO_MANY_DIGITS, advice=_ADVICE[TOO_MANY_DIGITS])
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise Unstorable(field=_path_text(field, path), reason=NOT_FINITE, advice=_ADVICE[NOT_FINITE])
        else:
            raise Unstorable(
                field=_path_text(field, path), reason=f"is not a JSON value ({type(item).__name__})", advice=_NOT_JSON_ADVICE
            )
    return _with_lists(value) if has_tuples else value


def storable_datetime(value: datetime, *, field: str) -> datetime:
    """``value`` in UTC, if it is timezone-aware and from ``EARLIEST_STORABLE`` to ``LATEST_STORABLE``."""
    if not isinstance(value, datetime):
        raise Unstorable(
            field=field,
            reason=f"is not a date and time ({type(value).__name__})",
            advice="send an ISO 8601 date and time with its offset, e.g. 2024-05-01T10:00:00Z",
        )
    if value.utcoffset() is None:
        raise Unstorable(
            field=field,
            reason="has no time zone",
            advice="send it with its offset, e.g. 2024-05-01T10:00:00Z or 2024-05-01T12:00:00+02:00",
        )
    try:
        in_utc = value.astimezone(UTC)
    except (OverflowError, ValueError):
        in_utc = None
    if in_utc is None or not EARLIEST_STORABLE <= in_utc <= LATEST_STORABLE:
        raise Unstorable(
            field=field,
            reason="is outside the times that can be stored (0001-01-02 to 9999-12-30, in UTC)",
            advice=f"send a time from {_shown(EARLIEST_STORABLE)} to {_shown(LATEST_STORABLE)}",
        )
    return in_utc


def _shown(moment: datetime) -> str:
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


# --- Cleaning a model's output --------------------------------------------------------------------


def cleaned_text(value: str) -> str:
    """A model's text made storable: NUL characters removed, each lone surrogate replaced by U+FFFD
    (a high and a low surrogate side by side become the one character they encode)."""
    if not isinstance(value, str):
        value = _as_text(value)
    if _UNSTORABLE_CHARACTER.search(value) is None:
        return value
    value = value.replace("\x00", "")
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def cleaned_json(value: Any) -> Any:
    """A model's JSON (tool calls' arguments, token usage) made storable, as a copy: strings and keys
    cleaned as ``cleaned_text``, tuples made lists, a number that cannot be stored (not finite, or
    more than ``MAX_INT_DIGITS`` digits) replaced by null, any other value by its text (cleaned), and
    an object or array nested deeper than ``MAX_JSON_DEPTH`` levels replaced by null."""
    root: list[Any] = [None]
    # (value, the container its copy goes into, the key or index there, its level)
    pending: list[tuple[Any, Any, Hashable, int]] = [(value, root, 0, 1)]
    while pending:
        item, target, slot, depth = pending.pop()
        if isinstance(item, dict | list | tuple) and depth > MAX_JSON_DEPTH:
            target[slot] = None
        elif isinstance(item, dict):
            copy: dict[str, Any] = {}
            target[slot] = copy
            for key, child in item.items():
                name = cleaned_text(key if isinstance(key, str) else _as_text(key))
                copy[name] = None  # its place in the order; the value follows
                pending.append((child, copy, name, depth + 1))
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            target[slot] = items
            pending.extend((child, items, index, depth + 1) for index, child in enumerate(item))
        else:
            target[slot] = _cleaned_scalar(item)
    return root[0]


def _cleaned_scalar(item: Any) -> Any:
    if item is None or isinstance(item, bool):
        return item
    if isinstance(item, str):
        return cleaned_text(item)
    if isinstance(item, int):
        return item if -_INT_BOUND < item < _INT_BOUND else None
    if isinstance(item, float):
        return item if math.isfinite(item) else None
    return cleaned_text(_as_text(item))


def _as_text(value: Any) -> str:
    try:
        return str(value)
    except Exception:  # a value whose str() fails is still shown as what it is
        return f"<{type(value).__name__}>"


# --- Helpers --------------------------------------------------------------------------------------


def _text_problem(value: str) -> str | None:
    if _UNSTORABLE_CHARACTER.search(value) is None:
        return None
    return NUL if "\x00" in value else SURROGATE


def _path_text(field: str, path: tuple) -> str:
    """``field`` followed by the keys and indexes of ``path``: ``metadata.items[3]``, ``state["a b"]``."""
    segments: list[str] = []
    while path:
        path, key = path
        if isinstance(key, int):
            segments.append(f"[{key}]")
        elif _PLAIN_KEY.match(key):
            segments.append(f".{key}")
        else:
            shown = key if len(key) <= _KEY_SHOWN_CHARS else key[:_KEY_SHOWN_CHARS] + "…"
            segments.append(f"[{json.dumps(shown, ensure_ascii=False)}]")  # a key that passed the door: storable
    segments.reverse()
    if len(segments) > _PATH_SHOWN_SEGMENTS:  # a value nested 101 levels deep: its path, abridged
        segments = [*segments[:6], f"…({len(segments) - 11} more)…", *segments[-5:]]
    return field + "".join(segments)


def _with_lists(value: Any) -> Any:
    """A copy of a storable value with its tuples as lists (a loop, like the check before it)."""
    root: list[Any] = [None]
    pending: list[tuple[Any, Any, Hashable]] = [(value, root, 0)]
    while pending:
        item, target, slot = pending.pop()
        if isinstance(item, dict):
            copy: dict[str, Any] = {}
            target[slot] = copy
            for key, child in item.items():
                copy[key] = None
                pending.append((child, copy, key))
        elif isinstance(item, list | tuple):
            items: list[Any] = [None] * len(item)
            target[slot] = items
            pending.extend((child, items, index) for index, child in enumerate(item))
        else:
            target[slot] = item
    return root[0]


# --- Dead letters: kept whatever they hold ----------------------------------------------------------

RECORDED_AS_TEXT = "json"
_IDENTITY_FIELDS = ("tenant_id", "tenant_slug", "conversation_id", "user_id", "agent_id")


def recordable(value: Any) -> tuple[Any, bool]:
    """``value`` in a form a dead letter can always keep: itself when storable (and False); else,
    with True, its JSON text (ASCII, with ``\\u0000``, surrogates and ``Infinity`` written out) under
    ``RECORDED_AS_TEXT``, beside the storable ids that name its tenant and conversation."""
    try:
        return storable_json(value, field="payload"), False
    except Unstorable:
        pass
    kept: dict[str, Any] = {}
    if isinstance(value, dict):
        for name in _IDENTITY_FIELDS:
            try:
                kept[name] = storable_json(value[name], field=name)
            except (KeyError, Unstorable):
                continue
    kept[RECORDED_AS_TEXT] = json.dumps(value, ensure_ascii=True, allow_nan=True, default=repr)
    return kept, True

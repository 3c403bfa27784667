"""Hostile and odd values for the tests of the storable door (``core.storable``) and of the
entry points that pass through it: text with NUL and lone surrogates, numbers nothing can store,
non-JSON values and non-string keys, nesting around the depth limit, and odd but valid Unicode that
must be stored exactly.

A case is ``(name, expected, value)``: ``REFUSED`` (refused before anything is written), ``STORED``
(accepted and stored exactly), ``EITHER`` (generated: one or the other, never acknowledged and then
stuck), or for nested values the number of levels the value itself holds, which decides the outcome
by where the entry point puts it (``expected_at``).
"""

import json
import math
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

from hypothesis import example
from hypothesis import strategies as st

from core.storable import MAX_INT_DIGITS, MAX_JSON_DEPTH

REFUSED, STORED, EITHER = "refused", "stored", "either"


class BigInt(int):
    """An integer too long for ``repr``: shown by its length, so a failing example can be printed."""

    def __repr__(self) -> str:
        return f"<an integer of {len(str(abs(self) // 10**4000)) + 4000} digits>"


# Every code point, NUL and the surrogates included.
any_character = st.characters(exclude_categories=())
any_text = st.text(any_character, max_size=12)
# Every code point PostgreSQL and UTF-8 can hold, noncharacters included.
storable_character = st.characters(exclude_categories=("Cs",), exclude_characters="\x00")
storable_string = st.text(storable_character, max_size=12)
ODD_TEXT = [
    "\ufffe\uffff",  # noncharacters
    "😀 \U0001d11e \U0010ffff",  # astral characters
    "\u200fשלום\u200e",  # right-to-left and left-to-right marks
    "e\u0301 a\u0308\u0323",  # combining sequences
    "line\u2028separator\u2029paragraph",
    "\x01\x1f\x7f\u0085",  # control characters other than NUL
    "\ufeff zero\u200bwidth",
]
odd_text = st.sampled_from(ODD_TEXT) | storable_string

# Numbers nothing downstream can store.
HOSTILE_NUMBERS = {
    "1e400": json.loads("1e400"),
    "-1e400": json.loads("-1e400"),
    "10**4300": BigInt(10**MAX_INT_DIGITS),
    "-10**5000": BigInt(-(10**5000)),
}
LARGEST_STORABLE_INT = BigInt(10**MAX_INT_DIGITS - 1)

storable_scalar = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=0, max_value=10**6).map(lambda below: BigInt(LARGEST_STORABLE_INT - below))
    | st.floats(allow_nan=False, allow_infinity=False)
    | odd_text
)
storable_value = st.recursive(
    storable_scalar,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(odd_text, children, max_size=4),
    max_leaves=16,
)
hostile_scalar = (
    storable_scalar
    | any_text
    | st.floats()
    | st.sampled_from(list(HOSTILE_NUMBERS.values()))
    | st.builds(datetime.now)
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.binary(max_size=4)
)
hostile_value = st.recursive(
    hostile_scalar,
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(any_text, children, max_size=4)
        | st.dictionaries(st.integers() | st.none() | st.booleans(), children, max_size=2)
    ),
    max_leaves=16,
)
# JSON as a client can send it: any string (escaped when it is half a surrogate pair), any key.
json_value = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | any_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(any_text, children, max_size=4),
    max_leaves=12,
)


def nested(levels: int, leaf: Any = 1) -> Any:
    """``levels`` objects and arrays inside each other, alternately, around ``leaf``."""
    value = leaf
    for level in range(levels):
        value = {"a": value} if level % 2 else [value]
    return value


def nested_json(levels: int) -> str:
    """``nested(levels)`` as JSON text, written without recursion."""
    opening = "".join('{"a":' if level % 2 else "[" for level in reversed(range(levels)))
    closing = "".join("}" if level % 2 else "]" for level in range(levels))
    return opening + "1" + closing


# --- Cases --------------------------------------------------------------------------------------

JSON_CASES: list[tuple[str, Any, Any]] = [
    ("infinity", REFUSED, math.inf),
    ("minus infinity", REFUSED, -math.inf),
    ("NaN", REFUSED, math.nan),
    ("1e400 as parsed", REFUSED, HOSTILE_NUMBERS["1e400"]),
    ("10**4300", REFUSED, HOSTILE_NUMBERS["10**4300"]),
    ("-10**5000", REFUSED, HOSTILE_NUMBERS["-10**5000"]),
    ("a NUL in a string", REFUSED, {"text": "a\x00b"}),
    ("a lone high surrogate", REFUSED, ["\ud800"]),
    ("a lone low surrogate", REFUSED, "x\udfff"),
    ("both halves of a pair as code points", REFUSED, "\ud83d\ude00"),
    ("a NUL in a key", REFUSED, {"k\x00": 1}),
    ("a lone surrogate in a key", REFUSED, {"\ud800": 1}),
    ("an integer key", REFUSED, {1: "one"}),
    ("a None key", REFUSED, {None: "none"}),
    ("a datetime", REFUSED, datetime(2024, 5, 1, tzinfo=UTC)),
    ("bytes", REFUSED, b"bytes"),
    ("a set", REFUSED, {1, 2}),
    ("a Decimal", REFUSED, Decimal("1.5")),
    ("5000 levels", 5000, nested(5000)),
    ("101 levels", 101, nested(101)),
    ("100 levels", 100, nested(100)),
    ("99 levels", 99, nested(99)),
    ("98 levels", 98, nested(98)),
    ("noncharacters", STORED, "\ufffe\uffff"),
    ("astral characters", STORED, {"😀": "\U0001d11e \U0010ffff"}),
    ("bidirectional marks", STORED, "\u200fשלום\u200e"),
    ("combining sequences", STORED, ["e\u0301", "a\u0308\u0323"]),
    ("line and paragraph separators", STORED, {"\u2028": "\u2029"}),
    ("control characters but NUL", STORED, "\x01\x1f\x7f\u0085"),
    ("the largest integer Python writes", STORED, LARGEST_STORABLE_INT),
    ("the largest float", STORED, 1.7976931348623157e308),
    ("the smallest float", STORED, 5e-324),
    ("minus zero", STORED, -0.0),
    ("a tuple", STORED, (1, "two")),
]
TEXT_CASES: list[tuple[str, Any, Any]] = [
    ("a NUL", REFUSED, "a\x00b"),
    ("only a NUL", REFUSED, "\x00"),
    ("a lone high surrogate", REFUSED, "half \ud800 a pair"),
    ("a lone low surrogate", REFUSED, "\udfff"),
    ("both halves of a pair as code points", REFUSED, "\ud83d\ude00"),
    *((f"odd text {index}", STORED, text) for index, text in enumerate(ODD_TEXT)),
]
# Dates and times: aware and within Python's range in UTC, or refused.
DATETIME_CASES: list[tuple[str, Any, Any]] = [
    ("naive", REFUSED, datetime(2024, 5, 1, 10)),
    ("year 1 at +05:00", REFUSED, datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))),
    ("year 9999 at -05:00", REFUSED, datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-5)))),
    # Within Python's range in UTC, but not shown in every time zone: kept out with a day's margin.
    ("year 1's first day", REFUSED, datetime(1, 1, 1, 23, 59, 59, tzinfo=UTC)),
    ("year 9999's last day", REFUSED, datetime(9999, 12, 31, tzinfo=UTC)),
    ("the first instant", STORED, datetime(1, 1, 2, tzinfo=UTC)),
    ("the last instant", STORED, datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC)),
    ("an offset", STORED, datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=14)))),
]
# JSON text as a client sends it, with what the API must make of it wherever it is put.
JSON_TEXT_CASES: list[tuple[str, Any, str]] = [
    ("1e400", REFUSED, "1e400"),
    ("-1e400", REFUSED, "-1e400"),
    ("1E999 in a list", REFUSED, "[1, 1E999]"),
    ("an escaped NUL", REFUSED, '"a\\u0000b"'),
    ("an escaped NUL in a key", REFUSED, '{"\\u0000": 1}'),
    ("an escaped lone surrogate", REFUSED, '"\\ud800"'),
    ("an escaped lone surrogate in a key", REFUSED, '{"k": {"\\udfff": 1}}'),
    ("a reversed pair", REFUSED, '"\\ude00\\ud83d"'),
    ("Infinity", REFUSED, "Infinity"),
    ("NaN", REFUSED, "NaN"),
    ("an integer of 5000 digits", REFUSED, "1" * 5000),
    ("5000 levels", REFUSED, nested_json(5000)),
    ("an escaped pair", STORED, '"\\ud83d\\ude00"'),
    ("escaped noncharacters", STORED, '"\\ufffe\\uffff"'),
    ("raw odd text", STORED, json.dumps(ODD_TEXT, ensure_ascii=False)),
    ("an integer of 4300 digits", STORED, "9" * MAX_INT_DIGITS),
    ("extreme floats", STORED, "[1.7976931348623157e308, 5e-324, -0.0, 1e23]"),
    ("95 levels", STORED, nested_json(95)),
    ("99 levels", EITHER, nested_json(99)),
    ("100 levels", EITHER, nested_json(100)),
]


def expected_at(expected: Any, *, levels_above: int | None) -> str:
    """What must happen to a case put ``levels_above`` objects or arrays deep (None: unknown)."""
    if not isinstance(expected, int):
        return expected
    if levels_above is None:
        return EITHER if expected <= MAX_JSON_DEPTH + 1 else REFUSED
    return STORED if expected + levels_above <= MAX_JSON_DEPTH else REFUSED


# Generated cases; every test also runs each case of its catalogue (``every_case``).
json_cases = hostile_value.map(lambda value: ("generated", EITHER, value))
text_cases = any_text.map(lambda text: ("generated", EITHER, text))
json_text_cases = json_value.map(lambda value: ("generated", EITHER, json.dumps(value)))


def every_case(cases: list[tuple[str, Any, Any]], **also: Any) -> Any:
    """Run a Hypothesis test on each case of a catalogue as an explicit example, besides the
    generated ones; ``also`` gives the other arguments, a list of them taken in turn."""

    def decorate(test: Any) -> Any:
        for index, case in enumerate(cases):
            others = {name: values[index % len(values)] for name, values in also.items()}
            test = example(case=case, **others)(test)
        return test

    return decorate


def as_decimals(text: str) -> Any:
    """A JSON document's value with its numbers read exactly: 1e+23 and 100000000000000000000000
    are the same number, which PostgreSQL's numeric keeps, whatever a float makes of it."""
    return json.loads(text, parse_float=Decimal)


def same_json(stored: Any, sent: Any) -> bool:
    """Whether a stored JSON value is the one sent, number for number (see ``as_decimals``)."""
    return as_decimals(json.dumps(stored)) == as_decimals(json.dumps(sent))

"""The storable door (``core.storable``): what it lets through, what it refuses and how it
names it, and how it cleans a model's output. Checked against the real PostgreSQL too: every value
the door accepts is accepted by a jsonb and a text column and read back as it was sent, and every
kind of value it refuses (but its own depth and digit bounds) is refused by PostgreSQL or by UTF-8."""

import json
import math
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any

import pytest
from django.db import DataError, connection, transaction
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from core.exceptions import Unstorable
from core.storable import (
    EARLIEST_STORABLE,
    LATEST_STORABLE,
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    cleaned_json,
    cleaned_text,
    storable_datetime,
    storable_json,
    storable_text,
)
from tests.hostile import ODD_TEXT, any_text, as_decimals, hostile_value, nested, storable_string, storable_value

# Examples per property: the whole file stays within seconds.
EXAMPLES = 150
PROPERTY = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None)
DATABASE_PROPERTY = settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def refusal(function: Any, *args: Any, **kwargs: Any) -> Unstorable:
    with pytest.raises(Unstorable) as caught:
        function(*args, **kwargs)
    return caught.value


def json_text(value: Any) -> str:
    """What every later step writes: JSON, UTF-8, no NaN (raises if it cannot)."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False)
    text.encode("utf-8")
    return text


# --- storable_text -----------------------------------------------------------------------------


@PROPERTY
@given(text=any_text)
@example(text="a\x00b")
@example(text="\ud800")
@example(text="\udfff tail")
@example(text="\ud83d\ude00")  # both halves of a pair, as two code points: UTF-8 cannot encode them
def test_text_is_storable_exactly_when_utf8_can_encode_it_and_it_holds_no_nul(text):
    try:
        text.encode("utf-8")
        encodable = True
    except UnicodeEncodeError:
        encodable = False

    if encodable and "\x00" not in text:
        assert storable_text(text, field="content") is text
    else:
        error = refusal(storable_text, text, field="content")
        assert error.details["field"] == "content"
        assert error.status == 400
        assert error.code == "validation_error"


@pytest.mark.parametrize("text", ODD_TEXT)
def test_odd_but_valid_unicode_is_storable_text(text):
    assert storable_text(text, field="content") == text


def test_a_nul_is_refused_naming_the_field_the_problem_and_what_to_send():
    error = refusal(storable_text, "nul \x00 here", field="system_prompt")

    assert error.details == {"field": "system_prompt", "reason": "contains a NUL character"}
    assert error.message.startswith("system_prompt contains a NUL character; remove the NUL characters")


def test_a_lone_surrogate_is_refused_as_unpaired():
    error = refusal(storable_text, "half \ud800 a pair", field="query")

    assert error.details == {"field": "query", "reason": "contains an unpaired UTF-16 surrogate"}
    assert "send valid Unicode text" in error.message


@pytest.mark.parametrize("value", [None, 12, b"bytes", ["a"]])
def test_text_that_is_not_a_string_is_refused(value):
    error = refusal(storable_text, value, field="name")

    assert error.details["reason"] == f"is not a string ({type(value).__name__})"


# --- storable_json -----------------------------------------------------------------------------


@PROPERTY
@given(value=storable_value)
def test_a_storable_json_value_comes_back_unchanged(value):
    assert storable_json(value, field="metadata") is value
    json_text(value)


@PROPERTY
@given(value=hostile_value)
def test_whatever_the_door_accepts_json_and_utf8_can_write(value):
    try:
        accepted, refused = storable_json(value, field="metadata"), None
    except Unstorable as error:
        accepted, refused = None, error

    if refused is None:
        assert as_decimals(json_text(accepted)) == as_decimals(json.dumps(value, default=_unreachable))
    else:
        assert refused.details["field"].startswith("metadata")
        assert refused.message.startswith(refused.details["field"] + " " + refused.details["reason"] + "; ")
        json_text(refused.details)  # the refusal itself is always storable, and can be answered


def _unreachable(value: Any) -> Any:
    raise AssertionError(f"the door accepted {value!r}")


@pytest.mark.parametrize(
    ("value", "path", "reason"),
    [
        ({"x": json.loads("1e400")}, "metadata.x", "is not a finite number"),
        ({"x": float("-inf")}, "metadata.x", "is not a finite number"),
        ({"x": [1, float("nan")]}, "metadata.x[1]", "is not a finite number"),
        ({"items": [0, 1, 2, "a\x00"]}, "metadata.items[3]", "contains a NUL character"),
        ({"a b": {"c": "\ud800"}}, 'metadata["a b"].c', "contains an unpaired UTF-16 surrogate"),
        ({"deep": {"k\x00": 1}}, "metadata.deep", "has a key that contains a NUL character"),
        ({"\udfff": 1}, "metadata", "has a key that contains an unpaired UTF-16 surrogate"),
        ({1: "a"}, "metadata", "has a non-string key (int)"),
        ({"k": {None: 1}}, "metadata.k", "has a non-string key (NoneType)"),
        ({"when": datetime(2024, 5, 1, tzinfo=UTC)}, "metadata.when", "is not a JSON value (datetime)"),
        ({"day": date(2024, 5, 1)}, "metadata.day", "is not a JSON value (date)"),
        ({"price": Decimal("1.5")}, "metadata.price", "is not a JSON value (Decimal)"),
        ({"tags": {"a", "b"}}, "metadata.tags", "is not a JSON value (set)"),
        ({"raw": b"\x00"}, "metadata.raw", "is not a JSON value (bytes)"),
        ({"n": 10**MAX_INT_DIGITS}, "metadata.n", f"is an integer of more than {MAX_INT_DIGITS} digits"),
        ({"n": -(10**5000)}, "metadata.n", f"is an integer of more than {MAX_INT_DIGITS} digits"),
        ({"x" * 100: "\x00"}, f'metadata["{"x" * 40}…"]', "contains a NUL character"),
    ],
)
def test_an_unstorable_json_value_is_refused_naming_its_path_and_reason(value, path, reason):
    error = refusal(storable_json, value, field="metadata")

    assert error.details == {"field": path, "reason": reason}
    assert error.message.startswith(f"{path} {reason}; ")


def test_the_largest_integer_python_writes_as_text_is_storable():
    largest = 10**MAX_INT_DIGITS - 1

    assert storable_json({"n": largest, "m": -largest}, field="metadata") == {"n": largest, "m": -largest}


@pytest.mark.parametrize("levels", [1, 99, MAX_JSON_DEPTH])
def test_json_nested_up_to_the_depth_limit_is_storable(levels):
    value = nested(levels)

    assert storable_json(value, field="state") is value
    json_text(value)


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH + 1, 5000, 100_000])
def test_json_nested_past_the_depth_limit_is_refused_without_recursion(levels):
    error = refusal(storable_json, nested(levels), field="state")

    assert error.details["reason"] == f"nests more than {MAX_JSON_DEPTH} levels"
    assert error.details["field"].startswith(("state[0].a[0].a", "state.a[0].a"))
    assert "(89 more)" in error.details["field"]  # the path to level 101, abridged


def test_the_value_itself_is_the_first_level():
    assert storable_json(nested(MAX_JSON_DEPTH, leaf="deepest"), field="state")
    assert storable_json("a scalar is no level at all", field="state")
    with pytest.raises(Unstorable):
        storable_json({"wrapped": nested(MAX_JSON_DEPTH)}, field="state")


def test_tuples_are_stored_as_lists_in_a_copy():
    value = {"pair": (1, (2, "three")), "list": [4]}

    stored = storable_json(value, field="state")

    assert stored == {"pair": [1, [2, "three"]], "list": [4]}
    assert value["pair"] == (1, (2, "three"))  # the caller's value is left as it was


def test_an_unstorable_value_inside_a_tuple_is_refused():
    assert refusal(storable_json, (1, ("\x00",)), field="writes").details["field"] == "writes[1][0]"


def test_a_refusal_read_from_a_list_names_the_item():
    error = refusal(storable_json, {"x": float("inf")}, field="metadata")

    assert error.within("messages[2]").details == {"field": "messages[2].metadata.x", "reason": "is not a finite number"}
    assert error.within("writes").within("body").details["field"] == "body.writes.metadata.x"
    assert refusal(storable_json, ["\x00"], field="").within("value").details["field"] == "value[0]"


# --- storable_datetime -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "moment",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5))),
        datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-5))),
        datetime(1, 1, 1, 4, 59, 59, tzinfo=timezone(timedelta(hours=5))),
        # Within Python's range in UTC, but not in every time zone that may show it.
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1, 1, 1, 23, 59, 59, tzinfo=UTC),
        datetime(9999, 12, 31, tzinfo=UTC),
        datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(9999, 12, 31, 6, tzinfo=timezone(timedelta(hours=5))),
    ],
)
def test_a_date_outside_the_storable_range_once_in_utc_is_refused_naming_created_at(moment):
    error = refusal(storable_datetime, moment, field="created_at")

    assert error.details["field"] == "created_at"
    assert "0001-01-02T00:00:00Z to 9999-12-30T23:59:59Z" in error.message


def test_a_naive_date_is_refused():
    error = refusal(storable_datetime, datetime(2024, 5, 1, 10), field="created_at")

    assert error.details == {"field": "created_at", "reason": "has no time zone"}


def test_a_date_that_is_not_a_datetime_is_refused():
    assert refusal(storable_datetime, "2024-05-01", field="created_at").details["reason"] == "is not a date and time (str)"


@pytest.mark.parametrize(
    "moment",
    [
        datetime(1, 1, 2, tzinfo=UTC),
        datetime(1, 1, 2, 5, tzinfo=timezone(timedelta(hours=5))),
        datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2024, 5, 1, 12, tzinfo=timezone(timedelta(hours=2))),
    ],
)
def test_an_aware_date_in_range_comes_back_in_utc(moment):
    converted = storable_datetime(moment, field="created_at")

    assert converted == moment
    assert converted.utcoffset() == timedelta(0)


@PROPERTY
@given(moment=st.datetimes(timezones=st.timezones() | st.just(timezone(timedelta(hours=14)))))
def test_an_aware_date_is_refused_exactly_when_some_time_zone_could_not_show_it(moment):
    try:
        in_utc = moment.astimezone(UTC)
        for hours in (-23, 23):  # a time zone's offset is less than a day either way
            in_utc.astimezone(timezone(timedelta(hours=hours, minutes=59)))
    except (OverflowError, ValueError):
        refusal(storable_datetime, moment, field="created_at")
    else:
        if EARLIEST_STORABLE <= in_utc <= LATEST_STORABLE:
            assert storable_datetime(moment, field="created_at") == in_utc
        else:  # showable, but within the day kept free at each end
            refusal(storable_datetime, moment, field="created_at")


def test_every_storable_date_reads_back_from_postgresql_and_shows_in_the_furthest_time_zones(probe):
    for moment in (EARLIEST_STORABLE, LATEST_STORABLE):
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO storable_probe (moment) VALUES (%s) RETURNING moment", [moment])
            read = cursor.fetchone()[0]
        assert read == moment
        for hours in (-23, 23):
            assert read.astimezone(timezone(timedelta(hours=hours, minutes=59))) == moment


# --- cleaned_text and cleaned_json -------------------------------------------------------------


def test_a_models_text_loses_its_nuls_and_its_lone_surrogates_become_replacement_characters():
    assert cleaned_text("a\x00b\ud800c\udfff") == "ab\ufffdc\ufffd"


def test_a_surrogate_pair_split_into_two_code_points_becomes_its_character():
    assert cleaned_text("\ud83d\ude00 and \ude00\ud83d") == "😀 and \ufffd\ufffd"


@PROPERTY
@given(text=any_text)
def test_cleaned_text_is_storable_idempotent_and_leaves_storable_text_alone(text):
    cleaned = cleaned_text(text)

    assert storable_text(cleaned, field="content") == cleaned
    assert cleaned_text(cleaned) == cleaned
    if "\x00" not in text and not any("\ud800" <= character <= "\udfff" for character in text):
        assert cleaned is text


def test_a_models_json_is_cleaned_as_documented():
    value = {
        "a\x00": [float("inf"), float("nan"), (1, 2), "\udfff", 10**5000, 7.5],
        3: None,
        "when": date(2024, 5, 1),
        "ok": {"nested": True},
    }

    assert cleaned_json(value) == {
        "a": [None, None, [1, 2], "\ufffd", None, 7.5],
        "3": None,
        "when": "2024-05-01",
        "ok": {"nested": True},
    }


def test_a_models_json_nested_too_deep_is_cut_at_the_limit():
    cleaned = cleaned_json(nested(5000))

    assert storable_json(cleaned, field="arguments") is cleaned
    assert json.dumps(cleaned).count("[") + json.dumps(cleaned).count("{") == MAX_JSON_DEPTH
    assert cleaned_json(nested(MAX_JSON_DEPTH)) == nested(MAX_JSON_DEPTH)


@PROPERTY
@given(value=hostile_value)
def test_cleaned_json_is_always_storable_and_keeps_what_was_storable(value):
    cleaned = cleaned_json(value)

    assert storable_json(cleaned, field="usage") is cleaned
    try:
        storable = storable_json(value, field="usage")
    except Unstorable:
        return
    assert cleaned == storable


# --- Against the real PostgreSQL -----------------------------------------------------------------


@pytest.fixture
def probe(db: Any) -> Any:
    """A table of the columns the service stores into: jsonb, text and timestamptz."""
    with connection.cursor() as cursor:
        cursor.execute("CREATE TEMPORARY TABLE storable_probe (document jsonb, body text, moment timestamptz)")
    return connection


def stored_in_postgresql(document: str, body: str) -> tuple[str, str]:
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO storable_probe (document, body) VALUES (%s::jsonb, %s) RETURNING document::text, body", [document, body]
        )
        return cursor.fetchone()


@DATABASE_PROPERTY
@given(value=storable_value)
@example(value={"n": 10**MAX_INT_DIGITS - 1, "f": 1.7976931348623157e308, "g": 5e-324, "z": -0.0, "e": 1e23})
@example(value={text: text for text in ODD_TEXT})
@example(value=nested(MAX_JSON_DEPTH, leaf="\uffff"))
def test_postgresql_stores_every_value_the_door_accepts_as_it_was_sent(probe, value):
    accepted = storable_json(value, field="metadata")

    for ensure_ascii in (True, False):  # escaped as Django writes it, and as raw UTF-8
        document = json.dumps(accepted, ensure_ascii=ensure_ascii, allow_nan=False)
        read_document, read_body = stored_in_postgresql(document, document)

        assert as_decimals(read_document) == as_decimals(document)
        assert read_body == document


@DATABASE_PROPERTY
@given(text=storable_string | st.sampled_from(ODD_TEXT))
def test_postgresql_stores_every_text_the_door_accepts_exactly(probe, text):
    _, read_body = stored_in_postgresql(json.dumps(text), storable_text(text, field="content"))

    assert read_body == text


@pytest.mark.parametrize(
    "moment",
    [
        datetime(1, 1, 2, tzinfo=UTC),
        datetime(9999, 12, 30, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(1, 1, 2, 5, tzinfo=timezone(timedelta(hours=5))),
    ],
)
def test_postgresql_stores_every_date_the_door_accepts(probe, moment):
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO storable_probe (moment) VALUES (%s) RETURNING moment", [storable_datetime(moment, field="created_at")]
        )
        assert cursor.fetchone()[0] == moment


@pytest.mark.parametrize(
    "value",
    [
        pytest.param({"k": "a\x00b"}, id="a NUL in a string"),
        pytest.param({"k\x00": 1}, id="a NUL in a key"),
        pytest.param({"k": "\ud800"}, id="a lone surrogate"),
        pytest.param({"k": float("inf")}, id="infinity"),
        pytest.param({"k": float("nan")}, id="NaN"),
    ],
)
def test_what_the_door_refuses_postgresql_refuses_too(probe, value):
    refusal(storable_json, value, field="metadata")

    with pytest.raises((DataError, UnicodeEncodeError, ValueError)):
        stored_in_postgresql(json.dumps(value), json.dumps(value, ensure_ascii=False))


def test_the_door_bounds_depth_and_digits_where_postgresql_would_not():
    """Its own bounds, not PostgreSQL's: deeper JSON breaks Python's encoders and decoders further
    down, and a longer integer cannot be turned into text by Python at all."""
    with pytest.raises(ValueError, match="4300"):
        json.dumps(10**MAX_INT_DIGITS)
    with pytest.raises(RecursionError):
        json.loads("[" * 100_000 + "]" * 100_000)
    assert math.isfinite(json.loads("1e308"))
    assert not math.isfinite(json.loads("1e400"))

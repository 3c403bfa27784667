"""JSON written with ``core.jsonb.JsonbEncoder`` reads back from PostgreSQL's jsonb as the same Python
values of the same types: floats of 1e16 and more stay floats, -0.0 alone comes back 0.0."""

import json
from typing import Any

import pytest
from django.db import connection
from hypothesis import example, given

from core.jsonb import JsonbEncoder
from tests.hostile import storable_value
from tests.test_storable import DATABASE_PROPERTY

pytestmark = pytest.mark.django_db


def through_jsonb(value: Any) -> Any:
    """``value`` written with the encoder into a jsonb value and read back as Django reads a JSONField."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT %s::jsonb::text", [json.dumps(value, cls=JsonbEncoder)])
        return json.loads(cursor.fetchone()[0])


def typed(value: Any) -> Any:
    """``value`` with each number paired with its type (``1e16`` and ``10**16`` are equal in Python);
    -0.0 as the 0.0 jsonb keeps."""
    if isinstance(value, dict):
        return {name: typed(item) for name, item in value.items()}
    if isinstance(value, list | tuple):
        return [typed(item) for item in value]
    if isinstance(value, float):
        return (float, value + 0.0)  # -0.0 + 0.0 is 0.0
    if isinstance(value, int) and not isinstance(value, bool):
        return (int, int(value))
    return value


@given(value=storable_value)
@example(value={"big": 1e16, "bigger": -2.5e17, "largest": 1.7976931348623157e308, "smallest": 5e-324, "whole": 3.0})
@example(value=[2.0**53, 2.0**63, 2.0**64, 1e15 + 0.5, 1e-7, -0.0, 10**30])
@DATABASE_PROPERTY
def test_every_storable_value_reads_back_with_the_same_numbers_of_the_same_types(value: Any) -> None:
    assert typed(through_jsonb(value)) == typed(value)


@pytest.mark.parametrize(
    "text",
    ["1e+16", 'a "quoted" 1e+16', "ends with a backslash \\", '\\"1e+16\\"', "é 2.5e+17 ☃", "e+"],
)
def test_a_number_written_inside_a_string_is_left_as_it_is(text: str) -> None:
    value = {text: [text, 1e16, {"k": text}]}

    written = json.dumps(value, cls=JsonbEncoder)

    assert json.loads(written) == value
    assert "10000000000000000.0" in written


def test_floats_of_1e16_and_more_are_written_in_full_with_a_fraction_and_others_as_json_writes_them() -> None:
    written = json.dumps([1e16, -2.5e17, 3.0, 1e-7, 1e15 + 0.5, 7, 10**20], cls=JsonbEncoder)

    assert written == "[10000000000000000.0, -250000000000000000.0, 3.0, 1e-07, 1000000000000000.5, 7, 100000000000000000000]"

"""The API's JSON parser: DRF's own, with the nesting of a body bounded.

Python's JSON decoder recurses once per level: a body of a few thousand nested arrays exhausts the
stack (a RecursionError, answered 500), and one only a little shallower still breaks every later
``json.dumps`` (the size checks, the broker's serializer, the cache). A body nested deeper than
``MAX_JSON_DEPTH`` levels is refused with a 400 ``parse_error`` that says so, before any view sees it.
"""

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

# Levels of objects and arrays, the body itself being the first: the storable values' own bound.
from core.storable import MAX_JSON_DEPTH


def json_depth_exceeds(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects and arrays more than ``limit`` levels deep (a loop, not recursion)."""
    pending = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: dict[str, Any] | None = None) -> Any:
        too_deep = f"JSON parse error - the body is nested more than {MAX_JSON_DEPTH} levels deep; the limit is {MAX_JSON_DEPTH}."
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError as error:
            raise ParseError(too_deep) from error
        if isinstance(data, dict | list) and json_depth_exceeds(data, MAX_JSON_DEPTH):
            raise ParseError(too_deep)
        return data

"""JSON written into PostgreSQL's ``jsonb`` so that it reads back as the same Python values.

``jsonb`` keeps every number as ``numeric``, as written, and writes it back without an exponent.
Python writes a float of magnitude ``1e16`` or more with one (``1e+16``; every such float is a
whole number), which ``jsonb`` gives back as ``10000000000000000``: an ``int``, no longer the float
sent. ``JsonbEncoder`` writes those floats in full with a fraction instead
(``10000000000000000.0``), which ``jsonb`` keeps, so they come back as floats. Every other value is
written as ``json`` writes it (whole floats below ``1e16`` already carry their ``.0``).

One value ``numeric`` cannot hold remains: ``-0.0`` comes back as ``0.0`` (``numeric`` has no
negative zero).

Use it as the ``encoder`` of a model's ``JSONField`` (Django then writes the field's values and the
values of its lookups with it), or as ``cls`` of ``json.dumps`` for JSON sent to PostgreSQL as a
``jsonb`` parameter.
"""

import json
import re
from typing import Any

# A JSON string (left as it is) or a number with a positive exponent, outside any string.
_STRING_OR_EXPONENT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|-?\d+(?:\.\d+)?e\+\d+')


def _in_full(found: re.Match[str]) -> str:
    text = found.group()
    return text if text.startswith('"') else f"{int(float(text))}.0"


class JsonbEncoder(json.JSONEncoder):
    """``json``'s encoder, with floats of ``1e16`` and more written in full (``10000000000000000.0``)."""

    def encode(self, o: Any) -> str:
        text = super().encode(o)
        return _STRING_OR_EXPONENT.sub(_in_full, text) if "e+" in text else text

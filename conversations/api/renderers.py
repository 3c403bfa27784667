"""The API's JSON renderer: DRF's own, an answer already encoded passes as it is, and an answer that
echoes half a surrogate pair still renders.

An ``EncodedJSON`` answer is JSON text the view assembled from JSON it already had (the cached
messages of a window read), written without being decoded and encoded again.

A JSON body may carry an escaped lone surrogate (``"\\ud800"``); an error that quotes the value back
("... is not a valid choice") then holds a character UTF-8 cannot encode, and DRF's renderer, which
writes non-ASCII characters as they are, fails with a 500. Such an answer is written with every
non-ASCII character escaped instead, which is valid JSON for the same text.
"""

from dataclasses import dataclass
from typing import Any

from rest_framework import renderers


@dataclass(frozen=True)
class EncodedJSON:
    """An answer body already encoded as UTF-8 JSON."""

    body: bytes


class JSONRenderer(renderers.JSONRenderer):
    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: dict[str, Any] | None = None) -> bytes:
        if type(data) is EncodedJSON:
            return data.body
        try:
            return super().render(data, accepted_media_type, renderer_context)
        except UnicodeEncodeError:
            self.ensure_ascii = True  # this instance renders this one answer
            return super().render(data, accepted_media_type, renderer_context)

"""Content parts and artifacts: how a message's non-text content is taken in, kept and given back.

* **In**: a message's ``content`` is a string, null (assistant only) or a list of content parts, each
  a JSON object with a string ``type`` (OpenAI's ``{"type": "text", "text": ...}``,
  ``{"type": "image_url", ...}``, LangChain's and Anthropic's ``{"type": "image", ...}``,
  ``{"type": "tool_use", ...}``...), kept as opaque JSON. ``MEMORY_MAX_CONTENT_CHARS`` bounds the
  text of the parts and, separately, the characters of the parts' JSON.
  ``metadata.artifact`` is a tool result's structured output (LangChain's ``ToolMessage.artifact``),
  bounded by ``MEMORY_MAX_ARTIFACT_BYTES`` of JSON; ``MEMORY_MAX_METADATA_BYTES`` bounds the rest of
  the metadata. ``metadata.content_parts`` is the service's own: a message sending it is refused.
* **Kept**: ``content`` is the text of the text parts (what search, token counts, summaries and the
  admin read); the parts themselves are in ``metadata.content_parts``. Resending the same id with the
  same parts is the same message (200), with other parts a 409, as for text.
* **Out**: ``api_message`` gives a stored message as it was sent: ``content`` is the parts list when
  there were parts, and the metadata is without ``content_parts`` (the artifact stays, as sent).
"""

import json
from typing import Any

from django.conf import settings
from rest_framework import serializers

from core.exceptions import LimitExceeded
from core.storable import storable_json, storable_text
from memory_wire.messages import ARTIFACT_KEY, CONTENT_PARTS_KEY

_PARTS_MARKER = json.dumps(CONTENT_PARTS_KEY).encode()


def text_of(parts: list[dict[str, Any]]) -> str:
    """The text of the text parts, joined as LangChain's ``message.text`` joins them."""
    return "".join(part["text"] for part in parts if part.get("type") == "text" and isinstance(part.get("text"), str))


def checked_content(value: str | list[Any], *, field: str = "content") -> tuple[str, list[dict[str, Any]] | None]:
    """(the text to keep, the parts or None) of a storable ``content`` within MEMORY_MAX_CONTENT_CHARS."""
    if isinstance(value, str):
        _check_chars(len(value), field=field, what=f"{field} is {len(value)} characters")
        return storable_text(value, field=field), None
    for index, part in enumerate(value):
        if not isinstance(part, dict) or not isinstance(part.get("type"), str) or not part["type"]:
            raise serializers.ValidationError(
                f'{field}[{index}] is not a content part: send a JSON object with a string "type", '
                'e.g. {"type": "text", "text": "..."}.'
            )
    parts = storable_json(value, field=field)
    size = len(json.dumps(parts, separators=(",", ":"), ensure_ascii=False))
    _check_chars(size, field=field, what=f"{field} (its parts) is {size} characters of JSON")
    text = text_of(parts)
    _check_chars(len(text), field=field, what=f"The text of {field} is {len(text)} characters")
    return text, parts


def _check_chars(size: int, *, field: str, what: str) -> None:
    limit = settings.MEMORY_MAX_CONTENT_CHARS
    if size > limit:
        raise LimitExceeded(
            f"{what}; the limit is MEMORY_MAX_CONTENT_CHARS={limit}.",
            details={"field": field, "size": size, "limit": limit},
        )


def checked_message_metadata(value: dict[str, Any], *, field: str = "metadata") -> dict[str, Any]:
    """A message's storable metadata: ``artifact`` within MEMORY_MAX_ARTIFACT_BYTES, the rest within
    MEMORY_MAX_METADATA_BYTES, and no ``content_parts`` (the service's own key)."""
    if CONTENT_PARTS_KEY in value:
        raise serializers.ValidationError(
            {f"{field}.{CONTENT_PARTS_KEY}": "This key is the service's own: send the content parts as content (a list)."}
        )
    value = storable_json(value, field=field)
    rest = {name: item for name, item in value.items() if name != ARTIFACT_KEY}
    _check_bytes(rest, field=field, setting="MEMORY_MAX_METADATA_BYTES", note=" (without artifact)")
    if ARTIFACT_KEY in value:
        _check_bytes(value[ARTIFACT_KEY], field=f"{field}.{ARTIFACT_KEY}", setting="MEMORY_MAX_ARTIFACT_BYTES")
    return value


def _check_bytes(value: Any, *, field: str, setting: str, note: str = "") -> None:
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())
    limit = getattr(settings, setting)
    if size > limit:
        raise LimitExceeded(
            f"{field}{note} is {size} bytes of JSON; the limit is {setting}={limit}.",
            details={"field": field, "size": size, "limit": limit},
        )


def with_parts(metadata: dict[str, Any], parts: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The metadata to keep for a message whose content had ``parts``."""
    return metadata if parts is None else {**metadata, CONTENT_PARTS_KEY: parts}


# --- Out ------------------------------------------------------------------------------------------


def api_message(message: dict[str, Any]) -> dict[str, Any]:
    """A stored message as the API gives it back: ``content`` as it was sent (the parts when there
    were some), metadata without ``content_parts``."""
    metadata = message.get("metadata")
    if not isinstance(metadata, dict) or not isinstance(metadata.get(CONTENT_PARTS_KEY), list):
        return message
    kept = {name: value for name, value in metadata.items() if name != CONTENT_PARTS_KEY}
    return {**message, "content": metadata[CONTENT_PARTS_KEY], "metadata": kept}


def may_have_parts(element: bytes) -> bool:
    """Whether a cached message's JSON may hold content parts (False: it is given back as it is)."""
    return _PARTS_MARKER in element

"""Interim door (replaced by the full module): storable values for the write path."""

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from conversations.exceptions import Unstorable

MAX_JSON_DEPTH = 100
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def storable_text(value: Any, *, field: str) -> str:
    if not isinstance(value, str):
        raise Unstorable(f"{field} must be a string.", details={"field": field, "reason": "is not a string"})
    if _UNSTORABLE.search(value):
        raise Unstorable(
            f"{field} must not contain NUL characters or unpaired UTF-16 surrogates.",
            details={"field": field, "reason": "contains a NUL character or an unpaired surrogate"},
        )
    return value


def storable_json(value: Any, *, field: str) -> Any:
    pending = [(value, field, 1)]
    while pending:
        item, path, depth = pending.pop()
        if depth > MAX_JSON_DEPTH:
            raise Unstorable(f"{path} nests more than {MAX_JSON_DEPTH} levels.", details={"field": path, "reason": "too deep"})
        if isinstance(item, str):
            storable_text(item, field=path)
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                raise Unstorable(f"{path} is not a finite number.", details={"field": path, "reason": "is not a finite number"})
        elif isinstance(item, int):
            continue
        elif isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise Unstorable(f"{path} has a non-string key.", details={"field": path, "reason": "has a non-string key"})
                storable_text(key, field=f"{path}.{key}")
                pending.append((child, f"{path}.{key}", depth + 1))
        elif isinstance(item, list | tuple):
            pending.extend((child, f"{path}[{index}]", depth + 1) for index, child in enumerate(item))
        else:
            raise Unstorable(f"{path} is not a JSON value.", details={"field": path, "reason": "is not a JSON value"})
    return value


def storable_datetime(value: datetime, *, field: str) -> datetime:
    if value.tzinfo is None:
        raise Unstorable(f"{field} needs a time zone.", details={"field": field, "reason": "has no time zone"})
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise Unstorable(f"{field} is out of range.", details={"field": field, "reason": "is out of range"}) from None


def cleaned_text(value: str) -> str:
    return _UNSTORABLE.sub(lambda match: "" if match.group() == "\x00" else "\ufffd", value)


RECORDED_AS_TEXT = "json"
IDENTITY_FIELDS = ("tenant_id", "tenant_slug", "conversation_id", "user_id", "agent_id")


def recordable(value: Any) -> tuple[Any, bool]:
    """``value`` as a dead letter can keep it: itself if storable, else (with True) its JSON text
    under ``RECORDED_AS_TEXT`` beside the storable ids that name its tenant and conversation."""
    try:
        return storable_json(value, field="payload"), False
    except Unstorable:
        pass
    kept: dict[str, Any] = {}
    if isinstance(value, dict):
        for name in IDENTITY_FIELDS:
            try:
                kept[name] = storable_json(value[name], field=name)
            except (KeyError, Unstorable):
                continue
    kept[RECORDED_AS_TEXT] = json.dumps(value, ensure_ascii=True, allow_nan=True, default=repr)
    return kept, True

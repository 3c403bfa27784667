"""Search filters: which messages a search may rank, decided before it ranks.

Contract
--------
``SearchFilters`` narrows a search's scope; every field left empty narrows nothing. Fields combine
with AND, the values of one list with OR:

* ``start_date`` / ``end_date``: the message's ``created_at``, both ends included (as the message
  list's filters of the same names);
* ``roles``: ``user`` and/or ``assistant`` (the only roles searched);
* ``names``: the message's ``name`` (its metadata ``name``, else ``metadata.langchain.data.name``,
  as the context renders it), matched exactly;
* ``agent_ids`` / ``conversation_ids``: the conversation's ``agent_id`` / ``conversation_id``,
  within the scope the search already has: they never add a conversation to it;
* ``metadata``: top-level keys of the message's metadata (a key with a dot is one key, not a path),
  each with the JSON values it may equal (a value, or ``{"in": [...]}``); a missing key matches
  nothing; numbers compare as numbers (1 equals 1.0).

``search_filters(...)`` builds one from request values and refuses what is out of bounds
(``LimitExceeded`` naming the field and the bound) or malformed (``InvalidFilter``).
``MESSAGE_FILTERS_SQL`` is the same predicate for PostgreSQL, on a ``conversation_messages`` row
aliased ``m``, with the parameters ``SearchFilters.sql_parameters()`` answers; PostgreSQL folds away
the conditions of empty fields, so an unfiltered search plans as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from core.exceptions import LimitExceeded, MemoryServiceError
from core.storable import storable_datetime, storable_json, storable_text

SEARCHED_ROLES = ("user", "assistant")
# Bounds of one search's filters: values in one list, metadata keys, characters of one string.
MAX_FILTER_VALUES = 50
MAX_METADATA_KEYS = 10
MAX_FILTER_CHARS = 200
LISTS = ("role", "name", "agent_id", "conversation_id")


class InvalidFilter(MemoryServiceError):
    code = "validation_error"
    status = 400


@dataclass(frozen=True)
class SearchFilters:
    start_date: datetime | None = None
    end_date: datetime | None = None
    roles: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    agent_ids: tuple[str, ...] = ()
    conversation_ids: tuple[str, ...] = ()
    # key -> the JSON values it may equal
    metadata: dict[str, list[Any]] = field(default_factory=dict)

    @property
    def narrows_conversations(self) -> bool:
        return bool(self.agent_ids or self.conversation_ids)

    @property
    def narrows_messages(self) -> bool:
        return bool(self.start_date or self.end_date or self.roles or self.names or self.metadata)

    def sql_parameters(self) -> dict[str, Any]:
        return {
            "start_date": self.start_date,
            "end_date": self.end_date,
            "roles": list(self.roles) or None,
            "names": list(self.names) or None,
            "metadata": json.dumps(self.metadata) if self.metadata else None,
        }


NO_FILTERS = SearchFilters()

# The message's name exactly as ``conversations.context._name_of`` reads it.
_NAME_SQL = """CASE
        WHEN jsonb_typeof(m.metadata -> 'name') = 'string' AND m.metadata ->> 'name' <> '' THEN m.metadata ->> 'name'
        WHEN jsonb_typeof(m.metadata #> '{langchain,data,name}') = 'string'
             AND m.metadata #>> '{langchain,data,name}' <> '' THEN m.metadata #>> '{langchain,data,name}'
    END"""
MESSAGE_FILTERS_SQL = f"""
    AND (%(start_date)s::timestamptz IS NULL OR m.created_at >= %(start_date)s::timestamptz)
    AND (%(end_date)s::timestamptz IS NULL OR m.created_at <= %(end_date)s::timestamptz)
    AND (%(roles)s::text[] IS NULL OR m.role = ANY(%(roles)s::text[]))
    AND (%(names)s::text[] IS NULL OR {_NAME_SQL} = ANY(%(names)s::text[]))
    AND (%(metadata)s::jsonb IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(%(metadata)s::jsonb) AS wanted(key, allowed)
        WHERE NOT EXISTS (
            SELECT 1 FROM jsonb_array_elements(wanted.allowed) AS candidate(value)
            WHERE candidate.value = m.metadata -> wanted.key
        )
    ))
"""  # noqa: S608 (constant parts only; the values are query parameters)


def search_filters(
    *,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
    role: list[str] | None = None,
    name: list[str] | None = None,
    agent_id: list[str] | None = None,
    conversation_id: list[str] | None = None,
    metadata: Any = None,
) -> SearchFilters:
    """The filters of a request's values (named as the API names them), every bound checked."""
    start_date = storable_datetime(start_date, field="start_date") if start_date else None
    end_date = storable_datetime(end_date, field="end_date") if end_date else None
    if start_date and end_date and start_date > end_date:
        raise InvalidFilter("start_date is after end_date.", details={"field": "start_date"})
    lists = {"role": role, "name": name, "agent_id": agent_id, "conversation_id": conversation_id}
    for list_name, values in lists.items():
        _check_values(list_name, values or [])
    for value in role or []:
        if value not in SEARCHED_ROLES:
            raise InvalidFilter(f"role {value!r} is not searched: use {' or '.join(SEARCHED_ROLES)}.", details={"field": "role"})
    return SearchFilters(
        start_date=start_date,
        end_date=end_date,
        roles=_unique(role),
        names=_unique(name),
        agent_ids=_unique(agent_id),
        conversation_ids=_unique(conversation_id),
        metadata=_metadata(metadata),
    )


def _unique(values: list[str] | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values or []))


def _check_values(field_name: str, values: list[Any]) -> None:
    check_count(field_name, len(values), MAX_FILTER_VALUES)
    for value in values:
        _check_chars(field_name, value)
        storable_text(value, field=field_name)


def check_count(field_name: str, size: int, limit: int) -> None:
    if size > limit:
        raise LimitExceeded(
            f"{field_name} has {size} values; the limit is {limit}.",
            details={"field": field_name, "size": size, "limit": limit},
        )


def _check_chars(field_name: str, value: Any) -> None:
    if isinstance(value, str) and len(value) > MAX_FILTER_CHARS:
        raise LimitExceeded(
            f"A value of {field_name} is {len(value)} characters; the limit is {MAX_FILTER_CHARS}.",
            details={"field": field_name, "size": len(value), "limit": MAX_FILTER_CHARS},
        )


def _metadata(given: Any) -> dict[str, list[Any]]:
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise InvalidFilter(
            'metadata must be a JSON object: {"key": value} or {"key": {"in": [values]}}.', details={"field": "metadata"}
        )
    if len(given) > MAX_METADATA_KEYS:
        raise LimitExceeded(
            f"metadata has {len(given)} keys; the limit is {MAX_METADATA_KEYS}.",
            details={"field": "metadata", "size": len(given), "limit": MAX_METADATA_KEYS},
        )
    given = storable_json(given, field="metadata")  # no NUL, no lone surrogate, finite numbers
    wanted = {}
    for key, condition in given.items():
        path = f"metadata.{key}"
        _check_chars("metadata", key)
        if isinstance(condition, dict):
            if set(condition) != {"in"} or not isinstance(condition["in"], list) or not condition["in"]:
                raise InvalidFilter(
                    f'{path} must be a value or {{"in": [values]}} with at least one value.', details={"field": path}
                )
            values = condition["in"]
            check_count(path, len(values), MAX_FILTER_VALUES)
        else:
            values = [condition]
        for value in values:
            if isinstance(value, dict | list):
                raise InvalidFilter(
                    f"{path} compares with strings, numbers, booleans or null, not objects or lists.", details={"field": path}
                )
            _check_chars(path, value)
        wanted[key] = values
    return wanted

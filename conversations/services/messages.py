"""The message shape: the one JSON form of a message (in the cache, the task payload and the
API), how two messages compare, and the window's rows read from PostgreSQL in that shape.

Every other stage builds on these; nothing here writes.
"""

import functools
import json
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import psycopg
import structlog
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from conversations.models import Message
from core.replica import read_connection
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


MESSAGE_COLUMNS = ("message_id", "seq", "role", "content", "metadata", "created_at", "token_count")


def message_from_values(values: dict[str, Any]) -> dict[str, Any]:
    """The message's JSON shape from its columns, as ``.values(*MESSAGE_COLUMNS)`` reads them (no model
    instance: faster for a page of rows). ``conversation_messages`` builds the same shape from its
    statement's rows (a test holds the two equal)."""
    return {
        "id": str(values["message_id"]),
        "seq": values["seq"],
        "role": values["role"],
        "content": values["content"],
        "metadata": values["metadata"],
        "created_at": values["created_at"].astimezone(UTC).isoformat(),
        "token_count": values["token_count"],
    }


def message_to_dict(message: Message) -> dict[str, Any]:
    """The one JSON shape of a message, in the cache, the task payload and the API."""
    return message_from_values({column: getattr(message, column) for column in MESSAGE_COLUMNS})


# The newest messages of a conversation named by its id, in one statement that reads the window index
# in order: the conversation's pk is a scalar subquery (a join would make PostgreSQL sort every message
# of the conversation to return the newest 50). Both parts are scoped by tenant_id, as ``for_tenant``
# scopes the ORM's queries. A constant statement (``{filters}`` is one of a few fixed clauses): a cold
# window read builds no query. ``created_at`` comes as microseconds since the epoch: the timestamp
# loader Django installs runs in Python and cost more than the rest of the row.
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


_MESSAGE_ROWS_SQL = """
    SELECT message_id::text, seq, role, content, metadata::text, (extract(epoch FROM created_at) * 1000000)::bigint,
        token_count
    FROM conversation_messages
    WHERE tenant_id = %s
        AND conversation_id = (
            SELECT id FROM conversation_memories WHERE tenant_id = %s AND conversation_id = %s LIMIT 1
        )"""
CONVERSATION_MESSAGES_SQL = (
    _MESSAGE_ROWS_SQL
    + """{filters}
    ORDER BY seq DESC
    LIMIT %s
"""
)


def conversation_messages(
    *,
    tenant: Tenant,
    conversation_id: str,
    limit: int,
    include_archived: bool = False,
    role: str | None = None,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
) -> list[dict[str, Any]]:
    """The newest ``limit`` messages of a conversation (archived ones only with ``include_archived``;
    of ``role``, created between ``start_date`` and ``end_date`` when given), oldest first, in the
    shape of ``message_from_values``. Raises DatabaseError."""
    filters = "" if include_archived else " AND NOT archived"
    parameters: list[Any] = [tenant.pk, tenant.pk, conversation_id]
    if role:
        filters += " AND role = %s"
        parameters.append(role)
    if start_date:
        filters += " AND created_at >= %s"
        parameters.append(start_date)
    if end_date:
        filters += " AND created_at <= %s"
        parameters.append(end_date)
    parameters.append(limit)
    # The primary, or the replica inside a cold window's stale read (core/replica.py).
    rows = _fetch_prepared(read_connection(), CONVERSATION_MESSAGES_SQL.format(filters=filters), parameters)
    rows.reverse()
    return [_row_message(row) for row in rows]


# A conversation's messages with these ids, archived or not: the write path's lookup of client ids the
# ledger does not hold, on every append that brings new ones. Constant and prepared, as the window's.
STORED_MESSAGES_SQL = (
    _MESSAGE_ROWS_SQL
    + """
        AND message_id = ANY(%s::uuid[])
"""
)


def stored_messages(*, tenant: Tenant, conversation_id: str, message_ids: list[str]) -> dict[str, dict[str, Any]]:
    """This conversation's rows with these ids, by id, in the shape of ``message_from_values``; read
    from the primary (never a replica: whether an id is stored decides whether it is stored again).
    Raises DatabaseError."""
    rows = _fetch_prepared(
        connections[DEFAULT_DB_ALIAS], STORED_MESSAGES_SQL, [tenant.pk, tenant.pk, conversation_id, message_ids]
    )
    return {row[0]: _row_message(row) for row in rows}


def _row_message(row: tuple[Any, ...]) -> dict[str, Any]:
    message_id, seq, role, content, metadata, created_at, token_count = row
    return {
        "id": message_id,
        "seq": seq,
        "role": role,
        "content": content,
        "metadata": {} if metadata == "{}" else json.loads(metadata),
        "created_at": (_EPOCH + timedelta(microseconds=created_at)).isoformat(),
        "token_count": token_count,
    }


_PREPARE_THRESHOLD = 5  # psycopg's default: a statement run this many times on a connection is prepared


def _fetch_prepared(connection: BaseDatabaseWrapper, sql: str, parameters: list[Any]) -> list[tuple[Any, ...]]:
    """The rows of a constant statement, prepared on the connection (``MEMORY_DB_PREPARE``): sent with
    its parameters apart, and planned once per connection. Django's own cursors bind parameters into
    the text on the client and PostgreSQL plans the text at every read: a quarter of a millisecond for
    the window's statement, as long as the read itself. Errors are Django's (DatabaseError).

    The connection is opened as Django's own cursors open it: first its health check
    (``CONN_HEALTH_CHECKS``, once per request), so a persistent connection that PostgreSQL dropped
    (a restart, a failover) is replaced, not used to fail the request."""
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    if settings.MEMORY_DB_PREPARE and connection.connection.prepare_threshold is None:
        # Django opens its connections with preparing off (None), which psycopg applies to every
        # cursor, even one that asks to prepare. Django's cursors bind on the client and never
        # prepare, whatever this says: only the statements sent from here are prepared.
        connection.connection.prepare_threshold = _PREPARE_THRESHOLD
    with connection.wrap_database_errors, psycopg.Cursor(connection.connection) as cursor:

        def execute(sql: str, parameters: Any, many: bool, context: dict[str, Any]) -> Any:
            return cursor.execute(sql, parameters, prepare=settings.MEMORY_DB_PREPARE)

        # The connection's execute wrappers (``connection.execute_wrapper``: instrumentation, query
        # logs) see this statement as they see every statement Django sends.
        for wrapper in reversed(connection.execute_wrappers):
            execute = functools.partial(wrapper, execute)
        execute(sql, parameters, False, {"connection": connection, "cursor": cursor})
        return cursor.fetchall()


def _same_message(stored: dict[str, Any], new: dict[str, Any]) -> bool:
    return (
        stored["role"] == new["role"]
        and stored["content"] == new["content"]
        and same_json(stored.get("metadata", {}), new.get("metadata", {}))
    )


def same_json(left: Any, right: Any) -> bool:
    """Whether two JSON values are equal as PostgreSQL's jsonb compares them: numbers by value
    (jsonb gives ``1e23`` back as ``100000000000000000000000``, an int Python holds unequal to the float)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return Decimal(repr(left) if isinstance(left, float) else left) == Decimal(
            repr(right) if isinstance(right, float) else right
        )
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_json(left[name], right[name]) for name in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same_json(a, b) for a, b in zip(left, right, strict=True))
    return type(left) is type(right) and left == right


def _now_microseconds() -> int:
    return time.time_ns() // 1000

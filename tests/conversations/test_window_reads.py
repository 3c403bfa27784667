"""The rows a window read takes from PostgreSQL (``services.conversation_messages``, one constant
statement) and the window built from them: the same messages, in the same JSON shape, as the ORM's
``message_to_dict`` gives, whether the window comes from the cache, from a cold read's rebuild or
from PostgreSQL with Redis down; and never a row of another tenant.
"""

import uuid
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from conversations import cache, selectors, services
from conversations.models import Conversation, Message
from tests.factories import TenantFactory
from tests.interleavings import append, drop_list, ids

EAST = timezone(timedelta(hours=5, minutes=30))


def stored_conversation(tenant: Any, conversation_id: str, messages: list[dict[str, Any]]) -> Conversation:
    """A persisted conversation whose messages are given field by field (seq, role, created_at, ...)."""
    conversation = Conversation.objects.for_tenant(tenant).create(tenant=tenant, conversation_id=conversation_id)
    Message.objects.for_tenant(tenant).bulk_create(
        Message(
            tenant=tenant,
            conversation=conversation,
            **{
                "content": f"message {fields['seq']}",
                "role": "user",
                "created_at": datetime(2025, 3, 1, 12, 0, tzinfo=UTC) + timedelta(minutes=fields["seq"]),
                **fields,
            },
        )
        for fields in messages
    )
    return conversation


def orm_messages(tenant: Any, conversation_id: str, **filters: Any) -> list[dict[str, Any]]:
    rows = Message.objects.for_tenant(tenant).filter(conversation__conversation_id=conversation_id, **filters).order_by("seq")
    return [services.message_to_dict(row) for row in rows]


@pytest.fixture
def varied(tenant: Any) -> Conversation:
    """Messages that differ in every way the JSON shape has to render: nested metadata with unsorted
    keys, timestamps with and without microseconds (one written in another time zone), every role,
    archived ones."""
    return stored_conversation(
        tenant,
        "c1",
        [
            {"seq": 1, "metadata": {"zeta": 1, "alpha": {"b": [1.5, None, True], "a": "é"}}},
            {"seq": 2, "role": "assistant", "created_at": datetime(2025, 3, 1, 12, 0, 0, 0, tzinfo=UTC)},
            {"seq": 3, "role": "tool", "created_at": datetime(2025, 3, 1, 18, 0, 0, 123456, tzinfo=EAST)},
            {"seq": 4, "archived": True},
            {"seq": 5, "role": "system", "content": 'quotes " and\nnewlines', "token_count": 7},
            {"seq": 6, "metadata": {"source": "import"}, "created_at": datetime(2025, 3, 2, 0, 0, 0, 1, tzinfo=UTC)},
        ],
    )


def test_the_rows_of_a_window_are_the_orm_messages_in_the_same_shape_oldest_first(tenant, varied):
    assert services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50) == orm_messages(
        tenant, "c1", archived=False
    )
    assert services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50, include_archived=True) == (
        orm_messages(tenant, "c1")
    )


def test_the_write_paths_lookup_by_id_answers_the_orm_messages_archived_or_not_of_that_conversation_only(tenant, varied):
    from conversations.services.messages import stored_messages

    expected = {message["id"]: message for message in orm_messages(tenant, "c1")}
    other = stored_conversation(tenant, "c2", [{"seq": 1}])
    other_id = str(Message.objects.for_tenant(tenant).get(conversation=other).message_id)

    found = stored_messages(tenant=tenant, conversation_id="c1", message_ids=[*expected, other_id, str(uuid.uuid4())])

    assert found == expected  # every field in the same shape, the archived one too; c2's id is not c1's
    assert stored_messages(tenant=tenant, conversation_id="unknown", message_ids=list(expected)) == {}
    stranger = TenantFactory(slug="stranger")
    stored_conversation(stranger, "c1", [{"seq": 1}])
    assert stored_messages(tenant=stranger, conversation_id="c1", message_ids=list(expected)) == {}  # acme's ids
    assert stored_messages(tenant=tenant, conversation_id="c1", message_ids=[]) == {}


def test_the_rows_of_a_window_are_the_newest_limit_of_those_the_filters_match(tenant, varied):
    def read(**filters: Any) -> list[int]:
        return [m["seq"] for m in services.conversation_messages(tenant=tenant, conversation_id="c1", **filters)]

    assert read(limit=2) == [5, 6]
    assert read(limit=2, include_archived=True) == [5, 6]
    assert read(limit=3, include_archived=True) == [4, 5, 6]
    assert read(limit=50, role="user") == [1, 6]
    assert read(limit=50, role="user", include_archived=True) == [1, 4, 6]
    assert read(limit=50, start_date=datetime(2025, 3, 1, 12, 3, tzinfo=UTC)) == [3, 5, 6]  # 3 is at 12:30 UTC
    assert read(limit=50, end_date=datetime(2025, 3, 1, 12, 2, tzinfo=UTC)) == [1, 2]
    assert read(
        limit=1, start_date=datetime(2025, 3, 1, 12, 1, tzinfo=UTC), end_date=datetime(2025, 3, 1, 12, 5, tzinfo=UTC)
    ) == [5]


def test_the_rows_of_a_window_never_include_another_tenants_conversation_of_the_same_id(tenant, other_tenant, varied):
    stored_conversation(other_tenant, "c1", [{"seq": 100}, {"seq": 200}])
    stored_conversation(other_tenant, "theirs", [{"seq": 300}])

    assert [m["seq"] for m in services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50)] == [1, 2, 3, 5, 6]
    assert [m["seq"] for m in services.conversation_messages(tenant=other_tenant, conversation_id="c1", limit=50)] == [100, 200]
    assert services.conversation_messages(tenant=tenant, conversation_id="theirs", limit=50) == []


def window(tenant: Any, conversation_id: str, **query: Any) -> selectors.Window:
    return selectors.conversation_window(
        tenant=tenant, conversation_id=conversation_id, query=selectors.WindowQuery(limit=query.pop("limit", 50), **query)
    )


def test_a_window_is_the_same_cold_cached_and_with_redis_down(tenant, varied):
    cold = window(tenant, "c1")
    cached = window(tenant, "c1")
    down = selectors._window_from_database(
        tenant=tenant, conversation_id="c1", query=selectors.WindowQuery(limit=50), with_pending=False
    )

    assert (cold.source, cached.source, down.source) == ("rebuild", "cache", "database")
    assert cold.messages == cached.messages == down.messages == orm_messages(tenant, "c1", archived=False)


def test_a_cold_window_read_merges_the_pending_writes_whoever_rebuilds(tenant, no_worker):
    stored_conversation(tenant, "c1", [{"seq": 1}, {"seq": 2}])
    pending = append(tenant, "c1", "acknowledged, not persisted yet")
    drop_list(tenant, "c1")

    cold = window(tenant, "c1")
    drop_list(tenant, "c1")
    cache.client().set(cache.key(tenant.slug, "c1", "rebuild"), "another reader", ex=30)
    while_another_rebuilds = window(tenant, "c1")

    assert cold.source == "rebuild"
    assert while_another_rebuilds.source == "database"
    assert ids(cold.messages) == ids(while_another_rebuilds.messages) == [*ids(orm_messages(tenant, "c1")), pending["id"]]


@pytest.mark.parametrize("query", ["", "?limit=2", "?limit=2&skip=1", "?limit=50&skip=4", "?role=user"], ids=str)
def test_the_api_answers_the_same_document_from_the_cached_json_as_from_postgresql(api, tenant, varied, query, monkeypatch):
    # A cached, unfiltered page is sent as the JSON the cache holds (no decode, no encode); the
    # answer must be the document the serialised messages make: same members, same values, valid JSON.
    url = f"/api/v1/conversations/c1/messages/{query}"
    api.get(url)  # the cold read caches the list
    cached = api.get(url)
    monkeypatch.setattr(cache, "window_or_rebuild_lock", _redis_down)
    down = api.get(url)

    assert (cached.status_code, down.status_code) == (200, 200)
    assert cached["Content-Type"] == down["Content-Type"] == "application/json"
    assert (cached.json()["source"], down.json()["source"]) == ("cache", "database")
    assert {**cached.json(), "source": None} == {**down.json(), "source": None}
    assert all(message["conversation_id"] == "c1" for message in cached.json()["messages"])


def _redis_down(**_: Any) -> None:
    raise cache.CacheUnavailable("window: Connection refused")


@pytest.mark.django_db(transaction=True)
def test_the_window_statement_is_prepared_on_the_connection_and_not_when_turned_off(tenant, varied, settings):
    from django.db import connection

    def prepared() -> int:
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE '%%FROM conversation_messages%%'")
            return cursor.fetchone()[0]

    expected = orm_messages(tenant, "c1", archived=False)
    assert services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50) == expected
    assert prepared() == 1
    assert services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50) == expected
    assert prepared() == 1  # planned once, run again

    connection.close()
    settings.MEMORY_DB_PREPARE = False
    assert services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50) == expected
    assert prepared() == 0


def test_a_cold_read_on_a_connection_postgresql_dropped_reconnects_instead_of_failing(tenant, varied, transactional_db):
    """A web thread's persistent connection dies with a PostgreSQL restart; its next request's cold
    read is answered on a new connection (Django's health check, as its own cursors run it), not 503."""
    import psycopg
    from django.db import connection

    assert connection.settings_dict["CONN_MAX_AGE"] != 0
    assert connection.settings_dict["CONN_HEALTH_CHECKS"]
    expected = orm_messages(tenant, "c1", archived=False)
    assert services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50) == expected
    dropped = connection.connection.info.backend_pid
    params = {
        key: value for key, value in connection.get_connection_params().items() if key in ("dbname", "host", "port", "user")
    }
    with psycopg.connect(**params, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [dropped])
    connection.close_if_unusable_or_obsolete()  # what every request begins with (request_started)

    assert services.conversation_messages(tenant=tenant, conversation_id="c1", limit=50) == expected
    assert connection.connection.info.backend_pid != dropped

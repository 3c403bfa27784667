"""Messages and vectors partitioned by a hash of the tenant (``conversations.partitioning``): the
catalogue holds the scheme, a tenant's queries read one partition, the composite foreign key deletes
a message's vectors and refuses a vector of another tenant's message, and the migration converts
tables holding rows both ways, keeping every row and the id sequence."""

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor

from conversations import partitioning, services
from conversations.models import Conversation, Message
from conversations.services.messages import CONVERSATION_MESSAGES_SQL
from search import services as search_services
from search.models import MessageEmbedding
from tests.factories import TenantFactory

TABLES = ("conversation_messages", "message_embeddings")


def conversation_with_messages(tenant: Any, conversation_id: str, count: int) -> Conversation:
    conversation = Conversation.objects.for_tenant(tenant).create(tenant=tenant, conversation_id=conversation_id)
    Message.objects.for_tenant(tenant).bulk_create(
        Message(
            tenant=tenant,
            conversation=conversation,
            seq=seq,
            role="user" if seq % 2 else "assistant",
            content=f"message {seq} of {conversation_id}",
            created_at=datetime(2025, 3, 1, tzinfo=UTC),
        )
        for seq in range(1, count + 1)
    )
    return conversation


def vector_of(message: Message, *, tenant: Any = None) -> MessageEmbedding:
    return MessageEmbedding.unscoped.create(
        tenant=tenant or message.tenant,
        conversation_id=message.conversation_id,
        message_id=message.pk,
        seq=message.seq,
        model="test-model",
        dimensions=1,
        vector=b"\x00\x00\x80?",
    )


def partitions_in_plan(sql: str, parameters: list[Any]) -> set[str]:
    """The partitions of the two tables a statement's plan reads (pruning at plan time drops the others)."""
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + sql, parameters)
        plan = cursor.fetchone()[0]
    plan = json.loads(plan) if isinstance(plan, str) else plan
    found: set[str] = set()

    def walk(node: dict[str, Any]) -> None:
        if node.get("Relation Name", "").startswith(TABLES):
            found.add(node["Relation Name"])
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    return found


@pytest.mark.django_db
def test_messages_and_vectors_are_hash_partitioned_by_tenant_with_the_tenant_in_every_key():
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute("SELECT pg_get_partkeydef(%s::regclass)", [table])
            assert cursor.fetchone()[0] == "HASH (tenant_id)"
            with connection.cursor() as inner:
                assert len(partitioning.table_partitions(inner, table)) == partitioning.PARTITIONS
            cursor.execute(
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint"
                " WHERE conrelid = %s::regclass AND contype IN ('p', 'u')",
                [table],
            )
            keys = dict(cursor.fetchall())
            assert keys[f"{table}_pkey"] == "PRIMARY KEY (id, tenant_id)"
            assert all("tenant_id" in definition for definition in keys.values()), keys
        cursor.execute(
            "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = %s AND conparentid = 0",
            [partitioning.VECTOR_TO_MESSAGE],
        )
        assert cursor.fetchone()[0] == (
            "FOREIGN KEY (message_id, tenant_id) REFERENCES conversation_messages(id, tenant_id)"
            " ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED"
        )


@pytest.mark.django_db
def test_a_tenants_window_read_and_vector_backfill_read_one_partition_of_each_table(tenant, other_tenant):
    conversation_with_messages(tenant, "c1", 5)
    conversation_with_messages(other_tenant, "c1", 5)

    window = partitions_in_plan(CONVERSATION_MESSAGES_SQL.format(filters=" AND NOT archived"), [tenant.pk, tenant.pk, "c1", 50])
    missing = search_services._missing(tenant=tenant, model="test-model")
    sql, parameters = missing.query.sql_with_params()
    backfill = partitions_in_plan(sql, list(parameters))

    assert len(window) == 1
    assert {name.split("_p")[0] for name in backfill} == set(TABLES)
    assert len(backfill) == 2  # one partition of the messages, one of the vectors


@pytest.mark.django_db(transaction=True)
def test_deleting_messages_deletes_their_vectors_and_no_vector_can_name_another_tenants_message(tenant, other_tenant):
    conversation_with_messages(tenant, "c1", 3)
    theirs = conversation_with_messages(other_tenant, "c1", 1)
    first, second, third = Message.objects.for_tenant(tenant).order_by("seq")
    for message in (first, second, third):
        vector_of(message)

    Message.objects.for_tenant(tenant).filter(pk=first.pk).delete()
    assert set(MessageEmbedding.objects.for_tenant(tenant).values_list("message_id", flat=True)) == {second.pk, third.pk}
    services.conversation_erase(tenant=tenant, conversation_id="c1")
    assert not MessageEmbedding.objects.for_tenant(tenant).exists()

    their_message = Message.objects.for_tenant(other_tenant).get(conversation=theirs)
    with pytest.raises(IntegrityError), transaction.atomic():
        vector_of(their_message, tenant=tenant)  # tenant acme's vector of globex's message
    assert not MessageEmbedding.objects.for_tenant(tenant).exists()


def migrate(targets: list[tuple[str, str]]) -> None:
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)


@pytest.mark.django_db(transaction=True)
def test_the_migration_converts_tables_holding_rows_both_ways_and_keeps_every_row_and_the_id_sequence():
    tenants = [TenantFactory(slug=f"tenant-{number}") for number in range(5)]
    for tenant in tenants:
        conversation_with_messages(tenant, "c1", 7)
    for message in Message.unscoped.all():
        vector_of(message)
    with connection.cursor() as cursor:
        cursor.execute("SELECT id, tenant_id, conversation_id, seq, content FROM conversation_messages ORDER BY id")
        rows = cursor.fetchall()
        cursor.execute("SELECT id, message_id FROM message_embeddings ORDER BY id")
        vectors = cursor.fetchall()
    # Back to every app's newest migration, the apps that depend on these included: migrating them
    # back unapplied those apps' migrations too.
    latest = MigrationExecutor(connection).loader.graph.leaf_nodes()

    def stored() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], int]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT id, tenant_id, conversation_id, seq, content FROM conversation_messages ORDER BY id")
            messages = cursor.fetchall()
            cursor.execute("SELECT id, message_id FROM message_embeddings ORDER BY id")
            embedded = cursor.fetchall()
            cursor.execute("SELECT last_value FROM conversation_messages_id_seq")
            return messages, embedded, cursor.fetchone()[0]

    try:
        migrate([("search", "0001_initial"), ("conversations", "0008_message_terms_speaker")])
        with connection.cursor() as cursor:
            assert partitioning.table_partitions(cursor, "conversation_messages") == []
            cursor.execute("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = 'conversation_messages_pkey'")
            assert cursor.fetchone()[0] == "PRIMARY KEY (id)"
        assert stored() == (rows, vectors, rows[-1][0])
        # The vectors' foreign key to the plain table is back: deleting a message with vectors is refused.
        with pytest.raises(IntegrityError), transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("DELETE FROM conversation_messages WHERE id = %s", [rows[0][0]])
    finally:
        migrate(latest)
    assert stored() == (rows, vectors, rows[-1][0])
    fresh = conversation_with_messages(tenants[0], "c2", 1)
    assert Message.objects.for_tenant(tenants[0]).get(conversation=fresh).pk == rows[-1][0] + 1

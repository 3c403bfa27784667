"""The benchmark's store: one database per layout of ``conversation_messages``, filled in SQL.

Layouts (``LAYOUTS``):

* ``unpartitioned``: the table as it was before ``conversations`` 0009 (the migrations up to 0008);
* ``hash16``: the service's own, every migration applied (``HASH (tenant_id)``, 16 partitions);
* ``hash64``: the same scheme with 64 partitions, for comparison.

``store_ensure`` loads ``messages`` rows with ``INSERT ... SELECT generate_series`` (no Python in
the loop): ``tenants`` tenants whose sizes are skewed (a few hold most of the conversations),
conversations whose sizes are log-uniform between 1 and ``longest`` messages, contents 20 to 1,640
characters (user turns short, assistant turns long), seqs from the hybrid clock 30 s apart. The
primary key, unique constraints, B-tree indexes and foreign keys are dropped before the load and
built after it (faster, as a restore would); the two full-text GIN indexes are left out: they
serve keyword search, not the window, and would triple the load. A database already loaded with
the same figures is reused.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import psycopg
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from tqdm import tqdm

from benchmarks.database import ensure_database
from conversations import partitioning
from conversations.models import Message

LAYOUTS = {"unpartitioned": 0, "hash16": 16, "hash64": 64}
TABLE = "conversation_messages"
TENANT_PREFIX = "bench-part-"
LEFT_OUT = ("message_search", "message_terms")  # full-text GIN indexes, not built here
BATCHES = 40  # the messages are inserted in this many statements, for the progress bar
FIRST_SECOND = 1_735_689_600  # 2025-01-01 UTC
TURN_MICROSECONDS = 30_000_000
MARKER = "benchmark_partitions_load"


@dataclass(frozen=True)
class Store:
    layout: str
    partitions: int
    messages: int
    conversations: int
    tenants: int
    seconds: dict[str, float]  # load, constraints and indexes, vacuum (of the load that made the store)


def connect() -> psycopg.Connection:
    """A connection of its own to the benchmark database, in autocommit mode."""
    database = settings.DATABASES["default"]
    params = {"host": database["HOST"], "port": database["PORT"], "user": database["USER"], "password": database["PASSWORD"]}
    return psycopg.connect(dbname=database["NAME"], autocommit=True, **{name: value for name, value in params.items() if value})


def store_ensure(*, layout: str, messages: int, tenants: int, longest: int, seed: float) -> Store:
    ensure_database()
    with connect() as pg:
        pg.execute(f"CREATE TABLE IF NOT EXISTS {MARKER} (figures jsonb NOT NULL)")
        wanted = {"layout": layout, "messages": messages, "tenants": tenants, "longest": longest, "seed": seed}
        row = pg.execute(f"SELECT figures FROM {MARKER}").fetchone()  # noqa: S608 (a constant name)
        if row and {key: row[0].get(key) for key in wanted} == wanted:
            return _store(row[0])  # loaded: not migrated again (that would convert the unpartitioned layout)
        call_command("migrate", verbosity=0, interactive=False)
        _layout(pg, layout=layout)
        figures = {**wanted, "seconds": _load(pg, messages=messages, tenants=tenants, longest=longest, seed=seed)}
        figures["stored"] = pg.execute("SELECT count(*) FROM conversation_messages").fetchone()[0]
        figures["conversations"] = pg.execute("SELECT count(*) FROM conversation_memories").fetchone()[0]
        pg.execute(f"DELETE FROM {MARKER}")  # noqa: S608
        pg.execute(f"INSERT INTO {MARKER} VALUES (%s)", [json.dumps(figures)])  # noqa: S608
        return _store(figures)


def _store(figures: dict[str, Any]) -> Store:
    return Store(
        layout=figures["layout"],
        partitions=LAYOUTS[figures["layout"]],
        messages=figures["stored"],
        conversations=figures["conversations"],
        tenants=figures["tenants"],
        seconds=figures["seconds"],
    )


def _layout(pg: psycopg.Connection, *, layout: str) -> None:
    """The layout's schema, on empty tables (a layout is never loaded twice in one database)."""
    if pg.execute("SELECT count(*) FROM conversation_messages").fetchone()[0]:
        raise SystemExit("The benchmark database holds messages of another load: drop it (dropdb) and run again.")
    partitions = LAYOUTS[layout]
    if partitions == 0:
        call_command("migrate", "search", "0001", verbosity=0, interactive=False)
        call_command("migrate", "conversations", "0008", verbosity=0, interactive=False)
    elif partitions != partitioning.PARTITIONS:
        with connection.schema_editor() as editor:
            editor.execute(f"ALTER TABLE message_embeddings DROP CONSTRAINT {partitioning.VECTOR_TO_MESSAGE}")
            partitioning.table_unpartition(editor, Message)
            partitioning.table_partition(editor, Message, partitions=partitions)
            editor.execute(partitioning.VECTOR_TO_MESSAGE_SQL)


def _definitions(pg: psycopg.Connection) -> tuple[list[tuple[str, str, str]], list[tuple[str, str]]]:
    """The table's constraints (those pointing at it from other tables too) and its other indexes, as
    (table, name, definition) and (name, CREATE INDEX statement)."""
    constraints = pg.execute(
        "SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid) FROM pg_constraint"
        " WHERE conparentid = 0 AND contype IN ('p', 'u', 'f')"
        " AND (conrelid = %s::regclass OR confrelid = %s::regclass)"
        " ORDER BY CASE contype WHEN 'p' THEN 0 WHEN 'u' THEN 1 ELSE 2 END, conrelid = %s::regclass DESC",
        [TABLE, TABLE, TABLE],
    ).fetchall()
    indexes = pg.execute(
        "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i"
        " WHERE i.indrelid = %s::regclass AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)",
        [TABLE],
    ).fetchall()
    return constraints, indexes


def _load(pg: psycopg.Connection, *, messages: int, tenants: int, longest: int, seed: float) -> dict[str, float]:
    constraints, indexes = _definitions(pg)
    for table, name, _ in reversed(constraints):
        pg.execute(f'ALTER TABLE {table} DROP CONSTRAINT "{name}"')
    for name, _ in indexes:
        pg.execute(f"DROP INDEX {name}")
    seconds = {}
    started = time.perf_counter()
    pg.execute("SET synchronous_commit = off")
    pg.execute("SELECT setseed(%s)", [seed])
    pg.execute(
        "INSERT INTO tenants_tenant (slug, name, active, settings, created_at)"
        " SELECT %s || lpad(k::text, 4, '0'), 'Partitions benchmark', true, '{}', now() FROM generate_series(1, %s) k",
        [TENANT_PREFIX, tenants],
    )
    # Conversations until their planned sizes add up to ``messages``: tenant k of n holds about
    # (k/n)^(1/3) of them (the first tenant a tenth when n is 1,000), sizes log-uniform in 1..longest.
    pg.execute(
        """
        WITH planned AS (
            SELECT i, 1 + floor(%(tenants)s * power(random(), 3))::int AS tenant_number,
                greatest(1, floor(exp(random() * ln(%(longest)s))))::int AS size,
                (i::bigint * 7919) %% 25920000 AS start_second
            FROM generate_series(1, %(messages)s / 20 + 1000) i
        ), counted AS (
            SELECT *, sum(size) OVER (ORDER BY i) AS running FROM planned
        )
        INSERT INTO conversation_memories (tenant_id, conversation_id, user_id, agent_id, archived, memory, metadata,
            memory_revision, last_seq, message_count, token_count, created_at, updated_at)
        SELECT t.id, 'conversation-' || lpad(c.i::text, 7, '0'), 'user-' || (c.i %% 97), '', false, '{}', '{}', 0,
            (%(first)s + c.start_second) * 1000000 + c.size::bigint * %(turn)s, c.size, 0,
            to_timestamp(%(first)s + c.start_second), to_timestamp(%(first)s + c.start_second) + c.size * interval '30 s'
        FROM counted c JOIN tenants_tenant t ON t.slug = %(prefix)s || lpad(c.tenant_number::text, 4, '0')
        WHERE c.running <= %(messages)s
        """,
        {
            "tenants": tenants,
            "longest": longest,
            "messages": messages,
            "first": FIRST_SECOND,
            "turn": TURN_MICROSECONDS,
            "prefix": TENANT_PREFIX,
        },
    )
    low, high, total = pg.execute("SELECT min(id), max(id), sum(message_count) FROM conversation_memories").fetchone()
    step = max(1, (high - low + 1) // BATCHES + 1)
    with tqdm(total=int(total), desc="loading messages", unit="row", unit_scale=True) as progress:
        for start in range(low, high + 1, step):
            inserted = pg.execute(
                """
                INSERT INTO conversation_messages (message_id, tenant_id, conversation_id, seq, role, content, metadata,
                    archived, token_count, created_at, persisted_at)
                SELECT md5(c.id || ':' || s)::uuid, c.tenant_id, c.id, w.seq, w.role,
                    substr(repeat(md5(c.id || '/' || s) || ' ', 52), 1, w.length), '{}', false, w.length / 4,
                    to_timestamp(w.seq / 1000000.0), to_timestamp(w.seq / 1000000.0) + interval '40 ms'
                FROM conversation_memories c
                CROSS JOIN LATERAL generate_series(1, c.message_count) s
                CROSS JOIN LATERAL (
                    SELECT extract(epoch FROM c.created_at)::bigint * 1000000 + s::bigint * %(turn)s AS seq,
                        CASE WHEN s %% 2 = 1 THEN 'user' ELSE 'assistant' END AS role,
                        CASE WHEN s %% 2 = 1 THEN 20 + floor(power(random(), 2) * 400)
                            ELSE 40 + floor(power(random(), 2) * 1600) END::int AS length
                ) w
                WHERE c.id >= %(start)s AND c.id < %(end)s
                """,
                {"start": start, "end": start + step, "turn": TURN_MICROSECONDS},
            ).rowcount
            progress.update(inserted)
    seconds["load"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    pg.execute("SET maintenance_work_mem = '1GB'")
    built = [(None, name, f'ALTER TABLE {table} ADD CONSTRAINT "{name}" {definition}') for table, name, definition in constraints]
    # A partitioned index's definition reads "ON ONLY" the parent: built so, it would cover no partition.
    built += [(None, name, statement.replace(" ON ONLY ", " ON ", 1)) for name, statement in indexes if name not in LEFT_OUT]
    with tqdm(total=len(built), desc="building keys and indexes", unit="index") as progress:
        for _, name, statement in built:
            step_started = time.perf_counter()
            pg.execute(statement)
            tqdm.write(f"{name}: {time.perf_counter() - step_started:,.1f} s")
            progress.update()
    seconds["keys_and_indexes"] = round(time.perf_counter() - started, 1)
    started = time.perf_counter()
    for table in ("tenants_tenant", "conversation_memories", TABLE):
        pg.execute(f"VACUUM ANALYZE {table}")
    seconds["vacuum"] = round(time.perf_counter() - started, 1)
    return seconds


def sizes(pg: psycopg.Connection) -> dict[str, Any]:
    """Bytes of the table and of each of its indexes: in all, and per partition (the largest, the
    median) when it is partitioned; the window's index named apart."""
    partitions = [
        name
        for (name,) in pg.execute(
            "SELECT c.oid::regclass::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
            " WHERE i.inhparent = %s::regclass",
            [TABLE],
        )
    ] or [TABLE]
    per_relation: dict[str, list[int]] = {"table": []}
    for partition in partitions:
        per_relation["table"].append(
            pg.execute(
                "SELECT pg_relation_size(%s::regclass) + pg_relation_size(reltoastrelid) FROM pg_class WHERE oid = %s::regclass",
                [partition, partition],
            ).fetchone()[0]
        )
        for name, size in pg.execute(
            "SELECT coalesce(p.relname, c.relname), pg_relation_size(i.indexrelid) FROM pg_index i"
            " JOIN pg_class c ON c.oid = i.indexrelid"
            " LEFT JOIN pg_inherits h ON h.inhrelid = i.indexrelid LEFT JOIN pg_class p ON p.oid = h.inhparent"
            " WHERE i.indrelid = %s::regclass",
            [partition],
        ):
            per_relation.setdefault(name, []).append(size)
    return {
        name: {"total": sum(values), "largest_partition": max(values), "median_partition": sorted(values)[len(values) // 2]}
        for name, values in per_relation.items()
    }


def window_index(layout: str) -> str:
    """The index the window read walks in this layout."""
    return "message_window" if LAYOUTS[layout] == 0 else "message_seq_unique_per_conversation"

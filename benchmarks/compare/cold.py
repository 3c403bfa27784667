"""Cold-cache window reads with millions of messages stored.

``cold_store_ensure`` fills the benchmark database with conversations of a tenant ``bench-cold`` in the
service's own schema (every index, the full-text GIN indexes, row-level security as migrated), the rows
exactly as the persist task writes them: a per-conversation ``seq`` from the hybrid clock (microseconds
of the write), unique message ids, cl100k token counts, and conversation rows whose counters agree with
their messages. The load is resumable (one transaction per batch of whole conversations) and reused: a
second call finds the rows and returns at once.

``cold_figures`` times, on conversations picked at random, the window read on a cache miss (the read
that rebuilds the cached list), the read the service falls back to when Redis is down, and PostgreSQL's
own indexed read of the newest 50 rows as the floor.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/membenchcold REDIS_URL=redis://127.0.0.1:6379/11 \
    .venv/bin/python -m benchmarks.compare.cold [--messages 10000000] [--per-conversation 1000] [--operations 1000] [--seed 1]
"""
# ruff: noqa: E402 (the models can only be imported after django.setup())

from __future__ import annotations

import os

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membenchcold")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/11")
    os.environ.setdefault("MEMORY_QUEUE", "memory-bench-cold")
    os.environ.setdefault("MEMORY_EMBEDDING_MODEL", "")  # vectors are not what this measures

    import django

    django.setup()

import argparse
import functools
import math
import random
import re
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from tqdm import tqdm

from benchmarks.compare.measure import Counts, Figures, counting, summarise
from benchmarks.compare.workload import WINDOW, content
from benchmarks.database import ensure_database
from conversations import cache, selectors, tokens
from conversations.models import Message
from conversations.services import rebuild
from tenants import services as tenant_services
from tenants.models import Tenant

TENANT_SLUG = "bench-cold"
BATCH_MESSAGES = 10_000  # rows per transaction: an interrupted load loses at most this much
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
FIRST_DAY = datetime(2025, 1, 1, tzinfo=UTC)
SPREAD_DAYS = 300  # conversations start anywhere in these days
# Built after a load rather than kept up to date during it (see cold_store_ensure).
BUILT_AFTER_LOAD = ("message_search", "message_terms")
MAINTENANCE_WORK_MEM = "1GB"
MESSAGE_COLUMNS = (
    "message_id",
    "tenant_id",
    "conversation_id",
    "seq",
    "role",
    "content",
    "metadata",
    "archived",
    "token_count",
    "created_at",
    "persisted_at",
)
CONVERSATION_INSERT = """
    INSERT INTO conversation_memories
        (tenant_id, conversation_id, user_id, agent_id, archived, memory, metadata, memory_revision,
         last_seq, message_count, token_count, created_at, updated_at)
    VALUES (%s, %s, %s, '', false, '{}', '{}', 0, %s, %s, %s, %s, %s)
    RETURNING id
"""
FLOOR_READ = """
    SELECT message_id, seq, role, content, metadata, created_at, token_count FROM conversation_messages
    WHERE tenant_id = %s AND conversation_id = %s ORDER BY seq DESC LIMIT %s
"""


@dataclass(frozen=True)
class StoredConversation:
    conversation_id: str
    pk: int


@dataclass(frozen=True)
class ColdStore:
    tenant: Tenant
    conversations: list[StoredConversation]  # every conversation of per_conversation messages, in id order
    messages: int  # message rows the tenant holds
    per_conversation: int
    seconds: dict[str, float]  # what this call did and how long it took: load, indexes, vacuum
    sizes: dict[str, int]  # bytes: the messages table, its TOAST, each of its indexes


# --- The store ----------------------------------------------------------------------------------


def cold_store_ensure(*, messages: int = 10_000_000, per_conversation: int = 1_000) -> ColdStore:
    """At least ``messages`` message rows for the tenant ``bench-cold``, in conversations of
    ``per_conversation``; loads only what is missing, then makes sure every index exists and the
    tables are vacuumed and analysed.

    When a load at least doubles the table, the two full-text GIN indexes are dropped first and
    built afterwards in one pass with ``maintenance_work_mem`` raised: maintaining them row by row
    is the slow part of a bulk load. An interrupted load leaves them missing; the next call builds them.
    """
    ensure_database()
    call_command("migrate", verbosity=0, interactive=False)
    tenant = Tenant.objects.filter(slug=TENANT_SLUG).first() or tenant_services.tenant_create(
        slug=TENANT_SLUG, name="Cold-cache benchmark"
    )
    wanted = math.ceil(messages / per_conversation)
    prefix = f"cold-p{per_conversation}-"
    seconds: dict[str, float] = {}
    with _connect() as pg:
        pg.execute("SET synchronous_commit = off")  # a crash loses the last batches, which the next call reloads
        stored = {
            conversation_id
            for (conversation_id,) in pg.execute(
                "SELECT conversation_id FROM conversation_memories WHERE tenant_id = %s AND conversation_id LIKE %s",
                [tenant.pk, prefix + "%"],
            )
        }
        missing = [index for index in range(wanted) if _conversation_id(prefix, index) not in stored]
        if missing:
            total_rows = _tenant_messages(pg, tenant=tenant)
            if len(missing) * per_conversation >= _table_rows(pg):
                pg.execute("DROP INDEX IF EXISTS " + ", ".join(BUILT_AFTER_LOAD))
            started = time.perf_counter()
            _load(pg, tenant=tenant, prefix=prefix, indexes=missing, per_conversation=per_conversation, before=total_rows)
            seconds["load"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        if _create_missing_indexes(pg):
            seconds["indexes"] = round(time.perf_counter() - started, 1)
        started = time.perf_counter()
        if _vacuum_if_changed(pg, force=bool(seconds)):
            seconds["vacuum"] = round(time.perf_counter() - started, 1)
        conversations = [
            StoredConversation(conversation_id=conversation_id, pk=pk)
            for pk, conversation_id in pg.execute(
                "SELECT id, conversation_id FROM conversation_memories"
                " WHERE tenant_id = %s AND conversation_id LIKE %s AND message_count = %s ORDER BY conversation_id",
                [tenant.pk, prefix + "%", per_conversation],
            )
        ]
        return ColdStore(
            tenant=tenant,
            conversations=conversations,
            messages=_tenant_messages(pg, tenant=tenant),
            per_conversation=per_conversation,
            seconds=seconds,
            sizes=_sizes(pg),
        )


def _connect() -> psycopg.Connection:
    """A connection of its own to the benchmark database (COPY, VACUUM and the floor's reads), in
    autocommit mode: each ``transaction()`` block is a transaction of its own."""
    database = settings.DATABASES["default"]
    params = {"host": database["HOST"], "port": database["PORT"], "user": database["USER"], "password": database["PASSWORD"]}
    return psycopg.connect(dbname=database["NAME"], autocommit=True, **{name: value for name, value in params.items() if value})


def _conversation_id(prefix: str, index: int) -> str:
    return f"{prefix}{index:06d}"


def _tenant_messages(pg: psycopg.Connection, *, tenant: Tenant) -> int:
    row = pg.execute("SELECT coalesce(sum(message_count), 0) FROM conversation_memories WHERE tenant_id = %s", [tenant.pk])
    return int(row.fetchone()[0])


def _table_rows(pg: psycopg.Connection) -> int:
    """The planner's estimate of the messages table's rows (over its partitions): enough to decide how to load."""
    row = pg.execute(
        "SELECT sum(greatest(c.reltuples, 0)) FROM pg_partition_tree('conversation_messages') t"
        " JOIN pg_class c ON c.oid = t.relid WHERE t.isleaf"
    ).fetchone()
    return int(row[0] or 0)


@functools.lru_cache(maxsize=65_536)
def _chunk_tokens(chunk: str) -> int:
    return tokens.count(chunk)


# A sentence end followed by a space: cl100k's pre-tokenizer never joins the two sides, so the count
# of a text is the sum of the counts of its sentences (each with its leading space), which repeat.
_SENTENCE_END = re.compile(r"(?<=[.?!])(?= )")


def _token_count(text: str) -> int:
    """``tokens.count(text)``, exactly, at a fraction of its cost for text made of repeated sentences."""
    return sum(map(_chunk_tokens, _SENTENCE_END.split(text)))


def _timestamp(microseconds: int) -> datetime:
    return EPOCH + timedelta(microseconds=microseconds)


@dataclass(frozen=True)
class _GeneratedConversation:
    conversation_id: str
    user_id: str
    rows: list[tuple[Any, ...]]  # MESSAGE_COLUMNS without tenant_id and conversation_id
    last_seq: int
    token_count: int
    created_at: datetime
    updated_at: datetime


def _generate(*, prefix: str, index: int, per_conversation: int) -> _GeneratedConversation:
    """One conversation as the service would have persisted it, the same on every run.

    The seq of each message is the hybrid clock's value at its write: the microseconds of its
    ``created_at``; a worker persisted it some milliseconds later.
    """
    rng = random.Random(f"{prefix}{index}")
    clock = int((FIRST_DAY - EPOCH).total_seconds() * 1_000_000) + rng.randrange(SPREAD_DAYS * 86_400 * 1_000_000)
    rows = []
    token_total = 0
    first_persisted = last_persisted = 0
    for position in range(per_conversation):
        clock += rng.randrange(2_000_000, 90_000_000)  # 2 to 90 seconds between turns
        text = content(rng)
        token_count = _token_count(text)
        token_total += token_count
        last_persisted = clock + rng.randrange(3_000, 80_000)
        first_persisted = first_persisted or last_persisted
        rows.append(
            (
                uuid.UUID(int=rng.getrandbits(128), version=4),
                clock,
                "user" if position % 2 == 0 else "assistant",
                text,
                "{}",
                False,
                token_count,
                _timestamp(clock),
                _timestamp(last_persisted),
            )
        )
    return _GeneratedConversation(
        conversation_id=_conversation_id(prefix, index),
        user_id=f"user-{index % 2_000:04d}",
        rows=rows,
        last_seq=clock,
        token_count=token_total,
        created_at=_timestamp(first_persisted),
        updated_at=_timestamp(last_persisted),
    )


def _load(pg: psycopg.Connection, *, tenant: Tenant, prefix: str, indexes: list[int], per_conversation: int, before: int) -> None:
    """Conversations and their messages, a batch of whole conversations per transaction (COPY)."""
    per_batch = max(1, BATCH_MESSAGES // per_conversation)
    copy_sql = f"COPY conversation_messages ({', '.join(MESSAGE_COLUMNS)}) FROM STDIN"
    with tqdm(
        total=before + len(indexes) * per_conversation, initial=before, desc="loading messages", unit="row", unit_scale=True
    ) as progress:
        for start in range(0, len(indexes), per_batch):
            batch = [
                _generate(prefix=prefix, index=index, per_conversation=per_conversation)
                for index in indexes[start : start + per_batch]
            ]
            with pg.transaction(), pg.cursor() as cursor:
                pks = []
                for conversation in batch:
                    cursor.execute(
                        CONVERSATION_INSERT,
                        [
                            tenant.pk,
                            conversation.conversation_id,
                            conversation.user_id,
                            conversation.last_seq,
                            len(conversation.rows),
                            conversation.token_count,
                            conversation.created_at,
                            conversation.updated_at,
                        ],
                    )
                    pks.append(cursor.fetchone()[0])
                with cursor.copy(copy_sql) as copy:
                    for conversation, pk in zip(batch, pks, strict=True):
                        for message_id, seq, *rest in conversation.rows:
                            copy.write_row((message_id, tenant.pk, pk, seq, *rest))
            progress.update(sum(len(conversation.rows) for conversation in batch))


def _create_missing_indexes(pg: psycopg.Connection) -> list[str]:
    """Create every index of the message model that the table lacks, with the migration's own SQL.

    Each on a connection of its own, two at a time: building a GIN index is one backend's work
    (PostgreSQL 15 builds only B-trees in parallel), and two builds share the table's lock. On a
    partitioned table one at a time: an index there creates one on each partition, named by
    PostgreSQL from the expression, and two builds of expressions that begin alike (the two
    ``to_tsvector`` indexes) would both choose the same name for a partition's index and one fail.
    """
    present = {name for (name,) in pg.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'conversation_messages'")}
    (kind,) = pg.execute("SELECT relkind FROM pg_class WHERE relname = 'conversation_messages'").fetchone()
    missing = [index for index in Message._meta.indexes if index.name not in present]
    if not missing:
        return []
    editor = connection.schema_editor(collect_sql=True)
    statements = {index.name: str(index.create_sql(Message, editor)) for index in missing}

    def build(name: str) -> tuple[str, float]:
        started = time.perf_counter()
        with _connect() as builder:
            builder.execute(f"SET maintenance_work_mem = '{MAINTENANCE_WORK_MEM}'")
            builder.execute(statements[name])
        return name, time.perf_counter() - started

    with (
        ThreadPoolExecutor(max_workers=1 if kind == "p" else 2) as pool,
        tqdm(total=len(statements), desc="building indexes", unit="index") as progress,
    ):
        for done in as_completed([pool.submit(build, name) for name in statements]):
            name, seconds = done.result()
            tqdm.write(f"index {name}: {seconds:,.1f} s")
            progress.update()
    return list(statements)


def _vacuum_if_changed(pg: psycopg.Connection, *, force: bool) -> bool:
    """VACUUM ANALYZE both tables when this call loaded rows or built indexes (``force``); otherwise
    each table that had rows written since it was last vacuumed (an earlier call was interrupted)."""
    changed = dict(
        pg.execute(
            "SELECT relname, n_ins_since_vacuum + n_mod_since_analyze FROM pg_stat_user_tables"
            " WHERE relname IN ('conversation_memories', 'conversation_messages')"
        ).fetchall()
    )
    tables = [table for table in ("conversation_memories", "conversation_messages") if force or changed.get(table)]
    for table in tables:
        tqdm.write(f"VACUUM ANALYZE {table}")
        pg.execute(f"VACUUM ANALYZE {table}")
    return bool(tables)


def _sizes(pg: psycopg.Connection) -> dict[str, int]:
    """Bytes of the table, its TOAST and each index, summed over the partitions (the table is partitioned)."""
    table = pg.execute(
        "SELECT sum(pg_relation_size(c.oid)), sum(coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0))"
        " FROM pg_partition_tree('conversation_messages') t JOIN pg_class c ON c.oid = t.relid"
    ).fetchone()
    sizes = {"conversation_messages": int(table[0]), "conversation_messages (TOAST)": int(table[1])}
    for name, size in pg.execute(
        "SELECT i.indexrelid::regclass::text, (SELECT sum(pg_relation_size(t.relid)) FROM pg_partition_tree(i.indexrelid) t)::bigint"
        " FROM pg_index i WHERE i.indrelid = 'conversation_messages'::regclass ORDER BY 2 DESC"
    ):
        sizes[name] = size
    return sizes


# --- The figures --------------------------------------------------------------------------------


@dataclass
class Timed:
    """One system's cold reads: what it calls, untimed around each call, and what it measured."""

    read: Callable[[StoredConversation], object]
    around: Callable[[StoredConversation], object] | None
    conversations: list[StoredConversation]
    samples: list[float] = field(default_factory=list)  # ms
    counts: Counts = field(default_factory=Counts)


def take_turns(systems: list[Timed]) -> None:
    """One read of each system in turn, ``around`` run untimed and uncounted before and after each: a
    cold read's cost is mostly where its pages are (PostgreSQL's buffers, the kernel's page cache, the
    disk), and whatever changes that during the run changes it for every system alike."""
    for turn in tqdm(range(len(systems[0].conversations)), desc="cold reads, the systems in turn", unit="turn", leave=False):
        for system in systems:
            conversation = system.conversations[turn]
            if system.around is not None:
                system.around(conversation)
            with counting() as counts:
                started = time.perf_counter()
                system.read(conversation)
                system.samples.append((time.perf_counter() - started) * 1000)
            system.counts.redis += counts.redis
            system.counts.sql += counts.sql
            if system.around is not None:
                system.around(conversation)


def cycled(order: list[StoredConversation], start: int, count: int) -> list[StoredConversation]:
    return [order[(start + offset) % len(order)] for offset in range(count)]


def cold_figures(*, store: ColdStore, operations: int, rng: random.Random) -> list[Figures]:
    """The newest 50 messages of random conversations of the store, each system on conversations of its
    own (while the store has enough), so none reads what another just brought into memory, the systems
    taking turns (``take_turns``).

    * service, cold window read (cache miss): ``conversation_window`` after the conversation's keys
      were erased, so it rebuilds the cached list; the reader answers before the list is installed
      (on the install thread), and the install and the erase after it are neither timed nor counted;
    * service, window read, Redis down: ``_window_from_database`` without pending writes, the read
      the service falls back to when Redis cannot be reached;
    * postgres floor, cold window read: one indexed ``SELECT ... ORDER BY seq DESC LIMIT 50``.

    Operations per second are those of the timed calls alone.
    """
    tenant = store.tenant
    query = selectors.WindowQuery(limit=WINDOW)
    order = rng.sample(store.conversations, len(store.conversations))
    warm_up, order = order[0], order[1:] or order

    def erase(conversation: StoredConversation) -> None:
        # A cold read answers before its install, which runs on the install thread: let it land (untimed)
        # so that it neither overlaps the next timed read nor lands after this erase.
        rebuild.background_installs.wait()
        cache.erase(tenant_slug=tenant.slug, conversation_id=conversation.conversation_id)

    def cold_read(conversation: StoredConversation) -> object:
        return selectors.conversation_window(tenant=tenant, conversation_id=conversation.conversation_id, query=query)

    def fallback_read(conversation: StoredConversation) -> object:
        return selectors._window_from_database(
            tenant=tenant, conversation_id=conversation.conversation_id, query=query, with_pending=False
        )

    results = []
    with _connect() as pg:

        def floor_read(conversation: StoredConversation) -> object:
            return pg.execute(FLOOR_READ, [tenant.pk, conversation.pk, WINDOW]).fetchall()

        labels = [
            ("service", "cold window read (cache miss)"),
            ("service", "window read, Redis down"),
            ("postgres floor", "cold window read"),
        ]
        systems = [
            Timed(read, around, cycled(order, number * operations, operations))
            for number, (read, around) in enumerate([(cold_read, erase), (fallback_read, None), (floor_read, None)])
        ]
        for timed in systems:
            erase(warm_up)
            timed.read(warm_up)  # connections, compiled queries and registered scripts, not timed
            erase(warm_up)
        take_turns(systems)
        for (system, operation), timed in zip(labels, systems, strict=True):
            figures = summarise(
                system,
                operation,
                size=store.per_conversation,
                clients=1,
                samples=timed.samples,
                elapsed=sum(timed.samples) / 1000,
                counts=timed.counts,
            )
            figures.notes = {"stored_messages": store.messages}
            results.append(figures)
    floor = results[-1].p50_ms
    for figures in results:
        figures.ratio_to_floor = round(figures.p50_ms / floor, 2) if floor else None
        figures.floor = results[-1].system
    return results


# --- python -m benchmarks.compare.cold -----------------------------------------------------------------------


def _megabytes(size: int) -> str:
    return f"{size / 1024**2:,.0f} MB"


def _report(store: ColdStore) -> Iterator[str]:
    done = ", ".join(f"{step} {seconds:,.1f} s" for step, seconds in store.seconds.items()) or "nothing to do"
    yield f"store: {store.messages:,} messages for tenant {store.tenant.slug}, {store.per_conversation:,} a conversation ({done})"
    for name, size in store.sizes.items():
        yield f"  {name:<50} {_megabytes(size):>12}"
    yield f"  {'total':<50} {_megabytes(sum(store.sizes.values())):>12}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare.cold", description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=10_000_000, help="message rows the store holds at least")
    parser.add_argument("--per-conversation", type=int, default=1_000, help="messages of each conversation")
    parser.add_argument("--operations", type=int, default=1_000, help="timed reads per system")
    parser.add_argument("--seed", type=int, default=1, help="picks the conversations: another seed, other conversations")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    store = cold_store_ensure(messages=options.messages, per_conversation=options.per_conversation)
    for line in _report(store):
        print(line)
    results = cold_figures(store=store, operations=options.operations, rng=random.Random(options.seed))
    print("\n| system | operation | messages in conversation | p50 ms | p99 ms | ops/s | Redis calls | SQL | p50 / floor |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for item in results:
        print(
            f"| {item.system} | {item.operation} | {item.size:,} | {item.p50_ms} | {item.p99_ms} | {item.per_second:,.0f}"
            f" | {item.redis_calls} | {item.sql_queries} | {item.ratio_to_floor} |"
        )
    print(f"\n{store.messages:,} messages stored; each read took the newest {WINDOW} of a conversation not read before.")
    return 0


if __name__ == "__main__":
    sys.exit(main())

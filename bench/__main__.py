"""``python -m bench`` (``make bench``): the service's append and window read side by side with the
floors, Redis and PostgreSQL themselves, on one generated workload in one run.

Systems (each doing the same appends and reads of the newest 50 messages):

* ``service``: ``conversations.services.message_append`` (durable when it returns: broker-confirmed)
  and ``conversations.selectors.conversation_window`` from a warm cache, in process;
* ``redis floor``: redis-py ``RPUSH`` of the message JSON, ``LRANGE -50 -1`` and JSON decoding;
* ``postgres floor``: psycopg ``INSERT`` of a row and an indexed ``SELECT ... ORDER BY seq DESC LIMIT 50``.

Conversations of 100 messages and one of 10,000; message content 200 to 2,000 characters. Prints p50,
p99, operations per second and the ratio to the floor per system and operation; ``--json PATH``
writes them. Uses the benchmark database (``DATABASE_URL``, default ``membench``), Redis database 13
and the queue ``memory-bench``, with a Celery worker of its own so appends are persisted.

    .venv/bin/python -m bench [--conversations 20] [--long 10000] [--operations 2000] [--json PATH]
"""
# ruff: noqa: E402 (the models can only be imported after django.setup())

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench")
os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
os.environ.setdefault("MEMORY_QUEUE", "memory-bench")
os.environ.setdefault("MEMORY_EMBEDDING_MODEL", "")  # vectors are not what this measures

import django

django.setup()

import psycopg
from django.conf import settings
from django.core.management import call_command
from django_redis import get_redis_connection
from tqdm import tqdm

from benchmarks.database import ensure_database
from conversations import selectors, services
from tenants.models import Tenant
from torture.processes import CeleryWorker  # a real worker persists what the service acknowledges

WINDOW = 50
WORDS = (
    "the agent asked about the order delivery refund invoice account password travel booking hotel flight "
    "weather schedule meeting report budget customer support ticket issue update status shipment address "
    "payment card balance transfer loan rate plan subscription upgrade cancel renew contract policy claim"
).split()


@dataclass
class Figures:
    system: str
    operation: str
    size: int
    p50_ms: float
    p99_ms: float
    per_second: float
    ratio_to_floor: float | None = None


def content(rng: random.Random) -> str:
    length = rng.randint(200, 2000)
    words: list[str] = []
    while sum(len(word) + 1 for word in words) < length:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:length]


def timed(operation: Callable[[], object], count: int, label: str) -> list[float]:
    samples = []
    for _ in tqdm(range(count), desc=label, unit="op", leave=False):
        started = time.perf_counter()
        operation()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def figures(system: str, operation: str, size: int, samples: list[float]) -> Figures:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return Figures(
        system, operation, size, round(statistics.median(ordered), 3), round(p99, 3), round(1000 * len(samples) / sum(samples), 1)
    )


def window_reads(
    *, tenant: Tenant, redis: object, pg: psycopg.Connection, chosen: list[str], size: int, count: int, rng: random.Random
) -> list[Figures]:
    """The newest 50 messages of conversations of ``size`` messages, by each system."""
    query = selectors.WindowQuery(limit=WINDOW)
    selectors.conversation_window(tenant=tenant, conversation_id=chosen[0], query=query)  # a warm cache

    def service() -> object:
        return selectors.conversation_window(tenant=tenant, conversation_id=rng.choice(chosen), query=query)

    def redis_floor() -> object:
        return [json.loads(item) for item in redis.lrange(f"floor:{rng.choice(chosen)}", -WINDOW, -1)]

    def postgres_floor() -> object:
        sql = "SELECT body FROM bench_floor WHERE conversation = %s ORDER BY seq DESC LIMIT %s"
        return pg.execute(sql, (rng.choice(chosen), WINDOW)).fetchall()

    measured = [
        figures("service", "window read", size, timed(service, count, "service read")),
        figures("redis floor", "window read", size, timed(redis_floor, count, "redis read")),
        figures("postgres floor", "window read", size, timed(postgres_floor, count, "postgres read")),
    ]
    for item in measured:
        item.ratio_to_floor = round(item.p50_ms / measured[1].p50_ms, 2)
    return measured


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=20, help="conversations of 100 messages")
    parser.add_argument("--long", type=int, default=10_000, help="messages of the one long conversation")
    parser.add_argument("--operations", type=int, default=2_000, help="timed operations per system and operation")
    parser.add_argument("--json", type=Path, default=None)
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rng = random.Random(1)

    ensure_database()
    call_command("migrate", verbosity=0, interactive=False)

    env = dict(os.environ, MEMORY_QUEUE=settings.MEMORY_QUEUE, MEMORY_DERIVED_QUEUE=settings.MEMORY_DERIVED_QUEUE)
    worker = CeleryWorker(env=env, name="bench", concurrency=2)
    worker.start()
    redis = get_redis_connection("default")
    redis.flushdb()
    tenant, _ = Tenant.objects.get_or_create(slug="bench-compare", defaults={"name": "Bench compare"})
    database = settings.DATABASES["default"]
    pg = psycopg.connect(
        dbname=database["NAME"],
        host=database["HOST"] or None,
        port=database["PORT"] or None,
        user=database["USER"],
        autocommit=True,
    )
    pg.execute("CREATE TABLE IF NOT EXISTS bench_floor (id bigserial PRIMARY KEY, conversation text, seq bigint, body jsonb)")
    pg.execute("CREATE INDEX IF NOT EXISTS bench_floor_window ON bench_floor (conversation, seq DESC)")
    pg.execute("TRUNCATE bench_floor")
    results: list[Figures] = []
    try:
        sizes = {f"short-{run}-{n}": 100 for n in range(options.conversations) for run in [uuid.uuid4().hex[:6]]}
        sizes[f"long-{uuid.uuid4().hex[:6]}"] = options.long
        # Fill every system with the same conversations.
        for conversation_id, size in tqdm(sizes.items(), desc="filling", unit="conv"):
            messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": content(rng)} for i in range(size)]
            for start in range(0, size, settings.MEMORY_MAX_BATCH):
                services.message_append(
                    tenant=tenant, conversation_id=conversation_id, messages=messages[start : start + settings.MEMORY_MAX_BATCH]
                )
            redis.rpush(f"floor:{conversation_id}", *[json.dumps(m | {"seq": i}) for i, m in enumerate(messages)])
            with pg.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO bench_floor (conversation, seq, body) VALUES (%s, %s, %s)",
                    [(conversation_id, i, json.dumps(m)) for i, m in enumerate(messages)],
                )
        pg.execute("ANALYZE bench_floor")
        for size in sorted(set(sizes.values())):
            chosen = [cid for cid, s in sizes.items() if s == size]
            results += window_reads(
                tenant=tenant, redis=redis, pg=pg, chosen=chosen, size=size, count=options.operations, rng=rng
            )
        conversation_id = next(iter(sizes))
        counter = iter(range(10**9))
        service = figures(
            "service",
            "append (durable)",
            1,
            timed(
                lambda: services.message_append(
                    tenant=tenant, conversation_id=conversation_id, messages=[{"role": "user", "content": content(rng)}]
                ),
                options.operations,
                "service append",
            ),
        )
        floor_redis = figures(
            "redis floor",
            "append",
            1,
            timed(
                lambda: redis.rpush(f"floor:{conversation_id}", json.dumps({"role": "user", "content": content(rng)})),
                options.operations,
                "redis append",
            ),
        )
        floor_pg = figures(
            "postgres floor",
            "append",
            1,
            timed(
                lambda: pg.execute(
                    "INSERT INTO bench_floor (conversation, seq, body) VALUES (%s, %s, %s)",
                    (conversation_id, 10**6 + next(counter), json.dumps({"content": content(rng)})),
                ),
                options.operations,
                "postgres append",
            ),
        )
        for item in (service, floor_redis, floor_pg):
            item.ratio_to_floor = round(item.p50_ms / floor_pg.p50_ms, 2)
        results += [service, floor_redis, floor_pg]
    finally:
        worker.stop()
        pg.close()
    print("\n| system | operation | messages in conversation | p50 ms | p99 ms | ops/s | p50 / floor |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for item in results:
        print(
            f"| {item.system} | {item.operation} | {item.size:,} | {item.p50_ms} | {item.p99_ms} | {item.per_second:,.0f} | {item.ratio_to_floor} |"
        )
    print("\nFloors: window reads against Redis RPUSH/LRANGE with JSON decoding; appends against one PostgreSQL INSERT.")
    if options.json:
        options.json.write_text(json.dumps([asdict(item) for item in results], indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

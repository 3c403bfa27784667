"""``python -m benchmarks.compare`` (``make bench``): the service side by side with what users would pick instead
(LangChain's Redis and PostgreSQL chat histories) and with the floors (Redis and PostgreSQL
themselves), on one generated workload in one run. Appends have a second floor, the durable floor: what
the mandated write path costs at least, one Redis script round trip and one persistent publish
confirmed by RabbitMQ, done directly with redis-py and kombu (``systems.DurableAppendFloor``).

Every system stores the same conversations (100 messages each, and one of ``--long`` messages;
content 200 to 2,000 characters), then reads the newest 50 messages and appends, at 1 and at 16 (``--clients``)
clients. The HTTP API is measured under gunicorn (``benchmarks/compare/http.py``); so are the agent's other
hot operations (``benchmarks/compare/agent.py``, unless ``--no-agent``): the context with ``use_memory`` on a
user of ``--agent-messages`` (6,000) messages embedded with the real model, at 1 and 8 clients
(``--operations`` / 5 requests each), and the LangGraph store's put, get and search with a query
(``--operations`` / 2 each); and cold reads over a store of 10 million messages (``benchmarks/compare/cold.py``).
Prints p50, p95, p99, operations per second, the ratio to the floor (reads: the Redis floor; the service's
appends: the durable floor; other appends: the PostgreSQL floor) and Redis round trips and SQL statements
per operation, then the service's persist lag, cache hit rate and resident memory, and each target with its
figure; ``--json PATH`` writes it all. The agent's user and store are kept in the database and reused by
the next run (embedding 6,000 messages takes minutes on two cores).

It uses a benchmark database (``DATABASE_URL``, default ``membench``), Redis database 13 and the
queue ``memory-bench``, with Celery workers of its own, so appends are persisted as in production.

    .venv/bin/python -m benchmarks.compare [--conversations 20] [--long 10000] [--operations 2000] \\
        [--agent-messages 6000] [--no-http] [--no-agent] [--cold-messages 10000000] [--json PATH]
"""
# ruff: noqa: E402 (the models can only be imported after django.setup())

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # imported (the tests read ``targets``), it leaves the environment and Django as they are
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
    os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/membench")
    os.environ.setdefault("REDIS_URL", "redis://127.0.0.1:6379/13")
    os.environ.setdefault("MEMORY_QUEUE", "memory-bench")
    os.environ.setdefault("MEMORY_DERIVED_QUEUE", "memory-bench-derived")
    # Vectors are not what the other rows measure: the agent's rows turn the model on for themselves.
    os.environ.setdefault("MEMORY_EMBEDDING_MODEL", "")
    os.environ.setdefault("MEMORY_RATE_LIMIT", "0")  # nor is the tenant throttle
    os.environ.setdefault("DJANGO_LOG_LEVEL", "WARNING")

    import django

    django.setup()

from django.conf import settings
from django.core.management import call_command
from django_redis import get_redis_connection
from tqdm import tqdm

from benchmarks.compare import agent, http, measure, systems, workload
from benchmarks.compare.measure import Figures
from benchmarks.database import ensure_database
from conversations import metrics
from conversations.models import Message
from tenants.models import Tenant
from torture.processes import CeleryWorker, wait_until

SHORT = 100


def read_figures(
    bench_systems: list[systems.System], *, chosen: list[str], size: int, count: int, rng: random.Random
) -> list[Figures]:
    """The newest 50 messages of conversations of ``size`` messages, by each system; ratio to the Redis floor."""
    rows = []
    for system in (system for system in bench_systems if system.reads):
        system.window(chosen[0])  # warm: connections open, scripts loaded
        with measure.counting() as counts:
            samples, elapsed = measure.run(
                lambda _, system=system: system.window(rng.choice(chosen)), count=count, label=f"{system.name} read {size:,}"
            )
        rows.append(
            measure.summarise(system.name, "window read", size=size, clients=1, samples=samples, elapsed=elapsed, counts=counts)
        )
    floor = next(row for row in rows if row.system == "redis floor")
    for row in rows:
        row.ratio_to_floor, row.floor = round(row.p50_ms / floor.p50_ms, 2), floor.system
    return rows


# The floor each system's appends are held against: the service's durable append (Redis, then a
# confirmed publish) against the durable floor, the others (a row written) against the PostgreSQL floor.
APPEND_FLOORS = {"service": "durable floor", "durable floor": "durable floor"}


def append_figures(
    bench_systems: list[systems.System], *, conversations: list[str], clients: int, count: int, rng: random.Random
) -> list[Figures]:
    """One new message per operation, each client on a conversation of its own; ratio to the floor of
    ``APPEND_FLOORS`` (the PostgreSQL floor where none is named), at the same number of clients."""
    rows = []
    for system in bench_systems:
        texts = [workload.message(rng, 0) for _ in range(count)]
        with measure.counting() as counts:
            samples, elapsed = measure.run(
                lambda index, system=system, texts=texts: system.append(conversations[index % len(conversations)], texts[index]),
                count=count,
                clients=clients,
                label=f"{system.name} append x{clients}",
            )
        rows.append(
            measure.summarise(system.name, "append", size=SHORT, clients=clients, samples=samples, elapsed=elapsed, counts=counts)
        )
    floors = {row.system: row for row in rows}
    for row in rows:
        floor = floors.get(APPEND_FLOORS.get(row.system, "postgres floor"))
        if floor is not None:
            row.ratio_to_floor, row.floor = round(row.p50_ms / floor.p50_ms, 2), floor.system
    return rows


def hit_counts() -> dict[str, float]:
    """This process's window lookups by result (hit, miss, error)."""
    counts: dict[str, float] = {"hit": 0.0, "miss": 0.0, "error": 0.0}
    for family in metrics.cache_requests.collect():
        for sample in family.samples:
            if sample.name.endswith("_total") and sample.labels.get("data_type") == "messages":
                counts[sample.labels["result"]] += sample.value
    return counts


def print_table(rows: list[Figures]) -> None:
    print(
        "\n| system | operation | messages in conversation | clients | p50 ms | p95 ms | p99 ms | ops/s | p50 / floor "
        "| Redis calls/op | SQL/op |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        ratio = "" if row.ratio_to_floor is None else row.ratio_to_floor
        if row.ratio_to_floor is not None and row.floor:
            ratio = f"{row.ratio_to_floor} ({row.floor})"
        redis_calls = "" if row.redis_calls is None else row.redis_calls
        sql = "" if row.sql_queries is None else row.sql_queries
        print(
            f"| {row.system} | {row.operation} | {row.size:,} | {row.clients} | {row.p50_ms} | {row.p95_ms} | {row.p99_ms} | "
            f"{row.per_second:,.0f} | {ratio} | {redis_calls} | {sql} |"
        )
    if any(row.operation.startswith(("context", "store")) for row in rows):
        print(
            "\nThe context's messages are those of the user (every conversation of theirs is searched); the store's "
            "are the items of the namespace put to, read or searched."
        )


def find(rows: list[Figures], system: str, operation: str, *, size: int | None = None, clients: int = 1) -> Figures | None:
    for row in rows:
        if row.system == system and row.operation == operation and row.clients == clients and (size is None or row.size == size):
            return row
    return None


def targets(rows: list[Figures], service: dict[str, Any], long_size: int, clients: int) -> list[tuple[str, str, bool | None]]:
    """Each target of the performance issue with the figure measured for it."""
    checks: list[tuple[str, str, bool | None]] = []

    def ratio(
        description: str, numerator: Figures | None, denominator: Figures | None, limit: float, *, inverse: bool = False
    ) -> None:
        if numerator is None or denominator is None:
            checks.append((description, "not measured", None))
            return
        value = denominator.p50_ms / numerator.p50_ms if inverse else numerator.p50_ms / denominator.p50_ms
        met = value >= limit if inverse else value <= limit
        checks.append((description, f"{value:.2f}x", met))

    read = "window read"
    ratio(
        "in-process window read / Redis floor <= 1.3",
        find(rows, "service", read, size=SHORT),
        find(rows, "redis floor", read, size=SHORT),
        1.3,
    )
    ratio(
        "LangChain Redis read / service, 100 messages >= 2",
        find(rows, "service", read, size=SHORT),
        find(rows, "LangChain Redis", read, size=SHORT),
        2,
        inverse=True,
    )
    ratio(
        f"LangChain Redis read / service, {long_size:,} messages >= 50",
        find(rows, "service", read, size=long_size),
        find(rows, "LangChain Redis", read, size=long_size),
        50,
        inverse=True,
    )
    ratio(
        "in-process append / LangChain Postgres append, 1 client <= 2",
        find(rows, "service", "append"),
        find(rows, "LangChain Postgres", "append"),
        2,
    )
    ratio(
        "durable append p50 / durable floor p50 <= 1.5 at 1 client",
        find(rows, "service", "append"),
        find(rows, "durable floor", "append"),
        1.5,
    )
    service16 = find(rows, "service", "append", clients=clients)
    langchain16 = find(rows, "LangChain Postgres", "append", clients=clients)
    if service16 is None:
        checks.append((f"appends/s at {clients} clients in process >= 3,000", "not measured", None))
    else:
        checks.append(
            (
                f"appends/s at {clients} clients in process >= 3,000",
                f"{service16.per_second:,.0f}/s",
                service16.per_second >= 3000,
            )
        )
    if service16 is None or langchain16 is None:
        checks.append((f"appends/s at {clients} clients ahead of LangChain Postgres", "not measured", None))
    else:
        checks.append(
            (
                f"appends/s at {clients} clients ahead of LangChain Postgres",
                f"{service16.per_second:,.0f} vs {langchain16.per_second:,.0f}",
                service16.per_second > langchain16.per_second,
            )
        )
    http_read = find(rows, "service HTTP", read, size=SHORT, clients=clients)
    if http_read:
        checks.append(
            (
                f"HTTP window read >= 1,500/s with p99 < 25 ms at {clients} clients",
                f"{http_read.per_second:,.0f}/s, p99 {http_read.p99_ms} ms",
                http_read.per_second >= 1500 and http_read.p99_ms < 25,
            )
        )
    http_append = find(rows, "service HTTP", "append (durable)", clients=clients)
    if http_append:
        checks.append(
            (
                f"HTTP durable append >= 1,000/s at {clients} clients",
                f"{http_append.per_second:,.0f}/s",
                http_append.per_second >= 1000,
            )
        )
    checks += agent.agent_targets(rows)
    if service.get("http_persist_lag_p99_ms") is not None:
        checks.append(
            (
                "persist lag p99 < 1 s under HTTP load",
                f"{service['http_persist_lag_p99_ms']:.0f} ms",
                service["http_persist_lag_p99_ms"] < 1000,
            )
        )
    cold = find(rows, "service", "cold window read (cache miss)")
    if cold:
        checks.append(
            (
                f"cold-cache window read p50 < 2 ms, {cold.notes.get('stored_messages', 0):,} messages stored",
                f"{cold.p50_ms} ms",
                cold.p50_ms < 2,
            )
        )
    if service.get("cache_hit_rate") is not None:
        checks.append(
            ("cache hit rate > 95% in steady state", f"{service['cache_hit_rate']:.1%}", service["cache_hit_rate"] > 0.95)
        )
    return checks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=20, help="conversations of 100 messages")
    parser.add_argument("--long", type=int, default=10_000, help="messages of the one long conversation")
    parser.add_argument("--operations", type=int, default=2_000, help="timed operations per system, operation and client count")
    parser.add_argument("--clients", type=int, default=16, help="concurrent clients of the concurrent runs")
    parser.add_argument("--cold-messages", type=int, default=10_000_000, help="messages stored for the cold reads (0: skip)")
    parser.add_argument("--no-http", action="store_true", help="skip the HTTP API under gunicorn")
    parser.add_argument(
        "--agent-messages",
        type=int,
        default=agent.USER_MESSAGES,
        help="messages of the agent's user (whole conversations of 200)",
    )
    parser.add_argument("--no-agent", action="store_true", help="skip the context with use_memory and the store over HTTP")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    rng = random.Random(1)

    ensure_database()
    call_command("migrate", verbosity=0, interactive=False)
    get_redis_connection("default").flushdb()
    env = dict(os.environ, DJANGO_LOG_LEVEL="INFO")  # the worker logs each persisted batch's lag
    worker = CeleryWorker(env=env, name="bench", **http.WRITE_WORKER)
    worker.start()
    tenant, _ = Tenant.objects.get_or_create(slug="bench-compare", defaults={"name": "Bench compare"})
    redis_url = settings.CACHES["default"]["LOCATION"]
    bench_systems: list[systems.System] = [
        systems.Service(tenant),
        systems.LangChainRedis(redis_url),
        systems.LangChainPostgres(),
        systems.RedisFloor(redis_url),
        systems.PostgresFloor(),
        systems.DurableAppendFloor(redis_url, connections=options.clients),
    ]
    rows: list[Figures] = []
    service: dict[str, Any] = {}
    run = uuid.uuid4().hex[:6]
    short = [f"short-{run}-{n}" for n in range(options.conversations)]
    long_id = f"long-{run}"
    try:
        sizes = dict.fromkeys(short, SHORT) | {long_id: options.long}
        for conversation_id, size in tqdm(sizes.items(), desc="filling every system", unit="conversation"):
            messages = workload.messages(rng, size)
            for system in bench_systems:
                if system.reads:
                    system.fill(conversation_id, messages)
        for system in bench_systems:
            if hasattr(system, "analyze"):
                system.analyze()
        expected = SHORT * len(short) + options.long
        wait_until(
            lambda: Message.objects.for_tenant(tenant).count() >= expected,
            timeout=600,
            message="the filled conversations persisted",
        )

        before = hit_counts()
        rows += read_figures(bench_systems, chosen=short, size=SHORT, count=options.operations, rng=rng)
        rows += read_figures(bench_systems, chosen=[long_id], size=options.long, count=max(50, options.operations // 10), rng=rng)
        after = hit_counts()
        lookups = sum(after.values()) - sum(before.values())
        service["cache_hit_rate"] = round((after["hit"] - before["hit"]) / lookups, 4) if lookups else None

        log_offset = os.path.getsize(worker.log_path)
        targets_of_appends = [f"append-{run}-{n}" for n in range(options.clients)]
        for clients in (1, options.clients):
            rows += append_figures(
                bench_systems, conversations=targets_of_appends, clients=clients, count=options.operations, rng=rng
            )
        lags = http.wait_for_persisted(worker.log_path, offset=log_offset, expected=2 * options.operations)
        if lags:
            service["persist_lag_p50_ms"] = round(measure.percentile(lags, 0.5), 1)
            service["persist_lag_p99_ms"] = round(measure.percentile(lags, 0.99), 1)
        service["rss_mb"] = {
            "bench process (in-process service)": http.resident_mb(os.getpid())[0],
            "celery worker": http.resident_mb(worker.process.pid)[0],
        }
    finally:
        worker.stop()
        for system in bench_systems:
            system.close()

    if not options.no_http:
        results = http.http_figures(
            conversations=short,
            long_conversation=long_id,
            operations=options.operations,
            rng=rng,
            long_size=options.long,
            clients=(1, options.clients),
        )
        rows += results.figures
        service["http_persist_lag_p50_ms"] = results.persist_lag_p50_ms
        service["http_persist_lag_p99_ms"] = results.persist_lag_p99_ms
        service["http_cache_hit_rate"] = results.cache_hit_rate
        service["rss_mb"] |= results.rss_mb
    if not options.no_agent:
        user = agent.agent_user_ensure(messages=options.agent_messages)
        store = agent.agent_store_ensure(tenant=user.tenant)
        agent_results = agent.agent_figures(
            user=user,
            store=store,
            context_count=max(20, options.operations // 5),
            store_count=max(20, options.operations // 2),
            rng=rng,
            clients=(1, agent.CLIENTS),
        )
        rows += agent_results.figures
        service["agent"] = agent_results.notes | {"prepared": user.seconds | store.seconds or "reused"}
        service["rss_mb"]["gunicorn with the embedding model"] = agent_results.rss_mb["gunicorn"]
    if options.cold_messages:
        from benchmarks.compare import cold

        store = cold.cold_store_ensure(messages=options.cold_messages)
        rows += cold.cold_figures(store=store, operations=min(options.operations, 1000), rng=rng)

    http.purge_derived_queue()
    print_table(rows)
    print(
        "\nFloors: window reads against redis-py LRANGE with JSON decoding; the service's appends against the durable "
        "floor (one Redis script round trip, then one persistent publish confirmed by RabbitMQ, through redis-py and "
        "kombu); the other appends against one autocommitted psycopg INSERT."
    )
    print("Redis calls and SQL statements are counted in the calling process (the worker's own are not included).")
    print("\nService:", json.dumps(service, indent=2))
    checks = targets(rows, service, options.long, options.clients)
    print("\n| target | measured | met |\n|---|---|---|")
    for description, figure, met in checks:
        print(f"| {description} | {figure} | {'yes' if met else ('no' if met is False else '')} |")
    if options.json:
        options.json.write_text(
            json.dumps({"figures": [asdict(row) for row in rows], "service": service, "targets": checks}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

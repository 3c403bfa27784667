"""``python -m benchmarks.capacity``: what one operation of each kind costs every part of the service,
in CPU milliseconds and round trips, measured on real processes; the figures behind docs/scaling.md.

It starts the service (``benchmarks/capacity/service.py``: gunicorn, a persist worker, a derived worker,
a private Redis and RabbitMQ node, the machine's PostgreSQL with a database of its own), fills
``--conversations`` conversations of ``--messages`` messages for one user (embedded), measures the
idle deployment for ``--idle`` seconds, then runs each operation ``--operations`` times in a steady
loop from one client:

* append, a batch of 1 message and a batch of 10 (until persisted and settled; the derived worker
  does not consume meanwhile, so its work is the next operation's);
* one embedded message: the derived worker embeds messages appended one to a new conversation each;
* window read from the cache, and cold (the conversation's cached list deleted before each read);
* context read (the context endpoint) and hybrid search (each query different, so each is embedded).

Per operation: CPU ms of the web processes, the persist worker, the derived worker, PostgreSQL's
backends, Redis and RabbitMQ, the idle baseline over as long taken away; SQL statements, Redis
commands, broker messages; p50 and p95 latency. CPU time is what a process used whatever else runs on
the machine, so it is far steadier than wall time on shared cores; the latencies are of this machine
as it was. ``--json PATH`` writes the figures (``benchmarks/figures/capacity.json``).

``--embedding-server`` embeds on the repository's model server, a process outside the service (a GPU
machine's in production), the service configured for a model on a server: the embedded message rows
are then the derived worker's calls, the search and context rows the web's with the query embedded
remotely. The server's own CPU per operation is given apart (``cpu_ms_outside``), in no total
(``benchmarks/figures/capacity-embedding-server.json``).

    .venv/bin/python -m benchmarks.capacity [--operations 500] [--conversations 10] [--messages 100] [--idle 10]
        [--embedding-server] [--json PATH]
"""
# ruff: noqa: E402 (the models can only be imported after django.setup(), which Deployment.start() runs)

from __future__ import annotations

import argparse
import http.client
import json
import os
import platform
import random
import signal
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from benchmarks.capacity.meters import COMPONENTS, Cost, Meters, per_operation
from benchmarks.capacity.service import EMBEDDING_SERVER, REMOTE_MODEL, Deployment
from benchmarks.compare.workload import content
from torture.processes import wait_until

DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/capacitybench"
WINDOW = 50
SETTLE_TIMEOUT = 900.0  # on shared cores, embedding the fill's 1,000 messages can take minutes
WORDS = (
    "order delivery refund booking budget quarter flight hotel meeting support ticket invoice subscription "
    "renewal warehouse Lisbon breakfast cancellation marketing launch email Spanish charge card summary"
).split()


@dataclass
class Row:
    operation: str
    unit: str  # what one operation is: a request, or a message embedded
    count: int
    clients: int
    p50_ms: float | None
    p95_ms: float | None
    per_second: float
    cpu_ms: dict[str, float]
    cpu_ms_total: float
    sql_statements: float
    redis_commands: float  # every command Redis ran, those of scripts included
    redis_scripts: float  # script calls: each one round trip
    broker: dict[str, float]
    notes: dict[str, Any] = field(default_factory=dict)
    cpu_ms_outside: dict[str, float] = field(default_factory=dict)  # the embedding server's: not the service's


class Client:
    """One keep-alive HTTP connection to gunicorn, as an agent's SDK holds it."""

    def __init__(self, url: str, key: str) -> None:
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.headers = {"Authorization": f"Api-Key {key}", "Content-Type": "application/json"}
        self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)

    def send(self, method: str, path: str, body: Any = None) -> tuple[int, bytes]:
        payload = None if body is None else json.dumps(body).encode()
        for attempt in (1, 2):
            try:
                self.connection.request(method, path, body=payload, headers=self.headers)
                response = self.connection.getresponse()
                return response.status, response.read()
            except (http.client.HTTPException, OSError):
                self.connection.close()
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=60)
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


class Run:
    """One benchmark run: the deployment, its meters, the idle baseline and the rows measured."""

    def __init__(self, deployment: Deployment, *, operations: int, rng: random.Random) -> None:
        self.deployment = deployment
        self.operations = operations
        self.rng = rng
        self.client = Client(deployment.web.url, deployment.api_key)
        self.meters: Meters = deployment.meters()
        self.baseline: Cost | None = None
        self.rows: list[Row] = []
        self.errors = 0
        self.run_id = uuid.uuid4().hex[:6]
        self.user = f"u-capacity-{self.run_id}"  # a user of this run's messages alone: search covers what was filled

    # --- Helpers -------------------------------------------------------------------------------

    def messages(self, count: int) -> list[dict[str, str]]:
        return [{"role": "user" if index % 2 == 0 else "assistant", "content": content(self.rng)} for index in range(count)]

    def append(self, conversation_id: str, count: int) -> int:
        status, _ = self.client.send(
            "POST",
            f"/api/v1/conversations/{conversation_id}/messages/",
            {"messages": self.messages(count), "user_id": self.user},
        )
        return status

    def query(self) -> str:
        """A different query each time: the web process memoises query vectors, an agent's queries differ."""
        return " ".join(self.rng.sample(WORDS, 4)) + f" {self.rng.randrange(10**6)}"

    def stored(self) -> int:
        from conversations.models import Message

        return Message.objects.for_tenant(self.deployment.tenant).count()

    def embedded(self) -> int:
        from search.models import MessageEmbedding

        return MessageEmbedding.objects.for_tenant(self.deployment.tenant).count()

    def settled(self, *, stored: int, conversations: list[str]) -> None:
        """Until ``stored`` messages are rows and no write of ``conversations`` is pending in Redis any
        more (each persist task settled the cache; its ack follows)."""
        from conversations import cache

        wait_until(lambda: self.stored() >= stored, timeout=SETTLE_TIMEOUT, message=f"{stored} messages persisted")
        slug = self.deployment.tenant.slug
        keys = [cache.key(slug, conversation_id, "pending") for conversation_id in conversations]

        def none_pending() -> bool:
            pending = [self.meters.redis.hlen(key) for key in keys]
            self.meters.own("hlen", len(keys))
            return not any(pending)

        wait_until(none_pending, timeout=SETTLE_TIMEOUT, message="the pending writes settled")

    def derived_done(self, *, embedded: int) -> None:
        """Until ``embedded`` vectors are stored and the derived queue holds no task; then a moment for
        the task in hand to finish."""
        wait_until(lambda: self.embedded() >= embedded, timeout=SETTLE_TIMEOUT, message=f"{embedded} messages embedded")
        queue = self.deployment.env["MEMORY_DERIVED_QUEUE"]
        wait_until(
            lambda: (self.deployment.rabbit.depth(queue) or (1, 0))[0] == 0, timeout=SETTLE_TIMEOUT, message="derived queue empty"
        )
        time.sleep(0.5)

    def timed(self, operation: Callable[[int], int], *, count: int, expected: int) -> list[float]:
        samples = []
        for index in range(count):
            started = time.perf_counter()
            status = operation(index)
            samples.append((time.perf_counter() - started) * 1000)
            if status != expected:
                self.errors += 1
                if self.errors <= 5:
                    print(f"ERROR: answered {status}, expected {expected}", file=sys.stderr)
        return samples

    def measure(
        self,
        name: str,
        operation: Callable[[int], int],
        *,
        expected: int = 200,
        warm: int = 10,
        unit: str = "request",
        after: Callable[[], None] | None = None,
        notes: dict[str, Any] | None = None,
    ) -> Row:
        """``warm`` unmeasured operations, then ``self.operations`` timed ones and whatever ``after``
        waits for (the writes they queued persisted), between two readings of every meter."""
        self.timed(operation, count=warm, expected=expected)
        if after is not None:
            after()
        before = self.meters.read()
        samples = self.timed(lambda index: operation(warm + index), count=self.operations, expected=expected)
        if after is not None:
            after()
        spent = self.meters.spent(before, self.meters.read(end=True))
        return self.row(name, spent, samples=samples, unit=unit, notes=notes)

    def row(
        self,
        name: str,
        spent: Cost,
        *,
        samples: list[float],
        unit: str,
        operations: int | None = None,
        notes: dict[str, Any] | None = None,
    ) -> Row:
        if self.baseline is None:
            raise RuntimeError("measure the idle baseline first")
        operations = operations or self.operations
        cost = per_operation(spent, baseline=self.baseline, operations=operations)
        row = Row(
            operation=name,
            unit=unit,
            count=operations,
            clients=1,
            p50_ms=round(statistics.median(samples), 2) if samples else None,
            p95_ms=round(percentile(samples, 0.95), 2) if samples else None,
            per_second=round(operations / spent.seconds, 1),
            cpu_ms=cost.cpu_ms,
            cpu_ms_total=cost.cpu_ms_total,
            sql_statements=cost.sql_statements,
            redis_commands=cost.redis_commands,
            redis_scripts=cost.redis_scripts,
            broker=cost.broker,
            notes=(notes or {}) | cost.notes | {"redis commands": dict(list(cost.redis_by_command.items())[:8])},
            cpu_ms_outside=cost.outside_cpu_ms,
        )
        self.rows.append(row)
        print(f"  {name}: {row.cpu_ms_total} CPU ms, p50 {row.p50_ms} ms", file=sys.stderr)
        return row

    # --- Phases --------------------------------------------------------------------------------

    def fill(self, *, conversations: int, messages: int) -> list[str]:
        """The read conversations, of one user, persisted and embedded: their embedding is measured
        as one message embedded among a conversation's (tasks of up to MEMORY_EMBEDDING_BATCH)."""
        self.deployment.derived_consuming(True)
        self.embedded_by_derived_worker([f"warm-{self.run_id}"], messages=1)  # the model loaded: not measured
        ids = [f"read-{self.run_id}-{index}" for index in range(conversations)]
        spent = self.embedded_by_derived_worker(ids, messages=messages)
        self.row(
            "embedded message, in batches",
            spent,
            samples=[],
            unit="message",
            operations=conversations * messages,
            notes={"messages embedded per task": messages},
        )
        return ids

    def embedded_by_derived_worker(self, conversations: list[str], *, messages: int) -> Cost:
        """``messages`` appended to each conversation while the derived worker does not consume, then
        what it costs from its first task to the last message embedded."""
        self.deployment.derived_consuming(False)
        stored, embedded = self.stored(), self.embedded()
        for conversation_id in conversations:
            for start in range(0, messages, 50):
                if self.append(conversation_id, min(50, messages - start)) != 201:
                    raise SystemExit("An append was refused: see the gunicorn log under test-artifacts/.")
        self.settled(stored=stored + len(conversations) * messages, conversations=conversations)
        before = self.meters.read()
        self.deployment.derived_consuming(True)
        self.derived_done(embedded=embedded + len(conversations) * messages)
        return self.meters.spent(before, self.meters.read(end=True))

    def idle(self, seconds: float) -> None:
        before = self.meters.read()
        time.sleep(seconds)
        self.baseline = self.meters.spent(before, self.meters.read(end=True))

    def appends(self, *, batch: int, pool: list[str]) -> None:
        """Appends of ``batch`` messages round the pool's conversations, until persisted and settled."""
        stored = [self.stored()]

        def operation(index: int) -> int:
            stored[0] += batch
            return self.append(pool[index % len(pool)], batch)

        self.measure(
            f"append, batch of {batch}",
            operation,
            expected=201,
            after=lambda: self.settled(stored=stored[0], conversations=pool),
            notes={"messages per request": batch},
        )

    def embeddings(self) -> None:
        """A second message in each of ``operations`` new conversations: a task embeds one message,
        with the turn before it (as a message is embedded, ``search.embeddings.document_text``)."""
        fresh = [f"embed-{self.run_id}-{index}" for index in range(self.operations)]
        self.embedded_by_derived_worker(fresh, messages=1)  # the first turns: not measured
        spent = self.embedded_by_derived_worker(fresh, messages=1)
        self.row(
            "embedded message, one per task",
            spent,
            samples=[],
            unit="message",
            notes={"messages embedded per task": 1},
        )

    def cold_reads(self, conversations: list[str]) -> None:
        from conversations import cache

        slug = self.deployment.tenant.slug

        def operation(index: int) -> int:
            self.meters.redis.delete(cache.key(slug, conversations[index % len(conversations)], "messages"))
            self.meters.own("del")
            return self.window(conversations[index % len(conversations)])

        self.measure("cold window read", operation, notes={"messages in conversation": len(conversations)})

    def window(self, conversation_id: str) -> int:
        return self.client.send("GET", f"/api/v1/conversations/{conversation_id}/messages/?limit={WINDOW}")[0]


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    memory_kb = next(
        int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal")
    )
    return {
        "cpu": model,
        "cores": os.cpu_count(),
        "memory_gib": round(memory_kb / 2**20, 1),
        "python": platform.python_version(),
        "load_average_at_start": os.getloadavg(),
    }


def print_table(rows: list[Row]) -> None:
    outside = sorted({name for row in rows for name in row.cpu_ms_outside})
    print(
        "\n| operation | unit | p50 ms | p95 ms | "
        + " | ".join(f"CPU ms {name}" for name in COMPONENTS)
        + " | CPU ms total | SQL statements | Redis commands (scripts) | broker published | broker delivered |"
        + "".join(f" CPU ms {name} (outside) |" for name in outside)
    )
    print("|---|---|---:|---:|" + "---:|" * (len(COMPONENTS) + 5 + len(outside)))
    for row in rows:
        cells = [
            row.operation,
            row.unit,
            row.p50_ms if row.p50_ms is not None else "",
            row.p95_ms if row.p95_ms is not None else "",
        ]
        cells += [row.cpu_ms[name] for name in COMPONENTS]
        cells += [row.cpu_ms_total, row.sql_statements, f"{row.redis_commands} ({row.redis_scripts})"]
        cells += [row.broker["published"], row.broker["delivered"]]
        cells += [row.cpu_ms_outside.get(name, 0.0) for name in outside]
        print("| " + " | ".join(str(cell) for cell in cells) + " |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.capacity", description=__doc__.split("\n\n")[0])
    parser.add_argument("--operations", type=int, default=500, help="timed operations of each kind")
    parser.add_argument("--conversations", type=int, default=10, help="conversations read, searched and appended to")
    parser.add_argument("--messages", type=int, default=100, help="messages of each read conversation")
    parser.add_argument("--idle", type=float, default=10.0, help="seconds of the idle baseline")
    parser.add_argument("--web-workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument(
        "--embedding-server",
        action="store_true",
        help=f"embed on the model server ({REMOTE_MODEL}), outside the service and metered apart, not in process",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    database_url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE)
    if "bench" not in urlsplit(database_url).path:
        raise SystemExit(f"Refusing {database_url!r}: DATABASE_URL must name a benchmark database (with 'bench' in its name).")
    started = time.time()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run stops what it started
    deployment = Deployment(database_url=database_url, web_workers=options.web_workers, embedding_server=options.embedding_server)
    server = ", the embedding server" if options.embedding_server else ""
    print(f"Starting Redis, RabbitMQ{server}, gunicorn and two Celery workers...", file=sys.stderr)
    try:
        deployment.start()
        run = Run(deployment, operations=options.operations, rng=random.Random(options.seed))
        about = machine()
        print(f"Idle baseline, {options.idle:.0f} s...", file=sys.stderr)
        run.idle(options.idle)
        print(f"Filling {options.conversations} conversations of {options.messages} messages, embedded...", file=sys.stderr)
        read = run.fill(conversations=options.conversations, messages=options.messages)
        print(f"Measuring, {options.operations} operations each...", file=sys.stderr)
        run.measure("window read (cache)", lambda index: run.window(read[index % len(read)]))
        run.cold_reads(read)
        run.measure(
            "context read",
            lambda index: run.client.send(
                "POST",
                f"/api/v1/conversations/{read[index % len(read)]}/context/",
                {"query": run.query(), "system_prompt": "You are a helpful agent.", "max_tokens": 4000},
            )[0],
        )
        run.measure(
            "search (hybrid)",
            lambda index: run.client.send("POST", f"/api/v1/users/{run.user}/search/", {"q": run.query(), "top_k": 8})[0],
            notes={"messages of the user": options.conversations * options.messages},
        )
        deployment.derived_consuming(False)
        pool = [f"append-{run.run_id}-{index}" for index in range(options.conversations)]
        run.appends(batch=1, pool=pool)
        run.appends(batch=10, pool=pool)
        purged = deployment.purge("MEMORY_DERIVED_QUEUE")  # the appends' derived tasks: not what is measured next
        run.embeddings()
        about["load_average_at_end"] = os.getloadavg()
        about["versions"] = versions(run)
    finally:
        deployment.stop()
    print_table(run.rows)
    print(
        "\nCPU ms per operation, the idle deployment's CPU over as long taken away. CPU time is what each process "
        "used, whoever else shares the cores, so it is the robust figure here; latencies are of this shared "
        f"machine at the time (load average {about['load_average_at_start'][0]:.1f} at start). One client, "
        "keep-alive HTTP; SQL statements as sent on the wire by every process, Redis commands and RabbitMQ "
        f"messages from the engines' own counters (Redis counts the commands a script runs; the script calls, each one round trip, are in brackets). {purged} derived tasks of the appends were set aside."
    )
    if options.embedding_server:
        print(
            f"\nEmbedded on the model server ({REMOTE_MODEL}, MEMORY_EMBEDDING_BASE_URL): the {EMBEDDING_SERVER}'s "
            "CPU is outside the service, given apart and in no total."
        )
    if run.errors:
        print(f"\nERROR: {run.errors} requests did not answer as expected; the figures are not valid.")
    if options.json:
        options.json.parent.mkdir(parents=True, exist_ok=True)
        options.json.write_text(
            json.dumps(
                {
                    "about": (
                        "python -m benchmarks.capacity: cost per operation of each component, one client, "
                        f"{options.operations} operations each, the idle baseline subtracted; "
                        "CPU milliseconds from /proc and Redis INFO, round trips from the engines' counters."
                    ),
                    "date": time.strftime("%Y-%m-%d", time.gmtime(started)),
                    "machine": about,
                    "settings": {
                        "operations": options.operations,
                        "conversations": options.conversations,
                        "messages": options.messages,
                        "idle_seconds": options.idle,
                        "web": f"gunicorn {options.web_workers} gthread workers x {deployment.web_threads} threads",
                        "persist worker": "celery threads pool x 8",
                        "derived worker": "celery prefork x 1",
                        "embedding": (
                            f"on the {EMBEDDING_SERVER} (benchmarks.model_server, {REMOTE_MODEL}), outside the service"
                            if options.embedding_server
                            else "in process (the derived worker; the web for queries)"
                        ),
                    },
                    "baseline_cpu_ms_per_second": {
                        name: round(value / run.baseline.seconds, 3) for name, value in run.baseline.cpu_ms.items()
                    }
                    if run.baseline
                    else {},
                    "figures": [asdict(row) for row in run.rows],
                    "errors": run.errors,
                },
                indent=2,
            )
            + "\n"
        )
    return 1 if run.errors else 0


def versions(run: Run) -> dict[str, str]:
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("SHOW server_version")
        postgres = cursor.fetchone()[0]
    return {
        "postgresql": postgres,
        "redis": str(run.meters.redis.info("server")["redis_version"]),
        "rabbitmq": run.deployment.rabbit.ctl("eval", "rabbit_misc:version().").strip().strip('"'),
    }


if __name__ == "__main__":
    sys.exit(main())

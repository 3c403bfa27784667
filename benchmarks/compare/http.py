"""The service over HTTP: window reads and durable appends through gunicorn, at 1 and 16 concurrent clients.

``http_figures`` starts gunicorn and a Celery worker with the caller's settings (database, Redis,
queue), drives them with an asyncio load generator (aiohttp, one session), and measures:

* p50, p99 and requests per second of ``GET .../messages/?limit=50`` on conversations of 100 messages
  and of 10,000, and of ``POST .../messages/`` (a 201 is a broker-confirmed write);
* the persist lag of those appends (acknowledgement to committed row), read from the worker's
  ``messages_persisted`` log lines;
* the share of window reads answered from Redis, from the Prometheus counters of all gunicorn workers;
* resident memory of gunicorn and of the Celery worker after the load;
* Redis round trips and SQL statements per request, counted in process through ``django.test.Client``
  (the same middleware, authentication, throttle and view as under gunicorn).

The tenant throttle is raised far above the load so that no request is refused with 429, the access
log is off (it costs CPU on the two cores this shares with the load generator), and any answer that
is not 2xx is counted and reported. Each row's notes hold the CPU time per request spent by gunicorn,
the Celery worker and the load generator, which says more than latency on a shared machine.

gunicorn runs 2 gthread workers of 4 threads by default. On two cores, two processes use both; the
threads overlap the Redis and broker round trips an append waits on (and let appends of one process
share a broker confirm), and gthread keeps connections alive where sync workers close each one. Against
2, 3 and 4 sync workers and other gthread shapes it served the most reads and appends per second at 16
clients, for the least CPU per request in gunicorn and in the load generator.

``python -m benchmarks.compare.http`` fills a few conversations itself (tenant ``bench-compare``), runs the figures
and prints them with a profile of the in-process request path; at the end it empties the derived-memory
queue, which nothing here consumes. It needs the benchmark's own resources in the environment
(``DATABASE_URL`` naming a database with "bench" in its name, ``REDIS_URL``, ``MEMORY_QUEUE``):

    DATABASE_URL=postgres://.../<bench db> REDIS_URL=redis://127.0.0.1:6379/<n> MEMORY_QUEUE=<bench queue> \\
        .venv/bin/python -m benchmarks.compare.http [--conversations 20] [--long 10000] [--operations 2000] \\
        [--workers 2] [--threads 4] [--clients 1 16] [--profile 300] [--json PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import random
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import psutil
from django.conf import settings
from tqdm import tqdm

from benchmarks.compare.measure import Figures, counting, percentile, summarise
from benchmarks.compare.workload import WINDOW, content, messages
from torture.processes import CeleryWorker, WebServer, wait_until

SYSTEM = "service HTTP"
TENANT_SLUG = "bench-compare"
# Far above anything two cores can serve in one window: the throttle still runs (one Redis call per
# request, as in production) but never answers 429.
RATE_LIMIT = 1_000_000_000
WARM_UP = 300  # requests before each timed phase: connections, imports, caches
COUNTED_REQUESTS = 20  # in-process requests per operation for the Redis and SQL counts
PERSIST_TIMEOUT = 180.0  # seconds to wait for the worker to commit what was acknowledged
# The write queue's worker as README's Operations section runs it: persisting waits on PostgreSQL,
# Redis and the broker, so threads keep more tasks in flight than processes, in one process.
WRITE_WORKER = {"pool": "threads", "concurrency": 8}
MESSAGES_PATH = "/api/v1/conversations/{conversation_id}/messages/"

Request = tuple[str, str, bytes | None]  # method, path, body


@dataclass
class HttpResults:
    """What ``http_figures`` measured: one row per operation, size and client count, and the whole run's figures."""

    figures: list[Figures]
    persist_lag_p50_ms: float | None
    persist_lag_p99_ms: float | None
    cache_hit_rate: float | None
    rss_mb: dict[str, float]
    errors: int = 0  # answers that were not 2xx (or the expected status), over every timed phase
    server: str = ""  # how gunicorn ran
    profile: str = ""  # where an in-process request spends its time, when asked for
    notes: dict[str, Any] = field(default_factory=dict)


# --- The processes ------------------------------------------------------------------------------


class BenchWebServer(WebServer):
    """gunicorn without the access log, with sync workers or (``threads`` > 1) gthread workers."""

    def __init__(self, *, env: dict[str, str], name: str, workers: int, threads: int = 1) -> None:
        super().__init__(env=env, name=name, workers=workers, threads=threads)

    def command(self) -> list[str]:
        command = super().command()
        at = command.index("--access-logfile")
        del command[at : at + 2]
        if self.threads == 1:
            at = command.index("--worker-class")
            command[at + 1] = "sync"
        return command

    @property
    def description(self) -> str:
        kind = f"gthread x {self.threads} threads" if self.threads > 1 else "sync"
        return f"gunicorn {self.workers} {kind} workers, no access log"


def service_env(*, log_level: str, metrics_dir: str | None = None, metrics_token: str = "") -> dict[str, str]:
    """The environment of gunicorn and the worker: this process's settings (database, Redis, broker,
    queues) with the throttle out of the way, DEBUG off, and (given a directory) metrics summed over
    processes."""
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test"),
        MEMORY_QUEUE=settings.MEMORY_QUEUE,
        MEMORY_DERIVED_QUEUE=settings.MEMORY_DERIVED_QUEUE,
        MEMORY_EMBEDDING_MODEL=settings.MEMORY_EMBEDDING_MODEL,
        MEMORY_RATE_LIMIT=str(RATE_LIMIT),
        MEMORY_METRICS_TOKEN=metrics_token,
        DJANGO_DEBUG="false",
        DJANGO_LOG_LEVEL=log_level,
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    if metrics_dir is not None:
        env["PROMETHEUS_MULTIPROC_DIR"] = metrics_dir
    return env


def resident_mb(pid: int) -> tuple[float, float]:
    """RSS and PSS (shared pages divided among sharers) of a process and all its descendants, in MB."""
    root = psutil.Process(pid)
    rss = pss = 0
    for process in [root, *root.children(recursive=True)]:
        try:
            memory = process.memory_full_info()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        rss += memory.rss
        pss += getattr(memory, "pss", memory.rss)
    return round(rss / 2**20, 1), round(pss / 2**20, 1)


# --- Persist lag from the worker's log ----------------------------------------------------------


class PersistedLog:
    """The worker's ``messages_persisted`` log records from an offset on, read incrementally."""

    def __init__(self, log_path: Path, *, offset: int) -> None:
        self.log_path = log_path
        self.offset = offset
        self.records: list[dict[str, Any]] = []

    def read(self) -> list[dict[str, Any]]:
        with open(self.log_path, "rb") as log:
            log.seek(self.offset)
            chunk = log.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]  # a line still being written is read next time
        self.offset += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            if '"messages_persisted"' not in line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if record.get("event") == "messages_persisted" and "lag_ms" in record:
                self.records.append(record)
        return self.records

    @property
    def committed(self) -> int:
        return sum(int(record.get("inserted", 1)) for record in self.records)


def wait_for_quiet_worker(log_path: Path, *, quiet: float = 1.5, timeout: float = PERSIST_TIMEOUT) -> None:
    """Until the worker has logged nothing for ``quiet`` seconds: what earlier phases queued is persisted."""
    deadline = time.monotonic() + timeout
    size, since = log_path.stat().st_size, time.monotonic()
    while time.monotonic() < deadline:
        time.sleep(0.2)
        now_size = log_path.stat().st_size
        if now_size != size:
            size, since = now_size, time.monotonic()
        elif time.monotonic() - since >= quiet:
            return
    tqdm.write(f"WARNING: the Celery worker was still busy after {timeout:.0f}s; lag figures include older writes.")


def wait_for_persisted(log_path: Path, *, offset: int, expected: int) -> list[float]:
    """Lags (ms) of the batches persisted since ``offset``, once ``expected`` messages are committed."""
    persisted = PersistedLog(log_path, offset=offset)
    deadline = time.monotonic() + PERSIST_TIMEOUT
    while True:
        persisted.read()
        if persisted.committed >= expected:
            break
        if time.monotonic() > deadline:
            tqdm.write(
                f"WARNING: only {persisted.committed} of {expected} acknowledged messages were persisted within "
                f"{PERSIST_TIMEOUT:.0f}s by this worker (log: {log_path}). Another worker on queue "
                f"{settings.MEMORY_QUEUE!r} may be taking tasks, or this one is stuck: stop other workers, then read the log."
            )
            if not persisted.records:
                tqdm.write(
                    "WARNING: no messages_persisted line at all: the worker must log at INFO (DJANGO_LOG_LEVEL) and "
                    "conversations.services.messages_persist must log the lag."
                )
            break
        time.sleep(0.25)
    return [float(record["lag_ms"]) for record in persisted.records]


# --- Prometheus counters ------------------------------------------------------------------------


async def cache_counts(session: aiohttp.ClientSession, *, token: str) -> Counter[str]:
    """``memory_cache_requests_total{data_type="messages"}`` by result, summed over gunicorn workers."""
    from prometheus_client.parser import text_string_to_metric_families

    async with session.get("/metrics", headers={"Authorization": f"Bearer {token}"}) as response:
        text = await response.text()
        if response.status != 200:
            raise RuntimeError(f"/metrics answered {response.status}: {text[:200]}")
    counts: Counter[str] = Counter()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "memory_cache_requests_total" and sample.labels.get("data_type") == "messages":
                counts[sample.labels.get("result", "")] += sample.value
    return counts


# --- Load generator -----------------------------------------------------------------------------


@dataclass
class Load:
    samples: list[float]  # ms, one per request
    elapsed: float  # s, wall time of the whole phase
    statuses: Counter[int | str]  # status code (or exception name) -> requests
    expected: int

    @property
    def failures(self) -> int:
        return sum(count for status, count in self.statuses.items() if status != self.expected)


async def drive(session: aiohttp.ClientSession, *, requests: list[Request], clients: int, expected: int, label: str) -> Load:
    """Send ``requests`` from ``clients`` coroutines that each take the next one until all are done."""
    samples: list[float] = []
    statuses: Counter[int | str] = Counter()
    position = 0
    progress = tqdm(total=len(requests), desc=label, unit="req", leave=False)

    async def client() -> None:
        nonlocal position
        while position < len(requests):
            method, path, body = requests[position]
            position += 1
            started = time.perf_counter()
            try:
                async with session.request(method, path, data=body) as response:
                    await response.read()
                    status: int | str = response.status
            except (aiohttp.ClientError, TimeoutError) as error:
                status = type(error).__name__
            samples.append((time.perf_counter() - started) * 1000)
            statuses[status] += 1
            progress.update()

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    progress.close()
    return Load(samples=samples, elapsed=elapsed, statuses=statuses, expected=expected)


def read_requests(conversation_ids: list[str], *, count: int, rng: random.Random) -> list[Request]:
    return [
        ("GET", MESSAGES_PATH.format(conversation_id=rng.choice(conversation_ids)) + f"?limit={WINDOW}", None)
        for _ in range(count)
    ]


def append_requests(conversation_ids: list[str], *, count: int, rng: random.Random) -> list[Request]:
    return [
        (
            "POST",
            MESSAGES_PATH.format(conversation_id=rng.choice(conversation_ids)),
            json.dumps({"role": "user", "content": content(rng)}).encode(),
        )
        for _ in range(count)
    ]


def report_failures(load: Load, *, label: str) -> None:
    if load.failures:
        shown = ", ".join(f"{status}: {count}" for status, count in load.statuses.most_common())
        tqdm.write(
            f"ERROR: {label}: {load.failures} of {len(load.samples)} requests did not answer {load.expected} ({shown}). "
            "These figures are not valid; see the gunicorn and Celery logs under test-artifacts/."
        )


# --- In-process counts and profile ---------------------------------------------------------------


def in_process_counts(
    *, key: str, path: str, body: bytes | None, count: int = COUNTED_REQUESTS, method: str = "POST"
) -> tuple[float, float]:
    """Redis round trips and SQL statements per request through ``django.test.Client``, with the
    throttle on as gunicorn runs it (its count is one of the round trips). A request without a body
    is a GET; one with a body is sent with ``method``."""
    from django.test import Client, override_settings

    client = Client(HTTP_AUTHORIZATION=f"Api-Key {key}")

    def send() -> int:
        if body is None:
            return client.get(path).status_code
        return client.generic(method, path, data=body, content_type="application/json").status_code

    with override_settings(MEMORY_RATE_LIMIT=RATE_LIMIT):
        send()  # the first request of a key caches its record and reads the tenant: not the steady state
        with counting() as counts:
            statuses = [send() for _ in range(count)]
    if any(status >= 300 for status in statuses):
        tqdm.write(f"ERROR: in-process {path} answered {Counter(statuses)}; the counts are not of the normal path.")
    return round(counts.redis / count, 2), round(counts.sql / count, 2)


def request_profile(*, key: str, conversations: list[str], count: int, rng: random.Random, top: int = 25) -> str:
    """Where an API request spends its time: ``count`` window GETs, then ``count`` append POSTs, through
    ``django.test.Client`` (gunicorn's request path minus the HTTP parsing), each under cProfile."""
    from django.test import Client

    client = Client(HTTP_AUTHORIZATION=f"Api-Key {key}")

    def send(request: Request) -> int:
        _method, path, body = request
        if body is None:
            return client.get(path).status_code
        return client.post(path, data=body, content_type="application/json").status_code

    sections = []
    for label, requests in (
        ("window read (100 messages)", read_requests(conversations, count=count + 20, rng=rng)),
        ("append (durable)", append_requests(conversations, count=count + 20, rng=rng)),
    ):
        statuses = Counter(send(request) for request in requests[:20])  # warm
        started_cpu, started = time.process_time(), time.perf_counter()
        statuses.update(send(request) for request in requests[20:])
        cpu_ms, wall_ms = ((time.process_time() - started_cpu) * 1000 / count, (time.perf_counter() - started) * 1000 / count)
        profiler = cProfile.Profile()
        profiler.enable()
        statuses.update(send(request) for request in requests[20:])
        profiler.disable()
        sections.append(
            f"{label}: {wall_ms:.2f} ms wall, {cpu_ms:.2f} ms CPU per request without the profiler; statuses {dict(statuses)}\n"
            + profile_table(profiler, requests=count, top=top)
        )
    return "\n".join(sections)


def profile_table(profiler: cProfile.Profile, *, requests: int, top: int) -> str:
    """The functions with the most own time, and the project's functions by cumulative time, per request."""
    root = str(Path(__file__).resolve().parents[2]) + os.sep  # the repository

    def where(path: str, line: int, name: str) -> str:
        if "site-packages" in path:
            path = path.split("site-packages" + os.sep)[-1]
        elif path.startswith(root):
            path = path.removeprefix(root)
        elif path != "~":
            path = "python/" + Path(path).name
        return f"{path}:{line}({name})"

    def is_service(path: str) -> bool:
        return path.startswith(root) and "site-packages" not in path and not path.startswith(root + "benchmarks" + os.sep)

    stats = pstats.Stats(profiler)
    rows = [
        (where(path, line, name), is_service(path), calls / requests, own * 1000 / requests, cumulative * 1000 / requests)
        for (path, line, name), (_, calls, own, cumulative, _) in stats.stats.items()  # type: ignore[attr-defined]
    ]
    total = stats.total_tt * 1000 / requests  # type: ignore[attr-defined]
    lines = [f"  {total:.2f} ms per request under the profiler", "  most own time:   own ms   cum ms  calls"]
    for name, _, calls, own, cumulative in sorted(rows, key=lambda row: -row[3])[:top]:
        lines.append(f"    {own:8.3f} {cumulative:8.3f} {calls:6.1f}  {name}")
    lines.append("  the service's own functions by cumulative time:")
    for name, _, calls, own, cumulative in sorted((row for row in rows if row[1]), key=lambda row: -row[4])[:top]:
        lines.append(f"    {own:8.3f} {cumulative:8.3f} {calls:6.1f}  {name}")
    return "\n".join(lines) + "\n"


def api_key_for(*, slug: str = TENANT_SLUG) -> tuple[Any, str]:
    """A fresh API key of the benchmark tenant (its record and the plain key)."""
    from tenants import services
    from tenants.models import Tenant

    tenant = Tenant.objects.filter(slug=slug).first()
    if tenant is None:
        raise SystemExit(f"No tenant {slug!r}: fill the benchmark conversations first (python -m benchmarks.compare).")
    if "MEMORY_RATE_LIMIT" in (tenant.settings or {}):
        tqdm.write(f"WARNING: tenant {slug} overrides MEMORY_RATE_LIMIT={tenant.settings['MEMORY_RATE_LIMIT']}: expect 429s.")
    return services.api_key_create(tenant=tenant, name="bench-http")


# --- The figures --------------------------------------------------------------------------------


def http_figures(
    *,
    conversations: list[str],
    long_conversation: str,
    operations: int,
    rng: random.Random,
    web_workers: int = 2,
    web_threads: int = 4,
    clients: tuple[int, ...] = (1, 16),
    long_size: int = 10_000,
    profile: int = 0,
) -> HttpResults:
    """Window reads (100 and ``long_size`` messages) and appends over HTTP at each client count.

    ``conversations`` (100 messages each) and ``long_conversation`` belong to the tenant
    ``bench-compare`` and are already cached. Appends go to ``conversations``. With ``profile`` > 0,
    ``results.profile`` holds a cProfile of that many in-process reads and appends.
    """
    from tenants import services as tenant_services

    api_key, key = api_key_for()
    metrics_dir = tempfile.mkdtemp(prefix="bench-http-metrics-")
    metrics_token = secrets.token_urlsafe(16)
    web = BenchWebServer(
        env=service_env(metrics_dir=metrics_dir, metrics_token=metrics_token, log_level="WARNING"),
        name="bench-http",
        workers=web_workers,
        threads=web_threads,
    )
    # INFO: the worker's messages_persisted lines carry the persist lag.
    worker = CeleryWorker(env=service_env(log_level="INFO"), name="bench-http", **WRITE_WORKER)
    try:
        worker.start()
        web.start()
        results = asyncio.run(
            _load_phases(
                web=web,
                worker=worker,
                key=key,
                metrics_token=metrics_token,
                conversations=conversations,
                long_conversation=long_conversation,
                long_size=long_size,
                operations=operations,
                rng=rng,
                clients=clients,
            )
        )
        gunicorn_rss, gunicorn_pss = resident_mb(web.process.pid)
        celery_rss, celery_pss = resident_mb(worker.process.pid)
        results.rss_mb = {"gunicorn": gunicorn_rss, "celery": celery_rss, "gunicorn pss": gunicorn_pss, "celery pss": celery_pss}
        results.server = web.description
        _add_counts(
            results.figures,
            key=key,
            conversations=conversations,
            long_conversation=long_conversation,
            long_size=long_size,
            rng=rng,
        )
        if profile:
            results.profile = request_profile(key=key, conversations=conversations, count=profile, rng=rng)
            wait_for_quiet_worker(worker.log_path)  # the profiled appends are persisted before the worker stops
        return results
    finally:
        web.stop()
        worker.stop()
        shutil.rmtree(metrics_dir, ignore_errors=True)
        tenant_services.api_key_revoke(api_key=api_key)


async def _load_phases(
    *,
    web: BenchWebServer,
    worker: CeleryWorker,
    key: str,
    metrics_token: str,
    conversations: list[str],
    long_conversation: str,
    long_size: int,
    operations: int,
    rng: random.Random,
    clients: tuple[int, ...],
) -> HttpResults:
    # Idle connections are dropped after 1 s, before gunicorn's keep-alive (2 s) closes them: a request
    # sent on a connection the server is closing at that moment fails (ClientOSError), as between a
    # warm-up and the timed requests that wait for the worker to be quiet.
    connector = aiohttp.TCPConnector(limit=max(clients) * 2, limit_per_host=max(clients) * 2, keepalive_timeout=1.0)
    headers = {"Authorization": f"Api-Key {key}", "Content-Type": "application/json"}
    figures: list[Figures] = []
    all_lags: list[float] = []
    async with aiohttp.ClientSession(
        web.url, connector=connector, headers=headers, timeout=aiohttp.ClientTimeout(total=60)
    ) as session:

        async def phase(operation: str, *, size: int, count: int, make: Callable[[int], list[Request]], expected: int) -> Figures:
            label = f"HTTP {operation} {size:,} x{count}"
            await drive(session, requests=make(WARM_UP), clients=count, expected=expected, label="warm-up")
            if expected == 201:  # what the warm-up queued is persisted before the timed appends start
                await asyncio.to_thread(wait_for_quiet_worker, worker.log_path)
            offset = worker.log_path.stat().st_size
            cpu_before = cpu_seconds(web=web, worker=worker)
            load = await drive(session, requests=make(operations), clients=count, expected=expected, label=label)
            report_failures(load, label=label)
            row = _figures(operation, size=size, clients=count, load=load)
            if expected == 201:
                lags = await asyncio.to_thread(
                    wait_for_persisted, worker.log_path, offset=offset, expected=load.statuses.get(201, 0)
                )
                all_lags.extend(lags)
                if lags:
                    row.notes["persist_lag_p50_ms"] = round(statistics.median(lags), 1)
                    row.notes["persist_lag_p99_ms"] = round(percentile(lags, 0.99), 1)
            cpu_after = cpu_seconds(web=web, worker=worker)
            row.notes["cpu_ms_per_request"] = {
                name: round((cpu_after[name] - cpu_before[name]) * 1000 / len(load.samples), 3) for name in cpu_after
            }
            return row

        await asyncio.to_thread(wait_for_quiet_worker, worker.log_path)  # writes queued before this run are persisted
        before = await cache_counts(session, token=metrics_token)
        for size, chosen in ((100, conversations), (long_size, [long_conversation])):
            for count in clients:
                figures.append(
                    await phase(
                        "window read",
                        size=size,
                        count=count,
                        make=lambda n, chosen=chosen: read_requests(chosen, count=n, rng=rng),
                        expected=200,
                    )
                )
        after = await cache_counts(session, token=metrics_token)
        reads = {result: after[result] - before[result] for result in ("hit", "miss", "error")}
        total_reads = sum(reads.values())
        for count in clients:
            figures.append(
                await phase(
                    "append (durable)",
                    size=100,
                    count=count,
                    make=lambda n: append_requests(conversations, count=n, rng=rng),
                    expected=201,
                )
            )
    return HttpResults(
        figures=figures,
        persist_lag_p50_ms=round(statistics.median(all_lags), 1) if all_lags else None,
        persist_lag_p99_ms=round(percentile(all_lags, 0.99), 1) if all_lags else None,
        cache_hit_rate=round(reads["hit"] / total_reads, 4) if total_reads else None,
        rss_mb={},
        errors=sum(row.notes["non_2xx"] for row in figures),
        notes={"window reads by cache result": reads},
    )


def cpu_seconds(*, web: BenchWebServer, worker: CeleryWorker | None) -> dict[str, float]:
    """CPU time so far of gunicorn (master and workers), the Celery worker (with its pool) when there is
    one, and this process."""
    seconds = {"gunicorn": _tree_cpu(web.process.pid)}
    if worker is not None:
        seconds["celery"] = _tree_cpu(worker.process.pid)
    return seconds | {"load generator": time.process_time()}


def _tree_cpu(pid: int) -> float:
    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def _figures(operation: str, *, size: int, clients: int, load: Load) -> Figures:
    row = summarise(SYSTEM, operation, size=size, clients=clients, samples=load.samples, elapsed=load.elapsed)
    row.notes = {"non_2xx": load.failures} | ({"statuses": dict(load.statuses)} if load.failures else {})
    return row


def _add_counts(
    figures: list[Figures], *, key: str, conversations: list[str], long_conversation: str, long_size: int, rng: random.Random
) -> None:
    """Fill each row's Redis and SQL statements per request from in-process requests on the same path."""
    read = MESSAGES_PATH + f"?limit={WINDOW}"
    measured = {
        ("window read", 100): in_process_counts(key=key, path=read.format(conversation_id=conversations[0]), body=None),
        ("window read", long_size): in_process_counts(key=key, path=read.format(conversation_id=long_conversation), body=None),
        ("append (durable)", 100): in_process_counts(
            key=key,
            path=MESSAGES_PATH.format(conversation_id=conversations[0]),
            body=json.dumps({"role": "user", "content": content(rng)}).encode(),
        ),
    }
    for row in figures:
        row.redis_calls, row.sql_queries = measured[(row.operation, row.size)]


# --- python -m benchmarks.compare.http -------------------------------------------------------------------------


def fill(*, count: int, long: int, rng: random.Random) -> tuple[list[str], str]:
    """``count`` conversations of 100 messages and one of ``long`` in the tenant bench-compare, appended
    through the service (a Celery worker persists them)."""
    from conversations import services
    from tenants.models import Tenant

    tenant, _ = Tenant.objects.get_or_create(slug=TENANT_SLUG, defaults={"name": "Bench compare"})
    run = uuid.uuid4().hex[:6]
    sizes = {f"http-{run}-{index}": 100 for index in range(count)} | {f"http-{run}-long": long}
    for conversation_id, size in tqdm(sizes.items(), desc="filling", unit="conversation"):
        generated = messages(rng, size)
        for start in range(0, size, settings.MEMORY_MAX_BATCH):
            services.message_append(
                tenant=tenant, conversation_id=conversation_id, messages=generated[start : start + settings.MEMORY_MAX_BATCH]
            )
    return [name for name, size in sizes.items() if size == 100], f"http-{run}-long"


def _persisted(*, conversation_ids: list[str], expected: int) -> Callable[[], bool]:
    from conversations.models import Message

    def check() -> bool:
        # Every tenant's rows with these run-unique ids: a benchmark figure, not a tenant's view.
        return Message.unscoped.filter(conversation__conversation_id__in=conversation_ids).count() >= expected

    return check


def print_rows(rows: list[Figures], *, size: str, processes: str) -> None:
    """The HTTP rows as a table: ``size`` names what a row's size counts, ``processes`` whose CPU per
    request its last column gives."""
    print(
        f"| system | operation | {size} | clients | p50 ms | p95 ms | p99 ms | req/s | Redis calls | SQL | non-2xx "
        f"| CPU ms/req {processes} |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for row in rows:
        cpu = ", ".join(str(value) for value in row.notes.get("cpu_ms_per_request", {}).values())
        print(
            f"| {row.system} | {row.operation} | {row.size:,} | {row.clients} | {row.p50_ms} | {row.p95_ms} | {row.p99_ms} | "
            f"{row.per_second:,.0f} | {row.redis_calls} | {row.sql_queries} | {row.notes.get('non_2xx')} | {cpu} |"
        )


def print_results(results: HttpResults) -> None:
    print(f"\n{results.server}")
    print_rows(results.figures, size="messages in conversation", processes="gunicorn, celery, load generator")
    print(f"\npersist lag p50 {results.persist_lag_p50_ms} ms, p99 {results.persist_lag_p99_ms} ms")
    for row in results.figures:
        if "persist_lag_p50_ms" in row.notes:
            print(
                f"  at {row.clients} clients: p50 {row.notes['persist_lag_p50_ms']} ms, p99 {row.notes['persist_lag_p99_ms']} ms"
            )
    print(f"window reads from Redis: {results.cache_hit_rate} ({results.notes.get('window reads by cache result')})")
    print(f"resident memory (MB): {results.rss_mb}")
    if results.errors:
        print(f"\nERROR: {results.errors} requests did not answer as expected; the figures above are not valid.")


def purge_derived_queue() -> None:
    """Empty the benchmark's derived-memory queue: every persist queues derived work that no worker here takes."""
    from memoryproject.celery import app

    queue = settings.MEMORY_DERIVED_QUEUE
    if "bench" not in queue:
        print(f"Left the derived queue {queue!r} as it is: only a queue named for benchmarks is emptied.")
        return
    try:
        with app.connection_for_write() as connection:
            purged = connection.default_channel.queue_purge(queue)
    except Exception as error:  # a queue never declared, a broker gone: nothing to empty
        print(f"Could not empty the derived queue {queue!r}: {error!r}")
        return
    print(f"Emptied the derived queue {queue!r} ({purged} tasks).")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.compare.http", description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversations", type=int, default=20, help="conversations of 100 messages")
    parser.add_argument("--long", type=int, default=10_000, help="messages of the one long conversation")
    parser.add_argument("--operations", type=int, default=2_000, help="timed requests per operation and client count")
    parser.add_argument("--workers", type=int, default=2, help="gunicorn workers")
    parser.add_argument("--threads", type=int, default=4, help="threads per gunicorn worker (above 1: gthread)")
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 16], help="concurrent clients")
    parser.add_argument("--profile", type=int, default=300, help="in-process requests of each kind to profile (0: none)")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    options = parser.parse_args(sys.argv[1:] if argv is None else argv)
    from benchmarks.database import standalone_setup

    standalone_setup()
    rng = random.Random(1)
    worker = CeleryWorker(env=service_env(log_level="WARNING"), name="bench-http-fill", **WRITE_WORKER)
    worker.start()
    try:
        conversations, long_conversation = fill(count=options.conversations, long=options.long, rng=rng)
        wait_until(
            _persisted(conversation_ids=[*conversations, long_conversation], expected=100 * len(conversations) + options.long),
            timeout=PERSIST_TIMEOUT,
            message="the filled conversations to be persisted",
        )
    finally:
        worker.stop()
    results = http_figures(
        conversations=conversations,
        long_conversation=long_conversation,
        operations=options.operations,
        rng=rng,
        web_workers=options.workers,
        web_threads=options.threads,
        clients=tuple(options.clients),
        long_size=options.long,
        profile=options.profile,
    )
    print_results(results)
    if results.profile:
        print("\n" + results.profile)
    purge_derived_queue()
    if options.json:
        options.json.write_text(json.dumps(asdict(results), indent=2, default=str))
    return 1 if results.errors else 0


if __name__ == "__main__":
    sys.exit(main())

"""Timing, concurrency and counting shared by every part of the benchmark.

A figure is one system doing one operation: medians, 95th and 99th percentiles of its latencies, its
throughput, and how many Redis round trips and SQL statements one operation costs.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import psycopg
import redis.connection
from tqdm import tqdm


@dataclass
class Figures:
    system: str
    operation: str
    size: int  # messages in the conversation read or appended to (the agent's rows: of the user; store items of the namespace)
    clients: int
    p50_ms: float
    p95_ms: float
    p99_ms: float
    per_second: float
    redis_calls: float | None = None  # round trips per operation
    sql_queries: float | None = None  # statements per operation
    ratio_to_floor: float | None = None  # p50 / the floor's p50 (below 1 is faster than the floor)
    floor: str | None = None  # the system ratio_to_floor is to, where the table names it
    notes: dict[str, Any] = field(default_factory=dict)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


def summarise(
    system: str, operation: str, *, size: int, clients: int, samples: list[float], elapsed: float, counts: Counts | None = None
) -> Figures:
    """Figures from latencies in milliseconds and the wall time (seconds) they took together."""
    operations = len(samples)
    return Figures(
        system=system,
        operation=operation,
        size=size,
        clients=clients,
        p50_ms=round(statistics.median(samples), 3),
        p95_ms=round(percentile(samples, 0.95), 3),
        p99_ms=round(percentile(samples, 0.99), 3),
        per_second=round(operations / elapsed, 1),
        redis_calls=None if counts is None else round(counts.redis / operations, 2),
        sql_queries=None if counts is None else round(counts.sql / operations, 2),
    )


def run(operation: Callable[[int], object], *, count: int, clients: int = 1, label: str = "") -> tuple[list[float], float]:
    """Run ``operation(i)`` ``count`` times, spread over ``clients`` threads; latencies (ms) and wall time (s).

    Each thread takes the next index until ``count`` are done, so slow clients do fewer.
    """
    samples: list[float] = []
    lock = threading.Lock()
    next_index = iter(range(count))
    progress = tqdm(total=count, desc=label, unit="op", leave=False)

    def client() -> None:
        while True:
            with lock:
                index = next(next_index, None)
            if index is None:
                return
            started = time.perf_counter()
            operation(index)
            took = (time.perf_counter() - started) * 1000
            with lock:
                samples.append(took)
                progress.update()

    started = time.perf_counter()
    if clients == 1:
        client()
    else:
        threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    elapsed = time.perf_counter() - started
    progress.close()
    return samples, elapsed


@dataclass
class Counts:
    redis: int = 0
    sql: int = 0


_active: list[Counts] = []
_count_lock = threading.Lock()
_installed = False


def _install() -> None:
    """Count every Redis round trip (a pipeline is one) and every SQL statement psycopg sends, in process."""
    global _installed
    if _installed:
        return
    _installed = True
    send_packed = redis.connection.AbstractConnection.send_packed_command

    def counted_send(self: Any, command: Any, check_health: bool = True) -> None:
        with _count_lock:
            for counts in _active:
                counts.redis += 1
        return send_packed(self, command, check_health)

    redis.connection.AbstractConnection.send_packed_command = counted_send  # type: ignore[method-assign]

    for name in ("execute", "executemany"):  # Django's cursors and ClientCursor inherit these
        original = getattr(psycopg.Cursor, name)

        def counted(self: Any, *args: Any, __original: Any = original, **kwargs: Any) -> Any:
            with _count_lock:
                for counts in _active:
                    counts.sql += 1
            return __original(self, *args, **kwargs)

        setattr(psycopg.Cursor, name, counted)


@contextmanager
def counting() -> Iterator[Counts]:
    """Count Redis round trips and SQL statements made in this process while the block runs."""
    _install()
    counts = Counts()
    with _count_lock:
        _active.append(counts)
    try:
        yield counts
    finally:
        with _count_lock:
            _active.remove(counts)

"""The Prometheus figures every app counts in, and the registry ``/metrics`` reads.

Each app's own figures live with it (``conversations.metrics`` for the write path and the workers,
``search.metrics`` for the vectors); these are the ones shared by all: Redis operations, timed and
counted by ``core.redis_client``, and the degraded paths an app takes when a backing service is down.
"""

import os

from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram, multiprocess

cache_latency = Histogram(
    "memory_cache_latency_seconds",
    "Latency of Redis operations by tenant and operation.",
    ["tenant", "operation"],
    buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
)
cache_errors = Counter("memory_cache_errors_total", "Redis operations that failed.", ["operation"])
fallbacks = Counter(
    "memory_fallbacks_total",
    "Degraded paths taken: reads served by PostgreSQL with Redis down, writes with PostgreSQL or Redis down.",
    ["kind"],
)


def registry() -> CollectorRegistry:
    """The registry to read: all processes' figures under PROMETHEUS_MULTIPROC_DIR, else this one's."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    aggregate = CollectorRegistry()
    multiprocess.MultiProcessCollector(aggregate)
    return aggregate

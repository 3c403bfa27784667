"""The Prometheus figures every app counts in, and the registry ``/metrics`` reads.

Each app's own figures live with it (``conversations.metrics`` for the write path and the workers,
``search.metrics`` for the vectors); these are the ones shared by all: Redis operations, timed and
counted by ``core.redis_client``, the degraded paths an app takes when a backing service is down, and
where the reads that may be stale went (``core.replica``).
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
replica_reads = Counter(
    "memory_replica_reads_total",
    "Reads that may be slightly stale (cold windows, search, admin lists), by the server that answered and why.",
    ["served_by"],
)
replica_state_changes = Counter(
    "memory_replica_state_changes_total", "The read replica found down, or answering again, by this process.", ["state"]
)
# The model servers a deployment runs (embeddings: ``search.remote``): what each call cost and how it ended
# (ok; failed: an error, a timeout or an answer that is not what was asked; refused: the breaker was open).
model_server_calls = Counter(
    "memory_model_server_calls_total", "Calls to a model server (embeddings), by kind and outcome.", ["kind", "outcome"]
)
model_server_latency = Histogram(
    "memory_model_server_seconds",
    "Time of a call to a model server (retries included), by kind.",
    ["kind"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
)


def registry() -> CollectorRegistry:
    """The registry to read: all processes' figures under PROMETHEUS_MULTIPROC_DIR, else this one's."""
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    aggregate = CollectorRegistry()
    multiprocess.MultiProcessCollector(aggregate)
    return aggregate

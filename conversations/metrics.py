"""Prometheus metrics of the conversations (cache lookups, write path and workers), served at ``/metrics``
with those every app shares (``core.metrics``: Redis operations, degraded paths).

With several gunicorn or Celery processes, set ``PROMETHEUS_MULTIPROC_DIR`` so the figures are
added up across processes (``memoryproject/urls.py`` serves the aggregate). The derived-memory
figures (``selectors.DerivedMemoryCollector``, and ``search.metrics.EmbeddingBacklogCollector``) are read from
the broker and PostgreSQL when ``/metrics`` is scraped, not counted by any process, so they are the same whichever process answers.

The bottom of the app: the services and selectors count here, and this module imports none of them.
"""

from collections.abc import Iterator

import structlog
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.core import Metric

from core.metrics import registry

logger = structlog.get_logger(__name__)

cache_requests = Counter(
    "memory_cache_requests_total",
    "Cache lookups by tenant, data type and result (hit, miss, error).",
    ["tenant", "data_type", "result"],
)
messages_accepted = Counter("memory_messages_accepted_total", "Messages acknowledged with 201.", ["tenant"])
publish_failures = Counter(
    "memory_publish_failures_total",
    "Publishes that failed: refused (the broker did not take the message) or indeterminate (its confirm was lost).",
    ["outcome"],
)
idempotency_unknown = Counter(
    "memory_idempotency_unknown_total",
    "Appends answered 503 because the service could not tell whether a client's message id was already stored.",
)
ledger_vouched = Counter(
    "memory_ledger_vouched_total",
    "Appends whose client ids, unknown while Redis's ledger was not whole, were taken as new because each is a "
    "UUIDv7 made after the ledger began.",
)
replica_unconfirmed = Counter(
    "memory_replica_unconfirmed_total",
    "Appends answered 503 replica_unavailable because no Redis replica confirmed their seqs in time (Redis Cluster).",
)
persist_retries = Counter(
    "memory_persist_retries_total",
    "Persist attempts tried again: the payload failed with the database answering, or the database was unreachable.",
    ["reason"],
)
persist_requeued = Counter(
    "memory_persist_requeued_total", "Persist messages handed back to the broker after waiting too long for the database."
)
ledger_disturbances = Counter(
    "memory_ledger_disturbances_total",
    "Persist messages that may have gone back to the broker while a ledger Redis lost was not whole yet.",
    ["why"],
)
persist_lag = Histogram(
    "memory_persist_lag_seconds",
    "Time from acknowledgement to committed row.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300),
)
persisted = Counter("memory_messages_persisted_total", "Message rows committed by workers.")
dead_letters = Counter("memory_dead_letters_total", "Tasks that failed for good and were recorded.", ["task", "storable"])
queue_depth = Gauge("memory_queue_depth", "Messages waiting in the persist queue (sampled by /status).")


def track_cache(*, tenant: str, data_type: str, hit: bool | None) -> None:
    """Count one cache lookup: hit, miss, or (None) an error that sent the read elsewhere."""
    result = "error" if hit is None else ("hit" if hit else "miss")
    cache_requests.labels(tenant=tenant, data_type=data_type, result=result).inc()


class _Scrape:
    def __init__(self, *sources) -> None:  # noqa: ANN002 - anything with collect()
        self.sources = sources

    def collect(self) -> Iterator[Metric]:
        for source in self.sources:
            yield from source.collect()


def scrape(*collectors):  # noqa: ANN002, ANN201 - anything with collect()
    """What ``/metrics`` serves: the registry's figures and those the ``collectors`` read now
    (``memoryproject.urls`` passes ``selectors.DerivedMemoryCollector`` and ``search.metrics``')."""
    return _Scrape(registry(), *collectors)

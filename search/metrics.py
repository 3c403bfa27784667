"""Search's figures for Prometheus.

The reranker's calls by outcome and their latency (``rerank_calls``, ``rerank_seconds``, counted by
``search.rerank``). The vectors' backlog, read when ``/metrics`` is scraped (``memoryproject.urls`` hands
this collector to ``conversations.metrics.scrape``): per tenant, the messages persisted within the
backfill's day that have no vector yet under its model, and the age of the oldest (0 when none). A
database that does not answer leaves these figures out of the scrape."""

from collections.abc import Iterator

import structlog
from django.db import DatabaseError
from django.utils import timezone
from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

from search.coverage import embedding_backlog

logger = structlog.get_logger(__name__)

# The reranker (search/rerank.py): each search that would rerank counts once, by what came of it.
rerank_calls = Counter(
    "memory_rerank_calls_total",
    "Rerank calls by outcome: ok, http_error, timeout, unreachable, malformed, credential, or skipped (breaker open, "
    "unknown format: not called).",
    ["outcome"],
)
rerank_seconds = Histogram(
    "memory_rerank_seconds",
    "Latency of the calls made to the reranker, answered or failed.",
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0),
)


class EmbeddingBacklogCollector:
    def collect(self) -> Iterator[Metric]:
        try:
            backlog = embedding_backlog()
        except DatabaseError as error:
            logger.warning("metrics_embedding_backlog_unavailable", error=str(error)[:200])
            return
        waiting = GaugeMetricFamily(
            "memory_embedding_backlog_messages",
            "Messages persisted within the last day that have no vector under their tenant's model yet.",
            labels=["tenant"],
        )
        lag = GaugeMetricFamily(
            "memory_embedding_lag_seconds",
            "Age of the oldest message persisted within the last day still waiting for its vector (0: none waits).",
            labels=["tenant"],
        )
        now = timezone.now()
        for tenant in backlog:
            waiting.add_metric([tenant.tenant], tenant.not_embedded)
            oldest = tenant.oldest_persisted_at
            lag.add_metric([tenant.tenant], (now - oldest).total_seconds() if oldest else 0.0)
        yield waiting
        yield lag

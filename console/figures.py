"""The figures of ``/metrics``, as one JSON document a sample keeps, and what is read between two.

``figures_collect`` reads the very collectors ``/metrics`` serves (``conversations.metrics.scrape``
with ``search.metrics.EmbeddingBacklogCollector``), after asking the broker for the queues (which
also refreshes ``memory_queue_depth``), and adds the counts only PostgreSQL holds: the dead letters
waiting for a replay and the conversations awaiting a cache repair. The registry is that of the
process taking the sample: every process's figures added up with ``PROMETHEUS_MULTIPROC_DIR`` (the
embedded run), else the sampling process's own (``source`` records which).

Counters and the persist-lag histogram only ever grow, so a figure over an interval (the lag's p50
and p99, a hit rate) is the difference between two samples (``interval_figures``); a counter that
went down (a restarted process, another process's registry) leaves that interval out.

Shape of a sample (every count an integer; ``None`` where a backend did not answer)::

    {"source": {"process": "host:pid", "multiprocess": bool, "counted": whether PostgreSQL's counts were read},
     "queues": {"persist": {"name", "depth", "consumers"}, "derived": {...}} or None,
     "persist_lag": {"buckets": [[upper bound, cumulative count], ...], "sum": seconds},
     "cache": {"hit", "miss", "error"}, "fallbacks": {kind: count},
     "dead_letters": {"recorded", "waiting"}, "embedding": {"backlog", "lag_seconds"},
     "cache_repairs": count,
     "tenants": {slug: {"cache": {...}, "dead_letters": {"waiting"}, "embedding": {...}, "cache_repairs"}}}
"""

import math
import os
import socket
from collections.abc import Sequence
from typing import Any

from django.db import DatabaseError
from django.db.models import Count

from conversations import metrics
from conversations.models import CacheRepair, DeadLetter
from conversations.selectors import broker_status
from search.metrics import EmbeddingBacklogCollector

CACHE_RESULTS = ("hit", "miss", "error")


def figures_collect() -> dict[str, Any]:
    """The figures of ``/metrics`` now, with the queues' consumers and PostgreSQL's counts."""
    broker = broker_status()  # first: it sets memory_queue_depth, which the scrape below reads
    figures: dict[str, Any] = {
        "source": {
            "process": f"{socket.gethostname()}:{os.getpid()}",
            "multiprocess": bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR")),
        },
        "queues": _queues(broker),
        "persist_lag": {"buckets": [], "sum": 0.0},
        "cache": dict.fromkeys(CACHE_RESULTS, 0),
        "fallbacks": {},
        "dead_letters": {"recorded": 0, "waiting": None},
        "embedding": {"backlog": None, "lag_seconds": None},  # None: PostgreSQL did not answer the collector
        "cache_repairs": None,
        "tenants": {},
    }
    tenants: dict[str, dict[str, Any]] = figures["tenants"]

    def tenant(slug: str) -> dict[str, Any]:
        return tenants.setdefault(slug, {"cache": dict.fromkeys(CACHE_RESULTS, 0)})

    scrape = metrics.scrape(EmbeddingBacklogCollector())
    for family in scrape.collect():
        if family.name == "memory_embedding_backlog_messages":  # read from PostgreSQL: it answered
            figures["embedding"] = {"backlog": 0, "lag_seconds": 0.0}
        for sample in family.samples:
            name, labels, value = sample.name, sample.labels, sample.value
            if name == "memory_cache_requests_total" and labels.get("data_type") != "context":
                # Contexts differ by query: counted apart from the cache-aside hit rate (as /status does).
                result = labels["result"] if labels["result"] in CACHE_RESULTS else "error"
                figures["cache"][result] += int(value)
                tenant(labels["tenant"])["cache"][result] += int(value)
            elif name == "memory_persist_lag_seconds_bucket":
                figures["persist_lag"]["buckets"].append([_bound(labels["le"]), int(value)])
            elif name == "memory_persist_lag_seconds_sum":
                figures["persist_lag"]["sum"] = round(value, 6)
            elif name == "memory_fallbacks_total":
                figures["fallbacks"][labels["kind"]] = figures["fallbacks"].get(labels["kind"], 0) + int(value)
            elif name == "memory_dead_letters_total":
                figures["dead_letters"]["recorded"] += int(value)
            elif name == "memory_embedding_backlog_messages":
                tenant(labels["tenant"]).setdefault("embedding", {})["backlog"] = int(value)
                figures["embedding"]["backlog"] += int(value)
            elif name == "memory_embedding_lag_seconds":
                tenant(labels["tenant"]).setdefault("embedding", {})["lag_seconds"] = round(value, 3)
                figures["embedding"]["lag_seconds"] = max(figures["embedding"]["lag_seconds"], round(value, 3))
    figures["persist_lag"]["buckets"].sort(key=lambda bucket: (bucket[0] is None, bucket[0] or 0.0))  # +Inf last
    _database_counts(figures, tenant)
    return figures


def _queues(broker: dict[str, Any]) -> dict[str, Any] | None:
    if not broker["ok"]:
        return None
    return {
        "persist": {"name": broker["queue"], "depth": broker["queue_depth"], "consumers": broker["consumers"]},
        "derived": {
            "name": broker["derived_queue"],
            "depth": broker["derived_queue_depth"],
            "consumers": broker["derived_consumers"],
        },
    }


def _bound(le: str) -> float | None:
    """A bucket's upper bound; ``None`` for +Inf (JSON has no infinity)."""
    bound = float(le)
    return None if math.isinf(bound) else bound


def _database_counts(figures: dict[str, Any], tenant: Any) -> None:  # noqa: ANN401 - the sample's own helper
    """The dead letters waiting for a replay and the conversations awaiting a cache repair, in all and
    per tenant (left ``None`` when PostgreSQL does not answer)."""
    try:
        # Every tenant's rows: the deployment's figures, split per tenant below.
        waiting = DeadLetter.unscoped.filter(replayed_at__isnull=True).values("tenant__slug").annotate(n=Count("pk"))
        repairs = CacheRepair.unscoped.values("tenant__slug").annotate(n=Count("pk"))
        waiting_rows, repair_rows = list(waiting), list(repairs)
    except DatabaseError:
        return
    figures["source"]["counted"] = True  # a tenant with no row in either has none: 0, not unknown
    figures["dead_letters"]["waiting"] = sum(row["n"] for row in waiting_rows)
    figures["cache_repairs"] = sum(row["n"] for row in repair_rows)
    for row in waiting_rows:
        if row["tenant__slug"] is not None:  # a payload that named no tenant is the deployment's only
            tenant(row["tenant__slug"])["dead_letters"] = {"waiting": row["n"]}
    for row in repair_rows:
        tenant(row["tenant__slug"])["cache_repairs"] = row["n"]


def quantile(q: float, buckets: Sequence[Sequence[float | None]]) -> float | None:
    """The ``q`` quantile of a histogram's cumulative ``buckets`` ([upper bound, count], ``None`` for
    +Inf last), by linear interpolation within the bucket it falls in, as Prometheus's
    ``histogram_quantile`` does; ``None`` with no observation. One past the last finite bound is
    that bound (the histogram cannot tell more)."""
    total = buckets[-1][1] if buckets else 0
    if not total:
        return None
    rank = q * total
    lower, below = 0.0, 0
    for bound, cumulative in buckets:
        if cumulative >= rank:
            if bound is None:
                return lower
            inside = cumulative - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 1.0)
        lower, below = (bound if bound is not None else lower), cumulative
    return lower


def hit_rate(cache: dict[str, int] | None) -> float | None:
    if not cache:
        return None
    lookups = sum(cache.get(result, 0) for result in CACHE_RESULTS)
    return cache.get("hit", 0) / lookups if lookups else None


def _difference(later: dict[str, int], earlier: dict[str, int]) -> dict[str, int] | None:
    """``later - earlier`` per key; None when one went down (the counters restarted)."""
    difference = {key: value - earlier.get(key, 0) for key, value in later.items()}
    return None if any(value < 0 for value in difference.values()) else difference


def comparable(later: dict[str, Any], earlier: dict[str, Any]) -> bool:
    """Whether two samples' counters can be subtracted: both add up every process
    (``PROMETHEUS_MULTIPROC_DIR``), or both come from the same process."""
    sources = later.get("source", {}), earlier.get("source", {})
    if sources[0].get("multiprocess") and sources[1].get("multiprocess"):
        return True
    return sources[0].get("process") == sources[1].get("process")


def interval_figures(later: dict[str, Any], earlier: dict[str, Any] | None, *, tenant: str | None = None) -> dict[str, Any]:
    """What happened between two samples: the persist lag's p50 and p99 (seconds) and the writes
    persisted, and the cache hit rate (of ``tenant``'s lookups, with a tenant). ``None`` for a figure
    the interval cannot tell (no earlier sample, counters restarted, nothing observed)."""
    empty: dict[str, Any] = {"lag_p50": None, "lag_p99": None, "persisted": None, "hit_rate": None, "lookups": None}
    if earlier is None or not comparable(later, earlier):
        return empty
    if tenant is not None:
        cache = _difference(
            (later.get("tenants", {}).get(tenant) or {}).get("cache", {}),
            (earlier.get("tenants", {}).get(tenant) or {}).get("cache", {}),
        )
        return empty | {"hit_rate": hit_rate(cache), "lookups": sum(cache.values()) if cache else None}
    answer = dict(empty)
    cache = _difference(later["cache"], earlier["cache"])
    if cache is not None:
        answer |= {"hit_rate": hit_rate(cache), "lookups": sum(cache.values())}
    before = {bound: count for bound, count in earlier["persist_lag"]["buckets"]}
    buckets = [[bound, count - before.get(bound, 0)] for bound, count in later["persist_lag"]["buckets"]]
    if buckets and all(count >= 0 for _, count in buckets):
        answer |= {"lag_p50": quantile(0.5, buckets), "lag_p99": quantile(0.99, buckets), "persisted": buckets[-1][1]}
    return answer

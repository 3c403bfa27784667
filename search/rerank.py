"""Reranking: a cross-encoder server reorders the best hits of a search.

Contract
--------
* Off unless ``MEMORY_RERANK_URL`` is set (the deployment's, or a tenant's own override). ``reranker_for(tenant)``
  answers the tenant's ``Reranker`` (None: off): its URL, wire format (``MEMORY_RERANK_API``), model
  (``MEMORY_RERANK_MODEL``), how many hits it reorders (``MEMORY_RERANK_TOP_N``, 1 to ``MAX_TOP_N``), its
  timeout (``MEMORY_RERANK_TIMEOUT``, at most ``MAX_TIMEOUT`` seconds for each of connecting, sending and
  reading) and its breaker's interval (``MEMORY_RERANK_BREAKER_SECONDS``).
* Two wire formats, both one POST to the URL as given:

  - ``tei`` (Hugging Face Text Embeddings Inference's ``/rerank``): ``{"query", "texts", "raw_scores": false,
    "truncate": true}``, answered ``[{"index", "score"}, ...]``;
  - ``cohere`` (the ``/v1/rerank`` of Cohere, Jina, Voyage and the servers that copy it): ``{"model", "query",
    "documents", "top_n"}``, answered ``{"results": [{"index", "relevance_score"}, ...]}``.

* ``rerank(reranker, query=, texts=)`` answers a ``Reranked``: ``order``, every index of ``texts`` once, best
  first (equal scores keep the order given), or None with a ``notice`` (``rerank_unavailable`` while the
  breaker is open or the format is unknown, ``rerank_failed`` when the call fails: an HTTP error, a timeout,
  a connection refused, an answer that is not JSON or does not score each text exactly once). The notice's
  sentence says what happened, never the texts. The caller then keeps its own order.
* Credentials: the tenant's stored provider credential named ``rerank``
  (``tenants.services.provider_credential_secret``) is sent as ``Authorization: Bearer``. A URL the tenant
  chose (its override) is called with that credential or none, never the deployment's
  ``MEMORY_RERANK_API_KEY``, which only goes to the deployment's own URL, and only when the tenant stores
  none. A tenant's URL passes the egress policy when it is saved (``url_refusal``, registered by
  ``search.apps``) and on every connection (``tenants.egress.clients``); the deployment's URL is the
  deployment's to choose.
* A down or hanging server costs one timeout per ``MEMORY_RERANK_BREAKER_SECONDS``, across every process
  (``core.breaker``). The breaker is the server's (its URL and model) with the credential it is called with
  (the deployment's, or one tenant's): a tenant whose own key is refused opens its own breaker only.
  A credential that cannot be read is the tenant's problem, not the server's: the search says so and
  opens no breaker.
* Each call is counted: ``search.metrics`` (calls by outcome, latency) for Prometheus, and per hour in
  Redis for the health page (``recent_calls``, read without calling the server). Nothing here writes a
  query or a text anywhere.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from dataclasses import dataclass
from typing import Any

import httpx2
import structlog
from django.conf import settings
from django.db import DatabaseError

from core import redis_client
from core.breaker import Breaker
from search import metrics
from tenants import egress
from tenants.models import Tenant
from tenants.secrets import SecretUnreadable
from tenants.services import provider_credential_secret

logger = structlog.get_logger(__name__)

APIS = ("tei", "cohere")
PROVIDER = "rerank"  # the name of the tenant's stored credential
FIELD = "MEMORY_RERANK_URL"
# Bounds on what a tenant may configure: a reranker holds a web thread while it answers, and reads
# every text it reorders.
MAX_TOP_N = 200
MAX_TIMEOUT = 10.0
# The health page's recent figures: per hour, kept two hours.
STATS_PREFIX = "memory:rerank:calls:"
STATS_SECONDS = 2 * 3600


@dataclass(frozen=True)
class Reranker:
    url: str
    api: str
    model: str
    top_n: int
    timeout: float
    breaker_seconds: float
    # True when the URL is the tenant's own choice (its override), not the deployment's.
    tenant_url: bool
    tenant_pk: int

    @property
    def label(self) -> str:
        """What the answer and the notices name: the model, else the format."""
        return self.model or self.api


@dataclass(frozen=True)
class Reranked:
    order: list[int] | None  # every index of the texts once, best first; None: keep your own order
    notice: dict[str, str] | None = None
    milliseconds: float = 0.0


def reranker_for(tenant: Tenant | None) -> Reranker | None:
    """The tenant's reranker as configured (its overrides, else the deployment's; the deployment's alone
    without a tenant); None when off."""

    def value(name: str) -> Any:
        return tenant.setting(name) if tenant is not None else getattr(settings, name)

    url = str(value("MEMORY_RERANK_URL") or "").strip()
    if not url:
        return None
    return Reranker(
        url=url,
        api=str(value("MEMORY_RERANK_API") or "tei").strip().lower(),
        model=str(value("MEMORY_RERANK_MODEL") or "").strip(),
        top_n=max(1, min(int(value("MEMORY_RERANK_TOP_N")), MAX_TOP_N)),
        timeout=max(0.05, min(float(value("MEMORY_RERANK_TIMEOUT")), MAX_TIMEOUT)),
        breaker_seconds=float(value("MEMORY_RERANK_BREAKER_SECONDS")),
        tenant_url=tenant is not None and bool(tenant.settings.get("MEMORY_RERANK_URL")),
        tenant_pk=tenant.pk if tenant is not None else 0,
    )


def url_refusal(value: str) -> str | None:
    """Why a tenant may not choose ``value`` for MEMORY_RERANK_URL (None: it may): the egress policy's."""
    try:
        egress.url_check(value, field=FIELD)
    except egress.EgressRefused as error:
        return str(error)
    return None


def api_refusal(value: str) -> str | None:
    """Why a tenant may not choose ``value`` for MEMORY_RERANK_API (None: it may)."""
    if value.strip().lower() in APIS:
        return None
    return f"MEMORY_RERANK_API={value!r}: use one of {', '.join(APIS)}."


def breaker_of(reranker: Reranker, *, caller: str) -> Breaker:
    """The breaker of the server called with ``caller``'s credential ("deployment", or "tenant <pk>")."""
    return Breaker(f"rerank {reranker.url} {reranker.model} {caller}", seconds=reranker.breaker_seconds)


def _endpoint(reranker: Reranker) -> str:
    """The server's name in the health page's figures (hashed: no URL lands in Redis)."""
    return "endpoint:" + hashlib.sha256(f"{reranker.url} {reranker.model}".encode()).hexdigest()[:24]


def rerank(reranker: Reranker, *, tenant: Tenant, query: str, texts: list[str]) -> Reranked:
    """The order the reranker gives ``texts`` for ``query`` (see the module's contract)."""
    if not texts:
        return Reranked(order=[])
    if reranker.api not in APIS:
        return _skipped(reranker, tenant, f"MEMORY_RERANK_API={reranker.api!r} is no format the service speaks (tei or cohere).")
    try:
        key, caller = _key(reranker, tenant)
    except RerankFailed as error:
        _count(reranker, tenant, outcome=error.outcome, seconds=None)
        message = f"The reranker {reranker.label} was not called ({error.reason}); the results are in the hybrid order."
        return Reranked(order=None, notice=_notice("rerank_failed", message))
    breaker = breaker_of(reranker, caller=caller)
    refused = breaker.open()
    if refused is not None:
        return _skipped(
            reranker,
            tenant,
            f"The reranker {reranker.label} is not called for another {refused.seconds_left:.0f} s after it failed "
            f"({refused.reason}); the results are in the hybrid order.",
        )
    started = time.perf_counter()
    try:
        order = _call(reranker, key=key, query=query, texts=texts)
    except RerankFailed as error:
        seconds = time.perf_counter() - started
        breaker.failed(error.reason)
        _count(reranker, tenant, outcome=error.outcome, seconds=seconds)
        logger.warning("rerank_failed", tenant=tenant.slug, model=reranker.label, outcome=error.outcome, reason=error.reason)
        message = f"The reranker {reranker.label} failed ({error.reason}); the results are in the hybrid order."
        return Reranked(order=None, notice=_notice("rerank_failed", message), milliseconds=seconds * 1000)
    seconds = time.perf_counter() - started
    breaker.succeeded()
    _count(reranker, tenant, outcome="ok", seconds=seconds)
    return Reranked(order=order, milliseconds=seconds * 1000)


class RerankFailed(Exception):
    def __init__(self, outcome: str, reason: str) -> None:
        super().__init__(reason)
        self.outcome = outcome  # a metrics label: http_error, timeout, unreachable, malformed, credential
        self.reason = reason


def _call(reranker: Reranker, *, key: str | None, query: str, texts: list[str]) -> list[int]:
    if reranker.api == "tei":
        body: dict[str, Any] = {"query": query, "texts": texts, "raw_scores": False, "truncate": True}
    else:
        body = {"model": reranker.model, "query": query, "documents": texts, "top_n": len(texts)}
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = f"Bearer {key}"
    # A tenant's URL: the egress policy checks each connection (the asynchronous half of the pair is
    # not used, and opens nothing).
    client = egress.clients(field=FIELD)[0] if reranker.tenant_url else _deployment_client()
    try:
        response = client.post(reranker.url, json=body, headers=headers, timeout=reranker.timeout)
    except httpx2.TimeoutException:
        raise RerankFailed("timeout", f"no answer within MEMORY_RERANK_TIMEOUT={reranker.timeout:g} s") from None
    except egress.EgressRefused as error:
        raise RerankFailed("unreachable", str(error)) from None
    except httpx2.HTTPError as error:
        raise RerankFailed("unreachable", f"cannot be reached: {type(error).__name__}") from None
    finally:
        if reranker.tenant_url:
            client.close()
    if response.status_code != 200:
        raise RerankFailed("http_error", f"answered HTTP {response.status_code}")
    try:
        answer = response.json()
    except ValueError:
        raise RerankFailed("malformed", "answered something that is not JSON") from None
    return _order(reranker.api, answer, count=len(texts))


_deployment_clients: dict[int, httpx2.Client] = {}
_deployment_clients_lock = threading.Lock()


def _deployment_client() -> httpx2.Client:
    """This process's client of the deployment's reranker, kept: building one costs about 100 ms (its TLS
    context), far more than a call, and its connections are kept between searches (made again in a
    forked child)."""
    with _deployment_clients_lock:
        client = _deployment_clients.get(os.getpid())
        if client is None:
            client = _deployment_clients[os.getpid()] = httpx2.Client(trust_env=False)
        return client


def _order(api: str, answer: Any, *, count: int) -> list[int]:
    """The indices best first, from an answer that scores each of ``count`` texts exactly once."""
    if api == "tei":
        items, score_key = answer, "score"
    else:
        items, score_key = answer.get("results") if isinstance(answer, dict) else None, "relevance_score"
    if not isinstance(items, list):
        raise RerankFailed("malformed", "answered JSON that is not a list of scores")
    scores: dict[int, float] = {}
    for item in items:
        index = item.get("index") if isinstance(item, dict) else None
        score = item.get(score_key) if isinstance(item, dict) else None
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count or index in scores:
            raise RerankFailed("malformed", f"answered an index out of the {count} texts sent, or one twice")
        if isinstance(score, bool) or not isinstance(score, int | float) or score != score:
            raise RerankFailed("malformed", f"answered a score that is not a number ({score_key})")
        scores[index] = float(score)
    if len(scores) != count:
        raise RerankFailed("malformed", f"scored {len(scores)} of the {count} texts sent")
    return sorted(scores, key=lambda index: (-scores[index], index))


def _key(reranker: Reranker, tenant: Tenant) -> tuple[str | None, str]:
    """(the bearer token, whose it is: "deployment" or "tenant <pk>"): the tenant's ``rerank``
    credential; on the deployment's URL only, else the deployment's key."""
    try:
        secret = provider_credential_secret(tenant=tenant, provider=PROVIDER)
    except SecretUnreadable as error:
        raise RerankFailed("credential", f"the tenant's {PROVIDER} credential is unreadable ({error})") from None
    except DatabaseError:
        raise RerankFailed("credential", f"the tenant's {PROVIDER} credential cannot be read now") from None
    if secret or reranker.tenant_url:
        return secret, f"tenant {tenant.pk}"
    return settings.MEMORY_RERANK_API_KEY or None, "deployment"


def _notice(code: str, message: str) -> dict[str, str]:
    return {"code": code, "message": message}


def _skipped(reranker: Reranker, tenant: Tenant, message: str) -> Reranked:
    _count(reranker, tenant, outcome="skipped", seconds=None)
    return Reranked(order=None, notice=_notice("rerank_unavailable", message))


# --- Counting -------------------------------------------------------------------------------------


def _count(reranker: Reranker, tenant: Tenant, *, outcome: str, seconds: float | None) -> None:
    metrics.rerank_calls.labels(outcome=outcome).inc()
    if seconds is not None:
        metrics.rerank_seconds.observe(seconds)
    hour = _hour()
    field = "ok" if outcome == "ok" else "skipped" if outcome == "skipped" else "failed"
    try:
        pipeline = redis_client.client().pipeline(transaction=False)
        for key in (_stats_key(_endpoint(reranker), hour), _stats_key(f"tenant:{tenant.pk}", hour)):
            pipeline.hincrby(key, field, 1)
            if seconds is not None:
                pipeline.hincrbyfloat(key, "seconds", seconds)
            pipeline.expire(key, STATS_SECONDS)
        redis_client.call("rerank_count", tenant.slug, pipeline.execute)
    except redis_client.CacheUnavailable:
        pass  # the health page's figures miss this call; Prometheus has it


def _hour(now: float | None = None) -> int:
    return int((time.time() if now is None else now) // 3600)


def _stats_key(owner: str, hour: int) -> str:
    return f"{STATS_PREFIX}{owner}:{hour}"


@dataclass(frozen=True)
class RecentCalls:
    """Calls within this hour and the one before, as the health page shows them."""

    ok: int
    failed: int
    skipped: int
    mean_milliseconds: float | None


@dataclass(frozen=True)
class RerankerState:
    configured: bool
    api: str = ""
    model: str = ""
    tenant_url: bool = False
    breaker_open: bool = False
    breaker_reason: str = ""
    breaker_seconds_left: float = 0.0
    recent: RecentCalls | None = None  # None: Redis did not answer


def reranker_state(tenant: Tenant | None = None) -> RerankerState:
    """The reranker's state for the health page, read from Redis (the server is never called): the
    deployment's reranker, or with ``tenant`` that tenant's (its own calls only)."""
    reranker = reranker_for(tenant)
    if reranker is None:
        return RerankerState(configured=False)
    if tenant is None:
        caller = "deployment"
    else:
        try:
            caller = _key(reranker, tenant)[1]
        except RerankFailed:
            caller = f"tenant {tenant.pk}"
    refused = breaker_of(reranker, caller=caller).open()
    owner = _endpoint(reranker) if tenant is None else f"tenant:{tenant.pk}"
    return RerankerState(
        configured=True,
        api=reranker.api,
        model=reranker.model,
        tenant_url=reranker.tenant_url,
        breaker_open=refused is not None,
        breaker_reason=refused.reason if refused else "",
        breaker_seconds_left=refused.seconds_left if refused else 0.0,
        recent=recent_calls(owner),
    )


def recent_calls(owner: str, *, now: float | None = None) -> RecentCalls | None:
    hour = _hour(now)
    try:
        pipeline = redis_client.client().pipeline(transaction=False)
        for key in (_stats_key(owner, hour), _stats_key(owner, hour - 1)):
            pipeline.hgetall(key)
        hours = redis_client.call("rerank_stats", "", pipeline.execute)
    except redis_client.CacheUnavailable:
        return None
    totals: dict[str, float] = {}
    for counts in hours:
        for name, value in counts.items():
            name = name.decode() if isinstance(name, bytes) else str(name)
            totals[name] = totals.get(name, 0.0) + float(value)
    called = totals.get("ok", 0.0) + totals.get("failed", 0.0)
    return RecentCalls(
        ok=int(totals.get("ok", 0)),
        failed=int(totals.get("failed", 0)),
        skipped=int(totals.get("skipped", 0)),
        mean_milliseconds=round(totals.get("seconds", 0.0) / called * 1000, 1) if called else None,
    )

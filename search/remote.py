"""Embedding models on a server: any OpenAI-compatible ``/v1/embeddings`` (Text Embeddings Inference,
vLLM, Ollama, Triton behind a gateway, OpenAI itself).

Contract
--------
* A model named ``openai:<name>`` (``MEMORY_EMBEDDING_MODEL``) is ``<name>`` on the server at
  ``MEMORY_EMBEDDING_BASE_URL`` (empty: OpenAI's own API); ``text-embedding-3-small`` is
  ``openai:text-embedding-3-small`` under its first name. Every setting below is the deployment's and
  may be overridden per tenant: ``MEMORY_EMBEDDING_DIMENSIONS`` (asked of the server when above 0, and
  the length every vector must have), ``MEMORY_EMBEDDING_BATCH`` (texts per call),
  ``MEMORY_EMBEDDING_TIMEOUT`` and ``MEMORY_EMBEDDING_MAX_RETRIES`` (a batch of messages),
  ``MEMORY_EMBEDDING_QUERY_TIMEOUT`` (a search's query and a store item, asked once: a search that
  cannot wait answers by its words), ``MEMORY_EMBEDDING_MAX_CHARS`` (longer texts are cut),
  ``MEMORY_EMBEDDING_BREAKER_SECONDS``.
* Credentials follow the chat model's rules (``tenants.chat_models``): the tenant's ``openai``
  provider credential; a server the tenant chose itself (its own ``MEMORY_EMBEDDING_BASE_URL``) is
  called with that credential only, never the deployment's ``OPENAI_API_KEY``, and through the egress
  policy's HTTP client (``tenants.egress``), which checks every connection; on the deployment's server
  the deployment's key is the fallback, and a placeholder for servers that take none.
* Retries with exponential backoff honour ``Retry-After`` (the ``openai`` client's own). A call that
  still fails, or answers vectors of the wrong number or length, raises ``EmbeddingUnavailable`` and
  opens the server's breaker (``core.breaker``) for ``MEMORY_EMBEDDING_BREAKER_SECONDS`` (longer if the
  server's ``Retry-After`` asks): until then every process refuses at once, so a down or hanging server
  costs one timeout per interval. The breaker is the tenant's own where its own credential is used,
  so one tenant's bad key never stops another's embeddings.
* ``EmbeddingUnavailable`` is a "not now": the caller keeps what it has (a message waits for its
  vector; a search ranks by words) and tries again later. A configuration that cannot work (a tenant
  URL without a credential) is an ``EmbeddingModelError`` naming what to set.
"""

from __future__ import annotations

import functools
import hashlib
import os
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import structlog
from django.conf import settings

from core import metrics
from core.breaker import Breaker
from tenants import egress
from tenants.models import Tenant
from tenants.secrets import SecretUnreadable
from tenants.services import provider_credential_secret

logger = structlog.get_logger(__name__)

PREFIX = "openai:"
KIND = "embeddings"  # the calls' label in the metrics (core.metrics.model_server_calls)
PROVIDER = "openai"  # the credential a tenant stores for it (manage.py provider_credential --provider openai)
KEY_VARIABLE = "OPENAI_API_KEY"
PLACEHOLDER_API_KEY = "unused"  # what a server that takes no key gets (the client refuses none)
# The first design's name for OpenAI's small model, kept: vectors stored under it stay the tenant's.
ALIASES = {"text-embedding-3-small": "text-embedding-3-small"}


class EmbeddingModelError(RuntimeError):
    """The configured embedding model cannot be loaded or does not answer."""


class EmbeddingUnavailable(EmbeddingModelError):
    """The server cannot give the vectors now (down, slow, refusing, answering the wrong shape):
    nothing is lost, the caller tries again later."""

    def __init__(self, message: str, *, retry_in: float = 0.0) -> None:
        super().__init__(message)
        self.retry_in = retry_in


def is_remote(name: str) -> bool:
    return name.startswith(PREFIX) or name in ALIASES


def served_name(name: str) -> str:
    """The model's name on its server."""
    return ALIASES.get(name) or name[len(PREFIX) :]


@dataclass(frozen=True)
class RemoteSettings:
    model: str  # as the tenant names it (what its vectors are stored under)
    base_url: str
    tenant_base_url: bool
    dimensions: int
    batch: int
    timeout: float
    query_timeout: float
    max_retries: int
    max_chars: int
    breaker_seconds: float
    tenant_pk: int | None
    tenant_slug: str


def remote_settings(name: str, tenant: Tenant | None) -> RemoteSettings:
    """The settings of ``name`` for ``tenant`` (the deployment's alone without one)."""

    def value(setting: str) -> Any:
        return tenant.setting(setting) if tenant is not None else getattr(settings, setting)

    base_url = str(value("MEMORY_EMBEDDING_BASE_URL") or "").strip()
    return RemoteSettings(
        model=name,
        base_url=base_url,
        tenant_base_url=bool(base_url) and tenant is not None and "MEMORY_EMBEDDING_BASE_URL" in tenant.settings,
        dimensions=int(value("MEMORY_EMBEDDING_DIMENSIONS")),
        batch=batch_size(value("MEMORY_EMBEDDING_BATCH")),
        timeout=float(value("MEMORY_EMBEDDING_TIMEOUT")),
        query_timeout=float(value("MEMORY_EMBEDDING_QUERY_TIMEOUT")),
        max_retries=int(value("MEMORY_EMBEDDING_MAX_RETRIES")),
        max_chars=int(value("MEMORY_EMBEDDING_MAX_CHARS")),
        breaker_seconds=float(value("MEMORY_EMBEDDING_BREAKER_SECONDS")),
        tenant_pk=tenant.pk if tenant is not None else None,
        tenant_slug=tenant.slug if tenant is not None else "",
    )


# Texts per call at most, whatever a tenant sets: a batch's texts and vectors are held in memory.
MAX_BATCH = 2048


def batch_size(value: Any) -> int:
    return min(max(1, int(value)), MAX_BATCH)


def base_url_refusal(url: str) -> str | None:
    """Why a tenant may not set ``url`` as its embedding server (None: it may): http(s), to a host the
    egress policy lets a tenant reach."""
    if not str(url).strip():
        return None
    try:
        egress.url_check(url, field="MEMORY_EMBEDDING_BASE_URL")
    except ValueError as error:
        return str(error)
    return None


class RemoteEmbeddings:
    """One tenant's view of one model on one server."""

    def __init__(self, chosen: RemoteSettings, tenant: Tenant | None) -> None:
        self.chosen = chosen
        self.api_key, own_key = self._credential(tenant)
        # The tenant's own credential gets a breaker of its own: a bad key stops that tenant alone.
        owner = f"tenant {chosen.tenant_pk}" if own_key else "deployment"
        self.breaker = Breaker(f"embeddings {owner} {chosen.base_url or 'openai'} {chosen.model}", seconds=chosen.breaker_seconds)
        self.identity = hashlib.sha256(
            f"{owner}\0{chosen.base_url}\0{chosen.model}\0{chosen.dimensions}\0{chosen.max_chars}".encode()
        ).hexdigest()[:24]

    def _credential(self, tenant: Tenant | None) -> tuple[str, bool]:
        secret = None
        if tenant is not None:
            try:
                secret = provider_credential_secret(tenant=tenant, provider=PROVIDER)
            except SecretUnreadable as error:
                raise EmbeddingModelError(f"The {PROVIDER} credential of tenant {tenant.slug} is unreadable: {error}") from error
            except Exception as error:  # neither Redis nor PostgreSQL answers: a "not now"
                raise EmbeddingUnavailable(f"The {PROVIDER} credential of tenant {tenant.slug} cannot be read now.") from error
        if secret:
            return secret, True
        if self.chosen.tenant_base_url:
            raise EmbeddingModelError(
                f"Tenant {self.chosen.tenant_slug} sets its own MEMORY_EMBEDDING_BASE_URL but has no {PROVIDER} credential: a "
                "server a tenant chooses is called with that tenant's own credential only, never the deployment's. Store one "
                f"(manage.py provider_credential --tenant {self.chosen.tenant_slug} --provider {PROVIDER}, or the admin); for a "
                "server that takes no key, any value."
            )
        environment = os.environ.get(KEY_VARIABLE, "")
        if environment:
            return environment, False
        if self.chosen.base_url:
            return PLACEHOLDER_API_KEY, False
        raise EmbeddingModelError(
            f"The embedding model {self.chosen.model} is OpenAI's and has no key: store the tenant's {PROVIDER} credential, set "
            f"{KEY_VARIABLE}, or point MEMORY_EMBEDDING_BASE_URL at an OpenAI-compatible server."
        )

    def embed(self, texts: list[str], *, query: bool = False) -> np.ndarray:
        """Unit float32 rows, one per text, in order; ``query``: one try within the query timeout."""
        refused = self.breaker.open()
        if refused is not None:
            metrics.model_server_calls.labels(kind=KIND, outcome="refused").inc()
            raise EmbeddingUnavailable(
                f"The embedding server is not called for {refused.seconds_left:.0f} s more: {refused.reason}",
                retry_in=refused.seconds_left,
            )
        chosen = self.chosen
        cut = [text[: chosen.max_chars] if chosen.max_chars > 0 else text for text in texts]
        rows: list[np.ndarray] = []
        try:
            for start in range(0, len(cut), chosen.batch):
                began = time.perf_counter()
                try:
                    rows.append(self._call(cut[start : start + chosen.batch], query=query))
                finally:
                    metrics.model_server_latency.labels(kind=KIND).observe(time.perf_counter() - began)
                metrics.model_server_calls.labels(kind=KIND, outcome="ok").inc()
        except EmbeddingUnavailable as error:
            metrics.model_server_calls.labels(kind=KIND, outcome="failed").inc()
            self.breaker.failed(str(error))
            error.retry_in = max(error.retry_in, chosen.breaker_seconds)
            raise
        self.breaker.succeeded()
        return np.concatenate(rows) if rows else np.zeros((0, max(chosen.dimensions, 1)), dtype=np.float32)

    def _call(self, texts: list[str], *, query: bool) -> np.ndarray:
        import openai

        chosen = self.chosen
        client = _client(
            base_url=chosen.base_url or None,
            api_key=self.api_key,
            timeout=chosen.query_timeout if query else chosen.timeout,
            max_retries=0 if query else chosen.max_retries,
            guarded=chosen.tenant_base_url,
        )
        arguments: dict[str, Any] = {"model": served_name(chosen.model), "input": texts, "encoding_format": "float"}
        if chosen.dimensions > 0:
            arguments["dimensions"] = chosen.dimensions
        try:
            answer = client.embeddings.create(**arguments)
        except openai.APIStatusError as error:
            raise EmbeddingUnavailable(
                f"the server answered HTTP {error.status_code} ({type(error).__name__})", retry_in=_retry_after(error.response)
            ) from error
        except openai.APITimeoutError as error:
            raise EmbeddingUnavailable(f"the server did not answer within {client.timeout} s") from error
        except openai.APIConnectionError as error:
            raise EmbeddingUnavailable(f"the server cannot be reached ({type(error.__cause__ or error).__name__})") from error
        except (openai.OpenAIError, ValueError, TypeError, KeyError, AttributeError) as error:  # a body that is not the API's
            raise EmbeddingUnavailable(f"the server's answer cannot be read ({type(error).__name__})") from error
        return self._rows(answer, expected=len(texts))

    def _rows(self, answer: Any, *, expected: int) -> np.ndarray:
        data = sorted(getattr(answer, "data", None) or [], key=lambda item: getattr(item, "index", 0))
        if len(data) != expected or [item.index for item in data] != list(range(expected)):
            raise EmbeddingUnavailable(f"the server answered {len(data)} vectors for {expected} texts")
        try:
            matrix = np.asarray([item.embedding for item in data], dtype=np.float32)
        except (TypeError, ValueError) as error:
            raise EmbeddingUnavailable("the server answered vectors of different lengths, or not numbers") from error
        if matrix.ndim != 2 or matrix.shape[1] == 0 or not np.isfinite(matrix).all():
            raise EmbeddingUnavailable("the server answered empty or non-finite vectors")
        if self.chosen.dimensions > 0 and matrix.shape[1] != self.chosen.dimensions:
            raise EmbeddingUnavailable(
                f"the server answered vectors of {matrix.shape[1]} dimensions; MEMORY_EMBEDDING_DIMENSIONS is {self.chosen.dimensions}"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not norms.all():
            raise EmbeddingUnavailable("the server answered a vector of length 0")
        return matrix / norms


def _retry_after(response: Any) -> float:
    try:
        return max(0.0, float(response.headers.get("retry-after", "")))
    except (AttributeError, TypeError, ValueError):
        return 0.0


@functools.lru_cache(maxsize=64)
def _client(*, base_url: str | None, api_key: str, timeout: float, max_retries: int, guarded: bool) -> Any:
    """An ``openai`` client per server, key and bounds, kept so its connections are reused; a tenant's own
    server is reached through the egress policy's client, which checks every connection."""
    import openai

    arguments: dict[str, Any] = {"api_key": api_key, "base_url": base_url, "timeout": timeout, "max_retries": max_retries}
    if guarded:
        arguments["http_client"] = egress.clients(field="MEMORY_EMBEDDING_BASE_URL")[0]
    return openai.OpenAI(**arguments)


def clear() -> None:
    _client.cache_clear()

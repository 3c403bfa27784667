"""What a search reads in its question before ranking: the speakers it names.

Contract
--------
``read_query(text, speakers=)`` answers a ``ReadQuery``: the speakers of the scope (the ``name``s
the client set on its messages, nothing else) that the question names, and the text to rank with
once their names are out of it.

Why: "What did Caroline research?" asked of a conversation where Caroline speaks every other turn
matches every turn of hers by its name alone, for BM25 (the name is among each turn's terms) and for
the embedding (each turn is embedded as ``Caroline: ...``), so the question is pulled towards her
greetings instead of her research. Ranked with "What did research?", and her turns raised by the
speaker weight (``MEMORY_SEARCH_SPEAKER_WEIGHT``), the question's own words decide which of her turns.

A name is named when the question holds it whole, or its first word (of three letters or more), as
whole words, with its possessive ("Caroline's"). A question typed in lower case matches names in
any case; one with capitals matches them as written, so "What may Ann do?" names Ann but not a
speaker May (a capital that only starts the sentence still matches: "Will you..." names Will).
The text keeps the names when nothing else would be left of it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

ROLE_NAMES = frozenset({"user", "assistant", "system", "tool", "human", "ai"})
_POSSESSIVE = r"(?:['’]s)?"


@dataclass(frozen=True)
class ReadQuery:
    text: str  # what is ranked: the question without the names of the speakers it names
    speakers: frozenset[str]  # the speakers named, as stored


def read_query(text: str, *, speakers: Iterable[str]) -> ReadQuery:
    ignore_case = not any(character.isupper() for character in text)
    named: set[str] = set()
    stripped = text
    for speaker in sorted(set(speakers), key=len, reverse=True):  # "Jo Ann" before "Jo"
        for pattern in _patterns(speaker, ignore_case=ignore_case):
            if pattern.search(stripped):
                named.add(speaker)
                stripped = pattern.sub(" ", stripped)
    if not named:
        return ReadQuery(text=text, speakers=frozenset())
    stripped = " ".join(stripped.split())
    if not re.search(r"\w", stripped):
        stripped = text
    return ReadQuery(text=stripped, speakers=frozenset(named))


def _patterns(speaker: str, *, ignore_case: bool) -> list[re.Pattern[str]]:
    words = re.findall(r"\w+", speaker)
    if not words or speaker.strip().lower() in ROLE_NAMES:
        return []
    flags = re.IGNORECASE if ignore_case else 0
    whole = r"\s+".join(re.escape(word) for word in words)
    patterns = [re.compile(rf"(?<!\w){whole}{_POSSESSIVE}(?!\w)", flags)]
    if len(words) > 1 and len(words[0]) >= 3:
        patterns.append(re.compile(rf"(?<!\w){re.escape(words[0])}{_POSSESSIVE}(?!\w)", flags))
    elif len(words[0]) < 2:
        return []
    return patterns

"""What a search reads in its question before ranking: the speakers it names, the dates it gives.

Contract
--------
``read_query(text, speakers=)`` answers a ``ReadQuery``: the speakers of the scope (the ``name``s
the client set on its messages, nothing else) that the question names, the text to rank with once
their names are out of it, and the time windows its explicit dates give.

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

Dates: a date written with its year ("13 October 2023", "October 13, 2023", "2023-10-13"), a month
with its year ("October 2023") or a year alone ("in 2023") is a window of that day, month or year,
in UTC, stretched ``AFTER`` past its end: what happened on a day is often told in the days after it.
The turns said inside a window get ``MEMORY_SEARCH_DATE_WEIGHT``. A date without its year ("in
June") gives no window: which June is not the question's to say. The date stays in the ranked text.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

ROLE_NAMES = frozenset({"user", "assistant", "system", "tool", "human", "ai"})
_POSSESSIVE = r"(?:['’]s)?"


AFTER = timedelta(days=10)
MONTHS = {name.lower(): number for number, name in enumerate(calendar.month_name) if name}
MONTHS |= {name.lower(): number for number, name in enumerate(calendar.month_abbr) if name} | {"sept": 9}
_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
DATE_PATTERNS = (
    ("day", re.compile(r"(?<!\d)(?P<year>(?:19|20)\d\d)-(?P<month>[01]\d)-(?P<day>[0-3]\d)(?!\d)")),
    ("day", re.compile(rf"(?<!\w){_DAY}(?:\s+of)?\s+{_MONTH},?\s+{_YEAR}(?!\d)", re.IGNORECASE)),
    ("day", re.compile(rf"(?<!\w){_MONTH}\s+{_DAY},?\s+{_YEAR}(?!\d)", re.IGNORECASE)),
    ("month", re.compile(rf"(?<!\w){_MONTH},?\s+(?:of\s+)?{_YEAR}(?!\d)", re.IGNORECASE)),
    ("year", re.compile(rf"(?<![\w-]){_YEAR}(?![\w-])")),
)


@dataclass(frozen=True)
class ReadQuery:
    text: str  # what is ranked: the question without the names of the speakers it names
    speakers: frozenset[str]  # the speakers named, as stored
    windows: tuple[tuple[float, float], ...] = ()  # (start, end) in epoch seconds, the dates the question gives


def read_query(text: str, *, speakers: Iterable[str]) -> ReadQuery:
    read = _read_speakers(text, speakers=speakers)
    windows = date_windows(text)
    return ReadQuery(text=read.text, speakers=read.speakers, windows=windows) if windows else read


def date_windows(text: str) -> tuple[tuple[float, float], ...]:
    """The windows of the explicit dates of ``text`` (see the module docstring), each date read once:
    the most precise reading of a span wins ("13 October 2023" is a day, not also a month and a year)."""
    windows = []
    taken: list[tuple[int, int]] = []
    for precision, pattern in DATE_PATTERNS:
        for match in pattern.finditer(text):
            if any(start < match.end() and match.start() < end for start, end in taken):
                continue
            window = _window(precision, match)
            if window is not None:
                taken.append(match.span())
                windows.append(window)
    return tuple(windows)


def _window(precision: str, match: re.Match[str]) -> tuple[float, float] | None:
    year = int(match["year"])
    month = match.groupdict().get("month")
    number = (int(month) if month.isdigit() else MONTHS[month.lower().rstrip(".")]) if month else 1
    try:
        if precision == "day":
            start = datetime(year, number, int(match["day"]), tzinfo=UTC)
            end = start + timedelta(days=1)
        elif precision == "month":
            start = datetime(year, number, 1, tzinfo=UTC)
            end = datetime(year + number // 12, number % 12 + 1, 1, tzinfo=UTC)
        else:
            start, end = datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC)
    except ValueError:  # "31 February 2023": no such day
        return None
    return start.timestamp(), (end + AFTER).timestamp()


def _read_speakers(text: str, *, speakers: Iterable[str]) -> ReadQuery:
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

"""LoCoMo (``locomo10.json``: 10 conversations, 19 to 32 sessions each) as a ``Dataset``.

Contract
--------
``locomo_load(path=)`` reads the file in LoCoMo's published schema (a list of samples, each with
``conversation`` holding ``speaker_a``, ``speaker_b``, ``session_<n>`` turn lists and
``session_<n>_date_time``, and ``qa`` with ``question``, ``answer``, ``evidence`` dialog ids and a
numeric ``category``) and returns the same ``Dataset`` shape the synthetic generator makes. With no
path it reads ``$LOCOMO_PATH``, else ``./locomo10.json``.

No registry package ships the file (the memory-benchmark packages on PyPI download it from its
repository at run time), so the evaluation cannot fetch it here: point ``--locomo-path`` at a copy.

Mapping: a turn's shared image is kept as its caption ("[shares a photo of ...]"), since that text
is what answers some questions. Categories follow LoCoMo's numbering: 1 multi-hop, 2 temporal,
3 open-domain, 4 single-hop; 5 (adversarial: the answer is not in the conversation) is left out,
as are evidence ids that name no turn (a few in the published file are malformed).
"""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks.retrieval.dataset import Dataset, Question, Session, Turn, User

DEFAULT_HINT = "$LOCOMO_PATH, else ./locomo10.json"
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
DATE_FORMATS = ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y")


class LocomoMissing(FileNotFoundError):
    """The LoCoMo file is not where it was looked for."""


def _path(path: Path | None) -> Path:
    if path is not None:
        return path
    return Path(os.environ.get("LOCOMO_PATH", "locomo10.json"))


def _date(text: str) -> datetime:
    for layout in DATE_FORMATS:
        try:
            return datetime.strptime(text.strip(), layout).replace(tzinfo=UTC)
        except ValueError:
            continue
    raise ValueError(f"Unrecognised LoCoMo session date {text!r}.")


def _text(turn: dict[str, Any]) -> str:
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares {caption}]".strip()
    return text


def _evidence(value: Any, known: set[str]) -> tuple[str, ...]:
    items = value if isinstance(value, list) else [value]
    found = []
    for item in items:
        for dialog_id in re.findall(r"D\d+:\d+", str(item)):
            if dialog_id in known and dialog_id not in found:
                found.append(dialog_id)
    return tuple(found)


def _user(sample: dict[str, Any], index: int) -> User:
    conversation = sample["conversation"]
    speakers = (conversation["speaker_a"], conversation["speaker_b"])
    numbers = sorted(int(match.group(1)) for key in conversation if (match := re.fullmatch(r"session_(\d+)", key)))
    sessions = []
    for position, number in enumerate(numbers, start=1):
        turns = tuple(
            Turn(dia_id=turn["dia_id"], speaker=turn["speaker"], text=_text(turn))
            for turn in conversation[f"session_{number}"]
            if _text(turn)
        )
        if turns:
            sessions.append(Session(number=position, date=_date(conversation[f"session_{number}_date_time"]), turns=turns))
    known = {turn.dia_id for session in sessions for turn in session.turns}
    questions = []
    for item in sample.get("qa", []):
        category = CATEGORIES.get(item.get("category"))
        evidence = _evidence(item.get("evidence", []), known)
        if category is None or not evidence:
            continue
        questions.append(
            Question(text=item["question"], evidence=evidence, category=category, answer=str(item.get("answer", "")))
        )
    sample_id = re.sub(r"[^a-z0-9-]+", "-", str(sample.get("sample_id", index)).lower()).strip("-")
    return User(user_id=f"locomo-{sample_id}", speakers=speakers, sessions=tuple(sessions), questions=tuple(questions))


def locomo_load(*, path: Path | None = None) -> Dataset:
    path = _path(path)
    if not path.is_file():
        raise LocomoMissing(f"No LoCoMo file at {path}: pass --locomo-path (or set LOCOMO_PATH) to a copy of locomo10.json.")
    samples = json.loads(path.read_text(encoding="utf-8"))
    return Dataset(name="locomo", users=tuple(_user(sample, index) for index, sample in enumerate(samples)))

"""LoCoMo's observations as a model's answers: the stand-in for a good extracting LLM.

Contract
--------
``observations_read(path=, dataset=)`` reads the annotators' observations of a LoCoMo file (per
session and speaker, ``[statement, evidence dialog id(s)]``) for each user of ``dataset`` (the
same file read by ``benchmarks.retrieval.locomo.locomo_load``, whose users come in the file's
order): an ``Observation`` is the speaker (its subject), the statement, the dialog ids of its
evidence that name a turn of the conversation, and the date of the session of its first evidence
turn. Observations with no such evidence are left out (``ObservationSet.skipped`` counts them).

``LocomoResponder`` is a ``benchmarks.model_server`` responder answering the extraction prompt
(``extraction.extractor``: the last user message is the JSON document ``{"user_id", "memories",
"messages"}``) as a careful extractor would, deterministically:

1. Each of the prompt's ``messages`` is found among the user's turns by its text, whitespace folded
   (a text the prompt cut, ending in "…", by its beginning), and its speaker when it is one of the
   pair's; a text said more than once is the turn in the session most of the prompt's messages are
   from. Without a known ``user_id`` every conversation of the file is looked in.
2. For each observation (in the file's order) whose evidence names one of those turns, one ``add``:
   ``kind`` by ``observation_kind``, ``subject`` the speaker, ``text`` the statement, ``valid_from``
   the session's date for an event, ``confidence`` 0.9, ``sources`` the ids of the prompt's messages
   that are its evidence. Observations whose evidence is in other turns are answered when those turns
   are read.
3. Nothing for a statement already among the prompt's ``memories`` or answered earlier in the same
   answer (compared as the service compares near-duplicates: words, case aside): a good model does
   not add what it was told is known.

An answer with no operation is ``{"operations": []}``, as is the answer to a prompt that is not an
extraction document. No Django: the model server's command uses it as it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from benchmarks.retrieval import locomo
from benchmarks.retrieval.dataset import Dataset, User

CONFIDENCE = 0.9
CUT_MARK = "…"  # how extraction.extractor ends a turn it cut to its share of the prompt

MONTHS = "january february march april may june july august september october november december"
WEEKDAYS = "monday tuesday wednesday thursday friday saturday sunday"
DATED = re.compile(
    rf"\b(?:{'|'.join(MONTHS.split())}|{'|'.join(WEEKDAYS.split())}|(?:19|20)\d\d|yesterday|tomorrow|tonight"
    r"|last (?:week|weekend|month|year|night)|next (?:week|weekend|month|year)|\d{1,2}/\d{1,2})\b",
    re.IGNORECASE,
)
HAPPENED = re.compile(
    r"\b(?:went|attended|visited|travell?ed|moved|joined|started|finished|celebrated|participated|took part|ran|hosted"
    r"|met|won|graduated|adopted|bought|received|organi[sz]ed|performed|volunteered)\b",
    re.IGNORECASE,
)
LIKED = re.compile(r"\b(?:likes?|loves?|enjoys?|prefers?|favou?rites?)\b", re.IGNORECASE)
RELATED = re.compile(
    r"\b(?:friends?|married|sisters?|brothers?|mother|father|mom|dad|husband|wife|partner|kids?|children|son|daughter)\b",
    re.IGNORECASE,
)
WORDS = re.compile(r"\w+")


def observation_kind(text: str) -> str:
    """event (a date, or something that happened), preference, relation, else fact: the first that fits."""
    if DATED.search(text) or HAPPENED.search(text):
        return "event"
    if LIKED.search(text):
        return "preference"
    if RELATED.search(text):
        return "relation"
    return "fact"


def normalised(text: str) -> str:
    """A statement's words, lower case: two statements that differ in case, spacing or punctuation only are one."""
    return " ".join(WORDS.findall(text.lower()))


def _folded(text: str) -> str:
    return " ".join(text.split())


@dataclass(frozen=True)
class Observation:
    user_id: str
    subject: str  # the speaker the annotators wrote it down for
    text: str
    evidence: tuple[str, ...]  # dialog ids of the turns it comes from, each a turn of the conversation
    session_date: date  # of the session of its first evidence turn

    @property
    def kind(self) -> str:
        return observation_kind(self.text)


@dataclass(frozen=True)
class ObservationSet:
    by_user: dict[str, tuple[Observation, ...]]
    skipped: int = 0  # observations whose evidence names no turn of the conversation

    def __len__(self) -> int:
        return sum(len(observations) for observations in self.by_user.values())


def _items(sessions: Mapping[str, Any]) -> Iterable[tuple[str, Any, Any]]:
    """(speaker, statement, evidence) of a sample's observations, sessions in their order."""

    def number(key: str) -> int:
        found = re.search(r"\d+", key)
        return int(found.group()) if found else 0

    for key in sorted(sessions, key=number):
        for speaker, items in (sessions[key] or {}).items():
            for item in items or ():
                if isinstance(item, list | tuple) and len(item) >= 2:
                    yield speaker, item[0], item[1]


def observations_read(*, path: Path, dataset: Dataset | None = None) -> ObservationSet:
    """The observations of the LoCoMo file at ``path``, per user of ``dataset`` (read from the same
    file when not given; a dataset of its first users reads theirs only)."""
    if dataset is None:
        dataset = locomo.locomo_load(path=path)
    samples = json.loads(Path(path).read_text(encoding="utf-8"))
    by_user: dict[str, tuple[Observation, ...]] = {}
    skipped = 0
    for sample, user in zip(samples, dataset.users, strict=False):
        dates = {turn.dia_id: session.date.date() for session in user.sessions for turn in session.turns}
        found = []
        for speaker, statement, evidence in _items(sample.get("observation") or {}):
            text = _folded(str(statement))
            dialog_ids = locomo._evidence(evidence, set(dates))
            if not text or not dialog_ids:
                skipped += 1
                continue
            found.append(Observation(user.user_id, str(speaker), text, dialog_ids, dates[dialog_ids[0]]))
        by_user[user.user_id] = tuple(found)
    return ObservationSet(by_user=by_user, skipped=skipped)


@dataclass
class _Conversation:
    """One user's turns indexed by text, and its observations (in the file's order) by evidence turn."""

    user: User
    observations: tuple[Observation, ...]
    turns_by_text: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # folded text -> [(dia_id, speaker)]
    observations_by_turn: dict[str, list[int]] = field(default_factory=dict)  # dia_id -> indexes in observations

    def __post_init__(self) -> None:
        for session in self.user.sessions:
            for turn in session.turns:
                self.turns_by_text.setdefault(_folded(turn.text), []).append((turn.dia_id, turn.speaker))
        for index, observation in enumerate(self.observations):
            for dia_id in observation.evidence:
                self.observations_by_turn.setdefault(dia_id, []).append(index)

    def candidates(self, text: str, speaker: str) -> list[str]:
        """The dialog ids of the turns a prompt's message may be, in the file's order."""
        folded = _folded(text)
        if folded.endswith(CUT_MARK):
            prefix = folded.removesuffix(CUT_MARK).rstrip()
            found = [turn for known, turns in self.turns_by_text.items() if known.startswith(prefix) for turn in turns]
        else:
            found = self.turns_by_text.get(folded, [])
        if speaker in self.user.speakers:
            found = [(dia_id, said_by) for dia_id, said_by in found if said_by == speaker]
        return [dia_id for dia_id, _ in found]

    def locate(self, messages: Sequence[Mapping[str, Any]]) -> dict[str, str]:
        """message id -> dialog id, for the prompt's messages found among the turns."""
        candidates = {
            str(message.get("id")): self.candidates(str(message.get("text", "")), str(message.get("speaker", "")))
            for message in messages
        }
        votes: dict[str, int] = {}  # session -> how many messages may be from it
        for found in candidates.values():
            for session in {_session(dia_id) for dia_id in found}:
                votes[session] = votes.get(session, 0) + 1
        # A text said more than once: the turn of the session most messages are from (ties: the first).
        return {
            message_id: max(found, key=lambda dia_id: votes[_session(dia_id)])
            for message_id, found in candidates.items()
            if found
        }


def _session(dia_id: str) -> str:
    return dia_id.partition(":")[0]


class LocomoResponder:
    """Answers extraction prompts with LoCoMo's observations (see the module)."""

    def __init__(self, dataset: Dataset, observations: ObservationSet) -> None:
        self.conversations = {
            user.user_id: _Conversation(user, observations.by_user.get(user.user_id, ())) for user in dataset.users
        }

    @classmethod
    def from_path(cls, path: Path) -> LocomoResponder:
        dataset = locomo.locomo_load(path=path)
        return cls(dataset, observations_read(path=path, dataset=dataset))

    def __call__(self, messages: list[dict[str, Any]], model: str) -> str:
        document = _document(messages)
        if document is None:
            return json.dumps({"operations": []})
        turns = [message for message in document.get("messages") or [] if isinstance(message, Mapping)]
        memories = [memory for memory in document.get("memories") or [] if isinstance(memory, Mapping)]
        known = {normalised(str(memory.get("text", ""))) for memory in memories}
        user_id = document.get("user_id")
        chosen = [self.conversations[user_id]] if user_id in self.conversations else list(self.conversations.values())
        located, conversation = max(
            ((conversation.locate(turns), conversation) for conversation in chosen),
            key=lambda pair: len(pair[0]),
            default=({}, None),
        )
        operations = _operations(conversation, located, known) if conversation is not None else []
        return json.dumps({"operations": operations}, ensure_ascii=False)


def _operations(conversation: _Conversation, located: Mapping[str, str], known: set[str]) -> list[dict[str, Any]]:
    message_of = {dia_id: message_id for message_id, dia_id in located.items()}
    indexes = sorted({index for dia_id in message_of for index in conversation.observations_by_turn.get(dia_id, ())})
    operations = []
    for observation in (conversation.observations[index] for index in indexes):
        statement = normalised(observation.text)
        if statement in known:  # told it is known, or answered already in this answer
            continue
        known.add(statement)
        operation = {
            "op": "add",
            "kind": observation.kind,
            "subject": observation.subject,
            "text": observation.text,
            "confidence": CONFIDENCE,
            "sources": [message_of[dia_id] for dia_id in observation.evidence if dia_id in message_of],
        }
        if observation.kind == "event":
            operation["valid_from"] = observation.session_date.isoformat()
        operations.append(operation)
    return operations


def _document(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The extraction document of the prompt's last user message, or None when it holds none."""
    for message in reversed(messages):
        if message.get("role") == "user":
            try:
                document = json.loads(str(message.get("content") or ""))
            except ValueError:
                return None
            return document if isinstance(document, dict) else None
    return None

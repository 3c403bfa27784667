"""How much of what later questions ask about the rule-based summary keeps, and how much shorter it is.

    .venv/bin/python -m benchmarks.summaries [--users 10] [--seed 1] [--window 0,12] [--json PATH]

No database: the summariser reads message dicts. The data is ``benchmarks.retrieval.dataset``'s
synthetic conversations: pairs of friends over 20 to 30 sessions, with questions labelled by the
turns that hold their answers. Each session is summarised whole (``--window 0``) and in consecutive
windows of ``MEMORY_SUMMARY_WINDOW`` messages (``--window 12``, what the periodic summary reads).
The first speaker's turns have role ``user`` and the second's ``assistant``, each with
``metadata={"name": speaker}``, as the retrieval benchmark stores them.

For every question and every evidence turn, the **key words** are the answer's content words (crudely
stemmed, ``dataset.content_words``) that the evidence turn itself says: the name, the number, the
place, the thing. Evidence whose answer is not in its words (a date worked out from the session's
date, "a great ending") is left out. A fact is **kept** when the summary of the window holding the
evidence turn has all its key words, and **kept by name** when one line of the summary that starts
with the speaker's name has them all.

Three summaries are compared:

* ``extractive``: the service's rule-based summary (``summaries.summarizer.rule_based_summary``);
* ``transcript``: the rule-based summary the service wrote before, each turn's question and answer
  trimmed (``conversations.context.summarize``) and up to three key points, as it was;
* ``transcript cut``: the named transcript ("Speaker: text" lines) cut to the extractive summary's
  length: what choosing sentences gains over keeping the start.
"""
# ruff: noqa: E402 (the summariser imports Django code, set up first)

import argparse
import json
import os
import re
import statistics
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "memoryproject.settings.test")
django.setup()

from benchmarks.retrieval.dataset import CATEGORIES, User, content_words, dataset_generate
from conversations import context, tokens
from summaries.summarizer import RULE_BASED_MAX_TOKENS, rule_based_summary

# The former rule-based summary, as it was: the turns' quotes, then three key points.
FORMER_KEY_POINTS = 3
FORMER_KEY_POINT_TOKENS = 30
FORMER_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
FORMER_KEY_POINT_CUES = re.compile(
    r"\d|\b(?:prefer|want|need|must|should|have to|always|never|don'?t|do not|avoid|decid|agree|plan|deadline|budget"
    r"|remember|todo|task|prefier|quier|necesit|debe|tengo que|siempre|nunca|evita|acord|presupuesto|plazo|recuerd"
    r"|tarea)",
    re.IGNORECASE,
)


def transcript_summary(messages: Sequence[dict[str, Any]]) -> str:
    _, turns = context.split_turns(messages)
    reserved = FORMER_KEY_POINTS * (FORMER_KEY_POINT_TOKENS + 3) + 4
    quotes = context.summarize(turns, budget=RULE_BASED_MAX_TOKENS - reserved) if turns else ""
    points: list[str] = []
    for message in messages:
        for line in (message.get("content") or "").splitlines():
            for sentence in FORMER_SENTENCE_END.split(line):
                flat = " ".join(sentence.split())
                if len(flat.split()) < 3 or not FORMER_KEY_POINT_CUES.search(flat) or flat in quotes:
                    continue
                point = tokens.truncate(flat, FORMER_KEY_POINT_TOKENS)
                if point in points:
                    points.remove(point)
                points.append(point)
    parts = [quotes] if quotes else []
    if points[-FORMER_KEY_POINTS:]:
        parts.append("\n".join(["Key points:", *(f"- {point}" for point in points[-FORMER_KEY_POINTS:])]))
    return tokens.truncate("\n".join(parts), RULE_BASED_MAX_TOKENS) if parts else f"{len(messages)} messages"


def transcript_cut(messages: Sequence[dict[str, Any]], *, length: int) -> str:
    transcript = "\n".join(f"{message['metadata']['name']}: {message['content']}" for message in messages)
    return transcript[:length]


@dataclass
class Figures:
    ratios: list[float] = field(default_factory=list)
    characters: list[int] = field(default_factory=list)
    token_counts: list[int] = field(default_factory=list)
    longer_than_source: int = 0
    kept: int = 0
    kept_by_name: int = 0
    facts: int = 0
    by_category: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))

    def as_json(self) -> dict[str, Any]:
        return {
            "summaries": len(self.characters),
            "median_characters": statistics.median(self.characters),
            "median_tokens": statistics.median(self.token_counts),
            "median_compression": statistics.median(self.ratios),
            "longer_than_source": self.longer_than_source,
            "facts": self.facts,
            "kept": self.kept / self.facts,
            "kept_by_name": self.kept_by_name / self.facts,
            "kept_by_category": {category: kept / total for category, (kept, total) in self.by_category.items() if total},
        }


def messages_of(user: User, turns: Sequence[Any], *, start: int) -> list[dict[str, Any]]:
    first = user.speakers[0]
    return [
        {
            "id": turn.dia_id,
            "seq": start + offset,
            "role": "user" if turn.speaker == first else "assistant",
            "content": turn.text,
            "metadata": {"name": turn.speaker},
            "token_count": 0,
        }
        for offset, turn in enumerate(turns)
    ]


def facts_of(user: User) -> list[tuple[str, str, str, frozenset[str]]]:
    """(category, evidence turn id, speaker, key words) for every question's evidence turn."""
    turns = user.turns()
    found = []
    for question in user.questions:
        answer_words = content_words(question.answer)
        for evidence in question.evidence:
            turn = turns.get(evidence)
            if turn is None:
                continue
            key = frozenset(answer_words & content_words(turn.text))
            if key:
                found.append((question.category, evidence, turn.speaker, key))
    return found


def evaluate(users: Sequence[User], *, window: int) -> dict[str, Figures]:
    summarizers: dict[str, Callable[[list[dict[str, Any]], str], str]] = {
        "extractive": lambda messages, extractive: extractive,
        "transcript": lambda messages, extractive: transcript_summary(messages),
        "transcript cut": lambda messages, extractive: transcript_cut(messages, length=len(extractive)),
    }
    figures = {name: Figures() for name in summarizers}
    for user in users:
        summaries: dict[str, dict[str, str]] = {name: {} for name in summarizers}  # name -> turn id -> its window's text
        for session in user.sessions:
            size = window or len(session.turns)
            for start in range(0, len(session.turns), size):
                turns = session.turns[start : start + size]
                messages = messages_of(user, turns, start=start + 1)
                source = sum(len(message["content"]) for message in messages)
                extractive = rule_based_summary(messages)
                for name, summarize in summarizers.items():
                    text = summarize(messages, extractive)
                    figure = figures[name]
                    figure.characters.append(len(text))
                    figure.token_counts.append(tokens.count(text))
                    figure.ratios.append(source / max(len(text), 1))
                    figure.longer_than_source += len(text) > source
                    for turn in turns:
                        summaries[name][turn.dia_id] = text
        for category, evidence, speaker, key in facts_of(user):
            for name, figure in figures.items():
                text = summaries[name][evidence]
                kept = key <= content_words(text)
                by_name = any(
                    key <= content_words(line) for line in text.splitlines() if line.split("] ")[-1].startswith(f"{speaker}:")
                )
                figure.facts += 1
                figure.kept += kept
                figure.kept_by_name += by_name
                figure.by_category[category][0] += kept
                figure.by_category[category][1] += 1
    return figures


def report(figures: dict[str, Figures], *, window: int) -> str:
    title = "whole sessions" if not window else f"windows of {window} messages"
    lines = [
        f"### {title}",
        "",
        "| summary | median chars | median tokens | median compression | longer than source | facts kept | kept by speaker name |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, figure in figures.items():
        data = figure.as_json()
        lines.append(
            f"| {name} | {data['median_characters']:.0f} | {data['median_tokens']:.0f} | {data['median_compression']:.2f}x "
            f"| {data['longer_than_source']} of {data['summaries']} | {data['kept']:.1%} | {data['kept_by_name']:.1%} |"
        )
    lines += ["", "| category | " + " | ".join(figures) + " |", "| --- |" + " ---: |" * len(figures)]
    for category in CATEGORIES:
        cells = []
        for figure in figures.values():
            kept, total = figure.by_category.get(category, [0, 0])
            cells.append(f"{kept / total:.1%} of {total}" if total else "-")
        lines.append(f"| {category} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.summaries", description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", default="0,12", help="messages per summary, comma separated; 0: the whole session")
    parser.add_argument("--json", default=None, help="write every figure to this file")
    options = parser.parse_args(argv)
    dataset = dataset_generate(users=options.users, seed=options.seed)
    print(f"{len(dataset.users)} users, {dataset.turn_count} turns, {dataset.question_count} questions (seed {options.seed})\n")
    results = {}
    for window in (int(size) for size in options.window.split(",")):
        figures = evaluate(dataset.users, window=window)
        results[str(window)] = {name: figure.as_json() for name, figure in figures.items()}
        print(report(figures, window=window), end="\n\n")
    if options.json:
        with open(options.json, "w") as file:
            json.dump(results, file, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

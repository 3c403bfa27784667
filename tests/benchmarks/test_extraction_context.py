"""The extraction benchmark's context recall (``benchmarks.extraction``): an answer turn is held by a
context when its text is in the context's messages, or, with memories on, when a memory whose line is
in the system message was read from it; a memory the bundle considered but left out holds nothing."""

from datetime import UTC, datetime

import pytest

from benchmarks.extraction.__main__ import _found_turns, memories_in_context, turns_remembered
from benchmarks.retrieval.dataset import Question, Session, Turn, User
from benchmarks.retrieval.evaluate import context_figures_of, context_turns_held
from benchmarks.retrieval.http import dialog_ids, message_id

USER = User(
    user_id="locomo-conv-tiny",
    speakers=("Ines", "Omar"),
    sessions=(
        Session(
            number=1,
            date=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
            turns=(
                Turn("D1:1", "Ines", "I finally adopted a greyhound from the shelter, his name is Pilot."),
                Turn("D1:2", "Omar", "My sister is getting married in Porto next spring."),
            ),
        ),
        Session(
            number=2,
            date=datetime(2023, 6, 27, 10, 37, tzinfo=UTC),
            turns=(
                Turn("D2:1", "Omar", "The wedding in Porto was lovely, we danced until three."),
                Turn("D2:2", "Ines", "I am training for the Lisbon half marathon in October."),
            ),
        ),
    ),
    questions=(),
)
DOG = Question("What is the name of Ines's dog?", ("D1:1",), "single-hop", "Pilot")
WEDDING = Question("Where did Omar's sister get married, and when?", ("D1:2", "D2:1"), "multi-hop", "Porto")
RACE = Question("Which race is Ines training for?", ("D2:2",), "single-hop", "Lisbon half")


def memory(text: str, *, kind: str, valid_from: str | None, sources: list[tuple[int, str]]) -> dict:
    """A memory as the context's bundle lists it (``memory.extracted_memories``)."""
    return {
        "memory_id": f"m-{text[:8]}",
        "kind": kind,
        "subject": text.split()[0],
        "text": text,
        "valid_from": valid_from,
        "score": 0.5,
        "message_ids": [message_id(USER, number, dia_id) for number, dia_id in sources],
    }


WEDDING_MEMORY = memory(
    "Omar's sister got married in Porto.", kind="event", valid_from="2023-06-27T10:37:00+00:00", sources=[(2, "D2:1")]
)
RACE_MEMORY = memory("Ines is training for the Lisbon half marathon.", kind="fact", valid_from=None, sources=[(2, "D2:2")])


def context(system: str, considered: list[dict]) -> dict:
    """The context endpoint's answer, in the parts the benchmark reads."""
    return {
        "messages": [{"role": "system", "content": system}, {"role": "user", "content": "the question"}],
        "memory": {"extracted_memories": considered},
        "estimated_tokens": 120,
    }


# The wedding's memory fitted in the system message; the race's was considered but left out.
ANSWER = context(
    "Memories from earlier conversations:\n"
    "- [event, 27 June 2023] Omar's sister got married in Porto.\n\n"
    "Relevant earlier messages:\n"
    "[Monday 8 May 2023, conversation locomo-conv-tiny-s1]\n"
    "Ines: I finally adopted a greyhound from the shelter,\n his name is Pilot.\n"
    "Omar: My sister is getting married in Porto next spring.",
    [WEDDING_MEMORY, RACE_MEMORY],
)


def test_only_the_memories_whose_line_is_in_the_system_message_are_in_the_context():
    assert memories_in_context(ANSWER) == [WEDDING_MEMORY]
    assert memories_in_context(context("Relevant earlier messages:\n...", [WEDDING_MEMORY])) == []
    # The same words in a turn the context sends are not the memory's line.
    assert memories_in_context(context("Omar: Omar's sister got married in Porto.", [WEDDING_MEMORY])) == []


def test_an_answer_turn_is_held_by_its_text_or_by_a_memory_in_the_context_read_from_it():
    mapping = dialog_ids(USER)

    assert context_turns_held(ANSWER, USER, DOG) == {"D1:1"}  # its text, whitespace aside
    assert context_turns_held(ANSWER, USER, WEDDING) == {"D1:2"}
    assert turns_remembered(ANSWER, WEDDING, mapping) == {"D2:1"}  # the memory in the system message was read from it
    assert context_turns_held(ANSWER, USER, RACE) == set()
    assert turns_remembered(ANSWER, RACE, mapping) == set()  # its memory was considered, not sent


def test_the_shares_count_the_questions_with_every_and_with_any_answer_turn_held_per_category():
    asked = [(USER, DOG), (USER, WEDDING), (USER, RACE)]
    mapping = dialog_ids(USER)
    by_text = [context_turns_held(ANSWER, USER, question) for _, question in asked]
    with_memories = [
        held | turns_remembered(ANSWER, question, mapping) for held, (_, question) in zip(by_text, asked, strict=True)
    ]

    turns = context_figures_of(asked, by_text, tokens_used=[100, 120, 140], milliseconds=[5.0, 6.0, 7.0], max_tokens=4000)
    remembered = context_figures_of(asked, with_memories, tokens_used=[120] * 3, milliseconds=[5.0] * 3, max_tokens=4000)

    assert (turns.every, turns.any) == (pytest.approx(1 / 3), pytest.approx(2 / 3))
    assert turns.every_by_category == {"single-hop": 0.5, "multi-hop": 0.0}
    assert turns.any_by_category == {"single-hop": 0.5, "multi-hop": 1.0}
    assert (remembered.every, remembered.any) == (pytest.approx(2 / 3), pytest.approx(2 / 3))
    assert remembered.every_by_category == {"single-hop": 0.5, "multi-hop": 1.0}
    assert turns.median_tokens == 120
    assert turns.max_tokens == 4000


def test_a_fused_result_finds_its_own_turn_or_the_turns_its_memory_was_read_from():
    assert _found_turns({"kind": "turn", "message_id": "a", "memory_ids": ["m"]}) == ["a"]
    assert _found_turns({"kind": "memory", "memory_id": "m", "message_ids": ["b", "c"]}) == ["b", "c"]

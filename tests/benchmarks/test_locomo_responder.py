"""The LoCoMo responder (``benchmarks.extraction.locomo_responder``): a tiny conversation in LoCoMo's
schema, its turns given in the extraction prompt as the pipeline builds it (``extraction.extractor``),
answered with the observations of those turns and read back by the pipeline's own reader."""

import json
import os
import subprocess
import sys
import uuid
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from langchain_openai import ChatOpenAI

from benchmarks.extraction.locomo_responder import LocomoResponder, observation_kind, observations_read
from benchmarks.model_server import ModelServer, ScriptedResponder
from benchmarks.retrieval import locomo
from benchmarks.retrieval.dataset import User
from extraction import extractor
from extraction.services import Operation

ROOT = Path(__file__).resolve().parents[2]
LONG = "I kept a diary of the whole trip, " + "and every day had something new to write about " * 120

SAMPLE = {
    "sample_id": "conv-tiny",
    "conversation": {
        "speaker_a": "Anna",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Anna", "dia_id": "D1:1", "text": "Hi Ben! I went hiking in the Alps last weekend."},
            {"speaker": "Ben", "dia_id": "D1:2", "text": "Wow! My sister Clara loves the Alps."},
            {"speaker": "Anna", "dia_id": "D1:3", "text": "Thanks!"},
            {"speaker": "Anna", "dia_id": "D1:4", "text": "I work as a nurse now.", "blip_caption": "a photo of a hospital"},
        ],
        "session_2_date_time": "10:00 am on 1 June, 2023",
        "session_2": [
            {"speaker": "Ben", "dia_id": "D2:1", "text": "How is the new job?"},
            {"speaker": "Anna", "dia_id": "D2:2", "text": "Thanks!"},
            {"speaker": "Anna", "dia_id": "D2:3", "text": "Busy, but I'm saving up for a bike."},
            {"speaker": "Ben", "dia_id": "D2:4", "text": LONG},
        ],
    },
    "observation": {
        "session_1_observation": {
            "Anna": [
                ["Anna went hiking in the Alps.", "D1:1"],
                ["Anna works as a nurse.", ["D1:3", "D1:4"]],
                ["Anna said something nobody recorded.", "D9:99"],
            ],
            "Ben": [["Ben's sister Clara loves the Alps.", "D1:2"]],
        },
        "session_2_observation": {
            "Anna": [["Anna is thankful.", "D2:2"], ["Anna is saving up for a bike.", "D2:3"]],
            "Ben": [["Ben kept a diary of his trip.", "D2:4"]],
        },
    },
    "qa": [],
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    written = tmp_path / "locomo-tiny.json"
    written.write_text(json.dumps([SAMPLE]))
    return written


@pytest.fixture
def user(path: Path) -> User:
    return locomo.locomo_load(path=path).users[0]


@pytest.fixture
def responder(path: Path) -> LocomoResponder:
    return LocomoResponder.from_path(path)


def message_id(dia_id: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, dia_id))


def prompt(user: User, dia_ids: list[str], *, memories: tuple[str, ...] = (), user_id: str | None = None) -> list[dict]:
    """The extraction prompt of these turns of ``user`` and these memories, as the pipeline builds it."""
    turns = user.turns()
    return extractor.prompt_messages(
        user_id=user_id or user.user_id,
        memories=[
            extractor.Related(memory_id=str(uuid.uuid4()), kind="fact", subject="Anna", text=text, valid_from=None)
            for text in memories
        ],
        turns=[
            extractor.Turn(
                message_id=message_id(dia_id),
                role="user" if turns[dia_id].speaker == user.speakers[0] else "assistant",
                speaker=turns[dia_id].speaker,
                said_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
                text=turns[dia_id].text,
            )
            for dia_id in dia_ids
        ],
    )


def answered(responder: LocomoResponder, messages: list[dict]) -> list[Operation]:
    return extractor.answer_read(responder(messages, "locomo"))


def test_the_observations_of_the_turns_read_are_answered_as_adds(responder, user):
    operations = answered(responder, prompt(user, ["D1:1", "D1:2", "D1:3", "D1:4"]))

    assert [(op.op, op.kind, op.subject, op.text) for op in operations] == [
        ("add", "event", "Anna", "Anna went hiking in the Alps."),
        ("add", "fact", "Anna", "Anna works as a nurse."),
        ("add", "preference", "Ben", "Ben's sister Clara loves the Alps."),
    ]
    hiking, nurse, sister = operations
    assert hiking.valid_from == datetime(2023, 5, 8, tzinfo=UTC)  # an event: its session's date
    assert nurse.valid_from is None
    assert sister.valid_from is None
    assert {op.confidence for op in operations} == {0.9}
    assert hiking.sources == (message_id("D1:1"),)
    assert nurse.sources == (message_id("D1:3"), message_id("D1:4"))  # every evidence turn in the prompt
    assert sister.sources == (message_id("D1:2"),)


def test_an_observation_is_answered_when_any_of_its_turns_is_read_and_no_sooner(responder, user):
    assert answered(responder, prompt(user, ["D1:1"])) != []
    assert [op.text for op in answered(responder, prompt(user, ["D1:4"]))] == ["Anna works as a nurse."]
    assert [op.sources for op in answered(responder, prompt(user, ["D1:4"]))] == [(message_id("D1:4"),)]
    assert answered(responder, prompt(user, ["D2:1"])) == []  # a turn no observation comes from


def test_a_statement_the_prompt_says_is_known_is_not_added_again(responder, user):
    operations = answered(
        responder, prompt(user, ["D1:1", "D1:2", "D1:3", "D1:4"], memories=("anna WENT hiking in the alps", "Unrelated."))
    )

    assert [op.text for op in operations] == ["Anna works as a nurse.", "Ben's sister Clara loves the Alps."]


def test_a_text_said_twice_is_the_turn_of_the_session_the_prompt_is_from(responder, user):
    later = answered(responder, prompt(user, ["D2:1", "D2:2", "D2:3"]))
    earlier = answered(responder, prompt(user, ["D1:2", "D1:3"]))

    assert [op.text for op in later] == ["Anna is thankful.", "Anna is saving up for a bike."]
    assert [op.text for op in earlier] == ["Anna works as a nurse.", "Ben's sister Clara loves the Alps."]


def test_a_turn_the_prompt_cut_is_found_by_its_beginning(responder, user):
    messages = prompt(user, ["D2:4"])
    assert json.loads(messages[-1]["content"])["messages"][0]["text"].endswith("…")  # the pipeline cut it

    assert [op.text for op in answered(responder, messages)] == ["Ben kept a diary of his trip."]


def test_a_prompt_of_an_unknown_user_is_looked_for_in_every_conversation(responder, user):
    assert [op.text for op in answered(responder, prompt(user, ["D2:3"], user_id="someone-else"))] == [
        "Anna is saving up for a bike."
    ]


def test_anything_but_an_extraction_prompt_is_answered_with_no_operations(responder):
    assert responder([{"role": "user", "content": "What is the capital of France?"}], "locomo") == '{"operations": []}'
    assert responder([{"role": "system", "content": "rules"}], "locomo") == '{"operations": []}'
    assert responder([{"role": "user", "content": "[1, 2]"}], "locomo") == '{"operations": []}'


def test_the_same_prompt_gets_the_same_answer(path, user):
    messages = prompt(user, ["D1:1", "D1:2", "D1:3", "D1:4", "D2:2", "D2:3"])

    assert LocomoResponder.from_path(path)(messages, "locomo") == LocomoResponder.from_path(path)(messages, "locomo")


def test_the_observations_are_read_with_their_evidence_turns_and_session_dates(path):
    observations = observations_read(path=path)

    (found,) = observations.by_user.values()
    assert observations.skipped == 1  # its evidence names no turn
    assert len(observations) == 6
    assert [(o.subject, o.evidence, o.session_date) for o in found[:3]] == [
        ("Anna", ("D1:1",), date(2023, 5, 8)),
        ("Anna", ("D1:3", "D1:4"), date(2023, 5, 8)),
        ("Ben", ("D1:2",), date(2023, 5, 8)),
    ]
    assert found[3].session_date == date(2023, 6, 1)


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Caroline attended a support group.", "event"),
        ("Melanie painted a sunrise in May 2022.", "event"),
        ("Jon visited Paris last week.", "event"),
        ("Tim loves fantasy novels.", "preference"),
        ("Caroline's favorite book is Becoming Nicole.", "preference"),
        ("Melanie has been married for five years.", "relation"),
        ("Jon's friends helped him.", "relation"),
        ("Caroline is a transgender woman.", "fact"),
    ],
)
def test_the_kind_of_an_observation_is_told_by_its_words(text, kind):
    assert observation_kind(text) == kind


def test_chat_openai_gets_the_observations_from_the_model_server(path, user):
    with ModelServer(ScriptedResponder(LocomoResponder.from_path(path))) as server:
        reply = ChatOpenAI(base_url=server.url, api_key="x", model="locomo", max_retries=0).invoke(prompt(user, ["D2:3"]))

    assert [op.text for op in extractor.answer_read(reply.content)] == ["Anna is saving up for a bike."]
    assert reply.usage_metadata["output_tokens"] > 0


def test_the_model_servers_command_answers_with_the_observations_of_its_file(path, user):
    command = [sys.executable, "-m", "benchmarks.model_server", "--port", "0", "--locomo", str(path)]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        url = process.stdout.readline().split()[1]
        reply = ChatOpenAI(base_url=url, api_key="x", model="locomo", max_retries=0).invoke(prompt(user, ["D1:2"]))
    finally:
        process.terminate()
        process.wait(timeout=10)

    assert [op.text for op in extractor.answer_read(reply.content)] == ["Ben's sister Clara loves the Alps."]

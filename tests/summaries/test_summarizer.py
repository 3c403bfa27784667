"""The summariser alone (no database): the prompt to the chat model the settings name, the
contract on its answer, and the rule-based summary whenever there is no model or it fails."""

import threading
import types
from typing import Any

import pytest
from langchain_core.messages import HumanMessage, SystemMessage
from structlog.testing import capture_logs

from conversations import tokens
from summaries import summarizer
from summaries.summarizer import RULE_BASED, hold_to_contract, summarize
from tests.summaries import fakes


@pytest.fixture(autouse=True)
def fresh_fake() -> Any:
    fakes.reset()
    yield
    fakes.reset()


def message(seq: int, role: str, content: str, **metadata: Any) -> dict[str, Any]:
    return {"id": f"id-{seq}", "seq": seq, "role": role, "content": content, "metadata": metadata, "token_count": 0}


WINDOW = [
    message(1, "user", "I want to visit Lisbon from 3 to 10 May."),
    message(2, "assistant", "Great choice. What is your budget?"),
    message(3, "user", "About 2,000 EUR for two people, flights included."),
    message(4, "assistant", "", tool_calls=[{"id": "call-1", "name": "search_hotels", "args": {"city": "Lisbon"}}]),
    message(5, "tool", '{"hotels": ["Alfama Patio", "Baixa House"]}', tool_call_id="call-1"),
    message(6, "assistant", "Alfama Patio is quiet and within budget."),
]


def failures(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry["event"] == "summary_model_failed"]


# --- No model ---------------------------------------------------------------------------------------


def test_without_a_model_the_summary_is_rule_based_the_sentences_that_carry_information_by_speaker():
    written = summarize(WINDOW, model_spec="", timeout=5)

    assert written.model == RULE_BASED
    assert written.text == (
        "User: I want to visit Lisbon from 3 to 10 May.\n"
        "Assistant: Alfama Patio is quiet and within budget.\n"
        "Tools: search_hotels"
    )
    assert fakes.calls.built == []


def test_a_sentence_with_a_value_is_kept_from_a_long_message_of_filler():
    long_question = " ".join(["Some context about the trip that goes on and on."] * 8) + " We must land before 18:00."
    written = summarize([message(1, "user", long_question), message(2, "assistant", "Noted.")], model_spec="", timeout=5)

    assert written.text == "User: We must land before 18:00."


def test_a_rule_based_summary_of_long_messages_stays_within_its_bound():
    long = [
        message(seq, "user" if seq % 2 else "assistant", f"Point {seq}: " + "budget 100 EUR per night. " * 200)
        for seq in range(1, 13)
    ]

    written = summarize(long, model_spec="", timeout=5)

    assert 0 < tokens.count(written.text) <= summarizer.RULE_BASED_MAX_TOKENS


def test_a_window_without_a_question_still_gets_a_summary():
    written = summarize([message(7, "assistant", "Anything else?"), message(8, "tool", "{}")], model_spec="", timeout=5)

    assert written.model == RULE_BASED
    assert written.text == "Anything else?"  # the note "Small talk from Assistant." would be longer


def test_no_messages_is_a_mistake_of_the_caller():
    with pytest.raises(ValueError, match="no messages"):
        summarize([], model_spec="", timeout=5)


# --- The chat model -----------------------------------------------------------------------------------


def test_the_model_is_built_at_temperature_0_2_and_asked_about_the_window_in_order():
    written = summarize(WINDOW, model_spec=fakes.SPEC, timeout=7.5)

    assert fakes.calls.built == [{"temperature": 0.2, "max_tokens": summarizer.MODEL_MAX_TOKENS, "timeout": 7.5}]
    [prompt] = fakes.calls.prompts
    system, human = prompt
    assert isinstance(system, SystemMessage)
    assert isinstance(human, HumanMessage)
    for words in ("tasks, decisions, preferences, constraints and data values", "4 to 6 bullet points", "under 120 tokens"):
        assert words in system.content
    positions = [human.content.index(f"{m['role']}: {m['content']}".strip()) for m in WINDOW if m["content"]]
    assert positions == sorted(positions)
    assert "[calls search_hotels]" in human.content
    assert written.model == fakes.MODEL_NAME


def test_the_answer_keeps_its_bullets_and_drops_the_preamble():
    written = summarize(WINDOW, model_spec=fakes.SPEC, timeout=5)

    assert written.text == (
        "- The user is planning a trip to Lisbon from 3 to 10 May\n"
        "- Budget: 2,000 EUR for two people, flights included\n"
        "- Prefers a quiet hotel near Alfama over the city centre\n"
        "- Decided to book the train to Sintra for 5 May"
    )


def test_a_long_answer_is_cut_to_six_bullets_under_120_tokens():
    fakes.behaviour.answer = "\n".join(
        f"{number}. Decision {number}: " + "the user keeps adding constraints about dates, budgets and hotels " * 4
        for number in range(1, 10)
    )

    written = summarize(WINDOW, model_spec=fakes.SPEC, timeout=5)

    lines = written.text.splitlines()
    assert 1 <= len(lines) <= summarizer.MAX_BULLETS
    assert all(line.startswith("- Decision ") for line in lines)
    assert tokens.count(written.text) < 120
    assert lines[-1].endswith("…")
    assert not lines[-1].endswith(" …")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ("* one\n* two", "- one\n- two"),
        ("1) one\n2. two\n• three", "- one\n- two\n- three"),
        ("The user wants tea. They dislike coffee!", "- The user wants tea.\n- They dislike coffee!"),
        ("\n".join(f"- point {n}" for n in range(1, 9)), "\n".join(f"- point {n}" for n in range(1, 7))),
        ("Summary:\nThe user wants tea.", "- The user wants tea."),
        ("   \n  ", ""),
    ],
)
def test_the_contract_holds_whatever_the_shape_of_the_answer(answer, expected):
    assert hold_to_contract(answer) == expected


def test_one_bullet_longer_than_the_limit_is_cut_not_dropped():
    text = hold_to_contract("- " + "word " * 300)

    assert text.startswith("- word word")
    assert text.endswith("…")
    assert tokens.count(text) < 120


def test_a_failing_model_falls_back_to_the_rule_based_summary_and_says_why():
    fakes.behaviour.error = RuntimeError("rate limited")

    with capture_logs() as logs:
        written = summarize(WINDOW, model_spec=fakes.SPEC, timeout=5)

    assert written.model == RULE_BASED
    assert "User: I want to visit Lisbon" in written.text
    [failure] = failures(logs)
    assert (failure["log_level"], failure["reason"], failure["error"], failure["model_spec"]) == (
        "warning",
        "error",
        "rate limited",
        fakes.SPEC,
    )


def test_a_model_that_does_not_answer_in_time_falls_back_without_waiting_for_it():
    fakes.behaviour.release = threading.Event()

    with capture_logs() as logs:
        written = summarize(WINDOW, model_spec=fakes.SPEC, timeout=0.2)

    assert written.model == RULE_BASED
    assert failures(logs)[0]["reason"] == "timeout"
    assert len(fakes.calls.prompts) == 1  # it was asked, and is still answering
    fakes.behaviour.release.set()


def test_an_empty_answer_falls_back():
    fakes.behaviour.answer = "Here is the summary:\n\n"

    with capture_logs() as logs:
        written = summarize(WINDOW, model_spec=fakes.SPEC, timeout=5)

    assert written.model == RULE_BASED
    assert failures(logs)[0]["reason"] == "empty"


def test_an_installed_provider_without_its_key_falls_back_naming_the_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with capture_logs() as logs:
        written = summarize(WINDOW, model_spec="openai:gpt-4o-mini", timeout=5)

    assert written.model == RULE_BASED
    [failure] = failures(logs)
    assert "OPENAI_API_KEY" in failure["error"]


@pytest.mark.parametrize(
    ("model_spec", "explained"),
    [
        (
            "anthropic:claude-haiku",
            "needs the Python package langchain-anthropic, which is not installed (pip install langchain-anthropic)",
        ),
        ("ollama:llama3", "pip install langchain-ollama"),
        ("gpt-4o-mini", "names no model: use 'provider:model_name'"),
        ("mistral:small", "unknown provider 'mistral'"),
        ("tests.summaries.fakes:missing", "tests.summaries.fakes has no factory missing"),
        ("no_such.module:factory", "needs the Python package no_such"),
        ("tests.summaries.fakes:not_a_chat_model", "gave a object, not a LangChain BaseChatModel"),
    ],
)
def test_a_model_that_cannot_be_built_falls_back_with_a_clear_error(model_spec, explained):
    with capture_logs() as logs:
        written = summarize(WINDOW, model_spec=model_spec, timeout=5)

    assert written.model == RULE_BASED
    [failure] = failures(logs)
    assert failure["reason"] == "unavailable"
    assert explained in failure["error"]


def test_a_provider_integration_is_built_with_the_model_name_temperature_and_timeout(monkeypatch):
    built: list[dict[str, Any]] = []

    def chat_openai(**kwargs: Any) -> fakes.RecordingChatModel:
        built.append(kwargs)
        return fakes.RecordingChatModel(model_name=kwargs["model"])

    monkeypatch.setitem(__import__("sys").modules, "langchain_openai", types.SimpleNamespace(ChatOpenAI=chat_openai))

    written = summarize(WINDOW, model_spec="openai:gpt-4o-mini", timeout=20)

    assert built == [{"model": "gpt-4o-mini", "temperature": 0.2, "max_tokens": summarizer.MODEL_MAX_TOKENS, "timeout": 20}]
    assert written.model == "gpt-4o-mini"
    assert written.text.startswith("- The user is planning a trip to Lisbon")

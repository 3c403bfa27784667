"""A summary of a window of messages by a chat model, or rule-based when there is none.

``summarize(messages, model_spec=..., timeout=...)`` takes message dicts in the shape of
``conversations.services.message_to_dict``, oldest first, and always answers:

* ``model_spec`` (``MEMORY_SUMMARY_MODEL``) names the chat model:

  - ``""``: no model; the rule-based summary.
  - ``"provider:model_name"``, provider ``openai``, ``anthropic`` or ``ollama``: that LangChain
    integration (``langchain-openai``, ``langchain-anthropic``, ``langchain-ollama``), imported only
    when named; ``langchain-openai`` is installed with the service (the chat endpoint's), the others
    are installed by a deployment that names them.
  - ``"dotted.module:attribute"``: a factory called with the keyword arguments ``temperature``,
    ``max_tokens`` and ``timeout`` that returns a LangChain ``BaseChatModel`` (any other provider,
    a gateway, a fake in the tests). The deployment's own ``MEMORY_SUMMARY_MODEL`` only: a tenant's
    override names a provider and a model, never code (``tenants.models``).

* The model gets this prompt at temperature 0.2: analyse the messages; capture tasks,
  decisions, preferences, constraints and data values; answer with 4 to 6 bullet points under 120
  tokens. Its answer is held to that contract (``hold_to_contract``): at most 6 bullets and fewer
  than 120 tokens, the bullet that overflows cut short and the rest dropped. The answer is cleaned
  before anything else (``core.storable.cleaned_text``: NUL removed, a lone UTF-16
  surrogate replaced by U+FFFD), so that what is stored is text PostgreSQL can hold.
* Any failure (the integration not installed, a spec that names nothing, an error, no answer within
  ``timeout`` seconds, an answer with nothing in it) is logged and answered with the rule-based
  summary, model ``rule_based`` (``summaries.extractive``): the sentences of the window that carry
  information a later question asks about (numbers, dates, names, preferences, plans, facts about
  people), each after its speaker's name, in the order they were said, at least 3 times shorter than
  the messages from a few hundred characters on and never longer, within ``RULE_BASED_MAX_TOKENS``.

No database access: the services read the messages and store the answer.
"""

import importlib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import structlog
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from conversations import tokens
from core.storable import cleaned_text
from memory_wire.messages import tool_calls_of
from summaries.extractive import extractive_summary
from tenants.models import MODEL_NAME

logger = structlog.get_logger(__name__)

RULE_BASED = "rule_based"
TEMPERATURE = 0.2
MAX_BULLETS = 6
# A summary written by a model has fewer tokens than this (cl100k_base).
TOKEN_LIMIT = 120
# What the model may write: room to finish its last bullet, which the contract then trims.
MODEL_MAX_TOKENS = 200
# Each message's share of the prompt: a window of long messages stays a bounded prompt.
PROMPT_MESSAGE_TOKENS = 600
# A cut bullet keeps at least this many tokens, or is dropped.
MIN_CUT_TOKENS = 5
RULE_BASED_MAX_TOKENS = 400

# LangChain integrations by provider: (module, class, package to install).
PROVIDERS = {
    "openai": ("langchain_openai", "ChatOpenAI", "langchain-openai"),
    "anthropic": ("langchain_anthropic", "ChatAnthropic", "langchain-anthropic"),
    "ollama": ("langchain_ollama", "ChatOllama", "langchain-ollama"),
}

SYSTEM_PROMPT = (
    "You keep the memory of a conversation between a user and an assistant. Analyse the messages you "
    "are given and capture what later turns will need: tasks, decisions, preferences, constraints and "
    "data values (names, numbers, dates, amounts). Answer with 4 to 6 bullet points, each on its own "
    'line starting with "- ", under 120 tokens in all, in the language of the conversation. No '
    "introduction and no closing remark."
)

BULLET = re.compile(r"^(?:[-*•‣◦▪–—]|\d{1,2}[.)])\s+(?P<text>.*\S)")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


@dataclass(frozen=True)
class SummaryText:
    text: str
    model: str


class SummaryModelError(Exception):
    """The chat model could not be built or did not give a usable answer."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def summarize(messages: Sequence[dict[str, Any]], *, model_spec: str, timeout: float) -> SummaryText:
    """A summary of ``messages`` (not empty, oldest first); never raises for the model's sake."""
    if not messages:
        raise ValueError("There are no messages to summarise.")
    model_spec = model_spec.strip()
    if not model_spec:
        return SummaryText(text=rule_based_summary(messages), model=RULE_BASED)
    try:
        chat_model, model_name = chat_model_for(model_spec, timeout=timeout)
        answer = _invoke(chat_model, prompt_messages(messages), timeout=timeout)
        text = hold_to_contract(answer)
        if not text:
            raise SummaryModelError("The model answered with no text.", reason="empty")
        return SummaryText(text=text, model=cleaned_text(model_name)[:200])
    except Exception as error:  # the rule-based summary stands in for any failure of the model
        logger.warning(
            "summary_model_failed",
            model_spec=model_spec,
            reason=error.reason if isinstance(error, SummaryModelError) else "error",
            error=str(error) or repr(error),
            messages=len(messages),
        )
        return SummaryText(text=rule_based_summary(messages), model=RULE_BASED)


# --- The chat model -----------------------------------------------------------------------------


def chat_model_for(model_spec: str, *, timeout: float) -> tuple[BaseChatModel, str]:
    """(the chat model ``model_spec`` names, the model name to record with its summaries)."""
    target, _, name = model_spec.partition(":")
    if not target or not name:
        raise SummaryModelError(
            f"MEMORY_SUMMARY_MODEL={model_spec!r} names no model: use 'provider:model_name' "
            f"(providers: {', '.join(PROVIDERS)}) or 'dotted.module:factory'.",
            reason="unavailable",
        )
    if "." in target:
        factory = getattr(_import(target, model_spec=model_spec, package=target.split(".")[0]), name, None)
        if not callable(factory):
            raise SummaryModelError(f"MEMORY_SUMMARY_MODEL={model_spec!r}: {target} has no factory {name}.", reason="unavailable")
        chat_model = factory(temperature=TEMPERATURE, max_tokens=MODEL_MAX_TOKENS, timeout=timeout)
        model_name = _model_name_of(chat_model) or model_spec
    elif target in PROVIDERS:
        module_name, class_name, package = PROVIDERS[target]
        chat_class = getattr(_import(module_name, model_spec=model_spec, package=package), class_name)
        chat_model = chat_class(**_provider_arguments(target, model_name=name, timeout=timeout))
        model_name = name
    else:
        raise SummaryModelError(
            f"MEMORY_SUMMARY_MODEL={model_spec!r}: unknown provider {target!r}; the providers are "
            f"{', '.join(PROVIDERS)}, or name a factory as 'dotted.module:factory'.",
            reason="unavailable",
        )
    if not isinstance(chat_model, BaseChatModel):
        raise SummaryModelError(
            f"MEMORY_SUMMARY_MODEL={model_spec!r} gave a {type(chat_model).__name__}, not a LangChain BaseChatModel.",
            reason="unavailable",
        )
    return chat_model, model_name


def _import(module_name: str, *, model_spec: str, package: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ImportError as error:
        raise SummaryModelError(
            f"MEMORY_SUMMARY_MODEL={model_spec!r} needs the Python package {package}, which is not installed "
            f"(pip install {package}): {error}",
            reason="unavailable",
        ) from error


def _provider_arguments(provider: str, *, model_name: str, timeout: float) -> dict[str, Any]:
    if provider == "ollama":  # no timeout argument of its own: its HTTP client takes it
        return {
            "model": model_name,
            "temperature": TEMPERATURE,
            "num_predict": MODEL_MAX_TOKENS,
            "client_kwargs": {"timeout": timeout},
        }
    return {"model": model_name, "temperature": TEMPERATURE, "max_tokens": MODEL_MAX_TOKENS, "timeout": timeout}


def _model_name_of(chat_model: Any) -> str | None:
    for attribute in ("model_name", "model", "model_id"):
        value = getattr(chat_model, attribute, None)
        if isinstance(value, str) and value:
            return value
    return None


def prompt_messages(messages: Sequence[dict[str, Any]]) -> list[BaseMessage]:
    """The prompt: the instructions, then the window as a transcript, oldest first.

    A transcript rather than the messages themselves: a window may begin between a tool call and
    its result, which a provider would refuse as a conversation, and the model is asked about the
    conversation rather than to continue it.
    """
    parts = []
    for message in messages:
        text = _cut(message.get("content") or "", PROMPT_MESSAGE_TOKENS)
        calls = [call["name"] for call in tool_calls_of(message.get("metadata") or {}) if call.get("name")]
        if calls:
            text = f"{text} [calls {', '.join(calls)}]".strip()
        parts.append(f"{message['role']}: {text}")
    transcript = "\n\n".join(parts)
    return [
        SystemMessage(content=SYSTEM_PROMPT),
        HumanMessage(content=f"The last {len(messages)} messages of the conversation, oldest first:\n\n{transcript}"),
    ]


def _invoke(chat_model: BaseChatModel, prompt: list[BaseMessage], *, timeout: float) -> str:
    """The model's answer as text, or SummaryModelError when none comes within ``timeout`` seconds."""
    try:
        return cleaned_text(invoke_within(chat_model, prompt, timeout=timeout).text)
    except TimeoutError as error:
        raise SummaryModelError(str(error), reason="timeout") from error


# --- The contract on the answer -------------------------------------------------------------------


def bullets_of(answer: str) -> list[str]:
    """The bullet points of an answer; an answer in prose gives one per sentence, headings (lines
    ending with a colon, such as "Here is the summary:") left out."""
    lines = [line.strip() for line in answer.splitlines() if line.strip()]
    bullets = [match["text"] for line in lines if (match := BULLET.match(line))]
    if not bullets:
        bullets = [sentence for line in lines if not line.endswith(":") for sentence in SENTENCE_END.split(line)]
    return [" ".join(bullet.split()) for bullet in bullets if bullet.strip()]


def hold_to_contract(answer: str) -> str:
    """At most ``MAX_BULLETS`` lines "- ...", fewer than ``TOKEN_LIMIT`` tokens in all.

    Bullets are kept whole while they fit; the first that does not is cut at a word (and marked
    with "…") if enough of it fits, and the ones after it are dropped.
    """
    kept: list[str] = []
    for bullet in bullets_of(answer)[:MAX_BULLETS]:
        line = f"- {bullet}"
        if _fits([*kept, line]):
            kept.append(line)
            continue
        cut = _cut_to_fit(kept, bullet)
        if cut:
            kept.append(cut)
        break
    return "\n".join(kept)


def _fits(lines: list[str]) -> bool:
    return tokens.count("\n".join(lines)) < TOKEN_LIMIT


def _cut_to_fit(kept: list[str], bullet: str) -> str | None:
    room = TOKEN_LIMIT - 1 - tokens.count("\n".join([*kept, "- …"]))
    while room >= (MIN_CUT_TOKENS if kept else 1):
        text = _cut(bullet, room, mark="")
        space = text.rfind(" ")
        if space > len(text) // 2:  # end at a word when one ends near the cut
            text = text[:space]
        line = f"- {text.rstrip(' ,;:')}…"
        if _fits([*kept, line]):
            return line
        room -= 1  # tokens merge differently across the cut: one fewer and try again
    return None


def _cut(text: str, budget: int, *, mark: str = "…") -> str:
    """``text``, or its longest prefix of at most ``budget`` tokens followed by ``mark``."""
    prefix = tokens.truncate(text, budget)
    return text if prefix == text else prefix.rstrip() + mark


# --- The rule-based summary -----------------------------------------------------------------------


def rule_based_summary(messages: Sequence[dict[str, Any]]) -> str:
    """The sentences that carry information, by speaker, within ``RULE_BASED_MAX_TOKENS`` (``summaries.extractive``)."""
    return extractive_summary(messages, max_tokens=RULE_BASED_MAX_TOKENS)


def invoke_within(model: BaseChatModel, prompt: list[BaseMessage], *, timeout: float) -> AIMessage:
    """``model.invoke(prompt)``, or TimeoutError when no answer comes within ``timeout`` seconds.

    The call runs on a daemon thread so that the wait is bounded whatever the client does; the
    model was also given the timeout, which ends an abandoned call on its side. The summarizer's, and
    the chat endpoint's (``chat.services``), which sits above summaries.
    """
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["answer"] = model.invoke(prompt)
        except BaseException as error:  # handed to the waiting thread, which raises it
            outcome["error"] = error

    caller = threading.Thread(target=call, name="model-call", daemon=True)
    caller.start()
    caller.join(timeout)
    if caller.is_alive():
        raise TimeoutError(f"The model gave no answer within {timeout:g} seconds.")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["answer"]


def tenant_model_refusal(value: str) -> str | None:
    """Why a tenant may not choose ``value`` for ``MEMORY_SUMMARY_MODEL`` (None: it may): 'provider:model'
    with a provider of ``PROVIDERS``, never code to import (registered with
    ``tenants.models.setting_check_register``)."""
    provider, _, model = value.partition(":")
    if provider in PROVIDERS and MODEL_NAME.match(model):
        return None
    return (
        f"MEMORY_SUMMARY_MODEL={value!r}: a tenant chooses 'provider:model' with a provider of "
        f"{', '.join(PROVIDERS)}, or '' for the rule-based summary. A model named as code to import "
        "('package.module:factory') is the deployment's own configuration, never a tenant's."
    )

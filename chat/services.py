"""The memory-aware chat loop: store the user's message, build the context, ask the tenant's chat model,
store its answer, update the memory document, answer with both.

Order and what each failure leaves behind:

1. The model is chosen and built first (``tenants.chat_models``), and the context budget is checked: no model
   configured (503 naming ``MEMORY_CHAT_MODEL``), a model that cannot be set up (503) or a system
   prompt and message over the budget (400) store nothing.
2. The user's message is appended like any other (durable when stored: a 201 means durable); its
   ``message_id`` makes the call idempotent: sent again, the message is not stored twice, and if the
   model already answered it, that stored answer comes back without asking the model again.
   Before it is stored, the run is admitted (``chat.runs``): one run per conversation at a time (409
   ``run_active``, or ``chat_in_progress`` for the same ``message_id`` sent again while its answer is
   on the way), at most ``MEMORY_CHAT_MAX_CONCURRENT_PER_TENANT`` per tenant (429
   ``chat_limit_reached``) and a share of the web process's threads (503 ``chat_capacity``); a
   refused message is not stored. The run is released on every way out (answered, replayed,
   failed, timed out, the client gone, an error), and expires by itself if the process dies.
3. The context is ``conversation_context``'s (recent turns in full, older ones summarised, and with
   memory the summaries, the user's facts and the relevant older messages). If the history cannot be
   read, the model gets the system prompt and the message alone, and the answer says so.
4. The model is called within ``MEMORY_CHAT_TIMEOUT``. If it fails or times out, the user's message
   stays stored, nothing else is written, and the answer is 502 ``model_error`` (the server's
   status, never its words), 502 ``egress_refused`` (the tenant's server leads where the egress
   policy refuses to go) or 504 ``model_timeout``; sending the same ``message_id`` again retries.
5. The answer is stored once, complete, as an assistant message whose metadata holds its
   ``execution_time`` and ``user_message_id``, the model and the token usage; then the memory
   document's ``messages`` becomes the buffer the model saw plus its answer (what an agent's
   ``save_memory(agent.memory.dict())`` stores), its other metadata kept and ``metadata.chat`` updated.
   The model's text and usage are cleaned first (``core.storable``: NUL removed, a lone
   UTF-16 surrogate replaced by U+FFFD, a number that cannot be stored by null), each streamed
   piece as it is sent, so what the client is shown is what is stored; the memory document must be
   storable JSON, or it is left as it was (``memory_updated`` false).

Streaming (``chat_stream``) sends the same steps as server-sent events; a client that disconnects
stops the model, and no assistant message is stored, as after a model failure.
"""

import json
import queue
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import structlog
from django.conf import settings
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, messages_from_dict

from chat import runs
from conversations import context, selectors, services, tokens
from conversations.models import Message
from core.exceptions import LimitExceeded, MemoryServiceError
from core.storable import cleaned_json, cleaned_text, storable_json
from memory import context as memory_context
from summaries import summarizer
from tenants import chat_models, egress
from tenants.models import Tenant
from tenants.usage import model_tokens_of, usage_record

logger = structlog.get_logger(__name__)

# Words of a message that asks about what was said or known before (English and Spanish): with
# ``use_memory`` left unset, they bring in the long-term memory (``need_memory``).
RECALL_CUES = re.compile(
    r"\b(?:remember|recall|earlier|before|last time|previous(?:ly)?|again|we (?:discussed|talked|said|agreed)"
    r"|you (?:said|told|mentioned)|i (?:told|said|mentioned)|my (?:name|favou?rite|preference)|what do you know"
    r"|recuerd\w*|antes|la última vez|anterior\w*|dijiste|te dije|mencion\w*|mi nombre|habíamos|hablamos)\b",
    re.IGNORECASE,
)
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


class ModelFailed(MemoryServiceError):
    code = "model_error"
    status = 502


class ModelTimeout(MemoryServiceError):
    code = "model_timeout"
    status = 504


class EgressRefused(MemoryServiceError):
    """The tenant's model server now leads where the egress policy refuses to go (its name resolves
    elsewhere than when it was saved, or the policy changed)."""

    code = "egress_refused"
    status = 502


@dataclass(frozen=True)
class ChatInput:
    content: str
    system_prompt: str | None = None
    model: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    use_memory: bool | None = None
    message_id: str | None = None
    user_id: str = ""
    agent_id: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class Turn:
    """A chat turn up to the model's call: the stored user message and the prompt built for it."""

    tenant: Tenant
    conversation_id: str
    chat: ChatInput
    settings: chat_models.ChatSettings
    model: BaseChatModel
    user_message: dict[str, Any]
    prompt: list[BaseMessage] = field(default_factory=list)
    history: dict[str, Any] = field(default_factory=dict)
    context: dict[str, Any] | None = None
    memory_context: dict[str, Any] | None = None
    need_memory: bool = False
    memory_reason: str = ""
    stored_answer: dict[str, Any] | None = None  # the answer already stored for a resent message
    run: runs.Run | None = None  # what the turn holds while it runs (``chat.runs``)
    started: float = 0.0

    def release(self) -> None:
        """The turn is over (answered, replayed, failed or abandoned): the conversation may run another."""
        if self.run is not None:
            self.run.release()

    def summary(self) -> dict[str, Any]:
        """What the answer says of the turn before the model's part."""
        return {
            "conversation_id": self.conversation_id,
            "user_message": _api_message(self.conversation_id, self.user_message),
            "model": self.settings.spec,
            "history": self.history,
            "need_memory": self.need_memory,
            "memory_reason": self.memory_reason,
            "memory_context": self.memory_context,
            "context": self.context,
        }


def chat_begin(*, tenant: Tenant, conversation_id: str, chat: ChatInput) -> Turn:
    """Steps 1 to 3: choose the model, store the user's message, build the prompt."""
    chosen = chat_models.chat_settings(tenant, model=chat.model, temperature=chat.temperature, max_tokens=chat.max_tokens)
    model = chat_models.chat_model(tenant, chosen)
    context_request = _context_request(tenant, chat)
    try:
        context.build(history=[], request=context_request)
    except context.BudgetTooSmall as error:
        raise LimitExceeded(str(error), details={"field": "content", "size": error.needed, "limit": error.max_tokens}) from error

    run = runs.run_admit(tenant=tenant, conversation_id=conversation_id, message_id=chat.message_id, timeout=chosen.timeout)
    try:
        item: dict[str, Any] = {"role": "user", "content": chat.content, "metadata": chat.metadata}
        if chat.message_id:
            item["id"] = chat.message_id
        appended = services.message_append(
            tenant=tenant, conversation_id=conversation_id, messages=[item], user_id=chat.user_id, agent_id=chat.agent_id
        )
        turn = Turn(
            tenant=tenant,
            conversation_id=conversation_id,
            chat=chat,
            settings=chosen,
            model=model,
            user_message=appended.messages[0],
            run=run,
        )
        if not appended.created:
            turn.stored_answer = _stored_answer(
                tenant=tenant, conversation_id=conversation_id, user_message_id=turn.user_message["id"]
            )
        turn.need_memory, turn.memory_reason = memory_need(chat)
        _build_prompt(turn, context_request)
    except BaseException:
        run.release()
        raise
    return turn


def memory_need(chat: ChatInput) -> tuple[bool, str]:
    """``need_memory`` and ``memory_reason``: asked for, declined, or read from the message."""
    if chat.use_memory is True:
        return True, "use_memory was set: the summaries, the user's facts and the relevant older messages were added."
    if chat.use_memory is False:
        return False, "use_memory was false: the model got the recent turns and the summary of older ones only."
    cue = RECALL_CUES.search(chat.content)
    if cue:
        return True, f"The message refers to what was said or known before ({cue.group(0)!r}): long-term memory was added."
    return False, "The message does not refer to earlier context: the recent turns and the summary of older ones were enough."


def _context_request(tenant: Tenant, chat: ChatInput) -> context.ContextRequest:
    return context.ContextRequest(
        query=chat.content,
        system_prompt=chat.system_prompt or None,
        max_tokens=tenant.setting("MEMORY_MAX_TOKENS"),
        short_term_turns=tenant.setting("MEMORY_SHORT_TERM_TURNS"),
        long_term_turns=tenant.setting("MEMORY_LONG_TERM_TURNS"),
        compression_threshold=tenant.setting("MEMORY_COMPRESSION_THRESHOLD"),
        format="langchain",
    )


def _build_prompt(turn: Turn, request: context.ContextRequest) -> None:
    """The messages for the model from the conversation's context; without history if it cannot be read."""
    try:
        built = memory_context.conversation_context(
            tenant=turn.tenant, conversation_id=turn.conversation_id, request=request, use_memory=turn.need_memory
        )
    except Exception as error:  # the call goes on without the history, and says so
        message = getattr(error, "message", None) or str(error) or type(error).__name__
        logger.warning(
            "chat_history_unavailable",
            tenant=turn.tenant.slug,
            conversation_id=turn.conversation_id,
            error=message,
            exc_info=True,
        )
        turn.prompt = [
            *([SystemMessage(content=request.system_prompt)] if request.system_prompt else []),
            HumanMessage(content=turn.chat.content),
        ]
        turn.history = {
            "used": False,
            "messages": 0,
            "error": f"The conversation's history could not be read ({message}); the model got this message alone.",
        }
        if turn.need_memory:
            turn.memory_reason += " The history could not be read, so none was added."
        return
    turn.prompt = messages_from_dict(built["messages"])
    earlier = [message for message in turn.prompt[:-1] if message.type != "system"]
    turn.history = {"used": True, "messages": len(earlier), "error": None}
    turn.context = {
        key: built[key]
        for key in (
            "source",
            "estimated_tokens",
            "max_tokens",
            "total_turns",
            "turns_in_full",
            "summarized_turns",
            "compressed",
            "session_summary",
        )
    }
    turn.memory_context = built.get("memory")
    if (
        turn.need_memory
        and turn.memory_context is not None
        and not any(turn.memory_context.get(name) for name in ("context", "summaries", "memories"))
    ):
        turn.memory_reason += " Nothing stored matched."


def _stored_answer(*, tenant: Tenant, conversation_id: str, user_message_id: str) -> dict[str, Any] | None:
    """The assistant message already answering this user message, if any (pending ones are in the window)."""
    try:
        window = selectors.conversation_window(
            tenant=tenant, conversation_id=conversation_id, query=selectors.WindowQuery(limit=settings.MEMORY_MAX_PAGE_SIZE)
        )
        for message in reversed(window.messages):
            if message["role"] == "assistant" and (message.get("metadata") or {}).get("user_message_id") == user_message_id:
                return message
        row = (
            Message.objects.for_tenant(tenant)
            .filter(conversation__conversation_id=conversation_id, role="assistant", metadata__user_message_id=user_message_id)
            .order_by("seq")
            .first()
        )
    except Exception as error:  # not knowing means asking the model again, as for a first send
        logger.warning("chat_stored_answer_unavailable", tenant=tenant.slug, conversation_id=conversation_id, error=str(error))
        return None
    return services.message_to_dict(row) if row is not None else None


# --- The model's answer -----------------------------------------------------------------------------


def chat_complete(turn: Turn) -> dict[str, Any]:
    """Steps 4 and 5 in one go: the model's whole answer, stored, with the turn's figures."""
    turn.started = time.perf_counter()
    try:
        if turn.stored_answer is not None:
            return _replayed(turn)
        answer = _invoke(turn)
        return _finish(turn, content=answer.text, usage=answer.usage_metadata, streamed=False)
    finally:
        turn.release()


def _invoke(turn: Turn) -> AIMessage:
    try:
        return summarizer.invoke_within(turn.model, turn.prompt, timeout=turn.settings.timeout)
    except Exception as error:  # a timeout is 504, anything else the model did is 502
        raise _model_error(turn, error) from error


class ModelStream:
    """The model's answer as it streams: a thread reads the model, the request thread takes the chunks
    within the timeout each. ``stop()`` (a client gone) ends the model's stream at its next chunk."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self._chunks: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, name="chat-model-stream", daemon=True)
        turn.started = time.perf_counter()
        self._reader.start()

    def _read(self) -> None:
        try:
            stream = self.turn.model.stream(self.turn.prompt)
            try:
                for chunk in stream:
                    if self._stop.is_set():
                        break
                    self._chunks.put(("chunk", chunk))
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            self._chunks.put(("end", None))
        except BaseException as error:  # handed to the request thread
            self._chunks.put(("error", error))

    def next(self) -> Any:
        """The next chunk, or None at the end of the answer."""
        try:
            kind, value = self._chunks.get(timeout=self.turn.settings.timeout)
        except queue.Empty:
            self.stop()
            raise _timeout(self.turn) from None
        if kind == "error":
            raise _model_error(self.turn, value)
        if self.turn.run is not None:
            self.turn.run.keep()  # a long answer keeps its run
        return value if kind == "chunk" else None

    def stop(self) -> None:
        self._stop.set()


def chat_stream(turn: Turn) -> Iterator[bytes]:
    """The turn as server-sent events: ``start`` (the stored user message, the context used), one
    ``token`` per piece of the answer, then ``done`` (the stored answer and the whole result) or
    ``error``. The model's first piece is awaited before this returns, so that a model that fails
    at once is an ordinary 502 or 504 answer rather than a stream that ends in an error.

    The events come as a ``TurnEvents``, whose ``close()`` (the server calls it when the response
    ends, even if no event was ever asked for) stops the model and releases the run."""
    if turn.stored_answer is not None:
        try:
            answer = _replayed(turn)
        finally:
            turn.release()
        return iter(
            [
                _event("start", turn.summary()),
                _event("token", {"text": answer["assistant_message"]["content"]}),
                _event("done", answer),
            ]
        )
    stream = ModelStream(turn)
    try:
        first = stream.next()
    except BaseException:
        stream.stop()
        turn.release()
        raise
    return TurnEvents(turn, stream, _events(turn, stream, first))


class TurnEvents:
    """A streamed turn's events. A generator's ``finally`` runs only if the generator was started: a
    client gone before the first event would leave the model streaming and the run held until it
    expires. ``close()`` ends both whatever happened."""

    def __init__(self, turn: Turn, stream: "ModelStream", events: Iterator[bytes]) -> None:
        self.turn, self.stream, self.events = turn, stream, events

    def __iter__(self) -> "TurnEvents":
        return self

    def __next__(self) -> bytes:
        return next(self.events)

    def close(self) -> None:
        try:
            close = getattr(self.events, "close", None)
            if close is not None:
                close()
        finally:
            self.stream.stop()
            self.turn.release()


def _events(turn: Turn, stream: ModelStream, chunk: Any) -> Iterator[bytes]:
    from conversations.api.errors import error_body

    try:
        yield _event("start", turn.summary())
        parts: list[str] = []
        whole = None
        try:
            while chunk is not None:
                text = cleaned_text(chunk.text)  # as it will be stored: the pieces add up to the answer
                if text:
                    parts.append(text)
                    yield _event("token", {"text": text})
                whole = chunk if whole is None else whole + chunk
                chunk = stream.next()
        except GeneratorExit:
            logger.info(
                "chat_stream_abandoned",
                tenant=turn.tenant.slug,
                conversation_id=turn.conversation_id,
                received_chars=sum(map(len, parts)),
            )
            raise
        finally:
            stream.stop()
        answer = _finish(turn, content="".join(parts), usage=getattr(whole, "usage_metadata", None), streamed=True)
        yield _event("done", answer)
    except MemoryServiceError as error:  # the model failed on the way, or the answer could not be stored
        yield _event("error", error_body(error.code, error.message, error.details))
    finally:
        turn.release()


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False, default=str)}\n\n".encode()


def _timeout(turn: Turn) -> ModelTimeout:
    logger.warning("chat_model_timeout", tenant=turn.tenant.slug, conversation_id=turn.conversation_id, model=turn.settings.spec)
    return ModelTimeout(
        f"The model {turn.settings.spec} gave no answer within MEMORY_CHAT_TIMEOUT={turn.settings.timeout:g} seconds; "
        "your message is stored. Send it again with the same message_id to retry.",
        details={"model": turn.settings.spec, "timeout": turn.settings.timeout, "user_message_id": turn.user_message["id"]},
    )


def _model_error(turn: Turn, error: BaseException) -> MemoryServiceError:
    """What the client is told of a failed model call: the status and a stable code. The upstream's
    own words (its error body, which a tenant's server writes) go to the log only, never into an answer."""
    refused = _egress_refusal(error)
    if refused is not None:
        logger.warning(
            "chat_model_egress_refused", tenant=turn.tenant.slug, conversation_id=turn.conversation_id, error=str(refused)
        )
        return EgressRefused(
            f"{refused} Your message is stored; send it again with the same message_id once the URL is fixed.",
            details={"model": turn.settings.spec, "field": "MEMORY_CHAT_BASE_URL", "user_message_id": turn.user_message["id"]},
        )
    if isinstance(error, TimeoutError) or "timeout" in type(error).__name__.lower():
        return _timeout(turn)
    status = getattr(error, "status_code", None)
    logger.warning(
        "chat_model_failed",
        tenant=turn.tenant.slug,
        conversation_id=turn.conversation_id,
        model=turn.settings.spec,
        error_type=type(error).__name__,
        error=str(error)[:500],
        provider_status=status,
    )
    answered = f"answered HTTP {status}" if isinstance(status, int) else f"could not be reached ({type(error).__name__})"
    return ModelFailed(
        f"The model {turn.settings.spec} failed: its server {answered}. "
        "Your message is stored; send it again with the same message_id to retry.",
        details={
            "model": turn.settings.spec,
            "error_type": type(error).__name__,
            "provider_status": status,
            "user_message_id": turn.user_message["id"],
        },
    )


def _egress_refusal(error: BaseException | None) -> egress.EgressRefused | None:
    seen = 0
    while error is not None and seen < 10:  # the HTTP client may wrap the transport's refusal
        if isinstance(error, egress.EgressRefused):
            return error
        error, seen = error.__cause__ or error.__context__, seen + 1
    return None


# --- Storing the answer -------------------------------------------------------------------------------


def _finish(turn: Turn, *, content: str, usage: dict[str, Any] | None, streamed: bool) -> dict[str, Any]:
    execution_time = round(time.perf_counter() - turn.started, 3)
    content, usage = cleaned_text(content), cleaned_json(usage)  # the model's output, made storable
    limit = settings.MEMORY_MAX_CONTENT_CHARS
    metadata: dict[str, Any] = {
        "execution_time": execution_time,
        "model": turn.settings.spec,
        "user_message_id": turn.user_message["id"],
        "usage": _usage(turn, content, usage),
        "streamed": streamed,
    }
    if len(content) > limit:
        content, metadata["truncated_at"] = content[:limit], limit
    stored = services.message_append(
        tenant=turn.tenant,
        conversation_id=turn.conversation_id,
        messages=[{"role": "assistant", "content": content, "metadata": metadata}],
        user_id=turn.chat.user_id,
        agent_id=turn.chat.agent_id,
    ).messages[0]
    memory_updated = _update_memory(turn, stored)
    usage_record(tenant=turn.tenant, chat_runs=1, model_tokens=model_tokens_of(metadata["usage"]))
    logger.info(
        "chat_answered",
        tenant=turn.tenant.slug,
        conversation_id=turn.conversation_id,
        model=turn.settings.spec,
        execution_time=execution_time,
        output_tokens=metadata["usage"].get("output_tokens"),
        streamed=streamed,
        history_used=turn.history.get("used"),
    )
    return turn.summary() | {
        "assistant_message": _api_message(turn.conversation_id, stored),
        "usage": metadata["usage"],
        "execution_time": execution_time,
        "memory_updated": memory_updated,
        "replayed": False,
    }


def _usage(turn: Turn, content: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    """The provider's token counts, or cl100k_base estimates (marked) when it gave none."""
    if usage and usage.get("output_tokens") is not None:
        return {name: usage.get(name) for name in ("input_tokens", "output_tokens", "total_tokens")}
    prompt_tokens = (turn.context or {}).get("estimated_tokens") or sum(tokens.count(message.text) for message in turn.prompt)
    output_tokens = tokens.count(content)
    return {
        "input_tokens": prompt_tokens,
        "output_tokens": output_tokens,
        "total_tokens": prompt_tokens + output_tokens,
        "estimated": True,
    }


def _update_memory(turn: Turn, answer: dict[str, Any]) -> bool:
    """The memory document's buffer becomes what the model saw and its answer."""
    buffer = [
        {"role": ROLES.get(message.type, message.type), "content": message.text}
        for message in turn.prompt
        if message.type != "system"
    ]
    buffer.append({"role": "assistant", "content": answer["content"]})
    buffer = buffer[-turn.tenant.setting("MEMORY_HISTORY_LIMIT") :]
    try:
        try:
            current = selectors.memory_get(tenant=turn.tenant, conversation_id=turn.conversation_id)
        except MemoryServiceError:
            current = {}
        metadata = dict(current.get("metadata") or {})
        metadata["chat"] = {
            "model": turn.settings.spec,
            "last_user_message_id": turn.user_message["id"],
            "last_assistant_message_id": answer["id"],
            "last_seq": answer["seq"],
        }
        document = storable_json({"messages": buffer, "metadata": metadata}, field="memory")
        services.memory_save(
            tenant=turn.tenant,
            conversation_id=turn.conversation_id,
            document=document,
            user_id=turn.chat.user_id,
            agent_id=turn.chat.agent_id,
        )
    except Exception as error:  # the messages are stored; the document catches up on the next turn
        logger.warning(
            "chat_memory_update_failed", tenant=turn.tenant.slug, conversation_id=turn.conversation_id, error=str(error)
        )
        return False
    return True


def _replayed(turn: Turn) -> dict[str, Any]:
    stored = turn.stored_answer or {}
    metadata = stored.get("metadata") or {}
    return turn.summary() | {
        "assistant_message": _api_message(turn.conversation_id, stored),
        "usage": metadata.get("usage"),
        "execution_time": metadata.get("execution_time"),
        "memory_updated": False,
        "replayed": True,
    }


def _api_message(conversation_id: str, message: dict[str, Any]) -> dict[str, Any]:
    return message | {"conversation_id": conversation_id}

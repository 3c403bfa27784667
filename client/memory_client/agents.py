"""Memory for LangChain 1.x agents (``langchain.agents.create_agent``), kept in the memory service.

:class:`ServiceMemoryMiddleware` is agent middleware: the service holds the conversation, and every
model call of the agent receives the service's budgeted context instead of the agent's whole state.

Contract:

* **Conversation.** The middleware's ``conversation_id`` when given, else the run's
  ``configurable.thread_id`` (the key LangGraph checkpointers use). Neither is
  :class:`ConversationIdMissing`, raised before anything is stored or sent to the model.
* **The current turn** is the last human message of the state and everything after it (the AI
  messages and tool results of the tool loop so far); with no human message, the whole state.
  Earlier turns are the service's business: with a checkpointer they are in the state too, and
  they are neither stored again nor sent to the model from there.
* **Storing.** Before each model call, after it, and when the agent ends (a ``return_direct``
  tool's result comes after the last model call), every message of the current turn the service
  does not have yet is appended, in order, converted by :func:`memory_client.messages.to_service`
  (chunks first become whole messages). Each message's service id is derived from the
  conversation and its LangChain id (a UUID5), which the agent's state always sets; a tool result,
  which the state would give a random id, gets one derived from its turn's human message id and
  the tool call it answers. A re-run from a checkpoint, a retried node, or a run resent with the
  same message ids (and a model answering with the same ids) sends the same id with the same
  content, which the service stores once. The ids already stored in this turn are kept in the private
  state key ``memory_stored_ids``, so a message is not sent again on every call.
* **What the model receives.** The service's context for ``query`` = the text of the current
  turn's human message, ``system_prompt`` = the middleware's ``system_prompt`` when given, else
  the agent's: its system message (the prompt, the summary of the older turns that did not fit,
  and with ``use_memory`` the user's facts and relevant older messages) replaces the agent's, its
  history replaces the state's earlier turns, and the current turn follows **as the state holds
  it** (the human message with its id and content blocks, each tool call next to its results).
  The service answers the query as its last message, and on a later call of a tool loop also has
  the current turn's stored messages in its history: both are dropped from its answer (the
  history by message id), so no message reaches the model twice and tool calls stay paired with
  their results. The service's budget counts the current turn while it is stored, so a long tool
  loop makes older turns give way to the summary; a current turn larger than the whole budget is
  still sent in full.
* **Owners.** ``user_id`` and ``agent_id`` are the owners of a conversation created by the first
  append (the facts of ``use_memory`` are that user's).

Sync hooks use :class:`MemoryClient`'s blocking calls and async hooks its ``a``-prefixed ones, so
``invoke``/``stream`` and ``ainvoke``/``astream`` both work. Needs langchain 1.x and httpx (no
Django).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Final

from langchain.agents.middleware import AgentMiddleware, AgentState, ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse, PrivateStateAttr
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_chunk_to_message,
    messages_from_dict,
)
from langgraph.config import get_config
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.runtime import Runtime
from langgraph.types import Command
from typing_extensions import NotRequired  # noqa: UP035 (typing has it from Python 3.11; the client supports 3.10)

from memory_client.http import MemoryClient
from memory_client.messages import to_service

# Service ids of agent messages: uuid5(this namespace, "<conversation id>\n<LangChain message id>").
MESSAGE_ID_NAMESPACE: Final = uuid.UUID("2f6f1a52-3b8e-5c1e-9a43-7d0c5e8b6a10")


class ConversationIdMissing(ValueError):
    """The run names no conversation: no ``configurable.thread_id`` and no fixed ``conversation_id``."""

    def __init__(self) -> None:
        super().__init__(
            "ServiceMemoryMiddleware needs a conversation: invoke the agent with "
            'config={"configurable": {"thread_id": "<conversation id>"}}, or give the middleware conversation_id=.'
        )


class ServiceMemoryState(AgentState[Any]):
    """The agent's state, plus the service ids of the current turn's messages already stored."""

    memory_stored_ids: NotRequired[Annotated[list[str], PrivateStateAttr]]


def current_turn(messages: Sequence[BaseMessage]) -> list[BaseMessage]:
    """The last human message and every message after it (all of them when there is none)."""
    for index in range(len(messages) - 1, -1, -1):
        if isinstance(messages[index], HumanMessage):
            return list(messages[index:])
    return list(messages)


def service_message_id(conversation_id: str, message: BaseMessage, *, turn: Sequence[BaseMessage], index: int) -> str:
    """The message's id in the service: the same for the same conversation and LangChain id. A message
    without a LangChain id (the agent's state gives every message one) is keyed by its place in the
    turn and the turn's first message instead."""
    key = message.id
    if not key:
        first = turn[0]
        anchor = first.id or hashlib.sha256(f"{first.type}\n{first.text}".encode()).hexdigest()
        key = f"{anchor}#{index}"
    return str(uuid.uuid5(MESSAGE_ID_NAMESPACE, f"{conversation_id}\n{key}"))


def _whole(message: BaseMessage) -> BaseMessage:
    return message_chunk_to_message(message) if isinstance(message, BaseMessageChunk) else message


class ServiceMemoryMiddleware(AgentMiddleware[ServiceMemoryState, Any, Any]):
    """Stores the agent's turns in the memory service and gives its model the service's context."""

    state_schema = ServiceMemoryState

    def __init__(
        self,
        client: MemoryClient,
        *,
        conversation_id: str | None = None,
        max_tokens: int | None = None,
        use_memory: bool = False,
        top_k: int | None = None,
        user_id: str = "",
        agent_id: str = "",
        system_prompt: str | None = None,
        short_term_turns: int | None = None,
        long_term_turns: int | None = None,
    ) -> None:
        """``max_tokens``, ``short_term_turns``, ``long_term_turns`` and ``top_k`` default to the
        tenant's settings on the service; ``system_prompt`` replaces the agent's own when given."""
        super().__init__()
        self.client = client
        self.conversation_id = conversation_id
        self.max_tokens = max_tokens
        self.use_memory = use_memory
        self.top_k = top_k
        self.user_id = user_id
        self.agent_id = agent_id
        self.system_prompt = system_prompt
        self.short_term_turns = short_term_turns
        self.long_term_turns = long_term_turns

    def __repr__(self) -> str:
        return f"ServiceMemoryMiddleware(client={self.client!r}, conversation_id={self.conversation_id!r})"

    # --- storing the turn -----------------------------------------------------------------------

    def before_model(self, state: ServiceMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._store(state)

    async def abefore_model(self, state: ServiceMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await self._astore(state)

    def after_model(self, state: ServiceMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._store(state)

    async def aafter_model(self, state: ServiceMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await self._astore(state)

    def after_agent(self, state: ServiceMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return self._store(state)

    async def aafter_agent(self, state: ServiceMemoryState, runtime: Runtime[Any]) -> dict[str, Any] | None:
        return await self._astore(state)

    def _store(self, state: ServiceMemoryState) -> dict[str, Any] | None:
        conversation_id = self.conversation_of_run()
        pending, stored_ids = self._pending(conversation_id, state)
        if not pending:
            return None
        self.client.append(conversation_id, pending, user_id=self.user_id, agent_id=self.agent_id)
        return {"memory_stored_ids": stored_ids}

    async def _astore(self, state: ServiceMemoryState) -> dict[str, Any] | None:
        conversation_id = self.conversation_of_run()
        pending, stored_ids = self._pending(conversation_id, state)
        if not pending:
            return None
        await self.client.aappend(conversation_id, pending, user_id=self.user_id, agent_id=self.agent_id)
        return {"memory_stored_ids": stored_ids}

    @staticmethod
    def _pending(conversation_id: str, state: ServiceMemoryState) -> tuple[list[dict[str, Any]], list[str]]:
        """(the current turn's messages not stored yet, as appends; the service ids of the whole turn)."""
        turn = current_turn(state["messages"])
        ids = [service_message_id(conversation_id, message, turn=turn, index=index) for index, message in enumerate(turn)]
        stored = set(state.get("memory_stored_ids") or ())
        pending = [
            {**to_service(_whole(message)), "id": message_id}
            for message, message_id in zip(turn, ids, strict=True)
            if message_id not in stored
        ]
        return pending, ids

    # --- stable ids for tool results -----------------------------------------------------------

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolMessage | Command[Any]]
    ) -> ToolMessage | Command[Any]:
        return self._identified(request, handler(request))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]]
    ) -> ToolMessage | Command[Any]:
        return self._identified(request, await handler(request))

    def _identified(self, request: ToolCallRequest, result: ToolMessage | Command[Any]) -> ToolMessage | Command[Any]:
        """The tool's result with a LangChain id derived from the turn and the call it answers (the
        state would give it a random one), so that a run repeated from its question stores it once."""
        if not isinstance(result, ToolMessage) or result.id:
            return result
        state = request.state if isinstance(request.state, dict) else {}
        turn = current_turn(state.get("messages") or [])
        anchor = turn[0].id if turn and turn[0].id else ""
        key = f"{self.conversation_of_run()}\n{anchor}\ntool-result\n{result.tool_call_id}"
        return result.model_copy(update={"id": str(uuid.uuid5(MESSAGE_ID_NAMESPACE, key))})

    # --- the model's input ----------------------------------------------------------------------

    def wrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], ModelResponse[Any]]
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        conversation_id = self.conversation_of_run()
        turn = current_turn(request.messages)
        context = self.client.context(conversation_id, **self._context_params(request, turn))
        return handler(self._with_context(request, context, turn))

    async def awrap_model_call(
        self, request: ModelRequest[Any], handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
    ) -> ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]:
        conversation_id = self.conversation_of_run()
        turn = current_turn(request.messages)
        context = await self.client.acontext(conversation_id, **self._context_params(request, turn))
        return await handler(self._with_context(request, context, turn))

    def _context_params(self, request: ModelRequest[Any], turn: Sequence[BaseMessage]) -> dict[str, Any]:
        params: dict[str, Any] = {"format": "langchain", "use_memory": self.use_memory}
        system_prompt = self.system_prompt if self.system_prompt is not None else request.system_prompt
        if system_prompt:
            params["system_prompt"] = system_prompt
        if turn and isinstance(turn[0], HumanMessage):
            params["query"] = turn[0].text
        optional = {
            "max_tokens": self.max_tokens,
            "short_term_turns": self.short_term_turns,
            "long_term_turns": self.long_term_turns,
            "top_k": self.top_k if self.use_memory else None,
        }
        params.update({name: value for name, value in optional.items() if value is not None})
        return params

    @staticmethod
    def _with_context(request: ModelRequest[Any], context: dict[str, Any], turn: Sequence[BaseMessage]) -> ModelRequest[Any]:
        """The request with the service's system message and history, then the current turn."""
        messages = messages_from_dict(context["messages"])
        system_message = None
        if messages and isinstance(messages[0], SystemMessage):
            system_message, messages = messages[0], messages[1:]
        if turn and isinstance(turn[0], HumanMessage) and messages:
            messages = messages[:-1]  # the query: the turn's own human message takes its place
        in_flight = {message.id for message in turn if message.id}
        history = [message for message in messages if message.id is None or message.id not in in_flight]
        return request.override(system_message=system_message, messages=[*history, *turn])

    # --- the conversation -----------------------------------------------------------------------

    def conversation_of_run(self) -> str:
        """The fixed conversation id, else the running graph's ``configurable.thread_id``."""
        if self.conversation_id:
            return self.conversation_id
        try:
            configurable = get_config().get("configurable") or {}
        except RuntimeError:  # called outside a running graph
            configurable = {}
        thread_id = configurable.get("thread_id")
        if thread_id in (None, ""):
            raise ConversationIdMissing
        return str(thread_id)

"""LangChain chat history kept in the memory service.

:class:`ServiceChatMessageHistory` is a ``BaseChatMessageHistory`` for one conversation, usable with
``RunnableWithMessageHistory``:

* ``messages`` / ``aget_messages()`` read the conversation's window as LangChain messages, oldest
  first: the newest ``window`` messages (the service's ``MEMORY_MAX_TURNS_PROMPT`` when ``None``),
  starting at a turn rather than with a tool result or an answer cut from its question (inside a
  turn longer than the window, an agent's tool loop, at an assistant message), tool calls and
  results paired (a result without its call left out, a call without a result given a placeholder).
  An unknown conversation has no messages.
* With ``max_tokens``, they read the service's **context** instead: the history within that token
  budget, older turns summarised into a system message (headed by ``system_prompt`` when given),
  recent turns in full. ``context_params`` adds the context endpoint's other parameters
  (``short_term_turns``, ``long_term_turns``, ``compression_threshold``, ``use_memory``...). Use it
  with ``RunnableWithMessageHistory(..., history_messages_key=...)``: the messages read are then not
  a prefix of the stored ones.
* ``add_messages`` / ``aadd_messages`` store the messages in one append (split only past the
  service's batch limit), converted by :func:`memory_client.messages.to_service`, so that reading
  them back gives messages equal to the ones added: content blocks (images, long text blocks) and a
  tool message's ``artifact`` included, a streamed chunk (``AIMessageChunk``) as the message it adds
  up to. Each message gets its service id on the client before the first attempt, which makes the
  append safe to retry.
* ``clear`` / ``aclear`` remove the conversation's messages (its memory and checkpoints stay).

``RunnableWithMessageHistory`` stores the turn in a listener whose errors LangChain only logs: a
refused append (an id the service refuses, the service down) leaves ``invoke``/``stream`` ending
normally with nothing stored. :func:`raise_history_errors` makes such an error raise from the call.

Needs langchain-core and httpx only (no Django).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, messages_from_dict
from langchain_core.tracers.root_listeners import AsyncRootListenersTracer, RootListenersTracer

from memory_client.http import MemoryClient, NotFound
from memory_client.messages import to_service


class ServiceChatMessageHistory(BaseChatMessageHistory):
    """The messages of one conversation of the memory service."""

    def __init__(
        self,
        conversation_id: str,
        *,
        client: MemoryClient | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        window: int | None = None,
        max_tokens: int | None = None,
        system_prompt: str | None = None,
        context_params: dict[str, Any] | None = None,
        user_id: str = "",
        agent_id: str = "",
    ) -> None:
        super().__init__()
        if not conversation_id:
            raise ValueError("A conversation id is required.")
        if client is None:
            if not base_url or not api_key:
                raise ValueError("Pass a MemoryClient, or base_url and api_key to make one.")
            client = MemoryClient(base_url, api_key)
        self.conversation_id = conversation_id
        self.client = client
        if max_tokens is None and (system_prompt is not None or context_params):
            raise ValueError("system_prompt and context_params shape the budgeted context: pass max_tokens too.")
        self.window = window
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self.context_params = dict(context_params or {})
        self.user_id = user_id
        self.agent_id = agent_id

    def __repr__(self) -> str:
        if self.max_tokens is not None:
            return f"ServiceChatMessageHistory({self.conversation_id!r}, client={self.client!r}, max_tokens={self.max_tokens!r})"
        return f"ServiceChatMessageHistory({self.conversation_id!r}, client={self.client!r}, window={self.window!r})"

    def _context_body(self) -> dict[str, Any]:
        body: dict[str, Any] = {**self.context_params, "max_tokens": self.max_tokens, "format": "langchain"}
        if self.system_prompt is not None:
            body["system_prompt"] = self.system_prompt
        return body

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        if self.max_tokens is not None:
            try:
                return messages_from_dict(self.client.context(self.conversation_id, **self._context_body())["messages"])
            except NotFound:  # an unknown conversation has no messages, as its window has none
                return []
        return messages_from_dict(self.client.window(self.conversation_id, limit=self.window, format="langchain"))

    async def aget_messages(self) -> list[BaseMessage]:
        if self.max_tokens is not None:
            try:
                answer = await self.client.acontext(self.conversation_id, **self._context_body())
            except NotFound:
                return []
            return messages_from_dict(answer["messages"])
        return messages_from_dict(await self.client.awindow(self.conversation_id, limit=self.window, format="langchain"))

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            self.client.append(
                self.conversation_id, [to_service(message) for message in messages], user_id=self.user_id, agent_id=self.agent_id
            )

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if messages:
            await self.client.aappend(
                self.conversation_id, [to_service(message) for message in messages], user_id=self.user_id, agent_id=self.agent_id
            )

    def clear(self) -> None:
        self.client.clear(self.conversation_id)

    async def aclear(self) -> None:
        await self.client.aclear(self.conversation_id)


def raise_history_errors(enabled: bool = True) -> None:
    """Make an error storing a turn inside ``RunnableWithMessageHistory`` raise from ``invoke``,
    ``stream``, ``ainvoke`` and ``astream`` instead of only being logged.

    LangChain runs the history's ``add_messages`` in a listener (``RootListenersTracer``) and offers
    no per-chain switch, so this sets its ``raise_error`` for the whole process: an error in any other
    ``with_listeners`` callback raises too. ``raise_history_errors(False)`` restores LangChain's default.
    """
    RootListenersTracer.raise_error = enabled
    AsyncRootListenersTracer.raise_error = enabled

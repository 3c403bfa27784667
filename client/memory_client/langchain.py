"""LangChain chat history kept in the memory service.

:class:`ServiceChatMessageHistory` is a ``BaseChatMessageHistory`` for one conversation, usable with
``RunnableWithMessageHistory``:

* ``messages`` / ``aget_messages()`` read the conversation's window as LangChain messages, oldest
  first: the newest ``window`` messages (the service's ``MEMORY_MAX_TURNS_PROMPT`` when ``None``),
  starting at a turn rather than with a tool result or an answer cut from its question. An unknown
  conversation has no messages.
* ``add_messages`` / ``aadd_messages`` store the messages in one append (split only past the
  service's batch limit), converted by :func:`memory_client.messages.to_service`, so that reading
  them back gives messages equal to the ones added. Each message gets its service id on the client
  before the first attempt, which makes the append safe to retry.
* ``clear`` / ``aclear`` remove the conversation's messages (its memory and checkpoints stay).

Needs langchain-core and httpx only (no Django).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage, messages_from_dict

from memory_client.http import MemoryClient
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
        self.window = window
        self.user_id = user_id
        self.agent_id = agent_id

    def __repr__(self) -> str:
        return f"ServiceChatMessageHistory({self.conversation_id!r}, client={self.client!r}, window={self.window!r})"

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        return messages_from_dict(self.client.window(self.conversation_id, limit=self.window, format="langchain"))

    async def aget_messages(self) -> list[BaseMessage]:
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

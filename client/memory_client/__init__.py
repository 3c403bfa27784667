"""Client of the conversation memory service, for agents: no Django needed.

* :mod:`memory_client.http`: :class:`MemoryClient`, the REST API (messages, window, context,
  the chat loop, checkpoints), sync and async, with bounded retries; :class:`MemoryServiceError` and
  :class:`NotFound` for the service's errors.
* :mod:`memory_client.messages`: how LangChain messages are stored and read back without loss.
* :mod:`memory_client.langchain`: ``ServiceChatMessageHistory`` for ``RunnableWithMessageHistory``.
* :mod:`memory_client.langgraph`: ``ServiceCheckpointSaver``, a LangGraph checkpointer.
* :mod:`memory_client.store`: ``ServiceStore``, LangGraph's long-term memory store (``BaseStore``).

Importing this package loads httpx only; the LangChain and LangGraph modules load their libraries.
"""

from memory_client.http import MemoryClient, MemoryServiceError, NotFound

__all__ = ["MemoryClient", "MemoryServiceError", "NotFound"]

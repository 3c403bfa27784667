"""Client of the conversation memory service, for agents: no Django needed.

* :mod:`memory_client.http`: :class:`MemoryClient`, the whole REST API sync and async
  (conversations, messages, window, context, the memory document, search, summaries, extracted
  memories, facts, users, the chat loop, checkpoints, status) with bounded retries that are safe to repeat;
  :class:`MemoryServiceError` and its subclasses by status for the service's errors, each carrying
  the API's error ``code``.
* :mod:`memory_client.messages`: how LangChain messages are stored and read back without loss.
* :mod:`memory_client.langchain`: ``ServiceChatMessageHistory`` for ``RunnableWithMessageHistory``.
* :mod:`memory_client.langgraph`: ``ServiceCheckpointSaver``, a LangGraph checkpointer.
* :mod:`memory_client.agents`: ``ServiceMemoryMiddleware``, memory for ``create_agent`` agents.
* :mod:`memory_client.store`: ``ServiceStore``, LangGraph's long-term memory store (``BaseStore``).

Importing this package loads httpx only; the LangChain and LangGraph modules load their libraries.
"""

from importlib.metadata import PackageNotFoundError, version

from memory_client.http import (
    BadRequest,
    Conflict,
    Forbidden,
    MemoryClient,
    MemoryServiceError,
    NotFound,
    PayloadTooLarge,
    RateLimited,
    ServiceUnavailable,
    Unauthorized,
    Unreachable,
    check_conversation_id,
)

try:
    __version__ = version("memory-client")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = [
    "BadRequest",
    "Conflict",
    "Forbidden",
    "MemoryClient",
    "MemoryServiceError",
    "NotFound",
    "PayloadTooLarge",
    "RateLimited",
    "ServiceUnavailable",
    "Unauthorized",
    "Unreachable",
    "__version__",
    "check_conversation_id",
]

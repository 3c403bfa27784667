"""How LangChain messages are stored in the service, and read back, without loss: the wire format
the service and this client share, from the ``memory-wire`` package (``memory_wire.messages``, whose
docstring describes it). Kept here under its earlier name for code that imports it from the client."""

from memory_wire.messages import (
    ARTIFACT_KEY,
    CHAT_ROLES,
    CONTENT_PARTS_KEY,
    RESERVED_METADATA_KEYS,
    ROLE_OF_TYPE,
    TYPE_OF_ROLE,
    content_of,
    from_service,
    to_service,
    tool_call_ids,
    tool_calls_of,
)

__all__ = [
    "ARTIFACT_KEY",
    "CHAT_ROLES",
    "CONTENT_PARTS_KEY",
    "RESERVED_METADATA_KEYS",
    "ROLE_OF_TYPE",
    "TYPE_OF_ROLE",
    "content_of",
    "from_service",
    "to_service",
    "tool_call_ids",
    "tool_calls_of",
]

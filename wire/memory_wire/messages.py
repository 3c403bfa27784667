"""How LangChain messages are stored in the service, and read back, without loss.

A message sent to the service has ``role``, ``content`` (a string, or a list of content parts such
as ``{"type": "text", "text": ...}`` or ``{"type": "image_url", ...}``) and ``metadata`` (JSON). The
service itself reads these metadata keys, in the shape OpenAI and LangChain share:

* ``tool_calls`` on an assistant message: ``[{"id", "name", "args", "type": "tool_call"}]``
  (the OpenAI shape ``{"id", "type": "function", "function": {"name", "arguments"}}`` is read too);
* ``tool_call_id`` on a tool message: the call it answers;
* ``artifact`` (``ARTIFACT_KEY``): a tool result's structured output (LangChain's
  ``ToolMessage.artifact``), bounded by its own limit, not by the metadata one.

The service keeps list content as its text plus the parts under ``CONTENT_PARTS_KEY`` and answers
``content`` as it was sent; ``from_service`` reads both shapes.

Everything else a LangChain message carries (``additional_kwargs``, ``response_metadata``, ``name``,
``id``, ``usage_metadata``, ``status``...) is kept under ``metadata["langchain"]``, minus what the
fields above already hold and minus fields at their defaults, so that ``from_service(to_service(m))
== m`` for every message type. A chunk (``AIMessageChunk``..., what streaming gives) is stored as the
message it adds up to, and read back as that message.

This module needs langchain-core only (no Django): the service and its clients both import it, and
neither depends on the other.
"""

import json
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    BaseMessageChunk,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_chunk_to_message,
    message_to_dict,
    messages_from_dict,
)

# Reserved metadata keys: the content parts of a message sent with list content (the service adds
# it, and answers the parts as ``content``), and a tool result's structured output.
CONTENT_PARTS_KEY = "content_parts"
ARTIFACT_KEY = "artifact"
RESERVED_METADATA_KEYS = (CONTENT_PARTS_KEY, ARTIFACT_KEY)

ROLE_OF_TYPE = {"human": "user", "ai": "assistant", "system": "system", "tool": "tool"}
TYPE_OF_ROLE = {role: type_ for type_, role in ROLE_OF_TYPE.items()}
CHAT_ROLES = {"user": "user", "human": "user", "assistant": "assistant", "ai": "assistant", "system": "system", "tool": "tool"}


def to_service(message: BaseMessage) -> dict[str, Any]:
    """A LangChain message as the body of an append: ``role``, ``content`` (text, or the list of
    content blocks) and ``metadata``. A chunk is stored as the message it adds up to."""
    if isinstance(message, BaseMessageChunk):
        message = message_chunk_to_message(message)
    serialised = message_to_dict(message)
    type_, data = serialised["type"], dict(serialised["data"])
    if type_ == "chat":  # a ChatMessage with a free-form role: store it under the role it names
        role = CHAT_ROLES.get(str(data.get("role", "")).lower())
        if role is None:
            raise ValueError(
                f"A ChatMessage with role {data.get('role')!r} cannot be stored; roles are user, assistant, system, tool."
            )
    elif type_ in ROLE_OF_TYPE:
        role = ROLE_OF_TYPE[type_]
    else:
        raise ValueError(
            f"{type(message).__name__} (type {type_!r}) cannot be stored; send human, ai, system, tool or chat messages."
        )
    metadata: dict[str, Any] = {}
    if data.get("tool_calls"):
        metadata["tool_calls"] = data.pop("tool_calls")
    if type_ == "tool":
        metadata["tool_call_id"] = data.pop("tool_call_id")
        if data.get("status") == "success":
            data.pop("status")
    content = data.pop("content")
    if isinstance(content, list) and not all(_is_part(item) for item in content):
        # LangChain also allows bare strings in the list; the service's parts are objects with a
        # type, so such content is stored as its text, the list kept with LangChain's fields.
        data["content"], content = content, message.text
    if "artifact" in data:
        metadata[ARTIFACT_KEY] = data.pop("artifact")
    data.pop("type", None)
    kept = {name: value for name, value in data.items() if value not in (None, {}, [])}
    metadata["langchain"] = {"type": type_, "data": kept}
    return {"role": role, "content": content, "metadata": metadata}


def from_service(message: dict[str, Any]) -> BaseMessage:
    """A stored message (as the API answers it, or as the service keeps it) as the LangChain message
    it was, or would be."""
    metadata = message.get("metadata") or {}
    content = content_of(message)
    stored = metadata.get("langchain")
    if isinstance(stored, dict) and stored.get("type"):
        data = dict(stored.get("data") or {})
        data.setdefault("content", content)  # messages stored before parts were content kept them here
        if stored["type"] == "ai" and metadata.get("tool_calls"):
            data["tool_calls"] = tool_calls_of(metadata)
        if stored["type"] == "tool":
            data["tool_call_id"] = metadata.get("tool_call_id", "")
            if ARTIFACT_KEY in metadata:
                data["artifact"] = metadata[ARTIFACT_KEY]
        return messages_from_dict([{"type": stored["type"], "data": data}])[0]
    role, message_id = message["role"], message.get("id")
    if role == "user":
        return HumanMessage(content=content, id=message_id)
    if role == "assistant":
        return AIMessage(content=content, id=message_id, tool_calls=tool_calls_of(metadata))
    if role == "tool":
        tool_message = ToolMessage(content=content, id=message_id, tool_call_id=str(metadata.get("tool_call_id", "")))
        if ARTIFACT_KEY in metadata:
            tool_message.artifact = metadata[ARTIFACT_KEY]
        return tool_message
    return SystemMessage(content=content, id=message_id)


def _is_part(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("type"), str) and bool(item["type"])


def content_of(message: dict[str, Any]) -> str | list[Any]:
    """A message's content as it was sent: its parts when it had some, else its text."""
    parts = (message.get("metadata") or {}).get(CONTENT_PARTS_KEY)
    if isinstance(parts, list) and isinstance(message.get("content"), str):
        return parts
    return message["content"]


def tool_calls_of(metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """The tool calls of an assistant message, in LangChain's shape, whichever shape was stored."""
    calls = []
    for call in metadata.get("tool_calls") or []:
        if not isinstance(call, dict):
            continue
        if isinstance(call.get("function"), dict):  # OpenAI: {"id", "type": "function", "function": {...}}
            arguments = call["function"].get("arguments") or "{}"
            try:
                args = json.loads(arguments) if isinstance(arguments, str) else dict(arguments)
            except (ValueError, TypeError):
                args = {"__raw__": arguments}
            calls.append({"name": call["function"].get("name", ""), "args": args, "id": call.get("id"), "type": "tool_call"})
        else:
            calls.append(
                {"name": call.get("name", ""), "args": call.get("args") or {}, "id": call.get("id"), "type": "tool_call"}
            )
    return calls


def tool_call_ids(metadata: dict[str, Any]) -> list[str]:
    return [str(call["id"]) for call in tool_calls_of(metadata) if call.get("id")]

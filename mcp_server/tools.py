"""The MCP tools: each one the REST endpoint it names, reached through the same validation and the
same service or selector, for the tenant of the API key.

A tool is a ``Tool``: its name, a description for the model, the JSON Schema of its arguments, and a
function ``run(*, tenant, **arguments)`` answering a JSON document. The schemas describe the
arguments to the client; the rules are the API's own, so a tool accepts exactly what its endpoint
accepts and refuses the rest with the same code, status and field. The ids an endpoint reads from
its URL path go through the API's own router and its NUL check (``_path``), then the view's id
checks (``conversations.api.views``); a GET endpoint's other arguments are read as its query string
(``_query``), a POST endpoint's as its JSON body, by the endpoint's serializers; the services do the
rest. A result is the endpoint's JSON answer (``tests/mcp_server/test_parity.py`` holds each tool to
it, input by input); an append adds ``created``, which the endpoint tells by its 201, and a delete,
a 204 there, answers what it deleted. ``call`` checks only what no endpoint can be sent: an argument
no tool takes, a required one missing, or an id that is not a string; each is a
``validation_error`` and nothing is written.

An error is answered as the API's error document (``{"error": {"code", "message", "details"}}``) with
the HTTP ``status`` the endpoint would have answered and, when waiting helps, ``retry_after`` in
seconds: ``call`` turns every exception the API would answer into that document
(``conversations.api.errors.exception_handler``). An append refused with a 503 code
(``broker_unavailable``, ``write_indeterminate``, ``idempotency_unknown``...) names the message ids in
``details`` as the REST answer does: calling again with the same ids is safe.
"""

import json
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import structlog
from django.http import QueryDict
from django.urls import Resolver404, resolve
from rest_framework.exceptions import MethodNotAllowed, ValidationError
from rest_framework.utils.encoders import JSONEncoder

from conversations import content_parts, selectors, services
from conversations.api import errors
from conversations.api import serializers as conversation_serializers
from conversations.api.views import SlashedConversationIdView, _conversation_id, _new_conversation_id, _refuse_nul
from conversations.models import Role
from core.exceptions import NotFound
from extraction import selectors as extraction_selectors
from extraction import services as extraction_services
from extraction.api import serializers as extraction_serializers
from extraction.api.views import _memory_id, memory_list_answer
from extraction.models import MemoryKind
from facts import selectors as fact_selectors
from facts import services as fact_services
from facts.api import serializers as fact_serializers
from memory import fused
from memory.api import serializers as memory_serializers
from memory.api.views import context_answer
from search import selectors as search_selectors
from search.api import serializers as search_serializers
from tenants.models import Tenant
from tenants.usage import usage_record

logger = structlog.get_logger(__name__)

API_ROOT = "/api/v1/"
SERVER_ERROR = "The service failed to answer this call; it has been logged. Retry, and report it if it persists."


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[..., dict[str, Any]]
    # Hints for clients that ask before a tool changes anything: reads nothing but the tenant's
    # memory; removes something; calling it again with the same arguments changes nothing more.
    read_only: bool = False
    destructive: bool = False
    idempotent: bool = False


@dataclass(frozen=True)
class Outcome:
    """A tool's answer: the JSON document, and whether it is the API's error document."""

    document: dict[str, Any]
    is_error: bool = False


# --- Argument schemas -------------------------------------------------------------------------------

CONVERSATION_ID = {
    "type": "string",
    "pattern": f"^{conversation_serializers.CONVERSATION_ID_PATTERN}$",
    "description": "The conversation's id, chosen by you (letters, digits and . _ @ = + -, starting with a letter "
    "or digit). Appending to a new id creates the conversation.",
}
USER_ID = {"type": "string", "description": "The end user's id in your application (any non-blank text)."}
FORMAT = {
    "type": "string",
    "enum": [name for name, _ in conversation_serializers.LLM_FORMATS],
    "default": "openai",
    "description": "The message format: openai (role, content, tool_calls, tool_call_id) or langchain (message dicts).",
}
MEMORY_ID = {"type": "string", "format": "uuid", "description": "The memory's memory_id, as get_memories answers it."}
MESSAGE = {
    "type": "object",
    "properties": {
        "role": {"type": "string", "enum": list(Role.values)},
        "content": {"type": ["string", "null"], "description": "The text; null only on an assistant message."},
        "id": {
            "type": "string",
            "format": "uuid",
            "description": "Your own id (a UUID): sending the same message again with it stores it once.",
        },
        "metadata": {"type": "object", "description": "Any JSON object, kept with the message."},
        "name": {"type": "string"},
        "tool_calls": {"type": "array", "items": {"type": "object"}, "description": "An assistant's OpenAI tool calls."},
        "tool_call_id": {"type": "string", "description": "On a tool message: the call it answers."},
        "created_at": {"type": "string", "format": "date-time", "description": "Defaults to the time of the write."},
    },
    "required": ["role", "content"],
}


def _schema(properties: dict[str, Any], *, required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


# --- The endpoint's request ------------------------------------------------------------------------


def _string(value: Any, *, field: str) -> str:
    if not isinstance(value, str):
        raise ValidationError({field: ["Must be a string."]})
    return value


def _given(**values: Any) -> dict[str, Any]:
    """The arguments the caller gave (None: left to the endpoint's default)."""
    return {name: value for name, value in values.items() if value is not None}


def _query(**values: Any) -> QueryDict:
    """The arguments as the endpoint's query string carries them, so that its serializer reads them
    as it reads a request's: a list is the parameter repeated, a blank value is one left out."""
    query = QueryDict(mutable=True)
    for name, value in _given(**values).items():
        for item in value if isinstance(value, list) else [value]:
            query.appendlist(name, item if isinstance(item, str) else json.dumps(item))
    return query


def _path(method: str, route: str, *, query: QueryDict | None = None, **ids: Any) -> dict[str, Any]:
    """The ids as the endpoint ``method /api/v1/<route>`` reads them from its URL path (each id one
    segment, as a client percent-encodes it and the server decodes it), or the API's refusal of that
    request before the endpoint's own checks: 404 when no route takes the path (an empty id, a "/" in
    a user id or key), the answer of the route that does take it (a conversation id holding "/" is a
    400 naming it; the fact key "history" is the history's route, which only reads), and a NUL in an
    id or in ``query`` refused as every API view refuses it (``TenantAPIView``)."""
    path = API_ROOT + route.format(**{name: _string(value, field=name) for name, value in ids.items()})
    try:
        match = resolve(path)
    except Resolver404:
        raise NotFound(f"No endpoint answers {path}.", details={"path": path}) from None
    _refuse_nul(SimpleNamespace(method=method, query_params=query or QueryDict()), match.kwargs)
    view = match.func.view_class
    if not hasattr(view, method.lower()):
        raise MethodNotAllowed(method)
    if view is SlashedConversationIdView:
        view().refuse(None, **match.kwargs)
    return match.kwargs


# --- The tools --------------------------------------------------------------------------------------


def append_messages(
    *,
    tenant: Tenant,
    conversation_id: Any,
    messages: Any,
    user_id: Any = None,
    agent_id: Any = None,
) -> dict[str, Any]:
    """``POST /conversations/{id}/messages/``'s answer, and ``created``: whether any message was new (its 201)."""
    path = _path("POST", "conversations/{conversation_id}/messages/", conversation_id=conversation_id)
    conversation_id = _new_conversation_id(path["conversation_id"])
    values = conversation_serializers.append_values(_given(messages=messages, user_id=user_id, agent_id=agent_id))
    result = services.message_append(
        tenant=tenant,
        conversation_id=conversation_id,
        messages=values["messages"],
        user_id=values["user_id"],
        agent_id=values["agent_id"],
    )
    return {
        "conversation_id": conversation_id,
        "messages": [content_parts.api_message(message) | {"conversation_id": conversation_id} for message in result.messages],
        "created": result.created,
    }


def get_context(*, tenant: Tenant, conversation_id: Any, **options: Any) -> dict[str, Any]:
    """``POST /conversations/{id}/context/``'s answer."""
    path = _path("POST", "conversations/{conversation_id}/context/", conversation_id=conversation_id)
    serializer = memory_serializers.ContextInSerializer(data=_given(**options))
    serializer.is_valid(raise_exception=True)
    return context_answer(
        tenant=tenant, conversation_id=_conversation_id(path["conversation_id"]), values=serializer.validated_data
    )


def get_window(*, tenant: Tenant, conversation_id: Any, limit: Any = None, format: Any = None) -> dict[str, Any]:
    """``GET /conversations/{id}/window/``'s answer."""
    parameters = _query(limit=limit, format=format)
    path = _path("GET", "conversations/{conversation_id}/window/", query=parameters, conversation_id=conversation_id)
    query = conversation_serializers.LlmWindowQuerySerializer(data=parameters)
    query.is_valid(raise_exception=True)
    conversation_id = path["conversation_id"]
    window = selectors.conversation_llm_window(
        tenant=tenant,
        conversation_id=_conversation_id(conversation_id),
        limit=query.validated_data.get("limit") or tenant.setting("MEMORY_MAX_TURNS_PROMPT"),
        format=query.validated_data["format"],
    )
    return {
        "conversation_id": conversation_id,
        "format": query.validated_data["format"],
        "messages": window.messages,
        "count": len(window.messages),
        "source": window.source,
    }


def search_memory(
    *,
    tenant: Tenant,
    query: Any,
    user_id: Any = None,
    conversation_id: Any = None,
    conversation_ids: Any = None,
    **options: Any,
) -> dict[str, Any]:
    """``POST /users/{id}/search/``'s answer with ``user_id``, ``POST /conversations/{id}/search/``'s
    with ``conversation_id``."""
    if (user_id is None) == (conversation_id is None):
        raise ValidationError("Send either user_id (all of the user's conversations) or conversation_id, not both.")
    if conversation_id is not None:
        conversation_id = _conversation_id(
            _path("POST", "conversations/{conversation_id}/search/", conversation_id=conversation_id)["conversation_id"]
        )
    else:
        user_id = _path("POST", "users/{user_id}/search/", user_id=user_id)["user_id"]
    # The endpoint's JSON body: its filters included; a conversation filter is "conversation_id" there.
    # The user search's body also takes include_memories (a conversation's refuses it, as its endpoint does).
    body = {"q": query, **_given(conversation_id=conversation_ids, **options)}
    if user_id is not None:
        parameters = memory_serializers.UserSearchBodySerializer(data=body)
    else:
        parameters = search_serializers.SearchBodySerializer(data=body)
    parameters.is_valid(raise_exception=True)
    values = dict(parameters.validated_data)
    include_memories, include_past = values.pop("include_memories", False), values.pop("include_past_memories", False)
    text = values.pop("q")
    if user_id is not None:
        values.setdefault("scope", "user")
    request = search_selectors.SearchRequest.for_tenant(tenant, query=text, **values)
    if include_memories:
        found = fused.user_search_fused(tenant=tenant, request=request, user_id=user_id, include_past=include_past)
        usage_record(tenant=tenant, searches=1)
        return memory_serializers.fused_answer(text, found)
    result = search_selectors.memory_search(tenant=tenant, request=request, conversation_id=conversation_id, user_id=user_id)
    usage_record(tenant=tenant, searches=1)  # counted as the API's search endpoints count one
    return search_serializers.search_answer(text, result)


def get_facts(*, tenant: Tenant, user_id: Any, limit: Any = None) -> dict[str, Any]:
    """``GET /users/{id}/facts/``'s answer."""
    parameters = _query(limit=limit)
    user_id = _path("GET", "users/{user_id}/facts/", query=parameters, user_id=user_id)["user_id"]
    query = fact_serializers.FactListQuerySerializer(data=parameters)
    query.is_valid(raise_exception=True)
    facts = fact_selectors.facts_list(tenant=tenant, user_id=user_id, limit=query.validated_data.get("limit"))
    return {
        "user_id": user_id,
        "facts": fact_serializers.FactOutSerializer(facts, many=True).data,
        "total_tokens": sum(fact.token_count for fact in facts),
    }


def set_fact(*, tenant: Tenant, user_id: Any, key: Any, value: Any) -> dict[str, Any]:
    """``POST /users/{id}/facts/``'s answer to one fact, ``{"key": ..., "value": ...}``."""
    user_id = _path("POST", "users/{user_id}/facts/", user_id=user_id)["user_id"]
    serializer = fact_serializers.FactsInSerializer(data={"key": key, "value": value})
    serializer.is_valid(raise_exception=True)
    writes = fact_services.facts_upsert(tenant=tenant, user_id=user_id, facts=serializer.validated_data["facts"])
    return {
        "user_id": user_id,
        "facts": [fact_serializers.FactOutSerializer(write.fact).data for write in writes],
        "created": [write.fact.key for write in writes if write.created],
    }


def delete_fact(*, tenant: Tenant, user_id: Any, key: Any) -> dict[str, Any]:
    """``DELETE /users/{id}/facts/{key}/`` (a 204), answered as the fact deleted."""
    path = _path("DELETE", "users/{user_id}/facts/{key}/", user_id=user_id, key=key)
    fact_services.fact_delete(tenant=tenant, user_id=path["user_id"], key=path["key"])
    return {"user_id": path["user_id"], "key": fact_selectors.stored_key(path["key"]), "deleted": True}


def get_memories(*, tenant: Tenant, user_id: Any, conversation_ids: Any = None, **options: Any) -> dict[str, Any]:
    """``GET /users/{id}/memories/``'s answer."""
    # The endpoint's query: its conversation filter is the repeated "conversation_id" there.
    parameters = _query(conversation_id=conversation_ids, **options)
    user_id = _path("GET", "users/{user_id}/memories/", query=parameters, user_id=user_id)["user_id"]
    query = extraction_serializers.MemoryQuerySerializer(data=parameters)
    query.is_valid(raise_exception=True)
    return memory_list_answer(tenant=tenant, user_id=user_id, values=query.validated_data)


def get_memory(*, tenant: Tenant, user_id: Any, memory_id: Any) -> dict[str, Any]:
    """``GET /users/{id}/memories/{memory_id}/``'s answer."""
    path = _path("GET", "users/{user_id}/memories/{memory_id}/", user_id=user_id, memory_id=memory_id)
    user_id, memory_id = path["user_id"], path["memory_id"]
    memory = extraction_selectors.memory_get(tenant=tenant, user_id=user_id, memory_id=_memory_id(memory_id))
    if memory is None:
        raise NotFound(f"User {user_id!r} has no memory {memory_id}.")
    context = {
        "conversation_ids": extraction_selectors.conversation_ids_of(tenant=tenant, memories=[memory]),
        "history": extraction_selectors.memory_history(tenant=tenant, memory=memory),
    }
    return extraction_serializers.MemoryDetailOutSerializer(memory, context=context).data


def delete_memory(*, tenant: Tenant, user_id: Any, memory_id: Any) -> dict[str, Any]:
    """``DELETE /users/{id}/memories/{memory_id}/`` (a 204), answered as the memory taken back."""
    path = _path("DELETE", "users/{user_id}/memories/{memory_id}/", user_id=user_id, memory_id=memory_id)
    user_id = path["user_id"]
    memory = extraction_services.memory_invalidate(
        tenant=tenant, user_id=user_id, memory_id=_memory_id(path["memory_id"]), by="mcp"
    )
    return {"user_id": user_id, "memory_id": str(memory.memory_id), "deleted": True}


TOOLS = [
    Tool(
        name="append_messages",
        description="Append messages to a conversation (created on first use). When this answers, the messages are "
        "stored durably and in the conversation's window. Give each message your own UUID id: after any error, "
        "calling again with the same ids stores each message once (error codes broker_unavailable, "
        "write_indeterminate, idempotency_unknown say to retry later with the same ids).",
        input_schema=_schema(
            {
                "conversation_id": CONVERSATION_ID,
                "messages": {"type": "array", "items": MESSAGE, "minItems": 1, "description": "In order, oldest first."},
                "user_id": {
                    **USER_ID,
                    "description": "The end user's id, recorded when the conversation has none. A conversation "
                    "belongs to one user: another user's id is refused (error code user_mismatch, nothing stored).",
                },
                "agent_id": {
                    "type": "string",
                    "description": "Your agent's id, recorded when the conversation is new. Several agents may "
                    "append to one conversation; it keeps the first agent's id.",
                },
            },
            required=["conversation_id", "messages"],
        ),
        run=append_messages,
    ),
    Tool(
        name="get_context",
        description="The messages to send to the LLM for this conversation within a token budget: the system prompt "
        "(with a summary of older turns), the recent turns in full and the query last, with the figures behind them "
        "(token counts, turns kept and summarized). With use_memory, the system message also carries the user's "
        "facts, summaries and older messages relevant to the query.",
        input_schema=_schema(
            {
                "conversation_id": CONVERSATION_ID,
                "query": {"type": "string", "description": "The current user message, sent last."},
                "system_prompt": {"type": "string"},
                "max_tokens": {"type": "integer", "minimum": 1, "description": "The budget; default MEMORY_MAX_TOKENS."},
                "short_term_turns": {"type": "integer", "minimum": 0, "description": "Turns kept in full."},
                "long_term_turns": {"type": "integer", "minimum": 0, "description": "Older turns summarized."},
                "compression_threshold": {"type": "number", "exclusiveMinimum": 0, "maximum": 1},
                "use_memory": {"type": "boolean", "default": False},
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "With use_memory: the relevant messages the bundle lists (the system message holds as many as its budget allows).",
                },
                "format": FORMAT,
            },
            required=["conversation_id"],
        ),
        run=get_context,
        read_only=True,
    ),
    Tool(
        name="get_window",
        description="The conversation's newest messages in an LLM format, starting at a turn.",
        input_schema=_schema(
            {
                "conversation_id": CONVERSATION_ID,
                "limit": {"type": "integer", "minimum": 1, "description": "At most this many; default MEMORY_MAX_TURNS_PROMPT."},
                "format": FORMAT,
            },
            required=["conversation_id"],
        ),
        run=get_window,
        read_only=True,
    ),
    Tool(
        name="search_memory",
        description="Search past messages for the ones most relevant to a query, best first: all conversations of a "
        "user (user_id), or one conversation (conversation_id; with scope auto, also the same user's other "
        "conversations while it is short). Hybrid (semantic and keyword) by default. With user_id and "
        "include_memories, the user's extracted memories rank with the turns, each result saying its kind.",
        input_schema=_schema(
            {
                "query": {"type": "string", "description": "The words or question to search for."},
                "user_id": USER_ID,
                "conversation_id": CONVERSATION_ID,
                "top_k": {"type": "integer", "minimum": 1, "description": "At most this many hits."},
                "mode": {"type": "string", "enum": list(search_selectors.MODES)},
                "scope": {"type": "string", "enum": list(search_selectors.SCOPES)},
                "min_similarity": {"type": "number", "minimum": -1, "maximum": 1},
                "start_date": {"type": "string", "format": "date-time", "description": "Only messages from this moment on."},
                "end_date": {"type": "string", "format": "date-time", "description": "Only messages up to this moment."},
                "role": {"type": "array", "items": {"type": "string", "enum": ["user", "assistant"]}},
                "name": {"type": "array", "items": {"type": "string"}, "description": "Only these speakers' messages."},
                "agent_id": {"type": "array", "items": {"type": "string"}, "description": "Only these agents' conversations."},
                "conversation_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "With user_id: only these conversations of the user.",
                },
                "metadata": {
                    "type": "object",
                    "description": 'Message metadata, top-level keys: a value, or {"in": [values]}.',
                },
                "include_memories": {
                    "type": "boolean",
                    "description": "With user_id: rank the user's extracted memories with the turns (results of kind "
                    "turn or memory; a memory names the turns it was read from, a turn the memories read from it).",
                },
                "include_past_memories": {
                    "type": "boolean",
                    "description": "With include_memories: also memories taken back (valid_to set).",
                },
            },
            required=["query"],
        ),
        run=search_memory,
        read_only=True,
    ),
    Tool(
        name="get_facts",
        description="The facts known about a user (key: value pairs such as preferences), most recently updated first.",
        input_schema=_schema(
            {"user_id": USER_ID, "limit": {"type": "integer", "minimum": 1, "description": "At most this many."}},
            required=["user_id"],
        ),
        run=get_facts,
        read_only=True,
    ),
    Tool(
        name="set_fact",
        description="Set one fact about a user (created, or its value replaced; the previous value is kept in the "
        "fact's history). The value is text.",
        input_schema=_schema(
            {
                "user_id": USER_ID,
                "key": {"type": "string", "description": 'A short name such as "city" (no "/").'},
                "value": {"type": "string", "description": "The fact's value, as text."},
            },
            required=["user_id", "key", "value"],
        ),
        run=set_fact,
        idempotent=True,
    ),
    Tool(
        name="delete_fact",
        description="Delete one fact about a user (its history keeps the deleted value).",
        input_schema=_schema(
            {"user_id": USER_ID, "key": {"type": "string"}},
            required=["user_id", "key"],
        ),
        run=delete_fact,
        destructive=True,
    ),
    Tool(
        name="get_memories",
        description="What the service has learnt about a user from their conversations: statements (facts, "
        "preferences, events, relations) about the user or people they named, each with when it began to hold and "
        "the messages it was read from. With query: the top_k best matches, best first; without: the newest first. "
        "Only current ones unless valid_at (what held then) or include_past. extraction says whether memories are "
        "extracted for this tenant at all, and if not, why.",
        input_schema=_schema(
            {
                "user_id": USER_ID,
                "query": {"type": "string", "description": "Rank the memories by this text (hybrid search)."},
                "top_k": {"type": "integer", "minimum": 1, "description": "With query: at most this many; default MEMORY_TOP_K."},
                "kind": {"type": "string", "enum": list(MemoryKind.values)},
                "subject": {"type": "string", "description": "Only memories about this person (case aside)."},
                "valid_at": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Only memories that held at this moment, past ones included.",
                },
                "include_past": {
                    "type": "boolean",
                    "default": False,
                    "description": "Also memories that no longer hold (an update or a delete took them back).",
                },
                "conversation_ids": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Only memories read from these conversations of the user.",
                },
                "start_date": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Only memories holding from this moment on (an event's date).",
                },
                "end_date": {
                    "type": "string",
                    "format": "date-time",
                    "description": "Only memories holding from this moment or before.",
                },
                "limit": {"type": "integer", "minimum": 1, "description": "Without query: at most this many (default 50)."},
                "offset": {"type": "integer", "minimum": 0, "description": "Without query: skip this many."},
            },
            required=["user_id"],
        ),
        run=get_memories,
        read_only=True,
    ),
    Tool(
        name="get_memory",
        description="One memory of a user (its memory_id from get_memories) with its history: every change, newest "
        "first, with the text it replaced, when it stopped holding, and which messages or model made it.",
        input_schema=_schema({"user_id": USER_ID, "memory_id": MEMORY_ID}, required=["user_id", "memory_id"]),
        run=get_memory,
        read_only=True,
    ),
    Tool(
        name="delete_memory",
        description="Take back a memory of a user that no longer holds or that the user asked to forget: it stops "
        "being current (and leaves get_memories and the context) and its history is kept.",
        input_schema=_schema({"user_id": USER_ID, "memory_id": MEMORY_ID}, required=["user_id", "memory_id"]),
        run=delete_memory,
        destructive=True,
    ),
]
TOOLS_BY_NAME = {tool.name: tool for tool in TOOLS}


# --- Calling a tool ---------------------------------------------------------------------------------


def call(*, tenant: Tenant, name: str, arguments: dict[str, Any]) -> Outcome:
    """Run the tool ``name`` for the tenant: its JSON answer, or the API's error document."""
    try:
        tool = TOOLS_BY_NAME.get(name)
        if tool is None:
            raise ValidationError({"name": [f"No tool is named {name!r}; the tools are {', '.join(TOOLS_BY_NAME)}."]})
        _check_arguments(tool, arguments)
        return Outcome(document=_plain(tool.run(tenant=tenant, **arguments)))
    except Exception as error:  # every refusal the API would answer, and a failure it would log
        return Outcome(document=error_document(error), is_error=True)


def _check_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    known = tool.input_schema["properties"]
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        raise ValidationError(
            {name: [f"{tool.name} takes no argument {name!r}; it takes {', '.join(known)}."] for name in unknown}
        )
    missing = [name for name in tool.input_schema["required"] if arguments.get(name) is None]
    if missing:
        raise ValidationError({name: ["This argument is required."] for name in missing})


def error_document(error: Exception) -> dict[str, Any]:
    """``{"error": {"code", "message", "details", "status"[, "retry_after"]}}``, as the API answers it."""
    response = errors.exception_handler(error, {})
    if response is None:
        logger.exception("mcp_tool_failed", error=str(error))
        return {"error": {"code": "server_error", "message": SERVER_ERROR, "details": {}, "status": 500}}
    document = _plain(response.data)
    document["error"]["status"] = response.status_code
    if response.has_header("Retry-After"):
        document["error"]["retry_after"] = int(response["Retry-After"])
    return document


def _plain(document: Any) -> dict[str, Any]:
    """The document as plain JSON values (datetimes, UUIDs and DRF's return types as the API renders them)."""
    return json.loads(json.dumps(document, cls=JSONEncoder))

"""Each MCP tool against its REST endpoint, input by input: for the same arguments, the tool refuses
with the endpoint's error code, HTTP status and field, or answers the endpoint's JSON.

The endpoint is called with the arguments as a client sends them (each id one percent-encoded path
segment, the other arguments as its query string or JSON body) by one tenant, and the tool (through
the MCP endpoint, in-process) by another tenant holding the same conversations, facts and memories,
so that a write on one side cannot change what the other side answers."""

import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from django.conf import settings
from rest_framework.test import APIClient

from facts import services as fact_services
from tests.factories import conversation_with_messages, extracted_memories
from tests.mcp_server.conftest import rpc

API = "/api/v1"
LONG_ID = "a" * (settings.MEMORY_MAX_ID_LENGTH + 1)
MEMORY = "the memory_id of the user's memory"  # replaced by each tenant's own memory_id
BOSTON = {"op": "add", "kind": "fact", "subject": "Ada", "text": "Ada lives in Boston."}
MESSAGE = {"id": "6f1c2a0e-3b7d-4c55-9d0e-0a1b2c3d4e5f", "role": "user", "content": "I am flying to Porto in June."}
# What differs between two tenants holding the same things: when each was written, and its ids.
VOLATILE = {
    "id", "seq", "created_at", "updated_at", "changed_at", "valid_from", "message_id", "message_ids", "memory_id", "memory_ids",
}  # fmt: skip


def segment(value: str) -> str:
    """``value`` as one URL path segment, percent-encoded as a client sends it."""
    return quote(value, safe="")


def given(arguments: dict[str, Any], *names: str) -> dict[str, Any]:
    return {name: arguments[name] for name in names if name in arguments}


def conversation(arguments: dict[str, Any], route: str) -> str:
    return f"{API}/conversations/{segment(arguments['conversation_id'])}/{route}/"


def user(arguments: dict[str, Any], route: str) -> str:
    return f"{API}/users/{segment(arguments['user_id'])}/{route}/"


# --- Each tool's endpoint, called with the tool's arguments -----------------------------------------


def append_messages(api: APIClient, arguments: dict[str, Any]) -> Any:
    body = given(arguments, "messages", "user_id", "agent_id")
    return api.post(conversation(arguments, "messages"), body, format="json")


def get_context(api: APIClient, arguments: dict[str, Any]) -> Any:
    body = {name: value for name, value in arguments.items() if name != "conversation_id"}
    return api.post(conversation(arguments, "context"), body, format="json")


def get_window(api: APIClient, arguments: dict[str, Any]) -> Any:
    return api.get(conversation(arguments, "window"), given(arguments, "limit", "format"))


def search_memory(api: APIClient, arguments: dict[str, Any]) -> Any:
    body = {
        "q": arguments["query"],
        **given(arguments, "top_k", "mode", "scope", "min_similarity", "role", "include_memories", "include_past_memories"),
    }
    if "conversation_ids" in arguments:
        body["conversation_id"] = arguments["conversation_ids"]
    if "conversation_id" in arguments:
        return api.post(conversation(arguments, "search"), body, format="json")
    return api.post(user(arguments, "search"), body, format="json")


def get_facts(api: APIClient, arguments: dict[str, Any]) -> Any:
    return api.get(user(arguments, "facts"), given(arguments, "limit"))


def set_fact(api: APIClient, arguments: dict[str, Any]) -> Any:
    return api.post(user(arguments, "facts"), given(arguments, "key", "value"), format="json")


def delete_fact(api: APIClient, arguments: dict[str, Any]) -> Any:
    return api.delete(user(arguments, f"facts/{segment(arguments['key'])}"))


def get_memories(api: APIClient, arguments: dict[str, Any]) -> Any:
    query = {name: value for name, value in arguments.items() if name not in ("user_id", "conversation_ids")}
    if "conversation_ids" in arguments:
        query["conversation_id"] = arguments["conversation_ids"]
    return api.get(user(arguments, "memories"), query)


def get_memory(api: APIClient, arguments: dict[str, Any]) -> Any:
    return api.get(user(arguments, f"memories/{segment(arguments['memory_id'])}"))


def delete_memory(api: APIClient, arguments: dict[str, Any]) -> Any:
    return api.delete(user(arguments, f"memories/{segment(arguments['memory_id'])}"))


ENDPOINTS: dict[str, Callable[[APIClient, dict[str, Any]], Any]] = {
    endpoint.__name__: endpoint
    for endpoint in (
        append_messages,
        get_context,
        get_window,
        search_memory,
        get_facts,
        set_fact,
        delete_fact,
        get_memories,
        get_memory,
        delete_memory,
    )
}


# --- The inputs -------------------------------------------------------------------------------------

BAD_CONVERSATION_IDS = [
    pytest.param(LONG_ID, id="too long"),
    pytest.param("trip/2024", id="holding a slash"),
    pytest.param("", id="empty"),
    pytest.param("tr\x00ip", id="holding a NUL"),
    pytest.param(" ", id="blank"),
    pytest.param("not an id!", id="holding a space and a bang"),
    pytest.param("-trip", id="starting with a symbol"),
    pytest.param("trip%2F2024", id="holding a percent sign"),
]
CONVERSATION_TOOLS = [
    pytest.param("append_messages", {"messages": [MESSAGE]}, id="append_messages"),
    pytest.param("get_context", {"query": "When do I fly?"}, id="get_context"),
    pytest.param("get_window", {}, id="get_window"),
    pytest.param("search_memory", {"query": "Porto", "mode": "keyword"}, id="search_memory"),
]

BAD_USER_IDS = [
    pytest.param("", id="empty"),
    pytest.param("ada/bob", id="holding a slash"),
    pytest.param("a\x00da", id="holding a NUL"),
    pytest.param(" ", id="blank"),
    pytest.param("a\x01da", id="holding a control character"),
    pytest.param("u" * (settings.MEMORY_MAX_ID_LENGTH + 1), id="too long"),
    pytest.param("nobody", id="unknown"),
]
USER_TOOLS = [
    pytest.param("search_memory", {"query": "Boston", "mode": "keyword"}, id="search_memory"),
    pytest.param("get_facts", {}, id="get_facts"),
    pytest.param("set_fact", {"key": "city", "value": "Paris"}, id="set_fact"),
    pytest.param("delete_fact", {"key": "city"}, id="delete_fact"),
    pytest.param("get_memories", {}, id="get_memories"),
    pytest.param("get_memory", {"memory_id": MEMORY}, id="get_memory"),
    pytest.param("delete_memory", {"memory_id": MEMORY}, id="delete_memory"),
]

OTHER_ARGUMENTS = [
    # The window's query.
    pytest.param("get_window", {"conversation_id": "trip", "limit": 0}, id="get_window: a limit of 0"),
    pytest.param("get_window", {"conversation_id": "trip", "limit": -1}, id="get_window: a negative limit"),
    pytest.param("get_window", {"conversation_id": "trip", "limit": "x"}, id="get_window: a limit that is no number"),
    pytest.param("get_window", {"conversation_id": "trip", "limit": 1.5}, id="get_window: a fractional limit"),
    pytest.param("get_window", {"conversation_id": "trip", "limit": 10**6}, id="get_window: a limit past the page size"),
    pytest.param("get_window", {"conversation_id": "trip", "limit": ""}, id="get_window: a blank limit"),
    pytest.param("get_window", {"conversation_id": "trip", "limit": 1}, id="get_window: a limit of 1"),
    pytest.param("get_window", {"conversation_id": "trip", "format": "bogus"}, id="get_window: an unknown format"),
    pytest.param("get_window", {"conversation_id": "trip", "format": ""}, id="get_window: a blank format"),
    pytest.param("get_window", {"conversation_id": "trip", "format": "lang\x00chain"}, id="get_window: a NUL in the format"),
    pytest.param("get_window", {"conversation_id": "trip", "format": "langchain"}, id="get_window: the langchain format"),
    # The context's body.
    pytest.param("get_context", {"conversation_id": "trip", "max_tokens": 0}, id="get_context: a budget of 0"),
    pytest.param("get_context", {"conversation_id": "trip", "max_tokens": 5}, id="get_context: a budget too small"),
    pytest.param("get_context", {"conversation_id": "trip", "compression_threshold": 2}, id="get_context: a threshold past 1"),
    pytest.param("get_context", {"conversation_id": "trip", "format": "bogus"}, id="get_context: an unknown format"),
    pytest.param("get_context", {"conversation_id": "trip", "query": "a\x00b"}, id="get_context: a NUL in the query"),
    pytest.param("get_context", {"conversation_id": "trip", "max_tokens": 500}, id="get_context: a budget"),
    pytest.param("get_context", {"conversation_id": "tr\x00ip", "max_tokens": 0}, id="get_context: a NUL id and a bad budget"),
    # The append's body.
    pytest.param("append_messages", {"conversation_id": "trip", "messages": []}, id="append_messages: no messages"),
    pytest.param(
        "append_messages",
        {"conversation_id": "trip", "messages": [{"role": "robot", "content": "hi"}]},
        id="append_messages: an unknown role",
    ),
    pytest.param(
        "append_messages",
        {"conversation_id": "trip", "messages": [MESSAGE], "user_id": "a\x00da"},
        id="append_messages: a NUL in the user id",
    ),
    pytest.param(
        "append_messages",
        {"conversation_id": "new-trip", "messages": [MESSAGE], "user_id": "ada", "agent_id": "planner"},
        id="append_messages: a new conversation",
    ),
    # The search's body.
    pytest.param("search_memory", {"query": "Porto", "user_id": "ada", "top_k": 0}, id="search_memory: a top_k of 0"),
    pytest.param(
        "search_memory", {"query": "Porto", "user_id": "ada", "top_k": 5000}, id="search_memory: a top_k past the page size"
    ),
    pytest.param("search_memory", {"query": "Porto", "user_id": "ada", "mode": "fuzzy"}, id="search_memory: an unknown mode"),
    pytest.param(
        "search_memory", {"query": "Porto", "user_id": "ada", "min_similarity": 2}, id="search_memory: a similarity past 1"
    ),
    pytest.param("search_memory", {"query": "", "user_id": "ada"}, id="search_memory: an empty query"),
    pytest.param(
        "search_memory",
        {"query": "Porto", "user_id": "ada", "mode": "keyword", "role": ["robot"]},
        id="search_memory: an unknown role",
    ),
    pytest.param(
        "search_memory",
        {"query": "Porto", "user_id": "ada", "mode": "keyword", "conversation_ids": ["trip"]},
        id="search_memory: some of the user's conversations",
    ),
    pytest.param(
        "search_memory",
        {"query": "Where does Ada live?", "user_id": "ada", "mode": "keyword", "include_memories": True},
        id="search_memory: with the user's memories",
    ),
    pytest.param(
        "search_memory",
        {"query": "Boston", "user_id": "ada", "include_memories": True, "include_past_memories": True, "top_k": 1},
        id="search_memory: with past memories too",
    ),
    pytest.param(
        "search_memory",
        {"query": "Boston", "user_id": "ada", "include_memories": "maybe"},
        id="search_memory: include_memories not a boolean",
    ),
    pytest.param(
        "search_memory",
        {"query": "Boston", "user_id": "ada", "include_past_memories": True},
        id="search_memory: past memories without include_memories",
    ),
    pytest.param(
        "search_memory",
        {"query": "Porto", "conversation_id": "trip", "include_memories": True},
        id="search_memory: memories asked of a conversation's search",
    ),
    # The facts.
    pytest.param("get_facts", {"user_id": "ada", "limit": 0}, id="get_facts: a limit of 0"),
    pytest.param("get_facts", {"user_id": "ada", "limit": "x"}, id="get_facts: a limit that is no number"),
    pytest.param("get_facts", {"user_id": "ada", "limit": 10**6}, id="get_facts: a limit past the page size"),
    pytest.param("get_facts", {"user_id": "ada", "limit": ""}, id="get_facts: a blank limit"),
    pytest.param("get_facts", {"user_id": "ada", "limit": 1}, id="get_facts: a limit of 1"),
    pytest.param("set_fact", {"user_id": "ada", "key": "", "value": "Paris"}, id="set_fact: an empty key"),
    pytest.param("set_fact", {"user_id": "ada", "key": "home/city", "value": "Paris"}, id="set_fact: a key holding a slash"),
    pytest.param("set_fact", {"user_id": "ada", "key": "history", "value": "Paris"}, id="set_fact: the reserved key"),
    pytest.param("set_fact", {"user_id": "ada", "key": "ci\x00ty", "value": "Paris"}, id="set_fact: a NUL in the key"),
    pytest.param("set_fact", {"user_id": "ada", "key": "k" * 300, "value": "Paris"}, id="set_fact: a key too long"),
    pytest.param("set_fact", {"user_id": "ada", "key": "city", "value": 42}, id="set_fact: a number for a value"),
    pytest.param("set_fact", {"user_id": "ada", "key": "city", "value": " "}, id="set_fact: a blank value"),
    pytest.param("set_fact", {"user_id": "ada", "key": "city", "value": "Par\x00is"}, id="set_fact: a NUL in the value"),
    pytest.param("set_fact", {"user_id": "ada", "key": "city", "value": "Lyon"}, id="set_fact: the value it holds"),
    pytest.param("set_fact", {"user_id": "ada", "key": "seat", "value": "window"}, id="set_fact: a new fact"),
    pytest.param("delete_fact", {"user_id": "ada", "key": ""}, id="delete_fact: an empty key"),
    pytest.param("delete_fact", {"user_id": "ada", "key": "home/city"}, id="delete_fact: a key holding a slash"),
    pytest.param("delete_fact", {"user_id": "ada", "key": "history"}, id="delete_fact: the reserved key"),
    pytest.param("delete_fact", {"user_id": "ada", "key": "ci\x00ty"}, id="delete_fact: a NUL in the key"),
    pytest.param("delete_fact", {"user_id": "ada", "key": "seat"}, id="delete_fact: a key it does not hold"),
    # The memories.
    pytest.param("get_memories", {"user_id": "ada", "limit": 0}, id="get_memories: a limit of 0"),
    pytest.param("get_memories", {"user_id": "ada", "limit": 10**6}, id="get_memories: a limit past the page size"),
    pytest.param("get_memories", {"user_id": "ada", "offset": -1}, id="get_memories: a negative offset"),
    pytest.param("get_memories", {"user_id": "ada", "limit": ""}, id="get_memories: a blank limit"),
    pytest.param("get_memories", {"user_id": "ada", "query": "Boston", "top_k": 0}, id="get_memories: a top_k of 0"),
    pytest.param("get_memories", {"user_id": "ada", "kind": "rumour"}, id="get_memories: an unknown kind"),
    pytest.param("get_memories", {"user_id": "ada", "valid_at": "yesterday"}, id="get_memories: a moment that is no date"),
    pytest.param("get_memories", {"user_id": "ada", "include_past": "maybe"}, id="get_memories: include_past not a boolean"),
    pytest.param("get_memories", {"user_id": "ada", "subject": "x" * 201}, id="get_memories: a subject too long"),
    pytest.param("get_memories", {"user_id": "ada", "subject": "A\x00da"}, id="get_memories: a NUL in the subject"),
    pytest.param(
        "get_memories", {"user_id": "ada", "conversation_ids": ["sa\x00id"]}, id="get_memories: a NUL in a conversation id"
    ),
    pytest.param("get_memories", {"user_id": "ada", "conversation_ids": ["said"]}, id="get_memories: one conversation"),
    pytest.param("get_memories", {"user_id": "ada", "include_past": True, "limit": 1}, id="get_memories: past ones too"),
    pytest.param("get_memory", {"user_id": "ada", "memory_id": "boston"}, id="get_memory: an id that is no UUID"),
    pytest.param("get_memory", {"user_id": "ada", "memory_id": ""}, id="get_memory: an empty id"),
    pytest.param("get_memory", {"user_id": "ada", "memory_id": "a/b"}, id="get_memory: an id holding a slash"),
    pytest.param("get_memory", {"user_id": "ada", "memory_id": "bos\x00ton"}, id="get_memory: a NUL in the id"),
    pytest.param("get_memory", {"user_id": "ada", "memory_id": str(uuid.uuid4())}, id="get_memory: an unknown id"),
    pytest.param("delete_memory", {"user_id": "ada", "memory_id": "boston"}, id="delete_memory: an id that is no UUID"),
    pytest.param("delete_memory", {"user_id": "ada", "memory_id": str(uuid.uuid4())}, id="delete_memory: an unknown id"),
]


# --- The comparison ---------------------------------------------------------------------------------


@pytest.fixture
def memory_ids(tenant: Any, other_tenant: Any) -> dict[str, str]:
    """Both tenants hold the same: the conversation "trip" of the user "ada", the fact city: Lyon, and
    a memory read from her conversation "said". Their memory_ids, REST's tenant's first."""
    ids = {}
    for side, holder in (("rest", tenant), ("mcp", other_tenant)):
        rows = [("user", "I am flying to Porto in June.", {}), ("assistant", "Shall I look at hotels?", {})]
        conversation_with_messages(holder, "trip", rows=rows, user_id="ada")
        fact_services.fact_set(tenant=holder, user_id="ada", key="city", value="Lyon")
        (memory,) = extracted_memories(holder, BOSTON, user_id="ada")
        ids[side] = str(memory.memory_id)
    return ids


def with_memory_id(arguments: dict[str, Any], memory_id: str) -> dict[str, Any]:
    return {name: memory_id if value == MEMORY else value for name, value in arguments.items()}


def named(details: Any) -> set[str]:
    """The fields an error's details name: its ``field``, or the keys of a validation error's details."""
    if not isinstance(details, dict):
        return set()
    return {details["field"]} if "field" in details else set(details)


def stable(document: Any) -> Any:
    """The document without what differs between two tenants holding the same things."""
    if isinstance(document, dict):
        return {name: "…" if name in VOLATILE else stable(value) for name, value in document.items()}
    if isinstance(document, list):
        return [stable(value) for value in document]
    return document


Outcome = tuple[int | None, str | None, set[str], Any]


def rest_outcome(name: str, answer: Any) -> Outcome:
    """(status, code, fields named, None) of a refusal; (None, None, set(), the answer) of a success. A
    204 is answered as ``deleted``; an append's 201 as its ``created``."""
    if answer.status_code >= 400:
        error = answer.json()["error"]
        return answer.status_code, error["code"], named(error["details"]), None
    if answer.status_code == 204:
        return None, None, set(), "deleted"
    document = answer.json()
    if name == "append_messages":
        document["created"] = answer.status_code == 201
    return None, None, set(), stable(document)


def tool_outcome(result: dict[str, Any]) -> Outcome:
    document = result["structuredContent"]
    if result["isError"]:
        error = document["error"]
        return error["status"], error["code"], named(error["details"]), None
    if document.get("deleted") is True:
        return None, None, set(), "deleted"
    return None, None, set(), stable(document)


def call_tool(client: APIClient, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    answer = rpc(client, "tools/call", {"name": name, "arguments": arguments})
    assert answer.status_code == 200, answer.content
    return answer.json()["result"]


BAD_IDS = [
    *(
        pytest.param(
            tool.values[0], {"conversation_id": bad.values[0], **tool.values[1]}, id=f"{tool.id}: a conversation id {bad.id}"
        )
        for tool in CONVERSATION_TOOLS
        for bad in BAD_CONVERSATION_IDS
    ),
    *(
        pytest.param(tool.values[0], {"user_id": bad.values[0], **tool.values[1]}, id=f"{tool.id}: a user id {bad.id}")
        for tool in USER_TOOLS
        for bad in BAD_USER_IDS
    ),
]
GOOD_IDS = [
    *(pytest.param(tool.values[0], {"conversation_id": "trip", **tool.values[1]}, id=tool.id) for tool in CONVERSATION_TOOLS),
    *(pytest.param(tool.values[0], {"user_id": "ada", **tool.values[1]}, id=f"{tool.id} of a user") for tool in USER_TOOLS),
]


@pytest.mark.parametrize(("name", "arguments"), [*BAD_IDS, *OTHER_ARGUMENTS, *GOOD_IDS])
def test_a_tool_answers_each_input_as_its_endpoint_does(
    api: APIClient, other_api: APIClient, memory_ids: dict[str, str], name: str, arguments: dict
) -> None:
    rest = rest_outcome(name, ENDPOINTS[name](api, with_memory_id(arguments, memory_ids["rest"])))
    tool = tool_outcome(call_tool(other_api, name, with_memory_id(arguments, memory_ids["mcp"])))
    assert tool == rest

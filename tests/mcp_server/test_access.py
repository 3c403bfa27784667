"""Who may use the MCP endpoint, through the SDK's client against the live service: every tool is
scoped to the key's tenant, and a call without a valid key is refused as any API request is."""

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from mcp.types import CallToolResult

from tenants import services as tenant_services
from tests.client.conftest import LiveService
from tests.factories import extracted_memories
from tests.mcp_server.conftest import mcp_session, mcp_url
from tests.mcp_server.test_tools import answer, calls, error


def other_tenants_calls(service: LiveService, api_key: str, *steps: tuple[str, dict[str, Any]]) -> list[CallToolResult]:
    async def run() -> list[CallToolResult]:
        async with mcp_session(service, authorization=f"Api-Key {api_key}") as session:
            return [await session.call_tool(name, arguments) for name, arguments in steps]

    return asyncio.run(run())


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}},
}


def refusal(service: LiveService, authorization: str) -> httpx.Response:
    """The answer to a session's opening request: the SDK's client refuses to go on with it, and the
    same request sent as it is shows the answer's document."""

    async def run() -> None:
        async with mcp_session(service, authorization=authorization):
            pass

    with pytest.raises(ExceptionGroup) as raised:
        asyncio.run(run())
    (failure,) = raised.value.exceptions
    assert isinstance(failure, httpx.HTTPStatusError)
    answer = httpx.post(
        mcp_url(service),
        json=INITIALIZE,
        headers={"Authorization": authorization, "Accept": "application/json, text/event-stream"},
    )
    assert answer.status_code == failure.response.status_code
    return answer


def test_another_tenants_key_reaches_none_of_this_tenants_memory(service: LiveService, other_tenant: Any) -> None:
    secret = {"id": str(uuid.uuid4()), "role": "user", "content": "My passport number is 12AB34567."}
    for result in calls(
        service,
        ("append_messages", {"conversation_id": "private", "messages": [secret], "user_id": "ada"}),
        ("set_fact", {"user_id": "ada", "key": "passport", "value": "12AB34567"}),
    ):
        answer(result)
    _, other_key = tenant_services.api_key_create(tenant=other_tenant, name="other")

    context, window, search_here, search_user, facts, delete, append = other_tenants_calls(
        service,
        other_key,
        ("get_context", {"conversation_id": "private", "query": "passport?"}),
        ("get_window", {"conversation_id": "private"}),
        ("search_memory", {"query": "passport number", "conversation_id": "private", "mode": "keyword"}),
        ("search_memory", {"query": "passport number", "user_id": "ada", "mode": "keyword"}),
        ("get_facts", {"user_id": "ada"}),
        ("delete_fact", {"user_id": "ada", "key": "passport"}),
        ("append_messages", {"conversation_id": "private", "messages": [secret], "user_id": "ada"}),
    )
    assert error(context)["code"] == "not_found"
    assert error(window)["code"] == "not_found"
    assert error(search_here)["code"] == "not_found"
    assert answer(search_user)["results"] == []
    assert answer(facts)["facts"] == []
    assert error(delete)["code"] == "not_found"
    # The same ids under another tenant are another conversation: its own, new, message.
    assert answer(append)["created"] is True

    window, facts = calls(service, ("get_window", {"conversation_id": "private"}), ("get_facts", {"user_id": "ada"}))
    assert answer(window)["messages"] == [{"role": "user", "content": secret["content"]}]
    assert [fact["value"] for fact in answer(facts)["facts"]] == ["12AB34567"]


def test_another_tenants_key_reaches_none_of_this_tenants_extracted_memories(
    service: LiveService, tenant: Any, other_tenant: Any
) -> None:
    (memory,) = extracted_memories(
        tenant, {"op": "add", "kind": "fact", "subject": "Ada", "text": "Ada's passport is 12AB34567."}, user_id="ada"
    )
    _, other_key = tenant_services.api_key_create(tenant=other_tenant, name="other")
    address = {"user_id": "ada", "memory_id": str(memory.memory_id)}

    listed, searched, read, deleted = other_tenants_calls(
        service,
        other_key,
        ("get_memories", {"user_id": "ada"}),
        ("get_memories", {"user_id": "ada", "query": "passport"}),
        ("get_memory", address),
        ("delete_memory", address),
    )
    assert answer(listed)["results"] == []
    assert answer(searched)["results"] == []
    assert error(read)["code"] == "not_found"
    assert error(deleted)["code"] == "not_found"
    (own,) = calls(service, ("get_memory", address))
    assert answer(own)["current"] is True


def test_without_a_valid_key_no_session_opens(service: LiveService, tenant: Any) -> None:
    missing = refusal(service, "")
    assert missing.status_code == 401
    assert missing.json()["error"]["code"] == "not_authenticated"
    assert missing.headers["WWW-Authenticate"] == "Api-Key"

    wrong = refusal(service, f"Api-Key {service.api_key[:-4]}nope")
    assert wrong.status_code == 401
    assert wrong.json()["error"]["code"] == "authentication_failed"

    api_key, plain = tenant_services.api_key_create(tenant=tenant, name="soon revoked")
    (listed,) = other_tenants_calls(service, plain, ("get_facts", {"user_id": "ada"}))
    answer(listed)
    tenant_services.api_key_revoke(api_key=api_key)
    revoked = refusal(service, f"Api-Key {plain}")
    assert revoked.status_code == 401
    assert revoked.json()["error"] == {
        "code": "authentication_failed",
        "message": "The API key has been revoked.",
        "details": {},
    }


def test_a_bearer_token_holding_the_key_is_accepted(service: LiveService) -> None:
    async def run() -> CallToolResult:
        async with mcp_session(service, authorization=f"Bearer {service.api_key}") as session:
            return await session.call_tool("get_facts", {"user_id": "ada"})

    assert answer(asyncio.run(run())) == {"user_id": "ada", "facts": [], "total_tokens": 0}
    assert refusal(service, "Bearer not.the-key").status_code == 401

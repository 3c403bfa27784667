"""The MCP endpoint in-process (Django's WSGI handler, as the test server runs it): the HTTP side of
the protocol for a stateless server, and the API's authentication and throttling in front of it."""

import json
from typing import Any

import pytest
from django.test import override_settings
from rest_framework.test import APIClient

from conversations.models import Message
from facts.models import UserFact
from tenants import services as tenant_services
from tenants.throttling import TenantRateThrottle
from tests.mcp_server.conftest import PATH, PROTOCOL, rpc

URL = PATH
WINDOW = 60


def initialize(client: APIClient) -> Any:
    params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}}
    return rpc(client, "initialize", params)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Time stands still in the middle of a throttle window: every request falls in the same one."""
    monkeypatch.setattr(TenantRateThrottle, "timer", staticmethod(lambda: WINDOW * 20_000_000 + WINDOW / 2))


def test_initialize_answers_one_json_document_and_opens_no_session(api: APIClient) -> None:
    answer = initialize(api)
    assert answer.status_code == 200
    assert answer["Content-Type"] == "application/json"
    assert "mcp-session-id" not in answer
    result = answer.json()["result"]
    assert result["serverInfo"]["name"] == "conversation-memory"
    assert result["capabilities"]["tools"] is not None
    assert "append_messages" in result["instructions"]


def test_the_url_without_its_final_slash_is_the_same_endpoint(api: APIClient) -> None:
    params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"}}
    answer = rpc(api, "initialize", params, url=URL.rstrip("/"))
    assert answer.status_code == 200, answer.content
    assert answer.json()["result"]["serverInfo"]["name"] == "conversation-memory"


def test_a_notification_is_accepted_with_no_answer(api: APIClient) -> None:
    answer = rpc(api, "notifications/initialized", id=None)
    assert answer.status_code == 202


def test_a_tool_call_runs_on_the_request_and_writes_for_the_keys_tenant(api: APIClient, tenant: Any) -> None:
    answer = rpc(api, "tools/call", {"name": "set_fact", "arguments": {"user_id": "ada", "key": "tea", "value": "green"}})
    assert answer.status_code == 200
    result = answer.json()["result"]
    assert result["isError"] is False
    assert result["structuredContent"]["facts"][0]["value"] == "green"
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert UserFact.objects.for_tenant(tenant).get(user_id="ada").value == "green"


def test_an_append_the_broker_refuses_is_a_tool_error_with_the_503_code_and_a_retry_with_its_ids_stores_it(
    api: APIClient, tenant: Any, refusing_queue: str, transactional_db: Any
) -> None:
    message = {"id": "6f1c2a0e-3b7d-4c55-9d0e-0a1b2c3d4e5f", "role": "user", "content": "keep me"}
    arguments = {"conversation_id": "refused", "messages": [message]}
    with override_settings(MEMORY_QUEUE=refusing_queue):
        refused = rpc(api, "tools/call", {"name": "append_messages", "arguments": arguments}).json()["result"]
    assert refused["isError"] is True
    error = refused["structuredContent"]["error"]
    assert (error["code"], error["status"]) == ("broker_unavailable", 503)
    assert error["retry_after"] >= 1
    assert not Message.objects.for_tenant(tenant).exists()

    retried = rpc(api, "tools/call", {"name": "append_messages", "arguments": arguments}).json()["result"]
    assert retried["isError"] is False
    assert retried["structuredContent"]["created"] is True  # the refused attempt stored nothing
    assert [stored["id"] for stored in retried["structuredContent"]["messages"]] == [message["id"]]


@pytest.mark.parametrize("method", ["get", "delete", "put"])
def test_only_post_is_served_a_stateless_server_has_no_stream_and_no_session(api: APIClient, method: str) -> None:
    answer = getattr(api, method)(URL, HTTP_ACCEPT="text/event-stream")
    assert answer.status_code == 405
    assert answer.json()["error"]["code"] == "method_not_allowed"
    assert "POST" in answer["Allow"]


def test_without_a_key_the_answer_is_the_apis_401(db: Any) -> None:
    answer = initialize(APIClient())
    assert answer.status_code == 401
    assert answer["WWW-Authenticate"] == "Api-Key"
    assert answer.json()["error"]["code"] == "not_authenticated"
    assert APIClient().get(URL).status_code == 401  # refused before the method is looked at


def test_a_client_that_cannot_read_json_is_told_so(api: APIClient) -> None:
    answer = rpc(api, "tools/list", accept="text/event-stream")
    assert answer.status_code == 406


@pytest.mark.parametrize("accept", ["", "*/*"])
def test_a_client_that_names_no_type_gets_json(api: APIClient, accept: str) -> None:
    answer = rpc(api, "tools/list", accept=accept)
    assert answer.status_code == 200
    assert "get_context" in {tool["name"] for tool in answer.json()["result"]["tools"]}


def test_failed_keys_from_one_address_are_throttled_as_on_every_endpoint(db: Any, settings: Any, clock: None) -> None:
    settings.MEMORY_AUTH_FAILURE_LIMIT = 3
    settings.MEMORY_AUTH_FAILURE_WINDOW = WINDOW
    guesser = APIClient()
    guesser.credentials(HTTP_AUTHORIZATION="Bearer 0badc0de.not-a-key")
    statuses = [initialize(guesser).status_code for _ in range(5)]
    assert statuses == [401, 401, 401, 429, 429]
    assert initialize(guesser).json()["error"]["code"] == "throttled"


def test_the_tenants_rate_limit_counts_mcp_requests(api: APIClient, tenant: Any, clock: None) -> None:
    tenant_services.tenant_update(tenant=tenant, settings={"MEMORY_RATE_LIMIT": 2, "MEMORY_RATE_WINDOW": WINDOW})
    assert [initialize(api).status_code for _ in range(3)] == [200, 200, 429]

"""Fixtures of the MCP tests: the live service of the client tests (a real gunicorn and Celery
worker, ``tests/client/conftest.py``), an MCP session of the SDK's own client against it, and one
JSON-RPC message to the endpoint in-process."""

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from rest_framework.test import APIClient

from tests.client.conftest import (  # noqa: F401  (fixtures, shared with the client tests)
    LiveService,
    loopback_model_servers_allowed,
    service,
    web,
    web_servers,
)

PATH = "/api/v1/mcp/"
ACCEPT = "application/json, text/event-stream"
PROTOCOL = "2025-06-18"


def mcp_url(live: LiveService) -> str:
    return live.url.rstrip("/") + PATH


@asynccontextmanager
async def mcp_session(live: LiveService, *, authorization: str | None = None) -> AsyncIterator[ClientSession]:
    """An initialized MCP session, authenticated as the service's tenant unless told otherwise."""
    headers = {"Authorization": authorization if authorization is not None else f"Api-Key {live.api_key}"}
    async with (
        create_mcp_http_client(headers=headers) as http,
        streamable_http_client(mcp_url(live), http_client=http) as (read, write, _),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def rpc(
    client: APIClient, method: str, params: dict[str, Any] | None = None, *, id: int | None = 1, url: str = PATH, **headers: str
) -> Any:
    """The endpoint's answer to one JSON-RPC message, sent in-process with the client's key."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    if id is not None:
        message["id"] = id
    return client.post(
        url,
        data=json.dumps(message),
        content_type="application/json",
        HTTP_ACCEPT=headers.pop("accept", ACCEPT),
        HTTP_MCP_PROTOCOL_VERSION=PROTOCOL,
        **headers,
    )

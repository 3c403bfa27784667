"""Fixtures of the MCP tests: the live service of the client tests (a real gunicorn and Celery
worker, ``tests/client/conftest.py``), and an MCP session of the SDK's own client against it."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.client.conftest import (  # noqa: F401  (fixtures, shared with the client tests)
    LiveService,
    loopback_model_servers_allowed,
    service,
    web,
    web_servers,
)

PATH = "/api/v1/mcp/"


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

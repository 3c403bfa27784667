"""The MCP server (the SDK's low-level ``Server``) and how one HTTP request reaches it.

The service is a WSGI application; the SDK's streamable HTTP transport is ASGI. Rather than a second
application beside Django, each MCP request is a Django view (``mcp_server.api.views``) that has
already authenticated the key, throttled the tenant and read the body, and that hands the request to
the SDK's session manager in its **stateless, JSON** mode: no session is kept between requests and
every POST is answered by one JSON document, so one request is one complete ASGI exchange.
``respond`` runs that exchange on an event loop of its own (``async_to_sync``) and collects the
answer.

The tools use Django's ORM, which must not run on an event loop's thread: each tool runs through
``sync_to_async(thread_sensitive=True)``, which, inside ``async_to_sync``, runs it back on the
request's own thread, with its database connection, like any view. The tenant reaches the tools
from the view through the ASGI scope's ``state`` (the SDK hands the tools the request it read).
"""

import json
from dataclasses import dataclass
from typing import Any

import anyio
from asgiref.sync import async_to_sync, sync_to_async
from django.conf import settings
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from mcp_server import tools
from tenants.models import Tenant

INSTRUCTIONS = (
    "Conversation memory for this tenant: append each turn with append_messages, build the next prompt with "
    "get_context, search past messages with search_memory, read what the service learnt about a user from their "
    "conversations with get_memories, and keep what you learn about a user with set_fact. "
    "Errors carry the service's stable error code; a retry with the same message ids is always safe."
)

server: Server = Server("conversation-memory", version="1", instructions=INSTRUCTIONS)


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return [
        types.Tool(
            name=tool.name,
            description=tool.description,
            inputSchema=tool.input_schema,
            annotations=types.ToolAnnotations(
                readOnlyHint=tool.read_only,
                destructiveHint=tool.destructive,
                idempotentHint=tool.idempotent,
                openWorldHint=False,
            ),
        )
        for tool in tools.TOOLS
    ]


# Arguments are not checked against the schemas here: the tools check them with the API's own rules,
# so that a refusal carries the API's code and message (``mcp_server.tools``).
@server.call_tool(validate_input=False)
async def call_tool(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
    tenant: Tenant = server.request_context.request.state.tenant
    outcome = await sync_to_async(tools.call, thread_sensitive=True)(tenant=tenant, name=name, arguments=arguments)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=_text(outcome.document))],
        structuredContent=outcome.document,
        isError=outcome.is_error,
    )


def _text(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False)


# --- One HTTP request -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


def respond(*, method: str, path: str, query_string: bytes, headers: dict[str, str], body: bytes, tenant: Tenant) -> Answer:
    """The SDK's answer to one MCP request of ``tenant``."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "root_path": "",
        "query_string": query_string,
        "headers": [(name.lower().encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()],
        "client": None,
        "server": None,
        "state": {"tenant": tenant},
    }
    return async_to_sync(_exchange)(scope, body)


async def _exchange(scope: dict[str, Any], body: bytes) -> Answer:
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        # The view has read the body already, within DATA_UPLOAD_MAX_MEMORY_SIZE.
        max_request_body_size=max(len(body), settings.DATA_UPLOAD_MAX_MEMORY_SIZE, 1),
    )
    start: dict[str, Any] = {}
    chunks: list[bytes] = []
    answered = anyio.Event()
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await answered.wait()  # nothing more comes: the client is gone once it has its answer
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            start.update(message)
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                answered.set()

    async with manager.run():
        await manager.handle_request(scope, receive, send)
    return Answer(
        status=start.get("status", 500),
        headers=[(name.decode("latin-1"), value.decode("latin-1")) for name, value in start.get("headers", [])],
        body=b"".join(chunks),
    )

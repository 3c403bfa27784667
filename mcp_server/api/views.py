"""``/api/v1/mcp/``: the Model Context Protocol's streamable HTTP endpoint, stateless.

It is an API view like any other: the key is checked by ``tenants.authentication`` (with its cache,
revocation, expiry and the per-address count of failed keys), the tenant is throttled, and a
refusal is the API's JSON error (401 ``not_authenticated`` or ``authentication_failed`` with
``WWW-Authenticate: Api-Key``, 429 ``throttled``). Many MCP clients can only send a bearer token, so
here, and only here, ``Authorization: Bearer <key>`` is read as ``Authorization: Api-Key <key>``.

A POST carries one JSON-RPC message and is answered by one JSON document (``mcp_server.server``);
a POST without an ``Accept`` header (or with ``*/*``) is read as accepting JSON.
The server keeps no session, so it offers no stream to GET and no session to DELETE: both answer
405 ``method_not_allowed``, as the protocol lets a stateless server do.
"""

from typing import Any

from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework_api_key.permissions import KeyParser

from conversations.api.views import TenantAPIView
from mcp_server import server
from tenants.authentication import TenantApiKeyAuthentication

# Hop-by-hop and framing headers are the WSGI server's to write.
NOT_FORWARDED = frozenset({"content-length", "transfer-encoding", "connection"})
# The protocol asks clients to list both; a request that names no type, or any type, accepts JSON.
ACCEPT_ANY = ("", "*/*")
MCP_ACCEPT = "application/json, text/event-stream"


class ApiKeyOrBearerParser(KeyParser):
    """The key of ``Authorization: Api-Key <key>`` or of ``Authorization: Bearer <key>``."""

    def get_from_authorization(self, request: Any) -> str | None:
        keyword, _, key = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if keyword.lower() == "bearer" and key:
            return key
        return super().get_from_authorization(request)


class McpKeyAuthentication(TenantApiKeyAuthentication):
    key_parser = ApiKeyOrBearerParser()


class McpView(TenantAPIView):
    authentication_classes = [McpKeyAuthentication]

    @extend_schema(exclude=True)  # JSON-RPC, described by the tools it lists (README: MCP)
    def post(self, request: Request) -> HttpResponse:
        django_request = request._request
        headers = dict(django_request.headers)
        if headers.get("Accept", "").strip() in ACCEPT_ANY:
            headers["Accept"] = MCP_ACCEPT
        answer = server.respond(
            method="POST",
            path=django_request.path,
            query_string=django_request.META.get("QUERY_STRING", "").encode("latin-1"),
            headers=headers,
            body=django_request.body,
            tenant=self.tenant,
        )
        response = HttpResponse(answer.body, status=answer.status)
        for name, value in answer.headers:
            if name.lower() not in NOT_FORWARDED:
                response[name] = value
        return response

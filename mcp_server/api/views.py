"""``/api/v1/mcp/``: the Model Context Protocol's streamable HTTP endpoint, stateless.

It is an API view like any other: the key is checked by ``tenants.authentication`` (with its cache,
revocation, expiry and the per-address count of failed keys), the tenant is throttled, and a
refusal is the API's JSON error (401 ``not_authenticated`` or ``authentication_failed`` with
``WWW-Authenticate: Api-Key``, 429 ``throttled``). Many MCP clients can only send a bearer token, so
here, and only here, ``Authorization: Bearer <key>`` is read as ``Authorization: Api-Key <key>``.

A POST carries one JSON-RPC message and is answered by one JSON document (``mcp_server.server``).
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
        answer = server.respond(
            method="POST",
            path=django_request.path,
            query_string=django_request.META.get("QUERY_STRING", "").encode("latin-1"),
            headers=dict(django_request.headers),
            body=django_request.body,
            tenant=self.tenant,
        )
        response = HttpResponse(answer.body, status=answer.status)
        for name, value in answer.headers:
            if name.lower() not in NOT_FORWARDED:
                response[name] = value
        return response

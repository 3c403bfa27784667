"""The API's OpenAPI schema (drf-spectacular): every operation documents its error answers, each with
the one error body (``ErrorDocument``: ``{"error": {"code", "message", "details"}}``)."""

from typing import Any

from drf_spectacular import openapi
from drf_spectacular.utils import OpenApiResponse

from conversations.api.serializers import ErrorDocumentSerializer

# Status -> what it means here; every operation may answer these.
COMMON_ERRORS = {
    400: "validation_error, parse_error or limit_exceeded: error.message and error.details name the field "
    "(and, for a limit, the bound and its setting).",
    401: "not_authenticated or authentication_failed: no valid key (Authorization: Api-Key <key>).",
    404: "not_found: no such resource for this tenant, or no such endpoint.",
    405: "method_not_allowed: the path does not take this method (the Allow header lists those it takes).",
    414: "uri_too_long: the URI is longer than MEMORY_MAX_URL_LENGTH.",
    429: "throttled: the tenant's MEMORY_RATE_LIMIT was reached; retry after the Retry-After header's seconds.",
    500: "server_error: the service failed; the request is logged.",
    503: "service_unavailable (or a code naming the backend): retry after the Retry-After header's seconds.",
}
# Also answered by the operations that take a body.
BODY_ERRORS = {
    413: "payload_too_large: the body is over DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE (a chunked body too).",
    415: "unsupported_media_type: send Content-Type: application/json.",
}
BODY_METHODS = ("POST", "PUT", "PATCH")

# The tag of an operation: the resource its path names last (``/conversations/{id}/messages/`` is
# messages, ``/users/{id}/search/status/`` search); the SPECTACULAR_SETTINGS TAGS describe each.
TAG_OF_SEGMENT = {"window": "context", "memory": "context"}


def path_tag(path: str) -> str:
    """The tag of an API path: its first named segment after the conversation or user it belongs to."""
    segments = [segment for segment in path.split("/") if segment and not segment.startswith("{")]
    owned = segments[2] in ("conversations", "users") and len(segments) > 3  # past "api", "v1" and the owner
    resource = segments[3] if owned else segments[2]
    return TAG_OF_SEGMENT.get(resource, resource)


class AutoSchema(openapi.AutoSchema):
    def get_tags(self) -> list[str]:
        return [path_tag(self.path)]

    def get_description(self) -> str:
        """The operation's own description: never a docstring the view inherits (every operation would
        otherwise be described as TenantAPIView, "Base of every tenant API view")."""
        description = super().get_description()
        if "__doc__" not in vars(type(self.view)) or type(self.view).__doc__ is None:
            method_doc = getattr(self.view, self.method.lower(), None).__doc__ or ""
            return description if method_doc.strip() else ""
        return description

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        bodies = super()._get_response_bodies(direction)
        errors = COMMON_ERRORS | (BODY_ERRORS if self.method in BODY_METHODS else {})
        for status, description in sorted(errors.items()):
            bodies.setdefault(str(status), {"description": description})
        for status, body in bodies.items():
            if status.startswith(("4", "5")) and "content" not in body:
                documented = OpenApiResponse(ErrorDocumentSerializer, description=body.get("description", ""))
                bodies[status] = self._get_response_for_code(documented, status, direction=direction)
        return bodies

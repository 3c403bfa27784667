"""The error surface as gunicorn serves it (``gunicorn.conf.py`` and ``ApiErrorMiddleware``): a long
URI is the API's JSON 414, and a chunked body (no Content-Length) is read within the size limit or
refused with a JSON 413, never taken for empty."""

import http.client
import json
from collections.abc import Iterator
from typing import Any

from django.conf import settings

from conversations.models import Conversation
from tenants import services as tenant_services


def connection_to(web: Any) -> http.client.HTTPConnection:
    return http.client.HTTPConnection("127.0.0.1", web.port, timeout=30)


def key_of(tenant: Any) -> str:
    return tenant_services.api_key_create(tenant=tenant, name="error-surface")[1]


def error_of(response: http.client.HTTPResponse, status: int, code: str) -> dict[str, Any]:
    body = response.read()
    assert response.status == status, body[:300]
    assert response.getheader("Content-Type", "").startswith("application/json"), body[:300]
    error = json.loads(body)["error"]
    assert error["code"] == code, error
    return error


def pieces(body: bytes, size: int = 65_536) -> Iterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def test_a_uri_past_the_apis_limit_but_within_gunicorns_is_the_json_414(web, tenant):
    connection = connection_to(web)
    path = "/api/v1/conversations/?user_id=" + "u" * (settings.MEMORY_MAX_URL_LENGTH + 10)
    assert len(f"GET {path} HTTP/1.1") < 8190  # gunicorn.conf.py's limit_request_line

    connection.request("GET", path, headers={"Authorization": f"Api-Key {key_of(tenant)}"})

    error = error_of(connection.getresponse(), 414, "uri_too_long")
    assert "MEMORY_MAX_URL_LENGTH" in error["message"]


def test_an_unknown_route_is_the_json_404_under_gunicorn(web, tenant):
    connection = connection_to(web)

    connection.request("GET", "/api/v1/users/a/b/", headers={"Authorization": f"Api-Key {key_of(tenant)}"})

    error_of(connection.getresponse(), 404, "not_found")


def test_a_chunked_body_is_read_by_the_api_not_taken_for_empty(web, tenant):
    connection = connection_to(web)

    connection.request(
        "POST",
        "/api/v1/conversations/",
        body=pieces(b'{"conversation_id": "chunked-live", "user_id": "u1"}', size=7),
        headers={"Authorization": f"Api-Key {key_of(tenant)}", "Content-Type": "application/json"},
        encode_chunked=True,
    )

    response = connection.getresponse()
    assert response.status == 201, response.read()[:300]
    assert json.loads(response.read())["user_id"] == "u1"
    assert Conversation.objects.for_tenant(tenant).filter(conversation_id="chunked-live").exists()


def test_a_chunked_body_over_the_limit_is_the_json_413_and_nothing_is_written(web, tenant):
    connection = connection_to(web)
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    body = b'{"conversation_id": "chunked-big", "metadata": {"x": "' + b"y" * limit + b'"}}'

    connection.request(
        "POST",
        "/api/v1/conversations/",
        body=pieces(body),
        headers={"Authorization": f"Api-Key {key_of(tenant)}", "Content-Type": "application/json"},
        encode_chunked=True,
    )

    error = error_of(connection.getresponse(), 413, "payload_too_large")
    assert error["details"]["limit"] == limit
    assert not Conversation.objects.for_tenant(tenant).filter(conversation_id="chunked-big").exists()

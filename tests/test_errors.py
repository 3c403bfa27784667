"""One error surface under /api/ (memoryproject/errors.py and ``ApiErrorMiddleware``): every error
answer is ``{"error": {"code", "message", "details"}}`` with a stable code, DRF view or not; the
admin keeps Django's own pages."""

import io
from typing import Any

import pytest
from django.conf import settings
from django.test import override_settings
from rest_framework.test import APIClient

from conversations import selectors
from conversations.models import Conversation

CONVERSATIONS = "/api/v1/conversations/"


def error_of(answer: Any, status: int, code: str) -> dict[str, Any]:
    assert answer.status_code == status, answer.content
    assert answer["Content-Type"].split(";")[0] == "application/json", answer["Content-Type"]
    error = answer.json()["error"]
    assert error["code"] == code, error
    assert error["message"]
    assert isinstance(error["details"], dict | list)
    return error


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/nothing-here/",
        # Under conversations/, more segments are an id holding "/" (a 400: tests/conversations/test_tool_sequences.py).
        "/api/v1/users/u1/extra/",
        "/api/v1/status/extra/",
        "/api/nothing",
        "/api/",
        "/api/v2/conversations/",
    ],
)
def test_an_unknown_route_under_the_api_is_a_json_404(api, path):
    error = error_of(api.get(path), 404, "not_found")

    assert error["details"]["path"] == path


@pytest.mark.parametrize("method", ["get", "post", "delete"])
def test_a_path_missing_its_trailing_slash_is_a_json_404_naming_the_right_path_not_a_redirect(api, method):
    answer = getattr(api, method)("/api/v1/conversations/c1/messages", {"role": "user", "content": "hi"}, format="json")

    error = error_of(answer, 404, "not_found")
    assert error["details"]["did_you_mean"] == "/api/v1/conversations/c1/messages/"
    assert "/api/v1/conversations/c1/messages/" in error["message"]


def test_the_admin_still_redirects_to_the_trailing_slash_and_keeps_its_html_404(operator_client):
    admin = f"/{settings.ADMIN_PATH}"

    assert operator_client.get(admin.rstrip("/")).status_code == 301
    answer = operator_client.get(f"{admin}no-such-page/")
    assert answer.status_code == 404
    assert "application/json" not in answer["Content-Type"]


@pytest.mark.parametrize(
    ("method", "path"),
    [("put", "/api/v1/status/"), ("patch", CONVERSATIONS), ("post", "/api/schema/"), ("delete", "/api/v1/")],
)
def test_a_wrong_method_is_a_json_405_with_the_allow_header(api, method, path):
    answer = getattr(api, method)(path)

    error_of(answer, 405, "method_not_allowed")
    assert answer["Allow"]


def test_a_body_over_the_limit_is_a_json_413_naming_the_setting(api):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    answer = api.post(CONVERSATIONS, b"x" * (limit + 1), content_type="application/json")

    error = error_of(answer, 413, "payload_too_large")
    assert "DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE" in error["message"]
    assert error["details"] == {"field": "body", "size": limit + 1, "limit": limit}


def test_a_body_over_the_limit_is_a_413_on_a_route_that_does_not_exist_too(api):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE

    error_of(api.post("/api/v1/nothing/", b"x" * (limit + 1), content_type="application/json"), 413, "payload_too_large")


def chunked(api: APIClient, path: str, body: bytes) -> Any:
    """A POST whose body comes with Transfer-Encoding: chunked and no Content-Length, as a WSGI server
    hands it on (the server has already decoded the chunks)."""
    return api.post(
        path,
        b"",
        content_type="application/json",
        CONTENT_LENGTH="",
        HTTP_TRANSFER_ENCODING="chunked",
        **{"wsgi.input": io.BytesIO(body)},
    )


def test_a_chunked_body_within_the_limit_is_read_not_taken_for_empty(api, tenant):
    answer = chunked(api, CONVERSATIONS, b'{"conversation_id": "chunked-1"}')

    assert answer.status_code == 201, answer.content
    assert Conversation.objects.for_tenant(tenant).filter(conversation_id="chunked-1").exists()


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_chunked_body_over_the_limit_is_a_413_and_nothing_is_written(api, tenant):
    body = b'{"conversation_id": "chunked-2", "metadata": {"x": "' + b"y" * 2000 + b'"}}'

    error = error_of(chunked(api, CONVERSATIONS, body), 413, "payload_too_large")

    assert error["details"]["limit"] == 1000
    assert not Conversation.objects.for_tenant(tenant).filter(conversation_id="chunked-2").exists()


@override_settings(MEMORY_MAX_URL_LENGTH=100)
def test_a_uri_over_the_limit_is_a_json_414_naming_the_setting(api):
    error = error_of(api.get(CONVERSATIONS, {"user_id": "u" * 100}), 414, "uri_too_long")

    assert "MEMORY_MAX_URL_LENGTH=100" in error["message"]
    assert error["details"]["limit"] == 100


def test_a_body_of_another_media_type_is_a_json_415(api):
    error_of(api.post(CONVERSATIONS, b"conversation_id=c1", content_type="text/plain"), 415, "unsupported_media_type")


def test_malformed_json_is_a_json_400_parse_error(api):
    error_of(api.post(CONVERSATIONS, b'{"conversation_id": ', content_type="application/json"), 400, "parse_error")


def test_an_unhandled_exception_is_a_json_500_that_tells_nothing_of_it(api, monkeypatch):
    def broken(**kwargs: Any) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(selectors, "conversation_list", broken)
    api.raise_request_exception = False

    answer = api.get(CONVERSATIONS)

    error_of(answer, 500, "server_error")
    assert b"secret internals" not in answer.content


def test_a_disallowed_host_under_the_api_is_a_json_400(api):
    with override_settings(ALLOWED_HOSTS=["memory.example"]):
        answer = api.get(CONVERSATIONS, HTTP_HOST="evil.example")

    error_of(answer, 400, "bad_request")


def test_an_error_a_view_answers_in_html_becomes_the_json_document(api, monkeypatch):
    from django.http import HttpResponseNotFound

    from conversations.api import views

    monkeypatch.setattr(views.StatusView, "get", lambda self, request: HttpResponseNotFound("<h1>gone</h1>"))

    error_of(api.get("/api/v1/status/"), 404, "not_found")

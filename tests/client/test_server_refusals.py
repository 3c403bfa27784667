"""What gunicorn refuses before Django sees a request (``memoryproject.gunicorn_worker``): a request
line or headers past its bounds, and bytes that are not HTTP, are answered in the API's JSON error
document with a status that says which, never an HTML page; the next request is served as usual."""

import json
import socket
from typing import Any

import pytest


def exchange(web: Any, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``raw`` on a new connection; the status, headers and body of the answer."""
    with socket.create_connection(("127.0.0.1", web.port), timeout=30) as connection:
        connection.sendall(raw)
        received = b""
        while chunk := connection.recv(65_536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in header_lines)}
    return int(status_line.split()[1]), headers, body


@pytest.mark.parametrize(
    ("raw", "status", "code", "advice"),
    [
        (b"GET /api/v1/conversations/?q=" + b"x" * 9000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long", "8190 bytes"),
        (
            b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 9000 + b"\r\n\r\n",
            431,
            "request_header_fields_too_large",
            "8190 bytes",
        ),
        (
            b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: 1\r\n" % n for n in range(120)) + b"\r\n",
            431,
            "request_header_fields_too_large",
            "at most 100 headers",
        ),
        (b"GET /admin/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 9000 + b"\r\n\r\n", 431, "request_header_fields_too_large", ""),
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "bad_request", "not valid HTTP"),
        (b"GET /api/v1/ HTTP/9.9\r\nHost: x\r\n\r\n", 400, "bad_request", "not valid HTTP"),
        (b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400, "bad_request", "not valid HTTP"),
    ],
    ids=["request-line", "header-size", "header-count", "header-size-outside-the-api", "garbage", "version", "header-name"],
)
def test_what_gunicorn_refuses_is_the_apis_json_error(web: Any, raw: bytes, status: int, code: str, advice: str) -> None:
    answered, headers, body = exchange(web, raw)

    assert answered == status, body[:300]
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    error = json.loads(body)["error"]
    assert error["code"] == code
    assert advice in error["message"]
    assert set(error) == {"code", "message", "details"}


def test_the_server_answers_the_next_request_after_a_refusal(web: Any) -> None:
    exchange(web, b"NOT HTTP\r\n\r\n")
    status, headers, _ = exchange(web, b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert status in (200, 401)
    assert headers["content-type"].startswith("application/json")


def test_the_workers_codes_are_the_apis_codes_of_their_statuses() -> None:
    """The worker writes its codes itself (gunicorn's master imports it before Django is set up):
    each is the stable code ``memoryproject.errors`` gives its status."""
    from memoryproject.errors import CODES
    from memoryproject.gunicorn_worker import REFUSALS

    for _, status, _, code, _ in REFUSALS:
        assert CODES.get(status, code) == code, status

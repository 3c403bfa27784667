"""gunicorn's worker, answering the requests gunicorn itself refuses in the API's JSON error document.

A request line past ``limit_request_line``, a header past ``limit_request_field_size`` or beyond
``limit_request_fields``, or bytes that are not HTTP never reach Django: gunicorn answers them itself,
with an HTML page. Every answer of the service is ``{"error": {"code", "message", "details"}}``
instead, with the stable code of its status (``memoryproject.errors.CODES``) and a message saying
what to change. The path of such a request is not known (it may not have been read), so the answer
is JSON whatever the path. Imported by gunicorn's master before Django is set up: nothing here
imports Django.
"""

import json
from typing import Any

from gunicorn.http import errors
from gunicorn.workers.gthread import ThreadWorker

# The exception gunicorn raises, the status, the code, and what to do; the exception's own text
# goes in ``details.reason``.
REFUSALS: tuple[tuple[type[Exception], int, str, str, str], ...] = (
    (
        errors.LimitRequestLine,
        414,
        "URI Too Long",
        "uri_too_long",
        "The request line is longer than the server reads ({limit_request_line} bytes): shorten the URL, "
        "or send long values in the request body.",
    ),
    (
        errors.LimitRequestHeaders,
        431,
        "Request Header Fields Too Large",
        "request_header_fields_too_large",
        "The request's headers are larger than the server reads (at most {limit_request_fields} headers of "
        "{limit_request_field_size} bytes each): send fewer or shorter headers.",
    ),
    (errors.ExpectationFailed, 417, "Expectation Failed", "expectation_failed", "The Expect header can not be met."),
    (errors.ForbiddenProxyRequest, 403, "Forbidden", "permission_denied", "Proxy headers from this address are not trusted."),
    (
        errors.UnsupportedTransferCoding,
        501,
        "Not Implemented",
        "not_implemented",
        "The request's Transfer-Encoding is not supported: send the body with Content-Length or chunked.",
    ),
    (
        errors.ParseException,
        400,
        "Bad Request",
        "bad_request",
        "The request is not valid HTTP/1.1: check its request line and headers.",
    ),
)


# Not the client's fault: a header the application tried to send, the server's own configuration.
SERVER_FAULTS = (errors.InvalidResponseHeader, errors.InvalidResponseHeaderName, errors.ConfigurationProblem)


def refusal(exc: BaseException, settings: dict[str, Any]) -> tuple[int, str, bytes]:
    """The status, reason and JSON body that answer ``exc`` (500 for what is not the client's fault)."""
    found = next(
        (entry for entry in REFUSALS if isinstance(exc, entry[0]) and not isinstance(exc, SERVER_FAULTS)),
        None,
    )
    if found is None:
        status, reason, code = 500, "Internal Server Error", "server_error"
        message, details = (
            "The service failed to answer this request; it has been logged. Retry, and report it if it persists.",
            {},
        )
    else:
        _, status, reason, code, message = found
        details = {"reason": str(exc)}
    body = {"error": {"code": code, "message": message.format(**settings), "details": details}}
    return status, reason, json.dumps(body).encode()


class ApiThreadWorker(ThreadWorker):
    """gunicorn's threaded worker (``gthread``), whose own refusals are the API's JSON errors."""

    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        limits = {
            name: getattr(self.cfg, name) for name in ("limit_request_line", "limit_request_fields", "limit_request_field_size")
        }
        status, reason, body = refusal(exc, limits)
        if status == 500:
            self.log.exception("Error handling request %s", getattr(req, "uri", "(no URI read)"))
        else:
            self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        head = (
            f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        try:
            client.sendall(head.encode("latin-1") + body)
        except OSError:
            self.log.debug("Failed to send error message.")

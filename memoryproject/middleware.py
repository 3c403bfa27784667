"""The project's own middleware: the request log line, and the browser-only middleware the API skips.

``RequestLogMiddleware`` gives every request an id and writes one structured line when it ends
(``request_finished``: ``code``, ``request``, ``user_agent``), with ``request_id``, ``ip`` and
``user_id`` bound to structlog's context so that every line logged while the request runs carries
them too. It keeps django-structlog's event names, fields and levels (INFO, WARNING for a 4xx, ERROR
for a 5xx, ``request_failed`` with the traceback for an unhandled exception) for less work: the user
is read only on a browser request, and a line below the logger's level (``memoryproject.requests``)
is never built.

``client_ip`` (``tenants.addresses``) is the one answer to "who is calling" for the log, the API's throttle of failed
authentications and the admin's login lockout. ``X-Forwarded-For`` is believed only when the
connection comes from a proxy in ``MEMORY_TRUSTED_PROXIES`` (CIDRs), and then read from the right:
the client is the rightmost address that is not itself a trusted proxy. Anything a client writes into
the header to the left of that is ignored, so no client can choose the address it is counted under.

``ApiErrorMiddleware`` keeps one error surface under ``/api/``: a request line longer than
``MEMORY_MAX_URL_LENGTH`` is a 414 and a body over ``DATA_UPLOAD_MAX_MEMORY_SIZE`` a 413 (a chunked
body, which has no Content-Length, is read here up to that limit, never taken for empty), and any
error answer that is not already the JSON error document (Django's, a server's) becomes one. Django's
own 400, 403, 404 and 500 handlers answer that document too (``memoryproject.errors``), and
``CommonMiddleware`` does not redirect a path missing its trailing slash under ``/api/``: the 404
names the path with the slash instead (a redirected POST would lose its body).

The API under ``API_PREFIX`` is called with an API key: it has no session, no logged-in user and no
flash messages. ``SessionMiddleware``, ``AuthenticationMiddleware`` and ``MessageMiddleware`` here are
Django's own (so the admin's checks still find them), doing nothing for the API's requests (but the
status page, where an operator's session shows the whole deployment) and all they did before for
every other request (the admin, the schema and the docs).
"""

import io
import logging
import sys
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import structlog
from django.conf import settings
from django.contrib.auth import middleware as auth_middleware
from django.contrib.messages import middleware as messages_middleware
from django.contrib.sessions import middleware as sessions_middleware
from django.core.exceptions import PermissionDenied
from django.core.handlers.wsgi import LimitedStream
from django.core.signals import got_request_exception
from django.http import Http404, HttpRequest, HttpResponse
from django.middleware import common
from django.utils.functional import SimpleLazyObject

from memoryproject import errors
from tenants.addresses import client_ip

API_PREFIX = "/api/v1/"

LOGGER_NAME = "memoryproject.requests"
logger = structlog.get_logger(LOGGER_NAME)
# Asked before a line is built: structlog's own level filter runs only after the context is merged.
level_filter = logging.getLogger(LOGGER_NAME)


# The one API path an operator's admin session may call: the deployment-wide status.
OPERATOR_SESSION_PATHS = frozenset({f"{API_PREFIX}status/"})


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_PREFIX)


class BrowserOnly:
    """Runs the Django middleware it is mixed into for every request except the API's (the status
    page excepted, which an operator may read with the admin's session)."""

    get_response: Callable[[HttpRequest], HttpResponse]

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if is_api(request) and request.path_info not in OPERATOR_SESSION_PATHS:
            return self.get_response(request)
        return super().__call__(request)  # type: ignore[misc]


class SessionMiddleware(BrowserOnly, sessions_middleware.SessionMiddleware):
    pass


class AuthenticationMiddleware(BrowserOnly, auth_middleware.AuthenticationMiddleware):
    pass


class MessageMiddleware(BrowserOnly, messages_middleware.MessageMiddleware):
    pass


class CommonMiddleware(common.CommonMiddleware):
    """Django's own, without the trailing-slash redirect under ``/api/`` (the 404 names the right path)."""

    def should_redirect_with_slash(self, request: HttpRequest) -> bool:
        return not errors.is_under_api(request) and super().should_redirect_with_slash(request)


class ApiErrorMiddleware:
    """Bounds on the request line and the body, and the JSON error document on every error answer,
    under ``/api/``; every other request passes untouched."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if not errors.is_under_api(request):
            return self.get_response(request)
        response = self.refusal(request) or self.get_response(request)
        if response.status_code >= 400 and not response.streaming and not is_json(response):
            response = as_error_document(response)
        return response

    def refusal(self, request: HttpRequest) -> HttpResponse | None:
        """A 414 or 413 answered before anything reads the request, or None."""
        uri = request.get_full_path()
        if len(uri) > settings.MEMORY_MAX_URL_LENGTH:
            return errors.error_response(
                414,
                f"The URI is {len(uri)} characters; the limit is MEMORY_MAX_URL_LENGTH={settings.MEMORY_MAX_URL_LENGTH}.",
                details={"field": "uri", "size": len(uri), "limit": settings.MEMORY_MAX_URL_LENGTH},
            )
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        length = request.META.get("CONTENT_LENGTH") or ""
        if not length and "chunked" in request.META.get("HTTP_TRANSFER_ENCODING", "").lower():
            return read_chunked_body(request, limit)
        if length.isdigit() and int(length) > limit:
            return too_large(int(length), limit)
        return None


def too_large(size: int | None, limit: int) -> HttpResponse:
    told = f"{size} bytes" if size is not None else f"over {limit} bytes"
    response = errors.error_response(
        413,
        f"The request body is {told}; the limit is DJANGO_DATA_UPLOAD_MAX_MEMORY_SIZE={limit}.",
        details={"field": "body", "size": size, "limit": limit},
    )
    response["Connection"] = "close"  # the rest of the body is never read
    return response


def read_chunked_body(request: HttpRequest, limit: int) -> HttpResponse | None:
    """A chunked body (no Content-Length: Django would read nothing) read here, at most ``limit``
    bytes, and handed on with its length; longer, a 413 without reading further."""
    stream = request.environ["wsgi.input"]
    parts, size = [], 0
    while size <= limit:
        part = stream.read(limit + 1 - size)
        if not part:
            break
        parts.append(part)
        size += len(part)
    if size > limit:
        return too_large(None, limit)
    body = b"".join(parts)
    request.META["CONTENT_LENGTH"] = str(len(body))
    request._stream = LimitedStream(io.BytesIO(body), len(body))  # type: ignore[attr-defined]
    return None


def is_json(response: HttpResponse) -> bool:
    return response.get("Content-Type", "").split(";")[0].strip() == "application/json"


def as_error_document(response: HttpResponse) -> HttpResponse:
    """An error answer that is not the service's document (Django's, a renderer's) made into it, with
    the status and the headers that matter to a client kept."""
    status = response.status_code
    message = errors.MESSAGES.get(status) or f"{status} {response.reason_phrase}."
    replaced = errors.error_response(status, message)
    for header in ("Allow", "Retry-After", "WWW-Authenticate", "Connection", "Vary"):
        if header in response:
            replaced[header] = response[header]
    return replaced


def level_for_status(status_code: int) -> int:
    if 400 <= status_code < 500:
        return logging.WARNING
    if 500 <= status_code < 600:
        return logging.ERROR
    return logging.INFO


# Query parameters whose values are counts, flags and choices, never what a user said: the only ones
# a request line shows unless MEMORY_LOG_CONTENT is on (a search's ``q``, a subject, a date are "...").
LOGGED_PARAMETERS = frozenset(
    {
        "limit",
        "skip",
        "offset",
        "top_k",
        "role",
        "kind",
        "mode",
        "days",
        "archived",
        "include_archived",
        "include_past",
        "refresh_ttl",
        "format",
    }
)


def request_line(request: HttpRequest) -> str:
    """The method and the path, with the query's parameter names and only the values that say
    nothing about anyone (``LOGGED_PARAMETERS``); every value when MEMORY_LOG_CONTENT is on."""
    if settings.MEMORY_LOG_CONTENT or not request.GET:
        return f"{request.method} {request.get_full_path()}"
    shown = [(name, value if name in LOGGED_PARAMETERS else "...") for name, values in request.GET.lists() for value in values]
    return f"{request.method} {request.get_full_path().partition('?')[0]}?{urlencode(shown)}"


def user_id(request: HttpRequest) -> Any:
    """The logged-in user's pk on a browser request; None on the API's (a tenant's key is no user).
    Reading it leaves the session unmarked as accessed, so the answer does not vary on the cookie."""
    if is_api(request) or not hasattr(request, "user"):
        return None
    session = getattr(request, "session", None)
    accessed = session.accessed if session is not None else None
    user = request.user
    value = getattr(user, "pk", None) if user is not None else None
    if accessed is False:

        def get_user() -> Any:
            request.session.accessed = True
            return user

        request.user = SimpleLazyObject(get_user)
        request.session.accessed = False
    return str(value) if isinstance(value, uuid.UUID) else value


class RequestLogMiddleware:
    """One ``request_finished`` line per request, and its id on every line logged while it runs."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        structlog.contextvars.bind_contextvars(request_id=str(uuid.uuid4()), ip=client_ip(request), user_id=user_id(request))
        try:
            response = self.get_response(request)
            level = level_for_status(response.status_code)
            if not hasattr(request, "_failure_logged") and level_filter.isEnabledFor(level):
                structlog.contextvars.bind_contextvars(user_id=user_id(request))
                logger.log(
                    level,
                    "request_finished",
                    code=response.status_code,
                    request=request_line(request),
                    user_agent=request.META.get("HTTP_USER_AGENT"),
                )
            return response
        finally:
            structlog.contextvars.clear_contextvars()


def request_failed(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """An exception no view handled (Django answers 500): logged once, with its traceback, in place
    of the request's ``request_finished`` line."""
    error = sys.exc_info()[1]
    if request is None or hasattr(request, "_failure_logged") or isinstance(error, Http404 | PermissionDenied):
        return
    request._failure_logged = True  # type: ignore[attr-defined]
    structlog.contextvars.bind_contextvars(user_id=user_id(request))
    logger.exception("request_failed", code=500, request=request_line(request))


got_request_exception.connect(request_failed, dispatch_uid="memoryproject.middleware.request_failed")

"""The API's error document for the answers no DRF view gives: Django's own 400, 403, 404 and 500
handlers, and the refusals of ``memoryproject.middleware.ApiErrorMiddleware`` (413, 414, 411).

Under ``/api/`` every error is ``{"error": {"code", "message", "details"}}`` with a stable ``code``, as
a DRF view answers it (``conversations.api.errors``); everywhere else (the admin) Django's own pages stay.
"""

from typing import Any

from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import Resolver404, resolve
from django.views import defaults

API_ROOT = "/api/"

# The stable code of each status an answer may carry without a code of its own.
CODES = {
    400: "bad_request",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "request_timeout",
    411: "length_required",
    413: "payload_too_large",
    414: "uri_too_long",
    415: "unsupported_media_type",
    429: "throttled",
    431: "request_header_fields_too_large",
    500: "server_error",
    502: "bad_gateway",
    503: "service_unavailable",
    504: "gateway_timeout",
}
MESSAGES = {
    400: "The request is not valid.",
    403: "This request is not allowed.",
    404: "Nothing is here.",
    500: "The service failed to answer this request; it has been logged. Retry, and report it if it persists.",
}


def is_under_api(request: HttpRequest) -> bool:
    return request.path_info.startswith(API_ROOT)


def error_response(status: int, message: str, *, code: str | None = None, details: Any = None) -> JsonResponse:
    """The API's error document as a plain Django answer."""
    # Imported here: DRF's views module, which it imports, loads the authentication classes, which
    # import this module's middleware neighbour (the client address) in turn.
    from conversations.api.errors import error_body

    return JsonResponse(error_body(code or CODES.get(status, "error"), message, details), status=status)


def not_found_response(request: HttpRequest) -> JsonResponse:
    """A 404 naming the path; when the same path with a trailing slash exists, the details say so
    (the API does not redirect: a redirected POST would lose its body)."""
    details: dict[str, Any] = {"path": request.path}
    if not request.path_info.endswith("/"):
        try:
            resolve(request.path_info + "/")
        except Resolver404:
            pass
        else:
            details["did_you_mean"] = request.path + "/"
    message = f"No endpoint answers {request.path}."
    if "did_you_mean" in details:
        message += f" API paths end with a slash: {details['did_you_mean']}"
    return error_response(404, message, details=details)


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_under_api(request):
        return defaults.bad_request(request, exception)
    if isinstance(exception, RequestDataTooBig):
        return error_response(413, f"The request body is too large: {exception}")
    return error_response(400, MESSAGES[400])


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_under_api(request):
        return defaults.permission_denied(request, exception)
    return error_response(403, MESSAGES[403])


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    if not is_under_api(request):
        return defaults.page_not_found(request, exception)
    return not_found_response(request)


def server_error(request: HttpRequest) -> HttpResponse:
    if not is_under_api(request):
        return defaults.server_error(request)
    return error_response(500, MESSAGES[500])

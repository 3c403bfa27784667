"""Every error answers JSON ``{"error": {"code", "message", "details"}}`` with a stable ``code``."""

from typing import Any

from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from core.exceptions import MemoryServiceError

DRF_CODES = {
    exceptions.ValidationError: "validation_error",
    exceptions.ParseError: "parse_error",
    exceptions.AuthenticationFailed: "authentication_failed",
    exceptions.NotAuthenticated: "not_authenticated",
    exceptions.PermissionDenied: "permission_denied",
    exceptions.NotFound: "not_found",
    exceptions.MethodNotAllowed: "method_not_allowed",
    exceptions.NotAcceptable: "not_acceptable",
    exceptions.UnsupportedMediaType: "unsupported_media_type",
    exceptions.Throttled: "throttled",
}


def error_body(code: str, message: str, details: Any = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "details": details or {}}}


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, MemoryServiceError):
        response = Response(error_body(exc.code, exc.message, exc.details), status=exc.status)
        retry_after = getattr(exc, "retry_after", None)  # a 503, and refusals that a wait resolves (409, 429)
        if retry_after is not None:
            response["Retry-After"] = str(retry_after)
        return response
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, Http404):  # DRF answers a Django 404 as its own NotFound
        exc = exceptions.NotFound(str(exc) or "Not found.")
    code = next((code for kind, code in DRF_CODES.items() if isinstance(exc, kind)), None)
    if code is None:
        code = getattr(exc, "default_code", "error")
    if isinstance(exc, exceptions.ValidationError):
        message = _first_message(exc.detail) or "The request is not valid."
        response.data = error_body(code, message, exc.detail)
    else:
        response.data = error_body(code, str(getattr(exc, "detail", exc)))
    if response.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
        response["Retry-After"] = "5"
    return response


def _first_message(detail: Any, path: str = "") -> str:
    """The first validation message, prefixed with the field it is about."""
    if isinstance(detail, dict):
        for name, value in detail.items():
            found = _first_message(value, f"{path}.{name}" if path else str(name))
            if found:
                return found
    elif isinstance(detail, list):
        for index, value in enumerate(detail):
            found = _first_message(value, f"{path}[{index}]" if isinstance(value, dict | list) else path)
            if found:
                return found
    elif detail:
        return f"{path}: {detail}" if path and path != "non_field_errors" else str(detail)
    return ""

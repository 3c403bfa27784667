"""Errors the services raise; the API turns each into a JSON answer with a stable ``code``."""


class MemoryServiceError(Exception):
    code = "error"
    status = 500

    def __init__(self, message: str, *, details: dict | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details or {}


class NotFound(MemoryServiceError):
    code = "not_found"
    status = 404


class Conflict(MemoryServiceError):
    code = "conflict"
    status = 409


class LimitExceeded(MemoryServiceError):
    """An input bound of DESIGN.md 5.8; the message names the limit."""

    code = "limit_exceeded"
    status = 400


class PayloadTooLarge(LimitExceeded):
    code = "payload_too_large"
    status = 413


class ServiceUnavailable(MemoryServiceError):
    """A backing service is down and the operation cannot be done safely; try again later."""

    code = "service_unavailable"
    status = 503

    def __init__(self, message: str, *, retry_after: int = 5, code: str | None = None, details: dict | None = None) -> None:
        super().__init__(message, details=details)
        self.retry_after = retry_after
        if code:
            self.code = code


class Unstorable(MemoryServiceError):
    """A value PostgreSQL, Redis or JSON would refuse (DESIGN.md 5.9): refused before acknowledgement."""

    code = "validation_error"
    status = 400

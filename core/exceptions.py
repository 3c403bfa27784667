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
    """An input bound was broken; the message names the limit."""

    code = "limit_exceeded"
    status = 400


class PayloadTooLarge(LimitExceeded):
    code = "payload_too_large"
    status = 413


class ClockSkew(MemoryServiceError):
    """A message id stamped (UUIDv7) further ahead of the service's clock than it accepts
    (``conversations.services.message_ids``): the sender's clock is ahead."""

    code = "clock_skew"
    status = 400

    def __init__(self, *, field: str, message_id: str, ahead_seconds: float, limit_seconds: int) -> None:
        super().__init__(
            f"{field} ({message_id}) is a UUIDv7 stamped {ahead_seconds:,.1f} s ahead of the service's clock, more than "
            f"the {limit_seconds} s it accepts; set this client's clock right (NTP), or send a UUIDv4.",
            details={"field": field, "id": message_id, "ahead_seconds": ahead_seconds, "limit_seconds": limit_seconds},
        )


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
    """A value PostgreSQL, Redis or JSON could not store (``core.storable``), refused before
    anything is written. ``details`` name the path of the value (``metadata.items[3]``) and the reason."""

    code = "validation_error"
    status = 400

    def __init__(self, *, field: str, reason: str, advice: str) -> None:
        super().__init__(f"{field} {reason}; {advice}.", details={"field": field, "reason": reason})
        self.field = field
        self.reason = reason
        self.advice = advice

    def __reduce__(self) -> tuple:  # keyword-only arguments: copy.copy rebuilds it from its parts
        return _unstorable, (self.field, self.reason, self.advice)

    def within(self, prefix: str) -> "Unstorable":
        """The same refusal, its path read from ``prefix`` (``messages[2]`` and ``metadata.x``:
        ``messages[2].metadata.x``)."""
        joined = f"{prefix}{self.field}" if self.field.startswith("[") else f"{prefix}.{self.field}"
        return Unstorable(field=joined, reason=self.reason, advice=self.advice)


def _unstorable(field: str, reason: str, advice: str) -> Unstorable:
    return Unstorable(field=field, reason=reason, advice=advice)

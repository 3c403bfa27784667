"""Liveness and readiness probes for a process supervisor or an orchestrator.

Contract
--------
``GET /healthz`` (liveness) answers 200 ``{"status": "alive"}`` without any I/O: the process runs
and serves requests. A supervisor restarts a process that stops answering it, never for a backend
that is down (restarting the web processes would not bring PostgreSQL back).

``GET /readyz`` (readiness) checks, each with its own short timeout, that PostgreSQL answers
``SELECT 1``, Redis answers ``PING`` and a broker connection opens, and says whether this process
can accept a write durably. The write path is "degraded, not down" (docs/architecture.md): with
Redis up a write needs the broker (the persist task is confirmed before the 201), with Redis down it
is committed to PostgreSQL in the request. So:

* ``ready`` (200): every check passes;
* ``degraded`` (200): a backend is down but writes are still accepted durably (PostgreSQL down with
  Redis and the broker up; Redis down with PostgreSQL up);
* ``unavailable`` (503): no write can be accepted (Redis up and the broker down, or Redis and
  PostgreSQL both down); ``message`` names what failed and what to do.

With a read replica (``DATABASE_REPLICA_URL``) it is checked too; a replica that does not answer is
at most ``degraded``: the reads it would serve go to the primary (core/replica.py).

Both answer before any other middleware: a probe speaks plain HTTP to the process's own address,
which neither the SSL redirect nor ``ALLOWED_HOSTS`` would let through, and it is not logged as a
request. They reveal nothing a stranger could use: no URL, host, error text or tenant, only which
kind of backend answers and how fast (the error texts are in ``/api/v1/status/`` for the operators).
A flood of ``/readyz`` costs at most one round of checks per ``REUSE_SECONDS`` in each process.
"""

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse

from conversations import cache
from core.replica import replica_answers, replica_configured

LIVENESS_PATH = "/healthz"
READINESS_PATH = "/readyz"
# Seconds one round of readiness checks answers every probe of this process.
REUSE_SECONDS = 1.0

# What each backend is, in the answer's message (its setting, never its value).
BACKENDS = {
    "database": "PostgreSQL (DATABASE_URL)",
    "cache": "Redis (REDIS_URL)",
    "broker": "the broker (CELERY_BROKER_URL)",
    "replica": "the read replica (DATABASE_REPLICA_URL)",
}


@dataclass(frozen=True)
class Readiness:
    status: str  # "ready", "degraded" or "unavailable"
    checks: dict[str, dict[str, Any]]
    message: str
    # Each failed check's error text, for the operators' pages only: never in the probes' answer.
    errors: dict[str, str] = field(default_factory=dict)
    # The message's first sentence (what does not answer, and what that costs), without the advice
    # that follows it: the words of a page read by someone who cannot act on that advice.
    reason: str = ""

    @property
    def http_status(self) -> int:
        return 503 if self.status == "unavailable" else 200

    def as_json(self) -> dict[str, Any]:
        answer: dict[str, Any] = {"status": self.status, "checks": self.checks}
        if self.message:
            answer["message"] = self.message
        return answer


def database_answers() -> None:
    """A trivial query on this thread's connection (PostgreSQL's connect_timeout bounds the wait)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")


def cache_answers() -> None:
    """A PING on the cache's client (MEMORY_REDIS_CONNECT_TIMEOUT / SOCKET_TIMEOUT bound the wait)."""
    cache.ping()


def broker_answers() -> None:
    """A new broker connection opens, once, without retrying (MEMORY_BROKER_CONNECT_TIMEOUT)."""
    from memoryproject.celery import app

    with app.connection_for_write() as broker:
        broker.ensure_connection(max_retries=0, timeout=settings.CELERY_BROKER_CONNECTION_TIMEOUT)


CHECKS: dict[str, Callable[[], None]] = {
    "database": database_answers,
    "cache": cache_answers,
    "broker": broker_answers,
}


def _run(check: Callable[[], None]) -> tuple[dict[str, Any], str]:
    """The check's result and, when it failed, its error text ("" when it answered)."""
    started = time.perf_counter()
    error_text = ""
    try:
        check()
    except Exception as error:  # whatever the failure (refused, timed out, refused login), it does not answer
        error_text = str(error).strip()[:200] or repr(error)[:200]
        if check is database_answers:
            # A connection that failed mid-use is not reused by the next request of this thread.
            connection.close_if_unusable_or_obsolete()
    return {"ok": not error_text, "latency_ms": round((time.perf_counter() - started) * 1000, 2)}, error_text


def readiness_check() -> Readiness:
    """Run every check and decide whether this process can accept a write durably."""
    named = dict(CHECKS)
    if replica_configured():
        named["replica"] = replica_answers
    ran = {name: _run(check) for name, check in named.items()}
    checks = {name: result for name, (result, _) in ran.items()}
    errors = {name: text for name, (_, text) in ran.items() if text}
    up = {name: result["ok"] for name, result in checks.items()}
    down = [BACKENDS[name] for name, ok in up.items() if not ok]
    if not down:
        return Readiness(status="ready", checks=checks, message="")
    # With Redis up, a write is confirmed by the broker; with Redis down, committed to PostgreSQL.
    accepts_writes = up["broker"] if up["cache"] else up["database"]
    if accepts_writes:
        status = "degraded"
        if all(up[name] for name in CHECKS):  # the replica alone
            consequence = "the reads it would serve go to PostgreSQL (DATABASE_URL)"
        elif up["cache"]:
            consequence = "writes are accepted through Redis and the broker and persisted once PostgreSQL is back"
        else:
            consequence = "writes are committed to PostgreSQL in the request and reads come from PostgreSQL"
    else:
        status = "unavailable"
        consequence = "no write can be accepted"
    reason = f"{' and '.join(down)} {'does' if len(down) == 1 else 'do'} not answer: {consequence}."
    return Readiness(
        status=status,
        checks=checks,
        errors=errors,
        reason=reason,
        message=(
            f"{reason} Check that {'it runs' if len(down) == 1 else 'they run'} and that this process reaches "
            f"{'it' if len(down) == 1 else 'them'}; "
            "GET /api/v1/status/ with the metrics token gives the error texts."
        ),
    )


_last: tuple[float, Readiness] | None = None
_lock = threading.Lock()


def readiness() -> Readiness:
    """The latest round of checks if it is under ``REUSE_SECONDS`` old, else a new one (one at a time)."""
    global _last
    with _lock:
        if _last is not None and time.monotonic() - _last[0] < REUSE_SECONDS:
            return _last[1]
        result = readiness_check()
        _last = (time.monotonic(), result)
        return result


def forget() -> None:
    """Drop the remembered round of checks: the next probe runs them again."""
    global _last
    with _lock:
        _last = None


def _answer(request: HttpRequest, body: dict[str, Any], status: int = 200) -> HttpResponse:
    if request.method not in ("GET", "HEAD"):
        response: HttpResponse = JsonResponse({"status": "method_not_allowed"}, status=405)
        response["Allow"] = "GET, HEAD"
    else:
        response = JsonResponse(body, status=status)
    response["Cache-Control"] = "no-store"
    return response


class HealthProbeMiddleware:
    """First in ``MIDDLEWARE``: answers the two probe paths before host validation, the SSL redirect,
    sessions and the request log; every other request passes through untouched."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path == LIVENESS_PATH:
            return _answer(request, {"status": "alive"})
        if request.path == READINESS_PATH:
            if request.method not in ("GET", "HEAD"):
                return _answer(request, {})
            result = readiness()
            return _answer(request, result.as_json(), result.http_status)
        return self.get_response(request)

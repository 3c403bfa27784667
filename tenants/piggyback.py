"""Reads of Redis that travel with the API key's round trip.

Every request's authentication reads its key's record from Redis (and counts the request in its
tenant's throttle window) before any view runs: one round trip. A view whose answer begins with a read
of Redis, the conversation window's ``LRANGE``, would make a second. When the process has seen the key
before, the authentication knows which tenant the key belonged to then, and sends the view's first
reads in the same pipeline as the key's record, so that a request served from the cache costs one
round trip instead of two.

What keeps it safe:

* Only reads (``READ_COMMANDS``): a request that turns out not to authenticate has changed nothing.
* An answer is used only by a request authenticated as the tenant the reads were made for, and only
  for the very command the view would send now (``answer``). A key that moved to another tenant, or
  a wrong key, has its answers thrown away unread; the view then reads as it always did.
* The view names its reads (``redis_reads``) from the request and the guessed tenant before the
  request is authenticated, so naming them must not fail the request: any error there means no
  reads travel with the key, nothing else.
"""

from dataclasses import dataclass
from typing import Any

import structlog

from tenants.models import Tenant

logger = structlog.get_logger(__name__)

READ_COMMANDS = frozenset({"GET", "MGET", "LRANGE", "HGET", "HMGET", "HGETALL"})
Command = tuple[Any, ...]  # a Redis command and its arguments, as ``execute_command`` takes them


@dataclass(frozen=True)
class Piggybacked:
    """Answers to reads sent with the key's round trip, for ``tenant_slug`` (the guessed tenant)."""

    tenant_slug: str
    answers: dict[Command, Any]


def requested(request: Any, tenant: Tenant) -> list[Command]:
    """The reads the request's view would send first were the request ``tenant``'s: ``redis_reads``
    of the view, when it has one. Never raises: a view that cannot name its reads gets none sent."""
    view = (getattr(request, "parser_context", None) or {}).get("view")
    reads = getattr(view, "redis_reads", None)
    if reads is None:
        return []
    try:
        commands = [tuple(command) for command in reads(request, tenant)]
    except Exception as error:  # an invalid query or id: the view answers it after authentication
        logger.debug("piggyback_reads_unnamed", view=type(view).__name__, error=str(error))
        return []
    if any(str(command[0]).upper() not in READ_COMMANDS for command in commands):
        raise ValueError(f"{type(view).__name__}.redis_reads named a command that is not a read: {commands}")
    return commands


def keep(request: Any, *, tenant_slug: str, commands: list[Command], answers: list[Any]) -> None:
    """Keep the answers to ``commands`` (made for ``tenant_slug``) on the request for its view; an
    answer that is an error is left out, and the view reads that one itself."""
    kept = {command: answer for command, answer in zip(commands, answers, strict=True) if not isinstance(answer, Exception)}
    request._piggybacked = Piggybacked(tenant_slug=tenant_slug, answers=kept)


def answers(request: Any, tenant: Tenant) -> dict[Command, Any]:
    """The answers that travelled with this request's key, if they were made for ``tenant`` (the
    tenant the request authenticated as); none otherwise."""
    piggybacked: Piggybacked | None = getattr(request, "_piggybacked", None)
    if piggybacked is None or piggybacked.tenant_slug != tenant.slug:
        return {}
    return piggybacked.answers

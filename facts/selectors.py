"""Reads: a user's facts (the memory bundle's ``memories``) and their change history.

Every read is scoped to the tenant: the same ``user_id`` in another tenant is another user, whose
facts never appear here. A user without facts has an empty list, not a 404; one fact or one key's
history that does not exist is a 404. Keys are looked up without surrounding whitespace, as they
are stored. Facts live only in PostgreSQL: when it does not answer, a read is a 503.
"""

from datetime import UTC
from typing import Any

from django.db import DatabaseError
from django.db.models import QuerySet

from core.exceptions import NotFound, ServiceUnavailable
from facts.models import UserFact, UserFactChange
from tenants.models import Tenant

# The memory bundle carries the user's 8 most recently updated facts.
CONTEXT_FACTS = 8
HISTORY_PAGE = 50


def database_unavailable() -> ServiceUnavailable:
    return ServiceUnavailable(
        "PostgreSQL is unreachable, and user facts live only there; retry shortly.", code="database_unavailable"
    )


def stored_key(key: str) -> str:
    """The stored form of a key: without surrounding whitespace (writes and lookups both use it)."""
    return key.strip()


def facts_list(*, tenant: Tenant, user_id: str, limit: int | None = None) -> list[UserFact]:
    """The user's facts, most recently updated first (then by key); all of them unless ``limit``."""
    facts = UserFact.objects.for_tenant(tenant).filter(user_id=user_id).order_by("-updated_at", "key")
    if limit is not None:
        facts = facts[:limit]
    try:
        return list(facts)
    except DatabaseError as error:
        raise database_unavailable() from error


def fact_get(*, tenant: Tenant, user_id: str, key: str) -> UserFact:
    key = stored_key(key)
    try:
        fact = UserFact.objects.for_tenant(tenant).filter(user_id=user_id, key=key).first()
    except DatabaseError as error:
        raise database_unavailable() from error
    if fact is None:
        raise NotFound(f"The user has no fact {key!r}.")
    return fact


def fact_changes(*, tenant: Tenant, user_id: str, key: str | None = None) -> QuerySet[UserFactChange]:
    """The user's changes (of one key, or of every key), newest first: a lazy query the API pages."""
    changes = UserFactChange.objects.for_tenant(tenant).filter(user_id=user_id)
    if key is not None:
        changes = changes.filter(key=stored_key(key))
    return changes.order_by("-changed_at", "-id")


def fact_history(
    *, tenant: Tenant, user_id: str, key: str | None = None, limit: int = HISTORY_PAGE, offset: int = 0
) -> list[UserFactChange]:
    """A page of the user's changes (of one key, or of every key), newest first."""
    try:
        return list(fact_changes(tenant=tenant, user_id=user_id, key=key)[offset : offset + limit])
    except DatabaseError as error:
        raise database_unavailable() from error


def fact_to_context(fact: UserFact) -> dict[str, Any]:
    """The shape of a fact in the memory bundle."""
    return {
        "key": fact.key,
        "value": fact.value,
        "updated_at": fact.updated_at.astimezone(UTC).isoformat(),
        "tokenCount": fact.token_count,
    }


def facts_for_context(*, tenant: Tenant, user_id: str, limit: int = CONTEXT_FACTS) -> list[dict[str, Any]]:
    """The user's most recently updated facts for a prompt, in the memory bundle's shape."""
    return [fact_to_context(fact) for fact in facts_list(tenant=tenant, user_id=user_id, limit=limit)]

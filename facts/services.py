"""Writes: set, delete and erase user facts (the memory bundle's ``memories``), keeping their change history.

Facts live only in PostgreSQL: when it does not answer, a write is a 503 and nothing was stored.
Every write of one user's facts is one transaction that first takes a transaction-scoped advisory
lock on (tenant, user). Concurrent writes of the same user therefore queue behind each other: two
first sets of one key never collide on the unique constraint (the second finds the first's row and
updates it), and the per-user limit counts the facts that are really there.

Rules, all checked before anything is written (a batch is all or nothing):

- Every user id, key and value is storable text (``core.storable``): one holding a NUL or a
  lone UTF-16 surrogate is refused with ``Unstorable`` (400 ``validation_error``), like any value the
  service cannot store, before the rules below.
- ``user_id``: not blank, no control characters, at most MEMORY_MAX_ID_LENGTH characters.
- ``key``: surrounding whitespace is dropped, then it must be non-empty, at most
  MEMORY_MAX_FACT_KEY_LENGTH characters, without control characters or "/", and not ".", ".." or
  "history": every key is addressable as one segment of ``/users/{user_id}/facts/{key}/``.
- ``value``: a string (numbers and booleans are refused, never turned into text), not blank, at most
  MEMORY_MAX_FACT_VALUE_CHARS characters.
- A user holds at most MEMORY_MAX_FACTS_PER_USER facts (the tenant's value); updating existing
  facts is always allowed.

A broken limit raises ``LimitExceeded`` and any other broken rule ``InvalidFact``; both answer 400.

History (``UserFactChange``): creating a fact or changing its value adds a "set" change holding the
new value and the one it superseded (null for a new fact); deleting adds a "delete" change holding
the deleted value. Setting the value a fact already holds changes nothing, not even ``updated_at``.
Only ``user_facts_erase`` removes history. Log lines carry no user id, so an erased user leaves no
trace there either.
"""

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import structlog
from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from conversations import tokens
from core.exceptions import LimitExceeded, MemoryServiceError, NotFound
from core.storable import storable_json, storable_text
from facts import selectors
from facts.models import FactAction, UserFact, UserFactChange
from tenants.models import Tenant

logger = structlog.get_logger(__name__)

# Names a key cannot take: the path segments "." and ".." are rewritten by clients, and
# /users/{user_id}/facts/history/ is the user's whole history.
RESERVED_KEYS = frozenset({".", "..", "history"})


class InvalidFact(MemoryServiceError):
    """A user id, key or value that breaks a rule other than a size limit."""

    code = "validation_error"
    status = 400


@dataclass(frozen=True)
class FactWrite:
    fact: UserFact
    created: bool
    # Created, or its value replaced; False when the value sent was the value already held.
    changed: bool


def fact_render(*, key: str, value: str) -> str:
    """A fact as a prompt shows it; its token count is counted on this text."""
    return f"{key}: {value}"


def fact_token_count(*, key: str, value: str) -> int:
    return tokens.count(fact_render(key=key, value=value))


def _has_control_characters(text: str) -> bool:
    return any(unicodedata.category(character) in ("Cc", "Cs") for character in text)


def check_user_id(user_id: Any) -> str:
    if not isinstance(user_id, str) or not user_id.strip():
        raise InvalidFact("A user id is required: a non-blank string.", details={"field": "user_id"})
    storable_text(user_id, field="user_id")
    limit = settings.MEMORY_MAX_ID_LENGTH
    if len(user_id) > limit:
        raise LimitExceeded(
            f"The user id is {len(user_id)} characters; the limit is MEMORY_MAX_ID_LENGTH={limit}.",
            details={"field": "user_id", "size": len(user_id), "limit": limit},
        )
    if _has_control_characters(user_id):
        raise InvalidFact("A user id must not contain control characters.", details={"field": "user_id"})
    return user_id


def check_key(key: Any) -> str:
    """The stored form of a valid key, or the rule it breaks."""
    if not isinstance(key, str):
        raise InvalidFact("A fact key must be a string.", details={"field": "key"})
    storable_text(key, field="key")
    stored = selectors.stored_key(key)
    if not stored:
        raise InvalidFact("A fact key must not be empty or only whitespace.", details={"field": "key"})
    limit = settings.MEMORY_MAX_FACT_KEY_LENGTH
    if len(stored) > limit:
        raise LimitExceeded(
            f"The fact key {stored[:40]!r}... is {len(stored)} characters; the limit is MEMORY_MAX_FACT_KEY_LENGTH={limit}.",
            details={"field": "key", "size": len(stored), "limit": limit},
        )
    if _has_control_characters(stored):
        raise InvalidFact(f"The fact key {stored!r} contains a control character.", details={"field": "key", "key": stored})
    if "/" in stored:
        raise InvalidFact(
            f'The fact key {stored!r} contains "/": a key must fit in one URL path segment.',
            details={"field": "key", "key": stored},
        )
    if stored in RESERVED_KEYS:
        raise InvalidFact(
            f"The fact key {stored!r} is reserved (it names a path of the API); choose another.",
            details={"field": "key", "key": stored},
        )
    return stored


def check_value(value: Any, *, key: str) -> str:
    if not isinstance(value, str):
        raise InvalidFact(
            f"The value of {key!r} must be a string, not {type(value).__name__}: send the text you want stored.",
            details={"field": "value", "key": key},
        )
    storable_json({key: value}, field="facts")  # named by its key: facts.city
    if not value.strip():
        raise InvalidFact(f"The value of {key!r} is blank; delete the fact to remove it.", details={"field": "value", "key": key})
    limit = settings.MEMORY_MAX_FACT_VALUE_CHARS
    if len(value) > limit:
        raise LimitExceeded(
            f"The value of {key!r} is {len(value)} characters; the limit is MEMORY_MAX_FACT_VALUE_CHARS={limit}.",
            details={"field": "value", "key": key, "size": len(value), "limit": limit},
        )
    return value


def _checked_facts(facts: Any) -> dict[str, str]:
    """The facts to write, keyed by their stored key, once every one is valid."""
    if not isinstance(facts, Mapping) or not facts:
        raise InvalidFact("Send at least one fact: an object of keys to values.", details={"field": "facts"})
    checked: dict[str, str] = {}
    for key, value in facts.items():
        stored = check_key(key)
        if stored in checked:
            raise InvalidFact(
                f"Two keys of the batch are the fact {stored!r} once surrounding whitespace is dropped.",
                details={"field": "facts", "key": stored},
            )
        checked[stored] = check_value(value, key=stored)
    return checked


def _lock_user(*, tenant: Tenant, user_id: str) -> None:
    """Queue behind any other write of this user's facts until the transaction ends."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [f"user_facts:{tenant.pk}:{user_id}"])


def _check_room(*, tenant: Tenant, user_id: str, adding: int) -> None:
    limit = tenant.setting("MEMORY_MAX_FACTS_PER_USER")
    held = UserFact.objects.for_tenant(tenant).filter(user_id=user_id).count()
    if held + adding > limit:
        raise LimitExceeded(
            f"The user has {held} facts and this write adds {adding}; the limit is MEMORY_MAX_FACTS_PER_USER={limit}.",
            details={"field": "facts", "size": held + adding, "limit": limit},
        )


def facts_upsert(*, tenant: Tenant, user_id: str, facts: Mapping[str, str]) -> list[FactWrite]:
    """Create or update a batch of one user's facts, all or nothing; one ``FactWrite`` per key, in order."""
    user_id = check_user_id(user_id)
    wanted = _checked_facts(facts)
    now = timezone.now()
    writes: list[FactWrite] = []
    created: list[UserFact] = []
    updated: list[UserFact] = []
    changes: list[UserFactChange] = []
    try:
        with transaction.atomic():
            _lock_user(tenant=tenant, user_id=user_id)
            scoped = UserFact.objects.for_tenant(tenant)
            existing = {fact.key: fact for fact in scoped.filter(user_id=user_id, key__in=list(wanted))}
            new_keys = [key for key in wanted if key not in existing]
            if new_keys:
                _check_room(tenant=tenant, user_id=user_id, adding=len(new_keys))
            for key, value in wanted.items():
                fact = existing.get(key)
                if fact is not None and fact.value == value:
                    writes.append(FactWrite(fact=fact, created=False, changed=False))
                    continue
                changes.append(
                    UserFactChange(
                        tenant=tenant,
                        user_id=user_id,
                        key=key,
                        value=value,
                        previous_value=None if fact is None else fact.value,
                        action=FactAction.SET,
                        changed_at=now,
                    )
                )
                is_new = fact is None
                if is_new:
                    fact = UserFact(tenant=tenant, user_id=user_id, key=key, created_at=now)
                    created.append(fact)
                else:
                    updated.append(fact)
                fact.value = value
                fact.token_count = fact_token_count(key=key, value=value)
                fact.updated_at = now
                writes.append(FactWrite(fact=fact, created=is_new, changed=True))
            if created:
                scoped.bulk_create(created)
            if updated:
                scoped.bulk_update(updated, ["value", "token_count", "updated_at"])
            if changes:
                UserFactChange.objects.for_tenant(tenant).bulk_create(changes)
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    logger.info("facts_set", tenant=tenant.slug, facts=len(writes), created=len(created), updated=len(updated))
    return writes


def fact_set(*, tenant: Tenant, user_id: str, key: str, value: str) -> tuple[UserFact, bool]:
    """Create or update one fact; the bool says whether it was created."""
    (write,) = facts_upsert(tenant=tenant, user_id=user_id, facts={key: value})
    return write.fact, write.created


def facts_set_many(*, tenant: Tenant, user_id: str, facts: dict[str, str]) -> list[UserFact]:
    """Create or update a batch of facts, all or nothing; the facts in the order of ``facts``."""
    return [write.fact for write in facts_upsert(tenant=tenant, user_id=user_id, facts=facts)]


def fact_delete(*, tenant: Tenant, user_id: str, key: str) -> None:
    """Delete a fact; its history keeps it (a "delete" change holding the deleted value)."""
    key = selectors.stored_key(key)
    try:
        with transaction.atomic():
            _lock_user(tenant=tenant, user_id=user_id)
            scoped = UserFact.objects.for_tenant(tenant)
            fact = scoped.filter(user_id=user_id, key=key).only("id", "value").first()
            if fact is None:
                raise NotFound(f"The user has no fact {key!r}.")
            UserFactChange.objects.for_tenant(tenant).create(
                tenant=tenant,
                user_id=user_id,
                key=key,
                value="",
                previous_value=fact.value,
                action=FactAction.DELETE,
                changed_at=timezone.now(),
            )
            scoped.filter(pk=fact.pk).delete()
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    logger.info("fact_deleted", tenant=tenant.slug)


def user_facts_erase(*, tenant: Tenant, user_id: str) -> int:
    """Delete every fact of the user and their whole history; returns how many rows went (both tables).

    Part of erasing a user: afterwards no row of this tenant names ``user_id`` in either table.
    """
    try:
        with transaction.atomic():
            _lock_user(tenant=tenant, user_id=user_id)
            changes, _ = UserFactChange.objects.for_tenant(tenant).filter(user_id=user_id).delete()
            facts, _ = UserFact.objects.for_tenant(tenant).filter(user_id=user_id).delete()
    except DatabaseError as error:
        raise selectors.database_unavailable() from error
    logger.info("user_facts_erased", tenant=tenant.slug, facts=facts, changes=changes)
    return facts + changes

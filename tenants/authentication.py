"""API key authentication: ``Authorization: Api-Key <key>`` names the tenant of the request.

A key's record (its hash, revocation, expiry and tenant) is cached in Redis so that a request needs
no PostgreSQL round trip, and so that writes are still accepted while PostgreSQL is down.
What bounds a revocation is when the record was read, never when it was last used:

- A record is believed for ``MEMORY_AUTH_REVALIDATE`` seconds after it was read from PostgreSQL
  (``verified_at``, taken before the query). After that the next request reads PostgreSQL again and
  writes the new reading back; using a key never extends its record. So a key revoked, a tenant
  deactivated or a key deleted by any path (the admin, a command, a model save, a queryset update,
  raw SQL) is refused on every process within that bound. The known paths (``tenants.services``, the
  model's save and delete signals) also forget the record at once.
- Expiry is compared with the clock on every request.
- While PostgreSQL does not answer, a record read within the last ``MEMORY_AUTH_CACHE_TTL`` seconds
  (its lifetime in Redis) still authenticates; with none, the request is a 503.

A prefix PostgreSQL does not know is remembered as unknown for ``MEMORY_AUTH_UNKNOWN_TTL`` seconds
(a record ``{"unknown": true}`` in the same cache key, forgotten when a key is created), so guessing
the same prefix again costs no query. Every request without a valid key (none, a malformed one, an
unknown prefix, a wrong secret, a revoked or expired key) is counted against its client address
(``tenants.throttling.failure_count``); over the limit it is a 429, and an address over it reaches
PostgreSQL only with the prefix of a key that exists (``tenants.throttling.key_prefix_known``): a
valid key is never refused for its address's failures.
"""

import hmac
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import structlog
from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError
from django.utils import timezone
from rest_framework import authentication, exceptions, permissions
from rest_framework_api_key.permissions import KeyParser

from core.metrics import fallbacks
from core.redis_client import client as redis_client
from core.redis_client import clustered
from tenants import piggyback, throttling
from tenants.models import Tenant, TenantApiKey
from tenants.services import auth_cache_key

logger = structlog.get_logger(__name__)
LAST_USED_RESOLUTION_SECONDS = 60
UNKNOWN = {"unknown": True}

# Per process: when this process last wrote a key's last use, so that a busy key costs one UPDATE a
# minute per process (the record's own ``last_used`` is as old as its reading). Bounded: cleared
# when full. It decides nothing about who is authenticated.
_touched_at: dict[str, float] = {}
MAX_TOUCHED = 10_000


@dataclass(frozen=True)
class TenantPrincipal:
    """The authenticated caller: a tenant, through one of its keys."""

    tenant: Tenant
    key_prefix: str
    is_authenticated: bool = True


class TenantApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Api-Key"
    key_parser = KeyParser()

    def authenticate_header(self, request: Any) -> str:
        return self.keyword

    def authenticate(self, request: Any) -> tuple[TenantPrincipal, str] | None:
        key = self.key_parser.get(request)
        if not key:
            return None
        prefix, _, _ = key.partition(".")
        if not prefix.isalnum():  # generated prefixes are letters and digits: anything else names no key
            self._refuse(request, "The API key is not valid.")
        guessed = throttling.guessed_window(prefix)
        record, count, reachable = self._cached(request, prefix, guessed)
        try:
            record = self._verified(request, key, prefix, record, cache_reachable=reachable)
            tenant = self._check(request, prefix, record)
        except exceptions.AuthenticationFailed:
            throttling.settle_guess(request, prefix=prefix, guessed=guessed, count=count, tenant=None)
            raise
        throttling.settle_guess(request, prefix=prefix, guessed=guessed, count=count, tenant=tenant)
        return TenantPrincipal(tenant=tenant, key_prefix=prefix), prefix

    def _refuse(self, request: Any, message: str) -> None:
        """Count a failed authentication against the client's address, then refuse it: a 401, or a
        429 once the address is over its limit."""
        throttling.failure_count(request)
        raise exceptions.AuthenticationFailed(message)

    def _verified(
        self, request: Any, key: str, prefix: str, record: dict[str, Any] | None, *, cache_reachable: bool
    ) -> dict[str, Any]:
        """A record whose hash the key matches, read from PostgreSQL within ``MEMORY_AUTH_REVALIDATE``
        seconds (or older, while PostgreSQL does not answer). Redis down, the address is not
        checked: the throttle passes requests then, and need not be asked to say so."""
        if record == UNKNOWN:
            self._refuse(request, "The API key is not valid.")
        if record is not None and not self._matches(key, record):
            self._refuse(request, "The API key is not valid.")
        if record is not None and time.time() - record.get("verified_at", 0) <= settings.MEMORY_AUTH_REVALIDATE:
            return record
        if record is None and cache_reachable:
            throttling.failure_check(request, prefix=prefix)  # over its limit, only a real key's prefix reaches PostgreSQL
        try:
            fresh = self._read(prefix)
        except DatabaseError as error:
            if record is None:
                raise ServiceUnavailableAuth() from error
            fallbacks.labels(kind="auth_unverified").inc()
            logger.warning("auth_revalidation_unavailable", prefix=prefix, error=str(error))
            return record  # PostgreSQL down: the record read within MEMORY_AUTH_CACHE_TTL answers
        self._store(prefix, fresh or UNKNOWN, settings.MEMORY_AUTH_CACHE_TTL if fresh else settings.MEMORY_AUTH_UNKNOWN_TTL)
        if fresh is None or not self._matches(key, fresh):
            self._refuse(request, "The API key is not valid.")
        return fresh

    @staticmethod
    def _matches(key: str, record: dict[str, Any]) -> bool:
        return TenantApiKey.objects.key_generator.verify(key, record["hashed_key"])

    def _check(self, request: Any, prefix: str, record: dict[str, Any]) -> Tenant:
        """The key's tenant, or AuthenticationFailed saying why the key is refused."""
        if record["revoked"] or not record["tenant_active"]:
            self._refuse(request, "The API key has been revoked.")
        if record["expiry_date"] and datetime.fromisoformat(record["expiry_date"]) < timezone.now():
            self._refuse(request, "The API key has expired; create a new one.")
        self._touch(prefix, record)
        tenant = Tenant(
            id=record["tenant_id"],
            slug=record["tenant_slug"],
            name=record["tenant_slug"],
            active=True,
            settings=record["tenant_settings"],
        )
        tenant._state.adding = False
        tenant._state.db = "default"
        return tenant

    def _cached(
        self, request: Any, prefix: str, guessed: throttling.Window | None
    ) -> tuple[dict[str, Any] | None, int | None, bool]:
        """The key's cached record, if any; with a guessed throttle window, the window's count after
        counting this request in the same round trip; and whether Redis answered. The view's first
        reads travel in that round trip too when the key's tenant can be guessed (``piggyback``)."""
        cache_key = auth_cache_key(prefix)
        count = None
        try:
            tenant = throttling.guessed_tenant(prefix)
            reads = piggyback.requested(request, tenant) if tenant is not None and not clustered(redis_client()) else []
            if reads and tenant is not None:
                raw, count, answers = throttling.auth_record_with_reads(
                    record_key=cache.make_key(cache_key), tenant_slug=tenant.slug, window=guessed, reads=reads
                )
                piggyback.keep(request, tenant_slug=tenant.slug, commands=reads, answers=answers)
                return (cache.client.decode(raw) if raw is not None else None), count, True
            if guessed is None:
                return cache.get(cache_key), None, True
            raw, count = throttling.auth_record_counted(
                record_key=cache.make_key(cache_key),
                tenant_slug=guessed.tenant_slug,
                throttle_key=guessed.key,
                ttl=guessed.length + 1,
            )
            return (cache.client.decode(raw) if raw is not None else None), count, True
        except Exception as error:  # Redis down: authenticate from PostgreSQL alone
            logger.warning("auth_cache_unavailable", error=str(error))
            return None, count, False

    @staticmethod
    def _read(prefix: str) -> dict[str, Any] | None:
        """The key's record as PostgreSQL holds it now (None: no such key). DatabaseError."""
        verified_at = time.time()  # before the query: a revocation committed during it is not missed
        api_key = TenantApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
        if api_key is None:
            return None
        return {
            "hashed_key": api_key.hashed_key,
            "revoked": api_key.revoked,
            "expiry_date": api_key.expiry_date.isoformat() if api_key.expiry_date else None,
            "tenant_id": api_key.tenant_id,
            "tenant_slug": api_key.tenant.slug,
            "tenant_active": api_key.tenant.active,
            "tenant_settings": api_key.tenant.settings,
            "last_used": api_key.last_used_at.timestamp() if api_key.last_used_at else 0,
            "verified_at": verified_at,
        }

    @staticmethod
    def _store(prefix: str, record: dict[str, Any], timeout: int) -> None:
        try:
            cache.set(auth_cache_key(prefix), record, timeout=timeout)
        except Exception as error:  # Redis down: the next request reads PostgreSQL again
            logger.warning("auth_cache_unavailable", error=str(error))

    @staticmethod
    def _touch(prefix: str, record: dict[str, Any]) -> None:
        """Record the key's last use, at most once a minute per process. The cached record is left
        as it is: its age is that of its reading from PostgreSQL."""
        now = time.time()
        if now - max(record.get("last_used", 0), _touched_at.get(prefix, 0)) <= LAST_USED_RESOLUTION_SECONDS:
            return
        if len(_touched_at) >= MAX_TOUCHED and prefix not in _touched_at:
            _touched_at.clear()
        _touched_at[prefix] = now
        try:
            TenantApiKey.objects.filter(prefix=prefix).update(last_used_at=timezone.now())
        except DatabaseError:
            pass  # last use is informative; PostgreSQL being down must not refuse the request


class ServiceUnavailableAuth(exceptions.APIException):
    status_code = 503
    default_detail = "Authentication is unavailable: neither the key cache nor PostgreSQL answers. Retry shortly."
    default_code = "service_unavailable"


class IsTenantAuthenticated(permissions.BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        if isinstance(request.user, TenantPrincipal):
            return True
        throttling.failure_count(request)  # no key at all: counted like a wrong one
        return False


# --- The deployment's operators -------------------------------------------------------------------


@dataclass(frozen=True)
class OperatorPrincipal:
    """A caller who may see the whole deployment: the metrics scraper's token or a superuser's session."""

    via: str  # "metrics_token" or "superuser_session"
    is_authenticated: bool = True


def metrics_token_matches(authorization: str) -> bool:
    """Whether an Authorization header is ``Bearer <MEMORY_METRICS_TOKEN>`` (never, with no token set)."""
    token = settings.MEMORY_METRICS_TOKEN
    return bool(token) and hmac.compare_digest(authorization.encode(), f"Bearer {token}".encode())


class MetricsTokenAuthentication(authentication.BaseAuthentication):
    """``Authorization: Bearer <MEMORY_METRICS_TOKEN>``: the operators' scraper. Any other bearer is refused."""

    keyword = "Bearer"

    def authenticate_header(self, request: Any) -> str:
        return self.keyword

    def authenticate(self, request: Any) -> tuple[OperatorPrincipal, None] | None:
        authorization = request.META.get("HTTP_AUTHORIZATION", "")
        if authorization.partition(" ")[0].lower() != self.keyword.lower():
            return None
        if not metrics_token_matches(authorization):
            raise exceptions.AuthenticationFailed("The bearer token is not the deployment's metrics token.")
        return OperatorPrincipal(via="metrics_token"), None


class StaffSessionAuthentication(authentication.SessionAuthentication):
    """An operator logged in to the admin: a superuser sees the whole deployment; a staff user bound to
    a tenant is that tenant here, as its API key would be; any other session is no one."""

    def authenticate(self, request: Any) -> tuple[OperatorPrincipal | TenantPrincipal, None] | None:
        found = super().authenticate(request)
        if found is None or not (found[0].is_active and found[0].is_staff):
            return None
        user = found[0]
        if user.is_superuser:
            return OperatorPrincipal(via="superuser_session"), None
        binding = getattr(user, "tenant_staff", None)
        if binding is None or not binding.tenant.active:
            return None
        return TenantPrincipal(tenant=binding.tenant, key_prefix=""), None


class IsTenantOrOperator(permissions.BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return isinstance(request.user, TenantPrincipal | OperatorPrincipal)

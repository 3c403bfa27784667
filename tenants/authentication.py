"""API key authentication: ``Authorization: Api-Key <key>`` names the tenant of the request.

Key records are cached in Redis for ``MEMORY_AUTH_CACHE_TTL`` seconds so that a request needs no
PostgreSQL round trip, and so that writes are still accepted while PostgreSQL is down (DESIGN.md
5.6). Revoking a key or changing its tenant forgets the cached record (``tenants.services``).
"""

import hmac
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

from conversations import cache as conversations_cache
from tenants import throttling
from tenants.models import Tenant, TenantApiKey
from tenants.services import auth_cache_key

logger = structlog.get_logger(__name__)
LAST_USED_RESOLUTION_SECONDS = 60


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
            raise exceptions.AuthenticationFailed("The API key is not valid.")
        guessed = throttling.guessed_window(prefix)
        record, count = self._record(prefix, guessed)
        try:
            tenant = self._check(key, prefix, record)
        except exceptions.AuthenticationFailed:
            throttling.settle_guess(request, prefix=prefix, guessed=guessed, count=count, tenant=None)
            raise
        throttling.settle_guess(request, prefix=prefix, guessed=guessed, count=count, tenant=tenant)
        return TenantPrincipal(tenant=tenant, key_prefix=prefix), prefix

    def _check(self, key: str, prefix: str, record: dict[str, Any] | None) -> Tenant:
        """The key's tenant, or AuthenticationFailed saying why the key is refused."""
        if record is None or not TenantApiKey.objects.key_generator.verify(key, record["hashed_key"]):
            raise exceptions.AuthenticationFailed("The API key is not valid.")
        if record["revoked"] or not record["tenant_active"]:
            raise exceptions.AuthenticationFailed("The API key has been revoked.")
        if record["expiry_date"] and datetime.fromisoformat(record["expiry_date"]) < timezone.now():
            raise exceptions.AuthenticationFailed("The API key has expired; create a new one.")
        now = timezone.now()
        if now.timestamp() - record.get("last_used", 0) > LAST_USED_RESOLUTION_SECONDS:
            self._touch(prefix, record, now)
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

    def _record(self, prefix: str, guessed: throttling.Window | None) -> tuple[dict[str, Any] | None, int | None]:
        """The key's record (cached, else from PostgreSQL) and, with a guessed throttle window, the
        window's count after counting this request in the same round trip."""
        cache_key = auth_cache_key(prefix)
        count = None
        try:
            if guessed is None:
                record = cache.get(cache_key)
            else:
                raw, count = conversations_cache.auth_record_counted(
                    record_key=cache.make_key(cache_key),
                    tenant_slug=guessed.tenant_slug,
                    throttle_key=guessed.key,
                    ttl=guessed.length + 1,
                )
                record = cache.client.decode(raw) if raw is not None else None
        except Exception as error:  # Redis down: authenticate from PostgreSQL alone
            logger.warning("auth_cache_unavailable", error=str(error))
            record = None
        if record is not None:
            return record, count
        try:
            api_key = TenantApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
        except DatabaseError as error:
            raise ServiceUnavailableAuth() from error
        if api_key is None:
            return None, count
        record = {
            "hashed_key": api_key.hashed_key,
            "revoked": api_key.revoked,
            "expiry_date": api_key.expiry_date.isoformat() if api_key.expiry_date else None,
            "tenant_id": api_key.tenant_id,
            "tenant_slug": api_key.tenant.slug,
            "tenant_active": api_key.tenant.active,
            "tenant_settings": api_key.tenant.settings,
            "last_used": 0,
        }
        return record, count

    def _touch(self, prefix: str, record: dict[str, Any], now: datetime) -> None:
        """Record the key's last use (at most once a minute) and cache the verified record."""
        cache_key = auth_cache_key(prefix)
        record["last_used"] = now.timestamp()
        try:
            TenantApiKey.objects.filter(prefix=prefix).update(last_used_at=now)
        except DatabaseError:
            pass  # last use is informative; PostgreSQL being down must not refuse the request
        try:
            cache.set(cache_key, record, timeout=settings.MEMORY_AUTH_CACHE_TTL)
        except Exception as error:  # Redis down: the next request reads PostgreSQL again
            logger.warning("auth_cache_unavailable", error=str(error))


class ServiceUnavailableAuth(exceptions.APIException):
    status_code = 503
    default_detail = "Authentication is unavailable: neither the key cache nor PostgreSQL answers. Retry shortly."
    default_code = "service_unavailable"


class IsTenantAuthenticated(permissions.BasePermission):
    def has_permission(self, request: Any, view: Any) -> bool:
        return isinstance(request.user, TenantPrincipal)


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

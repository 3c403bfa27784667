"""Per-tenant request throttling: at most ``MEMORY_RATE_LIMIT`` requests in each window of
``MEMORY_RATE_WINDOW`` seconds for one tenant, whichever of its keys and web processes they use.

The window is fixed and aligned on the clock (window ``n`` covers ``[n * W, (n + 1) * W)``). Its count
lives in Redis under ``throttle:tenant:<tenant id>:<W>:<n>``; one Lua script increments it and sets
its expiry (``conversations.cache.THROTTLE_COUNT``), so concurrent requests from any number of processes are each counted exactly once and a
counter never outlives its window. A fixed window lets a tenant send up to twice its limit across a
boundary; that is the price of one key and one round trip per request.

Over the limit the request is refused before the view runs: 429, ``Retry-After`` (seconds until the
window ends) and the JSON error ``throttled`` whose message names the limit. Both settings may be
overridden per tenant (``Tenant.settings``); a limit of 0 turns throttling off for that tenant.

The count costs no round trip of its own once a process has seen a key: the authentication reads
the key's record and counts the request in the window of the tenant it belonged to last time, in
one script (``conversations.cache.auth_record_counted``); this throttle then only compares. A key that moved to
another tenant (or whose tenant changed its window) is counted again where it belongs and taken
back where it was guessed; a key that fails to authenticate is taken back too.

Requests without a tenant (the API root, the schema and the docs) are not counted here. Requests
that fail to authenticate (no key where one is needed, a wrong, unknown, revoked or expired key) are
counted per client address instead (``tenants.addresses.client_ip``): at most
``MEMORY_AUTH_FAILURE_LIMIT`` in each window of ``MEMORY_AUTH_FAILURE_WINDOW`` seconds, under
``throttle:address:<address>:<W>:<n>``. Over it, such a request is a 429 with ``Retry-After`` and the
error ``throttled`` instead of a 401, and a key whose record is not cached is refused before
PostgreSQL is asked (``failure_check``). A valid key is never refused for its address's failures.

When Redis does not answer, the request passes: throttling protects capacity, and must not turn a
cache outage into an API outage. The miss is logged and counted in
``memory_cache_errors_total`` and ``memory_fallbacks_total``.
"""

import math
import time
from dataclasses import dataclass
from typing import Any

import structlog
from django.conf import settings
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from conversations import cache, metrics
from tenants.addresses import client_ip
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


# INCR and the expiry in one step: a counter is never left without an expiry.
def throttle_key(*, tenant_id: int, window: int, number: int) -> str:
    return f"throttle:tenant:{tenant_id}:{window}:{number}"


def address_key(*, address: str, window: int, number: int) -> str:
    return f"throttle:address:{address}:{window}:{number}"


@dataclass(frozen=True)
class Window:
    """The throttle window a tenant's request falls in now."""

    tenant_slug: str
    key: str
    length: int
    number: int


@dataclass(frozen=True)
class Counted:
    """A request already counted, by the authentication, in ``window``: the window's count."""

    window: Window
    count: int


# Per process: the tenant (id, slug) and settings of each key prefix seen, so that its next request
# is counted in the round trip that reads its record. Bounded: keys are few, but prefixes are chosen
# by clients, and only authenticated ones are kept.
_tenants_by_prefix: dict[str, Tenant] = {}
MAX_REMEMBERED_PREFIXES = 10_000


def window_now(tenant: Tenant) -> Window | None:
    """The tenant's current window, or None when its throttling is off."""
    if int(tenant.setting("MEMORY_RATE_LIMIT")) <= 0:
        return None
    length = max(1, int(tenant.setting("MEMORY_RATE_WINDOW")))
    number = int(TenantRateThrottle.timer() // length)
    key = throttle_key(tenant_id=tenant.pk, window=length, number=number)
    return Window(tenant_slug=tenant.slug, key=key, length=length, number=number)


def guessed_window(prefix: str) -> Window | None:
    """The window this key's request would count in, if the key is still its last tenant's."""
    tenant = _tenants_by_prefix.get(prefix)
    return window_now(tenant) if tenant is not None else None


def settle_guess(request: Request, *, prefix: str, guessed: Window | None, count: int | None, tenant: Tenant | None) -> None:
    """After authentication: keep a count made in the right window for the throttle, take back one
    made in a wrong one (the key moved, the window changed, or the key did not authenticate), and
    remember the key's tenant for its next request."""
    if tenant is not None:
        if len(_tenants_by_prefix) >= MAX_REMEMBERED_PREFIXES and prefix not in _tenants_by_prefix:
            _tenants_by_prefix.clear()
        _tenants_by_prefix[prefix] = tenant
    if guessed is None or count is None:
        return
    actual = window_now(tenant) if tenant is not None else None
    if actual is not None and actual.key == guessed.key:
        request._counted_request = Counted(window=guessed, count=count)
        return
    try:
        cache.throttle_uncount(tenant_slug=guessed.tenant_slug, key=guessed.key)
    except cache.CacheUnavailable as error:
        logger.warning("throttle_uncount_failed", tenant=guessed.tenant_slug, error=str(error))


class TenantRateThrottle(BaseThrottle):
    """The DRF throttle of every API view (``REST_FRAMEWORK["DEFAULT_THROTTLE_CLASSES"]``)."""

    # The clock, replaceable in tests (as DRF's own throttles do).
    timer = staticmethod(time.time)

    def __init__(self) -> None:
        self.retry_after: int | None = None

    def allow_request(self, request: Request, view: Any) -> bool:
        tenant: Tenant | None = getattr(request.user, "tenant", None)
        if tenant is None:
            return True
        window = window_now(tenant)
        if window is None:
            return True
        counted: Counted | None = getattr(request, "_counted_request", None)
        if counted is not None and counted.window.key == window.key:
            count = counted.count
        else:
            try:
                count = cache.throttle_count(tenant_slug=tenant.slug, key=window.key, ttl=window.length + 1)
            except cache.CacheUnavailable as error:  # counted in cache_errors{operation="throttle"} by the cache layer
                metrics.fallbacks.labels(kind="unthrottled").inc()
                logger.warning("throttle_unavailable", tenant=tenant.slug, error=str(error))
                return True
        limit = int(tenant.setting("MEMORY_RATE_LIMIT"))
        if count <= limit:
            return True
        self.retry_after = max(1, math.ceil((window.number + 1) * window.length - self.timer()))
        raise Throttled(
            wait=self.retry_after,
            detail=f"Too many requests for tenant {tenant.slug}: the limit is MEMORY_RATE_LIMIT={limit} requests "
            f"per MEMORY_RATE_WINDOW={window.length} seconds.",
        )

    def wait(self) -> float | None:
        return self.retry_after


# --- Failed authentications, per client address ---------------------------------------------------

ANONYMOUS = "-"  # the tenant label of an address's counts in the cache metrics


def _address_window(request: Any) -> tuple[str, int, int] | None:
    """The key, length and number of the client address's failure window now (None: no limit)."""
    if settings.MEMORY_AUTH_FAILURE_LIMIT <= 0:
        return None
    # Imported here: the middleware imports DRF's views, whose import loads the authentication, which
    # imports this module; at the top, whichever of them is imported first would fail.
    address = client_ip(request) or "unknown"
    length = max(1, settings.MEMORY_AUTH_FAILURE_WINDOW)
    number = int(TenantRateThrottle.timer() // length)
    return address_key(address=address, window=length, number=number), length, number


def _over_limit(count: int, length: int, number: int) -> None:
    limit = settings.MEMORY_AUTH_FAILURE_LIMIT
    if count <= limit:
        return
    raise Throttled(
        wait=max(1, math.ceil((number + 1) * length - TenantRateThrottle.timer())),
        detail=f"Too many requests without a valid API key from this address: the limit is "
        f"MEMORY_AUTH_FAILURE_LIMIT={limit} per MEMORY_AUTH_FAILURE_WINDOW={length} seconds.",
    )


def failure_count(request: Any) -> None:
    """Count a failed authentication against the client's address; Throttled once it is over the limit."""
    window = _address_window(request)
    if window is None:
        return
    key, length, number = window
    try:
        count = cache.throttle_count(tenant_slug=ANONYMOUS, key=key, ttl=length + 1)
    except cache.CacheUnavailable as error:
        metrics.fallbacks.labels(kind="unthrottled").inc()
        logger.warning("throttle_unavailable", address=key, error=str(error))
        return
    _over_limit(count, length, number)


def failure_check(request: Any) -> None:
    """Throttled if the client's address is already over its limit of failed authentications."""
    window = _address_window(request)
    if window is None:
        return
    key, length, number = window
    try:
        count = cache.throttle_read(tenant_slug=ANONYMOUS, key=key)
    except cache.CacheUnavailable as error:
        metrics.fallbacks.labels(kind="unthrottled").inc()
        logger.warning("throttle_unavailable", address=key, error=str(error))
        return
    _over_limit(count + 1, length, number)

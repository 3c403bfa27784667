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

Requests without a tenant (the API root, the schema and the docs) are not counted. When Redis does
not answer, the request passes: throttling protects capacity, and must not turn a cache outage into
an API outage (DESIGN.md 5.6). The miss is logged and counted in ``memory_cache_errors_total`` and
``memory_fallbacks_total``.
"""

import math
import time
from typing import Any

import structlog
from rest_framework.exceptions import Throttled
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from conversations import cache, metrics
from tenants.models import Tenant

logger = structlog.get_logger(__name__)


# INCR and the expiry in one step: a counter is never left without an expiry.
def throttle_key(*, tenant_id: int, window: int, number: int) -> str:
    return f"throttle:tenant:{tenant_id}:{window}:{number}"


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
        limit = int(tenant.setting("MEMORY_RATE_LIMIT"))
        if limit <= 0:
            return True
        window = max(1, int(tenant.setting("MEMORY_RATE_WINDOW")))
        now = self.timer()
        number = int(now // window)
        key = throttle_key(tenant_id=tenant.pk, window=window, number=number)
        try:
            count = cache.throttle_count(tenant_slug=tenant.slug, key=key, ttl=window + 1)
        except cache.CacheUnavailable as error:  # counted in cache_errors{operation="throttle"} by the cache layer
            metrics.fallbacks.labels(kind="unthrottled").inc()
            logger.warning("throttle_unavailable", tenant=tenant.slug, error=str(error))
            return True
        if count <= limit:
            return True
        self.retry_after = max(1, math.ceil((number + 1) * window - now))
        raise Throttled(
            wait=self.retry_after,
            detail=f"Too many requests for tenant {tenant.slug}: the limit is MEMORY_RATE_LIMIT={limit} requests "
            f"per MEMORY_RATE_WINDOW={window} seconds.",
        )

    def wait(self) -> float | None:
        return self.retry_after

"""The admin login's lockout: django-axes' database handler, with limits that one anonymous client
cannot turn against an administrator.

Failures are counted over the last ``AXES_COOLOFF_TIME`` per client address as
``tenants.addresses.client_ip`` resolves it (``X-Forwarded-For`` only from
``MEMORY_TRUSTED_PROXIES``), so a client cannot pick the address it is counted under:

- one username from one address: ``AXES_FAILURE_LIMIT`` failures lock that pair (a correct login
  before that resets it);
- one address, whatever the usernames: ``MEMORY_LOGIN_ADDRESS_FAILURE_LIMIT`` failures lock the
  address (a client trying many usernames);
- one username, from every address together: past ``MEMORY_LOGIN_USER_FAILURE_LIMIT`` failures the
  username is under attack, and each address gets one try at it instead of ``AXES_FAILURE_LIMIT``.
  That slows a guesser spread over many addresses, and never locks the administrator out of an
  address that has not failed: the username itself is never locked.

A locked request answers 429 with the lockout page, even with the right password.
"""

from dataclasses import dataclass
from typing import Any

from axes.attempts import get_cool_off_threshold
from axes.handlers.database import AxesDatabaseHandler
from axes.helpers import get_client_username, get_failure_limit
from axes.models import AccessAttempt
from django.conf import settings
from django.db.models import Q, Sum


@dataclass(frozen=True)
class Failures:
    """Recent login failures: of this username from this address, from this address, of this username."""

    pair: int
    address: int
    username: int


def recent_failures(request: Any, credentials: dict | None = None) -> Failures:
    username = get_client_username(request, credentials)
    address = request.axes_ip_address
    recent = AccessAttempt.objects.filter(attempt_time__gte=get_cool_off_threshold(request))
    pair = Q(username=username, ip_address=address)
    counts = recent.filter(Q(username=username) | Q(ip_address=address)).aggregate(
        pair=Sum("failures_since_start", filter=pair),
        address=Sum("failures_since_start", filter=Q(ip_address=address)),
        username=Sum("failures_since_start", filter=Q(username=username)),
    )
    return Failures(pair=counts["pair"] or 0, address=counts["address"] or 0, username=counts["username"] or 0)


class LoginLockoutHandler(AxesDatabaseHandler):
    """``AXES_HANDLER``: axes records each failure by (username, address, user agent) as before; what
    counts toward a lockout is decided here."""

    def get_failures(self, request: Any, credentials: dict | None = None) -> int:
        """The failures of this username from this address, or the failure limit itself when the
        address is locked, or the username is under attack and this address has failed at it."""
        failures = recent_failures(request, credentials)
        limit = get_failure_limit(request, credentials)
        address_locked = failures.address >= settings.MEMORY_LOGIN_ADDRESS_FAILURE_LIMIT
        under_attack = failures.username >= settings.MEMORY_LOGIN_USER_FAILURE_LIMIT and failures.pair >= 1
        return max(failures.pair, limit) if address_locked or under_attack else failures.pair

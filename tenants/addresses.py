"""Who is calling: the client's address behind the deployment's trusted proxies
(``MEMORY_TRUSTED_PROXIES``). The request log, the API's throttles and the admin's lockout all count
by this one answer (``client_ip``)."""

import functools
import ipaddress
from collections.abc import Sequence

from django.conf import settings
from django.http import HttpRequest

IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


@functools.lru_cache(maxsize=8)
def trusted_networks(cidrs: tuple[str, ...]) -> tuple[IpNetwork, ...]:
    return tuple(ipaddress.ip_network(cidr.strip(), strict=False) for cidr in cidrs if cidr.strip())


def _address(value: str) -> IpAddress | None:
    value = value.strip()
    if value.startswith("[") and "]" in value:  # "[2001:db8::1]:443"
        value = value[1 : value.index("]")]
    elif value.count(":") == 1:  # "192.0.2.1:443"
        value = value.partition(":")[0]
    try:
        address = ipaddress.ip_address(value)
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def _trusted(address: IpAddress, networks: Sequence[IpNetwork]) -> bool:
    return any(address.version == network.version and address in network for network in networks)


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: the connection's own, or, when that is a trusted proxy, the rightmost
    address of ``X-Forwarded-For`` that is not a trusted proxy (every hop to its right is one).

    A hop that is not an address (a proxy that writes ``unknown``) stops the walk at the trusted
    proxy that wrote it: the requests behind it share that proxy's address rather than one a client
    could make up."""
    remote = _address(request.META.get("REMOTE_ADDR", ""))
    if remote is None:
        return None
    networks = trusted_networks(tuple(settings.MEMORY_TRUSTED_PROXIES))
    if not networks or not _trusted(remote, networks):
        return str(remote)
    forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
    client = remote
    for hop in reversed([hop for hop in forwarded.split(",") if hop.strip()]):
        address = _address(hop)
        if address is None:
            break
        client = address
        if not _trusted(address, networks):
            break
    return str(client)

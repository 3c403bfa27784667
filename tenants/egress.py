"""The egress policy: where a URL a tenant configures (``MEMORY_CHAT_BASE_URL``) may lead.

A tenant chooses the server; the deployment's network is not the tenant's to explore. So a tenant's
URL may reach public addresses only:

* Refused: loopback, private, link-local, multicast, reserved, unspecified and otherwise not
  globally routable addresses, cloud metadata addresses (some of which are public, Azure's
  168.63.129.16), and the names ``localhost`` (``*.localhost``) and the metadata services'
  (``metadata.google.internal``...). Every spelling counts as the address it reaches: IPv4-mapped,
  6to4 and NAT64 IPv6, the integer, hex, octal and short IPv4 forms the C resolver accepts
  (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``), a trailing dot, and any name whose
  answers include a refused address.
* ``MEMORY_EGRESS_ALLOWED_NETWORKS`` (the deployment's, never a tenant's) lets through networks
  (CIDRs) and host names the operator trusts: a self-hosted model server on a private network.

It is checked twice. ``url_check`` runs when the setting is saved (admin, API, commands: the tenant
settings' validation), so a bad URL is refused with the field named. ``EgressTransport`` runs on
every connection the model's HTTP client makes: it resolves the host once, checks every answer and
connects to the checked address (the ``Host`` header and the TLS server name stay the URL's host), so
a name that answered a public address at save time and a private one now (DNS rebinding) is refused,
and the connection can never go to an address that was not checked.
"""

import functools
import ipaddress
import socket
import ssl
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from django.conf import settings

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

DEFAULT_PORTS = {"http": 80, "https": 443}
# Names of metadata services and of the machine itself, refused whatever they resolve to.
REFUSED_NAMES = frozenset(
    {
        "localhost",
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
# Metadata and platform endpoints of the clouds; most are link-local or private anyway, not all.
METADATA_NETWORKS = tuple(
    ipaddress.ip_network(network)
    for network in (
        "169.254.169.254/32",  # AWS, GCP, Azure, OpenStack, Oracle...
        "169.254.170.2/32",  # AWS ECS task metadata
        "fd00:ec2::254/128",  # AWS IPv6
        "100.100.100.200/32",  # Alibaba Cloud
        "168.63.129.16/32",  # Azure WireServer (a public address)
    )
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")
QUALITIES = {
    "is_loopback": "a loopback address",
    "is_unspecified": "an unspecified address",
    "is_link_local": "a link-local address",
    "is_multicast": "a multicast address",
    "is_private": "a private address",
    "is_reserved": "a reserved address",
}


class EgressRefused(ValueError):
    """A tenant's URL leads where the egress policy does not let it go."""


def url_check(url: str, *, field: str) -> str:
    """``url`` when it is an http(s) URL whose host passes the policy; EgressRefused naming ``field``."""
    parts = urlsplit(url)
    if parts.scheme not in DEFAULT_PORTS or not parts.netloc:
        raise EgressRefused(f"{field}={url!r} is not an http(s) URL, e.g. https://models.example.com/v1.")
    try:
        port = parts.port or DEFAULT_PORTS[parts.scheme]
    except ValueError as error:
        raise EgressRefused(f"{field}={url!r} has no valid port: {error}.") from error
    host_check(parts.hostname or "", port, field=field)
    return url


def host_check(host: str, port: int, *, field: str) -> list[Address]:
    """The addresses ``host`` stands for, every one of them allowed; EgressRefused otherwise."""
    name = host.strip().rstrip(".").lower()
    if not name:
        raise EgressRefused(f"{field} names no host.")
    if name in allowed_names():
        return resolve_addresses(host, port, field=field)
    if name in REFUSED_NAMES or name.endswith(".localhost"):
        raise EgressRefused(f"{field}: the host {host!r} is this machine or a metadata service; a tenant's URL may not reach it.")
    addresses = resolve_addresses(host, port, field=field)
    for address in addresses:
        reason = address_refusal(address)
        if reason:
            raise EgressRefused(
                f"{field}: the host {host!r} leads to {address}, {reason}; a tenant's URL may reach public addresses "
                "only (an operator allows a private model server with MEMORY_EGRESS_ALLOWED_NETWORKS)."
            )
    return addresses


def address_refusal(address: Address) -> str | None:
    """Why the policy refuses ``address`` (None: allowed)."""
    if any(_within(address, network) for network in allowed_networks()):
        return None
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            reason = address_refusal(embedded)
            if reason:
                return f"{reason} (as {embedded})"
    if any(_within(address, network) for network in METADATA_NETWORKS):
        return "a cloud metadata address"
    for quality, reason in QUALITIES.items():
        if getattr(address, quality):
            return reason
    if not address.is_global:
        return "an address that is not globally routable"
    return None


def resolve_addresses(host: str, port: int, *, field: str) -> list[Address]:
    """Every address ``host`` stands for, as the C resolver reads it (numeric forms without a lookup)."""
    literal = ip_literal(host)
    if literal is not None:
        return [literal]
    try:
        answers = resolve(host, port)
    except (OSError, UnicodeError) as error:
        raise EgressRefused(f"{field}: the host {host!r} does not resolve ({error}).") from error
    addresses = [ipaddress.ip_address(answer.split("%", 1)[0]) for answer in answers]
    if not addresses:
        raise EgressRefused(f"{field}: the host {host!r} does not resolve.")
    return addresses


def ip_literal(host: str) -> Address | None:
    """The address a numeric host is, in any spelling ``inet_aton`` accepts; None for a name."""
    text = host.strip().strip("[]").split("%", 1)[0]
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(text.rstrip(".")))
    except (OSError, UnicodeError, ValueError):
        return None


def resolve(host: str, port: int) -> list[str]:
    """The resolver's answers for ``host`` (one lookup; the tests replace it to play DNS)."""
    return [info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)]


def allowed_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    return _allowlist(tuple(settings.MEMORY_EGRESS_ALLOWED_NETWORKS))[0]


def allowed_names() -> frozenset[str]:
    return _allowlist(tuple(settings.MEMORY_EGRESS_ALLOWED_NETWORKS))[1]


@functools.lru_cache(maxsize=8)
def _allowlist(entries: tuple[str, ...]) -> tuple[list[Any], frozenset[str]]:
    networks, names = [], set()
    for entry in (entry.strip() for entry in entries):
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            names.add(entry.rstrip(".").lower())
    return networks, frozenset(names)


def _within(address: Address, network: Any) -> bool:
    return address.version == network.version and address in network


# --- The connection: resolve once, check, connect to the checked address ---------------------------


class EgressTransport(httpx2.HTTPTransport):
    """An httpx2 transport that sends each request to an address the policy checked just now."""

    def __init__(self, *, field: str) -> None:
        super().__init__(verify=_tls_context(), trust_env=False, limits=httpx2.Limits(max_keepalive_connections=0))
        self.field = field

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return super().handle_request(pinned(request, field=self.field))


class AsyncEgressTransport(httpx2.AsyncHTTPTransport):
    """The same for the asynchronous client; the lookup runs on a worker thread."""

    def __init__(self, *, field: str) -> None:
        super().__init__(verify=_tls_context(), trust_env=False, limits=httpx2.Limits(max_keepalive_connections=0))
        self.field = field

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        checked = await anyio.to_thread.run_sync(functools.partial(pinned, request, field=self.field))
        return await super().handle_async_request(checked)


def pinned(request: httpx2.Request, *, field: str) -> httpx2.Request:
    """``request`` sent to the first checked address of its host: the ``Host`` header is already the
    host's, and TLS is verified against the host's name (httpx's ``sni_hostname`` extension)."""
    host = request.url.host
    port = request.url.port or DEFAULT_PORTS.get(request.url.scheme, 443)
    address = host_check(host, port, field=field)[0]
    if str(address) != host:
        if request.url.scheme == "https" and ip_literal(host) is None:
            request.extensions = {**request.extensions, "sni_hostname": host}
        request.url = request.url.copy_with(host=str(address))
    return request


def clients(*, field: str) -> tuple[httpx2.Client, httpx2.AsyncClient]:
    """HTTP clients for one model built on a tenant's URL (no environment proxies, no kept connections)."""
    return (
        httpx2.Client(transport=EgressTransport(field=field), trust_env=False),
        httpx2.AsyncClient(transport=AsyncEgressTransport(field=field), trust_env=False),
    )


@functools.cache
def _tls_context() -> ssl.SSLContext:
    return httpx2.create_ssl_context()

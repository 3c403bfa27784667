"""The egress policy: where a URL a tenant configures (``MEMORY_CHAT_BASE_URL``, ``MEMORY_EMBEDDING_BASE_URL``,
``MEMORY_RERANK_URL``) may lead.

A tenant chooses the server; the deployment's network is not the tenant's to explore. So a tenant's
URL may reach public addresses only:

* Refused: loopback, private, link-local, multicast, reserved, unspecified and otherwise not
  globally routable addresses, cloud metadata addresses (some of which are public, Azure's
  168.63.129.16), and the names ``localhost`` (``*.localhost``) and the metadata services'
  (``metadata.google.internal``...). Every spelling counts as the address it reaches: IPv4-mapped,
  6to4 and NAT64 IPv6, the integer, hex, octal and short IPv4 forms the C resolver accepts
  (``2130706433``, ``0x7f000001``, ``0177.0.0.1``, ``127.1``), a trailing dot, and any name whose
  answers include a refused address.
* ``MEMORY_EGRESS_ALLOWED_NETWORKS`` (the deployment's, never a tenant's) lets through what the
  operator trusts: a self-hosted model server on a private network. Each entry names a host (an
  address, a network in CIDR form, or a name) and, to be narrow, a scheme and a port:
  ``http://127.0.0.1:11434`` lets through that one server, not the Redis, PostgreSQL or the service
  itself on the same address; ``127.0.0.1:11434`` the same port over either scheme; ``10.20.0.0/16``
  or ``vllm.internal`` every port of the network or name. A malformed entry (a port that is not a
  number from 1 to 65535, a scheme other than http or https, a path, a host that is neither an
  address nor a name) stops the process at start (``allowlist_check``, from ``tenants.apps``).

It is checked twice. ``url_check`` runs when the setting is saved (admin, API, commands: the tenant
settings' validation), so a bad URL is refused with the field named. ``EgressTransport`` runs on
every connection the model's HTTP client makes: it resolves the host once, checks every answer and
connects to the checked address (the ``Host`` header and the TLS server name stay the URL's host), so
a name that answered a public address at save time and a private one now (DNS rebinding) is refused,
and the connection can never go to an address that was not checked.
"""

import functools
import ipaddress
import re
import socket
import ssl
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

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
    host_check(parts.hostname or "", port, field=field, scheme=parts.scheme)
    return url


def host_check(host: str, port: int, *, field: str, scheme: str) -> list[Address]:
    """The addresses ``host`` stands for, every one of them allowed for ``scheme`` and ``port``;
    EgressRefused otherwise."""
    name = host.strip().rstrip(".").lower()
    if not name:
        raise EgressRefused(f"{field} names no host.")
    if any(entry.admits_name(name, scheme=scheme, port=port) for entry in allowlist()):
        return resolve_addresses(host, port, field=field)
    if name in REFUSED_NAMES or name.endswith(".localhost"):
        raise EgressRefused(f"{field}: the host {host!r} is this machine or a metadata service; a tenant's URL may not reach it.")
    addresses = resolve_addresses(host, port, field=field)
    for address in addresses:
        reason = address_refusal(address, scheme=scheme, port=port)
        if reason:
            raise EgressRefused(
                f"{field}: the host {host!r} leads to {address}, {reason}; a tenant's URL may reach public addresses "
                "only (an operator allows a private model server with MEMORY_EGRESS_ALLOWED_NETWORKS, naming its "
                "scheme, address and port)."
            )
    return addresses


def address_refusal(address: Address, *, scheme: str, port: int) -> str | None:
    """Why the policy refuses ``address`` reached by ``scheme`` on ``port`` (None: allowed)."""
    if any(entry.admits_address(address, scheme=scheme, port=port) for entry in allowlist()):
        return None
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address in NAT64:
            embedded = ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
        if embedded is not None:
            reason = address_refusal(embedded, scheme=scheme, port=port)
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


@dataclass(frozen=True)
class Allowed:
    """One entry of ``MEMORY_EGRESS_ALLOWED_NETWORKS``: a network or a name, and the scheme and port
    it is allowed for (None: any)."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None
    name: str | None
    scheme: str | None
    port: int | None

    def _serves(self, scheme: str, port: int) -> bool:
        return self.scheme in (None, scheme) and self.port in (None, port)

    def admits_name(self, name: str, *, scheme: str, port: int) -> bool:
        return self.name == name and self._serves(scheme, port)

    def admits_address(self, address: Address, *, scheme: str, port: int) -> bool:
        return self.network is not None and _within(address, self.network) and self._serves(scheme, port)


class AllowlistInvalid(ValueError):
    """An entry of ``MEMORY_EGRESS_ALLOWED_NETWORKS`` that names no host, scheme or port it could mean."""


_NAME = re.compile(r"(?=.{1,253}$)([a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*")


def allowlist_entry(entry: str) -> Allowed:
    """An entry read: ``[scheme://]host[:port]``, the host an address (IPv6 in brackets when a port
    follows), a CIDR network (without a port) or a name. AllowlistInvalid saying what is wrong."""
    text = entry.strip()
    scheme = None
    if "://" in text:
        scheme, _, text = text.partition("://")
        scheme = scheme.lower()
        if scheme not in DEFAULT_PORTS:
            raise AllowlistInvalid(f"{entry!r}: the scheme must be http or https, not {scheme!r}.")
        if text.endswith("/"):
            text = text[:-1]
    try:
        return Allowed(network=ipaddress.ip_network(text, strict=False), name=None, scheme=scheme, port=None)
    except ValueError:
        pass
    if any(mark in text for mark in "/?#@"):
        raise AllowlistInvalid(
            f"{entry!r} is not a host: write an address, a network without a port (10.20.0.0/16), or "
            "[scheme://]host[:port] (http://127.0.0.1:11434), with no path."
        )
    host, port = text, None
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest and not rest.startswith(":"):
            raise AllowlistInvalid(f"{entry!r}: after ']' only ':port' may follow.")
        port = _port(entry, rest[1:]) if rest else None
    elif text.count(":") == 1:
        host, _, number = text.partition(":")
        port = _port(entry, number)
    try:
        return Allowed(network=ipaddress.ip_network(host), name=None, scheme=scheme, port=port)
    except ValueError:
        pass
    name = host.rstrip(".").lower()
    if not _NAME.fullmatch(name):
        raise AllowlistInvalid(f"{entry!r}: {host!r} is neither an address nor a host name.")
    return Allowed(network=None, name=name, scheme=scheme, port=port)


def _port(entry: str, number: str) -> int:
    if not number.isdigit() or not 1 <= int(number) <= 65535:
        raise AllowlistInvalid(f"{entry!r}: the port must be a number from 1 to 65535, not {number!r}.")
    return int(number)


def allowlist() -> tuple[Allowed, ...]:
    """The deployment's ``MEMORY_EGRESS_ALLOWED_NETWORKS``, read."""
    return _allowlist(tuple(settings.MEMORY_EGRESS_ALLOWED_NETWORKS))


def allowlist_check() -> None:
    """ImproperlyConfigured naming the first malformed entry of ``MEMORY_EGRESS_ALLOWED_NETWORKS``:
    run as every process starts, so an entry that would silently match nothing stops it instead."""
    try:
        allowlist()
    except AllowlistInvalid as error:
        raise ImproperlyConfigured(f"MEMORY_EGRESS_ALLOWED_NETWORKS: {error}") from None


@functools.lru_cache(maxsize=8)
def _allowlist(entries: tuple[str, ...]) -> tuple[Allowed, ...]:
    return tuple(allowlist_entry(entry) for entry in entries if entry.strip())


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
    address = host_check(host, port, field=field, scheme=request.url.scheme)[0]
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

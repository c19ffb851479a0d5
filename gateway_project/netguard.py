"""SSRF guard: URLs the gateway will call on an admin's behalf must not point into private networks.

Observability destination URLs and catalog provider `base_url`s are checked when they are written. A URL
is refused when its host is, or resolves to, a loopback, private, link-local, unique-local, unspecified,
multicast or reserved address (10/8, 172.16/12, 192.168/16, 127/8, 169.254/16, 100.64/10, 0/8, ::1,
fc00::/7, fe80::/10, IPv4-mapped forms of those, ...), unless

- `GATEWAY_ALLOW_PRIVATE_URLS` is true (every address is allowed: development, tests), or
- the host name or one of its addresses is in `GATEWAY_PRIVATE_URL_ALLOWLIST` (host names and CIDRs,
  e.g. `otel.internal,10.20.0.0/16`).

A host name that does not resolve is accepted (nothing can be reached through it now; the observability
worker checks again before every delivery, which also defeats DNS rebinding to a private address later).
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

# Beyond `is_private` (which covers 10/8, 172.16/12, 192.168/16, 127/8, 169.254/16, ::1, fc00::/7, fe80::/10
# and other special-purpose blocks): shared address space and the multicast and reserved ranges.
EXTRA_BLOCKED = (ipaddress.ip_network("100.64.0.0/10"),)


def is_blocked_address(address: IPAddress) -> bool:
    """True for an address an outgoing request must not reach (not globally routable)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in network for network in EXTRA_BLOCKED if network.version == address.version):
        return True
    return (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or not address.is_global
    )


def _allowlist() -> tuple[set[str], list[ipaddress.IPv4Network | ipaddress.IPv6Network]]:
    hosts: set[str] = set()
    networks = []
    for entry in getattr(settings, "GATEWAY_PRIVATE_URL_ALLOWLIST", ()):
        entry = entry.strip().lower()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.rstrip("."))
    return hosts, networks


def _addresses(host: str) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]


def host_problem(host: str) -> str | None:
    """Why a request to `host` is refused, or None when it may be called."""
    if getattr(settings, "GATEWAY_ALLOW_PRIVATE_URLS", False):
        return None
    host = host.strip("[]").lower().rstrip(".")
    hosts, networks = _allowlist()
    if host in hosts:
        return None
    for address in _addresses(host):
        if not is_blocked_address(address):
            continue
        if any(address.version == network.version and address in network for network in networks):
            continue
        return (
            f"must not point at a private, loopback or link-local address ({address}); "
            "allow it with GATEWAY_PRIVATE_URL_ALLOWLIST"
        )
    return None


def url_problem(url: str) -> str | None:
    """Why an outgoing request to `url` is refused, or None. The URL's shape is checked elsewhere."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host_problem(host) if host else None

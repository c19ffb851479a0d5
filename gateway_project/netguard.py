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

This is the one guard of every outgoing call to a URL someone other than the operator chose: the web fetch
of the model (inference/web/fetch.py) resolves each host with `resolve`, checks it with `refused_address`
(its own allowlist, `GATEWAY_WEB_FETCH_ALLOWLIST`) and connects to the checked addresses only. A host is read
the way the socket layer reads it: every numeric form of an IPv4 address (`2130706433`, `127.1`, `0`,
`0177.0.0.1`, `127.000.000.001`, `0x7f000001`), IPv4-mapped IPv6 (`[::ffff:127.0.0.1]`) and a trailing dot
name the address they connect to; a numeric host no resolver reads (`1.2.3.4.5`) is refused.
"""

from __future__ import annotations

import ipaddress
import re
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


Allowlist = tuple[set[str], list[ipaddress.IPv4Network | ipaddress.IPv6Network]]

# What `inet_aton` (and so the system resolver, and a socket's connect) reads as an IPv4 address: one to four
# parts, each decimal, octal (leading 0) or hex (0x): `2130706433`, `127.1`, `0177.0.0.1`, `0x7f000001`.
_NUMERIC_HOST = re.compile(r"^(0x[0-9a-f]*|[0-9]+)(\.(0x[0-9a-f]*|[0-9]+))*$")


class UnknownHost(ValueError):
    """A host written like an IPv4 address that no resolver reads as one (`1.2.3.4.5`, `08.1.2.3`)."""


def parse_allowlist(entries) -> Allowlist:
    """(host names, networks) of an allowlist setting's entries (host names and CIDRs)."""
    hosts: set[str] = set()
    networks = []
    for entry in entries:
        entry = entry.strip().lower()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.rstrip("."))
    return hosts, networks


def normal_host(host: str) -> str:
    """A URL host as resolvers compare it: no brackets, lower case, no trailing dot."""
    return host.strip("[]").lower().rstrip(".")


def literal_address(host: str) -> IPAddress | None:
    """The address a host names literally, read as `inet_aton` and the resolvers read it; None for a name.

    `ipaddress` alone reads only the dotted-quad form, while the socket layer connects `2130706433`, `127.1`,
    `0177.0.0.1`, `127.000.000.001` and `0x7f000001` to 127.0.0.1: every such form is read here the same way.
    """
    host = normal_host(host)
    try:
        return ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        pass
    if not _NUMERIC_HOST.match(host):
        return None
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except OSError:
        raise UnknownHost(f"{host} is not a valid address") from None


def resolve(host: str) -> list[IPAddress]:
    """Every address `host` reaches (the literal, or the system resolver's answers); [] when it does not resolve.

    UnknownHost for a numeric host no resolver accepts."""
    literal = literal_address(host)
    if literal is not None:
        return [literal]
    try:
        infos = socket.getaddrinfo(normal_host(host), None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return []
    return list(dict.fromkeys(ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos))


def refused_address(host: str, addresses: list[IPAddress], allowlist: Allowlist) -> IPAddress | None:
    """The first of `host`'s addresses the guard refuses (blocked and not allowlisted), or None."""
    hosts, networks = allowlist
    if normal_host(host) in hosts:
        return None
    for address in addresses:
        if not is_blocked_address(address):
            continue
        plain = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped else address
        if any(plain.version == network.version and plain in network for network in networks):
            continue
        return address
    return None


def host_problem(host: str) -> str | None:
    """Why a request to `host` is refused, or None when it may be called."""
    if getattr(settings, "GATEWAY_ALLOW_PRIVATE_URLS", False):
        return None
    try:
        addresses = resolve(host)
    except UnknownHost as error:
        return f"must name a valid host ({error})"
    address = refused_address(host, addresses, parse_allowlist(getattr(settings, "GATEWAY_PRIVATE_URL_ALLOWLIST", ())))
    if address is None:
        return None
    return (
        f"must not point at a private, loopback or link-local address ({address}); "
        "allow it with GATEWAY_PRIVATE_URL_ALLOWLIST"
    )


def url_problem(url: str) -> str | None:
    """Why an outgoing request to `url` is refused, or None. The URL's shape is checked elsewhere."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    return host_problem(host) if host else None

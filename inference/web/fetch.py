"""Fetch a URL for the model, through the SSRF guard, with size and time limits.

- Only `http` and `https` URLs.
- Never a private, loopback, link-local, unique-local, multicast or reserved address (the checks of
  gateway_project.netguard), whether the URL names it literally or a host name resolves to it: the host is
  resolved by the connector itself and only the addresses that pass are connected to, so DNS rebinding
  between a check and the connection is not possible. `GATEWAY_WEB_FETCH_ALLOWLIST` (host names and CIDRs)
  lets an operator allow an internal site; `GATEWAY_ALLOW_PRIVATE_URLS` does not apply here.
- Redirects are followed by hand (at most `GATEWAY_WEB_FETCH_MAX_REDIRECTS`), each hop checked like the first.
- At most `GATEWAY_WEB_FETCH_MAX_BYTES` of the (decompressed) body are read; the rest is cut.
- The whole fetch, redirects included, must finish within `GATEWAY_WEB_FETCH_TIMEOUT` seconds.
- No cookies, no proxy from the environment, no credentials.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import AbstractResolver
from django.conf import settings

from gateway_project.netguard import is_blocked_address

REDIRECTS = frozenset({301, 302, 303, 307, 308})
USER_AGENT = "model-gateway-web-fetch/1.0"


class FetchError(Exception):
    """The page could not be fetched; the message says why (shown to the model and the client)."""


class BlockedAddress(OSError):
    """A host that resolves only to addresses the guard refuses."""


@dataclass(frozen=True, slots=True)
class Page:
    url: str  # after redirects
    status: int
    content_type: str
    body: bytes
    charset: str
    truncated: bool


def _allowlist() -> tuple[set[str], list[Any]]:
    hosts: set[str] = set()
    networks: list[Any] = []
    for entry in settings.GATEWAY_WEB_FETCH_ALLOWLIST:
        entry = entry.strip().lower()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry, strict=False))
        except ValueError:
            hosts.add(entry.rstrip("."))
    return hosts, networks


def address_allowed(address: str, host: str = "") -> bool:
    hosts, networks = _allowlist()
    if host and host.lower().rstrip(".") in hosts:
        return True
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if not is_blocked_address(ip):
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return any(ip.version == network.version and ip in network for network in networks)


class GuardedResolver(AbstractResolver):
    """Resolves like the system, then keeps only the addresses the guard allows."""

    def __init__(self) -> None:
        self._inner = aiohttp.ThreadedResolver()

    async def resolve(self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET) -> list:
        results = await self._inner.resolve(host, port, family)
        allowed = [r for r in results if address_allowed(r["host"], host)]
        if not allowed:
            addresses = ", ".join(sorted({r["host"] for r in results}))
            raise BlockedAddress(f"{host} resolves to a private or reserved address ({addresses})")
        return allowed

    async def close(self) -> None:
        await self._inner.close()


def check_url(url: str) -> str:
    """The host of a URL that may be fetched; FetchError otherwise (scheme, shape, literal private address)."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018  (raises on a malformed port)
    except ValueError:
        raise FetchError("the URL is malformed") from None
    if parts.scheme not in ("http", "https"):
        raise FetchError("only http and https URLs can be fetched")
    if not host:
        raise FetchError("the URL has no host")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return host
    if not address_allowed(host, host):
        raise FetchError(f"{host} is a private or reserved address")
    return host


def _session() -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(), use_dns_cache=False, force_close=True, limit=4)
    return aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        headers={"User-Agent": USER_AGENT, "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5"},
    )


async def _get(session: aiohttp.ClientSession, url: str) -> Page | str:
    """One hop: a Page, or the next URL of a redirect."""
    async with session.get(url, allow_redirects=False) as response:
        if response.status in REDIRECTS:
            location = response.headers.get("Location")
            if not location:
                raise FetchError(f"HTTP {response.status} redirect without a Location")
            return urljoin(url, location)
        limit = settings.GATEWAY_WEB_FETCH_MAX_BYTES
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(65536):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:
                break
        body = b"".join(chunks)
        return Page(
            url=url,
            status=response.status,
            content_type=response.content_type or "",
            body=body[:limit],
            charset=response.charset or "",
            truncated=len(body) > limit,
        )


async def fetch(url: str) -> Page:
    """The page at `url` (after redirects), or FetchError saying why not."""
    try:
        async with asyncio.timeout(settings.GATEWAY_WEB_FETCH_TIMEOUT), _session() as session:
            for _hop in range(settings.GATEWAY_WEB_FETCH_MAX_REDIRECTS + 1):
                check_url(url)
                result = await _get(session, url)
                if isinstance(result, Page):
                    return result
                url = result
            raise FetchError(f"more than {settings.GATEWAY_WEB_FETCH_MAX_REDIRECTS} redirects")
    except TimeoutError:
        raise FetchError(f"no complete answer within {settings.GATEWAY_WEB_FETCH_TIMEOUT:g} s") from None
    except aiohttp.ClientConnectorError as error:
        cause = getattr(error, "os_error", None)
        if isinstance(cause, BlockedAddress):
            raise FetchError(str(cause)) from None
        raise FetchError(f"could not connect to {urlsplit(url).hostname}") from None
    except aiohttp.ClientError as error:
        raise FetchError(f"the request failed ({type(error).__name__})") from None

"""Fetch a URL for the model, through the SSRF guard, with size and time limits.

- Only `http` and `https` URLs.
- Never a private, loopback, link-local, unique-local, multicast or reserved address (the checks of
  gateway_project.netguard), whether the URL names it literally (in any form the socket layer reads: `2130706433`,
  `127.1`, `0x7f000001`, `[::ffff:127.0.0.1]`, `127.0.0.1.`, ...) or a host name resolves to it: every host, IP
  literals included, is resolved once by the guard inside the connector, and the connection goes to the
  checked addresses, so DNS rebinding between a check and the connection is not possible.
  `GATEWAY_WEB_FETCH_ALLOWLIST` (host names and CIDRs) lets an operator allow an internal site;
  `GATEWAY_ALLOW_PRIVATE_URLS` does not apply here.
- Redirects are followed by hand (at most `GATEWAY_WEB_FETCH_MAX_REDIRECTS`), each hop checked like the first.
- At most `GATEWAY_WEB_FETCH_MAX_BYTES` of the (decompressed) body are read; the rest is cut.
- The whole fetch, redirects included, must finish within `GATEWAY_WEB_FETCH_TIMEOUT` seconds.
- No cookies, no credentials, and never the egress proxy of `HTTPS_PROXY` / `HTTP_PROXY` (which the other
  outbound calls use): a proxy would resolve the name again after the guard checked it (docs/security.md).
"""

from __future__ import annotations

import asyncio
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import aiohttp
from aiohttp.abc import ResolveResult
from django.conf import settings

from gateway_project import netguard

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


def _allowlist() -> netguard.Allowlist:
    return netguard.parse_allowlist(settings.GATEWAY_WEB_FETCH_ALLOWLIST)


def checked_addresses(host: str) -> list[netguard.IPAddress]:
    """Every address `host` reaches, when the guard allows all of them; BlockedAddress otherwise."""
    try:
        addresses = netguard.resolve(host)
    except netguard.UnknownHost as error:
        raise BlockedAddress(str(error)) from None
    if not addresses:
        raise BlockedAddress(f"{netguard.normal_host(host)} does not resolve")
    refused = netguard.refused_address(host, addresses, _allowlist())
    if refused is not None:
        name = netguard.normal_host(host)
        if netguard.literal_address(host) is not None:
            shown = "" if name == str(refused) else f" ({refused})"
            raise BlockedAddress(f"{name} is a private or reserved address{shown}")
        raise BlockedAddress(f"{name} resolves to a private or reserved address ({refused})")
    return addresses


class GuardedConnector(aiohttp.TCPConnector):
    """Every host, an IP literal included, is resolved and checked by the guard; the connection goes to the
    checked addresses themselves (aiohttp would otherwise hand a host it takes for an IP literal, such as
    `2130706433`, to the socket layer, which reads it as 127.0.0.1)."""

    async def _resolve_host(self, host: str, port: int, traces: Any = None) -> list[ResolveResult]:
        try:
            literal = netguard.literal_address(host)
        except netguard.UnknownHost as error:
            raise BlockedAddress(str(error)) from None
        if literal is None:
            addresses = await asyncio.to_thread(checked_addresses, host)
        else:
            addresses = checked_addresses(host)
        return [
            {
                "hostname": host,
                "host": str(address),
                "port": port,
                "family": socket.AF_INET6 if address.version == 6 else socket.AF_INET,
                "proto": 0,
                "flags": socket.AI_NUMERICHOST,
            }
            for address in addresses
        ]


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
        if netguard.literal_address(host) is not None:
            checked_addresses(host)  # refused before any connection; names are checked as they are resolved
    except (BlockedAddress, netguard.UnknownHost) as error:
        raise FetchError(str(error)) from None
    return host


def _session() -> aiohttp.ClientSession:
    connector = GuardedConnector(use_dns_cache=False, force_close=True, limit=4)
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

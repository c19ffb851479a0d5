"""The aiohttp session of each event loop, shared by the outbound calls of the process (providers, web search,
observability delivery): its connection pool, the headers it adds, and its close."""

from __future__ import annotations

import asyncio
import atexit
import functools
import ssl
import weakref
from typing import Any

import aiohttp
from multidict import CIMultiDict, CIMultiDictProxy, istr

CONNECTIONS = 1000  # open at once per event loop, every host together (no cap per host: one provider may use all)
KEEPALIVE_SECONDS = 60.0  # an idle connection is kept this long for reuse
DNS_CACHE_SECONDS = 300

SKIPPED_AUTO_HEADERS = ("User-Agent",)  # never sent: the upstream learns nothing of the gateway's software
_SKIPPED = frozenset(istr(name) for name in SKIPPED_AUTO_HEADERS)
_SKIPPED_MULTIDICT = CIMultiDictProxy(CIMultiDict((name, None) for name in SKIPPED_AUTO_HEADERS))


class UpstreamClientRequest(aiohttp.ClientRequest):
    """aiohttp's request, adding the automatic headers (Accept and Accept-Encoding: gzip, deflate unless set;
    User-Agent never) without the multidict of skipped names and the copy of the request's headers aiohttp
    builds on every request whenever a session skips one (12.4 -> 8.9 µs a request built, docs/performance.md);
    any other skip set goes through aiohttp's own code. The encodings asked for stay gzip and deflate whatever
    decoders are installed (aiohttp would add br or zstd when their packages are)."""

    DEFAULT_HEADERS = {"Accept": "*/*", "Accept-Encoding": "gzip, deflate"}

    def update_auto_headers(self, skip_auto_headers: Any) -> None:
        if skip_auto_headers != _SKIPPED:
            super().update_auto_headers(skip_auto_headers)
            return
        self._skip_auto_headers = _SKIPPED_MULTIDICT  # read by aiohttp when the payload's headers are added
        headers = self.headers
        for name, value in self.DEFAULT_HEADERS.items():
            if name not in headers:
                headers[name] = value


def new_session(**options: Any) -> aiohttp.ClientSession:
    """A pooled session: TLS verified against the system's CAs (`SSL_CERT_FILE` / `SSL_CERT_DIR` read when it
    is made), no cookies (one session serves every tenant: a cookie set by one answer must never ride on
    another request), no User-Agent, no environment read per request (proxies: upstream.proxy), answers
    decompressed as they are read (gzip, deflate), no time limit of its own (each call sets its own)."""
    connector = aiohttp.TCPConnector(
        limit=CONNECTIONS,
        limit_per_host=0,
        keepalive_timeout=KEEPALIVE_SECONDS,
        ttl_dns_cache=DNS_CACHE_SECONDS,
        ssl=ssl.create_default_context(),
    )
    return aiohttp.ClientSession(
        connector=connector,
        timeout=aiohttp.ClientTimeout(total=None),
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        skip_auto_headers=SKIPPED_AUTO_HEADERS,
        request_class=UpstreamClientRequest,
        auto_decompress=True,
        **options,
    )


_sessions: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, aiohttp.ClientSession] = weakref.WeakKeyDictionary()


def get_session() -> aiohttp.ClientSession:
    """The running event loop's session (made at its first use)."""
    loop = asyncio.get_running_loop()
    session = _sessions.get(loop)
    if session is None or session.closed:
        session = _sessions[loop] = new_session()
    return session


async def close_session() -> None:
    """Close the running loop's session and its connections (at shutdown, or at the end of a test's loop)."""
    session = _sessions.pop(asyncio.get_running_loop(), None)
    if session is not None:
        await session.close()


@atexit.register
def _drop_sessions_at_exit() -> None:
    """Close, without a loop, the sessions of loops that are gone (no "Unclosed client session" noise at exit)."""
    for loop, session in list(_sessions.items()):
        if not loop.is_running():
            connector = session.connector
            session.detach()
            if connector is not None:
                connector._close()  # the synchronous part of close(); nothing is left to await without a loop
    _sessions.clear()


@functools.lru_cache(maxsize=128)
def connect_timeout(seconds: float | None) -> aiohttp.ClientTimeout:
    """aiohttp's limit of a call: `seconds` to get a connection (a free pooled one, or a new one: TCP connect,
    proxy tunnel, TLS handshake); nothing else (the callers time the answer themselves). One object per value."""
    return aiohttp.ClientTimeout(total=None, connect=seconds)

"""The delivery worker's HTTP client: the process's outbound aiohttp session (inference.providers.upstream: the
connection pool, no cookies, the environment's egress proxy) on an event loop of its own thread, which the
worker's delivery threads hand their requests to and wait on.

One request: `timeout` seconds to connect (a free pooled connection or a new one, through the proxy when one
is set) and at most `timeout` seconds between two reads of the answer; redirects are not followed (a 3xx is
the answer); at most `MAX_ANSWER_BYTES` of the body are kept (the rest is not read). Failures to connect or
read are `aiohttp.ClientError` or `TimeoutError`, raised in the calling thread.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from dataclasses import dataclass

import aiohttp
from yarl import URL

from inference.providers import upstream

MAX_ANSWER_BYTES = 1 << 20  # kept of a receiver's answer: its status and a message are what the worker reads


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    content: bytes
    retry_after: str | None

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", "replace")


class DeliveryClient:
    """`send(method, url, body, headers)` from any thread; `close()` once at the end."""

    def __init__(self, timeout: float) -> None:
        self.timeout = aiohttp.ClientTimeout(total=None, connect=timeout, sock_read=timeout)
        self._loop: asyncio.AbstractEventLoop | None = None  # started at the first request
        self._stop: weakref.finalize | None = None  # stops it: close(), the client collected, or the process's exit
        self._lock = threading.Lock()

    def _running_loop(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                loop = self._loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="observability-http", daemon=True)
                thread.start()
                self._stop = weakref.finalize(self, _stop, loop, thread)
            return self._loop

    def send(self, method: str, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        request = self._send(method, url, body, headers)
        return asyncio.run_coroutine_threadsafe(request, self._running_loop()).result()

    async def _send(self, method: str, url: str, body: bytes, headers: dict[str, str]) -> Answer:
        target = URL(url)
        headers, proxy, proxy_headers = upstream.proxy_for_url(target, headers)
        call = upstream.get_session().request(
            method,
            target,
            data=body,
            headers=headers,
            timeout=self.timeout,
            allow_redirects=False,
            proxy=proxy,
            proxy_headers=proxy_headers,
        )
        async with call as response:
            parts: list[bytes] = []
            size = 0
            while size < MAX_ANSWER_BYTES and (chunk := await response.content.readany()):
                parts.append(chunk)
                size += len(chunk)
            return Answer(response.status, b"".join(parts)[:MAX_ANSWER_BYTES], response.headers.get("Retry-After"))

    def close(self) -> None:
        """Close the connections and stop the loop's thread (a later request starts them again)."""
        if self._stop is not None:
            self._stop()


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    try:
        asyncio.run_coroutine_threadsafe(upstream.close_session(), loop).result(5)
    except Exception:
        pass
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()

"""The keep-alive connections to upstreams and their pool, one per event loop."""

from __future__ import annotations

import asyncio
import collections
import ssl
import weakref
from typing import Any

import httptools

from inference.providers.upstream.errors import ConnectFailed, ConnectTimeout, ResponseCutShort, UpstreamDisconnected
from inference.providers.upstream.request import Prepared, prepare
from inference.providers.upstream.response import Response

MAX_HEAD_BYTES = 64 * 1024  # an answer's status line and headers larger than this: the connection is dropped
DEFAULT_LIMIT = 1000  # connections open at once per event loop
DEFAULT_KEEPALIVE = 60.0  # seconds an idle connection is kept for reuse


class _Connection(asyncio.Protocol):
    """One keep-alive connection to an origin, carrying one request at a time."""

    def __init__(self, pool: UpstreamPool, origin: tuple[str, str, int]) -> None:
        self.pool = pool
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: Response | None = None
        self.lost = False
        self.idle_since = 0.0
        self._header_names: list[bytes] = []
        self._header_values: list[bytes] = []
        self._skip = False  # inside a 1xx answer
        self._unexpected = False  # an answer began after the request's answer was complete
        self._head_bytes = 0  # received before the answer's head was complete

    # --- asyncio.Protocol ---

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        response = self.response
        if response is None:  # bytes nobody asked for (after an answer, on an idle connection)
            self.abort()
            return
        try:
            self.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as error:
            reason = (
                "switched protocols (101), not asked for" if isinstance(error, httptools.HttpParserUpgrade) else error
            )
            response = self.response
            if response is not None:
                if response.status and not response._done:
                    response._fail(ResponseCutShort(f"invalid HTTP body: {reason}"))
                elif not response.status:
                    response._fail(UpstreamDisconnected(f"invalid HTTP answer: {reason}"))
            self.abort()
            return
        if self._unexpected:  # a second answer to one request
            self.abort()
            return
        if not response.status and self.response is response:  # still inside the head (one read is <= 256 KB)
            self._head_bytes += len(data)
            if self._head_bytes > MAX_HEAD_BYTES:
                response._fail(UpstreamDisconnected(f"the answer's head is larger than {MAX_HEAD_BYTES} bytes"))
                self.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self.pool._closed(self)
        response = self.response
        if response is None or response._done:
            return
        if response.status:
            if exc is None and response.content_length is None and not self._chunked():
                response._complete(False)  # a body delimited by the end of the connection (not a reset): complete
            else:
                response._fail(ResponseCutShort("the connection ended inside the body"))
        else:
            reason = f": {exc}" if exc else ""
            response._fail(UpstreamDisconnected(f"the upstream closed the connection before answering{reason}"))

    # --- httptools callbacks ---

    def on_message_begin(self) -> None:
        response = self.response
        if response is None or response._done:
            self._unexpected = True
        self._header_names.clear()
        self._header_values.clear()

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_names.append(name)
        self._header_values.append(value)

    def on_headers_complete(self) -> None:
        status = self.parser.get_status_code()
        self._skip = 100 <= status < 200
        if self._skip or self.response is None or self._unexpected:
            return
        headers: dict[str, str] = {}
        for name, value in zip(self._header_names, self._header_values, strict=True):
            key = name.decode("latin-1").lower()
            text = value.decode("latin-1")
            headers[key] = f"{headers[key]}, {text}" if key in headers else text
        self.response._started(status, headers)

    def on_body(self, body: bytes) -> None:
        if self.response is not None and not self._skip and not self._unexpected:
            self.response._body(body)

    def on_message_complete(self) -> None:
        if self._skip:  # a 1xx answer: the real one follows
            self._skip = False
            return
        response = self.response
        if response is not None and not self._unexpected:
            response._complete(self.parser.should_keep_alive())

    # --- for the pool and the response ---

    def _chunked(self) -> bool:
        response = self.response
        return response is not None and "chunked" in response.headers.get("transfer-encoding", "").lower()

    def pause(self) -> None:
        if self.transport is not None and not self.lost:
            self.transport.pause_reading()

    def resume(self) -> None:
        if self.transport is not None and not self.lost:
            self.transport.resume_reading()

    def idle(self, response: Response) -> None:
        """`response` (this connection's, read to its end) is done with it: back to the pool when the request
        was sent whole and nothing unexpected arrived, closed otherwise."""
        transport = self.transport
        if (
            self.response is not response
            or self._unexpected
            or transport is None
            or transport.get_write_buffer_size()  # answered before its body was sent (an early 401 or 413)
        ):
            self.abort()
            return
        self.response = None
        self.pool._put(self)

    def abort(self) -> None:
        response, self.response = self.response, None
        if response is not None and not response._done:  # a reader waiting on it learns the connection is gone
            response._fail(
                ResponseCutShort("the connection was closed")
                if response.status
                else UpstreamDisconnected("the connection was closed before the answer")
            )
        if self.transport is not None and not self.lost:
            self.transport.abort()
        self.pool._closed(self)

    def usable(self) -> bool:
        transport = self.transport
        return not self.lost and transport is not None and not transport.is_closing()


class UpstreamPool:
    """The keep-alive connections of one event loop, per origin (scheme, host, port)."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        limit: int = DEFAULT_LIMIT,
        keepalive: float = DEFAULT_KEEPALIVE,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._loop = weakref.ref(loop)  # not a strong reference: the pools are kept per loop, weakly
        self.limit = limit
        self.keepalive = keepalive
        self._ssl = ssl_context
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._opening = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._sweep: asyncio.TimerHandle | None = None
        self.closed = False

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        loop = self._loop()
        if loop is None:
            raise ConnectFailed("the client's event loop is gone")
        return loop

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    async def post(
        self,
        url: str,
        headers: dict[str, str],
        body: bytes,
        connect_timeout: float | None,
        limit: int = 0,
        too_large: Any = None,
    ) -> Response:
        """Send a POST and return its answer once its head has arrived (the body is read from the Response);
        `limit`: the caller's bound on the body's decoded size (0: none), which decompression does not pass,
        `too_large()` the exception a body past it raises from the reads (the compressed body past `limit`
        too: it raises before it is inflated).
        `connect_timeout` bounds the wait for a free connection and the opening of a new one (ConnectTimeout:
        nothing was sent)."""
        return await self.send(prepare(url, headers, body), connect_timeout, limit, too_large)

    async def send(
        self, request: Prepared, connect_timeout: float | None, limit: int = 0, too_large: Any = None
    ) -> Response:
        """`post` of a request built beforehand (`prepare`)."""
        origin, request_head, body = request.origin, request.head, request.body
        connection = self._take_idle(origin) or await self._acquire(origin, connect_timeout)
        loop = self.loop
        response = Response(connection)
        response.limit = limit
        response.too_large = too_large
        response._head = loop.create_future()
        connection.response = response
        connection._head_bytes = 0
        if len(body) < 65536:
            connection.transport.write(request_head + body)
        else:  # uvloop sends the two buffers with one writev, without joining them
            connection.transport.writelines((request_head, body))
        try:
            await response._head
        except BaseException:
            connection.abort()
            raise
        return response

    def _take_idle(self, origin: tuple[str, str, int]) -> _Connection | None:
        idle = self._idle.get(origin)
        if not idle:
            return None
        now = self.loop.time()
        while idle:
            connection = idle.pop()
            if connection.usable() and now - connection.idle_since < self.keepalive:
                return connection
            connection.abort()
        return None

    async def _acquire(self, origin: tuple[str, str, int], timeout: float | None) -> _Connection:
        """An idle connection to `origin`, or a new one when fewer than `limit` are open (an idle connection to
        another origin is closed to make room); otherwise wait for a connection to be released or closed. All
        within `timeout` (ConnectTimeout)."""
        loop = self.loop
        deadline = None if timeout is None else loop.time() + timeout
        while True:
            if self.closed:
                raise ConnectFailed("the client is closed")
            connection = self._take_idle(origin)
            if connection is not None:
                return connection
            if len(self._open) + self._opening < self.limit:
                return await self._connect(origin, None if deadline is None else max(deadline - loop.time(), 0))
            if self._close_one_idle():
                continue
            waiter = loop.create_future()
            self._waiters.append(waiter)
            try:
                async with asyncio.timeout_at(deadline):
                    await waiter
            except TimeoutError:
                self._pass_on(waiter)
                raise ConnectTimeout(f"no free upstream connection within {timeout} s ({self.limit} open)") from None
            except BaseException:
                self._pass_on(waiter)
                raise

    def _pass_on(self, waiter: asyncio.Future) -> None:
        """A waiter that gives up: its wake-up, if it had one, goes to the next waiter."""
        if waiter.done() and not waiter.cancelled():
            self._wake_one()
        elif waiter in self._waiters:
            self._waiters.remove(waiter)

    async def _connect(self, origin: tuple[str, str, int], timeout: float | None) -> _Connection:
        scheme, host, port = origin
        self._opening += 1
        try:
            opening = self.loop.create_connection(
                lambda: _Connection(self, origin),
                host,
                port,
                ssl=self.ssl_context() if scheme == "https" else None,
                server_hostname=host if scheme == "https" else None,
            )
            try:
                async with asyncio.timeout(timeout):
                    _, connection = await opening
            except TimeoutError:
                raise ConnectTimeout(f"no connection to {host}:{port} within {timeout} s") from None
            except (OSError, ssl.SSLError) as error:
                raise ConnectFailed(f"{host}:{port}: {error}") from None
        except BaseException:
            self._opening -= 1
            self._wake_one()  # the slot it held is free again
            raise
        self._opening -= 1
        if self.closed:
            connection.abort()
            raise ConnectFailed("the client is closed")
        self._open.add(connection)
        return connection

    def _close_one_idle(self) -> bool:
        for idle in self._idle.values():
            if idle:
                idle.pop(0).abort()
                return True
        return False

    def _put(self, connection: _Connection) -> None:
        if not connection.usable() or self.closed or connection not in self._open:
            connection.abort()
            return
        idle = self._idle.setdefault(connection.origin, [])
        if connection in idle:  # already idle: never twice in the list (two requests on one socket)
            return
        connection.idle_since = self.loop.time()
        idle.append(connection)
        if self._sweep is None:
            self._sweep = self.loop.call_later(self.keepalive / 2, self._sweep_idle)
        self._wake_one()

    def _closed(self, connection: _Connection) -> None:
        if connection in self._open:
            self._open.discard(connection)
            idle = self._idle.get(connection.origin)
            if idle and connection in idle:
                idle.remove(connection)
            self._wake_one()

    def _wake_one(self) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    def _sweep_idle(self) -> None:
        """Close the connections idle longer than `keepalive` (the upstream may have closed them already)."""
        self._sweep = None
        now = self.loop.time()
        for origin, idle in list(self._idle.items()):
            for connection in [c for c in idle if now - c.idle_since >= self.keepalive or not c.usable()]:
                connection.abort()
            if not self._idle.get(origin):
                self._idle.pop(origin, None)
        if any(self._idle.values()):
            self._sweep = self.loop.call_later(self.keepalive / 2, self._sweep_idle)

    def connections_open(self) -> int:
        return len(self._open)

    def close(self) -> None:
        """Close every connection (answers being read fail as cut short); later calls fail."""
        self.closed = True
        if self._sweep is not None:
            self._sweep.cancel()
            self._sweep = None
        for connection in list(self._open):
            connection.abort()
        self._idle.clear()
        waiters, self._waiters = self._waiters, collections.deque()
        for waiter in waiters:  # they find the pool closed
            if not waiter.done():
                waiter.set_result(None)


_pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, UpstreamPool] = weakref.WeakKeyDictionary()


def get_pool() -> UpstreamPool:
    """The running event loop's pool (created on first use)."""
    loop = asyncio.get_running_loop()
    pool = _pools.get(loop)
    if pool is None or pool.closed:
        pool = _pools[loop] = UpstreamPool(loop)
    return pool


def close_pool() -> None:
    """Close the running event loop's pool (at shutdown, or at the end of a test's event loop)."""
    pool = _pools.pop(asyncio.get_running_loop(), None)
    if pool is not None:
        pool.close()

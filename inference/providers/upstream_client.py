"""The data plane's HTTP/1.1 client for upstream calls: one pool of keep-alive connections per event loop,
responses parsed by httptools (the parser uvicorn serves with), bodies handed over as they arrive.

Made for what an upstream call needs and nothing else (a POST with a body, its answer read whole or as it
streams), so a call costs a fraction of a general-purpose client's CPU: the request's head is written with
its body in one write, a small answer that arrives with its head is returned without another wake-up, and
nothing is copied between the socket and the caller but the body's chunks (docs/performance.md).

- `http://` and `https://` (certificates verified against the system's CAs, or the pool's `ssl_context`;
  SNI set); no proxy (upstream hosts come from the catalog only), no redirects (the caller refuses a 3xx),
  no cookies, no User-Agent.
- Sends `Host`, `Content-Length`, and, unless the request sets them, `Accept: */*` and `Accept-Encoding:
  gzip, deflate`; a gzip or deflate answer is decompressed as it is read, never to more bytes than the
  caller's bound (`Response.limit`) plus one chunk, so a compressed bomb cannot grow the process's memory.
- A header name or value with a CR, LF or NUL is refused before anything is sent (no header injection).
- Connections: at most `limit` open at once (more callers wait for one), idle ones kept `keepalive` seconds
  and reused per origin; an answer read to its end on a keep-alive connection returns it to the pool, any
  other end (an error, a body not read to its end, `close()`) closes it. 1xx answers are skipped.
- A stream's consumer slower than the upstream: reading pauses once `PAUSE_BYTES` are buffered unread and
  resumes when the consumer catches up (the upstream then waits on TCP, as it would for a slow client).

Failures are exceptions the caller maps (inference.providers.errors): `ConnectTimeout` (a TimeoutError: no
connection within the connect limit, nothing sent), `ConnectFailed` (refused, unknown host, TLS handshake),
`ResponseCutShort` (the connection ended inside the body, or the body is not valid chunked or compressed
data), `UpstreamDisconnected` (closed before the answer's head, an invalid answer).
"""

from __future__ import annotations

import asyncio
import collections
import functools
import ssl
import weakref
import zlib
from typing import Any
from urllib.parse import urlsplit

import httptools

PAUSE_BYTES = 1 << 20  # unread bytes of one answer that pause reading from its connection
MAX_HEAD_BYTES = 64 * 1024  # an answer's status line and headers larger than this: the connection is dropped
DEFAULT_LIMIT = 1000  # connections open at once per event loop
DEFAULT_KEEPALIVE = 60.0  # seconds an idle connection is kept for reuse

_FORBIDDEN = ("\r", "\n", "\x00")


class ConnectTimeout(TimeoutError):
    """No connection within the connect limit (nothing was sent)."""


class ConnectFailed(ConnectionError):
    """The connection could not be opened (refused, unknown host, TLS handshake)."""


class ResponseCutShort(ConnectionError):
    """The answer's body broke off (the connection ended inside it) or could not be decoded."""


class InvalidRequest(ValueError):
    """A request that cannot be sent as it is (a header with a control character); nothing was sent."""


class UpstreamDisconnected(ConnectionError):
    """The connection ended, or sent something that is not HTTP/1.1, before the answer's head."""


class Headers:
    """An answer's headers: `get(name, default)` by case-insensitive name (repeated headers joined by ", ")."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[str, str]) -> None:
        self._items = items

    def get(self, name: str, default: Any = None) -> Any:
        return self._items.get(name.lower(), default)

    def __getitem__(self, name: str) -> str:
        return self._items[name.lower()]

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._items

    def items(self):
        return self._items.items()


@functools.lru_cache(maxsize=256)
def _target(url: str) -> tuple[tuple[str, str, int], bytes, bytes]:
    """((scheme, host, port), request target, Host header value) of an absolute http(s) URL."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ConnectFailed(f"unsupported URL scheme {parts.scheme!r}")
    host = parts.hostname
    if not host:
        raise ConnectFailed("URL without a host")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as error:
        raise ConnectFailed(str(error)) from None
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ConnectFailed(f"invalid host name {host!r}") from None
    shown = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    if parts.port is not None and port != (443 if scheme == "https" else 80):
        shown = f"{shown}:{port}"
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    for text in (target, shown):
        if any(c in text for c in (*_FORBIDDEN, " ")):
            raise ConnectFailed("URL with a space or a control character")
    return (scheme, ascii_host, port), target.encode("utf-8"), shown.encode("ascii")


def _head(target: bytes, host: bytes, headers: dict[str, str], length: int) -> bytes:
    lines = [b"POST ", target, b" HTTP/1.1\r\nHost: ", host, b"\r\n"]
    accept = encoding = False
    for name, value in headers.items():
        if any(c in name or c in value for c in _FORBIDDEN) or not name or ":" in name:
            raise InvalidRequest(f"header {name!r} has a control character in its name or value")
        lowered = name.lower()
        if lowered in ("host", "content-length", "transfer-encoding", "connection"):
            continue  # the client's own
        accept = accept or lowered == "accept"
        encoding = encoding or lowered == "accept-encoding"
        lines += [name.encode("utf-8"), b": ", value.encode("utf-8"), b"\r\n"]
    if not accept:
        lines.append(b"Accept: */*\r\n")
    if not encoding:
        lines.append(b"Accept-Encoding: gzip, deflate\r\n")
    lines += [b"Content-Length: ", str(length).encode(), b"\r\n\r\n"]
    return b"".join(lines)


class _Decoder:
    """Decompresses a gzip or deflate (zlib-wrapped or raw) body as it arrives, at most `room` bytes a call."""

    __slots__ = ("raw", "zlib")

    def __init__(self, encoding: str) -> None:
        self.raw = encoding == "deflate"
        self.zlib = zlib.decompressobj(47 if encoding == "gzip" else 15)  # 47: gzip or zlib header

    def feed(self, data: bytes, room: int) -> bytes:
        try:
            return self.zlib.decompress(data, max(room, 1))
        except zlib.error:
            if self.raw:  # "deflate" sent as raw deflate (no zlib header), as some servers do
                self.raw = False
                self.zlib = zlib.decompressobj(-15)
                return self.feed(data, room)
            raise


class Response:
    """An answer being read: `status`, `headers`, `content_length`; `read_any()` for its next bytes (b"" at its
    end), `read_all()` for the rest; `release()` once read, `close()` to drop it (and its connection)."""

    __slots__ = (
        "_buffered",
        "_chunks",
        "_connection",
        "_decoder",
        "_done",
        "_error",
        "_head",
        "_keep_alive",
        "_paused",
        "_received",
        "_waiter",
        "content_length",
        "headers",
        "limit",
        "status",
    )

    def __init__(self, connection: _Connection) -> None:
        self._connection = connection
        self._head: asyncio.Future | None = None
        self._waiter: asyncio.Future | None = None
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._received = 0
        self._done = False
        self._keep_alive = False
        self._error: BaseException | None = None
        self._decoder: _Decoder | None = None
        self._paused = False
        self.status = 0
        self.headers = Headers({})
        self.content_length: int | None = None
        self.limit = 0  # the caller's bound on the decoded body (0: none): decompression never goes much past it

    # --- from the connection ---

    def _started(self, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = Headers(headers)
        length = headers.get("content-length")
        if length is not None and length.isdigit():
            self.content_length = int(length)
        encoding = headers.get("content-encoding", "").strip().lower()
        if encoding in ("gzip", "x-gzip", "deflate"):
            self._decoder = _Decoder("gzip" if encoding != "deflate" else "deflate")
        head = self._head
        if head is not None and not head.done():
            head.set_result(None)

    def _body(self, data: bytes) -> None:
        if self.limit and self._received > self.limit:
            return  # past the caller's bound: it stops reading at the bytes it has
        decoder = self._decoder
        if decoder is not None:
            try:
                data = decoder.feed(data, self.limit + 1 - self._received if self.limit else 1 << 62)
            except zlib.error as error:
                self._fail(ResponseCutShort(f"cannot decode the {self.headers.get('content-encoding')} body: {error}"))
                self._connection.abort()
                return
        if not data:
            return
        self._received += len(data)
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > PAUSE_BYTES and not self._paused:
            self._paused = True
            self._connection.pause()
        self._wake()

    def _complete(self, keep_alive: bool) -> None:
        self._done = True
        self._keep_alive = keep_alive
        self._wake()

    def _fail(self, error: BaseException) -> None:
        if self._error is None and not self._done:
            self._error = error
        head = self._head
        if head is not None and not head.done():
            head.set_exception(error)
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    # --- for the caller ---

    async def read_any(self) -> bytes:
        """The bytes received since the last call (at least one), or b"" when the body is complete."""
        while not self._chunks:
            if self._done:
                return b""
            if self._error is not None:
                raise self._error
            self._waiter = self._connection.loop.create_future()
            await self._waiter
        chunks = self._chunks
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._buffered = 0
        if self._paused:
            self._paused = False
            self._connection.resume()
        return data

    async def read_all(self, too_large: Any = None) -> bytes:
        """The rest of the body; `too_large()` (an exception to raise) as soon as it exceeds `limit` (when set)."""
        limit = self.limit
        if limit and too_large is not None and (self.content_length or 0) > limit:
            raise too_large()
        parts: list[bytes] = []
        size = 0
        while chunk := await self.read_any():
            size += len(chunk)
            if limit and too_large is not None and size > limit:
                raise too_large()
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def release(self) -> None:
        """Done with the answer: its connection goes back to the pool when the body was read to its end on a
        keep-alive connection, and is closed otherwise."""
        connection = self._connection
        if self._done and self._keep_alive and not self._chunks and self._error is None:
            connection.idle()
        else:
            connection.abort()

    def close(self) -> None:
        """Drop the answer and close its connection (the rest of the body is not read)."""
        self._connection.abort()


class _Connection(asyncio.Protocol):
    """One keep-alive connection to an origin, carrying one request at a time."""

    def __init__(self, pool: UpstreamPool, origin: tuple[str, str, int]) -> None:
        self.pool = pool
        self.loop = pool.loop
        self.origin = origin
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.response: Response | None = None
        self.lost = False
        self.idle_since = 0.0
        self._header_names: list[bytes] = []
        self._header_values: list[bytes] = []
        self._status = 0
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
            response = self.response
            if response is not None:
                if response.status and not response._done:
                    response._fail(ResponseCutShort(f"invalid HTTP body: {error}"))
                elif not response.status:
                    response._fail(UpstreamDisconnected(f"invalid HTTP answer: {error}"))
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
            if response.content_length is None and not self._chunked():
                response._complete(False)  # a body delimited by the end of the connection: complete
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
        self._status = status
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

    def idle(self) -> None:
        if self._unexpected:
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
        self.loop = loop
        self.limit = limit
        self.keepalive = keepalive
        self._ssl = ssl_context
        self._idle: dict[tuple[str, str, int], list[_Connection]] = {}
        self._open: set[_Connection] = set()
        self._opening = 0
        self._waiters: collections.deque[asyncio.Future] = collections.deque()
        self._sweep: asyncio.TimerHandle | None = None
        self.closed = False

    def ssl_context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    async def post(
        self, url: str, headers: dict[str, str], body: bytes, connect_timeout: float | None, limit: int = 0
    ) -> Response:
        """Send a POST and return its answer once its head has arrived (the body is read from the Response);
        `limit`: the caller's bound on the body's decoded size (0: none), which decompression does not pass."""
        origin, target, host = _target(url)
        head = _head(target, host, headers, len(body))
        connection = self._take_idle(origin) or await self._acquire(origin, connect_timeout)
        response = Response(connection)
        response.limit = limit
        response._head = self.loop.create_future()
        connection.response = response
        connection._head_bytes = 0
        if len(body) < 65536:
            connection.transport.write(head + body)
        else:  # not copied into one buffer
            connection.transport.writelines((head, body))
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
        another origin is closed to make room); otherwise wait for a connection to be released or closed."""
        while True:
            if self.closed:
                raise ConnectFailed("the client is closed")
            connection = self._take_idle(origin)
            if connection is not None:
                return connection
            if len(self._open) + self._opening < self.limit:
                return await self._connect(origin, timeout)
            if self._close_one_idle():
                continue
            waiter = self.loop.create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: the wake-up goes to the next waiter
                elif waiter in self._waiters:
                    self._waiters.remove(waiter)
                raise

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
        finally:
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
        if not connection.usable() or self.closed:
            connection.abort()
            return
        connection.idle_since = self.loop.time()
        self._idle.setdefault(connection.origin, []).append(connection)
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

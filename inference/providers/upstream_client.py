"""The data plane's HTTP/1.1 client for upstream calls: one pool of keep-alive connections per event loop,
responses parsed by httptools (the parser uvicorn serves with), bodies handed over as they arrive.

Made for what an upstream call needs and nothing else (a POST with a body, its answer read whole or as it
streams), so a call costs a fraction of a general-purpose client's CPU: the request's head is written with
its body in one write, a small answer that arrives with its head is returned without another wake-up, and
nothing is copied between the socket and the caller but the body's chunks (docs/performance.md).

- `http://` and `https://` (certificates verified against the system's CAs, or the pool's `ssl_context`;
  SNI set); no proxy (upstream hosts come from the catalog only), no redirects (the caller refuses a 3xx),
  no cookies, no User-Agent. A URL's userinfo is sent as Basic credentials (unless the request sets
  Authorization); its path and query are percent-encoded.
- Sends `Host`, `Content-Length`, and, unless the request sets them, `Accept: */*` and `Accept-Encoding:
  gzip, deflate`; a gzip (one member or several) or deflate (zlib-wrapped or raw) answer is decompressed as
  it is read, never to more bytes than the caller's bound (`Response.limit`) plus one chunk, and a
  compressed body itself past the bound is refused before it is inflated; one that ends before its end,
  data after a deflate stream, or another content coding is `ResponseCutShort`.
- A header whose name is not an RFC 9110 token or whose value has a control character other than a tab is
  refused before anything is sent (`InvalidRequest`: no header injection, no second Content-Length).
- Connections: at most `limit` open at once (more callers wait for one, within the connect limit), idle ones
  kept `keepalive` seconds and reused per origin; an answer complete on a keep-alive connection whose
  request was sent whole returns it to the pool (once: a second `release()` does nothing), any other end (an
  error, a body not read to its end, a reset, `close()`) closes it. 1xx answers are skipped (101 refused).
- A stream's consumer slower than the upstream: reading pauses once `PAUSE_BYTES` are buffered unread and
  resumes when the consumer catches up (the upstream then waits on TCP, as it would for a slow client).

Failures are exceptions the caller maps (inference.providers.errors): `ConnectTimeout` (a TimeoutError: no
free or new connection within the connect limit, nothing sent), `ConnectFailed` (refused, unknown host, TLS handshake),
`ResponseCutShort` (the connection ended inside the body, or the body is not valid chunked or compressed
data), `UpstreamDisconnected` (closed before the answer's head, an invalid answer).
"""

from __future__ import annotations

import asyncio
import base64
import collections
import functools
import re
import ssl
import weakref
import zlib
from typing import Any
from urllib.parse import quote, unquote, urlsplit

import httptools

PAUSE_BYTES = 1 << 20  # unread bytes of one answer that pause reading from its connection
MAX_HEAD_BYTES = 64 * 1024  # an answer's status line and headers larger than this: the connection is dropped
DEFAULT_LIMIT = 1000  # connections open at once per event loop
DEFAULT_KEEPALIVE = 60.0  # seconds an idle connection is kept for reuse

_TOKEN = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")  # a header name (RFC 9110 token)
_BAD_VALUE = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # control characters other than HTAB
_OWN_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_PATH_SAFE = "/%:@!$&'()*+,;=-._~"  # RFC 3986 pchar and "/", existing escapes kept
_QUERY_SAFE = _PATH_SAFE + "?"


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
def _target(url: str) -> tuple[tuple[str, str, int], bytes, bytes, str | None]:
    """((scheme, host, port), request target, Host header value, Basic credentials of the URL's userinfo or
    None) of an absolute http(s) URL."""
    try:
        parts = urlsplit(url)
        port_number = parts.port
    except ValueError as error:
        raise ConnectFailed(f"invalid URL: {error}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise ConnectFailed(f"unsupported URL scheme {parts.scheme!r}")
    host = parts.hostname
    if not host:
        raise ConnectFailed("URL without a host")
    default = 443 if scheme == "https" else 80
    port = default if port_number is None else port_number
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise ConnectFailed(f"invalid host name {host!r}") from None
    shown = f"[{ascii_host}]" if ":" in ascii_host else ascii_host
    if port != default:
        shown = f"{shown}:{port}"
    target = quote(parts.path or "/", safe=_PATH_SAFE)
    if parts.query:
        target += "?" + quote(parts.query, safe=_QUERY_SAFE)
    if _BAD_VALUE.search(target + shown) or " " in target:
        raise ConnectFailed("URL with a space or a control character")
    credentials = None
    if parts.username is not None:  # as aiohttp did: the URL's userinfo sent as Basic credentials
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        credentials = "Basic " + base64.b64encode(pair.encode("utf-8")).decode("ascii")
    return (scheme, ascii_host, port), target.encode("ascii"), shown.encode("ascii"), credentials


def _head(target: bytes, host: bytes, headers: dict[str, str], length: int, credentials: str | None) -> bytes:
    lines = [b"POST ", target, b" HTTP/1.1\r\nHost: ", host, b"\r\n"]
    accept = encoding = authorization = False
    try:
        for name, value in headers.items():
            if not _TOKEN.fullmatch(name) or _BAD_VALUE.search(value):
                raise InvalidRequest(f"header {name!r}: not a valid name, or a control character in its value")
            lowered = name.lower()
            if lowered in _OWN_HEADERS:
                continue  # the client's own
            accept = accept or lowered == "accept"
            encoding = encoding or lowered == "accept-encoding"
            authorization = authorization or lowered == "authorization"
            lines += [name.encode("ascii"), b": ", value.encode("utf-8"), b"\r\n"]
    except UnicodeEncodeError as error:  # a lone surrogate in a value
        raise InvalidRequest(f"header value that is not valid text: {error}") from None
    if credentials is not None and not authorization:
        lines += [b"Authorization: ", credentials.encode("ascii"), b"\r\n"]
    if not accept:
        lines.append(b"Accept: */*\r\n")
    if not encoding:
        lines.append(b"Accept-Encoding: gzip, deflate\r\n")
    lines += [b"Content-Length: ", str(length).encode(), b"\r\n\r\n"]
    return b"".join(lines)


class _Decoder:
    """Decompresses a gzip (one member or several) or deflate (zlib-wrapped or raw) body as it arrives, at most
    `room` bytes a call; `finished()` says whether the compressed data reached its end."""

    __slots__ = ("fed", "gzip", "seen", "zlib")

    def __init__(self, encoding: str) -> None:
        self.gzip = encoding == "gzip"
        self.zlib = zlib.decompressobj(31 if self.gzip else 15)
        self.seen: list[bytes] | None = None if self.gzip else []  # deflate: input kept until output proves the wrapper
        self.fed = 0  # compressed bytes received

    def feed(self, data: bytes, room: int) -> bytes:
        self.fed += len(data)
        seen = self.seen
        if seen is not None:
            seen.append(data)
            if self.fed > 65536:  # no output from 64 KB of input: no fallback to raw deflate any more
                self.seen = None
        try:
            out = self.zlib.decompress(data, max(room, 1))
        except zlib.error:
            if seen is None:
                raise
            # "deflate" sent as raw deflate (no zlib wrapper), as some servers do: every byte again, raw
            self.seen = None
            self.zlib = zlib.decompressobj(-15)
            self.fed = 0
            return self.feed(b"".join(seen), room)
        if out and seen is not None:
            self.seen = None
        if self.gzip and self.zlib.eof and self.zlib.unused_data:  # the next gzip member
            rest = self.zlib.unused_data
            self.zlib = zlib.decompressobj(31)
            out += self.feed(rest, max(room - len(out), 1))
        elif not self.gzip and self.zlib.eof and self.zlib.unused_data:
            raise zlib.error("data after the end of the deflate stream")
        return out

    def finished(self) -> bool:
        return self.zlib.eof


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
        "_unreadable",
        "_waiter",
        "content_length",
        "headers",
        "limit",
        "status",
        "too_large",
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
        self._unreadable = ""
        self.status = 0
        self.headers = Headers({})
        self.content_length: int | None = None
        self.limit = 0  # the caller's bound on the decoded body (0: none): decompression never goes much past it
        self.too_large: Any = None  # the caller's exception (factory) for a body past `limit`

    # --- from the connection ---

    def _started(self, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self.headers = Headers(headers)
        length = headers.get("content-length", "").strip()
        if length.isdigit():
            self.content_length = int(length)
        codings = [c for c in (c.strip().lower() for c in headers.get("content-encoding", "").split(",")) if c]
        codings = [c for c in codings if c != "identity"]
        if len(codings) == 1 and codings[0] in ("gzip", "x-gzip", "deflate"):
            self._decoder = _Decoder("deflate" if codings[0] == "deflate" else "gzip")
        elif codings:  # only gzip and deflate are asked for (Accept-Encoding)
            self._unreadable = f"a body in a content coding the client did not ask for ({', '.join(codings)})"
        head = self._head
        if head is not None and not head.done():
            head.set_result(None)

    def _body(self, data: bytes) -> None:
        if self.limit and self._received > self.limit:
            return  # past the caller's bound: it stops reading at the bytes it has
        if self._unreadable:
            self._fail(ResponseCutShort(f"cannot decode the answer: {self._unreadable}"))
            self._drop()
            return
        decoder = self._decoder
        if decoder is not None:
            if self.limit and decoder.fed + len(data) > self.limit:  # compressed input that inflates to little
                too_large = self.too_large
                self._fail(too_large() if too_large else ResponseCutShort(f"compressed body over {self.limit} bytes"))
                self._drop()
                return
            try:
                data = decoder.feed(data, self.limit + 1 - self._received if self.limit else 1 << 62)
            except zlib.error as error:
                self._fail(ResponseCutShort(f"cannot decode the {self.headers.get('content-encoding')} body: {error}"))
                self._drop()
                return
        if not data:
            return
        self._received += len(data)
        self._chunks.append(data)
        self._buffered += len(data)
        if self._buffered > PAUSE_BYTES and not self._paused and self._connection is not None:
            self._paused = True
            self._connection.pause()
        self._wake()

    def _complete(self, keep_alive: bool) -> None:
        decoder = self._decoder
        if decoder is not None and decoder.fed and not decoder.finished():  # (an empty body is no stream at all)
            if not (self.limit and self._received > self.limit):
                self._fail(ResponseCutShort("the compressed body ended before its end"))
                return
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
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        chunks = self._chunks
        data = chunks.popleft() if len(chunks) == 1 else b"".join(chunks)
        chunks.clear()
        self._buffered = 0
        if self._paused:
            self._paused = False
            if self._connection is not None:
                self._connection.resume()
        return data

    async def read_all(self, too_large: Any = None) -> bytes:
        """The rest of the body; `too_large()` (an exception to raise) as soon as it exceeds `limit` (when set)."""
        too_large = too_large or self.too_large
        limit = self.limit
        if limit and too_large is not None and self._decoder is None and (self.content_length or 0) > limit:
            raise too_large()  # the declared length (of the decoded body when there is no content coding)
        parts: list[bytes] = []
        size = 0
        while chunk := await self.read_any():
            size += len(chunk)
            if limit and too_large is not None and size > limit:
                raise too_large()
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.abort()

    def release(self) -> None:
        """Done with the answer: its connection goes back to the pool when the body was read to its end on a
        keep-alive connection and the request was sent whole, and is closed otherwise. Once: later calls (and
        `close()`) do nothing, the connection being another request's by then."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._done and self._keep_alive and not self._chunks and self._error is None:
            connection.idle(self)
        else:
            connection.abort()

    def close(self) -> None:
        """Drop the answer and close its connection (the rest of the body is not read)."""
        self._drop()


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
        origin, target, host, credentials = _target(url)
        head = _head(target, host, headers, len(body), credentials)
        connection = self._take_idle(origin) or await self._acquire(origin, connect_timeout)
        loop = self.loop
        response = Response(connection)
        response.limit = limit
        response.too_large = too_large
        response._head = loop.create_future()
        connection.response = response
        connection._head_bytes = 0
        if len(body) < 65536:
            connection.transport.write(head + body)
        else:  # uvloop sends the two buffers with one writev, without joining them
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

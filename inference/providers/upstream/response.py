"""An answer being read: its head, its body's chunks as they arrive (decoded, bounded), and its end."""

from __future__ import annotations

import asyncio
import collections
import zlib
from typing import Any

from inference.providers.upstream.decoding import Decoder
from inference.providers.upstream.errors import ResponseCutShort

PAUSE_BYTES = 1 << 20  # unread bytes of one answer that pause reading from its connection


class Headers:
    """An answer's headers: `get(name, default)` by case-insensitive name (repeated headers joined by ", ")."""

    __slots__ = ("_items",)

    def __init__(self, items: dict[str, str]) -> None:
        self._items = items

    def get(self, name: str, default: Any = None) -> Any:
        return self._items.get(name.lower(), default)


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

    def __init__(self, connection: Any) -> None:
        self._connection = connection
        self._head: asyncio.Future | None = None
        self._waiter: asyncio.Future | None = None
        self._chunks: collections.deque[bytes] = collections.deque()
        self._buffered = 0
        self._received = 0
        self._done = False
        self._keep_alive = False
        self._error: BaseException | None = None
        self._decoder: Decoder | None = None
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
            self._decoder = Decoder("deflate" if codings[0] == "deflate" else "gzip")
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

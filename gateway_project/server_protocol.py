"""uvicorn's httptools protocol with two limits it lacks: the size of a request's head and the time a
request may take to arrive.

- Head (request line and headers) larger than `GATEWAY_MAX_HEADER_BYTES` (default 64 KiB): 431, connection
  closed. uvicorn's httptools protocol has no such limit: one request with a 100 MB header grew a process
  from 162 to 358 MB, never returned.
- A request (head and body) not fully received `GATEWAY_REQUEST_READ_TIMEOUT_SECONDS` (default 60 s)
  after its first byte: 408 if no answer has started, connection closed. Without it a body that trickles
  in forever holds a connection (and Django's request thread on the management plane) forever.

Served by `python -m gateway_project.serve` (what `make run` uses): uvicorn's own command line, with this
protocol in place of httptools.
"""

from __future__ import annotations

import asyncio

import orjson
from django.conf import settings
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from gateway_project.api.errors import error_envelope


def _response(status: int, reason: str, message: str) -> bytes:
    body = orjson.dumps(error_envelope(status, message))
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\nx-content-type-options: nosniff\r\n\r\n"
    )
    return head.encode() + body


class CoalescingTransport:
    """The connection's transport, with the writes made in one turn of the event loop sent in one system call.

    uvicorn writes a response's head when the application sends `http.response.start` and its body on
    `http.response.body`: two `send` system calls per JSON answer, each a full pass through the loopback
    TCP stack. Here the first write of a turn is kept and sent, joined with the writes that follow it in
    the same turn, by a callback at the start of the next turn (microseconds later). `close()` sends what
    is kept first; `abort()` drops it, as the transport's own abort drops its buffer.
    """

    __slots__ = ("_buffer", "_loop", "_scheduled", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._buffer: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes) -> None:
        if not data:
            return
        self._buffer.append(data)
        if not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def writelines(self, lines) -> None:
        for data in lines:
            self.write(data)

    def flush(self) -> None:
        self._scheduled = False
        buffer = self._buffer
        if not buffer:
            return
        self._buffer = []
        if not self.transport.is_closing():
            self.transport.write(buffer[0] if len(buffer) == 1 else b"".join(buffer))

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self._buffer = []
        self.transport.abort()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str):
        return getattr(self.transport, name)


class GatewayHttpProtocol(HttpToolsProtocol):
    """HttpToolsProtocol with a head size limit (431), a request read deadline (408), and the writes of one
    event-loop turn sent together (`CoalescingTransport`: one system call for a JSON answer's head and body)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._reading_head = True
        self._read_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        super().connection_made(CoalescingTransport(transport, self.loop))

    def data_received(self, data: bytes) -> None:
        if self._reading_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._reading_head and self._head_bytes > settings.GATEWAY_MAX_HEADER_BYTES:
            self._refuse(431, "Request Header Fields Too Large", "Request headers too large")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._cancel_deadline()
        timeout = settings.GATEWAY_REQUEST_READ_TIMEOUT_SECONDS
        if timeout:
            self._read_deadline = self.loop.call_later(timeout, self._read_timed_out)

    def on_headers_complete(self) -> None:
        self._reading_head = False
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._cancel_deadline()
        self._reading_head = True
        self._head_bytes = 0
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_deadline()
        super().connection_lost(exc)

    def _cancel_deadline(self) -> None:
        if self._read_deadline is not None:
            self._read_deadline.cancel()
            self._read_deadline = None

    def _read_timed_out(self) -> None:
        self._read_deadline = None
        timeout = settings.GATEWAY_REQUEST_READ_TIMEOUT_SECONDS
        self._refuse(408, "Request Timeout", f"Request not received within {timeout:g} s")

    def _refuse(self, status: int, reason: str, message: str) -> None:
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or not cycle.response_started:
            self.transport.write(_response(status, reason, message))
        if cycle is not None:
            cycle.disconnected = True  # the application sees the client gone (http.disconnect)
            cycle.message_event.set()
        self.transport.close()

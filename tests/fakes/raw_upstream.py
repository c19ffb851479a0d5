"""A loopback upstream that writes the exact bytes of each case (for what a framework server would never send:
bodies cut short, compressed bodies of every shape, 1xx answers, garbage, an endless head).

`Server(answer, tls=None)` (async context manager): `answer(request_bytes, writer, index)` writes the answer
of each request and returns False to close the connection; `requests` holds every request's bytes (head and
body), `connections` how many connections were opened and `most_open` the most open at once.
"""

from __future__ import annotations

import asyncio
import ssl


class Server:
    def __init__(self, answer, tls: ssl.SSLContext | None = None) -> None:
        self.answer = answer
        self.tls = tls
        self.requests: list[bytes] = []
        self.connections = 0
        self.open_now = 0
        self.most_open = 0

    async def __aenter__(self) -> Server:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.tls)
        self.port = self.server.sockets[0].getsockname()[1]
        scheme = "https" if self.tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}/v1/echo?x=1"
        return self

    async def __aexit__(self, *exc) -> None:
        self.server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.open_now += 1
        self.most_open = max(self.most_open, self.open_now)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                keep = await self.answer(head + body, writer, len(self.requests) - 1)
                await writer.drain()
                if keep is False:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            self.open_now -= 1
            writer.close()


def ok(body: bytes, extra: bytes = b"") -> bytes:
    """A 200 JSON answer with `body` and the `extra` header lines."""
    return b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(body),
        extra,
        body,
    )


def fixed(data: bytes, keep=True):
    """An `answer` that writes `data` to every request."""

    async def answer(request, writer, index):
        writer.write(data)
        return keep

    return answer


def sse_answer(*events: bytes) -> bytes:
    """A 200 event stream of `events`, one chunk each, chunked."""
    body = b"".join(b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
    return b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + body

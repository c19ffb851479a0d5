"""A forward HTTP proxy on an ephemeral loopback port, in a background thread: what `HTTPS_PROXY` /
`HTTP_PROXY` point at in a company network, speaking the real protocol (RFC 9110 §9.3.6, RFC 9112 §3.2.2).

- An absolute-form request (`POST http://host:port/path HTTP/1.1`, for `http://` URLs) is sent on to its
  origin in origin form (`POST /path`), its `Proxy-Authorization` and `Proxy-Connection` dropped and
  `Connection: close` set; the answer is relayed as it arrives (streams included), with `Connection: close`
  (one request per client connection).
- `CONNECT host:port` (for `https://` URLs) opens a TCP connection to the target, answers `200 Connection
  established` and relays bytes both ways (the TLS session is the client's and the origin's: the proxy sees
  none of it).
- `credentials="user:password"`: a request without that `Proxy-Authorization: Basic` is answered 407.

`relayed` records `(method, target, headers)` of every request it took (headers with lower-case names), so a
test can show what went through it; `reset()` clears it.

Use: `ForwardProxy().start()` ... `.stop()`; `url` is `http://127.0.0.1:<port>` (with the credentials when set).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import threading
from urllib.parse import urlsplit


class ForwardProxy:
    def __init__(self, credentials: str | None = None) -> None:
        self.credentials = credentials
        self.relayed: list[tuple[str, str, dict[str, str]]] = []
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        userinfo = f"{self.credentials}@" if self.credentials else ""
        return f"http://{userinfo}127.0.0.1:{self.port}"

    def reset(self) -> None:
        self.relayed.clear()

    def start(self) -> ForwardProxy:
        started = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(started,), daemon=True, name="forward-proxy")
        self._thread.start()
        started.wait(10)
        return self

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop = None

    def _run(self, started: threading.Event) -> None:
        loop = self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        server = loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        started.set()
        loop.run_forever()
        server.close()
        tasks = asyncio.all_tasks(loop)  # connections still open (a tunnel the client keeps): closed now
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
        loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            method, target, headers = _parse_head(head)
            self.relayed.append((method, target, headers))
            if self.credentials and headers.get("proxy-authorization") != _basic(self.credentials):
                writer.write(b"HTTP/1.1 407 Proxy Authentication Required\r\nContent-Length: 0\r\n\r\n")
                await writer.drain()
                return
            if method == "CONNECT":
                await self._tunnel(target, reader, writer)
            else:
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                await self._forward(method, target, headers, body, reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, ValueError, OSError):
            pass
        finally:
            writer.close()

    async def _tunnel(self, target: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        host, _, port = target.rpartition(":")
        origin_reader, origin_writer = await asyncio.open_connection(host.strip("[]"), int(port))
        writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        await writer.drain()
        await asyncio.gather(_pipe(reader, origin_writer), _pipe(origin_reader, writer))

    async def _forward(self, method: str, target: str, headers: dict[str, str], body: bytes, reader, writer) -> None:
        parts = urlsplit(target)
        if parts.scheme != "http" or not parts.hostname:
            writer.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            return
        origin_reader, origin_writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        dropped = {"proxy-authorization", "proxy-connection", "connection", "keep-alive"}
        lines = [f"{method} {path} HTTP/1.1"]
        lines += [f"{name}: {value}" for name, value in headers.items() if name not in dropped]
        lines.append("Connection: close")
        origin_writer.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        await origin_writer.drain()
        # The answer as it arrives, with `Connection: close` (the client's connection carries this one request),
        # until the origin or the client closes.
        status_line, *answer_lines = (await origin_reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        kept = [line for line in answer_lines if line and not line.lower().startswith(("connection:", "keep-alive:"))]
        writer.write("\r\n".join([status_line, *kept, "Connection: close", "", ""]).encode("latin-1"))
        relay = asyncio.ensure_future(_pipe(origin_reader, writer))
        client_gone = asyncio.ensure_future(reader.read())
        await asyncio.wait([relay, client_gone], return_when=asyncio.FIRST_COMPLETED)
        relay.cancel()
        client_gone.cancel()
        origin_writer.close()


def _parse_head(head: bytes) -> tuple[str, str, dict[str, str]]:
    request_line, *header_lines = head.decode("latin-1").split("\r\n")
    method, target, _version = request_line.split(" ")
    headers = {}
    for line in header_lines:
        if line:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
    return method, target, headers


def _basic(credentials: str) -> str:
    return "Basic " + base64.b64encode(credentials.encode()).decode()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        with contextlib.suppress(Exception):
            sink.write_eof() if sink.can_write_eof() else sink.close()

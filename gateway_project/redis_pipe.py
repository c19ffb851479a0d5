"""A pipelined Redis connection for the data plane's per-request scripts (rate limits).

redis-py's asyncio client takes a connection from its pool, packs the command in Python and arms a timeout for
every call: about 100 µs of CPU per EVALSHA on the development machine, twice per rate-limited request. This
connection writes each command as it comes (hiredis packs it), reads the answers in order with hiredis's
parser, and keeps one timer for the oldest unanswered command, so many requests share one socket and a call
costs a fraction of that (figures in docs/performance.md).

Failures raise redis-py's exception classes (`redis.exceptions.ConnectionError`, `TimeoutError`,
`ResponseError`), so callers handle both clients alike. A command unanswered after `timeout` seconds fails with
`TimeoutError` and closes the connection (answers after it could no longer be matched to their commands);
every command waiting on a closed connection fails with `ConnectionError`; the next call reconnects.

One instance per event loop (`for_loop`): an asyncio transport belongs to the loop that made it.
"""

from __future__ import annotations

import asyncio
import collections
import ssl
import time
from typing import Any

import hiredis
from redis import exceptions
from redis.connection import SSLConnection, parse_url


class _Protocol(asyncio.Protocol):
    def __init__(self, pipe: RedisPipe) -> None:
        self.pipe = pipe
        self.reader = hiredis.Reader()

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        waiters = self.pipe.waiters
        while True:
            try:
                reply = self.reader.gets()
            except hiredis.ProtocolError as error:
                self.pipe.fail(exceptions.ConnectionError(f"Redis protocol error: {error}"))
                return
            if reply is False:
                return
            if not waiters:  # an answer nobody waits for: the stream is out of step
                self.pipe.fail(exceptions.ConnectionError("Redis sent an answer to no command"))
                return
            future, _ = waiters.popleft()
            if future.done():
                continue
            if isinstance(reply, hiredis.ReplyError):
                future.set_exception(exceptions.ResponseError(str(reply)))
            else:
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.pipe.fail(exceptions.ConnectionError(f"Redis connection lost: {exc or 'closed by the server'}"))


class RedisPipe:
    """Commands over one connection, answered in order; `call` raises redis-py exceptions."""

    def __init__(self, url: str, timeout: float) -> None:
        self.options = parse_url(url)
        self.timeout = timeout
        self.transport: asyncio.Transport | None = None
        self.waiters: collections.deque[tuple[asyncio.Future, float]] = collections.deque()
        self._connecting: asyncio.Future | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._scripts: dict[str, bytes] = {}  # sha -> source, for NOSCRIPT after a Redis restart

    async def call(self, *args: Any) -> Any:
        """Send one command and wait for its answer (at most `timeout` seconds)."""
        if self.transport is None or self.transport.is_closing():
            await self._connect()
        return await self._send(args)

    def _send(self, args: tuple) -> asyncio.Future:
        if self.transport is None or self.transport.is_closing():  # lost while connecting
            raise exceptions.ConnectionError("Redis closed the connection")
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self.waiters.append((future, time.monotonic() + self.timeout))
        self.transport.write(hiredis.pack_command(args))
        if self._timer is None:
            self._timer = loop.call_later(self.timeout, self._check_deadline)
        return future

    async def evalsha(self, sha: str, source: str, keys: list[str], args: list[Any]) -> Any:
        """Run a script by its SHA-1, loading it once when Redis does not know it (new or restarted server)."""
        try:
            return await self.call("EVALSHA", sha, len(keys), *keys, *args)
        except exceptions.ResponseError as error:
            if not str(error).startswith("NOSCRIPT"):
                raise
            return await self.call("EVAL", source, len(keys), *keys, *args)

    def _check_deadline(self) -> None:
        self._timer = None
        if not self.waiters:
            return
        now = time.monotonic()
        _, deadline = self.waiters[0]
        if now >= deadline:
            self.fail(exceptions.TimeoutError(f"Redis did not answer within {self.timeout * 1000:.0f} ms"))
            return
        self._timer = asyncio.get_running_loop().call_later(deadline - now, self._check_deadline)

    def fail(self, error: Exception) -> None:
        """Fail every waiting command and drop the connection (the next call opens a new one)."""
        transport, self.transport = self.transport, None
        waiters, self.waiters = self.waiters, collections.deque()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        for future, _ in waiters:
            if not future.done():
                future.set_exception(error)
        if transport is not None and not transport.is_closing():
            transport.close()

    async def _connect(self) -> None:
        if self._connecting is not None:  # another call is connecting: wait for it
            await asyncio.shield(self._connecting)
            if self.transport is None:
                raise exceptions.ConnectionError("Redis connection failed")
            return
        self.fail(exceptions.ConnectionError("Redis connection closed"))  # commands sent on the old one are lost
        loop = asyncio.get_running_loop()
        self._connecting = loop.create_future()
        try:
            await asyncio.wait_for(self._open(loop), self.timeout)
        except TimeoutError as error:
            self.fail(exceptions.TimeoutError("Redis connection timed out"))
            raise exceptions.TimeoutError(f"Redis connection timed out after {self.timeout * 1000:.0f} ms") from error
        except OSError as error:
            self.fail(exceptions.ConnectionError(str(error)))
            raise exceptions.ConnectionError(f"Redis connection failed: {error}") from error
        except BaseException as error:  # AUTH or SELECT refused, or the caller cancelled: no half-set-up connection
            self.fail(exceptions.ConnectionError(f"Redis connection failed: {error}"))
            raise
        finally:
            connecting, self._connecting = self._connecting, None
            connecting.set_result(None)

    async def _open(self, loop: asyncio.AbstractEventLoop) -> None:
        options = self.options
        if "path" in options:
            transport, _ = await loop.create_unix_connection(lambda: _Protocol(self), options["path"])
        else:
            tls = ssl.create_default_context() if options.get("connection_class") is SSLConnection else None
            host, port = options.get("host", "localhost"), options.get("port", 6379)
            transport, _ = await loop.create_connection(lambda: _Protocol(self), host, port, ssl=tls)
        self.transport = transport
        if options.get("password"):
            user = options.get("username")
            await self._send(("AUTH", user, options["password"]) if user else ("AUTH", options["password"]))
        if options.get("db"):
            await self._send(("SELECT", options["db"]))


_pipes: dict[tuple[int, str], RedisPipe] = {}


def for_loop(url: str, timeout: float) -> RedisPipe:
    """The pipe to `url` of the running event loop."""
    key = (id(asyncio.get_running_loop()), url)
    pipe = _pipes.get(key)
    if pipe is None:
        if len(_pipes) > 64:  # event loops of finished test servers
            for old in _pipes.values():
                old.fail(exceptions.ConnectionError("closed"))
            _pipes.clear()
        pipe = _pipes[key] = RedisPipe(url, timeout)
    return pipe

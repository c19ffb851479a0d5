"""A lean Redis client for the data plane's per-request scripts: one pipelined connection per event loop.

redis-py's asyncio client costs about 75 us of CPU per command on this machine (a pool checkout that polls the
socket under a zero timeout, argument encoding in Python, a `wait_for` per read); a rate-limited request runs
two scripts. This client keeps one connection, packs commands with hiredis, matches replies to callers in
order (Redis answers a connection's commands in the order sent), and writes the commands issued in one turn
of the event loop with one system call. On an open connection `send` queues a command and returns its reply's
future without a coroutine, and `send_nowait` queues one whose reply nobody awaits (a failure goes to a
callback): the rate limiter's check is one future, its settlement no await at all. Time-outs are watched by one
timer per connection (the oldest command waiting is the first to time out: replies come in order), not one per
command.

Errors keep redis-py's classes (`redis.exceptions.ConnectionError`, `TimeoutError`, `ResponseError`: all
`RedisError`), so callers' fallbacks are unchanged. A command that gets no reply within `timeout` fails with
`TimeoutError` and closes the connection (the replies still due would otherwise answer the wrong callers);
every command waiting on a connection that closes fails with `ConnectionError`, and the next command opens a
new one. Plain `redis://` and `unix://` URLs only (`supports`); others (TLS) stay on redis-py.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
from collections.abc import Callable
from typing import Any

import hiredis
from redis.asyncio.connection import parse_url
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

_pack = hiredis.pack_command


def script_sha(source: str) -> str:
    """The SHA1 Redis knows a Lua script by."""
    return hashlib.sha1(source.encode()).hexdigest()


def supports(url: str) -> bool:
    return url.startswith(("redis://", "unix://"))


class _Sink:
    """Stands for the future of a command whose reply nobody awaits: drops the reply, hands an error on."""

    __slots__ = ("on_error",)

    def __init__(self, on_error: Callable[[Exception], None]) -> None:
        self.on_error = on_error

    def done(self) -> bool:
        return False

    def set_result(self, reply: Any) -> None:
        pass

    def set_exception(self, error: Exception) -> None:
        self.on_error(error)


class _Protocol(asyncio.Protocol):
    __slots__ = ("client", "reader", "transport")

    def __init__(self, client: FastRedis) -> None:
        self.client = client
        self.reader = hiredis.Reader()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        reader = self.reader
        reader.feed(data)
        pending = self.client._pending
        while True:
            try:
                reply = reader.gets()
            except hiredis.ProtocolError as error:
                self.client._broken(self, RedisConnectionError(f"Redis protocol error: {error}"))
                return
            if reply is False:
                return
            if not pending:  # a reply nobody waits for: the stream is out of step
                self.client._broken(self, RedisConnectionError("unexpected reply from Redis"))
                return
            future = pending.popleft()[0]
            if future.done():  # its caller was cancelled
                continue
            if isinstance(reply, hiredis.ReplyError):
                message = str(reply)
                error = NoScriptError(message) if message.startswith("NOSCRIPT") else ResponseError(message)
                future.set_exception(error)
            else:
                future.set_result(reply)

    def connection_lost(self, exc: Exception | None) -> None:
        self.client._broken(self, RedisConnectionError(f"Redis connection closed: {exc or 'by the server'}"))


class FastRedis:
    """One connection to `url`, opened on first use; `call(*args)` sends a command and returns its reply."""

    def __init__(self, url: str, timeout: float, connect_timeout: float | None = None) -> None:
        options = parse_url(url)
        self.path = options.get("path")
        self.host = options.get("host", "localhost")
        self.port = int(options.get("port", 6379))
        self.db = int(options.get("db", 0) or 0)
        self.username = options.get("username")
        self.password = options.get("password")
        self.timeout = timeout
        self.connect_timeout = timeout if connect_timeout is None else connect_timeout
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Future | None = None
        # (reply future or sink, deadline on the loop's clock), in the order the commands were queued.
        self._pending: collections.deque[tuple[Any, float]] = collections.deque()
        self._out: list[bytes] = []
        self._flush_scheduled = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._watch: asyncio.TimerHandle | None = None  # fires at the oldest waiting command's deadline
        self._scripts: dict[str, str] = {}  # sha1 -> source

    async def _connect(self) -> _Protocol:
        loop = self._loop = asyncio.get_running_loop()
        if self.path:
            opening = loop.create_unix_connection(lambda: _Protocol(self), self.path)
        else:
            opening = loop.create_connection(lambda: _Protocol(self), self.host, self.port)
        try:
            _, protocol = await asyncio.wait_for(opening, self.connect_timeout)
        except TimeoutError:
            raise RedisTimeoutError("Timeout connecting to Redis") from None
        except OSError as error:
            raise RedisConnectionError(f"Error connecting to Redis: {error}") from None
        setup: list[tuple] = []
        if self.password is not None:
            setup.append(("AUTH", self.username, self.password) if self.username else ("AUTH", self.password))
        if self.db:
            setup.append(("SELECT", self.db))
        if setup:
            self._protocol = protocol
            try:
                for command in setup:
                    await self._send(protocol, command)
            except BaseException:
                self._broken(protocol, RedisConnectionError("Redis connection setup failed"))
                raise
        return protocol

    async def _protocol_ready(self) -> _Protocol:
        protocol = self._protocol
        if protocol is not None:
            return protocol
        connecting = self._connecting
        if connecting is not None and connecting.done():
            # An attempt whose every waiter was cancelled, which ended later: its failure is not this call's
            # answer (Redis may be back); a connection it opened is used if still open.
            self._connecting = None
            if not connecting.cancelled() and connecting.exception() is None:
                opened = connecting.result()
                if opened.transport is not None and not opened.transport.is_closing():
                    self._protocol = opened
                    return opened
            connecting = None
        if connecting is None:
            connecting = self._connecting = asyncio.ensure_future(self._connect())
        try:
            protocol = await asyncio.shield(connecting)
        finally:
            if connecting.done() and self._connecting is connecting:
                self._connecting = None
        self._protocol = protocol
        return protocol

    def _broken(self, protocol: _Protocol, error: Exception) -> None:
        """The connection `protocol` is unusable: close it, fail every command waiting for a reply on it."""
        if self._protocol is protocol:
            self._protocol = None
            pending, self._pending = self._pending, collections.deque()
            self._out = []
            if self._watch is not None:
                self._watch.cancel()
                self._watch = None
            for future, _ in pending:
                if not future.done():
                    future.set_exception(error)
        if protocol.transport is not None and not protocol.transport.is_closing():
            protocol.transport.close()

    def _flush(self) -> None:
        self._flush_scheduled = False
        out, self._out = self._out, []
        protocol = self._protocol
        if out and protocol is not None and protocol.transport is not None:
            protocol.transport.write(out[0] if len(out) == 1 else b"".join(out))

    def _queue(self, protocol: _Protocol, packed: bytes, future: Any) -> None:
        loop = self._loop
        self._out.append(packed)
        deadline = loop.time() + self.timeout if self.timeout else 0.0
        self._pending.append((future, deadline))
        if not self._flush_scheduled:
            self._flush_scheduled = True
            loop.call_soon(self._flush)
        if self._watch is None and self.timeout:
            self._watch = loop.call_at(deadline, self._check_deadline, protocol)

    def _check_deadline(self, protocol: _Protocol) -> None:
        """The oldest command still waiting on `protocol` timed out: fail it, close the connection (every command
        waiting behind it fails with it); otherwise look again at its deadline."""
        self._watch = None
        if self._protocol is not protocol or not self._pending:
            return
        future, deadline = self._pending[0]
        if self._loop.time() < deadline:
            self._watch = self._loop.call_at(deadline, self._check_deadline, protocol)
            return
        if not future.done():
            future.set_exception(RedisTimeoutError("Timeout reading from Redis"))
        self._broken(protocol, RedisTimeoutError("Timeout reading from Redis"))

    async def _send(self, protocol: _Protocol, command: tuple) -> Any:
        future = self._loop.create_future()
        self._queue(protocol, _pack(command), future)
        return await future

    def is_open(self) -> bool:
        """True when a connection is open (`send` queues on it rather than returning None)."""
        return self._protocol is not None

    def send(self, *args: Any) -> asyncio.Future | None:
        """Queue a command on the open connection and return its reply's future (no coroutine, no task); None when
        no connection is open (then use `call`, which opens one). Cancelling the future does not unsend it."""
        protocol = self._protocol
        if protocol is None:
            return None
        future = self._loop.create_future()
        self._queue(protocol, _pack(args), future)
        return future

    def send_nowait(self, args: tuple, on_error: Callable[[Exception], None]) -> bool:
        """Queue a command whose reply nobody awaits; `on_error(exception)` gets its error reply, its time-out or
        the loss of the connection. False (nothing sent) when no connection is open."""
        protocol = self._protocol
        if protocol is None:
            return False
        self._queue(protocol, _pack(args), _Sink(on_error))
        return True

    async def call(self, *args: Any) -> Any:
        protocol = await self._protocol_ready()
        return await self._send(protocol, args)

    def script(self, source: str) -> str:
        """Register a Lua script; returns its SHA1 for `evalsha`."""
        sha = script_sha(source)
        self._scripts[sha] = source
        return sha

    async def evalsha(self, sha: str, keys: list[str], args: list[Any]) -> Any:
        """Run a registered script (loaded with EVAL when the server does not know it yet)."""
        try:
            return await self.call("EVALSHA", sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self.call("EVAL", self._scripts[sha], len(keys), *keys, *args)

    async def aclose(self) -> None:
        protocol = self._protocol
        if protocol is not None:
            self._broken(protocol, RedisConnectionError("Redis client closed"))

"""The one way the project makes its Redis clients (redis-py): the rate limits, the response cache, the readiness
check and the policy-version channel.

A client waits at most `timeout` seconds to connect and as long for a reply, and a failed command is not retried,
said explicitly rather than left to how the client is built (redis-py 6.4's `Redis(...)` defaults to 3 retries with
exponential backoff up to 10 s; `from_url` without `retry=` happens to give its connections none). A retry holds a
request for seconds on a Redis that stopped answering (measured with that default on a loopback connection that
stopped answering: 5.6 s, dropped: 7.8 s, against 0.25 s and at once), where every caller has its own answer to an
outage at once: the rate limits fall back to the
database or answer 503 (GATEWAY_RATE_LIMIT_ON_REDIS_FAILURE), the response cache uses the database (a miss), the
readiness check reports Redis unreachable, the policy-version publisher keeps what it could not send for its
listener thread, which reads the version rows meanwhile.

The asyncio client's per-command costs are tuned through its own extension points (a pool's
`connection_class`, a `ConnectionPool` subclass); replies, errors, time-outs and reconnects stay the library's:

- **packing**: the asyncio `Connection` packs a command in Python (an `Encoder.encode` and several joins per
  argument; the synchronous client uses hiredis for this); `HiredisConnection` packs it with
  `hiredis.pack_command`, the function the synchronous client's `HiredisRespSerializer` calls.
- **the send**: with a time limit set, every command is written under `asyncio.wait_for` (on Python 3.11 a task
  and a timer per command); `HiredisConnection` writes it directly and waits, under the same limit, only when
  the socket did not take it all.
- **the check of a pooled connection**: before every command the pool makes sure the connection it hands out has
  nothing unread (`ensure_connection` -> `can_read_destructive`), by a read with a zero time limit that, on a
  healthy connection, ends in a cancelled read and a `TimeoutError` caught: a task wake-up and an exception thrown
  into the command's coroutine, per command. asyncio's stream reader keeps reading the socket into its buffer
  while nobody waits on it, so the same facts are known without a read: `CheckedPool` hands out a connection
  whose stream buffer and hiredis reader hold nothing, whose stream has not ended and holds no error, as it is;
  any other connection goes through the library's check (and is reconnected by it when it has data or is closed).

Measured (docs/performance.md, "redis-py tuned"): one EVALSHA of 4 keys and 11 arguments, 16 at a time, uvloop,
52 -> 28 µs of CPU (bench/redis_command_cost.py); the rate-limit step per request 142 -> 63 µs when every request
is checked in Redis, 32 -> 18 µs with leases (bench/ratelimit_step.py).
"""

from __future__ import annotations

import asyncio
from typing import Any

import hiredis
import redis.asyncio as aioredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError


class HiredisConnection(aioredis.Connection):
    """redis-py's asyncio connection, commands packed by hiredis (one bytes object per command)."""

    def pack_command(self, *args: Any) -> list[bytes]:
        if isinstance(args[0], str):  # a command name of several words ("CLIENT SETNAME"): each its own argument
            args = (*args[0].encode().split(), *args[1:])
        elif b" " in args[0]:
            args = (*args[0].split(), *args[1:])
        try:
            return [hiredis.pack_command(args)]
        except TypeError:  # a type hiredis does not pack (a memoryview): the library's own packing
            return super().pack_command(*args)

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        """The library's send, without its `asyncio.wait_for` (a task and a timer per command) when the command
        leaves at once: written to a connected socket whose send buffer was empty and is empty again, there is
        nothing to wait for. Otherwise what is left drains under the library's time limit and error mapping."""
        writer = self._writer
        if (
            writer is None
            or not isinstance(command, list)
            or (check_health and self.health_check_interval)
            or writer.transport.is_closing()
            or writer.transport.get_write_buffer_size()
        ):
            return await super().send_packed_command(command, check_health)
        writer.writelines(command)
        if not writer.transport.get_write_buffer_size():
            return None
        try:
            await asyncio.wait_for(writer.drain(), self.socket_timeout)
        except TimeoutError:
            await self.disconnect(nowait=True)
            raise RedisTimeoutError("Timeout writing to socket") from None
        except OSError as error:
            await self.disconnect(nowait=True)
            raise RedisConnectionError(f"Error while writing to socket: {error}") from error
        except BaseException:
            await self.disconnect(nowait=True)
            raise
        return None


def _idle_and_open(connection: aioredis.Connection) -> bool:
    """True when `connection` is connected, nothing has arrived on it unread and its stream has not ended."""
    stream = getattr(connection, "_reader", None)
    parser = getattr(connection, "_parser", None)
    if stream is None or getattr(connection, "_writer", None) is None or parser is None:
        return False
    reader = getattr(parser, "_reader", None)  # hiredis' reader (the Python parser has another layout)
    if reader is None or not getattr(parser, "_connected", False) or reader.has_data():
        return False
    return not stream._buffer and not stream.at_eof() and stream.exception() is None


class CheckedPool(aioredis.ConnectionPool):
    """redis-py's asyncio pool that knows a pooled connection is ready without reading from it (module doc)."""

    async def ensure_connection(self, connection: aioredis.Connection) -> None:
        if _idle_and_open(connection):
            return
        await super().ensure_connection(connection)


def async_client(url: str, timeout: float, **options: Any) -> aioredis.Redis:
    """redis-py's asyncio client of `url` (its own connection pool; bind it to one event loop): on a `redis://`
    URL a `CheckedPool` of `HiredisConnection`s; a `rediss://` or `unix://` URL keeps the library's connection
    class for its scheme (TLS, Unix socket) and its pool."""
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    options = {"socket_timeout": timeout, "socket_connect_timeout": timeout, "retry": Retry(NoBackoff(), 0), **options}
    if url.startswith("redis://"):
        pool = CheckedPool.from_url(url, connection_class=HiredisConnection, **options)
    else:
        pool = aioredis.ConnectionPool.from_url(url, **options)
    return aioredis.Redis.from_pool(pool)  # the client owns its pool: aclose() closes it


def sync_client(url: str, timeout: float, **options: Any):
    """redis-py's synchronous client of `url`, with the same timeouts and no retry."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0), **options
    )

"""The data plane's lean Redis client (gateway_project/fast_redis.py): replies matched to callers, scripts
reloaded, and every failure a RedisError (the rate limiter falls back to the database on those)."""

from __future__ import annotations

import asyncio
import time

import pytest
from django.conf import settings
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from gateway_project.fast_redis import FastRedis, supports


def _url() -> str:
    if not settings.REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    return settings.REDIS_URL


def test_concurrent_calls_get_their_own_replies_and_scripts_reload():
    url = _url()

    async def scenario():
        client = FastRedis(url, timeout=2)
        try:
            replies = await asyncio.gather(*(client.call("ECHO", f"reply-{i}") for i in range(200)))
            assert replies == [f"reply-{i}".encode() for i in range(200)]
            sha = client.script("return {KEYS[1], ARGV[1], 7}")
            await client.call("SCRIPT", "FLUSH")  # the server forgot it: EVALSHA answers NOSCRIPT, EVAL reloads
            assert await client.evalsha(sha, ["k"], ["v"]) == [b"k", b"v", 7]
            assert await client.call("SCRIPT", "EXISTS", sha) == [1]
            with pytest.raises(ResponseError):
                await client.call("NOSUCHCOMMAND")
            assert await client.call("PING") == b"PONG"  # an error reply leaves the connection usable
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_selects_the_database_of_the_url():
    url = _url()

    async def scenario():
        client = FastRedis(url, timeout=2)
        try:
            await client.call("SET", "gateway:test:fast-redis-db", "here")
            db = url.rsplit("/", 1)[-1] if url.rsplit("/", 1)[-1].isdigit() else "0"
            assert (await client.call("CLIENT", "INFO")).decode().count(f" db={db} ") == 1
            assert await client.call("GET", "gateway:test:fast-redis-db") == b"here"
            await client.call("DEL", "gateway:test:fast-redis-db")
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_a_silent_server_times_out_and_the_next_call_reconnects():
    async def scenario():
        answering = False

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(65536):
                if answering:
                    writer.write(b"+PONG\r\n" * data.count(b"PING"))
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = FastRedis(f"redis://127.0.0.1:{port}/0", timeout=0.2)
        try:
            started = time.monotonic()
            results = await asyncio.gather(client.call("PING"), client.call("PING"), return_exceptions=True)
            assert all(isinstance(r, RedisTimeoutError) for r in results), results
            assert time.monotonic() - started < 1
            answering = True
            assert await client.call("PING") == b"PONG"  # a fresh connection, in step again
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())


def test_refused_and_dropped_connections_are_redis_errors():
    async def scenario():
        server = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        server.close()
        await server.wait_closed()
        with pytest.raises(RedisConnectionError):
            await FastRedis(f"redis://127.0.0.1:{port}/0", timeout=0.5).call("PING")

        async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.read(1)
            writer.close()

        dropping = await asyncio.start_server(hang_up, "127.0.0.1", 0)
        client = FastRedis(f"redis://127.0.0.1:{dropping.sockets[0].getsockname()[1]}/0", timeout=2)
        with pytest.raises(RedisError):
            await client.call("PING")
        dropping.close()

    asyncio.run(scenario())


def test_supported_urls():
    assert supports("redis://127.0.0.1:6379/1") and supports("unix:///tmp/redis.sock")
    assert not supports("rediss://example.com:6380/0")


def test_send_and_send_nowait_on_the_open_connection():
    url = _url()

    async def scenario():
        client = FastRedis(url, timeout=2)
        errors: list[Exception] = []
        try:
            assert client.send("PING") is None  # no connection open yet: the caller uses `call`
            assert not client.send_nowait(("PING",), errors.append)
            assert await client.call("PING") == b"PONG"
            futures = [client.send("ECHO", f"reply-{i}") for i in range(50)]
            assert client.send_nowait(("SET", "gateway:test:fast-redis-nowait", "done"), errors.append)
            assert client.send_nowait(("NOSUCHCOMMAND",), errors.append)  # its error reply goes to the callback
            assert await asyncio.gather(*futures) == [f"reply-{i}".encode() for i in range(50)]
            assert await client.call("GET", "gateway:test:fast-redis-nowait") == b"done"
            assert len(errors) == 1 and isinstance(errors[0], ResponseError)
            cancelled = client.send("SET", "gateway:test:fast-redis-nowait", "still sent")
            cancelled.cancel()  # the waiter goes away; the command is not unsent
            assert await client.call("GET", "gateway:test:fast-redis-nowait") == b"still sent"
            await client.call("DEL", "gateway:test:fast-redis-nowait")
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_a_silent_server_fails_queued_commands_and_their_callbacks():
    async def scenario():
        answering = True

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            while data := await reader.read(65536):
                if answering:
                    writer.write(b"+PONG\r\n" * data.count(b"PING"))
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        client = FastRedis(f"redis://127.0.0.1:{port}/0", timeout=0.2)
        errors: list[Exception] = []
        try:
            assert await client.call("PING") == b"PONG"
            answering = False
            started = time.monotonic()
            future = client.send("PING")
            assert client.send_nowait(("PING",), errors.append)
            with pytest.raises(RedisTimeoutError):
                await future
            assert time.monotonic() - started < 1
            assert len(errors) == 1 and isinstance(errors[0], RedisError)
            answering = True
            assert await client.call("PING") == b"PONG"  # a fresh connection, in step again
        finally:
            await client.aclose()
            server.close()

    asyncio.run(scenario())


def test_a_connection_attempt_that_fails_after_its_callers_were_cancelled_does_not_fail_the_next_call():
    """A connect (here: its SELECT of the database) still running when its only caller is cancelled goes on and
    fails later; once Redis answers again, the next call opens a new connection instead of getting that failure."""
    from redis.asyncio.connection import parse_url

    from tests.fakes.tcp_blackhole import BlackholeProxy

    options = parse_url(_url())
    proxy = BlackholeProxy(options.get("host", "127.0.0.1"), int(options.get("port", 6379))).start()
    try:
        proxy.blackhole()

        async def scenario():
            client = FastRedis(f"redis://127.0.0.1:{proxy.port}/{int(options.get('db', 0) or 0) or 1}", timeout=0.3)
            try:
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(client.call("PING"), 0.1)
                await asyncio.sleep(0.6)  # the attempt's SELECT times out meanwhile
                assert client._connecting is not None and client._connecting.done()
                proxy.resume()
                return await client.call("PING")
            finally:
                await client.aclose()

        assert asyncio.run(scenario()) == b"PONG"
    finally:
        proxy.stop()

"""The pipelined Redis connection of the rate limits (gateway_project/redis_pipe.py) against the real Redis server
and against loopback servers that never answer or hang up."""

from __future__ import annotations

import asyncio
import socket
import uuid

import pytest
import redis
from django.conf import settings
from redis import exceptions

from gateway_project.redis_pipe import RedisPipe

SCRIPT = "return {KEYS[1], ARGV[1], redis.call('INCRBY', KEYS[1], ARGV[2])}"


def _url() -> str:
    if not settings.GATEWAY_RATE_LIMIT_REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    return settings.GATEWAY_RATE_LIMIT_REDIS_URL


def test_concurrent_commands_share_one_connection_and_get_their_own_answers():
    url = _url()
    key = f"test:pipe:{uuid.uuid4().hex}"

    async def scenario():
        pipe = RedisPipe(url, timeout=2)
        replies = await asyncio.gather(*(pipe.call("INCRBY", key, n) for n in range(1, 201)))
        # each INCRBY answered in order: the running totals 1, 1+2, 1+2+3, ...
        assert replies == [n * (n + 1) // 2 for n in range(1, 201)]
        assert await pipe.call("GET", key) == b"20100"
        with pytest.raises(exceptions.ResponseError, match="wrong number of arguments"):
            await pipe.call("GET")
        assert await pipe.call("DEL", key) == 1  # the connection is still usable after an error answer
        pipe.fail(exceptions.ConnectionError("done"))

    asyncio.run(scenario())


def test_the_url_database_is_selected_and_unknown_scripts_are_loaded():
    url = _url()
    key = f"test:pipe:{uuid.uuid4().hex}"
    sync = redis.Redis.from_url(url)
    sync.script_flush()
    sha = sync.script_load(SCRIPT)
    sync.script_flush()  # as after a Redis restart: the server no longer knows the script

    async def scenario():
        pipe = RedisPipe(url, timeout=2)
        assert await pipe.evalsha(sha, SCRIPT, [key], ["a", 5]) == [key.encode(), b"a", 5]
        assert await pipe.evalsha(sha, SCRIPT, [key], ["b", 2]) == [key.encode(), b"b", 7]
        pipe.fail(exceptions.ConnectionError("done"))

    asyncio.run(scenario())
    assert sync.get(key) == b"7"  # written in the URL's database
    sync.delete(key)
    sync.close()


def _listener() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    return server


def test_a_server_that_never_answers_times_out_and_the_connection_is_replaced():
    server = _listener()
    port = server.getsockname()[1]

    async def scenario():
        pipe = RedisPipe(f"redis://127.0.0.1:{port}/0", timeout=0.2)
        started = asyncio.get_running_loop().time()
        results = await asyncio.gather(pipe.call("PING"), pipe.call("PING"), return_exceptions=True)
        waited = asyncio.get_running_loop().time() - started
        assert all(isinstance(r, exceptions.TimeoutError) for r in results), results
        assert 0.15 <= waited < 1.5
        assert pipe.transport is None  # late answers could not be matched any more: the connection is dropped
        with pytest.raises(exceptions.TimeoutError):
            await pipe.call("PING")  # a new connection, which times out too

    asyncio.run(scenario())
    server.close()


def test_a_server_that_hangs_up_fails_the_waiting_commands_and_the_next_call_reconnects():
    url = _url()
    server = _listener()
    port = server.getsockname()[1]

    async def hang_up_once():
        connection, _ = await asyncio.get_running_loop().sock_accept(server)
        connection.close()

    async def scenario():
        server.setblocking(False)
        pipe = RedisPipe(f"redis://127.0.0.1:{port}/0", timeout=2)
        accept = asyncio.ensure_future(hang_up_once())
        with pytest.raises(exceptions.ConnectionError):
            await pipe.call("PING")
        await accept
        server.close()
        with pytest.raises(exceptions.ConnectionError):  # nothing listens any more
            await pipe.call("PING")
        real = RedisPipe(url, timeout=2)
        assert await real.call("PING") == b"PONG"
        real.transport.close()  # the server side goes away between two calls
        await asyncio.sleep(0.05)
        assert await real.call("PING") == b"PONG"
        real.fail(exceptions.ConnectionError("done"))

    asyncio.run(scenario())

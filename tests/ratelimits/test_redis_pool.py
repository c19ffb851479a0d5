"""The tuned redis-py asyncio client (gateway_project/redis_clients.py) against the real Redis: commands packed by
hiredis are the library's bytes, a pooled connection with nothing unread is handed out without a read, and one
that has unread data or that the server closed goes through the library's check (replaced, the reply correct)."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.asyncio as aioredis
from django.conf import settings

from gateway_project.redis_clients import CheckedPool, HiredisConnection, async_client


@pytest.fixture
def redis_url():
    if not settings.GATEWAY_RATE_LIMIT_REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    return settings.GATEWAY_RATE_LIMIT_REDIS_URL


@pytest.mark.parametrize(
    "args",
    [
        ("EVALSHA", "a" * 40, 2, "gateway:rl:k:log", "gateway:rl:k:tokens", 60000, "req-1", 0, -5, 1.5),
        ("SET", b"key", "välue ünïcode", "PX", 100),
        ("CLIENT SETNAME", "gateway"),
        (b"CONFIG GET", b"maxmemory"),
        ("GET", ""),
    ],
)
def test_a_command_packed_by_hiredis_is_the_librarys_bytes(args):
    ours = HiredisConnection(host="127.0.0.1").pack_command(*args)
    library = aioredis.Connection(host="127.0.0.1").pack_command(*args)
    assert b"".join(ours) == b"".join(library)
    assert len(ours) == 1


async def _pooled_connection(client: aioredis.Redis) -> aioredis.Connection:
    connection = await client.connection_pool.get_connection()
    await client.connection_pool.release(connection)
    return connection


def test_a_ready_pooled_connection_is_handed_out_without_a_read(redis_url):
    async def scenario():
        client = async_client(redis_url, 2.0)
        try:
            assert isinstance(client.connection_pool, CheckedPool)
            assert await client.ping()
            connection = await _pooled_connection(client)

            async def no_read():
                raise AssertionError("the pool read from a connection with nothing unread")

            connection._parser.can_read_destructive = no_read
            key = f"test:pool:{uuid.uuid4().hex}"
            assert await client.set(key, "1", px=5000)
            assert await client.get(key) == b"1"
            assert await _pooled_connection(client) is connection  # the same connection, reused
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_unread_data_on_a_pooled_connection_is_never_taken_for_the_next_reply(redis_url):
    async def scenario():
        client = async_client(redis_url, 2.0)
        try:
            key = f"test:pool:{uuid.uuid4().hex}"
            await client.set(key, "value", px=5000)
            connection = await client.connection_pool.get_connection()
            await connection.send_command("PING")  # a reply nobody reads (a command abandoned mid-way)
            await client.connection_pool.release(connection)
            for _ in range(100):  # until the stray reply is in the stream's buffer
                if connection._reader._buffer:
                    break
                await asyncio.sleep(0.01)
            assert connection._reader._buffer
            assert await client.get(key) == b"value"  # not the stray PONG: the library's check replaced it
        finally:
            await client.aclose()

    asyncio.run(scenario())


def test_a_connection_the_server_closed_is_replaced_before_the_next_command(redis_url):
    async def scenario():
        client = async_client(redis_url, 2.0)
        admin = aioredis.Redis.from_url(redis_url)
        try:
            first_id = await client.client_id()
            connection = client.connection_pool._available_connections[0]  # the one that ran it, idle
            await admin.client_kill_filter(_id=first_id)
            for _ in range(100):  # until its stream has seen the server's close
                if connection._reader.at_eof():
                    break
                await asyncio.sleep(0.01)
            assert connection._reader.at_eof()
            second_id = await client.client_id()  # no error: reconnected by the library's check
            assert second_id != first_id
        finally:
            await client.aclose()
            await admin.aclose()

    asyncio.run(scenario())


def test_a_command_the_socket_takes_at_once_is_sent_without_a_task_and_a_large_one_drains(redis_url, monkeypatch):
    import redis.asyncio.connection as library_connection

    real_wait_for = asyncio.wait_for
    drained = []

    async def counting_wait_for(awaitable, timeout):
        drained.append(timeout)
        return await real_wait_for(awaitable, timeout)

    monkeypatch.setattr(library_connection.asyncio, "wait_for", counting_wait_for)

    async def scenario():
        client = async_client(redis_url, 2.0)
        try:
            key = f"test:pool:{uuid.uuid4().hex}"
            assert await client.set(key, "small", px=5000)
            assert await client.get(key) == b"small"
            assert drained == []  # written whole, nothing waited for
            large = b"x" * (16 * 1024 * 1024)  # more than a socket's send buffer: the rest drains
            assert await client.set(key, large, px=5000)
            assert drained == [2.0]
            assert await client.strlen(key) == len(large)
        finally:
            await client.aclose()

    asyncio.run(scenario())

"""The rate limits' Redis client (redis-py's asyncio client, ratelimits/redis_store.py) against the real Redis and
a loopback proxy in front of it: scripts the server forgot are loaded again, a silent or refused Redis is a
`RedisError` within the configured time-out (not retried), and the next check after Redis is back runs in it."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
import redis.asyncio
from django.conf import settings
from redis.exceptions import RedisError

from ratelimits import limiter, redis_store
from ratelimits.limits import RateLimit
from tests.fakes.tcp_blackhole import BlackholeProxy


@pytest.fixture(autouse=True)
def real_redis():
    if not settings.GATEWAY_RATE_LIMIT_REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    limiter.redis_health.reset()
    return settings.GATEWAY_RATE_LIMIT_REDIS_URL


def limit(rpm=None, tpm=None) -> RateLimit:
    return RateLimit("api-key", uuid.uuid4().hex, rpm, tpm)


async def _forget_clients() -> None:
    for client, _, _ in list(redis_store._clients.values()):
        await client.aclose()
    redis_store._clients.clear()
    redis_store._unsettled.clear()
    redis_store._leases.clear()


def test_a_script_the_server_forgot_is_loaded_again_and_carries_its_settlements(real_redis, settings):
    settings.GATEWAY_RATE_LIMIT_LEASE_MS = 0
    key = limit(rpm=10, tpm=1000)
    limits = [key]

    async def scenario():
        first = await redis_store.check(limits, "a", 100)
        assert first.admitted and first.states[0].tokens == 100
        assert redis_store.settle_later(limits, "a", 30, first, lambda error: pytest.fail(str(error)))
        admin = redis.asyncio.Redis.from_url(real_redis)
        try:
            await admin.script_flush()  # a restart or SCRIPT FLUSH: EVALSHA answers NOSCRIPT
            second = await redis_store.check(limits, "b", 100)  # carries a's settlement
            assert second.admitted and (second.states[0].requests, second.states[0].tokens) == (2, 130)
            assert await admin.hget(f"gateway:rl:{key.key}:tokens", "a") == b"30"  # settled once
        finally:
            await admin.aclose()
            await _forget_clients()

    asyncio.run(scenario())


def test_a_silent_redis_fails_within_the_timeout_and_the_check_is_back_in_redis_when_it_answers(real_redis, settings):
    host, port = real_redis.split("//")[1].split("/")[0].split(":")
    proxy = BlackholeProxy(host, int(port)).start()
    settings.GATEWAY_RATE_LIMIT_REDIS_URL = f"redis://127.0.0.1:{proxy.port}/{real_redis.rsplit('/', 1)[1]}"
    settings.GATEWAY_RATE_LIMIT_REDIS_TIMEOUT_MS = 300
    settings.GATEWAY_RATE_LIMIT_LEASE_MS = 0
    limits = [limit(rpm=100)]

    async def scenario():
        try:
            assert (await redis_store.check(limits, "a", 0)).store == "redis"  # a pooled connection is open
            proxy.blackhole()
            started = time.monotonic()
            results = await asyncio.gather(
                *(redis_store.check(limits, f"s{i}", 0) for i in range(3)), return_exceptions=True
            )
            assert all(isinstance(r, RedisError) for r in results), results
            assert time.monotonic() - started < 0.9  # one time-out, no retry
            proxy.resume()
            decision = await redis_store.check(limits, "b", 0)  # fresh connections, in step again
            assert decision.store == "redis" and decision.admitted
            proxy.refuse()  # a crashed Redis: its connections dropped, its port closed
            with pytest.raises(RedisError):
                await redis_store.check(limits, "c", 0)
        finally:
            await _forget_clients()
            proxy.stop()

    asyncio.run(scenario())


def test_the_client_uses_the_database_of_the_url(real_redis, settings):
    settings.GATEWAY_RATE_LIMIT_LEASE_MS = 0
    key = limit(rpm=10)

    async def scenario():
        await redis_store.check([key], "a", 0)
        same_db = redis.asyncio.Redis.from_url(real_redis)
        try:
            assert await same_db.zcard(f"gateway:rl:{key.key}:log") == 1
        finally:
            await same_db.aclose()
            await _forget_clients()

    asyncio.run(scenario())

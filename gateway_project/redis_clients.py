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
"""

from __future__ import annotations

from typing import Any


def async_client(url: str, timeout: float, **options: Any):
    """redis-py's asyncio client of `url` (its own connection pool; bind it to one event loop)."""
    import redis.asyncio as aioredis
    from redis.asyncio.retry import Retry
    from redis.backoff import NoBackoff

    return aioredis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0), **options
    )


def sync_client(url: str, timeout: float, **options: Any):
    """redis-py's synchronous client of `url`, with the same timeouts and no retry."""
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis.from_url(
        url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0), **options
    )

"""Where entries are read and written: Redis when GATEWAY_RESPONSE_CACHE_REDIS_URL (default REDIS_URL) is set and
answering, the database otherwise.

A Redis error (refused, timed out after GATEWAY_RESPONSE_CACHE_REDIS_TIMEOUT_MS, a restart) sends the call to the
database instead of failing the request, and the process stays on the database for
GATEWAY_RESPONSE_CACHE_REDIS_RETRY_MS before it tries Redis again. The two stores do not share entries: an answer
stored in Redis is a miss in the database (and is stored there) while Redis is away.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from django.conf import settings

from gateway_project.db_deadline import db_reader
from gateway_project.db_thread import in_db_thread
from responsecache import db_store, redis_store
from responsecache.entry import Entry, decode

logger = logging.getLogger("gateway.responsecache")

_db_get = db_reader(db_store.get)
_db_put = in_db_thread(db_store.put)


class _RedisHealth:
    """When this process may try Redis again after a failure."""

    retry_at = 0.0

    def usable(self) -> bool:
        return bool(settings.GATEWAY_RESPONSE_CACHE_REDIS_URL) and time.monotonic() >= self.retry_at

    def failed(self, error: BaseException) -> None:
        if time.monotonic() >= self.retry_at:
            logger.warning("response cache: Redis failed (%s: %s); using the database", type(error).__name__, error)
        self.retry_at = time.monotonic() + settings.GATEWAY_RESPONSE_CACHE_REDIS_RETRY_MS / 1000

    def reset(self) -> None:
        self.retry_at = 0.0


redis_health = _RedisHealth()


def redis_errors() -> tuple[type[BaseException], ...]:
    from redis.exceptions import RedisError

    return (RedisError, OSError, asyncio.TimeoutError)


async def lookup(organization_id: Any, key: str) -> tuple[Entry | None, str]:
    """(the entry stored under `key`, or None; the store that answered: "redis" or "database")."""
    if redis_health.usable():
        try:
            raw = await redis_store.get(organization_id, key)
            return (decode(raw) if raw is not None else None), "redis"
        except redis_errors() as error:
            redis_health.failed(error)
    raw = await _db_get(organization_id, key)
    return (decode(raw) if raw is not None else None), "database"


async def save(organization_id: Any, key: str, value: bytes, model: str, expires: float) -> str:
    """Store the entry; the store used."""
    if redis_health.usable():
        try:
            await redis_store.put(organization_id, key, value, model, expires)
            return "redis"
        except redis_errors() as error:
            redis_health.failed(error)
    await _db_put(organization_id, key, value, model, expires)
    return "database"

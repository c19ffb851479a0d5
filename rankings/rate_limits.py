"""Rate limits of the rankings dataset: 30 requests per minute per key and 500 per UTC day per
organization (fixed windows). Counters are shared across processes: a Redis Lua script when REDIS_URL is
set, conditional UPDATEs in the database otherwise (and while Redis cannot be reached). A refused request is
not counted."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F

from gateway_project.api.errors import GatewayError
from rankings.models import RateLimitCounter

logger = logging.getLogger("gateway.rankings")
PER_KEY_PER_MINUTE = 30
PER_ORG_PER_DAY = 500

_LUA = """
local c1 = tonumber(redis.call('GET', KEYS[1]) or '0')
if c1 >= tonumber(ARGV[1]) then return 1 end
local c2 = tonumber(redis.call('GET', KEYS[2]) or '0')
if c2 >= tonumber(ARGV[2]) then return 2 end
redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], ARGV[3])
redis.call('INCR', KEYS[2])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 0
"""
_script = None


@dataclass(frozen=True)
class Window:
    key: str
    limit: int
    seconds: int

    def start(self, now: float) -> int:
        return int(now // self.seconds * self.seconds)

    def retry_after(self, now: float) -> int:
        return max(1, int(self.start(now) + self.seconds - now + 0.999))


def _redis_allows(windows: tuple[Window, Window], now: float) -> int:
    global _script
    from gateway_project.policy_cache import _redis_sync

    if _script is None:
        _script = _redis_sync().register_script(_LUA)
    keys = [f"ratelimit:{w.key}:{w.start(now)}" for w in windows]
    return int(_script(keys=keys, args=[windows[0].limit, windows[1].limit, windows[0].seconds, windows[1].seconds]))


def _db_take(window: Window, now: float) -> bool:
    start = window.start(now)
    rows = RateLimitCounter.objects.filter(key=window.key, window_start=start, count__lt=window.limit)
    if rows.update(count=F("count") + 1):
        return True
    if RateLimitCounter.objects.filter(key=window.key, window_start=start).exists():
        return False
    try:
        with transaction.atomic():
            RateLimitCounter.objects.create(key=window.key, window_start=start, count=1)
        return True
    except IntegrityError:
        return bool(rows.update(count=F("count") + 1))


def _db_allows(windows: tuple[Window, Window], now: float) -> int:
    with transaction.atomic():
        if not _db_take(windows[0], now):
            return 1
        if not _db_take(windows[1], now):
            transaction.set_rollback(True)
            return 2
    if random.random() < 0.01:  # occasional clean-up of expired windows
        RateLimitCounter.objects.filter(window_start__lt=windows[1].start(now) - 86_400).delete()
    return 0


def _allows(windows: tuple[Window, Window], now: float) -> int:
    """Redis when configured and reachable; the database counters otherwise (Redis is an accelerator)."""
    if settings.REDIS_URL:
        import redis

        try:
            return _redis_allows(windows, now)
        except redis.RedisError as error:
            logger.warning("rankings rate limit: Redis unavailable (%s); counting in the database", error)
    return _db_allows(windows, now)


def check_rankings_rate_limit(*, key_hash: str, organization_id) -> None:
    """Count one request of `key_hash`, or raise 429 with Retry-After when a limit is reached."""
    now = time.time()
    windows = (
        Window(f"rankings:key:{key_hash}", PER_KEY_PER_MINUTE, 60),
        Window(f"rankings:org:{organization_id}", PER_ORG_PER_DAY, 86_400),
    )
    refused = _allows(windows, now)
    if refused:
        window = windows[refused - 1]
        scope = "30 requests per minute per key" if refused == 1 else "500 requests per day per organization"
        raise GatewayError(429, f"Rate limit exceeded: {scope}", headers={"Retry-After": str(window.retry_after(now))})

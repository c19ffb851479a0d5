"""The two stores of the sliding window log: the same decisions from the database and from Redis."""

from __future__ import annotations

import asyncio
import uuid

import pytest
import redis.asyncio
from django.conf import settings

from ratelimits import db_store, redis_store
from ratelimits.limits import WINDOW_MS, RateLimit
from ratelimits.models import RateLimitEntry, RateLimitScope

T0 = 1_800_000_000_000


def limit(rpm=None, tpm=None, scope="api-key") -> RateLimit:
    return RateLimit(scope, uuid.uuid4().hex, rpm, tpm)


@pytest.mark.django_db
def test_database_requests_window_slides():
    key = limit(rpm=3)
    admitted = [db_store.check([key], f"r{i}", 0, now_ms=T0 + i * 1000).admitted for i in range(5)]
    assert admitted == [True, True, True, False, False]
    refused = db_store.check([key], "r5", 0, now_ms=T0 + 10_000)
    assert refused.refused == key and refused.dimension == "requests"
    assert refused.retry_after_ms == WINDOW_MS - 10_000  # until the first entry leaves
    assert refused.states[0].requests == 3
    assert not db_store.check([key], "r6", 0, now_ms=T0 + WINDOW_MS - 1).admitted
    again = db_store.check([key], "r7", 0, now_ms=T0 + WINDOW_MS)  # the first entry left the window
    assert again.admitted and again.states[0].requests == 3
    assert RateLimitEntry.objects.filter(scope_key=key.key).count() == 3  # expired entries are removed


@pytest.mark.django_db
def test_database_tokens_held_then_settled():
    key = limit(tpm=100)
    assert db_store.check([key], "a", 40, now_ms=T0).admitted
    assert db_store.check([key], "b", 40, now_ms=T0 + 1).admitted
    refused = db_store.check([key], "c", 40, now_ms=T0 + 2)
    assert not refused.admitted and refused.dimension == "tokens" and refused.states[0].tokens == 80
    assert refused.retry_after_ms == WINDOW_MS - 2  # "a" leaving frees enough
    db_store.settle([key], "a", 10)  # "a" used 10 tokens, not the 40 held
    decision = db_store.check([key], "c", 40, now_ms=T0 + 3)
    assert decision.admitted and decision.states[0].tokens == 90
    too_large = db_store.check([key], "d", 101, now_ms=T0 + 4)
    assert not too_large.admitted and too_large.retry_after_ms == WINDOW_MS
    later = db_store.check([key], "e", 5, now_ms=T0 + WINDOW_MS)  # "a" (10 tokens) left the window
    assert later.admitted and later.states[0].tokens == 85 and later.states[0].requests == 3
    scope = RateLimitScope.objects.get(scope_key=key.key)  # the running totals are the window's sums
    entries = RateLimitEntry.objects.filter(scope_key=key.key)
    assert (scope.requests, scope.tokens) == (entries.count(), sum(e.tokens for e in entries)) == (3, 85)


@pytest.mark.django_db
def test_database_all_scopes_or_none():
    key, workspace = limit(rpm=5), limit(rpm=2, scope="workspace")
    other_key = limit(rpm=5)
    assert db_store.check([key, workspace], "1", 0, now_ms=T0).admitted
    assert db_store.check([other_key, workspace], "2", 0, now_ms=T0).admitted
    refused = db_store.check([key, workspace], "3", 0, now_ms=T0)
    assert refused.refused == workspace
    assert RateLimitEntry.objects.filter(scope_key=key.key).count() == 1  # nothing written for the refused one


def _redis():
    if not settings.GATEWAY_RATE_LIMIT_REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")


async def _redis_run(coro_fn):
    try:
        return await coro_fn()
    finally:
        client, _, _ = redis_store._scripts()
        redis_store._clients.clear()
        await client.aclose()


def test_redis_requests_and_tokens():
    _redis()
    key, workspace = limit(rpm=3, tpm=100), limit(tpm=1000, scope="workspace")

    async def scenario():
        decisions = [
            await redis_store.check(
                [key, workspace],
                f"r{i}",
                30,
            )
            for i in range(4)
        ]
        assert [d.admitted for d in decisions] == [True, True, True, False]
        assert decisions[3].dimension == "requests" and 0 < decisions[3].retry_after_ms <= WINDOW_MS
        assert decisions[2].states[0].requests == 3 and decisions[2].states[0].tokens == 90
        assert decisions[2].states[1].tokens == 90 and 0 < decisions[2].states[0].reset_ms <= WINDOW_MS

        tokens_key = limit(tpm=100)
        assert (await redis_store.check([tokens_key], "a", 60)).admitted
        refused = await redis_store.check([tokens_key], "b", 60)
        assert not refused.admitted and refused.dimension == "tokens" and refused.states[0].tokens == 60
        await redis_store.settle([tokens_key], "a", 25)
        admitted = await redis_store.check([tokens_key], "b", 60)
        assert admitted.admitted and admitted.states[0].tokens == 85
        too_large = await redis_store.check([tokens_key], "c", 101)
        assert not too_large.admitted and too_large.retry_after_ms == WINDOW_MS

    asyncio.run(_redis_run(scenario))


def test_redis_entries_leaving_the_window_with_zero_tokens_keep_the_check_in_redis():
    """A requests-only limit holds 0 tokens per entry; when such entries left the window, the script subtracted
    `-0` from the total, which Redis refuses ("value is not an integer"): every check then failed over to the
    database path, whose window Redis does not see. Also: totals beyond 1e14 must stay integers in Lua."""
    _redis()
    requests_only = limit(rpm=2)
    tokens_key = limit(tpm=10**16)

    async def scenario():
        client = redis.asyncio.Redis.from_url(settings.GATEWAY_RATE_LIMIT_REDIS_URL)
        log, amounts = (f"gateway:rl:{requests_only.key}:{part}" for part in ("log", "tokens"))
        seconds, micros = await client.time()
        now_ms = seconds * 1000 + micros // 1000
        old = now_ms - 2 * WINDOW_MS
        await client.zadd(log, {"old-1": old, "old-2": old + 1})
        await client.hset(amounts, mapping={"old-1": 0, "old-2": 0, "_total": 0})
        first = await redis_store.check([requests_only], "new-1", 0)
        assert first.admitted and first.store == "redis" and first.states[0].requests == 1
        second = await redis_store.check([requests_only], "new-2", 0)
        assert second.admitted and second.states[0].requests == 2
        assert not (await redis_store.check([requests_only], "new-3", 0)).admitted

        big = 3 * 10**14  # Lua's default number format would write 3e+14
        assert (await redis_store.check([tokens_key], "big-1", big)).admitted
        assert (await redis_store.check([tokens_key], "big-2", big)).states[0].tokens == 2 * big
        await redis_store.settle([tokens_key], "big-1", 7)
        third = await redis_store.check([tokens_key], "big-3", 1)
        assert third.store == "redis" and third.states[0].tokens == big + 8
        await redis_store.settle([tokens_key], "big-3", 1)  # unchanged: no HINCRBY of 0 either
        # the expiry of entries holding tokens gives them back
        tokens_log = f"gateway:rl:{tokens_key.key}:log"
        await client.zadd(tokens_log, {"big-2": old})
        after = await redis_store.check([tokens_key], "big-4", 1)
        assert after.store == "redis" and after.states[0].tokens == 7 + 1 + 1
        await client.aclose()

    asyncio.run(_redis_run(scenario))


def test_redis_settlements_ride_on_the_next_check_or_go_alone():
    """A settlement is not sent on its own while checks keep coming: the process's next check carries it (and
    already counts the freed tokens); one no check took within SETTLE_DELAY_MS is sent alone."""
    _redis()
    from ratelimits import limiter

    key, workspace = limit(tpm=1000), limit(tpm=10_000, scope="workspace")
    both = [key, workspace]

    async def scenario():
        client = redis.asyncio.Redis.from_url(settings.GATEWAY_RATE_LIMIT_REDIS_URL)
        amounts = f"gateway:rl:{key.key}:tokens"
        first = await limiter.check(both, "a", 300)
        assert first.admitted and first.store == "redis"
        assert limiter.settle_soon(first, both, "a", 40) is None  # queued, not a task
        assert await client.hget(amounts, "a") == b"300"  # not sent yet
        second = await limiter.check(both, "b", 300)  # carries "a": 40 + 300 held
        assert [state.tokens for state in second.states] == [340, 340]
        assert await client.hget(amounts, "a") == b"40"
        assert limiter.settle_soon(second, both, "b", 300) is None  # used what it held: nothing to send
        limiter.settle_soon(second, both, "b", 5)
        await asyncio.sleep(redis_store.SETTLE_DELAY_MS / 1000 + 0.1)  # no check came: sent alone
        assert await client.hget(amounts, "b") == b"5"
        assert await client.hget(f"gateway:rl:{workspace.key}:tokens", "_total") == b"45"
        await client.aclose()

    asyncio.run(_redis_run(scenario))


def test_redis_keys_outlive_their_newest_entry_and_their_time_to_live_is_set_at_most_once_a_second():
    """Both keys of a scope expire at least a second after the window of their newest entry (so an idle key
    leaves nothing behind), and the check sets their time to live only when it was last set a second ago or
    more (`_expiry`), not on every admission."""
    _redis()
    key = limit(rpm=1000, tpm=10**6)

    async def scenario():
        client = redis.asyncio.Redis.from_url(settings.GATEWAY_RATE_LIMIT_REDIS_URL)
        log, amounts = (f"gateway:rl:{key.key}:{part}" for part in ("log", "tokens"))
        assert (await redis_store.check([key], "a", 5)).admitted
        first = {name: await client.pttl(name) for name in (log, amounts)}
        assert all(WINDOW_MS + 1000 < ttl <= WINDOW_MS + 2000 for ttl in first.values()), first
        mark = await client.hget(amounts, "_expiry")
        await asyncio.sleep(0.3)
        assert (await redis_store.check([key], "b", 5)).admitted  # within the second: left as it was
        assert await client.hget(amounts, "_expiry") == mark
        second = {name: await client.pttl(name) for name in (log, amounts)}
        assert all(second[name] <= first[name] - 250 for name in (log, amounts)), (first, second)
        await asyncio.sleep(0.8)
        third = await redis_store.check([key], "c", 5)  # a second later: pushed forward again
        assert third.admitted and third.states[0].requests == 3 and third.states[0].tokens == 15
        assert int(await client.hget(amounts, "_expiry")) >= int(mark) + 1000
        later = {name: await client.pttl(name) for name in (log, amounts)}
        assert all(ttl > WINDOW_MS + 1000 for ttl in later.values()), later
        await client.aclose()

    asyncio.run(_redis_run(scenario))

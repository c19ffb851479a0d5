"""Leases (ratelimits/redis_leases.py): a busy key far from its limits is admitted in batches from one Redis check,
with the same counts, the same exact limit, and nothing left held once its leases end. Against the real Redis.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest
import redis.asyncio
from django.conf import settings

from ratelimits import limiter, redis_leases, redis_store
from ratelimits.limits import RateLimit

BASE_DIR = Path(__file__).resolve().parents[2]
# a lease ends GATEWAY_RATE_LIMIT_LEASE_MS (50) after it was asked for; what it returns rides on a check or goes
# alone SETTLE_DELAY_MS later
AFTER_LEASES = (50 + redis_store.SETTLE_DELAY_MS) / 1000 + 0.15
AFTER_A = 0.06  # longer than GATEWAY_RATE_LIMIT_LEASE_MS: the next check of the key asks no lease


@pytest.fixture(autouse=True)
def _needs_redis(request):
    if "value" in request.fixturenames:  # the settings test needs no Redis
        return
    if not settings.GATEWAY_RATE_LIMIT_REDIS_URL:
        pytest.skip("needs Redis (REDIS_URL)")
    limiter.redis_health.reset()


def limit(rpm=None, tpm=None, scope="api-key") -> RateLimit:
    return RateLimit(scope, uuid.uuid4().hex, rpm, tpm)


# A set of limits is one list object per key (ratelimits.limits.limits_of): leases are kept per list, so each
# test passes the same list to every check, as the middleware does.


@pytest.fixture
def sends(monkeypatch):
    """How many commands this process's Redis clients sent."""
    count = [0]
    execute = redis.asyncio.Redis.execute_command

    async def counting_execute(self, *args, **options):
        count[0] += 1
        return await execute(self, *args, **options)

    monkeypatch.setattr(redis.asyncio.Redis, "execute_command", counting_execute)
    return count


async def _close_clients() -> None:
    client, _, _ = redis_store._scripts()
    redis_store._clients.clear()
    await client.aclose()


async def window(limit: RateLimit) -> tuple[int, int, int]:
    """(entries in the scope's log, its `_total` of held tokens, the requests it counts), read from Redis."""
    client = redis.asyncio.Redis.from_url(settings.GATEWAY_RATE_LIMIT_REDIS_URL)
    try:
        entries = await client.zcard(f"gateway:rl:{limit.key}:log")
        total, extra = await client.hmget(f"gateway:rl:{limit.key}:tokens", "_total", "_extra")
    finally:
        await client.aclose()
    return entries, int(total or 0), entries + int(extra or 0)


def test_a_busy_key_far_from_its_limits_is_admitted_from_leases_with_exact_counts(sends):
    key, workspace = limit(rpm=10_000, tpm=10**7), limit(rpm=50_000, scope="workspace")
    both = [key, workspace]

    async def scenario():
        decisions = []
        for i in range(120):
            decisions.append(await limiter.check(both, f"r{i}", 10))
            await asyncio.sleep(0.0005)
        assert all(d.admitted and d.store == "redis" for d in decisions)
        # each decision shows the window as if every request had been checked alone
        assert [d.states[0].requests for d in decisions] == list(range(1, 121))
        assert [d.states[0].tokens for d in decisions] == [10 * n for n in range(1, 121)]
        assert [d.states[1].requests for d in decisions] == list(range(1, 121))
        from_leases = sum(1 for d in decisions if d.lease)
        assert from_leases >= 100 and sends[0] <= 25, (from_leases, sends[0])
        for i, decision in enumerate(decisions[:60]):  # half used 4 of their 10 tokens
            limiter.settle_soon(decision, both, f"r{i}", 4)
        await asyncio.sleep(AFTER_LEASES)
        # unused slots and tokens returned: the windows count exactly the admitted requests and what they use,
        # in far fewer entries than requests
        entries, total, count = await window(key)
        assert (total, count) == (60 * 4 + 60 * 10, 120) and entries <= 25
        assert (await window(workspace))[2] == 120
        await _close_clients()

    asyncio.run(scenario())


def test_near_the_limit_two_processes_admit_exactly_the_limit():
    """Two event loops with their own clients and leases (as two processes), 3x the limit between them: leases
    while far from the limit, checks one by one near it, exactly the limit admitted, nothing held beyond it."""
    key = limit(rpm=120, tpm=10**6)
    limits = [key]
    results: list[list] = [[], []]

    def process(index: int) -> None:
        async def run():
            for i in range(180):
                results[index].append(await limiter.check(limits, f"p{index}-{i}", 7))
                await asyncio.sleep(0.0005)
            await asyncio.sleep(AFTER_LEASES)
            await _close_clients()

        asyncio.run(run())

    threads = [threading.Thread(target=process, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    decisions = results[0] + results[1]
    admitted = [d for d in decisions if d.admitted]
    assert len(admitted) == 120
    assert any(d.lease for d in admitted) and any(not d.lease for d in admitted)
    refused = [d for d in decisions if not d.admitted]
    assert all(d.dimension == "requests" and d.retry_after_ms > 0 for d in refused)
    entries, total, count = asyncio.run(window(key))
    assert (total, count) == (120 * 7, 120) and entries < 120


def test_a_lease_asked_for_by_a_request_that_went_away_still_ends():
    key = limit(rpm=10_000)
    limits = [key]

    async def scenario():
        assert (await limiter.check(limits, "a", 0)).admitted
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        assert not (await limiter.check(limits, "b", 0)).lease  # the key's first check within a lease's time: alone
        sent = redis_store.send_check(limits, "c", 0)  # less than 50 ms after "b": asks for a lease
        assert sent.slots == redis_leases.FIRST_SLOTS
        sent.abandon()  # nobody awaits its reply
        await asyncio.sleep(0.01)
        assert redis_store._leases[id(asyncio.get_running_loop())].open  # granted and opened all the same
        assert (await limiter.check(limits, "d", 0)).lease == "c"  # admitted from it
        await asyncio.sleep(AFTER_LEASES)
        assert await window(key) == (3, 0, 4)  # a, b, and the lease c (d and c) after its two unused slots returned
        await _close_clients()

    asyncio.run(scenario())


def test_after_a_lease_that_served_its_asker_alone_the_next_check_asks_none_then_a_lease_of_two():
    """Requests close enough to ask a lease but not to use it would pay for leases that end unused: after such a
    lease the next check asks none, and the one after a lease of 2."""
    key = limit(rpm=10_000)
    limits = [key]

    async def scenario():
        assert (await limiter.check(limits, "a", 0)).admitted
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        assert (await limiter.check(limits, "b", 0)).admitted  # the key's first check within a lease's time: alone
        sent = redis_store.send_check(limits, "c", 0)  # less than 50 ms after "b": asks for a lease
        assert sent.slots == redis_leases.FIRST_SLOTS
        assert (await redis_store.finish_check(sent)).admitted
        await asyncio.sleep(0.08)  # the lease ends at its time, no request but "c" admitted from it
        assert not (await limiter.check(limits, "d", 0)).lease  # more than 50 ms after "c": checked alone
        sent = redis_store.send_check(limits, "e", 0)  # close after "d", but the last lease served its asker alone
        assert sent.slots == 1
        assert (await redis_store.finish_check(sent)).admitted
        sent = redis_store.send_check(limits, "f", 0)
        assert sent.slots == 2
        assert (await redis_store.finish_check(sent)).admitted
        assert (await limiter.check(limits, "g", 0)).lease == "f"  # the lease of 2, used up
        await asyncio.sleep(AFTER_LEASES)
        assert await window(key) == (6, 0, 7)  # a, b, c (3 unused slots returned), d, e, the lease f (f and g)
        await _close_clients()

    asyncio.run(scenario())


def test_a_key_near_its_limits_gets_no_lease():
    key = limit(rpm=1000, tpm=100)  # LEASE_ROOM leases of 4 slots x 5 tokens never fit in 100 tokens
    limits = [key]

    async def scenario():
        decisions = [await limiter.check(limits, f"r{i}", 5) for i in range(5)]
        assert all(d.admitted and not d.lease for d in decisions)
        assert await window(key) == (5, 25, 5)
        await _close_clients()

    asyncio.run(scenario())


def test_requests_arriving_while_a_lease_is_asked_for_wait_for_it_rather_than_ask_redis(sends):
    key = limit(rpm=10_000)
    limits = [key]

    async def scenario():
        await limiter.check(limits, "a", 0)
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        await limiter.check(limits, "b", 0)  # the key's first check within a lease's time: alone
        before = sends[0]
        decisions = await asyncio.gather(*(limiter.check(limits, f"c{i}", 0) for i in range(8)))
        # the first asks a lease of FIRST_SLOTS; three more take its slots; the fourth asks the next (twice as
        # large), the other three wait for it and take slots from it
        assert sends[0] - before == 2
        assert all(d.admitted for d in decisions)
        assert [d.states[0].requests for d in decisions] == list(range(3, 11))
        assert [d.lease for d in decisions] == ["c0"] * 4 + ["c4"] * 4
        await asyncio.sleep(AFTER_LEASES)
        assert (await window(key))[2] == 10  # the second lease's four unused slots returned
        await _close_clients()

    asyncio.run(scenario())


def test_requests_that_end_while_their_lease_is_open_settle_in_it_and_free_its_tokens(sends):
    key = limit(rpm=10_000, tpm=10**7)
    limits = [key]

    async def scenario():
        loop_id = id(asyncio.get_running_loop())
        await limiter.check(limits, "a", 0)
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        await limiter.check(limits, "b", 0)  # the key's first check within a lease's time: alone
        first = await limiter.check(limits, "c", 10)  # asks a lease: FIRST_SLOTS x 10 tokens
        second = await limiter.check(limits, "d", 10)  # a slot of it
        assert (first.lease, second.lease) == ("c", "c")
        before = sends[0]
        assert limiter.settle_soon(first, limits, "c", 3) is None
        assert limiter.settle_soon(second, limits, "d", 0) is None
        assert not redis_store._unsettled[loop_id].items  # nothing queued for Redis: settled in the open lease
        # 40 tokens leased, 3 used: a request of 30 fits in it (without the settlements it would not: 20 + 30)
        third = await limiter.check(limits, "e", 30)
        assert third.lease == "c" and sends[0] == before
        assert third.states[0].tokens == 3 + 30  # the window as this process knows it
        await asyncio.sleep(AFTER_LEASES)
        # the lease's end returned its unused slot and the tokens its requests did not use, in one item
        assert await window(key) == (3, 33, 5)  # a, b and the lease (c, d, e); 3 + 0 + 30 tokens held
        # a request of the lease that ends after it settles through Redis, as any other
        assert limiter.settle_soon(third, limits, "e", 5) is None
        assert redis_store._unsettled[loop_id].items
        await asyncio.sleep(AFTER_LEASES)
        assert await window(key) == (3, 8, 5)
        await _close_clients()

    asyncio.run(scenario())


def test_requests_of_a_lease_used_up_before_its_time_settle_in_it_until_then(sends):
    """A lease whose slots are all taken admits no more (the key's next request asks for the next lease), but
    requests admitted from it that end before its time is up still settle in it: nothing is queued for Redis per
    request, and its end returns what they did not use in one item."""
    key = limit(rpm=10_000, tpm=10**7)
    limits = [key]

    async def scenario():
        loop_id = id(asyncio.get_running_loop())
        await limiter.check(limits, "a", 0)
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        await limiter.check(limits, "b", 0)  # the key's first check within a lease's time: alone
        decisions = [await limiter.check(limits, f"c{i}", 10) for i in range(redis_leases.FIRST_SLOTS)]
        assert [d.lease for d in decisions] == ["c0"] * redis_leases.FIRST_SLOTS
        assert not redis_store._leases[loop_id].open  # used up: the next request asks for a lease
        before = sends[0]
        for i, decision in enumerate(decisions):
            assert limiter.settle_soon(decision, limits, f"c{i}", 3) is None
        assert not redis_store._unsettled[loop_id].items and sends[0] == before  # settled in the lease
        following = await limiter.check(limits, "d", 10)  # asks the next lease, twice as large
        assert following.lease == "d" and sends[0] == before + 1
        await asyncio.sleep(AFTER_LEASES)
        # a, b, the lease c0 (its 4 requests, 3 tokens each), the lease d (its 7 unused slots returned)
        assert await window(key) == (4, 4 * 3 + 10, 7)
        await _close_clients()

    asyncio.run(scenario())


def test_a_request_takes_a_slot_of_the_lease_it_waited_for_last(sends, monkeypatch):
    """After its last wait (LEASE_WAITS) a request still takes a slot of the lease it waited for, rather than
    being checked in Redis on its own while that lease stays open with its slots unused."""
    monkeypatch.setattr(limiter, "LEASE_WAITS", 1)
    monkeypatch.setattr(redis_leases, "FIRST_SLOTS", 8)
    key = limit(rpm=10_000)
    limits = [key]

    async def scenario():
        await limiter.check(limits, "a", 0)
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        await limiter.check(limits, "b", 0)  # the key's first check within a lease's time: alone
        before = sends[0]
        decisions = await asyncio.gather(*(limiter.check(limits, f"c{i}", 0) for i in range(8)))
        assert [d.lease for d in decisions] == ["c0"] * 8  # one lease of 8 slots, each waiter took one
        assert sends[0] - before == 1
        await asyncio.sleep(AFTER_LEASES)
        assert (await window(key))[2] == 10
        await _close_clients()

    asyncio.run(scenario())


def test_a_request_cancelled_while_its_lease_is_on_the_way_leaves_the_lease_to_end_as_any_other():
    key = limit(rpm=10_000)
    limits = [key]

    async def scenario():
        await limiter.check(limits, "a", 0)
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        await limiter.check(limits, "b", 0)  # the key's first check within a lease's time: alone
        asking = asyncio.ensure_future(limiter.check(limits, "c", 0))  # asks for a lease
        await asyncio.sleep(0)  # sent; its reply not in yet
        asking.cancel()
        with pytest.raises(asyncio.CancelledError):
            await asking
        await asyncio.sleep(0.01)
        leases = redis_store._leases[id(asyncio.get_running_loop())]
        assert [lease.member for lease in leases.open.values()] == ["c"]  # granted, and opened all the same
        await asyncio.sleep(AFTER_LEASES)
        assert await window(key) == (3, 0, 3)  # a, b, c (held: it may have reached the upstream); 3 slots returned
        await _close_clients()

    asyncio.run(scenario())


def test_entries_of_a_version_without_leases_are_counted_and_a_refusal_leaves_no_key_without_expiry():
    """Processes of a version without leases write one entry per request and no `_extra`: counted all the same.
    A refused check writes nothing (no hash left without a time to live)."""
    key = limit(rpm=3)
    limits = [key]

    async def scenario():
        client = redis.asyncio.Redis.from_url(settings.GATEWAY_RATE_LIMIT_REDIS_URL)
        seconds, micros = await client.time()
        now_ms = seconds * 1000 + micros // 1000
        await client.zadd(f"gateway:rl:{key.key}:log", {"old-1": now_ms - 10, "old-2": now_ms - 5})
        await client.hset(f"gateway:rl:{key.key}:tokens", mapping={"old-1": 0, "old-2": 0, "_total": 0})
        assert (await limiter.check(limits, "new-1", 0)).states[0].requests == 3
        refused = await limiter.check(limits, "new-2", 0)
        assert not refused.admitted and 0 < refused.retry_after_ms <= 60_000
        other, workspace, refused_key = limit(rpm=5), limit(rpm=1, scope="workspace"), limit(rpm=5)
        assert (await limiter.check([other, workspace], "w-1", 0)).admitted
        assert not (await limiter.check([refused_key, workspace], "w-2", 0)).admitted  # a new key, refused
        assert await client.exists(*(f"gateway:rl:{refused_key.key}:{part}" for part in ("log", "tokens"))) == 0
        for scope in (key, other, workspace):
            for part in ("log", "tokens"):
                assert await client.pttl(f"gateway:rl:{scope.key}:{part}") > 0, (scope, part)
        await client.aclose()
        await _close_clients()

    asyncio.run(scenario())


def test_leases_off_checks_every_request_in_redis(sends, settings):
    settings.GATEWAY_RATE_LIMIT_LEASE_MS = 0
    key = limit(rpm=10_000)
    limits = [key]

    async def scenario():
        decisions = [await limiter.check(limits, f"r{i}", 0) for i in range(10)]
        assert all(d.admitted and not d.lease for d in decisions) and sends[0] == 10
        assert await window(key) == (10, 0, 10)
        await _close_clients()

    asyncio.run(scenario())


@pytest.mark.parametrize("value", ["-1", "1001", "fifty"])
def test_a_lease_time_out_of_range_is_refused_at_start(value):
    read = (
        "import django, os; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'gateway_project.settings');django.setup()"
    )
    env = {**os.environ, "DJANGO_SECRET_KEY": "x", "GATEWAY_RATE_LIMIT_LEASE_MS": value}
    out = subprocess.run([sys.executable, "-c", read], cwd=BASE_DIR, env=env, capture_output=True, text=True)
    assert out.returncode != 0 and "GATEWAY_RATE_LIMIT_LEASE_MS" in out.stderr


def test_shutdown_waits_for_open_leases_to_give_back_what_they_hold(sends):
    """The ASGI lifespan's drain (gateway_project/lifespan.py) counts this process's open leases and queued
    settlements: a stopping process returns its unused slots and tokens instead of leaving them held."""
    from gateway_project.lifespan import drain
    from ratelimits.apps import redis_pending

    key = limit(rpm=10_000, tpm=10**7)
    limits = [key]

    async def scenario():
        await limiter.check(limits, "a", 0)
        await asyncio.sleep(AFTER_A)  # "b" is the key's first check within a lease's time
        await limiter.check(limits, "b", 0)
        first = await limiter.check(limits, "c", 10)  # asks a lease: FIRST_SLOTS x 10 tokens
        assert first.lease == "c"
        assert limiter.settle_soon(first, limits, "c", 3) is None
        assert redis_pending() > 0  # the lease is open
        assert await drain(5.0) == 0
        assert redis_pending() == 0  # ended, and its returns sent
        await asyncio.sleep(0.05)  # the script reaches Redis before this test's own connection asks
        assert await window(key) == (3, 3, 3)  # a, b, c; only c's 3 tokens held: the lease gave back the rest
        await _close_clients()

    asyncio.run(scenario())

"""CPU of the rate-limit step per request, in this process and in Redis, with leases (ratelimits/redis_leases.py),
without (every request checked in Redis on its own), and the loop without limits, alternated in one process.

    REDIS_URL=redis://127.0.0.1:6379/1 taskset -c 1 .venv/bin/python bench/ratelimit_step.py   # N=20000 C=16 ROUNDS=3

The step as the middleware runs it (ratelimits/middleware.py): the check started (`limiter.start`, or
`limiter.check` when the key's last decision left no room), its decision awaited, the six headers built, the
settlement queued (each request uses half the tokens it held, so every request settles); C requests at once,
on a key and its workspace both limited far above what the run admits (as bench/policies.py sets them). This
process's CPU per request (`time.process_time`) and Redis's (`INFO commandstats`: the scripts' `usec`, so the
server's work without its network I/O) are printed per mode and round. Fresh scopes per run.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key-0123456789abcdefghijklmnop")

import django

django.setup()

import redis  # noqa: E402
from django.conf import settings  # noqa: E402

from ratelimits import limiter, redis_store  # noqa: E402
from ratelimits.limits import RateLimit, rate_limit_headers  # noqa: E402

N = int(os.environ.get("N", "20000"))
C = int(os.environ.get("C", "16"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
TOKENS = 400
LEASE_MS = settings.GATEWAY_RATE_LIMIT_LEASE_MS or 50


def script_usec(client: redis.Redis) -> int:
    stats = client.info("commandstats")
    return sum(int(stats.get(name, {}).get("usec", 0)) for name in ("cmdstat_evalsha", "cmdstat_eval"))


async def step(limits: list[RateLimit]) -> None:
    request_id = uuid.uuid4().hex
    if not limits:  # the loop alone
        await asyncio.sleep(0)
        return
    pending = limiter.start(limits, request_id, TOKENS)
    decision = await (limiter.check(limits, request_id, TOKENS) if pending is None else pending.result())
    assert decision.admitted, decision
    rate_limit_headers(decision)
    await asyncio.sleep(0)  # the rest of the request
    limiter.settle_soon(decision, limits, request_id, TOKENS // 2)


async def run(mode: str) -> tuple[float, float]:
    settings.GATEWAY_RATE_LIMIT_LEASE_MS = LEASE_MS if mode == "leases" else 0
    suffix = uuid.uuid4().hex
    limits = [RateLimit("api-key", suffix, 10**9, 2 * 10**12), RateLimit("workspace", suffix, 10**9, 2 * 10**12)]
    if mode == "no limits":
        limits = []
    for _ in range(200):  # warm: the connection, the plan, the room hint
        await step(limits)
    await asyncio.sleep(0.2)
    client = redis.Redis.from_url(settings.GATEWAY_RATE_LIMIT_REDIS_URL)
    before_redis, before = script_usec(client), time.process_time()
    left = N

    async def worker():
        nonlocal left
        while left > 0:
            left -= 1
            await step(limits)

    await asyncio.gather(*(worker() for _ in range(C)))
    await asyncio.sleep(0.2)  # the last settlements and leases' ends
    cpu = (time.process_time() - before) / N * 1e6
    redis_cpu = (script_usec(client) - before_redis) / N
    client.close()
    return cpu, redis_cpu


async def main() -> None:
    if not settings.GATEWAY_RATE_LIMIT_REDIS_URL:
        sys.exit("set REDIS_URL")
    print(f"{N} requests per run at concurrency {C}; CPU per request in µs (this process / Redis's scripts)")
    for round_ in range(1, ROUNDS + 1):
        line = f"round {round_}"
        for mode in ("leases", "one by one", "no limits"):
            cpu, redis_cpu = await run(mode)
            line += f" | {mode}: {cpu:5.1f} / {redis_cpu:4.1f}"
        print(line, flush=True)
    await redis_store._scripts()[0].aclose()


if __name__ == "__main__":
    asyncio.run(main())

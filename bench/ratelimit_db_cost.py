"""Cost of the database path of rate limiting per request, in process: `check` then `settle` (what one request of
a key with `requests_per_minute` and `tokens_per_minute` does when Redis is not configured), on a fresh database.

    .venv/bin/python bench/ratelimit_db_cost.py [requests]          # SQLite (a temporary file)
    DATABASE_URL=postgres://... .venv/bin/python bench/ratelimit_db_cost.py [requests]

Prints CPU microseconds (this process: Python, the driver, and SQLite itself) and wall microseconds per request,
best of 5 runs (a loaded machine inflates the figures less), and the statements run per request, for one request
at a time (`db_store` called directly) and for 16 concurrent requests through `ratelimits.limiter` as the
middleware calls it (the database thread, settlements group-committed). The limits are high enough that every
request is admitted, and the window fills as in a steady stream of requests.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import sys
import tempfile
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only-secret-key-0123456789abcdefghijklmnop")
if "DATABASE_URL" not in os.environ:
    os.environ["DATABASE_URL"] = f"sqlite:///{tempfile.mkdtemp()}/ratelimit-bench.sqlite3"
os.environ.pop("REDIS_URL", None)
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import django

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from budgets import counter_sql  # noqa: E402
from ratelimits import db_store  # noqa: E402
from ratelimits.limits import RateLimit  # noqa: E402
from ratelimits.models import RateLimitEntry, RateLimitScope  # noqa: E402

SETTLE_TAKES_HELD = "held" in inspect.signature(db_store.settle).parameters
LIMITS = [
    RateLimit("api-key", "bench-key", 1_000_000, 1_000_000_000),
    RateLimit("workspace", "bench-workspace", 1_000_000, 1_000_000_000),
]


def one(index: int, now: int) -> None:
    request_id = f"req-{index}"
    decision = db_store.check(LIMITS, request_id, 1200, now_ms=now)
    assert decision.admitted
    if SETTLE_TAKES_HELD:
        db_store.settle(LIMITS, request_id, 40, held=1200)
    else:  # the code before the held tokens were passed in (for an A/B run)
        db_store.settle(LIMITS, request_id, 40)


def count_statements(work) -> int:
    """Statements `work` runs on the driver's cursors (counter_sql's transactions bypass Django's cursor)."""
    count = 0
    original = counter_sql._DriverCursor.execute

    def counting(self, sql, params=()):
        nonlocal count
        count += 1
        return original(self, sql, params)

    counter_sql._DriverCursor.execute = counting
    try:
        work()
    finally:
        counter_sql._DriverCursor.execute = original
    return count + 4  # BEGIN and COMMIT of the check and of the settlement (run on the raw cursor)


def run(requests: int, start: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for index in range(requests):
        one(start + index, 1_000_000 + (start + index) * 20)  # 50 requests a second: the window holds 3000
    return (time.process_time() - cpu) / requests * 1e6, (time.perf_counter() - wall) / requests * 1e6


async def _concurrent(requests: int, start: int, workers: int = 16) -> None:
    from ratelimits import limiter

    async def worker(offset: int) -> None:
        for index in range(start + offset, start + requests, workers):
            decision = await limiter.check(LIMITS, f"req-{index}", 1200)
            assert decision.admitted
            await limiter.settle(decision, LIMITS, f"req-{index}", 40)

    await asyncio.gather(*(worker(offset) for offset in range(workers)))


def run_concurrent(requests: int, start: int) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    asyncio.run(_concurrent(requests, start))
    return (time.process_time() - cpu) / requests * 1e6, (time.perf_counter() - wall) / requests * 1e6


def main() -> None:
    requests = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    call_command("migrate", verbosity=0)
    RateLimitEntry.objects.all().delete()
    RateLimitScope.objects.all().delete()
    run(3000, 0)  # fill the window (60 s at 50 requests a second)
    statements = count_statements(lambda: one(10**6, 1_000_000 + 3000 * 20))
    results = [run(requests, 3001 + round_ * requests) for round_ in range(5)]
    cpu = min(r[0] for r in results)
    wall = min(r[1] for r in results)
    print(f"{connection.vendor}: {cpu:.0f} us CPU, {wall:.0f} us wall per request (check + settle, 2 scopes)")
    print(f"statements per request: {statements} (BEGIN and COMMIT included)")
    results = [run_concurrent(requests, 10**7 + round_ * requests) for round_ in range(5)]
    cpu = min(r[0] for r in results)
    wall = min(r[1] for r in results)
    print(f"16 concurrent through the limiter: {cpu:.0f} us CPU, {wall:.0f} us wall per request")


if __name__ == "__main__":
    main()

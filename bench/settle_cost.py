"""CPU cost of settling budget holds: one transaction per request (`spend_settle`) vs group-committed batches.

    taskset -c 1 .venv/bin/python bench/settle_cost.py [--rounds 300] [--batch 16] [--limits 1]

Uses a throwaway SQLite database (or DATABASE_URL when set: a scratch database, it is migrated and written).
Each round takes `--batch` holds (not measured), then settles them one by one or as one batch, measured as
process CPU time (every thread) and wall time, per request. "sync" calls the functions directly; "async"
goes the data plane's way: the hop to Django's shared sync thread for each `spend_settle`, or the settler
queue (flush 0) for the batch. Prints medians over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-settle-cost")
_scratch = tempfile.TemporaryDirectory()
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch.name}/settle.sqlite3")

import django  # noqa: E402

django.setup()

from asgiref.sync import sync_to_async  # noqa: E402
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from budgets import counters, settler  # noqa: E402
from budgets.counters import Settlement  # noqa: E402
from inference.pipeline.context import SpendLimit  # noqa: E402


def holds(limits: list[SpendLimit], count: int) -> list[Settlement]:
    now = timezone.now()
    return [
        Settlement(
            hold=counters.spend_reserve(limits=limits, amount_units=10**8, now=now), cost_units=10**7, is_byok=False
        )
        for _ in range(count)
    ]


def measure(run, limits: list[SpendLimit], rounds: int, batch: int) -> tuple[float, float]:
    """Median CPU and wall microseconds per request."""
    cpu, wall = [], []
    for _ in range(rounds):
        items = holds(limits, batch)
        c0, w0 = time.process_time(), time.perf_counter()
        run(items)
        cpu.append((time.process_time() - c0) / batch * 1e6)
        wall.append((time.perf_counter() - w0) / batch * 1e6)
    return statistics.median(cpu), statistics.median(wall)


def sync_single(items: list[Settlement]) -> None:
    for s in items:
        counters.spend_settle(hold=s.hold, cost_units=s.cost_units, is_byok=s.is_byok)


def sync_batch(items: list[Settlement]) -> None:
    counters.spend_settle_many(items)


_settle_one = sync_to_async(counters.spend_settle, thread_sensitive=True)


async def _async_single(items: list[Settlement]) -> None:
    await asyncio.gather(*(_settle_one(hold=s.hold, cost_units=s.cost_units, is_byok=s.is_byok) for s in items))


async def _async_batch(items: list[Settlement]) -> None:
    await asyncio.gather(*(settler.settle(s) for s in items))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=300)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--limits", type=int, default=1, help="counters per hold (workspace budget, key limit...)")
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    settings.GATEWAY_BUDGET_SETTLE_FLUSH_MS = 0
    limits = [
        SpendLimit(
            scope="guardrail", scope_id=f"bench-{i}", name=f"bench {i}", limit_usd=Decimal(10**6), interval="daily"
        )
        for i in range(args.limits)
    ]
    print(f"{connection.vendor}, {args.limits} counter(s) per hold, {args.rounds} rounds of {args.batch} requests")
    print(f"{'variant':<28}{'CPU µs/request':>16}{'wall µs/request':>17}")
    for name, run in (("sync, one by one", sync_single), (f"sync, batch of {args.batch}", sync_batch)):
        cpu, wall = measure(run, limits, args.rounds, args.batch)
        print(f"{name:<28}{cpu:>16.1f}{wall:>17.1f}")
    async_variants = (("async, one by one", _async_single), (f"async, settler batch of {args.batch}", _async_batch))
    for name, coroutine_function in async_variants:
        cpu, wall = asyncio.run(_measure_async(coroutine_function, limits, args))
        print(f"{name:<28}{cpu:>16.1f}{wall:>17.1f}")


async def _measure_async(coroutine_function, limits, args) -> tuple[float, float]:
    """As `measure`, with every database call on Django's shared sync thread (holds too: SQLite connections
    are per thread), as in the data plane."""
    cpu, wall = [], []
    take = sync_to_async(holds, thread_sensitive=True)
    for _ in range(args.rounds):
        items = await take(limits, args.batch)
        c0, w0 = time.process_time(), time.perf_counter()
        await coroutine_function(items)
        cpu.append((time.process_time() - c0) / args.batch * 1e6)
        wall.append((time.perf_counter() - w0) / args.batch * 1e6)
    return statistics.median(cpu), statistics.median(wall)


if __name__ == "__main__":
    main()

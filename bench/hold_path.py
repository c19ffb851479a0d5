"""CPU and wall time of one budget hold + settlement at c=1 (a settlement batch of one), PostgreSQL only: the
database-thread path against the event-loop path (gateway_project/loop_pg.py), alternated in one process.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/<db> taskset -c 1 .venv/bin/python bench/hold_path.py   # N=1000

Migrates the database, then runs N holds of two limits (an API-key and a guardrail limit far from reached),
each settled at once, per path and round (3 rounds). PATHS="loop unprepared" compares the event-loop path with
its statements prepared (the default) and sent unprepared; for the event-loop paths on a local PostgreSQL the
database backend's own CPU per hold + settlement is printed too (from /proc). LOOP=uvloop runs it on uvloop, the
serving command's loop (`--loop uvloop`); the default is asyncio's.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

import django

django.setup()

from django.core.management import call_command  # noqa: E402

from budgets import middleware, settler  # noqa: E402
from budgets.counters import Settlement  # noqa: E402
from gateway_project import loop_pg  # noqa: E402
from inference.pipeline.context import SpendLimit  # noqa: E402

LIMITS = [
    SpendLimit(
        scope="api-key", scope_id=f"hp-{uuid.uuid4().hex}", name="k", limit_usd=Decimal("1000000"), interval="daily"
    ),
    SpendLimit(
        scope="guardrail",
        scope_id=f"{uuid.uuid4()}:key:hp",
        name="w",
        limit_usd=Decimal("1000000"),
        interval="daily",
    ),
]


def backend_cpu_us(pid: int | None) -> float:
    """User + system CPU of a local PostgreSQL backend (0 when it is not readable: a remote database)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK") * 1e6


async def one(path: str) -> None:
    now = datetime.now(UTC)
    loop_pg.prepared_statements = path != "unprepared"
    if path == "thread":
        hold = await middleware._reserve_on_thread(limits=LIMITS, amount_units=10**6, now=now, request_id="hp")
        await settler._settle_many_on_thread([Settlement(hold=hold, cost_units=10, is_byok=False)])
    else:
        hold = await middleware._reserve(limits=LIMITS, amount_units=10**6, now=now, request_id="hp")
        await settler._settle_many([Settlement(hold=hold, cost_units=10, is_byok=False)])


async def main() -> None:
    n = int(os.environ.get("N", "1000"))
    paths = os.environ.get("PATHS", "thread loop").split()
    for path in paths:
        await one(path)
    backend = (await loop_pg.database().query("SELECT pg_backend_pid()"))[0][0]
    for round_ in range(3):
        for path in paths:
            cpu, wall, db = time.process_time(), time.perf_counter(), backend_cpu_us(backend)
            for _ in range(n):
                await one(path)
            cpu, wall, db = time.process_time() - cpu, time.perf_counter() - wall, backend_cpu_us(backend) - db
            per_cpu, per_wall = cpu / n * 1e6, wall / n * 1e6
            database = f", database backend CPU {db / n:.0f} us" if path != "thread" else ""
            print(
                f"round {round_ + 1} {path:10s} hold+settle c=1: CPU {per_cpu:.0f} us, wall {per_wall:.0f} us{database}"
            )


if __name__ == "__main__":
    call_command("migrate", verbosity=0)
    if os.environ.get("LOOP") == "uvloop":
        import uvloop

        uvloop.install()
    asyncio.run(main())

"""Cost of one budget hold (`spend_reserve`), as the data plane makes it: CPU time of this process (every
thread), wall time and, on a local PostgreSQL, its backend's CPU time per hold, with 1 to 3 limits (workspace
budget, key limit, guardrail limit).

    taskset -c 1 .venv/bin/python bench/hold_cost.py [--holds 2000] [--limits 2] [--rounds 5]

Uses a throwaway SQLite database, or DATABASE_URL when set (a scratch database: it is migrated and written).
The holds are settled in batches outside the measured time, so the counters never fill up. Prints the median
over the rounds of CPU and wall microseconds per hold. For a paired before/after, run the same script in
two checkouts, alternating (`bench/paired.sh` does that for bench/run.sh).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-hold-cost")
_scratch = tempfile.TemporaryDirectory()
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch.name}/hold.sqlite3")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from budgets import counters  # noqa: E402
from budgets.counters import Settlement  # noqa: E402
from inference.pipeline.context import SpendLimit  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--holds", type=int, default=2000)
    parser.add_argument("--limits", type=int, default=2, choices=(1, 2, 3))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    run, key = str(uuid.uuid4()), uuid.uuid4().hex * 2
    limits = [
        SpendLimit(scope="workspace", scope_id=run, name="workspace", limit_usd=Decimal("1e6"),
                   interval="daily", include_byok=False),
        SpendLimit(scope="api-key", scope_id=key, name="key", limit_usd=Decimal("1e6"), interval=None,
                   include_byok=False),
        SpendLimit(scope="guardrail", scope_id=f"{run}:key:{key}", name="guardrail", limit_usd=Decimal("1e6"),
                   interval="monthly", include_byok=True),
    ][: args.limits]  # fmt: skip
    cpu_per, wall_per, server_per = [], [], []
    for _ in range(args.rounds + 1):  # the first round warms up (counter rows, caches, connection)
        held = []
        now = timezone.now()
        server = server_cpu()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(args.holds):
            held.append(counters.spend_reserve(limits=limits, amount_units=10**6, now=now, request_id="bench"))
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        server_per.append((server_cpu() - server) / args.holds * 1e6)
        cpu_per.append(cpu / args.holds * 1e6)
        wall_per.append(wall / args.holds * 1e6)
        for start in range(0, len(held), 200):
            counters.spend_settle_many(
                [Settlement(hold=h, cost_units=0, is_byok=False) for h in held[start : start + 200]]
            )
    print(
        f"{connection.vendor}, {args.limits} limit(s), {args.holds} holds x {args.rounds}: "
        f"CPU {statistics.median(cpu_per[1:]):.0f} us/hold, wall {statistics.median(wall_per[1:]):.0f} us/hold"
        + (f", PostgreSQL backend CPU {statistics.median(server_per[1:]):.0f} us/hold" if server_per[1] else "")
    )


def server_cpu() -> float:
    """CPU seconds of this connection's PostgreSQL backend (when it runs on this machine), else 0."""
    if connection.vendor != "postgresql":
        return 0.0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


if __name__ == "__main__":
    main()

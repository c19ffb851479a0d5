"""Cost of keeping the usage rollups at accounting: the upsert added to each group-committed batch.

    .venv/bin/python bench/rollup_cost.py [--rounds 200] [--batches 1,16,100]

Uses a throwaway SQLite database (or DATABASE_URL when set: a scratch database, it is migrated and written).
Each round writes one batch of Generation rows the way inference/recorder.py does (one transaction, one insert),
without the rollup upsert (analytics/rollup.py), with the hourly tier only (as before the daily tier) and with
both tiers (hourly + daily, as now), in turn; prints the median wall time per batch of each and the differences
per generation. Rows spread over 3 models, 2 providers, 4 keys and 2 statuses, in the
current hour (the upsert then mostly updates rows, as in production).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-rollup-cost")
_scratch = tempfile.TemporaryDirectory()
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch.name}/rollup.sqlite3")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection, transaction  # noqa: E402

from accounts import services  # noqa: E402
from analytics.models import UsageRollup  # noqa: E402
from analytics.rollup import TIERS, rollup_generations  # noqa: E402
from inference.accounting import insert_generations  # noqa: E402
from inference.models import Generation  # noqa: E402


def _rows(organization, n: int) -> list[Generation]:
    now = datetime.now(UTC)
    return [
        Generation(
            id=uuid.uuid4(),
            organization_id=organization.id,
            workspace_id=organization.default_workspace.id,
            key_hash=f"{i % 4:064d}",
            model=("a/one", "b/two", "c/three")[i % 3],
            provider=("p1", "p2")[i % 2],
            status="failed" if i % 17 == 0 else "completed",
            input_tokens=100 + i,
            output_tokens=20,
            cost=Decimal("0.00012"),
            latency_ms=150 + 37 * i,
            created_at=now,
            completed_at=now,
        )
        for i in range(n)
    ]


def _write(organization, n: int, tiers: tuple) -> float:
    rows = _rows(organization, n)
    started = time.perf_counter()
    with transaction.atomic():
        insert_generations(rows)
        if tiers:
            rollup_generations(rows, tiers)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--batches", default="1,16,100")
    args = parser.parse_args()
    call_command("migrate", "-v0")
    organization = services.organization_create(name=f"bench-{uuid.uuid4().hex[:6]}")
    print(f"{connection.vendor}: median wall time per batch over {args.rounds} rounds")
    for n in (int(b) for b in args.batches.split(",")):
        variants = {"insert": (), "hourly": (UsageRollup,), "both": TIERS}
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, tiers in variants.items():
                times[name].append(_write(organization, n, tiers))
        a, h, b = (statistics.median(times[name]) * 1e6 for name in variants)
        print(
            f"batch {n:>4}: insert {a:8.0f} µs, + hourly {h:8.0f} µs, + hourly + daily {b:8.0f} µs; per generation: "
            f"hourly {(h - a) / n:6.1f} µs, hourly + daily {(b - a) / n:6.1f} µs, daily tier {(b - h) / n:6.1f} µs"
        )


if __name__ == "__main__":
    main()

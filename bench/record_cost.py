"""CPU cost of the accounting write: `record_generations_sync` on group-committed batches, per generation.

    taskset -c 1 .venv/bin/python bench/record_cost.py [--rounds 200] [--batch 16] [--profile]

Uses a throwaway SQLite database (or DATABASE_URL when set: a scratch database, it is migrated and written).
Each round builds `--batch` finished requests' contexts (not measured) and writes them the way the accounting
writer does (inference/recorder.py: one transaction with the Generation rows, their signals: the outbox, the
rankings sample, the usage rollups), measured as process CPU time (every thread) and wall time per generation.
Prints medians over the rounds; `--profile` prints the cProfile of the measured calls instead.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-record-cost")
_scratch = tempfile.TemporaryDirectory()
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch.name}/record.sqlite3")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from accounts import services  # noqa: E402
from accounts.principal import Principal  # noqa: E402
from inference.accounting import record_generations_sync  # noqa: E402
from inference.pipeline.context import Context, Outcome, Usage  # noqa: E402


def _contexts(principal: Principal, n: int) -> list[Context]:
    now = datetime.now(UTC)
    candidate = SimpleNamespace(
        model_slug="bench/fake", canonical_slug="bench/fake", provider_slug="bench", endpoint_id=None,
        output_modalities=("text",),
    )  # fmt: skip
    contexts = []
    for i in range(n):
        outcome = Outcome(
            status="completed",
            candidate=candidate,
            upstream_id=f"resp_{i}",
            finish_reason="stop",
            usage=Usage(input_tokens=12 + i, output_tokens=30),
            cost=Decimal("0.000123"),
            latency_ms=3 + i % 7,
            completed_at=now,
        )
        contexts.append(
            Context(
                request_id=str(uuid.uuid4()),
                created_at=now,
                started=time.perf_counter(),
                method="POST",
                path="/api/v1/responses",
                host="127.0.0.1",
                headers={},
                raw_body=b"",
                body={"model": "bench/fake", "input": "Say hello", "stream": False},
                principal=principal,
                outcome=outcome,
            )
        )
    return contexts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    call_command("migrate", "-v0")
    organization = services.organization_create(name=f"bench-{uuid.uuid4().hex[:6]}")
    workspace = organization.default_workspace
    principal = Principal(
        key_id=None, key_hash="b" * 64, key_name="bench", organization_id=organization.id,
        workspace_id=workspace.id, user_id=None, is_management=False, disabled=False, expires_at=None,
        limit=None, limit_reset=None, include_byok_in_limit=False,
    )  # fmt: skip
    profile = cProfile.Profile(time.process_time) if args.profile else None  # CPU time
    cpu, wall = [], []
    for _ in range(args.rounds):
        contexts = _contexts(principal, args.batch)
        c0, w0 = time.process_time(), time.perf_counter()
        if profile:
            profile.enable()
        record_generations_sync(contexts)
        if profile:
            profile.disable()
        cpu.append((time.process_time() - c0) / args.batch * 1e6)
        wall.append((time.perf_counter() - w0) / args.batch * 1e6)
    if profile:
        pstats.Stats(profile).sort_stats("cumulative").print_stats(40)
        return
    print(
        f"{connection.vendor}: batch {args.batch}, {args.rounds} rounds: median CPU {statistics.median(cpu):.0f} µs, "
        f"wall {statistics.median(wall):.0f} µs per generation"
    )


if __name__ == "__main__":
    main()

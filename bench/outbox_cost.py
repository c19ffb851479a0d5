"""Cost of the accounting write with observability destinations: the Generation row plus its outbox work.

    taskset -c 1 .venv/bin/python bench/outbox_cost.py [--rounds 200] [--batch 1] [--prompt-bytes 2000]

Uses a throwaway SQLite database (or DATABASE_URL when set: a scratch database, it is migrated and written).
One organization; its workspace gets 0, 1 or 3 webhook destinations (and one case with a `^(a+)+$` regex
filter on the input). Each round writes `--batch` requests with `record_generations_sync`, the function the
recorder runs off the request path, and is measured as process CPU time and wall time per request. Prints
medians over the rounds, and the bytes the outbox tables hold per request afterwards. The rankings sample is
off (GATEWAY_RANKINGS_SAMPLE_RATE=0): its classifier scans the prompt of a random tenth of the rows, which
would dominate the variance.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-outbox-cost")
os.environ.setdefault("GATEWAY_RANKINGS_SAMPLE_RATE", "0")  # its classifier's cost depends on which rows it samples
os.environ.setdefault("GATEWAY_BYOK_ENCRYPTION_KEYS", "x2sXdrpMfgsWkNMk8-Ru6p0s1k_7TS9ZfRZK4Ua2GTM=")
_scratch = tempfile.TemporaryDirectory()
os.environ.setdefault("DATABASE_URL", f"sqlite:///{_scratch.name}/outbox.sqlite3")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.utils import timezone  # noqa: E402

from accounts import services as accounts  # noqa: E402
from accounts.principal import load_principal  # noqa: E402
from inference.accounting import record_generations_sync  # noqa: E402
from inference.pipeline.context import Context, Outcome, Usage  # noqa: E402
from observability.services import destination_create  # noqa: E402

CATASTROPHIC = {"groups": [{"rules": [{"field": "input", "operator": "regex", "value": "^(a+)+$"}]}]}


def contexts(key_hash: str, count: int, prompt: str, version: int) -> list[Context]:
    result = []
    for _ in range(count):
        ctx = Context(
            request_id=str(uuid.uuid4()),
            created_at=timezone.now(),
            started=time.perf_counter(),
            method="POST",
            path="/api/v1/responses",
            host="gateway.test",
            headers={"user-agent": "bench/1.0"},
            raw_body=b"{}",
            body={"model": "openai/gpt-4o-mini", "input": prompt, "trace": {"trace_name": "bench"}},
            principal=load_principal(key_hash),
            policy_version=version,
        )
        answer = "x" * 400
        ctx.outcome = Outcome(
            status="completed",
            finish_reason="stop",
            usage=Usage(input_tokens=len(prompt) // 4, output_tokens=100),
            output_text=answer,
            output=[{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": answer}]}],
            ttft_ms=100,
            latency_ms=300,
        )
        result.append(ctx)
    return result


def table_bytes() -> int:
    """Bytes of the outbox's stored payloads (the tables that exist in this version)."""
    tables = connection.introspection.table_names()
    total = 0
    with connection.cursor() as cursor:
        if "observability_outboxentry" in tables:
            cursor.execute("SELECT COALESCE(SUM(LENGTH(CAST(payload AS TEXT))), 0) FROM observability_outboxentry")
            total += cursor.fetchone()[0] or 0
        if "observability_tracebody" in tables:
            cursor.execute("SELECT COALESCE(SUM(LENGTH(data)), 0) FROM observability_tracebody")
            total += cursor.fetchone()[0] or 0
    return total


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--prompt-bytes", type=int, default=2000)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    organization = accounts.organization_create(name=f"bench-{os.getpid()}")
    user = accounts.user_create(organization=organization, username=f"bench-{os.getpid()}")
    key = accounts.api_key_create(organization=organization, name="bench", creator=user)
    prompt = "Say hello " * (args.prompt_bytes // 10)
    catastrophic = "a" * 40 + "!"
    print(f"{connection.vendor}, {args.rounds} rounds of {args.batch}, prompt {len(prompt)} characters")
    print(f"{'destinations':<34}{'CPU µs/request':>16}{'wall µs/request':>17}{'stored B/request':>18}")
    cases = (
        ("none", [], prompt),
        ("1 webhook", [None], prompt),
        ("3 webhooks", [None, None, None], prompt),
        ("1 webhook, ^(a+)+$ filter", [CATASTROPHIC], catastrophic),
    )
    keys = []
    for number, (_, rules, _) in enumerate(cases):
        workspace = accounts.workspace_create(organization=organization, name=f"case {number}", slug=f"case-{number}")
        keys.append(
            accounts.api_key_create(organization=organization, name=f"k{number}", workspace=workspace, creator=user)
        )
        for index, rule in enumerate(rules):
            destination_create(
                organization=organization,
                data={
                    "name": f"hook-{index}",
                    "type": "webhook",
                    "workspace_id": str(workspace.id),
                    "config": {"url": "https://hooks.example.com/in"},
                    "filter_rules": rule,
                },
            )
    cpu = {name: [] for name, _, _ in cases}
    wall = {name: [] for name, _, _ in cases}
    stored = dict.fromkeys(cpu, 0)
    for _ in range(args.rounds):  # the cases interleaved, so a change in the machine's load hits them alike
        for (name, _, text), key in zip(cases, keys, strict=True):
            batch = contexts(key.api_key.hash, args.batch, text, 1)
            before = table_bytes()
            c0, w0 = time.process_time(), time.perf_counter()
            record_generations_sync(batch)
            cpu[name].append((time.process_time() - c0) / args.batch * 1e6)
            wall[name].append((time.perf_counter() - w0) / args.batch * 1e6)
            stored[name] += table_bytes() - before
    for name in cpu:
        per_request = stored[name] / (args.rounds * args.batch)
        print(
            f"{name:<34}{statistics.median(cpu[name]):>16.1f}{statistics.median(wall[name]):>17.1f}{per_request:>18.0f}"
        )


if __name__ == "__main__":
    main()

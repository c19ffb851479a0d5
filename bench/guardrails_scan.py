"""Paired micro-benchmark of the guardrail's content filters: the detectors and scan before the request-path
speed-up (tests/guardrails/legacy, kept as the differential tests' oracle) against the current ones, alternated
in one process on the same bodies, CPU time (process time) of `scan` + `redact` per request.

    .venv/bin/python bench/guardrails_scan.py [--rounds 5] [--iterations 2000]

Bodies: the benchmark's "Say hello" (bench/run.sh), bench/profile_load.py's prompt with an e-mail address, the
typical request of `manage.py bench_guardrails` (516 characters), and a 2.4 KB support request (one message
with a name, an e-mail address and a phone number). Policy: every built-in detector and five regexes, redact.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from copy import deepcopy
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

import django

django.setup()

from guardrails import content  # noqa: E402
from guardrails.management.commands.bench_guardrails import (  # noqa: E402
    full_policy,
    long_body,
    short_body,
    typical_body,
)
from tests.guardrails import legacy  # noqa: E402
from tests.guardrails.legacy import content as legacy_content  # noqa: E402
from tests.guardrails.test_differential import _legacy_policy  # noqa: E402


def run(scan, redact, policy, body: dict, iterations: int) -> float:
    bodies = [deepcopy(body) for _ in range(iterations)]
    started = time.process_time()
    for b in bodies:
        redact(scan(b, policy))
    return (time.process_time() - started) / iterations * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=2000)
    args = parser.parse_args()
    email = short_body() | {"input": "Say hello, my email is jane@example.com"}
    cases = [("'Say hello'", short_body()), ("short with e-mail", email), ("typical 516 chars", typical_body()),
             ("long 2.4 KB", long_body())]  # fmt: skip
    old = (legacy_content.scan, legacy_content.redact, _legacy_policy())
    new = (content.scan, content.redact, full_policy())
    assert legacy.DETECTORS
    print(f"{'body':20} {'before µs':>10} {'after µs':>10}   (CPU per request, median of {args.rounds} rounds)")
    for name, body in cases:
        iterations = max(50, args.iterations // (20 if len(str(body)) > 2000 else 1))
        run(*old, body, 100), run(*new, body, 100)  # warm-up
        before, after = [], []
        for _ in range(args.rounds):
            before.append(run(*old, body, iterations))
            after.append(run(*new, body, iterations))
        print(f"{name:20} {statistics.median(before):10.1f} {statistics.median(after):10.1f}")


if __name__ == "__main__":
    main()

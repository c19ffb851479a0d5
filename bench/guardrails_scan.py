"""Paired micro-benchmark of the guardrail's content filters: the detectors and scan before the request-path
speed-up (tests/guardrails/legacy, kept as the differential tests' oracle) against the current ones, alternated
in one process on the same bodies, CPU time (process time) of `scan` + `redact` per request.

    .venv/bin/python bench/guardrails_scan.py [--rounds 5] [--iterations 2000]

Bodies: the benchmark's "Say hello" (bench/run.sh), bench/profile_load.py's prompt with an e-mail address, the
typical request of `manage.py bench_guardrails` (516 characters), and a 2.4 KB support request (one message
with a name, an e-mail address and a phone number), each scanned afresh. Then a chat as a client sends it:
six earlier turns of about 2.4 KB each resent with a new last message per request, scanned by the middleware's
way (with a `TextCache`, so the resent turns come from it) against the old scan. Policy: every built-in detector
and five regexes, redact.
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
    LONG_MESSAGE,
    full_policy,
    long_body,
    short_body,
    typical_body,
)
from tests.guardrails import legacy  # noqa: E402
from tests.guardrails.legacy import content as legacy_content  # noqa: E402
from tests.guardrails.test_differential import _legacy_policy  # noqa: E402


def run(scan, redact, policy, body: dict, iterations: int, chat: bool = False) -> float:
    bodies = [deepcopy(body) for _ in range(iterations)]
    if chat:  # a new last message per request; the earlier turns are resent unchanged
        for n, b in enumerate(bodies):
            b["input"].append({"role": "user", "content": f"Thanks. One more question ({n}): what about the 502s?"})
    started = time.process_time()
    for b in bodies:
        redact(scan(b, policy))
    return (time.process_time() - started) / iterations * 1e6


def chat_body() -> dict:
    turns = [LONG_MESSAGE.replace("Sarah", name) for name in ("Anna", "Paul", "Maria", "Tom", "Julia", "Mark")]
    items = [{"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(turns)]
    return {"model": "openai/gpt-4o-mini", "input": items}


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
    cache = content.TextCache()

    def cached_scan(body, policy):
        return content.scan(body, policy, cache, "org")

    body, iterations = chat_body(), max(20, args.iterations // 100)
    run(*old, body, 10, chat=True), run(cached_scan, content.redact, new[2], body, 10, chat=True)
    before, after = [], []
    for _ in range(args.rounds):
        before.append(run(*old, body, iterations, chat=True))
        after.append(run(cached_scan, content.redact, new[2], body, iterations, chat=True))
    print(f"{'chat, 6 turns resent':20} {statistics.median(before):10.1f} {statistics.median(after):10.1f}")


if __name__ == "__main__":
    main()

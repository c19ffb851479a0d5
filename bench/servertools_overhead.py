"""What the server-tool loop costs a request that does not use it: the handler's `needs_plan(body)` test, and
`prepare(ctx)` for a request with function tools only (which then goes upstream as before).

    .venv/bin/python bench/servertools_overhead.py

Prints nanoseconds per call (best of 5 runs of 100,000 calls). See docs/server-tools.md ("Cost when unused").
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

import django
import orjson

django.setup()

from inference.schema import validate_body  # noqa: E402
from inference.servertools.plan import needs_plan, prepare  # noqa: E402

PLAIN = {"model": "bench/fake", "input": "Say hello", "stream": False}
HISTORY = {
    "model": "bench/fake",
    "input": [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}"} for i in range(20)],
}
TOOL = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
WITH_TOOLS = {"model": "bench/fake", "input": "Weather?", "tools": [TOOL, {**TOOL, "name": "a"}, {**TOOL, "name": "b"}]}


def per_call_ns(fn, arg, n: int = 50_000) -> float:
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter_ns()
        for _ in range(n):
            fn(arg)
        best = min(best, (time.perf_counter_ns() - start) / n)
    return best


def main() -> None:
    print(f"(for scale) an empty Python call: {per_call_ns(lambda c: None, None):.0f} ns")
    for name, body in (("plain body", PLAIN), ("20-message input", HISTORY)):
        ctx = SimpleNamespace(body=body, raw_body=orjson.dumps(body), principal=None, extras={})
        print(f"needs_plan, {name}: {per_call_ns(needs_plan, ctx):.0f} ns")
    ctx = SimpleNamespace(body=dict(WITH_TOOLS), raw_body=orjson.dumps(WITH_TOOLS), principal=None, extras={})
    print(f"needs_plan + prepare, 3 function tools: {per_call_ns(lambda c: needs_plan(c) and prepare(c), ctx):.0f} ns")
    print(f"(for scale) validate_body of that body: {per_call_ns(lambda b: validate_body(dict(b)), WITH_TOOLS):.0f} ns")


if __name__ == "__main__":
    main()

"""Wall time from the rate-limit step's entry to the handler's entry (the rate-limit check, the response cache
step and the budget hold), per request at one connection: the part of the critical path that sending the
rate-limit check ahead shortens (docs/rate-limits.md, "The check sent ahead").

    KEY=<inference key> N=500 python bench/admission_path.py       # env as bench/inprocess.py

Drives the ASGI application in-process like bench/inprocess.py (every policy on: bench/policies.py), with the
two entries timed by wrapping `RateLimitMiddleware.__call__` and `inference.handler.handle` (present in every
checkout since the rate limits exist, so two checkouts can be compared). Prints the median and the 10th/90th
percentiles in µs. Needs the fake upstream of bench/prepare.py's catalog (UPSTREAM_PORT) running.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")

import django

django.setup()

import inference.handler  # noqa: E402
from ratelimits.middleware import RateLimitMiddleware  # noqa: E402

ENTERED: dict[str, float] = {}
SPANS: list[float] = []
_rate_limit_call = RateLimitMiddleware.__call__
_handle = inference.handler.handle


async def timed_rate_limits(self, ctx):
    ENTERED[ctx.request_id] = time.perf_counter()
    await _rate_limit_call(self, ctx)


async def timed_handle(ctx):
    started = ENTERED.pop(ctx.request_id, None)
    if started is not None:
        SPANS.append(time.perf_counter() - started)
    await _handle(ctx)


RateLimitMiddleware.__call__ = timed_rate_limits
inference.handler.handle = timed_handle

import inprocess  # noqa: E402  (bench/inprocess.py: builds the chain on first use, with the wrapped handler)


def main() -> None:
    import uvloop

    total = int(os.environ.get("N", "500"))
    uvloop.run(inprocess.main(total, 1))
    SPANS[:] = SPANS[20:]  # the warm-up requests
    SPANS.sort()
    if not SPANS:
        sys.exit("no request reached the handler through the rate-limit step (rate limits on? BENCH_RATE_LIMITS=1)")
    pick = lambda q: SPANS[min(len(SPANS) - 1, int(q * len(SPANS)))] * 1e6  # noqa: E731
    print(
        f"rate-limit step -> handler: p10 {pick(0.1):.0f} us, p50 {pick(0.5):.0f} us, p90 {pick(0.9):.0f} us "
        f"({len(SPANS)} requests)"
    )


if __name__ == "__main__":
    main()

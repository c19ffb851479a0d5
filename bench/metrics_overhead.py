"""CPU added to each data-plane request by the /metrics instrumentation (operations/measure.py, metrics.py).

    .venv/bin/python bench/metrics_overhead.py            # in-process values
    MULTIPROC=1 .venv/bin/python bench/metrics_overhead.py  # PROMETHEUS_MULTIPROC_DIR (memory-mapped values)

Times, per request, on one core: the route wrapper around a minimal ASGI app that answers like a JSON request
(start + body) against the bare app, and the observations `record_request` makes for a completed request
(requests, latency, tokens x2, cost) and for a streamed one (plus time to first token and the open-stream
gauge). Best of 5 rounds of N calls; prints microseconds per request. The shared machine's load moves
end-to-end figures (bench/run.sh) by far more than these microseconds, which is why they are measured here.
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway_project.settings")
os.environ.setdefault("DJANGO_SECRET_KEY", "bench-only")
if os.environ.get("MULTIPROC") == "1":
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="gateway-metrics-bench-")

import django

django.setup()

from inference.pipeline.context import Candidate, Context, Usage  # noqa: E402
from operations import metrics  # noqa: E402
from operations.measure import measured  # noqa: E402

N = int(os.environ.get("N", "20000"))


def candidate() -> Candidate:
    return Candidate(
        endpoint_id=uuid.uuid4(), model_slug="bench/fake", canonical_slug="bench/fake", vendor="bench", public=True,
        provider_slug="fake", provider_name="Fake", api_format="openai-responses", base_url="", platform_key_env="",
        upstream_model="fake", prompt_price=Decimal("0.000001"), completion_price=Decimal("0.000002"),
        cached_prompt_price=None, is_free=False, context_length=None, max_output_tokens=None, supported_parameters=(),
        zdr=False, trains_on_data=False, publishes_prompts=False, regions=("global",), input_modalities=("text",),
        output_modalities=("text",),
    )  # fmt: skip


def context(streamed: bool) -> Context:
    ctx = Context(
        request_id="r", created_at=datetime.now(UTC), started=time.perf_counter(), method="POST",
        path="/api/v1/responses", host="h", headers={}, raw_body=b"",
    )  # fmt: skip
    outcome = ctx.outcome
    outcome.status, outcome.candidate, outcome.streamed = "completed", candidate(), streamed
    outcome.usage = Usage(input_tokens=12, output_tokens=30)
    outcome.cost = Decimal("0.000072")
    outcome.attempts = [{"model": "bench/fake", "provider": "fake", "status": "success"}]
    outcome.ttft_ms = 3
    return ctx


def best_per_call(fn, rounds: int = 5) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        fn()
        best = min(best, (time.process_time() - started) / N * 1e6)
    return best


async def answer(scope, receive, send) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b"{}"})


async def nothing(message) -> None:
    return None


def drive(app) -> None:
    scope = {"type": "http", "method": "POST", "path": "/api/v1/responses", "headers": []}

    async def run() -> None:
        for _ in range(N):
            await app(scope, None, nothing)

    asyncio.run(run())


def main() -> None:
    from django.test import override_settings

    json_ctx, stream_ctx = context(False), context(True)
    with override_settings(GATEWAY_METRICS_ENABLED=False):
        bare = best_per_call(lambda: drive(answer))
        wrapped = best_per_call(lambda: drive(measured(answer, "/api/v1/responses")))
    json_record = best_per_call(
        lambda: [metrics.record_request("/api/v1/responses", 200, 0.01, json_ctx) for _ in range(N)]
    )

    def stream_record():
        for _ in range(N):
            metrics.OPEN_STREAMS.inc()
            metrics.OPEN_STREAMS.dec()
            metrics.record_request("/api/v1/responses", 200, 0.01, stream_ctx)

    streamed = best_per_call(stream_record)
    mode = "multi-process (PROMETHEUS_MULTIPROC_DIR)" if os.environ.get("PROMETHEUS_MULTIPROC_DIR") else "in-process"
    print(f"values: {mode}; N={N}; CPU microseconds per request, best of 5")
    print(f"route wrapper without observations: {wrapped - bare:6.2f}")
    print(f"observations, JSON request:          {json_record:6.2f}")
    print(f"observations, streamed request:      {streamed:6.2f}")
    print(f"total added, JSON:                   {wrapped - bare + json_record:6.2f}")
    print(f"total added, streamed:               {wrapped - bare + streamed:6.2f}")


if __name__ == "__main__":
    main()

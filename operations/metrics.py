"""The gateway's Prometheus metrics (prometheus_client) and the one function that records a data-plane request.

With `PROMETHEUS_MULTIPROC_DIR` set (several uvicorn workers) prometheus_client keeps every value in
memory-mapped files in that directory and `/metrics` adds up all processes (operations/metrics_endpoint.py);
without it, values live in the process. Labels are bounded: routes are the data plane's route patterns, models
and providers come from the catalog (an unknown model is `unknown`), statuses are HTTP codes.

Cost on the data plane (docs/operations.md, bench/run.sh before/after): the request's observations are made
once, after its last byte was sent, from what its Context already holds; label sets are looked up once and
kept (a dict lookup per metric afterwards).
"""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from prometheus_client import Counter, Gauge, Histogram, disable_created_metrics

disable_created_metrics()  # no `*_created` series: half the output, and nothing dashboards use

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
TTFT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60)

REQUESTS = Counter(
    "gateway_requests",
    "Data-plane requests by route, HTTP status, model, provider and ingress format",
    ["route", "status", "model", "provider", "ingress"],
)
LATENCY = Histogram(
    "gateway_request_duration_seconds",
    "Data-plane request duration until the last byte of the answer, by route, model, provider and streaming",
    ["route", "model", "provider", "stream"],
    buckets=LATENCY_BUCKETS,
)
TTFT = Histogram(
    "gateway_time_to_first_token_seconds",
    "Streamed requests: time from arrival to the first token event sent",
    ["model", "provider"],
    buckets=TTFT_BUCKETS,
)
UPSTREAM_ERRORS = Counter(
    "gateway_upstream_errors", "Failed upstream attempts by provider and error kind", ["provider", "kind"]
)
FALLBACKS = Counter(
    "gateway_fallbacks",
    "Requests moved on from a failed endpoint to the next candidate, by model and the provider that failed",
    ["model", "provider"],
)
REFUSALS = Counter(
    "gateway_refusals",
    "Requests refused by the gateway's policies: budget (402), rate_limit (429), policy (403)",
    ["reason"],
)
TOKENS = Counter("gateway_tokens", "Tokens by model, provider and kind", ["model", "provider", "kind"])
COST = Counter("gateway_cost_usd", "Cost billed to users, USD, by model and provider", ["model", "provider"])
CACHE = Counter(
    "gateway_response_cache",
    "Requests that used the response cache, by result: hit, miss, bypass (docs/cache.md)",
    ["result"],
)
OPEN_STREAMS = Gauge("gateway_open_streams", "Streamed answers in progress", multiprocess_mode="livesum")
QUEUE_DEPTH = Gauge(
    "gateway_database_queue_depth",
    "Database work waiting in the process: the data plane's database thread queue, accounting rows and budget"
    " settlements not written yet (sampled at most once a second per process)",
    ["queue"],
    multiprocess_mode="livesum",
)

REFUSAL_REASONS = {402: "budget", 429: "rate_limit", 403: "policy"}
_children: dict[tuple, Any] = {}


def child(metric, *labels: str):
    """`metric.labels(*labels)`, looked up once per label set."""
    key = (metric, labels)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*labels)
    return found


def record_request(route: str, status: int, duration: float, ctx: Any | None) -> None:
    """Observe one finished data-plane request; `ctx` is its Context, None when it failed before one existed."""
    if ctx is None:
        child(REQUESTS, route, str(status), "none", "none", "none").inc()
        return
    outcome = ctx.outcome
    candidate = outcome.candidate
    if candidate is not None:
        model, provider = candidate.model_slug, candidate.provider_slug
    else:
        model, provider = "none", "none"
    child(REQUESTS, route, str(status), model, provider, ctx.ingress_format).inc()
    child(LATENCY, route, model, provider, "true" if outcome.streamed else "false").observe(duration)
    attempts = outcome.attempts
    if attempts:
        _record_attempts(attempts)
    elif status in REFUSAL_REASONS:
        child(REFUSALS, REFUSAL_REASONS[status]).inc()
    cache = ctx.extras.get("responsecache.result")
    if cache is not None:
        child(CACHE, cache).inc()
    if candidate is None or outcome.cache_hit:  # a cache hit used no provider tokens and cost nothing
        return
    if outcome.streamed and outcome.ttft_ms is not None:
        child(TTFT, model, provider).observe(outcome.ttft_ms / 1000)
    usage = outcome.usage
    for kind, count in (
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cached", usage.cached_tokens),
        ("reasoning", usage.reasoning_tokens),
    ):
        if count:
            child(TOKENS, model, provider, kind).inc(count)
    if outcome.cost and not outcome.credential_is_byok:
        child(COST, model, provider).inc(float(outcome.cost) if isinstance(outcome.cost, Decimal) else outcome.cost)


def _record_attempts(attempts: list[dict[str, Any]]) -> None:
    last = len(attempts) - 1
    for i, attempt in enumerate(attempts):
        status = attempt.get("status")
        if status == "success":
            continue
        provider = attempt.get("provider") or "none"
        child(UPSTREAM_ERRORS, provider, str(status)).inc()
        if i < last:
            child(FALLBACKS, attempt.get("model") or "none", provider).inc()


_last_sample = 0.0


def sample_queues(force: bool = False) -> None:
    """Set the queue-depth gauges of this process (at most once a second unless `force`)."""
    global _last_sample
    now = time.monotonic()
    if not force and now - _last_sample < 1.0:
        return
    _last_sample = now
    from budgets.settler import settler
    from gateway_project.db_thread import data_plane_thread
    from inference.recorder import writer

    child(QUEUE_DEPTH, "database_thread").set(data_plane_thread.queue_depth())
    child(QUEUE_DEPTH, "accounting").set(writer.in_flight())
    child(QUEUE_DEPTH, "settlements").set(settler.in_flight())

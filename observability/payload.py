"""The trace of one generation (DECISIONS.md §5).

`base_trace` is built once per generation when it is recorded, and stored (observability/bodies.py); at
delivery time the worker tests a destination's `filter_rules` against `filter_record(trace)` and applies its
privacy mode and broadcast flags with `trace_for`. The result is JSON (what `webhook` receives as is; the
other senders translate it).
"""

from __future__ import annotations

import hashlib
from datetime import timedelta
from decimal import Decimal
from typing import Any

from gateway_project.api.serializers import format_timestamp

TRACE_KEYS = ("trace_id", "trace_name", "span_name", "generation_name", "parent_span_id")
PARAMETER_KEYS = (
    "temperature",
    "top_p",
    "top_k",
    "max_output_tokens",
    "frequency_penalty",
    "presence_penalty",
    "stream",
    "tool_choice",
    "service_tier",
    "reasoning",
)
# Request headers never forwarded: credentials and anything that carries the client's address.
HIDDEN_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "cookie",
        "x-api-key",
        "api-key",
        "x-forwarded-for",
        "x-real-ip",
        "forwarded",
        "cf-connecting-ip",
        "true-client-ip",
        "x-client-ip",
        "x-cluster-client-ip",
    }
)
MAX_TEXT = 100_000


TRIMMED = ("cost", "cost_allocation", "identity", "request_context")


def cost_allocation(generation, candidate) -> dict | None:
    """Tokens and cost per token kind (uncached input, cached input, output) at the served endpoint's prices,
    or None when they do not add up to the recorded cost (the provider reported its own cost, or no endpoint)."""
    if candidate is None:
        return None
    cached = min(generation.cached_tokens or 0, generation.input_tokens)
    cached_price = (
        candidate.cached_prompt_price if candidate.cached_prompt_price is not None else candidate.prompt_price
    )
    free = candidate.is_free
    kinds = {
        "input": (generation.input_tokens - cached, 0 if free else candidate.prompt_price),
        "cached_input": (cached, 0 if free else cached_price),
        "output": (generation.output_tokens, 0 if free else candidate.completion_price),
    }
    costs = {kind: tokens * price for kind, (tokens, price) in kinds.items()}
    if sum(costs.values()) != generation.cost:
        return None
    return {kind: {"tokens": kinds[kind][0], "cost": _money(costs[kind])} for kind in kinds}


def sampled(generation_id: Any, destination_id: Any, rate: float) -> bool:
    """Whether this generation is forwarded to this destination: decided once, from a hash of both ids."""
    if rate >= 1:
        return True
    digest = hashlib.sha256(f"{generation_id}:{destination_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def _money(value) -> str:
    """A USD amount as a plain decimal string without trailing zeros."""
    text = format(Decimal(value).normalize(), "f")
    return text if text != "-0" else "0"


def input_text(body: dict) -> str:
    """The plain text of a Responses `input` (a string, or message items with string or part content)."""
    value = body.get("input")
    if isinstance(value, str):
        return value
    texts: list[str] = []
    for item in value if isinstance(value, list) else []:
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "\n".join(texts)


def _split_trace(trace: Any) -> tuple[dict, dict]:
    trace = trace if isinstance(trace, dict) else {}
    known = {k: str(trace[k]) for k in TRACE_KEYS if trace.get(k) not in (None, "")}
    custom = {k: v for k, v in trace.items() if k not in TRACE_KEYS}
    return known, custom


def base_trace(generation, ctx) -> dict:
    """Everything any destination may receive about this generation, before per-destination trimming."""
    body = getattr(ctx, "body", None) or {}
    outcome = getattr(ctx, "outcome", None)
    known, custom = _split_trace(body.get("trace", generation.trace))
    started = generation.created_at
    completed = generation.completed_at or (
        started + timedelta(milliseconds=generation.latency_ms) if generation.latency_ms is not None else started
    )
    first_token = started + timedelta(milliseconds=generation.ttft_ms) if generation.ttft_ms is not None else None
    end_user = body.get("user")
    return {
        "id": str(generation.id),
        "request_id": getattr(ctx, "request_id", "") or str(generation.id),
        **{k: known.get(k) for k in TRACE_KEYS},
        "metadata": custom,
        "session_id": generation.session_id or None,
        "requested_model": generation.requested_model,
        "model": generation.model,
        "provider": generation.provider,
        "status": generation.status,
        "finish_reason": generation.finish_reason or None,
        "error": {"code": generation.error_code, "message": generation.error_message}
        if generation.error_code
        else None,
        "streamed": generation.streamed,
        "started_at": format_timestamp(started),
        "first_token_at": format_timestamp(first_token),
        "completed_at": format_timestamp(completed),
        "latency_ms": generation.latency_ms,
        "ttft_ms": generation.ttft_ms,
        "usage": {
            "input_tokens": generation.input_tokens,
            "output_tokens": generation.output_tokens,
            "cached_tokens": generation.cached_tokens,
            "reasoning_tokens": generation.reasoning_tokens,
            "total_tokens": generation.input_tokens + generation.output_tokens,
        },
        "parameters": {k: body[k] for k in PARAMETER_KEYS if body.get(k) is not None},
        "instructions": body.get("instructions"),
        "input": body.get("input"),
        "output_text": (getattr(outcome, "output_text", "") or "")[:MAX_TEXT],
        "output": list(getattr(outcome, "output", None) or []),
        "cost": {"total_cost": _money(generation.cost), "currency": "USD", "is_byok": generation.is_byok},
        "cost_allocation": cost_allocation(generation, getattr(outcome, "candidate", None)),
        "identity": {
            "organization_id": str(generation.organization_id),
            "workspace_id": str(generation.workspace_id) if generation.workspace_id else None,
            "api_key_hash": generation.key_hash,
            "api_key_name": getattr(getattr(ctx, "principal", None), "key_name", None),
            "user_id": str(generation.user_id) if generation.user_id else None,
            "end_user_id": end_user,
        },
        "request_context": _request_context(ctx, body),
    }


def _request_context(ctx, body: dict) -> dict:
    headers = getattr(ctx, "headers", None) or {}
    return {
        "method": getattr(ctx, "method", None),
        "path": getattr(ctx, "path", None),
        "host": getattr(ctx, "host", None),
        "region": getattr(ctx, "region", None),
        "headers": {k: v for k, v in headers.items() if k.lower() not in HIDDEN_HEADERS},
        "request_metadata": body.get("metadata") or {},
        "client_metadata": body.get("client_metadata") or {},
    }


def filter_record(trace: dict) -> dict:
    """The values `filter_rules` are evaluated against, from a stored trace (`base_trace`)."""
    identity = trace.get("identity") or {}
    usage = trace.get("usage") or {}
    return {
        "model": trace.get("model") or trace.get("requested_model"),
        "provider": trace.get("provider"),
        "session_id": trace.get("session_id"),
        "user_id": identity.get("end_user_id") or identity.get("user_id"),
        "api_key_name": identity.get("api_key_name"),
        "finish_reason": trace.get("finish_reason"),
        "input": input_text(trace),
        "output": trace.get("output_text") or "",
        "total_cost": (trace.get("cost") or {}).get("total_cost"),
        "total_tokens": usage.get("total_tokens"),
        "prompt_tokens": usage.get("input_tokens"),
        "completion_tokens": usage.get("output_tokens"),
    }


def trace_for(base: dict, destination, *, include_io: bool = True) -> dict:
    """`base` trimmed for one destination: privacy mode (or the workspace's I/O logging off or not sampled:
    `include_io` false) and the broadcast flags."""
    trace = {k: v for k, v in base.items() if k not in TRIMMED}
    trace["privacy_mode"] = destination.privacy_mode or not include_io
    if trace["privacy_mode"]:
        for key in ("instructions", "input", "output_text", "output"):
            trace.pop(key, None)
    if destination.broadcast_generation_cost:
        trace["cost"] = base["cost"]
    if getattr(destination, "broadcast_generation_cost_allocation", False) and base.get("cost_allocation"):
        trace["cost_allocation"] = base["cost_allocation"]
    if destination.broadcast_generation_identity:
        trace["identity"] = base["identity"]
    if destination.broadcast_generation_request_context:
        trace["request_context"] = base["request_context"]
    return trace

"""The Responses `response` object (JSON answer and the payload of stream events) and `service_metadata`."""

from __future__ import annotations

import time
from decimal import Decimal
from typing import Any

from inference.ids import new_item_id, new_uuid
from inference.pipeline.context import Context, Usage

SKIPPED_MODELS = "routing.skipped_models"  # ctx.extras: fallback slugs the catalog does not know (inference.routing)

ECHOED_FIELDS = (
    "instructions",
    "max_output_tokens",
    "max_tool_calls",
    "metadata",
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "top_logprobs",
    "prompt_cache_key",
    "safety_identifier",
    "truncation",
    "user",
    "reasoning",
)


def response_id(ctx: Context) -> str:
    return f"resp_{ctx.request_id}"


def usage_object(usage: Usage, cost: Decimal, is_byok: bool) -> dict[str, Any]:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cached_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "cost": float(cost),
        "is_byok": is_byok,
    }


def response_object(
    ctx: Context,
    *,
    status: str,
    output: list[dict[str, Any]],
    usage: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
    error_type: str | None = None,
    incomplete_reason: str | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The Responses `response` object; every request parameter the spec lists is echoed."""
    body = ctx.body
    finished = status in ("completed", "incomplete", "failed", "cancelled")
    obj: dict[str, Any] = {
        "id": response_id(ctx),
        "object": "response",
        "created_at": int(ctx.created_at.timestamp()),
        "completed_at": int(time.time()) if finished else None,
        "status": status,
        "background": False,
        "model": model or body.get("model") or "",
        "output": output,
        "error": error,
        "error_type": error_type,
        "incomplete_details": {"reason": incomplete_reason} if incomplete_reason else None,
        "parallel_tool_calls": body.get("parallel_tool_calls", True) is not False,
        "tool_choice": body.get("tool_choice") or "auto",
        "tools": body.get("tools") or [],
        "text": body.get("text") or {"format": {"type": "text"}},
        "service_tier": served_tier(ctx) if finished else body.get("service_tier"),
        "store": False,
        "usage": usage,
    }
    for name in ECHOED_FIELDS:
        obj[name] = body.get(name)
    if obj["metadata"] is None:
        obj["metadata"] = {}
    if ctx.metadata_enabled:
        obj["service_metadata"] = service_metadata(ctx)
    return obj


# The tiers providers report in the API's names (Anthropic's `standard` is OpenAI's `default`).
SERVED_TIER_NAMES = {"standard": "default", "on_demand": "default"}


def served_tier(ctx: Context) -> str | None:
    """The tier the provider says it served the request at (OpenAI's `service_tier`, Anthropic's
    `usage.service_tier` or `speed: fast`), null when it did not say; never the request's wish."""
    usage = ctx.outcome.usage
    tier = usage.tier if usage is not None else None
    return SERVED_TIER_NAMES.get(tier, tier) if tier else None


def service_metadata(ctx: Context) -> dict[str, Any]:
    """Routing metadata: which endpoints were available, tried and selected, and the pipeline stages."""
    outcome = ctx.outcome
    selected = outcome.candidate
    candidates = ctx.candidates or []
    attempts = outcome.attempts
    # The server-tool loop calls the model once per turn and tags those attempts with their `turn`: the
    # routing figures describe the last turn (a turn's own fallback still shows as fallback).
    last_turn = attempts[-1].get("turn") if attempts else None
    turn_attempts = [a for a in attempts if a.get("turn") == last_turn] if last_turn else attempts
    requested = ctx.extras.get("inference.requested") or ctx.body.get("model") or ""
    strategy = "fallback" if (ctx.body.get("models") or len(turn_attempts) > 1) else "direct"
    sort = (ctx.body.get("provider") or {}).get("sort")
    if sort or ctx.body.get("route") == "sort":
        strategy = "sort"
    attempt = len(turn_attempts)
    if selected is not None:
        summary = f"{selected.model_slug} served by {selected.provider_slug} on attempt {attempt}"
    elif attempts:
        summary = f"all {len(attempts)} attempt(s) failed"
    else:
        summary = "no endpoint was tried"
    return {
        "attempt": attempt,
        "attempts": attempts,
        "endpoints": {
            "available": [
                {
                    "model": c.model_slug,
                    "provider": c.provider_slug,
                    "selected": selected is not None and c.endpoint_id == selected.endpoint_id,
                }
                for c in candidates
            ],
            "total": len(candidates),
        },
        "is_byok": outcome.credential_is_byok,
        "omitted_parameters": list(outcome.omitted_parameters),
        "pipeline": ctx.pipeline,
        "region": ctx.region,
        "requested": requested,
        "skipped_models": list(ctx.extras.get(SKIPPED_MODELS) or ()),
        "strategy": strategy,
        "summary": summary,
    }


def message_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    content = [] if status == "in_progress" else [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "id": item_id, "role": "assistant", "status": status, "content": content}


def function_call_item(item_id: str, call_id: str, name: str, arguments: str, status: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }


__all__ = ["new_item_id", "new_uuid"]  # re-exported: the ids live in inference.ids

"""`datadog`: LLM Observability span intake (`POST {url}/api/intake/llm-obs/v1/trace/spans`, header
DD-API-KEY). `url` is the site's API host, default https://api.datadoghq.com (EU: https://api.datadoghq.eu).
"""

from __future__ import annotations

from observability.senders.base import OutgoingRequest, join_url, json_request
from observability.senders.common import generation_name, input_messages, output_messages, trace_ids, unix_nanos

DEFAULT_URL = "https://api.datadoghq.com"


def span_payload(trace: dict, ml_app: str) -> dict:
    ids = trace_ids(trace)
    start, end = unix_nanos(trace["started_at"]), unix_nanos(trace["completed_at"])
    usage = trace.get("usage") or {}
    meta: dict = {
        "kind": "llm",
        "model_name": trace.get("model") or trace.get("requested_model"),
        "model_provider": trace.get("provider"),
        "metadata": {**trace.get("metadata", {}), "request_id": trace.get("request_id")},
    }
    if "input" in trace:
        meta["input"] = {"messages": input_messages(trace)}
        meta["output"] = {"messages": output_messages(trace)}
    if trace.get("status") == "failed":
        meta["error"] = {"message": (trace.get("error") or {}).get("message") or "failed"}
    metrics = {
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "total_tokens": usage.get("total_tokens", 0),
    }
    if "cost" in trace:
        metrics["total_cost"] = float(trace["cost"]["total_cost"])
    span = {
        "parent_id": ids.parent_span_id or "undefined",
        "trace_id": ids.trace_id,
        "span_id": str(int(ids.span_id, 16)),
        "name": generation_name(trace),
        "start_ns": start,
        "duration": max(end - start, 0),
        "status": "error" if trace.get("status") == "failed" else "ok",
        "meta": meta,
        "metrics": metrics,
        "tags": ["source:model-gateway"],
    }
    if trace.get("session_id"):
        span["session_id"] = trace["session_id"]
    return {
        "data": {"type": "span", "attributes": {"ml_app": ml_app, "tags": ["source:model-gateway"], "spans": [span]}}
    }


def build(trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
    url = join_url(config.get("url") or DEFAULT_URL, "/api/intake/llm-obs/v1/trace/spans")
    return json_request(url, span_payload(trace, config["mlApp"]), {"DD-API-KEY": config["apiKey"]})

"""Plain HTTP ingestion APIs: `posthog` (capture API, event `$ai_generation`) and `clickhouse` (HTTP
interface, one JSONEachRow insert per trace)."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from observability.senders.base import USER_AGENT, OutgoingRequest, join_url, json_request
from observability.senders.common import input_messages, output_messages, trace_ids

POSTHOG_DEFAULT = "https://us.i.posthog.com"
CLICKHOUSE_DEFAULT_TABLE = "gateway_traces"


def posthog_event(trace: dict, api_key: str) -> dict:
    ids = trace_ids(trace)
    usage = trace.get("usage") or {}
    identity = trace.get("identity") or {}
    properties = {
        "$ai_trace_id": ids.trace_id,
        "$ai_span_id": ids.span_id,
        "$ai_span_name": trace.get("generation_name") or trace.get("span_name"),
        "$ai_parent_id": ids.parent_span_id,
        "$ai_session_id": trace.get("session_id"),
        "$ai_model": trace.get("model") or trace.get("requested_model"),
        "$ai_provider": trace.get("provider"),
        "$ai_input_tokens": usage.get("input_tokens", 0),
        "$ai_output_tokens": usage.get("output_tokens", 0),
        "$ai_latency": (trace.get("latency_ms") or 0) / 1000,
        "$ai_is_error": trace.get("status") == "failed",
        "$ai_error": (trace.get("error") or {}).get("message"),
        "$ai_stop_reason": trace.get("finish_reason"),
        "gateway_request_id": trace.get("request_id"),
        **{f"gateway_{k}": v for k, v in (trace.get("metadata") or {}).items()},
    }
    if "input" in trace:
        properties["$ai_input"] = input_messages(trace)
        properties["$ai_output_choices"] = output_messages(trace)
    if "cost" in trace:
        properties["$ai_total_cost_usd"] = float(trace["cost"]["total_cost"])
    distinct_id = identity.get("end_user_id") or identity.get("user_id") or ids.trace_id
    if not identity:
        properties["$process_person_profile"] = False
    return {
        "api_key": api_key,
        "event": "$ai_generation",
        "distinct_id": distinct_id,
        "timestamp": trace["started_at"],
        "uuid": trace["id"],
        "properties": {k: v for k, v in properties.items() if v is not None},
    }


def build_posthog(trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
    url = join_url(config.get("endpoint") or POSTHOG_DEFAULT, "/capture/")
    return json_request(url, posthog_event(trace, config["apiKey"]))


def _identifier(name: str) -> str:
    return "`" + name.replace("\\", "\\\\").replace("`", "\\`") + "`"


def clickhouse_row(trace: dict) -> dict:
    usage = trace.get("usage") or {}
    return {
        "id": trace["id"],
        "request_id": trace.get("request_id"),
        "trace_id": trace_ids(trace).trace_id,
        "session_id": trace.get("session_id") or "",
        "model": trace.get("model") or "",
        "provider": trace.get("provider") or "",
        "status": trace.get("status") or "",
        "finish_reason": trace.get("finish_reason") or "",
        "started_at": trace["started_at"],
        "completed_at": trace["completed_at"],
        "latency_ms": trace.get("latency_ms") or 0,
        "input_tokens": usage.get("input_tokens", 0),
        "output_tokens": usage.get("output_tokens", 0),
        "total_cost": float(trace["cost"]["total_cost"]) if "cost" in trace else None,
        "payload": json.dumps(trace, default=str),
    }


def build_clickhouse(trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
    table = f"{_identifier(config['database'])}.{_identifier(config.get('table') or CLICKHOUSE_DEFAULT_TABLE)}"
    query = {
        "query": f"INSERT INTO {table} FORMAT JSONEachRow",
        "date_time_input_format": "best_effort",
        "input_format_skip_unknown_fields": "1",
        "insert_deduplication_token": delivery_id,
    }
    url = config["host"].split("?")[0].rstrip("/") + "/?" + urlencode(query)
    body = (json.dumps(clickhouse_row(trace), default=str) + "\n").encode()
    headers = {
        "Content-Type": "application/x-ndjson",
        "User-Agent": USER_AGENT,
        "X-ClickHouse-User": config["username"],
        "X-ClickHouse-Key": config["password"],
    }
    return OutgoingRequest(method="POST", url=url, body=body, headers=headers)


__all__ = ["build_clickhouse", "build_posthog", "json_request"]

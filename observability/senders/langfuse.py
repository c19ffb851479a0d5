"""`langfuse`: the public ingestion batch API (`POST {baseUrl}/api/public/ingestion`, basic auth
publicKey:secretKey). One `trace-create` and one `generation-create` event per generation (plus a
`span-create` when the request's `trace` names a `span_name`). Event ids derive from the outbox row id, so a
retried delivery is de-duplicated by Langfuse. Langfuse answers 207 with per-event errors: those count as a
failed delivery.
"""

from __future__ import annotations

import base64
import json
import uuid

from observability.senders.base import OutgoingRequest, join_url, json_request
from observability.senders.common import generation_name, input_messages, output_messages, trace_ids

DEFAULT_BASE_URL = "https://cloud.langfuse.com"


def _event(delivery_id: str, kind: str, timestamp: str, body: dict) -> dict:
    event_id = str(uuid.uuid5(uuid.UUID(delivery_id), kind))
    return {"id": event_id, "timestamp": timestamp, "type": kind, "body": body}


def _metadata(trace: dict) -> dict:
    metadata = {"request_id": trace.get("request_id"), "provider": trace.get("provider"), **trace.get("metadata", {})}
    for key in ("identity", "request_context"):
        if key in trace:
            metadata[key] = trace[key]
    if "cost" in trace:
        metadata["is_byok"] = trace["cost"]["is_byok"]
    return metadata


def _generation_body(trace: dict, trace_id: str, parent: str | None) -> dict:
    usage = trace.get("usage") or {}
    failed = trace.get("status") == "failed"
    body = {
        "id": trace["id"],
        "traceId": trace_id,
        "name": generation_name(trace),
        "startTime": trace["started_at"],
        "endTime": trace["completed_at"],
        "completionStartTime": trace.get("first_token_at"),
        "model": trace.get("model") or trace.get("requested_model"),
        "modelParameters": {
            k: v for k, v in (trace.get("parameters") or {}).items() if isinstance(v, (str, int, float))
        },
        "usageDetails": {
            "input": usage.get("input_tokens", 0),
            "output": usage.get("output_tokens", 0),
            "total": usage.get("total_tokens", 0),
        },
        "metadata": _metadata(trace),
        "level": "ERROR" if failed else "DEFAULT",
        "statusMessage": (trace.get("error") or {}).get("message") if failed else trace.get("finish_reason"),
        "parentObservationId": parent,
    }
    if "input" in trace:
        body["input"] = input_messages(trace)
        body["output"] = output_messages(trace)[0] if output_messages(trace) else None
    if "cost" in trace:
        body["costDetails"] = {"total": float(trace["cost"]["total_cost"])}
    return {k: v for k, v in body.items() if v is not None}


def ingestion_batch(trace: dict, delivery_id: str) -> dict:
    ids = trace_ids(trace)
    trace_id = trace.get("trace_id") or ids.trace_id
    timestamp = trace["started_at"]
    trace_body = {
        "id": trace_id,
        "timestamp": timestamp,
        "name": trace.get("trace_name"),
        "metadata": trace["metadata"],
    }
    if trace.get("session_id"):
        trace_body["sessionId"] = trace["session_id"]
    if "identity" in trace and (trace["identity"].get("end_user_id") or trace["identity"].get("user_id")):
        trace_body["userId"] = trace["identity"].get("end_user_id") or trace["identity"].get("user_id")
    batch = [_event(delivery_id, "trace-create", timestamp, {k: v for k, v in trace_body.items() if v is not None})]
    parent = trace.get("parent_span_id")
    if trace.get("span_name"):
        span = {
            "id": ids.wrapper_span_id,
            "traceId": trace_id,
            "name": trace["span_name"],
            "startTime": trace["started_at"],
            "endTime": trace["completed_at"],
        }
        if parent:
            span["parentObservationId"] = parent
        batch.append(_event(delivery_id, "span-create", timestamp, span))
        parent = ids.wrapper_span_id
    batch.append(_event(delivery_id, "generation-create", timestamp, _generation_body(trace, trace_id, parent)))
    return {"batch": batch, "metadata": {"sdk_name": "model-gateway", "sdk_version": "1.0.0"}}


def build(trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
    url = join_url(config.get("baseUrl") or DEFAULT_BASE_URL, "/api/public/ingestion")
    token = base64.b64encode(f"{config['publicKey']}:{config['secretKey']}".encode()).decode()
    return json_request(url, ingestion_batch(trace, delivery_id), {"Authorization": f"Basic {token}"})


def check_response(status: int, body: bytes) -> str | None:
    if status != 207:
        return None
    try:
        errors = json.loads(body or b"{}").get("errors") or []
    except (ValueError, AttributeError):
        return None
    if not errors:
        return None
    first = errors[0]
    return (
        f"Langfuse rejected {len(errors)} event(s): {first.get('status')} {first.get('message') or first.get('error')}"
    )

"""OTLP/HTTP JSON traces with the OpenTelemetry GenAI semantic conventions.

Used by `otel-collector` and by the products whose ingestion is OTLP (endpoint and auth headers per type).
One span per generation (`gen_ai.operation.name = chat`, kind CLIENT); when the request's `trace` names a
`span_name`, a parent span of that name wraps it. Ids are hex in OTLP/JSON.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import urlsplit

from observability.senders.base import OutgoingRequest, join_url, json_request
from observability.senders.common import generation_name, input_messages, output_messages, trace_ids, unix_nanos

SPAN_KIND_INTERNAL = 1
SPAN_KIND_CLIENT = 3
STATUS_OK = 1
STATUS_ERROR = 2
SCOPE = {"name": "model-gateway", "version": "1.0.0"}


def _value(value) -> dict:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, (list, tuple)):
        return {"arrayValue": {"values": [_value(v) for v in value]}}
    return {"stringValue": value if isinstance(value, str) else json.dumps(value, default=str)}


def attributes(values: dict) -> list[dict]:
    return [{"key": k, "value": _value(v)} for k, v in values.items() if v is not None and v != ""]


def _parts(messages: list[dict]) -> str:
    return json.dumps([{"role": m["role"], "parts": [{"type": "text", "content": m["content"]}]} for m in messages])


def genai_attributes(trace: dict) -> dict:
    usage = trace.get("usage") or {}
    params = trace.get("parameters") or {}
    values = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": trace.get("provider"),
        "gen_ai.system": trace.get("provider"),
        "gen_ai.request.model": trace.get("requested_model"),
        "gen_ai.response.model": trace.get("model"),
        "gen_ai.response.id": trace.get("request_id"),
        "gen_ai.response.finish_reasons": [trace["finish_reason"]] if trace.get("finish_reason") else None,
        "gen_ai.usage.input_tokens": usage.get("input_tokens"),
        "gen_ai.usage.output_tokens": usage.get("output_tokens"),
        "gen_ai.request.temperature": _float(params.get("temperature")),
        "gen_ai.request.top_p": _float(params.get("top_p")),
        "gen_ai.request.max_tokens": params.get("max_output_tokens"),
        "gen_ai.conversation.id": trace.get("session_id"),
        "session.id": trace.get("session_id"),
        "gateway.generation.id": trace.get("id"),
        "gateway.trace.name": trace.get("trace_name"),
        "gateway.status": trace.get("status"),
        "gateway.streamed": trace.get("streamed"),
        "gateway.latency_ms": trace.get("latency_ms"),
        "gateway.ttft_ms": trace.get("ttft_ms"),
        "gateway.usage.cached_tokens": usage.get("cached_tokens"),
        "gateway.usage.reasoning_tokens": usage.get("reasoning_tokens"),
    }
    if trace.get("instructions"):
        values["gen_ai.system_instructions"] = json.dumps([{"type": "text", "content": trace["instructions"]}])
    messages = [m for m in input_messages(trace) if m["role"] != "system"]
    if "input" in trace:
        values["gen_ai.input.messages"] = _parts(messages)
        values["gen_ai.output.messages"] = _parts(output_messages(trace))
    values.update(_broadcast_attributes(trace))
    values.update({f"gateway.metadata.{k}": v for k, v in (trace.get("metadata") or {}).items()})
    return values


def _float(value):
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _broadcast_attributes(trace: dict) -> dict:
    values: dict = {}
    if "cost" in trace:
        values["gateway.cost.total_usd"] = float(trace["cost"]["total_cost"])
        values["gateway.cost.is_byok"] = trace["cost"]["is_byok"]
    if "identity" in trace:
        identity = trace["identity"]
        values.update({f"gateway.identity.{k}": v for k, v in identity.items()})
        values["user.id"] = identity.get("end_user_id") or identity.get("user_id")
    if "request_context" in trace:
        context = trace["request_context"]
        values.update({f"gateway.request.{k}": context.get(k) for k in ("method", "path", "host", "region")})
        values.update({f"http.request.header.{k}": [v] for k, v in (context.get("headers") or {}).items()})
        values.update({f"gateway.request.metadata.{k}": v for k, v in (context.get("request_metadata") or {}).items()})
    return values


def export_request(trace: dict, resource: dict | None = None) -> dict:
    """The ExportTraceServiceRequest (OTLP/JSON) of one trace."""
    ids = trace_ids(trace)
    start, end = unix_nanos(trace["started_at"]), unix_nanos(trace["completed_at"])
    failed = trace.get("status") == "failed"
    span = {
        "traceId": ids.trace_id,
        "spanId": ids.span_id,
        "name": generation_name(trace),
        "kind": SPAN_KIND_CLIENT,
        "startTimeUnixNano": str(start),
        "endTimeUnixNano": str(end),
        "attributes": attributes(genai_attributes(trace)),
        "status": {"code": STATUS_ERROR, "message": (trace.get("error") or {}).get("message") or ""}
        if failed
        else {"code": STATUS_OK},
    }
    if trace.get("first_token_at"):
        span["events"] = [{"timeUnixNano": str(unix_nanos(trace["first_token_at"])), "name": "gen_ai.first_token"}]
    spans = [span]
    if ids.wrapper_span_id:
        span["parentSpanId"] = ids.wrapper_span_id
        wrapper = {
            "traceId": ids.trace_id,
            "spanId": ids.wrapper_span_id,
            "name": trace["span_name"],
            "kind": SPAN_KIND_INTERNAL,
            "startTimeUnixNano": str(start),
            "endTimeUnixNano": str(end),
            "attributes": attributes({"gateway.trace.name": trace.get("trace_name")}),
            "status": span["status"],
        }
        if ids.parent_span_id:
            wrapper["parentSpanId"] = ids.parent_span_id
        spans.insert(0, wrapper)
    elif ids.parent_span_id:
        span["parentSpanId"] = ids.parent_span_id
    resource_attributes = {"service.name": "model-gateway", **(resource or {})}
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": attributes(resource_attributes)},
                "scopeSpans": [{"scope": SCOPE, "spans": spans}],
            }
        ]
    }


def _basic(user: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def _sentry_auth(dsn: str) -> str:
    return f"sentry sentry_key={urlsplit(dsn).username or ''}, sentry_version=7"


def _target(type_: str, config: dict) -> tuple[str, dict, dict]:
    """(traces URL, auth headers, extra resource attributes) of an OTLP-based type."""
    if type_ == "otel-collector":
        return join_url(config["endpoint"], "/v1/traces"), {}, {}
    if type_ == "sentry":
        return join_url(config["otlpEndpoint"], "/v1/traces"), {"x-sentry-auth": _sentry_auth(config["dsn"])}, {}
    if type_ == "grafana":
        base = config.get("baseUrl") or "https://otlp-gateway-prod-us-east-0.grafana.net/otlp"
        return join_url(base, "/v1/traces"), {"Authorization": _basic(config["instanceId"], config["apiKey"])}, {}
    if type_ == "newrelic":
        host = "https://otlp.eu01.nr-data.net" if config.get("region") == "eu" else "https://otlp.nr-data.net"
        return f"{host}/v1/traces", {"api-key": config["licenseKey"]}, {}
    if type_ == "arize":
        base = config.get("baseUrl") or "https://otlp.arize.com/v1"
        headers = {"space_id": config["spaceKey"], "api_key": config["apiKey"]}
        model = config["modelId"]
        return join_url(base, "/traces"), headers, {"model_id": model, "openinference.project.name": model}
    if type_ == "langsmith":
        base = config.get("endpoint") or "https://api.smith.langchain.com"
        headers = {"x-api-key": config["apiKey"]}
        if config.get("project"):
            headers["Langsmith-Project"] = config["project"]
        if config.get("workspaceId"):
            headers["X-Tenant-Id"] = config["workspaceId"]
        return join_url(base, "/otel/v1/traces"), headers, {}
    if type_ == "braintrust":
        base = config.get("baseUrl") or "https://api.braintrust.dev"
        headers = {"Authorization": f"Bearer {config['apiKey']}", "x-bt-parent": f"project_id:{config['projectId']}"}
        return join_url(base, "/otel/v1/traces"), headers, {}
    if type_ == "opik":
        url = "https://www.comet.com/opik/api/v1/private/otel/v1/traces"
        headers = {"Authorization": config["apiKey"], "Comet-Workspace": config["workspace"]}
        headers["projectName"] = config["projectName"]
        return url, headers, {}
    if type_ == "weave":
        base = config.get("baseUrl") or "https://trace.wandb.ai"
        headers = {
            "Authorization": _basic("api", config["apiKey"]),
            "project_id": f"{config['entity']}/{config['project']}",
        }
        return join_url(base, "/otel/v1/traces"), headers, {}
    raise KeyError(type_)


OTLP_TYPES = ("otel-collector", "sentry", "grafana", "newrelic", "arize", "langsmith", "braintrust", "opik", "weave")


def build_for(type_: str):
    def build(trace: dict, config: dict, delivery_id: str) -> OutgoingRequest:
        url, headers, resource = _target(type_, config)
        return json_request(url, export_request(trace, resource), headers)

    return build

"""OpenAPI document of POST /api/v1/responses, which a Channels consumer serves (not a DRF view); the other wire
formats' operations are in inference.openapi_wire.

The request schema is generated from the request's type (`inference.responses_request.ResponsesRequest`, the one
the validator converts into): one property per member, the same enums, bounds and lengths, and
`additionalProperties: true` (an unknown member goes to a same-format upstream). The response schema follows
`inference.response.response_object`. `add_responses_operation` is a drf-spectacular postprocessing hook.
"""

from __future__ import annotations

from typing import Any

from inference.openapi_types import openapi_properties
from inference.responses_request import ResponsesRequest

PATH = "/api/v1/responses"
RESPONSES_PATH_SCHEMA_REF = "#/components/schemas/ResponsesRequest"


def _obj(properties: dict[str, Any] | None = None, required: list[str] | None = None, nullable: bool = True):
    out: dict[str, Any] = {"type": "object", "nullable": nullable}
    if properties:
        out["properties"] = properties
    if required:
        out["required"] = required
    return out


FIELD_SCHEMAS: dict[str, dict[str, Any]] = openapi_properties(ResponsesRequest)

REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "properties": FIELD_SCHEMAS,
    "description": " ".join((ResponsesRequest.__doc__ or "").split()),
    "example": {"model": "echo/echo-1", "input": "Hello"},
}

OUTPUT_ITEM = {
    "type": "object",
    "required": ["type", "id"],
    "properties": {
        "type": {"type": "string", "description": "message, function_call, reasoning, ..."},
        "id": {"type": "string"},
        "status": {"type": "string"},
        "role": {"type": "string"},
        "content": {"type": "array", "items": {"type": "object"}},
        "call_id": {"type": "string"},
        "name": {"type": "string"},
        "arguments": {"type": "string"},
    },
}
USAGE = _obj(
    {
        "input_tokens": {"type": "integer"},
        "input_tokens_details": _obj({"cached_tokens": {"type": "integer"}}, ["cached_tokens"], nullable=False),
        "output_tokens": {"type": "integer"},
        "output_tokens_details": _obj({"reasoning_tokens": {"type": "integer"}}, ["reasoning_tokens"], nullable=False),
        "total_tokens": {"type": "integer"},
        "cost": {"type": "number"},
        "is_byok": {"type": "boolean"},
    },
    ["input_tokens", "output_tokens", "total_tokens", "cost", "is_byok"],
)
ECHOED = {name: {"nullable": True} for name in ("max_output_tokens", "max_tool_calls", "reasoning")} | {
    "instructions": {"type": "string", "nullable": True},
    "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
    **{name: {"type": "number", "nullable": True} for name in ("temperature", "top_p")},
    **{name: {"type": "number", "nullable": True} for name in ("frequency_penalty", "presence_penalty")},
    "top_logprobs": {"type": "integer", "nullable": True},
    **{name: {"type": "string", "nullable": True} for name in ("prompt_cache_key", "safety_identifier", "user")},
    "truncation": {"type": "string", "nullable": True},
}
RESPONSE = {
    "type": "object",
    "required": ["id", "object", "created_at", "status", "model", "output", "usage"],
    "properties": {
        "id": {"type": "string", "pattern": "^resp_"},
        "object": {"type": "string", "enum": ["response"]},
        "created_at": {"type": "integer"},
        "completed_at": {"type": "integer", "nullable": True},
        "status": {"type": "string", "enum": ["completed", "incomplete", "failed", "cancelled", "in_progress"]},
        "background": {"type": "boolean"},
        "model": {"type": "string"},
        "output": {"type": "array", "items": OUTPUT_ITEM},
        "error": {"type": "object", "nullable": True},
        "error_type": {"type": "string", "nullable": True},
        "incomplete_details": _obj({"reason": {"type": "string"}}),
        "parallel_tool_calls": {"type": "boolean"},
        "tool_choice": {"oneOf": [{"type": "string"}, {"type": "object"}]},
        "tools": {"type": "array", "items": {"type": "object"}},
        "text": {"type": "object"},
        "service_tier": {"type": "string", "nullable": True},
        "store": {"type": "boolean"},
        "usage": USAGE,
        "service_metadata": {"type": "object", "description": "With `X-Service-Metadata: enabled`."},
        **ECHOED,
    },
}

SSE_EVENT = {
    "type": "object",
    "description": "One server-sent event: `event` is the type (response.created, response.output_text.delta, "
    "..., response.completed, error), `data` its JSON payload.",
    "required": ["data"],
    "properties": {"event": {"type": "string"}, "data": {"type": "string"}, "id": {"type": "string"}},
}

ERROR_STATUSES = ("400", "401", "402", "403", "404", "405", "408", "413", "429", "500", "502", "503", "524")


def responses_operation() -> dict[str, Any]:
    """The OpenAPI operation object of POST /api/v1/responses."""
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}}
    return {
        "operationId": "responses_create",
        "summary": "Create a model response (OpenAI Responses format)",
        "description": "Routes to the upstream providers of the model with fallback; `stream: true` answers "
        "server-sent events. Inference keys only.",
        "tags": ["responses"],
        "security": [{"bearerAuth": []}],
        "parameters": [
            {"name": "X-Service-Metadata", "in": "header", "required": False, "schema": {"type": "string"}},
            {"name": "X-Session-Id", "in": "header", "required": False, "schema": {"type": "string"}},
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": RESPONSES_PATH_SCHEMA_REF}}},
        },
        "responses": {
            "200": {
                "description": "The response object, or its event stream with `stream: true`",
                "content": {
                    "application/json": {"schema": {"$ref": "#/components/schemas/ResponseObject"}},
                    "text/event-stream": {"schema": SSE_EVENT},
                },
            },
            **{code: {"description": f"Error {code}", **error} for code in ERROR_STATUSES},
        },
    }


INPUT_TOKENS = {
    "type": "object",
    "required": ["object", "input_tokens"],
    "properties": {
        "object": {"type": "string", "enum": ["response.input_tokens"]},
        "input_tokens": {"type": "integer", "minimum": 0},
    },
}


def input_tokens_operation() -> dict[str, Any]:
    """The OpenAPI operation object of POST /api/v1/responses/input_tokens."""
    operation = responses_operation()
    operation["operationId"] = "responses_input_tokens"
    operation["summary"] = "Count the input tokens of a Responses request"
    operation["description"] = (
        "The routed model's input tokens: exact from an openai-responses provider, the gateway's estimate otherwise "
        "(`x-token-count: exact` or `estimate`). Key auth, region, presets and guardrails as /responses; no rate "
        "limit, never charged, no Generation row. `stream: true` is refused."
    )
    operation["responses"]["200"] = {
        "description": "The count",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ResponseInputTokens"}}},
    }
    return operation


def add_responses_operation(result, generator, request, public):
    """Postprocessing hook: document POST /api/v1/responses and its request and response schemas."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ResponsesRequest"] = REQUEST
    schemas["ResponseObject"] = RESPONSE
    result.setdefault("paths", {})[PATH] = {"post": responses_operation()}
    schemas["ResponseInputTokens"] = INPUT_TOKENS
    result["paths"][PATH + "/input_tokens"] = {"post": input_tokens_operation()}
    from inference.openapi_wire import add_wire_operations

    add_wire_operations(result)  # POST /chat/completions and /messages
    return result

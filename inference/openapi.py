"""OpenAPI document of POST /api/v1/responses, which a Channels consumer serves (not a DRF view); the other wire
formats' operations are in inference.openapi_wire.

The request schema is derived from the validator's own rules (`inference.schema.CHECKERS` and the value
sets of `inference.schema` / `inference.schema_parts`): one property per checker, `additionalProperties:
false` (an unknown parameter is a 400), the same enums, bounds and lengths. The response schema follows
`inference.response.response_object`. `add_responses_operation` is a drf-spectacular postprocessing hook.
"""

from __future__ import annotations

from typing import Any

from inference import schema as rules
from inference import schema_parts as parts
from inference import schema_provider as provider_rules
from inference.openapi_router import ROUTER_FIELD_SCHEMAS
from inference.plugins.file_parser import ENGINES as FILE_ENGINES
from inference.search.engines import ENGINE_NAMES
from textscan.detectors import BUILTIN_SLUGS

PATH = "/api/v1/responses"
RESPONSES_PATH_SCHEMA_REF = "#/components/schemas/ResponsesRequest"


def _enum(values, nullable: bool = True) -> dict[str, Any]:
    items: list[Any] = sorted(values)
    if nullable:
        items.append(None)
    return {"type": "string", "enum": items, "nullable": nullable}


def _number(low: float | None = None, high: float | None = None, integer: bool = False, nullable: bool = True):
    out: dict[str, Any] = {"type": "integer" if integer else "number", "nullable": nullable}
    if low is not None:
        out["minimum"] = low
    if high is not None:
        out["maximum"] = high
    return out


def _obj(properties: dict[str, Any] | None = None, required: list[str] | None = None, nullable: bool = True):
    out: dict[str, Any] = {"type": "object", "nullable": nullable}
    if properties:
        out["properties"] = properties
    if required:
        out["required"] = required
    return out


NON_BLANK = {"type": "string", "pattern": r"\S"}
STRINGS = {"type": "array", "items": {"type": "string"}}
IDENTIFIER = {"type": "string", "nullable": True, "maxLength": rules.MAX_IDENTIFIER}
ONLY_NULL = {"type": "string", "nullable": True, "enum": [None], "description": "Not supported: only null"}
CACHE_CONTROL = _obj({"type": {"type": "string", "enum": ["ephemeral"]}, "ttl": {"type": "string"}}, ["type"])

CONTENT_PART = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": {"type": "string", "minLength": 1}, "text": {"type": "string"}},
}
INPUT_MESSAGE = {
    "type": "object",
    "required": ["role", "content"],
    "properties": {
        "type": {"type": "string", "enum": ["message"]},
        "role": {"type": "string", "enum": sorted(parts.ROLES)},
        "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": CONTENT_PART}]},
    },
}
INPUT_OTHER_ITEM = {
    "type": "object",
    "required": ["type"],
    "description": "Any other item type (function_call, function_call_output, reasoning, ...), passed through.",
    "properties": {"type": {"type": "string", "minLength": 1, "not": {"enum": ["message"]}}},
}
FUNCTION_TOOL_PROPS = {
    "type": {"type": "string", "minLength": 1},
    "name": {"type": "string", "minLength": 1},
    "description": {"type": "string", "nullable": True},
    "parameters": {"type": "object", "nullable": True},
    "strict": {"type": "boolean", "nullable": True},
    "defer_loading": {
        "type": "boolean",
        "nullable": True,
        "description": f"Needs the {parts.TOOL_SEARCH} server tool and one tool that is not deferred.",
    },
}
AUTO_ROUTER_PROPS = {
    "enabled": {"type": "boolean"},
    "pin_model": {"type": "boolean"},
    "allowed_models": STRINGS,
    "excluded_models": STRINGS,
    "cost_tier": {"type": "string"},
}
SORT = {
    "oneOf": [
        {"type": "string", "enum": sorted(provider_rules.SORT_BY)},
        _obj(
            {
                "by": {"type": "string", "enum": sorted(provider_rules.SORT_BY)},
                "partition": _enum(provider_rules.SORT_PARTITIONS),
            },
            ["by"],
            nullable=False,
        ),
    ],
    "nullable": True,
}
PROVIDER = _obj(
    {
        **{key: STRINGS for key in ("order", "only", "ignore")},
        "quantizations": {**STRINGS, "maxItems": 0, "description": "Not supported (no quantization data): 400"},
        **{key: {"type": "boolean", "nullable": True} for key in ("allow_fallbacks", "require_parameters", "zdr")},
        "data_collection": _enum(provider_rules.DATA_COLLECTION),
        "sort": SORT,
        "max_price": {
            "type": "object",
            "additionalProperties": False,
            "properties": {k: {"type": "number", "minimum": 0} for k in ("prompt", "completion", "request", "image")},
        },
        "preferred_min_throughput": {**_number(0), "description": "Not supported (no throughput data): 400"},
        "preferred_max_latency": {**_number(0), "description": "Not supported (no latency data): 400"},
    }
)
PROVIDER["additionalProperties"] = False
STOP_CONDITION = {
    "oneOf": [
        {
            "type": "object",
            "required": ["type", field],
            "properties": {
                "type": {"type": "string", "enum": [kind]},
                field: {"type": "string"}
                if value is str
                else {"type": "number", "exclusiveMinimum": True, "minimum": 0},
            },
        }
        for kind, (field, value) in sorted(parts.STOP_CONDITIONS.items())
    ]
}
TEXT_FORMAT = {
    "oneOf": [
        _obj({"type": {"type": "string", "enum": ["text", "json_object"]}}, ["type"], nullable=False),
        _obj(
            {
                "type": {"type": "string", "enum": ["json_schema"]},
                "name": {"type": "string", "minLength": 1},
                "schema": {"type": "object"},
                "strict": {"type": "boolean", "nullable": True},
            },
            ["type", "name", "schema"],
            nullable=False,
        ),
    ],
    "nullable": True,
}

FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "background": {"type": "boolean", "nullable": True, "enum": [False, None], "description": "Only false"},
    "cache_control": CACHE_CONTROL,
    "client_metadata": {
        **_obj(),
        "additionalProperties": {"type": "string", "maxLength": 16384},
        "description": "String pairs (Codex's turn metadata): forwarded to openai-responses providers, recorded.",
    },
    "conversation": ONLY_NULL,
    "debug": _obj({"echo_upstream_body": {"type": "boolean"}}),
    "frequency_penalty": _number(-2, 2),
    "image_config": {
        **_obj(),
        "additionalProperties": {"oneOf": [{"type": "string"}, {"type": "number"}, {"type": "array", "items": {}}]},
    },
    "include": {"type": "array", "nullable": True, "items": _enum(rules.INCLUDE_VALUES, nullable=False)},
    "input": {
        "oneOf": [{"type": "string"}, {"type": "array", "items": {"oneOf": [INPUT_MESSAGE, INPUT_OTHER_ITEM]}}],
        "description": "A string (one user message) or an array of input items.",
    },
    "instructions": {"type": "string", "nullable": True},
    "max_output_tokens": _number(1, integer=True),
    "max_tool_calls": _number(0, rules.MAX_TOOL_CALLS, integer=True),
    "metadata": {
        **_obj(),
        "maxProperties": rules.MAX_METADATA_PAIRS,
        "additionalProperties": {"type": "string", "maxLength": rules.MAX_METADATA_VALUE},
        "description": f"String pairs; keys at most {rules.MAX_METADATA_KEY} characters, without brackets.",
    },
    "modalities": {"type": "array", "items": _enum(rules.MODALITIES, nullable=False)},
    "model": {**NON_BLANK, "example": "echo/echo-1"},
    "models": {"type": "array", "items": NON_BLANK},
    "parallel_tool_calls": {"type": "boolean", "nullable": True},
    "plugins": {
        "type": "array",
        "description": (
            "Implemented: `web` (max_results, search_prompt, engine), `web-fetch` (max_urls, max_chars), "
            "`auto-router` / `auto-beta-router` (allowed_models, excluded_models, cost_tier, pin_model), "
            "`pareto-router` (min_coding_score, allowed_models, excluded_models, pin_model), `fusion` "
            "(analysis_models, max_chars), `file-parser` (pdf.engine pdf-text|native, pdf.max_pages), "
            "`response-healing`, `context-compression` (engine middle-out), `moderation` (detectors, check_output); "
            "an id outside the contract is refused with 400 naming it (docs/plugins.md)."
        ),
        "items": {
            "type": "object",
            "required": ["id"],
            "properties": {
                "id": {"type": "string", "enum": sorted(parts.PLUGIN_IDS)},
                **AUTO_ROUTER_PROPS,
                "max_results": {"type": "integer", "minimum": 1, "maximum": 20},
                "search_prompt": {"type": "string", "maxLength": 4000},
                "engine": {"type": "string", "enum": [*ENGINE_NAMES, "middle-out"]},
                "max_urls": {"type": "integer", "minimum": 1, "maximum": 5},
                "max_chars": {"type": "integer", "minimum": 100},
                "pdf": _obj(
                    {
                        "engine": {"type": "string", "enum": list(FILE_ENGINES)},
                        "max_pages": {"type": "integer", "minimum": 1},
                    },
                    nullable=False,
                ),
                "analysis_models": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 8},
                "min_coding_score": {"type": "number", "minimum": 0, "maximum": 1},
                "detectors": {"type": "array", "items": {"type": "string", "enum": list(BUILTIN_SLUGS)}},
                "check_output": {"type": "boolean"},
            },
        },
    },
    "presence_penalty": _number(-2, 2),
    "previous_response_id": ONLY_NULL,
    "prompt": _obj({"id": {"type": "string", "minLength": 1}, "variables": _obj()}, ["id"]),
    "prompt_cache_key": {"type": "string", "nullable": True},
    "prompt_cache_options": _obj({"mode": {"type": "string", "enum": ["explicit"]}, "ttl": {"type": "string"}}),
    "provider": PROVIDER,
    "reasoning": _obj(
        {
            "effort": _enum(parts.REASONING_EFFORTS),
            "summary": _enum(parts.REASONING_SUMMARIES),
            "enabled": {"type": "boolean", "nullable": True},
            "max_tokens": _number(0, integer=True),
        }
    ),
    "route": _enum(rules.ROUTE_VALUES),
    "safety_identifier": IDENTIFIER,
    "service_tier": _enum(rules.SERVICE_TIERS),
    "session_id": IDENTIFIER,
    "stop_server_tools_when": {"type": "array", "minItems": 1, "items": STOP_CONDITION},
    "store": {"type": "boolean", "enum": [False], "description": "Only false: the API stores no responses"},
    "stream": {"type": "boolean", "description": "true answers text/event-stream"},
    "stream_options": {
        **_obj({"include_usage": {"type": "boolean"}, "include_obfuscation": {"type": "boolean", "enum": [False]}}),
        "additionalProperties": False,
        "description": "The stream always ends with the usage; it is never padded (include_obfuscation: true → 400).",
    },
    "temperature": _number(0, 2),
    "text": _obj({"format": TEXT_FORMAT, "verbosity": _enum(parts.VERBOSITIES)}),
    "tool_choice": {
        "oneOf": [
            {"type": "string", "enum": sorted(parts.TOOL_CHOICE_STRINGS)},
            _obj({"type": {"type": "string"}}, ["type"], nullable=False),
        ],
        "nullable": True,
    },
    "tools": {
        "type": "array",
        "nullable": True,
        "description": (
            "Function tools, provider tool kinds, and the server tools the gateway runs itself: "
            "`service:web_search`, `service:tool_search`, `service:web_fetch`, each with optional `parameters` "
            "(docs/server-tools.md); another `service:*` kind is refused with 400. A `namespace` tool (a group of "
            "function tools) goes to Responses providers as it is and to other formats as `namespace__name` "
            "functions, its calls answered with their `namespace`. The hosted `web_search` runs on the gateway's "
            "search engine when one is configured, else goes to an openai-responses provider (400 elsewhere)."
        ),
        "items": {"type": "object", "required": ["type"], "properties": FUNCTION_TOOL_PROPS},
    },
    "top_k": _number(0, integer=True, nullable=False),
    "top_logprobs": _number(0, 20, integer=True),
    "top_p": _number(0, 1),
    "trace": _obj(),
    "truncation": _enum(rules.TRUNCATION_VALUES),
    "user": IDENTIFIER,
    **ROUTER_FIELD_SCHEMAS,
}

REQUEST = {
    "type": "object",
    "additionalProperties": True,
    "properties": FIELD_SCHEMAS,
    "description": (
        "An OpenAI Responses request. `model` (or `models`) and `input` are what a minimal request carries. Other "
        "members go as sent to openai-responses upstreams (a 400 naming them when translated)."
    ),
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

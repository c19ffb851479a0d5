"""OpenAPI operations of POST /api/v1/chat/completions and POST /api/v1/messages (Channels consumers, not DRF
views), added to the document by `inference.openapi.add_responses_operation`.

The request schemas list every member the ingress adapters know; any other member is forwarded as sent to an
upstream speaking the same format, and is a 400 naming it when the request is translated (docs/wire-formats.md
says what each one becomes and what is refused).
"""

from __future__ import annotations

from typing import Any

from inference.ingress.chat_request import HANDLED as CHAT_HANDLED
from inference.ingress.chat_request import SHARED as CHAT_SHARED
from inference.ingress.messages_request import HANDLED as MESSAGES_HANDLED
from inference.ingress.messages_request import SHARED as MESSAGES_SHARED
from inference.ingress.messages_response import ERROR_TYPES

CHAT_PATH = "/api/v1/chat/completions"
MESSAGES_PATH = "/api/v1/messages"
ANY = {"nullable": True, "description": "See docs/wire-formats.md"}
NUMBER = {"type": "number", "nullable": True}
INTEGER = {"type": "integer", "nullable": True}
STRING = {"type": "string", "nullable": True}
BOOLEAN = {"type": "boolean", "nullable": True}
OBJECT = {"type": "object", "nullable": True}
ARRAY = {"type": "array", "nullable": True, "items": {}}

CHAT_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {
        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
        "content": {"nullable": True, "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
        "tool_calls": {"type": "array", "items": {"type": "object"}},
        "tool_call_id": {"type": "string"},
        "refusal": STRING,
    },
}
CHAT_TYPES: dict[str, Any] = {
    "model": {"type": "string"},
    "models": {"type": "array", "items": {"type": "string"}},
    "messages": {"type": "array", "minItems": 1, "items": CHAT_MESSAGE},
    "temperature": {**NUMBER, "minimum": 0, "maximum": 2},
    "top_p": {**NUMBER, "minimum": 0, "maximum": 1},
    "top_k": {**INTEGER, "minimum": 0},
    "frequency_penalty": {**NUMBER, "minimum": -2, "maximum": 2},
    "presence_penalty": {**NUMBER, "minimum": -2, "maximum": 2},
    "max_tokens": {**INTEGER, "minimum": 1},
    "max_completion_tokens": {**INTEGER, "minimum": 1},
    "n": {**INTEGER, "minimum": 1, "maximum": 1, "description": "Only 1"},
    "logprobs": {**BOOLEAN, "description": "JSON answers carry choice.logprobs (endpoints supporting them)"},
    "top_logprobs": {**INTEGER, "minimum": 0, "maximum": 20, "description": "Needs logprobs: true"},
    "stop": {
        "nullable": True,
        "oneOf": [{"type": "string"}, {"type": "array", "maxItems": 4, "items": {"type": "string"}}],
    },
    "seed": INTEGER,
    "logit_bias": {"type": "object", "nullable": True, "additionalProperties": {"type": "number"}},
    "stream": {"type": "boolean"},
    "stream_options": {**OBJECT, "properties": {"include_usage": BOOLEAN}},
    "tools": {"type": "array", "nullable": True, "items": {"type": "object"}},
    "tool_choice": {"nullable": True, "oneOf": [{"type": "string"}, {"type": "object"}]},
    "parallel_tool_calls": BOOLEAN,
    "response_format": OBJECT,
    "reasoning": OBJECT,
    "reasoning_effort": STRING,
    "include_reasoning": {**BOOLEAN, "description": "true: reasoning on (as reasoning: {}); false is refused"},
    "verbosity": STRING,
    "store": {**BOOLEAN, "description": "Only false"},
    "modalities": ARRAY,
}
MESSAGES_TYPES: dict[str, Any] = {
    "model": {"type": "string"},
    "models": {"type": "array", "items": {"type": "string"}},
    "max_tokens": {"type": "integer", "minimum": 1},
    "messages": {
        "type": "array",
        "minItems": 1,
        "items": {
            "type": "object",
            "required": ["role", "content"],
            "properties": {
                "role": {"type": "string", "enum": ["user", "assistant", "system"]},
                "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
            },
        },
    },
    "system": {"nullable": True, "oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "object"}}]},
    "temperature": {**NUMBER, "minimum": 0, "maximum": 1},
    "top_p": {**NUMBER, "minimum": 0, "maximum": 1},
    "top_k": {**INTEGER, "minimum": 0},
    "stop_sequences": {"type": "array", "nullable": True, "items": {"type": "string"}},
    "stream": {"type": "boolean", "nullable": True},
    "tools": {"type": "array", "nullable": True, "items": {"type": "object"}},
    "tool_choice": OBJECT,
    "thinking": OBJECT,
    "metadata": {**OBJECT, "properties": {"user_id": STRING}},
    "output_config": OBJECT,
    "output_format": OBJECT,
    "service_tier": {"type": "string", "nullable": True, "enum": ["auto", None]},
    "speed": {"type": "string", "nullable": True, "enum": ["standard", "fast", None]},
    "cache_control": OBJECT,
    "context_management": {**OBJECT, "properties": {"edits": ARRAY}},
}


def _request(members: set[str], types: dict[str, Any], required: list[str], description: str) -> dict[str, Any]:
    from inference.openapi import FIELD_SCHEMAS  # the Responses rules of the members shared with /responses

    properties = {name: types.get(name) or FIELD_SCHEMAS.get(name) or ANY for name in sorted(members)}
    return {
        "type": "object",
        "additionalProperties": True,
        "required": required,
        "properties": properties,
        "description": description,
    }


CHAT_REQUEST = _request(
    set(CHAT_HANDLED) | set(CHAT_SHARED),
    CHAT_TYPES,
    ["messages"],
    "An OpenAI Chat Completions request; `model` (or `models`) is required too. Other members go as sent to "
    "openai-chat upstreams (a 400 naming them when translated).",
)
CHAT_REQUEST["example"] = {"model": "echo/echo-1", "messages": [{"role": "user", "content": "Hello"}]}
MESSAGES_REQUEST = _request(
    set(MESSAGES_HANDLED) | set(MESSAGES_SHARED),
    MESSAGES_TYPES,
    ["messages", "max_tokens"],
    "An Anthropic Messages request; `model` (or `models`) is required too. Other members go as sent to "
    "anthropic-messages upstreams (a 400 naming them when translated).",
)
MESSAGES_REQUEST["example"] = {
    "model": "echo/echo-1",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "Hello"}],
}

USAGE = {"type": "object", "properties": {"cost": {"type": "number"}, "is_byok": {"type": "boolean"}}}
CHAT_COMPLETION = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices", "usage"],
    "properties": {
        "id": {"type": "string", "pattern": "^chatcmpl-"},
        "object": {"type": "string", "enum": ["chat.completion"]},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "provider": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object"}},
        "usage": {
            **USAGE,
            "properties": {
                **USAGE["properties"],
                **{k: {"type": "integer"} for k in ("prompt_tokens", "completion_tokens", "total_tokens")},
            },
        },
    },
}
MESSAGE = {
    "type": "object",
    "required": ["id", "type", "role", "model", "content", "stop_reason", "usage"],
    "properties": {
        "id": {"type": "string", "pattern": "^msg_"},
        "type": {"type": "string", "enum": ["message"]},
        "role": {"type": "string", "enum": ["assistant"]},
        "model": {"type": "string"},
        "content": {"type": "array", "items": {"type": "object"}},
        "stop_reason": {"type": "string", "enum": ["end_turn", "max_tokens", "tool_use", "refusal"]},
        "stop_sequence": STRING,
        "usage": USAGE,
        "context_management": {**OBJECT, "properties": {"applied_edits": ARRAY}},
    },
}
TOKEN_COUNT = {"type": "object", "required": ["input_tokens"], "properties": {"input_tokens": {"type": "integer"}}}
ANTHROPIC_ERROR = {
    "type": "object",
    "required": ["type", "error"],
    "properties": {
        "type": {"type": "string", "enum": ["error"]},
        "error": {
            "type": "object",
            "required": ["type", "message"],
            "properties": {
                "type": {"type": "string", "enum": sorted(set(ERROR_TYPES.values()))},
                "message": {"type": "string"},
                "metadata": {"type": "object"},
            },
        },
    },
}
SSE = {"type": "string", "description": "Server-sent events (see docs/wire-formats.md)"}
ERROR_STATUSES = ("400", "401", "402", "403", "404", "405", "408", "413", "429", "500", "502", "503", "524", "529")


def _operation(operation_id: str, summary: str, request: str, answer: str, error: dict, **extra) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": summary,
        "tags": ["responses"],
        "security": [{"bearerAuth": []}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {"$ref": request}}}},
        "responses": {
            "200": {
                "description": "The answer, or its event stream with `stream: true`",
                "content": {
                    "application/json": {"schema": {"$ref": answer}},
                    "text/event-stream": {"schema": SSE},
                },
            },
            **{
                code: {"description": f"Error {code}", "content": {"application/json": {"schema": error}}}
                for code in ERROR_STATUSES
            },
        },
        **extra,
    }


def add_wire_operations(result: dict[str, Any]) -> None:
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["ChatCompletionsRequest"] = CHAT_REQUEST
    schemas["ChatCompletion"] = CHAT_COMPLETION
    schemas["MessagesRequest"] = MESSAGES_REQUEST
    schemas["Message"] = MESSAGE
    schemas["MessageTokensCount"] = TOKEN_COUNT
    schemas["AnthropicError"] = ANTHROPIC_ERROR
    paths = result.setdefault("paths", {})
    paths[CHAT_PATH] = {
        "post": _operation(
            "chat_completions_create",
            "Create a chat completion (OpenAI Chat Completions format)",
            "#/components/schemas/ChatCompletionsRequest",
            "#/components/schemas/ChatCompletion",
            {"$ref": "#/components/schemas/ErrorEnvelope"},
            description="Same pipeline as /responses; `chat.completion` JSON or `chat.completion.chunk` events "
            "ending with `data: [DONE]`. Inference keys only.",
        )
    }
    paths[MESSAGES_PATH] = {
        "post": _operation(
            "messages_create",
            "Create a message (Anthropic Messages format)",
            "#/components/schemas/MessagesRequest",
            "#/components/schemas/Message",
            {"$ref": "#/components/schemas/AnthropicError"},
            description="Same pipeline as /responses; the key as `x-api-key` or `Authorization: Bearer`; "
            "errors in Anthropic's shape. Inference keys only.",
            parameters=[
                {"name": "anthropic-version", "in": "header", "required": False, "schema": {"type": "string"}},
                {"name": "anthropic-beta", "in": "header", "required": False, "schema": {"type": "string"}},
            ],
        )
    }
    paths[MESSAGES_PATH + "/count_tokens"] = {
        "post": _operation(
            "messages_count_tokens",
            "Count the input tokens of a Messages request",
            "#/components/schemas/MessagesRequest",
            "#/components/schemas/MessageTokensCount",
            {"$ref": "#/components/schemas/AnthropicError"},
            description="A Messages request without `max_tokens` and `stream`; the routed provider's exact count "
            "(Anthropic-format and OpenAI Responses providers) or the gateway's estimate (`x-token-count: exact` or "
            "`estimate`). Key auth, region and guardrails as /messages; never charged, no Generation.",
        )
    }

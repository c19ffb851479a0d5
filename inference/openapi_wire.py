"""OpenAPI operations of POST /api/v1/chat/completions and POST /api/v1/messages (Channels consumers, not DRF
views), added to the document by `inference.openapi.add_responses_operation`.

The request schemas are generated from the ingresses' typed requests (inference.chat_request_type,
inference.messages_request_type): every member the ingress adapters know; any other member is forwarded as sent
to an upstream speaking the same format, and is a 400 naming it when the request is translated
(docs/wire-formats.md says what each one becomes and what is refused).
"""

from __future__ import annotations

from typing import Any

from inference.chat_request_type import ChatRequest
from inference.ingress.messages_response import ERROR_TYPES
from inference.messages_request_type import MessagesRequest
from inference.openapi_types import openapi_properties

CHAT_PATH = "/api/v1/chat/completions"
MESSAGES_PATH = "/api/v1/messages"
STRING = {"type": "string", "nullable": True}
OBJECT = {"type": "object", "nullable": True}
ARRAY = {"type": "array", "nullable": True, "items": {}}


def _request(struct: type, required: list[str]) -> dict[str, Any]:
    """The request schema generated from the ingress's typed request (one property per member it knows)."""
    return {
        "type": "object",
        "additionalProperties": True,
        "required": required,
        "properties": openapi_properties(struct),
        "description": " ".join((struct.__doc__ or "").split()),
    }


CHAT_REQUEST = _request(ChatRequest, ["messages"])
CHAT_REQUEST["example"] = {"model": "echo/echo-1", "messages": [{"role": "user", "content": "Hello"}]}
MESSAGES_REQUEST = _request(MessagesRequest, ["messages", "max_tokens"])
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

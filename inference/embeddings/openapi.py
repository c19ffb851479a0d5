"""OpenAPI document of POST /api/v1/embeddings (a data-plane consumer, not a DRF view): the request schema
follows `inference.embeddings.schema.CHECKERS` (one property per checker, `additionalProperties: false`)."""

from __future__ import annotations

from typing import Any

from inference.embeddings import schema as rules
from inference.openapi import FIELD_SCHEMAS as RESPONSES_FIELDS

PATH = "/api/v1/embeddings"
TOKENS = {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 1}
MODEL = {"type": "string", "minLength": 1, "pattern": r"^(?!@preset/)", "description": "An embeddings model id"}

FIELD_SCHEMAS: dict[str, Any] = {
    "model": MODEL,
    "models": {"type": "array", "items": MODEL, "description": "Fallback models, tried after `model` in order"},
    "input": {
        "description": "A string, an array of strings, an array of token ids, or an array of token-id arrays "
        f"(at most {rules.MAX_INPUTS} inputs, none empty)",
        "oneOf": [
            {"type": "string", "minLength": 1},
            {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1, "maxItems": rules.MAX_INPUTS},
            TOKENS,
            {"type": "array", "items": TOKENS, "minItems": 1, "maxItems": rules.MAX_INPUTS},
        ],
    },
    "dimensions": {"type": "integer", "minimum": 1, "maximum": rules.MAX_DIMENSIONS, "nullable": True},
    "encoding_format": {"type": "string", "enum": list(rules.ENCODING_FORMATS), "nullable": True},
    "user": {"type": "string", "maxLength": rules.MAX_IDENTIFIER, "nullable": True},
    "provider": RESPONSES_FIELDS["provider"],
}
REQUEST = {
    "type": "object",
    "required": ["input"],
    "additionalProperties": False,
    "properties": FIELD_SCHEMAS,
    "example": {"model": "echo/echo-embed-1", "input": ["first text", "second text"], "encoding_format": "float"},
}
RESPONSE = {
    "type": "object",
    "required": ["object", "id", "data", "model", "usage"],
    "properties": {
        "object": {"type": "string", "enum": ["list"]},
        "id": {"type": "string", "pattern": "^emb_", "description": "emb_<request id>: GET /generation?id=..."},
        "data": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["object", "index", "embedding"],
                "properties": {
                    "object": {"type": "string", "enum": ["embedding"]},
                    "index": {"type": "integer"},
                    "embedding": {
                        "oneOf": [
                            {"type": "array", "items": {"type": "number"}},
                            {"type": "string", "description": "base64 of little-endian float32 values"},
                        ]
                    },
                },
            },
        },
        "model": {"type": "string"},
        "usage": {
            "type": "object",
            "required": ["prompt_tokens", "total_tokens", "cost", "is_byok"],
            "properties": {
                "prompt_tokens": {"type": "integer"},
                "total_tokens": {"type": "integer"},
                "cost": {"type": "number", "description": "USD"},
                "is_byok": {"type": "boolean"},
            },
        },
    },
}
ERROR_STATUSES = ("400", "401", "402", "403", "404", "405", "408", "413", "429", "500", "502", "503", "524")


def embeddings_operation() -> dict[str, Any]:
    error = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}}}
    return {
        "operationId": "embeddings_create",
        "summary": "Create embeddings (OpenAI Embeddings format)",
        "description": "Routes to the endpoints of an embeddings model with fallback, through the same key "
        "auth, guardrails (content filters see every input), budgets, rate limits and accounting as /responses.",
        "tags": ["embeddings"],
        "security": [{"bearerAuth": []}],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EmbeddingsRequest"}}},
        },
        "responses": {
            "200": {
                "description": "The embeddings, in input order",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/EmbeddingsList"}}},
            },
            **{code: {"description": f"Error {code}", **error} for code in ERROR_STATUSES},
        },
    }


def add_embeddings_operation(result, generator, request, public):
    """Postprocessing hook: document POST /api/v1/embeddings and its request and response schemas."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["EmbeddingsRequest"] = REQUEST
    schemas["EmbeddingsList"] = RESPONSE
    result.setdefault("paths", {})[PATH] = {"post": embeddings_operation()}
    return result

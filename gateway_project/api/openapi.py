"""OpenAPI (drf-spectacular) additions: the error envelope on every operation."""

from __future__ import annotations

from gateway_project.api.errors import DEFAULT_MESSAGES

ERROR_ENVELOPE = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "integer", "description": "Equals the HTTP status."},
                "message": {"type": "string"},
                "metadata": {"type": "object", "additionalProperties": True},
            },
        },
        "service_metadata": {"type": "object", "nullable": True, "additionalProperties": True},
        "user_id": {"type": "string", "nullable": True},
    },
}

COMMON_ERRORS = ("400", "401", "403", "404", "405", "413", "429", "500")
# Writes can also conflict with an existing record (a slug, a name) or carry a body that is not JSON.
WRITE_ERRORS = ("409", "415")


def add_error_responses(result, generator, request, public):
    """Postprocessing hook: declare ErrorEnvelope and reference it for every error status of every operation."""
    components = result.setdefault("components", {}).setdefault("schemas", {})
    components["ErrorEnvelope"] = ERROR_ENVELOPE
    ref = {"$ref": "#/components/schemas/ErrorEnvelope"}
    for path_item in result.get("paths", {}).values():
        for method, operation in path_item.items():
            if method not in {"get", "post", "put", "patch", "delete"}:
                continue
            responses = operation.setdefault("responses", {})
            codes = COMMON_ERRORS + (WRITE_ERRORS if method != "get" else ())
            for code in codes:
                responses.setdefault(
                    code,
                    {"description": DEFAULT_MESSAGES[int(code)], "content": {"application/json": {"schema": ref}}},
                )
    return result

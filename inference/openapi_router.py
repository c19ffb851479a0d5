"""OpenAPI schemas of the public router API's own members of the Responses body (inference.schema_router)."""

from __future__ import annotations

from typing import Any


def _number(low: float, high: float) -> dict[str, Any]:
    return {"type": "number", "nullable": True, "minimum": low, "maximum": high}


ROUTER_FIELD_SCHEMAS: dict[str, dict[str, Any]] = {
    "min_p": _number(0, 1),
    "top_a": _number(0, 1),
    "repetition_penalty": _number(0, 2),
    "transforms": {
        "type": "array",
        "nullable": True,
        "items": {"type": "string", "enum": ["middle-out"]},
        "description": "middle-out turns on the context-compression plugin",
    },
    "usage": {
        "type": "object",
        "nullable": True,
        "properties": {"include": {"type": "boolean"}},
        "additionalProperties": False,
        "description": "Usage with its cost is always in the answer; include: false removes nothing",
    },
}

"""Validation of the Responses-format body of POST /presets/{slug}/responses, with inference's own rules.

The fields POST /responses knows are checked by `inference.schema`'s checkers (one rule set for both
endpoints); members it does not know (`messages`, for example) are silently ignored, as the spec asks of
this endpoint.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from inference import schema, schema_parts


def validate_responses_body(body: Any) -> dict[str, Any]:
    """Check every Responses field the body carries; returns it unchanged, or raises a 400 naming the field."""
    if not isinstance(body, dict):
        raise validation_error("body", "must be a JSON object")
    for name, value in body.items():
        checker = schema.CHECKERS.get(name)
        if checker is not None:
            checker(name, value)
    if body.get("tools"):
        schema_parts.check_deferred_tools(body["tools"])
    return body

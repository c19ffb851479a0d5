"""Validation of the Responses-format body of POST /presets/{slug}/responses, with inference's own rules.

The fields POST /responses knows are checked by `inference.schema`'s checkers (one rule set for both
endpoints). Responses fields the preset does not keep (`stream`, `prompt`...) and `messages` are accepted and
not persisted, as the spec asks of this endpoint; any other member is a 400 naming it (strict bodies).
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from gateway_project.api.serializers import refuse_unknown_members
from inference import schema, schema_parts

# Every member of a Responses body, plus `messages` (named by the spec as accepted and not persisted).
KNOWN_MEMBERS = frozenset(schema.CHECKERS) | {"messages"}


def validate_responses_body(body: Any) -> dict[str, Any]:
    """Check every Responses field the body carries; returns it unchanged, or raises a 400 naming the field."""
    if not isinstance(body, dict):
        raise validation_error("body", "must be a JSON object")
    refuse_unknown_members(body, KNOWN_MEMBERS)
    for name, value in body.items():
        checker = schema.CHECKERS.get(name)
        if checker is not None:
            checker(name, value)
    if body.get("tools"):
        schema_parts.check_deferred_tools(body["tools"])
    return body

"""Validation of the Responses-format body of POST /presets/{slug}/responses."""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error


def validate_responses_body(body: Any) -> dict:
    if not isinstance(body, dict):
        raise validation_error("body", "must be a JSON object")
    return body

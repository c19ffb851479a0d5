"""Validation of the Responses request body (spec "Responses request body", DECISIONS.md §9).

Plain functions over the decoded JSON, one per field, so a typical body validates in a few microseconds.
Every failure is a 400 naming the field (`validation_error`). `parse_body` decodes with orjson and applies
the limits of every JSON body (nesting depth, no NUL character: gateway_project/json_input.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.json_input import check_json, needs_scan
from inference import schema_parts as parts
from inference.members import RESPONSES as RESPONSES_MEMBERS
from inference.schema_provider import check_provider
from inference.schema_router import (
    check_min_p,
    check_repetition_penalty,
    check_top_a,
    check_transforms,
    check_usage,
    fold_router_members,
)
from inference.unknown_members import collect

Checker = Callable[[str, Any], None]

INCLUDE_VALUES = frozenset(
    {
        "file_search_call.results",
        "message.input_image.image_url",
        "computer_call_output.output.image_url",
        "reasoning.encrypted_content",
        "code_interpreter_call.outputs",
    }
)
SERVICE_TIERS = frozenset({"auto", "default", "fast", "flex", "priority", "scale"})
TRUNCATION_VALUES = frozenset({"auto", "disabled"})
ROUTE_VALUES = frozenset({"fallback", "sort"})
MODALITIES = frozenset({"text", "image"})
MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512
MAX_IDENTIFIER = 256
MAX_CLIENT_METADATA_PAIRS = 64
MAX_CLIENT_METADATA_VALUE = 16384
MAX_TOOL_CALLS = 30


def parse_body(raw: bytes, forward_unknown: bool = False) -> dict[str, Any]:
    """Decode and validate a request body; 400 for malformed JSON or any invalid field. `forward_unknown` (the
    /responses data plane): members the API does not define are collected for a same-format upstream
    (inference.unknown_members) instead of refused."""
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, f"Malformed JSON body: {exc}") from None
    if needs_scan(raw):
        check_json(body)
    return validate_body(body, forward_unknown)


def validate_body(body: Any, forward_unknown: bool = False) -> dict[str, Any]:
    """Validate a decoded Responses body in place and return it (strict: an unknown member is a 400, unless
    `forward_unknown`)."""
    if not isinstance(body, dict):
        raise GatewayError(400, "Request body must be a JSON object")
    unknown = False
    for name, value in body.items():
        checker = CHECKERS.get(name)
        if checker is None:
            member = RESPONSES_MEMBERS.get(name)
            if member is not None:  # a member of another format, refused here with the table's reason
                raise validation_error(name, f"is not supported: {member.note}")
            if not forward_unknown:
                raise validation_error(name, "unknown parameter")
            unknown = True
            continue
        checker(name, value)
    if unknown:
        collect(body, body, CHECKERS)
    tools = body.get("tools")
    if tools:
        parts.check_deferred_tools(tools)
        parts.hosted_web_search(tools)
    return fold_router_members(body)


def _bool(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise validation_error(name, "must be a boolean")


def _strict_bool(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise validation_error(name, "must be a boolean")


def _string(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise validation_error(name, "must be a string")


def _identifier(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise validation_error(name, "must be a string")
    if len(value) > MAX_IDENTIFIER:
        raise validation_error(name, f"must be at most {MAX_IDENTIFIER} characters")


def _number(name: str, value: Any, low: float | None = None, high: float | None = None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise validation_error(name, "must be a number")
    if (low is not None and value < low) or (high is not None and value > high):
        raise validation_error(name, f"must be between {low} and {high}")


def _integer(name: str, value: Any, low: int | None = None, high: int | None = None) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise validation_error(name, "must be an integer")
    if low is not None and value < low:
        raise validation_error(name, f"must be at least {low}")
    if high is not None and value > high:
        raise validation_error(name, f"must be at most {high}")


def _enum(values: frozenset[str]) -> Checker:
    allowed = ", ".join(sorted(values))

    def check(name: str, value: Any) -> None:
        if value is not None and not parts.is_one_of(value, values):
            raise validation_error(name, f"must be one of {allowed}")

    return check


def _enum_array(values: frozenset[str], nullable: bool) -> Checker:
    allowed = ", ".join(sorted(values))

    def check(name: str, value: Any) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, list):
            raise validation_error(name, "must be an array")
        for index, item in enumerate(value):
            if not parts.is_one_of(item, values):
                raise validation_error(f"{name}[{index}]", f"must be one of {allowed}")

    return check


def _object(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, dict):
        raise validation_error(name, "must be an object")


def _stream_options(name: str, value: Any) -> None:
    """The Responses stream always ends with the usage (`include_usage` true or false asks nothing else) and is
    never padded (`include_obfuscation: true` is refused); any other member is unknown."""
    _object(name, value)
    for key, item in (value or {}).items():
        if key not in ("include_usage", "include_obfuscation"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
        if not isinstance(item, bool):
            raise validation_error(f"{name}.{key}", "must be a boolean")
        if key == "include_obfuscation" and item:
            raise validation_error(f"{name}.{key}", "is not supported: stream events are never padded")


def _model(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise validation_error(name, "must be a non-empty string")


def _models(name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise validation_error(name, "must be an array of model slugs")
    for index, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise validation_error(f"{name}[{index}]", "must be a non-empty string")


def _metadata(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, dict):
        raise validation_error(name, "must be an object of string pairs")
    if len(value) > MAX_METADATA_PAIRS:
        raise validation_error(name, f"must have at most {MAX_METADATA_PAIRS} pairs")
    for key, item in value.items():
        if len(key) > MAX_METADATA_KEY:
            raise validation_error(f"{name}.{key}", f"key must be at most {MAX_METADATA_KEY} characters")
        if "[" in key or "]" in key:
            raise validation_error(f"{name}.{key}", "key must not contain brackets")
        if not isinstance(item, str):
            raise validation_error(f"{name}.{key}", "value must be a string")
        if len(item) > MAX_METADATA_VALUE:
            raise validation_error(f"{name}.{key}", f"value must be at most {MAX_METADATA_VALUE} characters")


def _client_metadata(name: str, value: Any) -> None:
    """Codex's per-turn metadata (ids, a JSON turn description): string pairs, forwarded to a Responses upstream
    and recorded on the generation. Longer than `metadata` allows: Codex's turn metadata is a JSON document."""
    if value is None:
        return
    if not isinstance(value, dict):
        raise validation_error(name, "must be an object of string pairs")
    if len(value) > MAX_CLIENT_METADATA_PAIRS:
        raise validation_error(name, f"must have at most {MAX_CLIENT_METADATA_PAIRS} pairs")
    for key, item in value.items():
        if len(key) > MAX_METADATA_KEY:
            raise validation_error(f"{name}.{key}", f"key must be at most {MAX_METADATA_KEY} characters")
        if not isinstance(item, str):
            raise validation_error(f"{name}.{key}", "value must be a string")
        if len(item) > MAX_CLIENT_METADATA_VALUE:
            raise validation_error(f"{name}.{key}", f"value must be at most {MAX_CLIENT_METADATA_VALUE} characters")


def _previous_response_id(name: str, value: Any) -> None:
    if value is not None:
        raise validation_error(name, "is not supported: the API is stateless; send the full history in input")


def _conversation(name: str, value: Any) -> None:
    if value is not None:
        raise validation_error(name, "is not supported: the API is stateless; send the full history in input")


def _store(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise validation_error(name, "must be a boolean")
    if value:
        raise validation_error(name, "must be false: the API stores no responses")


def _background(name: str, value: Any) -> None:
    _bool(name, value)
    if value:
        raise validation_error(name, "is not supported: the API is stateless")


def _top_k(name: str, value: Any) -> None:
    if value is None:
        raise validation_error(name, "must be an integer")
    _integer(name, value, 0)


def _max_tool_calls(name: str, value: Any) -> None:
    _integer(name, value, 0, MAX_TOOL_CALLS)


CHECKERS: dict[str, Checker] = {
    "background": _background,
    "cache_control": parts.check_cache_control,
    "client_metadata": _client_metadata,
    "conversation": _conversation,
    "debug": parts.check_debug,
    "frequency_penalty": lambda n, v: _number(n, v, -2, 2),
    "image_config": parts.check_image_config,
    "include": _enum_array(INCLUDE_VALUES, nullable=True),
    "input": parts.check_input,
    "instructions": _string,
    "max_output_tokens": lambda n, v: _integer(n, v, 1),
    "max_tool_calls": _max_tool_calls,
    "metadata": _metadata,
    "min_p": check_min_p,
    "modalities": _enum_array(MODALITIES, nullable=False),
    "model": _model,
    "models": _models,
    "parallel_tool_calls": _bool,
    "plugins": parts.check_plugins,
    "presence_penalty": lambda n, v: _number(n, v, -2, 2),
    "previous_response_id": _previous_response_id,
    "prompt": parts.check_prompt,
    "prompt_cache_key": _string,
    "prompt_cache_options": parts.check_prompt_cache_options,
    "provider": check_provider,
    "reasoning": parts.check_reasoning,
    "repetition_penalty": check_repetition_penalty,
    "route": _enum(ROUTE_VALUES),
    "safety_identifier": _identifier,
    "service_tier": _enum(SERVICE_TIERS),
    "session_id": _identifier,
    "stop_server_tools_when": parts.check_stop_conditions,
    "store": _store,
    "stream": _strict_bool,
    "stream_options": _stream_options,
    "temperature": lambda n, v: _number(n, v, 0, 2),
    "text": parts.check_text,
    "tool_choice": parts.check_tool_choice,
    "tools": parts.check_tools,
    "top_a": check_top_a,
    "top_k": _top_k,
    "top_logprobs": lambda n, v: _integer(n, v, 0, 20),
    "top_p": lambda n, v: _number(n, v, 0, 1),
    "trace": _object,
    "transforms": check_transforms,
    "truncation": _enum(TRUNCATION_VALUES),
    "usage": check_usage,
    "user": _identifier,
}

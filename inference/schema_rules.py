"""Rules of top-level members of the Responses body that a type cannot state (or states with a less precise
message): each `check(name, value)` raises the 400 naming the member. The type that declares which member uses
which rule is `inference.responses_request.ResponsesRequest`; `inference.schema` runs them."""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error

MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512
MAX_IDENTIFIER = 256
MAX_CLIENT_METADATA_PAIRS = 64
MAX_CLIENT_METADATA_VALUE = 16384
MAX_TOOL_CALLS = 30


def check_stream_options(name: str, value: Any) -> None:
    """The Responses stream always ends with the usage (`include_usage` true or false asks nothing else) and is
    never padded (`include_obfuscation: true` is refused); any other member is unknown."""
    if value is not None and not isinstance(value, dict):
        raise validation_error(name, "must be an object")
    for key, item in (value or {}).items():
        if key not in ("include_usage", "include_obfuscation"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
        if not isinstance(item, bool):
            raise validation_error(f"{name}.{key}", "must be a boolean")
        if key == "include_obfuscation" and item:
            raise validation_error(f"{name}.{key}", "is not supported: stream events are never padded")


def check_metadata(name: str, value: Any) -> None:
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


def check_client_metadata(name: str, value: Any) -> None:
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


def check_stateless(name: str, value: Any) -> None:
    """`previous_response_id`, `conversation`: only null."""
    if value is not None:
        raise validation_error(name, "is not supported: the API is stateless; send the full history in input")


def check_store(name: str, value: Any) -> None:
    if not isinstance(value, bool):
        raise validation_error(name, "must be a boolean")
    if value:
        raise validation_error(name, "must be false: the API stores no responses")


def check_background(name: str, value: Any) -> None:
    if value is not None and not isinstance(value, bool):
        raise validation_error(name, "must be a boolean")
    if value:
        raise validation_error(name, "is not supported: the API is stateless")

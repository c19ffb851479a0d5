"""Validation of the POST /embeddings body (OpenAI Embeddings API plus the gateway's routing fields).

Accepted: `model` (required; not a preset), `models` (fallbacks), `input` (a string, an array of strings, an
array of token ids, or an array of token-id arrays; at most MAX_INPUTS items, none empty), `dimensions`
(1..`GATEWAY_EMBEDDINGS_MAX_DIMENSIONS`; with it, inputs x dimensions at most `GATEWAY_EMBEDDINGS_MAX_VALUES`,
so no answer grows past that many values), `encoding_format` (`float` or `base64`), `user`, `provider`
(routing preferences as on /responses). Anything else is a 400 naming it.
"""

from __future__ import annotations

from typing import Any

import orjson
from django.conf import settings

from gateway_project.api.errors import GatewayError, validation_error
from gateway_project.json_input import check_json, needs_scan
from inference.schema_provider import check_provider

MAX_INPUTS = 2048
MAX_DIMENSIONS = 65536  # the ceiling of GATEWAY_EMBEDDINGS_MAX_DIMENSIONS
MAX_IDENTIFIER = 256
ENCODING_FORMATS = ("float", "base64")
PRESET_PREFIX = "@preset/"


def _model(name: str, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise validation_error(name, "must be a non-empty string")
    if value.startswith(PRESET_PREFIX):
        raise validation_error(name, "presets are not supported on /embeddings; name the model")


def _models(name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise validation_error(name, "must be an array of model slugs")
    for index, item in enumerate(value):
        _model(f"{name}[{index}]", item)


def _token_ids(name: str, value: list) -> None:
    if not value:
        raise validation_error(name, "must not be empty")
    for index, item in enumerate(value):
        if not isinstance(item, int) or isinstance(item, bool) or item < 0:
            raise validation_error(f"{name}[{index}]", "must be a non-negative integer token id")


def _input(name: str, value: Any) -> None:
    if isinstance(value, str):
        if not value:
            raise validation_error(name, "must not be an empty string")
        return
    if not isinstance(value, list) or not value:
        raise validation_error(name, "must be a string, an array of strings, or an array of token arrays")
    if len(value) > MAX_INPUTS:
        raise validation_error(name, f"at most {MAX_INPUTS} inputs per request")
    first = value[0]
    if isinstance(first, int) and not isinstance(first, bool):
        _token_ids(name, value)
        return
    kind = str if isinstance(first, str) else list
    for index, item in enumerate(value):
        field = f"{name}[{index}]"
        if not isinstance(item, kind):
            raise validation_error(field, "every item must be of the same kind: all strings or all token arrays")
        if kind is str and not item:
            raise validation_error(field, "must not be an empty string")
        if kind is list:
            _token_ids(field, item)


def _dimensions(name: str, value: Any) -> None:
    if value is None:
        return
    limit = min(settings.GATEWAY_EMBEDDINGS_MAX_DIMENSIONS, MAX_DIMENSIONS)
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= limit:
        raise validation_error(name, f"must be an integer from 1 to {limit}")


def input_count(value: Any) -> int:
    """How many vectors an (already valid) `input` asks for."""
    if isinstance(value, str) or (isinstance(value, list) and value and isinstance(value[0], int)):
        return 1
    return len(value)


def _answer_size(body: dict[str, Any]) -> None:
    """inputs x dimensions within GATEWAY_EMBEDDINGS_MAX_VALUES (the answer's values, held whole)."""
    dimensions = body.get("dimensions")
    if dimensions is None:
        return
    count, limit = input_count(body["input"]), settings.GATEWAY_EMBEDDINGS_MAX_VALUES
    if count * dimensions > limit:
        raise validation_error(
            "dimensions",
            f"{count} inputs x {dimensions} dimensions is {count * dimensions:,} values; at most {limit:,} "
            "per request (send fewer inputs or dimensions)",
        )


def _encoding_format(name: str, value: Any) -> None:
    if value is not None and value not in ENCODING_FORMATS:
        raise validation_error(name, "must be one of float, base64")


def _user(name: str, value: Any) -> None:
    if value is not None and (not isinstance(value, str) or len(value) > MAX_IDENTIFIER):
        raise validation_error(name, f"must be a string of at most {MAX_IDENTIFIER} characters")


CHECKERS = {
    "model": _model,
    "models": _models,
    "input": _input,
    "dimensions": _dimensions,
    "encoding_format": _encoding_format,
    "user": _user,
    "provider": check_provider,
}


def validate_embeddings_body(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise GatewayError(400, "Request body must be a JSON object")
    for name, value in body.items():
        checker = CHECKERS.get(name)
        if checker is None:
            raise validation_error(name, "unknown parameter")
        checker(name, value)
    if "input" not in body:
        raise validation_error("input", "is required")
    _answer_size(body)
    if not body.get("model") and not body.get("models"):
        raise validation_error("model", "is required (or models)")
    return body


def parse_embeddings_body(raw: bytes) -> dict[str, Any]:
    """Decode and validate a POST /embeddings body; 400 for malformed JSON or any invalid field."""
    try:
        body = orjson.loads(raw) if raw else None
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, f"Malformed JSON body: {exc}") from None
    if needs_scan(raw):
        check_json(body)
    return validate_embeddings_body(body)


def token_inputs(body: dict[str, Any]) -> bool:
    """Whether the input is token ids rather than text."""
    value = body.get("input")
    return isinstance(value, list) and bool(value) and not isinstance(value[0], str)


def input_list(body: dict[str, Any]) -> list:
    """The inputs as a list: each a string or a list of token ids."""
    value = body["input"]
    if isinstance(value, str):
        return [value]
    if isinstance(value[0], int):
        return [value]
    return value

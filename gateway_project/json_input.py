"""Limits every decoded JSON body of both planes meets before any code uses it: nesting depth and NUL.

- Depth: at most `MAX_JSON_DEPTH` nested arrays/objects (the body itself is level 1). Deeper values cannot be
  written back: orjson's encoder (accounting, observability, the upstream request) stops at 254 levels and
  Python's recursion limit near 1000.
- NUL: no U+0000 in any string or object key. PostgreSQL refuses it in text and jsonb columns, so a body
  carrying one would be answered and paid upstream, then lose its Generation row.

Both are refused with a 400 naming the field (`trace.a.b`, `input[0].content`, `metadata.<key>`).

`needs_scan(raw)` is the data plane's fast path: a body with fewer brackets than the depth limit and no
`\\u0000` escape (a raw NUL byte is invalid JSON already) cannot break either rule, so the walk is skipped;
it costs two C-level scans of the bytes.
"""

from __future__ import annotations

from typing import Any

import orjson

from gateway_project.api.errors import GatewayError, validation_error

MAX_JSON_DEPTH = 64
NUL = "\x00"
NUL_MESSAGE = "must not contain the NUL character (U+0000)"
DEPTH_MESSAGE = f"is nested too deeply (at most {MAX_JSON_DEPTH} levels of arrays and objects)"


def needs_scan(raw: bytes) -> bool:
    """False when `raw` (valid JSON) can neither nest deeper than the limit nor carry a NUL."""
    return b"\\u0000" in raw or raw.count(b"{") + raw.count(b"[") > MAX_JSON_DEPTH


def _join(parent: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def find_fault(value: Any, path: str = "", depth: int = 0) -> tuple[str, str] | None:
    """The first (field path, message) breaking a rule in `value`, or None. `depth` counts enclosing levels."""
    if isinstance(value, str):
        return (path, NUL_MESSAGE) if NUL in value else None
    if isinstance(value, dict):
        if depth >= MAX_JSON_DEPTH:
            return path, DEPTH_MESSAGE
        for key, item in value.items():
            if NUL in key:
                return _join(path, key.replace(NUL, "\\u0000")), f"key {NUL_MESSAGE}"
            if isinstance(item, (str, dict, list)):
                fault = find_fault(item, _join(path, key), depth + 1)
                if fault is not None:
                    return fault
        return None
    if isinstance(value, list):
        if depth >= MAX_JSON_DEPTH:
            return path, DEPTH_MESSAGE
        for index, item in enumerate(value):
            if isinstance(item, (str, dict, list)):
                fault = find_fault(item, _join(path, index), depth + 1)
                if fault is not None:
                    return fault
    return None


def check_json(value: Any, root: str = "") -> None:
    """Raise a 400 naming the field when `value` nests too deeply or carries a NUL character."""
    fault = find_fault(value, root)
    if fault is not None:
        field, message = fault
        raise validation_error(field or "body", message)


def check_text(name: str, value: str) -> None:
    """A 400 when a single string (a path segment, a query parameter, a header) carries a NUL."""
    if NUL in value:
        raise validation_error(name, NUL_MESSAGE)


def loads(raw: bytes | str) -> Any:
    """Decode a JSON body and apply the limits above: 400 for malformed JSON, too deep a value or a NUL."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise GatewayError(400, f"Malformed JSON body: {exc}") from None
    check_json(value)
    return value

"""OpenAPI 3.0 schemas generated from a msgspec type (the typed requests: inference.responses_request).

msgspec writes JSON Schema 2020-12 with `$defs`; the served document is OpenAPI 3.0 (drf-spectacular), so the
nested structs are inlined, `X | None` becomes `X` with `nullable: true`, enums get their `type`, and the
msgspec-only keys (`title`, `discriminator` mappings into `$defs`, null defaults) are dropped.
"""

from __future__ import annotations

from typing import Any

import msgspec

REF = "#/$defs/"


DROPPED = frozenset({"title", "discriminator", "default", "propertyNames"})  # msgspec's, or not OpenAPI 3.0


def _any_of(options: list[Any], defs: dict[str, Any]) -> dict[str, Any]:
    kept = [_convert(option, defs) for option in options if option != {"type": "null"}]
    out = dict(kept[0]) if len(kept) == 1 else {"anyOf": kept}
    if len(kept) < len(options):
        out["nullable"] = True
        if "enum" in out:
            out["enum"] = [*out["enum"], None]
    return out


def _convert(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_convert(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _convert(defs[node["$ref"].removeprefix(REF)], defs)
    out = {}
    if "anyOf" in node:
        out = _any_of(node["anyOf"], defs)
    elif node.get("type") == "null":  # only null
        out = {"type": "string", "nullable": True, "enum": [None]}
    for key, value in node.items():
        if key in DROPPED or key == "anyOf" or (key == "type" and value == "null"):
            continue
        if key == "required" and not value:
            continue
        if key in ("exclusiveMinimum", "exclusiveMaximum"):
            out["minimum" if key == "exclusiveMinimum" else "maximum"] = value
            out[key] = True
            continue
        out[key] = _convert(value, defs)
    if "enum" in out and "type" not in out and {type(v) for v in out["enum"] if v is not None} == {str}:
        out["type"] = "string"
    return out


def openapi_properties(struct: type[msgspec.Struct]) -> dict[str, dict[str, Any]]:
    """One OpenAPI 3.0 schema per field of `struct`, in its order."""
    (schema,), components = msgspec.json.schema_components([struct], ref_template=REF + "{name}")
    return _convert(components[struct.__name__], components)["properties"]

"""A JSON value valid against a JSON schema, derived from a text: what the offline `echo` model answers for
structured output and passes as tool arguments. Pure and deterministic.

- strings are the text (cut to `maxLength`, padded to `minLength`); `format` date-time, date, time, email,
  uri / url and uuid get a valid fixed value (the uuid derived from the text);
- numbers and integers are the numbers written in the text, taken in order (none: the text's word count),
  kept within `minimum` / `maximum` (and the exclusive bounds);
- `enum`: the first value the text mentions, else the first value; `const` as it is; booleans `true`;
- objects: every property (`required` or not; an optional one with a `default` takes its default);
- arrays: `minItems` items, at least one (at most `maxItems`); `prefixItems` one value each;
- `$ref` to the schema's own `$defs` / `definitions` (as pydantic writes them), `allOf` merged, `anyOf` /
  `oneOf` the first branch that is not `null` (`null` once nesting is deep, so recursive models end);
  `type` lists the first type that is not `null`.

`pattern` is not honoured (a string is the text whatever the pattern).
"""

from __future__ import annotations

import math
import re
import uuid
from typing import Any

MAX_DEPTH = 6
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")
FORMATS = {
    "date-time": "2026-01-01T00:00:00Z",
    "date": "2026-01-01",
    "time": "00:00:00Z",
    "email": "echo@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
}


class SchemaFiller:
    """`fill(schema)`: a value valid against `schema`, its strings and numbers taken from `text`."""

    def __init__(self, root: Any, text: str) -> None:
        self.root = root if isinstance(root, dict) else {}
        self.text = text.strip()
        self.numbers = [float(n) for n in NUMBER.findall(text)]
        self.next_number = 0

    def fill(self, schema: Any = None, depth: int = 0) -> Any:
        schema = self.root if schema is None else schema
        if not isinstance(schema, dict):
            return self.text
        schema = self._resolved(schema, depth)
        if "const" in schema:
            return schema["const"]
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self._enum(schema["enum"])
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list) and schema[key]:
                return self.fill(self._branch(schema[key], depth), depth + 1)
        kind = self._type(schema, depth)
        if kind == "object":
            return self._object(schema, depth)
        if kind == "array":
            return self._array(schema, depth)
        if kind in ("integer", "number"):
            return self._number(schema, kind)
        if kind == "boolean":
            return True
        if kind == "null":
            return None
        return self._string(schema)

    # -- composition ---------------------------------------------------------------------------------------
    def _resolved(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        """`$ref` and `allOf` merged into one schema (the referring schema's own keys win)."""
        for _ in range(32):  # a chain of references, bounded
            ref = schema.get("$ref")
            if not isinstance(ref, str):
                break
            rest = {k: v for k, v in schema.items() if k != "$ref"}
            schema = {**self._target(ref), **rest}
        parts = schema.get("allOf")
        if isinstance(parts, list) and parts:
            merged: dict[str, Any] = {"properties": {}, "required": []}
            for part in [self._resolved(p, depth) for p in parts if isinstance(p, dict)] + [schema]:
                for key, value in part.items():
                    if key == "properties" and isinstance(value, dict):
                        merged["properties"].update(value)
                    elif key == "required" and isinstance(value, list):
                        merged["required"] += value
                    elif key != "allOf":
                        merged[key] = value
            if not merged["properties"]:
                del merged["properties"]
            schema = merged
        return schema

    def _target(self, ref: str) -> dict[str, Any]:
        if not ref.startswith("#"):
            return {}
        node: Any = self.root
        for token in [t for t in ref[1:].split("/") if t]:
            token = token.replace("~1", "/").replace("~0", "~")
            node = node.get(token) if isinstance(node, dict) else None
        return node if isinstance(node, dict) else {}

    def _branch(self, options: list[Any], depth: int) -> Any:
        nulls = [o for o in options if isinstance(o, dict) and o.get("type") == "null"]
        others = [o for o in options if o not in nulls]
        if nulls and (depth >= MAX_DEPTH or not others):
            return nulls[0]
        return others[0]

    def _type(self, schema: dict[str, Any], depth: int) -> str:
        kind = schema.get("type")
        if isinstance(kind, list):
            non_null = [k for k in kind if k != "null"]
            kind = "null" if not non_null or ("null" in kind and depth >= MAX_DEPTH) else non_null[0]
        if kind is None:
            if "properties" in schema:
                return "object"
            if "items" in schema or "prefixItems" in schema:
                return "array"
        return kind if isinstance(kind, str) else "string"

    # -- values --------------------------------------------------------------------------------------------
    def _enum(self, values: list[Any]) -> Any:
        lowered = self.text.lower()
        for value in values:
            if isinstance(value, str) and value and re.search(rf"\b{re.escape(value.lower())}\b", lowered):
                return value
        return values[0]

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = set(schema.get("required") or ())
        out = {}
        for name, prop in properties.items():
            if name in required:
                out[name] = self.fill(prop, depth + 1)
            elif isinstance(prop, dict) and "default" in prop:
                out[name] = prop["default"]
            elif depth < MAX_DEPTH:
                out[name] = self.fill(prop, depth + 1)
        return out

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else []
        low = schema.get("minItems") if isinstance(schema.get("minItems"), int) else 0
        high = schema.get("maxItems") if isinstance(schema.get("maxItems"), int) else None
        count = max(low, len(prefix), 0 if depth >= MAX_DEPTH else 1)
        if high is not None:
            count = min(count, high)
        items = schema.get("items")
        return [self.fill(prefix[i] if i < len(prefix) else items, depth + 1) for i in range(count)]

    def _number(self, schema: dict[str, Any], kind: str) -> int | float:
        if self.numbers:
            value = self.numbers[self.next_number % len(self.numbers)]
            self.next_number += 1
        else:
            value = float(len(self.text.split()))
        low, high = schema.get("minimum"), schema.get("maximum")
        step = 1 if kind == "integer" else 0.5
        if _is_number(schema.get("exclusiveMinimum")):
            low = (
                schema["exclusiveMinimum"] + step
                if not _is_number(low)
                else max(low, schema["exclusiveMinimum"] + step)
            )
        if _is_number(schema.get("exclusiveMaximum")):
            high = (
                schema["exclusiveMaximum"] - step
                if not _is_number(high)
                else min(high, schema["exclusiveMaximum"] - step)
            )
        if _is_number(low):
            value = max(value, low)
        if _is_number(high):
            value = min(value, high)
        if kind == "integer":
            return math.ceil(value) if _is_number(low) and value == low else int(value)
        return int(value) if float(value).is_integer() else value

    def _string(self, schema: dict[str, Any]) -> str:
        fmt = schema.get("format")
        if fmt == "uuid":
            return str(uuid.uuid5(uuid.NAMESPACE_URL, self.text))
        value = FORMATS.get(fmt, self.text) if isinstance(fmt, str) else self.text
        low = schema.get("minLength") if isinstance(schema.get("minLength"), int) else 0
        high = schema.get("maxLength") if isinstance(schema.get("maxLength"), int) else None
        if len(value) < low:
            value = (value + " " + "echo " * low)[:low] if value else ("echo " * low)[:low]
        if high is not None:
            value = value[:high]
        return value


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)

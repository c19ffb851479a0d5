"""The echo model's JSON values (inference.providers.echo_values) are valid against the schemas clients send:
pydantic's `$defs` / `$ref`, recursion, `anyOf` with null, enums, bounds, formats, arrays and `allOf`."""

from __future__ import annotations

import jsonschema
import pytest

from inference.providers.echo_values import SchemaFiller

SCHEMAS = [
    {"type": "object", "properties": {}},
    {"type": "string", "minLength": 50},
    {"type": "string", "maxLength": 2},
    {"type": "integer", "minimum": 10, "maximum": 12},
    {"type": "number", "exclusiveMaximum": 0},
    {"type": "integer", "exclusiveMinimum": 2.5},
    {"type": ["null", "boolean"]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "number"}], "items": False},
    {"const": "fixed"},
    {"enum": [1, 2, 3]},
    {"type": "string", "format": "uuid"},
    {"type": "string", "format": "date-time"},
    {
        "allOf": [{"$ref": "#/definitions/A"}],
        "definitions": {"A": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}},
    },
    {
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"next": {"anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]}},
                "required": ["next"],
            }
        },
        "$ref": "#/$defs/Node",
    },
    {
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date"}, "site": {"type": "string", "format": "uri"}},
    },
]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_value_is_valid(schema):
    value = SchemaFiller(schema, "order 5 items, 7 left").fill()
    jsonschema.validate(value, schema, format_checker=jsonschema.FormatChecker())


def test_values_come_from_the_text():
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "b": {"type": "number"},
            "kind": {"enum": ["cat", "dog"]},
            "note": {"type": "string"},
        },
        "required": ["a", "b", "kind", "note"],
    }
    assert SchemaFiller(schema, "a dog of 4 years and 2.5 kg").fill() == {
        "a": 4,
        "b": 2.5,
        "kind": "dog",
        "note": "a dog of 4 years and 2.5 kg",
    }
    assert SchemaFiller({"type": "integer"}, "no numbers here").fill() == 3  # the word count


def test_optional_members_take_their_default():
    schema = {"type": "object", "properties": {"x": {"type": "string", "default": "d"}, "y": {"type": "string"}}}
    assert SchemaFiller(schema, "t").fill() == {"x": "d", "y": "t"}

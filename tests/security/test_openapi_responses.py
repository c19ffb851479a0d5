"""The documented ResponsesRequest schema (inference/openapi.py) agrees with the validator (inference/schema.py):
the same fields, and every enum value, bound, length and null the schema allows is accepted, the values just
outside are refused."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from gateway_project.api.errors import GatewayError
from inference.openapi import FIELD_SCHEMAS, REQUEST, RESPONSES_PATH_SCHEMA_REF
from inference.schema import CHECKERS, validate_body


def accepted(body: dict) -> bool:
    try:
        validate_body(body)
    except GatewayError as error:
        assert error.status == 400
        return False
    return True


def test_one_documented_property_per_checker():
    assert set(FIELD_SCHEMAS) == set(CHECKERS)
    assert (
        REQUEST["additionalProperties"] is True
    )  # forwarded to a same-format upstream (tests/inference/test_members.py)
    assert not accepted({"not_a_parameter": 1})  # the strict validation (presets) refuses it
    assert accepted(dict(REQUEST["example"]))


@pytest.mark.parametrize("name", sorted(FIELD_SCHEMAS))
def test_documented_constraints_match_the_validator(name):
    schema = FIELD_SCHEMAS[name]
    if schema.get("nullable"):
        assert accepted({name: None}), f"{name}: null is documented"
    for value in schema.get("enum", []):
        assert accepted({name: value}), f"{name}: {value!r} is documented"
    if schema.get("type") == "string" and "enum" in schema:
        assert not accepted({name: "not-one-of-them"})
    for bound in ("minimum", "maximum"):
        if bound in schema:
            limit = schema[bound]
            outside = limit - 1 if bound == "minimum" else limit + 1
            assert accepted({name: limit}), f"{name}: {bound} {limit}"
            assert not accepted({name: outside}), f"{name}: {outside} is outside"
    if "maxLength" in schema:
        assert accepted({name: "x" * schema["maxLength"]})
        assert not accepted({name: "x" * (schema["maxLength"] + 1)})
    if schema.get("type") == "array" and "enum" in schema.get("items", {}):
        assert accepted({name: list(schema["items"]["enum"])})
        assert not accepted({name: [{"an": "object"}]})  # never a 500


@pytest.mark.django_db
def test_the_served_document_has_the_operation():
    document = APIClient().get("/api/v1/openapi.json").json()
    operation = document["paths"]["/api/v1/responses"]["post"]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {"$ref": RESPONSES_PATH_SCHEMA_REF}
    assert document["components"]["schemas"]["ResponsesRequest"]["properties"].keys() == CHECKERS.keys()
    assert {"200", "400", "401", "402", "404", "413", "429", "502", "524"} <= operation["responses"].keys()

"""The typed Responses request (inference/responses_request.py) and the rules giving its 400 messages agree: for
every member and a spread of values, the fast path (msgspec's conversion, then the members' flagged rules) accepts
exactly what the member's rule accepts, so a body is never valid on one path and refused on the other."""

from __future__ import annotations

import msgspec
import pytest

from gateway_project.api.errors import GatewayError
from inference import schema
from inference.responses_request import ResponsesRequest

VALUES = [
    None, True, False, 0, 1, -1, 2.5, -3, 31, 300, "", " ", "x", "auto", "low", "price", "ephemeral", "middle-out",
    [], [""], ["x"], ["text"], ["reasoning.encrypted_content"], [1], [{}], [{"type": ""}], [{"type": "function"}],
    [{"type": "function", "name": "f"}], [{"id": "web"}], [{"id": "nope"}],
    [{"type": "step_count_is", "step_count": 1}],
    [{"type": "step_count_is", "step_count": 0}], [{"type": "reasoning", "content": None}],
    [{"role": "user", "content": [{"type": "input_text", "text": 1}]}], [{"role": "user", "content": [{"type": "x"}]}],
    [{"id": "web", "max_results": "x"}], [{"id": "file-parser", "pdf": {"engine": "nope"}}],
    [{"role": "user", "content": "hi"}], [{"role": "robot"}],
    {}, {"a": "b"}, {"a": 1}, {"a[": "b"}, {"type": "ephemeral"}, {"type": "other"}, {"type": "ephemeral", "ttl": 5},
    {"effort": "low"}, {"effort": "huge"}, {"max_tokens": -1}, {"enabled": None}, {"format": {"type": "text"}},
    {"format": {"type": "json_schema", "name": "n", "schema": {}}}, {"format": {"type": "json_schema"}},
    {"verbosity": "loud"}, {"include_usage": True}, {"include_obfuscation": True}, {"include": "yes"},
    {"id": "p"}, {"id": ""}, {"mode": "explicit"}, {"mode": None}, {"sort": "price"}, {"sort": "latency"},
    {"only": ["a"]}, {"only": None}, {"max_price": {"prompt": 1}}, {"max_price": {"image": 1}}, {"zdr": "yes"},
    {"quantizations": ["fp8"]}, {"echo_upstream_body": 1}, {"type": "function"}, {"x": [1, "a"]}, {"x": True},
]  # fmt: skip


def fast_path_accepts(name, value) -> bool:
    try:
        msgspec.convert({name: value}, ResponsesRequest, strict=True)
        if name in schema.RULES:
            schema.RULES[name](name, value)
    except (msgspec.ValidationError, GatewayError):
        return False
    return True


def rule_accepts(name, value) -> bool:
    try:
        schema.CHECKERS[name](name, value)
    except GatewayError:
        return False
    return True


@pytest.mark.parametrize("name", sorted(schema.CHECKERS))
def test_the_type_and_the_rules_accept_the_same_values(name):
    disagreements = [value for value in VALUES if fast_path_accepts(name, value) != rule_accepts(name, value)]
    assert disagreements == [], f"{name}: the type and the rule disagree on {disagreements}"


def test_an_invalid_body_is_a_400_naming_the_first_wrong_member_in_body_order():
    with pytest.raises(GatewayError) as caught:
        schema.validate_body({"model": "a/b", "input": "hi", "store": True, "temperature": 3})
    assert (caught.value.status, caught.value.message) == (400, "store: must be false: the API stores no responses")
    with pytest.raises(GatewayError) as caught:
        schema.validate_body({"temperature": 3, "input": [{"role": "robot"}]})
    assert caught.value.message == "temperature: must be between 0 and 2"

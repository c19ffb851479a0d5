"""/chat/completions and /messages hold their raw bodies to the same two rules as /responses (at most 64 levels,
no NUL: gateway_project/json_input.py), before routing: a 400 in the format's envelope naming the field, no
Generation row, nothing sent upstream. Over the real loopback server, on the echo model."""

from __future__ import annotations

import pytest

from gateway_project.json_input import MAX_JSON_DEPTH
from tests.inference.conftest import generations
from tests.reliability.test_hostile_json import Deep, encode

pytestmark = pytest.mark.django_db(transaction=True)

DEEP = Deep(300)
CHAT = {"model": "echo/echo-1", "messages": [{"role": "user", "content": "hi"}]}
MESSAGES = {"model": "echo/echo-1", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}


def deep_field(prefix: str, levels_used: int) -> str:
    return prefix + ".a" * (MAX_JSON_DEPTH - levels_used)


CASES = [
    (
        "/chat/completions",
        {**CHAT, "tools": [{"type": "function", "function": {"name": "f", "parameters": DEEP}}]},
        deep_field("tools[0].function.parameters", 4),
        "nested too deeply",
    ),
    (
        "/chat/completions",
        {**CHAT, "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": DEEP}}},
        deep_field("response_format.json_schema.schema", 3),
        "nested too deeply",
    ),
    ("/chat/completions", {**CHAT, "metadata": {"k": "v\u0000"}}, "metadata.k", "NUL"),
    ("/chat/completions", {**CHAT, "metadata": {"k\u0000": "v"}}, "metadata.k\\u0000", "NUL"),
    (
        "/chat/completions",
        {**CHAT, "messages": [{"role": "user", "content": "hi\u0000"}]},
        "messages[0].content",
        "NUL",
    ),
    (
        "/messages",
        {**MESSAGES, "tools": [{"name": "f", "input_schema": DEEP}]},
        deep_field("tools[0].input_schema", 3),
        "nested too deeply",
    ),
    ("/messages", {**MESSAGES, "metadata": {"user_id": "u\u0000"}}, "metadata.user_id", "NUL"),
    ("/messages", {**MESSAGES, "system": "be brief\u0000"}, "system", "NUL"),
    ("/messages", {**MESSAGES, "system": [{"type": "text", "text": "x\u0000"}]}, "system[0].text", "NUL"),
]


@pytest.mark.parametrize(("path", "body", "field", "words"), CASES)
def test_deep_or_nul_bodies_are_refused_on_every_ingress(http, path, body, field, words):
    response = http.post(path, content=encode(body), headers={"content-type": "application/json"})
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["metadata"]["field"] == field, error
    assert error["message"].startswith(field) and words in error["message"], error
    if path == "/messages":
        assert response.json()["type"] == "error" and error["type"] == "invalid_request_error"
    assert generations(expected=0) == []


def test_a_deep_but_allowed_schema_is_answered(http):
    tool = {"type": "function", "function": {"name": "f", "parameters": Deep(MAX_JSON_DEPTH - 5)}}
    response = http.post("/chat/completions", content=encode({**CHAT, "tools": [tool]}))
    assert response.status_code == 200, response.text

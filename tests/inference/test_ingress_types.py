"""The typed Chat Completions and Messages requests (inference/chat_request_type.py, messages_request_type.py)
validate the bodies of /chat/completions and /messages: a body the type refuses gets the 400 of the member's own
rule (the API's message naming the member), never msgspec's message; a body the type accepts is translated
without the member being checked again by hand."""

from __future__ import annotations

import msgspec
import pytest

from gateway_project.api.errors import GatewayError
from inference.chat_request_type import ChatRequest
from inference.ingress import chat_request, messages_request
from inference.messages_request_type import MessagesRequest
from tests.inference.test_responses_type import VALUES

MORE = [
    5, 21, 101, -101, 1024, 2048, "fast", "standard", "medium", "required", "json_object", ["a"] * 5,
    {"a": 200}, {"a": True}, {"type": "json_object"}, {"type": "json_schema", "json_schema": {"name": "x"}},
    {"exclude": True}, {"user_id": "u"}, {"user_id": 1}, {"user_id": "u" * 300}, {"edits": []}, {"edits": None},
    {"type": "enabled", "budget_tokens": 2000}, {"type": "adaptive"}, {"type": "tool", "name": "f"},
    [{"role": "function", "content": "x"}], [{"role": "tool", "content": "x", "tool_call_id": None}],
    [{"role": "assistant", "tool_calls": None, "content": "x"}], [{"role": "user"}], [{"role": "user", "content": 3}],
    [{"type": "function", "function": {"name": "f"}}], [{"name": "f", "input_schema": {}}],
    {"effort": "low", "format": {"type": "json_schema", "schema": {}}},
]  # fmt: skip
FORMATS = {
    "chat": (chat_request.to_canonical, ChatRequest, {"model": "a/b", "messages": [{"role": "user", "content": "hi"}]}),
    "messages": (
        messages_request.to_canonical,
        MessagesRequest,
        {"model": "a/b", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]},
    ),
}
MSGSPEC_WORDING = ("expected `", "object missing required field", "object contains unknown field", "invalid enum")


def outcome(convert, body):
    try:
        convert(body)
    except GatewayError as error:
        return error.message
    return None


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_a_value_the_type_refuses_gets_the_members_own_400(fmt):
    convert, struct, base = FORMATS[fmt]
    leaked = []
    for field in msgspec.structs.fields(struct):
        for value in VALUES + MORE:
            body = {**base, field.name: value}
            try:
                msgspec.convert(body, struct, strict=True)
                refused_by_type = False
            except msgspec.ValidationError:
                refused_by_type = True
            message = outcome(convert, body)
            if refused_by_type and (message is None or message.split(": ", 1)[-1].lower().startswith(MSGSPEC_WORDING)):
                leaked.append((field.name, value, message))
    assert leaked == [], f"{fmt}: refused by the type without the member's own 400: {leaked[:5]}"


def test_the_first_wrong_member_is_named_in_the_translations_order():
    body = {"model": "a/b", "messages": [{"role": "user", "content": "hi"}], "top_logprobs": 2, "seed": "x"}
    assert outcome(chat_request.to_canonical, body) == "top_logprobs: needs logprobs: true"
    body = {"model": "a/b", "messages": "hi", "n": 2}
    assert outcome(chat_request.to_canonical, body) == "messages: must be an array"
    body = {"model": "a/b", "messages": [{"role": "user", "content": "hi"}], "speed": 2, "service_tier": "x"}
    assert (
        outcome(messages_request.to_canonical, body) == "max_tokens: is required and must be an integer of at least 1"
    )
    body = {**FORMATS["messages"][2], "speed": 2, "service_tier": "x"}
    assert outcome(messages_request.to_canonical, body) == "service_tier: is not supported: only auto"

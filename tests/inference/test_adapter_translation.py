"""The pure translation functions of the adapters: Responses requests to each wire format and answers back."""

from __future__ import annotations

import re

import pytest

from inference.providers import anthropic, openai_chat, openai_responses
from inference.providers.anthropic_parse import MessagesStreamParser
from inference.providers.anthropic_parse import parse_response as parse_messages
from inference.providers.base import (
    FunctionCallDelta,
    FunctionCallDone,
    ProviderError,
    ProviderErrorKind,
    ReasoningDelta,
    TextDelta,
)
from inference.providers.openai_chat_parse import ChatStreamParser
from inference.providers.openai_chat_parse import parse_response as parse_chat
from inference.providers.sse import ServerSentEvent

TOOL = {"type": "function", "name": "lookup", "description": "Find", "parameters": {"type": "object"}}
PNG = "data:image/png;base64,iVBORw0KGgo="
HISTORY = [
    {"role": "developer", "content": "Use tools."},
    {
        "type": "message",
        "role": "user",
        "content": [
            {"type": "input_text", "text": "What is this?"},
            {"type": "input_image", "image_url": PNG, "detail": "low"},
        ],
    },
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
    {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": '{"q": "a"}'},
    {"type": "function_call", "call_id": "call_2", "name": "lookup", "arguments": '{"q": "b"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "A"},
    {"type": "function_call_output", "call_id": "call_2", "output": [{"type": "input_text", "text": "B"}]},
    {"type": "reasoning", "id": "rs_1", "summary": []},
]


def sse(data: str) -> ServerSentEvent:
    return ServerSentEvent("", data)


# --- openai-chat --------------------------------------------------------------------------------------------


def test_chat_translates_history_with_images_and_tool_calls_both_ways():
    body = openai_chat.build_body({"instructions": "Be brief.", "input": HISTORY}, "m", False)
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Use tools."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": PNG, "detail": "low"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "a"}'}},
                {"id": "call_2", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "b"}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "A"},
        {"role": "tool", "tool_call_id": "call_2", "content": "B"},
    ]


def test_chat_options_format_reasoning_and_max_tokens():
    request = {
        "input": "hi",
        "tools": [TOOL, {"type": "service:web_search"}],
        "tool_choice": {"type": "function", "name": "lookup"},
        "parallel_tool_calls": False,
        "text": {"format": {"type": "json_schema", "name": "r", "schema": {"type": "object"}, "strict": True}},
        "reasoning": {"effort": "max"},
        "max_output_tokens": 100,
        "top_logprobs": 2,
        "presence_penalty": 0.1,
        "top_k": 5,
        "safety_identifier": "hashed",
    }
    vendor = openai_chat.build_body(request, "m", True)
    assert vendor["tools"] == [
        {"type": "function", "function": {"name": "lookup", "description": "Find", "parameters": {"type": "object"}}}
    ]
    assert vendor["tool_choice"] == {"type": "function", "function": {"name": "lookup"}}
    assert vendor["parallel_tool_calls"] is False
    assert vendor["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "r", "schema": {"type": "object"}, "strict": True},
    }
    assert vendor["reasoning_effort"] == "high"
    assert (vendor["max_tokens"], vendor["logprobs"], vendor["top_logprobs"]) == (100, True, 2)
    assert (vendor["presence_penalty"], vendor["top_k"], vendor["user"]) == (0.1, 5, "hashed")
    assert vendor["stream_options"] == {"include_usage": True}
    # api.openai.com has no top_k: refused (a 400 naming it), not dropped
    with pytest.raises(ProviderError, match="top_k is not supported"):
        openai_chat.build_body(request, "m", False, openai=True)
    request.pop("top_k")
    openai = openai_chat.build_body(request | {"text": {"format": {"type": "json_object"}}}, "m", False, openai=True)
    assert openai["max_completion_tokens"] == 100 and "max_tokens" not in openai
    assert openai["response_format"] == {"type": "json_object"}
    assert openai["safety_identifier"] == "hashed" and "stream" not in openai


def test_chat_refuses_what_it_cannot_translate():
    with pytest.raises(ProviderError) as caught:
        openai_chat.build_body({"input": "x", "tools": [{"type": "file_search"}]}, "m", False)
    assert caught.value.kind is ProviderErrorKind.BAD_REQUEST


def test_chat_response_with_tool_calls_and_usage():
    result = parse_chat(
        {
            "id": "c1",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "ok",
                        "tool_calls": [
                            {"id": "t1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
                        ],
                    },
                }
            ],
            "usage": {
                "prompt_tokens": 10,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 3},
                "completion_tokens_details": {"reasoning_tokens": 1},
            },
        }
    )
    assert [i["type"] for i in result.output] == ["message", "function_call"]
    assert (result.output[1]["call_id"], result.output[1]["name"]) == ("t1", "lookup")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (10, 5)
    assert (result.usage.cached_tokens, result.usage.reasoning_tokens) == (3, 1)
    assert result.finish_reason == "tool_calls" and result.text == "ok"


def test_chat_stream_assembles_parallel_tool_call_deltas():
    parser = ChatStreamParser()
    chunks = [
        '{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"a",'
        '"function":{"name":"f","arguments":"{\\"x\\""}}]}}]}',
        '{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b",'
        '"function":{"name":"g","arguments":"{}"}}]}}]}',
        '{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":": 1}"}}]}}]}',
        '{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}',
    ]
    events = [event for chunk in chunks for event in parser.feed(sse(chunk))]
    pieces = [
        FunctionCallDelta("a", "f", '{"x"'),
        FunctionCallDelta("b", "g", "{}"),
        FunctionCallDelta("a", "f", ": 1}"),
    ]
    assert events == [*pieces, FunctionCallDone("a", "f", '{"x": 1}'), FunctionCallDone("b", "g", "{}")]
    assert parser.feed(sse("[DONE]")) == []
    assert [i["call_id"] for i in parser.finish().output] == ["a", "b"]


def test_chat_error_inside_a_200_body_maps_its_kind():
    with pytest.raises(ProviderError) as caught:
        parse_chat({"error": {"message": "Overloaded", "type": "overloaded_error"}})
    assert caught.value.kind is ProviderErrorKind.OVERLOADED


def test_chat_stream_error_chunk_maps_its_kind():
    with pytest.raises(ProviderError) as caught:
        ChatStreamParser().feed(sse('{"error":{"message":"slow down","type":"rate_limit_exceeded"}}'))
    assert caught.value.kind is ProviderErrorKind.RATE_LIMITED


# --- anthropic-messages -------------------------------------------------------------------------------------


def test_anthropic_translates_history_with_images_and_tool_calls_both_ways():
    body, betas = anthropic.build_body({"instructions": "Be brief.", "input": HISTORY}, "claude", False)
    assert body["system"] == "Be brief.\n\nUse tools."
    assert body["max_tokens"] == 4096 and betas == []
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"q": "a"}},
                {"type": "tool_use", "id": "call_2", "name": "lookup", "input": {"q": "b"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "A"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "B"},
            ],
        },
    ]


def test_anthropic_leaves_out_empty_text():
    body, _ = anthropic.build_body(
        {"input": [{"role": "assistant", "content": ""}, {"role": "user", "content": "x"}]}, "claude", False
    )
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "x"}]}]


def test_anthropic_image_url_tools_format_and_cache_control():
    request = {
        "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://x.test/a.png"}]}],
        "tools": [TOOL],
        "tool_choice": "required",
        "parallel_tool_calls": False,
        "text": {"format": {"type": "json_schema", "name": "r", "schema": {"type": "object"}}},
        "cache_control": {"type": "ephemeral"},
        "temperature": 0.9,
        "user": "u1",
    }
    body, betas = anthropic.build_body(request, "claude", True)
    block = body["messages"][0]["content"][0]
    assert block == {
        "type": "image",
        "source": {"type": "url", "url": "https://x.test/a.png"},
        "cache_control": {"type": "ephemeral"},
    }
    assert body["tools"] == [{"name": "lookup", "description": "Find", "input_schema": {"type": "object"}}]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["output_format"] == {"type": "json_schema", "schema": {"type": "object"}}
    assert betas == ["structured-outputs-2025-11-13"]
    assert (body["temperature"], body["metadata"], body["stream"]) == (0.9, {"user_id": "u1"}, True)


def test_anthropic_refuses_what_it_cannot_honour():
    """Was: temperature clamped to 1, thinking silently off under a small cap or a forced tool, item_reference
    dropped (routing keeps such requests from Anthropic endpoints: inference.routing_members)."""
    cases = [
        ({"temperature": 1.7}, "temperature above 1"),
        ({"reasoning": {"effort": "high"}, "max_output_tokens": 800}, "reasoning with max_output_tokens 800"),
        ({"reasoning": {"effort": "high"}, "tools": [TOOL], "tool_choice": "required"}, "reasoning with a forced tool"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input item type 'item_reference'"),
    ]
    for extra, named in cases:
        with pytest.raises(ProviderError, match=re.escape(named)):
            anthropic.build_body({"input": "x", **extra}, "claude", False)


@pytest.mark.parametrize(
    ("reasoning", "max_output", "thinking", "max_tokens"),
    [
        ({"effort": "high"}, None, {"type": "enabled", "budget_tokens": 16384}, 4096 + 16384),
        ({"effort": "low"}, 10000, {"type": "enabled", "budget_tokens": 2048}, 10000),
        ({"effort": "high"}, 5000, {"type": "enabled", "budget_tokens": 4999}, 5000),
        ({"enabled": True}, None, {"type": "enabled", "budget_tokens": 8192}, 4096 + 8192),
        ({"effort": "none"}, None, None, 4096),
    ],
)
def test_anthropic_reasoning_becomes_thinking(reasoning, max_output, thinking, max_tokens):
    request = {"input": "think", "reasoning": reasoning, "temperature": 0.3, "max_output_tokens": max_output}
    body, _ = anthropic.build_body(request, "claude", False)
    assert body.get("thinking") == thinking
    assert body["max_tokens"] == max_tokens
    assert ("temperature" in body) is (thinking is None)


def test_anthropic_response_and_stream_parse_tool_use_and_stop_reason():
    result = parse_messages(
        {
            "id": "m1",
            "type": "message",
            "stop_reason": "max_tokens",
            "content": [
                {"type": "thinking", "thinking": "..."},
                {"type": "text", "text": "Hi"},
                {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"q": 1}},
            ],
            "usage": {
                "input_tokens": 5,
                "cache_read_input_tokens": 2,
                "cache_creation_input_tokens": 1,
                "output_tokens": 9,
            },
        }
    )
    assert (result.status, result.incomplete_reason, result.text) == ("incomplete", "max_output_tokens", "Hi")
    assert [item["type"] for item in result.output] == ["reasoning", "message", "function_call"]
    assert result.output[0]["content"] == [{"type": "reasoning_text", "text": "..."}]
    assert result.output[2]["arguments"] == '{"q": 1}'
    assert (result.usage.input_tokens, result.usage.cached_tokens, result.usage.output_tokens) == (8, 2, 9)

    parser = MessagesStreamParser()
    frames = [
        '{"type":"message_start","message":{"id":"m2","usage":{"input_tokens":3,"cache_read_input_tokens":5,'
        '"output_tokens":1}}}',
        '{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}',
        '{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}',
        '{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}',
        '{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Yo"}}',
        '{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}',
        '{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\\"a\\":"}}',
        '{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":" 2}"}}',
        '{"type":"content_block_stop","index":2}',
        '{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"input_tokens":3,"output_tokens":12}}',
        '{"type":"message_stop"}',
    ]
    events = [event for frame in frames for event in parser.feed(sse(frame))]
    pieces = [FunctionCallDelta("t", "f", ""), FunctionCallDelta("t", "f", '{"a":'), FunctionCallDelta("t", "f", " 2}")]
    assert events == [ReasoningDelta("hmm"), TextDelta("Yo"), *pieces, FunctionCallDone("t", "f", '{"a": 2}')]
    final = parser.finish()
    assert (final.upstream_id, final.finish_reason) == ("m2", "tool_calls")
    assert (final.usage.input_tokens, final.usage.cached_tokens, final.usage.output_tokens) == (8, 5, 12)


def test_anthropic_stream_without_message_stop_is_server():
    parser = MessagesStreamParser()
    parser.feed(sse('{"type":"message_start","message":{"id":"m","usage":{}}}'))
    with pytest.raises(ProviderError) as caught:
        parser.finish()
    assert caught.value.kind is ProviderErrorKind.SERVER


# --- openai-responses ---------------------------------------------------------------------------------------


def test_responses_pass_through_removes_gateway_fields():
    request = {
        "model": "openai/gpt",
        "models": ["x"],
        "provider": {"order": ["a"]},
        "plugins": [],
        "route": "fallback",
        "session_id": "s",
        "trace": {},
        "debug": {"echo_upstream_body": True},
        "stop_server_tools_when": [{}],
        "input": [
            {"role": "user", "content": [{"type": "input_text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}
        ],
        "tools": [TOOL | {"defer_loading": False}, {"type": "service:web_search"}],
        "reasoning": {"effort": "max", "summary": "auto", "enabled": True},
        "service_tier": "fast",
        "safety_identifier": "hashed",
        "metadata": {"k": "v"},
        "store": True,
        "temperature": None,
        "text": {"format": {"type": "json_schema", "name": "r", "schema": {}}},
    }
    # The Responses API has no top_k: refused (a 400 naming it), not dropped
    with pytest.raises(ProviderError, match="top_k is not supported"):
        openai_responses.build_body(request | {"top_k": 3}, "gpt-4o", True)
    body = openai_responses.build_body(request, "gpt-4o", True)
    assert body == {
        "model": "gpt-4o",
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "tools": [TOOL],
        "reasoning": {"effort": "xhigh", "summary": "auto"},
        "service_tier": "priority",
        "safety_identifier": "hashed",
        "metadata": {"k": "v"},
        "text": {"format": {"type": "json_schema", "name": "r", "schema": {}}},
        "store": False,
        "stream": True,
    }


def test_responses_parse_incomplete_and_failed():
    result = openai_responses.parse_response(
        {
            "id": "r",
            "status": "incomplete",
            "incomplete_details": {"reason": "max_output_tokens"},
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "Hel"}]}],
            "usage": {"input_tokens": 1, "output_tokens": 2},
        }
    )
    assert (result.status, result.incomplete_reason, result.finish_reason, result.text) == (
        "incomplete",
        "max_output_tokens",
        "length",
        "Hel",
    )
    with pytest.raises(ProviderError) as caught:
        openai_responses.parse_response(
            {"id": "r", "status": "failed", "output": [], "error": {"code": "rate_limit_exceeded", "message": "slow"}}
        )
    assert caught.value.kind is ProviderErrorKind.RATE_LIMITED

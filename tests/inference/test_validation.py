"""Every rule of the Responses request body: a 400 naming the field, and valid bodies pass."""

from __future__ import annotations

import pytest

from gateway_project.api.errors import GatewayError
from inference.plugins.registry import PLUGIN_IDS, load
from inference.schema import parse_body, validate_body

FN = {"type": "function", "name": "lookup", "parameters": {"type": "object"}}

INVALID = [
    ({"model": 5}, "model"),
    ({"model": ""}, "model"),
    ({"models": "a/b"}, "models"),
    ({"models": ["a/b", 3]}, "models[1]"),
    ({"metadata": {f"k{i}": "v" for i in range(17)}}, "metadata"),
    ({"metadata": {"k" * 65: "v"}}, "metadata." + "k" * 65),
    ({"metadata": {"a[0]": "v"}}, "metadata.a[0]"),
    ({"metadata": {"a]": "v"}}, "metadata.a]"),
    ({"metadata": {"k": "v" * 513}}, "metadata.k"),
    ({"metadata": {"k": 1}}, "metadata.k"),
    ({"metadata": ["k"]}, "metadata"),
    ({"session_id": "s" * 257}, "session_id"),
    ({"session_id": 5}, "session_id"),
    ({"user": "u" * 257}, "user"),
    ({"max_tool_calls": 31}, "max_tool_calls"),
    ({"max_tool_calls": -1}, "max_tool_calls"),
    ({"max_tool_calls": 2.5}, "max_tool_calls"),
    ({"stop_server_tools_when": []}, "stop_server_tools_when"),
    ({"stop_server_tools_when": {"type": "step_count_is"}}, "stop_server_tools_when"),
    ({"stop_server_tools_when": [{"type": "never"}]}, "stop_server_tools_when[0].type"),
    ({"stop_server_tools_when": [{"type": "step_count_is"}]}, "stop_server_tools_when[0].step_count"),
    ({"stop_server_tools_when": [{"type": "step_count_is", "step_count": 0}]}, "stop_server_tools_when[0].step_count"),
    (
        {"stop_server_tools_when": [{"type": "max_cost", "max_cost_in_dollars": "1"}]},
        "stop_server_tools_when[0].max_cost_in_dollars",
    ),
    ({"stop_server_tools_when": [{"type": "has_tool_call"}]}, "stop_server_tools_when[0].tool_name"),
    (
        {"stop_server_tools_when": [{"type": "max_tokens_used", "max_tokens": True}]},
        "stop_server_tools_when[0].max_tokens",
    ),
    ({"stop_server_tools_when": [{"type": "finish_reason_is", "reason": 3}]}, "stop_server_tools_when[0].reason"),
    ({"previous_response_id": "resp_123"}, "previous_response_id"),
    ({"store": True}, "store"),
    ({"store": "no"}, "store"),
    ({"service_tier": "gold"}, "service_tier"),
    ({"truncation": "middle"}, "truncation"),
    ({"route": "random"}, "route"),
    ({"include": ["everything"]}, "include[0]"),
    ({"include": "reasoning.encrypted_content"}, "include"),
    ({"modalities": ["text", "audio"]}, "modalities[1]"),
    ({"modalities": None}, "modalities"),
    ({"plugins": [{"id": "unknown"}]}, "plugins[0].id"),
    ({"plugins": [{"id": "auto-router", "enabled": "yes"}]}, "plugins[0].enabled"),
    ({"plugins": [{"id": "auto-router", "allowed_models": "a/*"}]}, "plugins[0].allowed_models"),
    ({"plugins": {"id": "web"}}, "plugins"),
    ({"tools": [{**FN, "defer_loading": True}]}, "tools[0].defer_loading"),
    ({"tools": [{**FN, "defer_loading": True}, {"type": "service:tool_search"}]}, "tools[0].defer_loading"),
    ({"tools": [{"type": "function"}]}, "tools[0].name"),
    ({"tools": [{"name": "x"}]}, "tools[0].type"),
    ({"tools": [{**FN, "parameters": "x"}]}, "tools[0].parameters"),
    ({"input": 5}, "input"),
    ({"input": [{"role": "robot", "content": "hi"}]}, "input[0].role"),
    ({"input": [{"role": "user", "content": 5}]}, "input[0].content"),
    ({"input": [{"role": "user", "content": [{"type": "input_text"}]}]}, "input[0].content[0].text"),
    ({"input": ["hi"]}, "input[0]"),
    ({"cache_control": {"type": "persistent"}}, "cache_control.type"),
    ({"cache_control": {"type": "ephemeral", "ttl": 5}}, "cache_control.ttl"),
    ({"debug": {"echo_upstream_body": "yes"}}, "debug.echo_upstream_body"),
    ({"reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ({"reasoning": {"summary": "long"}}, "reasoning.summary"),
    ({"reasoning": {"enabled": "true"}}, "reasoning.enabled"),
    ({"text": {"format": {"type": "xml"}}}, "text.format.type"),
    ({"text": {"verbosity": "loud"}}, "text.verbosity"),
    ({"tool_choice": "sometimes"}, "tool_choice"),
    ({"temperature": 3}, "temperature"),
    ({"temperature": "hot"}, "temperature"),
    ({"top_p": 1.5}, "top_p"),
    ({"top_k": None}, "top_k"),
    ({"top_k": 1.5}, "top_k"),
    ({"top_logprobs": 21}, "top_logprobs"),
    ({"max_output_tokens": 0}, "max_output_tokens"),
    ({"max_output_tokens": True}, "max_output_tokens"),
    ({"frequency_penalty": 5}, "frequency_penalty"),
    ({"presence_penalty": "x"}, "presence_penalty"),
    ({"parallel_tool_calls": "yes"}, "parallel_tool_calls"),
    ({"stream": None}, "stream"),
    ({"stream": "true"}, "stream"),
    ({"instructions": 1}, "instructions"),
    ({"prompt": {"variables": {}}}, "prompt.id"),
    ({"prompt_cache_options": {"mode": "auto"}}, "prompt_cache_options.mode"),
    ({"image_config": {"size": {"w": 1}}}, "image_config.size"),
    ({"provider": {"order": "openai"}}, "provider.order"),
    ({"provider": {"allow_fallbacks": "no"}}, "provider.allow_fallbacks"),
    ({"provider": {"data_collection": "maybe"}}, "provider.data_collection"),
    ({"provider": {"sort": "cheapest"}}, "provider.sort"),
    ({"provider": {"sort": {"by": "price", "partition": "all"}}}, "provider.sort.partition"),
    ({"provider": {"max_price": {"prompt": -1}}}, "provider.max_price.prompt"),
    ({"provider": {"favourite": "x"}}, "provider.favourite"),
    ({"trace": "t"}, "trace"),
    ({"background": True}, "background"),
    ({"stream_options": {"include_obfuscation": True}}, "stream_options.include_obfuscation"),
    ({"stream_options": {"chunk_size": 1}}, "stream_options.chunk_size"),
    ({"provider": {"quantizations": ["fp8"]}}, "provider.quantizations"),
    ({"provider": {"preferred_min_throughput": 10}}, "provider.preferred_min_throughput"),
    ({"provider": {"preferred_max_latency": 2}}, "provider.preferred_max_latency"),
    ({"provider": {"sort": "throughput"}}, "provider.sort"),
    ({"provider": {"sort": {"by": "latency"}}}, "provider.sort.by"),
    ({"provider": {"max_price": {"image": 0.01}}}, "provider.max_price.image"),
    ({"conversation": "conv_1"}, "conversation"),
    ({"messages": []}, "messages"),
]


@pytest.mark.parametrize(("body", "field"), INVALID, ids=[f for _, f in INVALID])
def test_invalid_field_is_named(body, field):
    with pytest.raises(GatewayError) as caught:
        validate_body({"model": "echo/echo-1", "input": "hi", **body})
    error = caught.value
    assert error.status == 400
    assert error.metadata == {"field": field}
    assert error.message.startswith(f"{field}: ")


VALID = {
    "model": "openai/gpt-4o-mini",
    "models": ["anthropic/claude-sonnet-4"],
    "input": [
        {"role": "system", "content": "Be brief."},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
        },
        {"type": "function_call_output", "call_id": "c1", "output": "42"},
    ],
    "instructions": None,
    "metadata": {"k" * 64: "v" * 512, **{f"k{i}": "v" for i in range(15)}},
    "session_id": "s" * 256,
    "user": "u" * 256,
    "max_tool_calls": 30,
    "stop_server_tools_when": [
        {"type": "step_count_is", "step_count": 3},
        {"type": "max_cost", "max_cost_in_dollars": 0.5},
        {"type": "has_tool_call", "tool_name": "lookup"},
        {"type": "max_tokens_used", "max_tokens": 1000},
        {"type": "finish_reason_is", "reason": "stop"},
    ],
    "previous_response_id": None,
    "store": False,
    "stream": False,
    "service_tier": "fast",
    "truncation": "auto",
    "route": "fallback",
    "include": ["reasoning.encrypted_content", "file_search_call.results"],
    "modalities": ["text", "image"],
    "plugins": [],
    "tools": [
        {**FN, "defer_loading": True},
        {"type": "service:tool_search"},
        {"type": "service:web_search", "parameters": {"max_results": 3}},
        {"type": "function", "name": "now"},
    ],
    "tool_choice": "auto",
    "text": {"format": {"type": "text"}, "verbosity": "low"},
    "reasoning": {"effort": "minimal", "summary": "auto", "enabled": True},
    "provider": {
        "order": ["openai"],
        "only": ["openai", "groq"],
        "ignore": [],
        "allow_fallbacks": False,
        "require_parameters": True,
        "data_collection": "deny",
        "zdr": False,
        "sort": {"by": "price", "partition": "none"},
        "max_price": {"prompt": 1, "completion": 2, "request": 0.01},
        "quantizations": [],
    },
    "cache_control": {"type": "ephemeral", "ttl": "5m"},
    "prompt_cache_options": {"mode": "explicit", "ttl": "1h"},
    "debug": {"echo_upstream_body": True},
    "temperature": 0.2,
    "top_p": 1,
    "top_k": 40,
    "top_logprobs": 0,
    "frequency_penalty": 0,
    "presence_penalty": -1.5,
    "parallel_tool_calls": True,
    "prompt": {"id": "pmpt_1", "variables": {"x": "y"}},
    "prompt_cache_key": "k",
    "safety_identifier": "user-1",
    "image_config": {"size": "1024x1024", "n": 1, "styles": ["a"]},
    "trace": {"trace_id": "t1", "custom": 1},
    "max_output_tokens": 100,
    "background": False,
}


def test_every_field_valid_passes():
    assert validate_body(dict(VALID)) == VALID


def test_malformed_json_and_non_object():
    with pytest.raises(GatewayError) as caught:
        parse_body(b"{not json")
    assert caught.value.status == 400 and caught.value.message.startswith("Malformed JSON body")
    with pytest.raises(GatewayError) as caught:
        parse_body(b"[1, 2]")
    assert caught.value.status == 400


def test_validation_is_fast():
    import time

    raw = b'{"model":"echo/echo-1","input":"Say hello","stream":false,"metadata":{"a":"b"}}'
    start = time.perf_counter()
    for _ in range(10_000):
        parse_body(raw)
    per_call_us = (time.perf_counter() - start) / 10_000 * 1e6
    assert per_call_us < 50, per_call_us


# Plugin and server-tool kinds this gateway does not implement are refused, never accepted and ignored.
UNSUPPORTED_PLUGINS = sorted(PLUGIN_IDS - load().keys())


@pytest.mark.parametrize("plugin_id", UNSUPPORTED_PLUGINS)
def test_unsupported_plugin_is_refused_naming_it(plugin_id):
    with pytest.raises(GatewayError) as caught:
        validate_body({"model": "a/b", "plugins": [{"id": plugin_id}]})
    error = caught.value
    assert error.status == 400
    assert error.metadata["field"] == "plugins[0].id"
    assert f"plugin '{plugin_id}' is not supported yet" in error.message


@pytest.mark.parametrize("kind", ["service:code_interpreter", "service:image_generation"])
def test_unsupported_server_tool_is_refused_naming_it(kind):
    with pytest.raises(GatewayError) as caught:
        validate_body({"model": "a/b", "tools": [FN, {"type": kind}]})
    assert caught.value.status == 400 and caught.value.metadata["field"] == "tools[1].type"
    assert f"server tool '{kind}' is not supported yet" in caught.value.message


def test_plugin_enabled_must_be_boolean():
    with pytest.raises(GatewayError) as caught:
        validate_body({"model": "a/b", "plugins": [{"id": "fusion", "analysis_models": ["a/b"], "enabled": "no"}]})
    assert caught.value.metadata["field"] == "plugins[0].enabled"

"""POST /api/v1/messages with the official anthropic SDK, unmodified, over the loopback server: against an
OpenAI-chat, an OpenAI-responses and an Anthropic-format fake upstream, `messages.create` and
`messages.stream` with text and tool use, tool results, thinking, typed exceptions, and the Generation row."""

from __future__ import annotations

import json

import anthropic
import httpx
import pytest

from tests.inference.conftest import add_endpoint, generations, wait_idle

FORMATS = ["openai-chat", "openai-responses", "anthropic-messages"]
TEXT = "Hello from the fake upstream."
KEY = "sk-platform-messages-0123456789"
TOOL = {
    "name": "get_weather",
    "description": "Weather of a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


@pytest.fixture
def claude(gateway_server, org, fake_upstream, transactional_db, monkeypatch):
    """`(client, add)`: the anthropic SDK on the gateway, and `add(api_format, upstream_model)` → a model slug."""
    from inference.routing import clear_caches

    clear_caches()
    monkeypatch.setenv("FAKE_PROVIDER_KEY", KEY)

    def add(api_format: str, upstream_model: str = "fake-model") -> str:
        slug = f"fake/{api_format}-{upstream_model}"
        add_endpoint(
            slug,
            f"fake-{api_format}",
            api_format=api_format,
            base_url=fake_upstream.base_url,
            api_key_env="FAKE_PROVIDER_KEY",
            upstream_model=upstream_model,
        )
        clear_caches()
        return slug

    client = anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)
    yield client, add
    wait_idle()


@pytest.mark.parametrize("api_format", FORMATS)
def test_messages_create(claude, fake_upstream, api_format):
    client, add = claude
    model = add(api_format)
    message = client.messages.create(
        model=model,
        max_tokens=99,
        system=[{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
        messages=[{"role": "user", "content": "Say hello"}],
        extra_body={"temperature": 0.5},  # this SDK version no longer lists the sampling parameters
        stop_sequences=["END"] if api_format != "openai-responses" else anthropic.omit,
    )
    assert (message.type, message.role, message.model) == ("message", "assistant", model)
    assert [b.type for b in message.content] == ["text"] and message.content[0].text == TEXT
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.cache_read_input_tokens, message.usage.output_tokens) == (8, 4, 7)
    assert message.usage.model_extra["cost"] > 0
    seen = fake_upstream.last
    if api_format == "anthropic-messages":
        assert seen.body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
        assert (seen.body["max_tokens"], seen.body["stop_sequences"]) == (99, ["END"])
    elif api_format == "openai-chat":
        assert seen.body["messages"][0] == {"role": "system", "content": "Be brief."}
        assert (seen.body["max_tokens"], seen.body["stop"]) == (99, ["END"])
    else:
        assert seen.body["input"][0]["role"] == "system" and seen.body["max_output_tokens"] == 99
    (row,) = generations(1)
    assert (row.ingress_format, row.status, row.streamed) == ("messages", "completed", False)
    assert (row.input_tokens, row.cached_tokens, row.output_tokens) == (12, 4, 7)
    assert message.id == f"msg_{row.id.hex}"


@pytest.mark.parametrize("api_format", FORMATS)
def test_messages_stream_text(claude, fake_upstream, api_format):
    client, add = claude
    model = add(api_format)
    with client.messages.stream(model=model, max_tokens=50, messages=[{"role": "user", "content": "Hi"}]) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert "content_block_start" in events and "content_block_stop" in events and "message_delta" in events
    assert final.content[0].text == TEXT and final.stop_reason == "end_turn"
    assert (final.usage.output_tokens, final.usage.input_tokens, final.usage.cache_read_input_tokens) == (7, 8, 4)
    (row,) = generations(1)
    assert (row.ingress_format, row.streamed, row.output_tokens) == ("messages", True, 7)


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("api_format", FORMATS)
def test_tool_use_round_trip(claude, fake_upstream, api_format, stream):
    client, add = claude
    model = add(api_format, "tool-call")
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    if stream:
        with client.messages.stream(model=model, max_tokens=50, messages=messages, tools=[TOOL]) as events:
            kinds = [e.delta.type for e in events if e.type == "content_block_delta"]
            message = events.get_final_message()
        assert "input_json_delta" in kinds
    else:
        message = client.messages.create(model=model, max_tokens=50, messages=messages, tools=[TOOL])
    assert message.stop_reason == "tool_use"
    (tool_use,) = [b for b in message.content if b.type == "tool_use"]
    assert (tool_use.name, tool_use.input) == ("get_weather", {"city": "Paris"})

    model_text = add(api_format)
    follow_up = [
        *messages,
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in message.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": tool_use.id, "content": "18 degrees and sunny"}],
        },
    ]
    answer = client.messages.create(model=model_text, max_tokens=50, messages=follow_up, tools=[TOOL])
    assert answer.content[0].text == TEXT
    seen = fake_upstream.last.body
    if api_format == "anthropic-messages":
        assert seen["messages"][1]["content"][-1]["type"] == "tool_use"
        assert seen["messages"][2]["content"][0] == {
            "type": "tool_result",
            "tool_use_id": tool_use.id,
            "content": "18 degrees and sunny",
        }
    elif api_format == "openai-chat":
        assert seen["messages"][1]["tool_calls"][0]["id"] == tool_use.id
        assert seen["messages"][2] == {"role": "tool", "tool_call_id": tool_use.id, "content": "18 degrees and sunny"}
    else:
        assert [i.get("type") for i in seen["input"][-2:]] == ["function_call", "function_call_output"]
    rows = generations(2)
    assert [r.ingress_format for r in rows] == ["messages", "messages"] and rows[0].tool_calls == 1


def test_thinking_tool_choice_and_images_reach_an_anthropic_upstream(claude, fake_upstream):
    client, add = claude
    model = add("anthropic-messages")
    image = {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}
    client.messages.create(
        model=model,
        max_tokens=4000,
        thinking={"type": "enabled", "budget_tokens": 2000},
        tools=[{**TOOL, "cache_control": {"type": "ephemeral"}}],
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
        metadata={"user_id": "user-7"},
        messages=[{"role": "user", "content": [{"type": "text", "text": "What?"}, {"type": "image", "source": image}]}],
        extra_headers={"anthropic-beta": "interleaved-thinking-2025-05-14"},
    )
    seen = fake_upstream.last
    assert seen.body["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert seen.body["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    assert seen.body["tools"][0]["cache_control"] == {"type": "ephemeral"}
    assert seen.body["messages"][0]["content"][1] == {"type": "image", "source": image}
    assert seen.body["metadata"]["user_id"] and seen.body["metadata"]["user_id"] != "user-7"  # hashed
    assert "interleaved-thinking-2025-05-14" in seen.headers["anthropic-beta"]


def test_thinking_becomes_reasoning_effort_on_a_chat_upstream(claude, fake_upstream):
    client, add = claude
    model = add("openai-chat")
    client.messages.create(
        model=model,
        max_tokens=9000,
        thinking={"type": "enabled", "budget_tokens": 8000},
        messages=[{"role": "user", "content": "Think"}],
    )
    assert fake_upstream.last.body["reasoning_effort"] == "medium"


def test_bad_key_raises_authentication_error_with_our_message(gateway_server, echo_catalog):
    client = anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.AuthenticationError) as caught:
        client.messages.create(model="echo/echo-1", max_tokens=10, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == 401
    assert caught.value.body["type"] == "error" and caught.value.body["error"]["type"] == "authentication_error"
    assert caught.value.api_message == caught.value.body["error"]["message"]
    wait_idle()


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"temperature": 1.5}, "temperature"),
        ({"top_k": -1}, "top_k"),
        ({"mcp_servers": []}, "mcp_servers"),
        ({"tools": [{"type": "code_execution_20250522", "name": "code_execution"}]}, "tools[0].type"),
        ({"metadata": {"user_id": "u", "team": "x"}}, "metadata.team"),
        ({"thinking": {"type": "enabled", "budget_tokens": 100}}, "thinking.budget_tokens"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role"),
        ({"workspace_id": "w"}, "workspace_id"),
    ],
)
def test_bad_request_raises_bad_request_error_naming_the_field(claude, extra, field):
    client, _ = claude
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.create(
            model="echo/echo-1", max_tokens=10, messages=[{"role": "user", "content": "hi"}], extra_body=extra
        )
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert caught.value.api_message.startswith(f"{field}: ")


def test_missing_max_tokens_is_400_and_unknown_model_is_typed(gateway_server, org, echo_catalog):
    with httpx.Client(base_url=f"{gateway_server.url}/api", timeout=30) as http:
        response = http.post(
            "/v1/messages",
            json={"model": "echo/echo-1", "messages": [{"role": "user", "content": "hi"}]},
            headers={"x-api-key": org.inference_key, "anthropic-version": "2023-06-01"},
        )
    assert response.status_code == 400
    assert response.json() == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": "max_tokens: is required and must be an integer of at least 1",
            "metadata": {"field": "max_tokens"},
        },
    }
    client = anthropic.Anthropic(base_url=f"{gateway_server.url}/api", api_key=org.inference_key, max_retries=0)
    with pytest.raises(anthropic.NotFoundError):
        client.messages.create(model="nobody/nothing", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    wait_idle()


def test_upstream_overload_is_overloaded_error(claude):
    client, add = claude
    model = add("anthropic-messages", "fail-529")
    with pytest.raises(anthropic.OverloadedError) as caught:
        client.messages.create(model=model, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["error"]["type"] == "overloaded_error"


def test_bearer_auth_and_echo(gateway_server, org, echo_catalog):
    client = anthropic.Anthropic(base_url=f"{gateway_server.url}/api", auth_token=org.inference_key, max_retries=0)
    message = client.messages.create(
        model="echo/echo-1", max_tokens=10, messages=[{"role": "user", "content": "one two"}]
    )
    assert message.content[0].text == "Echo: one two"
    wait_idle()


def test_stream_error_after_the_first_byte_is_an_error_event(claude):
    client, add = claude
    model = add("anthropic-messages", "error-event")
    with pytest.raises(anthropic.APIStatusError) as caught:
        with client.messages.stream(model=model, max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as s:
            for _ in s:
                pass
    assert "Provider stream failed" in json.dumps(caught.value.body)
    (row,) = generations(1)
    assert (row.ingress_format, row.status) == ("messages", "failed")


@pytest.mark.parametrize("api_format", FORMATS)
def test_reasoning_comes_back_as_a_thinking_block(claude, api_format):
    client, add = claude
    model = add(api_format, "reasoning")
    message = client.messages.create(model=model, max_tokens=50, messages=[{"role": "user", "content": "Think"}])
    assert [b.type for b in message.content] == ["thinking", "text"]
    assert message.content[0].thinking == "Thinking it over." and message.content[1].text == TEXT
    with client.messages.stream(model=model, max_tokens=50, messages=[{"role": "user", "content": "x"}]) as stream:
        deltas = [e.delta.type for e in stream if e.type == "content_block_delta"]
        final = stream.get_final_message()
    assert "thinking_delta" in deltas and deltas.index("thinking_delta") < deltas.index("text_delta")
    assert [b.type for b in final.content] == ["thinking", "text"]
    assert final.content[0].thinking == "Thinking it over." and final.content[1].text == TEXT
    signature = "sig-fake" if api_format == "anthropic-messages" else ""  # only Anthropic signs its thinking
    assert message.content[0].signature == final.content[0].signature == signature


@pytest.mark.parametrize("api_format", FORMATS)
def test_thinking_blocks_go_back_to_anthropic_only(claude, fake_upstream, api_format):
    client, add = claude
    model = add(api_format)
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "Use the tool.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}},
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
    ]
    client.messages.create(model=model, max_tokens=50, messages=history, tools=[TOOL])
    body = fake_upstream.last.body
    if api_format == "anthropic-messages":
        assert body["messages"][1]["content"][:2] == [
            {"type": "thinking", "thinking": "Use the tool.", "signature": "sig-1"},
            {"type": "redacted_thinking", "data": "opaque"},
        ]
    elif api_format == "openai-chat":
        assert body["messages"][1] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        }
    else:
        assert [item.get("type") for item in body["input"]] == ["message", "function_call", "function_call_output"]

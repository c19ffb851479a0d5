"""The Messages members coding agents send by default, with the official anthropic SDK over the loopback gateway:
signed thinking and redacted_thinking blocks of an Anthropic-format answer (JSON and streamed) and their way back the
next turn, adaptive thinking and `output_config.effort` as sent to an Anthropic-format provider and translated for the
others, `system` messages inside `messages`, and `cache_control` on tool results."""

from __future__ import annotations

import pytest

from tests.fakes.fake_formats import Reply
from tests.inference.test_messages import FORMATS, TOOL, claude  # noqa: F401 (fixture)

SIGNATURE = "sig-0f9e8d7c6b5a"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"


def _thinking_reply() -> Reply:
    return Reply(
        reasoning=["Use ", "the tool."],
        signature=SIGNATURE,
        redacted=REDACTED,
        tool_name="get_weather",
        tool_call_id="toolu_01",
        tool_arguments=['{"city":', ' "Paris"}'],
        finish="tool_calls",
    )


@pytest.mark.parametrize("stream", [False, True])
def test_signed_and_redacted_thinking_round_trip(claude, fake_upstream, stream):  # noqa: F811
    client, add = claude
    model = add("anthropic-messages")
    fake_upstream.script = [_thinking_reply(), Reply(pieces=["Sunny."])]
    ask = {"role": "user", "content": "Weather in Paris?"}
    kwargs = {"model": model, "max_tokens": 4000, "tools": [TOOL], "thinking": {"type": "adaptive"}}
    if stream:
        with client.messages.stream(**kwargs, messages=[ask]) as events:
            starts = [e.content_block.type for e in events if e.type == "content_block_start"]
            message = events.get_final_message()
        assert starts == ["thinking", "redacted_thinking", "tool_use"]
    else:
        message = client.messages.create(**kwargs, messages=[ask])
    blocks = [block.model_dump(exclude_none=True) for block in message.content]
    assert blocks[:2] == [
        {"type": "thinking", "thinking": "Use the tool.", "signature": SIGNATURE},
        {"type": "redacted_thinking", "data": REDACTED},
    ]
    assert blocks[2]["type"] == "tool_use" and message.stop_reason == "tool_use"
    result = {"type": "tool_result", "tool_use_id": blocks[2]["id"], "content": "sunny"}
    history = [ask, {"role": "assistant", "content": blocks}, {"role": "user", "content": [result]}]
    client.messages.create(**kwargs, messages=history)
    sent = fake_upstream.last.body["messages"][1]["content"]
    assert sent[:2] == blocks[:2] and sent[2]["type"] == "tool_use"


@pytest.mark.parametrize("api_format", FORMATS)
def test_adaptive_thinking_effort_system_messages_and_tool_result_cache(claude, fake_upstream, api_format):  # noqa: F811
    client, add = claude
    model = add(api_format)
    cache = {"type": "ephemeral"}
    messages = [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "system", "content": "Answer in French."},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}]},
    ]
    messages[3]["content"][0]["cache_control"] = cache
    client.messages.create(
        model=model,
        max_tokens=2000,
        messages=messages,
        tools=[TOOL],
        thinking={"type": "adaptive"},
        output_config={"effort": "low"},
        extra_headers={"anthropic-beta": "mid-conversation-system-2026-04-07,effort-2025-11-24"},
    )
    body = fake_upstream.last.body
    if api_format == "anthropic-messages":
        assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "low"}
        assert [m["role"] for m in body["messages"]] == ["user", "system", "assistant", "user"]
        assert body["messages"][1]["content"] == "Answer in French."
        assert body["messages"][3]["content"][0]["cache_control"] == cache
        assert "effort-2025-11-24" in fake_upstream.last.headers["anthropic-beta"]
    elif api_format == "openai-chat":
        assert body["reasoning_effort"] == "low"
        assert [m["role"] for m in body["messages"]] == ["user", "system", "assistant", "tool"]
        assert body["messages"][1]["content"] == "Answer in French."
    else:
        assert body["reasoning"]["effort"] == "low"
        roles = [i.get("role") or i["type"] for i in body["input"]]
        assert roles == ["user", "developer", "function_call", "function_call_output"]
        assert "cache_control" not in body["input"][3]


def test_system_messages_without_the_beta_join_the_system_prompt_on_anthropic(claude, fake_upstream):  # noqa: F811
    client, add = claude
    client.messages.create(
        model=add("anthropic-messages"),
        max_tokens=50,
        system="Be brief.",
        messages=[
            {"role": "user", "content": "Hi"},
            {"role": "system", "content": [{"type": "text", "text": "Be kind."}]},
        ],
    )
    body = fake_upstream.last.body
    assert body["system"] == "Be brief.\n\nBe kind." and [m["role"] for m in body["messages"]] == ["user"]


def test_output_config_with_format_reaches_an_anthropic_provider_as_sent(claude, fake_upstream):  # noqa: F811
    """Claude Code's session title request: `tools: []`, `output_config` {effort, format} (with the beta it needs)."""
    client, add = claude
    config = {"effort": "high", "format": {"type": "json_schema", "schema": {"type": "object"}}}
    client.messages.create(
        model=add("anthropic-messages"),
        max_tokens=2000,
        tools=[],
        messages=[{"role": "user", "content": "Title?"}],
        output_config=config,
        extra_headers={"anthropic-beta": "structured-outputs-2025-12-15"},
    )
    seen = fake_upstream.last
    assert seen.body["output_config"] == config and "output_format" not in seen.body and "thinking" not in seen.body
    assert seen.headers["anthropic-beta"] == "structured-outputs-2025-12-15"

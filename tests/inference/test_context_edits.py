"""Anthropic's context management applied by the gateway for providers that do not take it
(inference/ingress/context_edits.py): the pure edits, and through the anthropic SDK on /messages (what the fake
upstream got, the answer's `context_management.applied_edits`, JSON and streamed)."""

from __future__ import annotations

import json

import anthropic
import pytest

from gateway_project.api.errors import GatewayError
from inference.ingress import context_edits
from inference.ingress.context_edits import PLACEHOLDER, apply, validate
from tests.inference.test_messages import TOOL, claude  # noqa: F401 (fixture)


def conversation(tool_uses: int, thinking: bool = False) -> list[dict]:
    """A user message, then `tool_uses` assistant turns (reasoning when `thinking`, a call) each with its output."""
    items = [{"type": "message", "role": "user", "content": "go"}]
    for n in range(tool_uses):
        if thinking:
            items.append({"type": "reasoning", "summary": [], "encrypted_content": f"sig{n}", "content": []})
        name = "Read" if n % 2 else "Bash"
        items.append({"type": "function_call", "call_id": f"c{n}", "name": name, "arguments": f'{{"n": {n}}}'})
        items.append({"type": "function_call_output", "call_id": f"c{n}", "output": f"output {n} " + "x" * 400})
    return items


def edits(*edit) -> dict:
    return validate({"edits": list(edit)})


def test_clear_thinking_keeps_the_last_turns():
    body = {"input": conversation(4, thinking=True)}
    edited, applied = apply(
        body, edits({"type": "clear_thinking_20251015", "keep": {"type": "thinking_turns", "value": 1}})
    )
    kept = [i["encrypted_content"] for i in edited["input"] if i["type"] == "reasoning"]
    assert kept == ["sig3"]
    assert applied[0]["type"] == "clear_thinking_20251015" and applied[0]["cleared_thinking_turns"] == 3
    assert applied[0]["cleared_input_tokens"] > 0
    assert body["input"] == conversation(4, thinking=True)  # the request itself is not changed
    default, _ = apply(body, edits({"type": "clear_thinking_20251015"}))
    assert [i["encrypted_content"] for i in default["input"] if i["type"] == "reasoning"] == ["sig3"]
    same, applied = apply(body, edits({"type": "clear_thinking_20251015", "keep": "all"}))
    assert same["input"] == body["input"] and applied == []


def test_clear_tool_uses_past_the_trigger():
    body = {"input": conversation(6)}
    untouched, applied = apply(body, edits({"type": "clear_tool_uses_20250919"}))  # default trigger: 100k tokens
    assert untouched["input"] == body["input"] and applied == []
    edit = {"type": "clear_tool_uses_20250919", "trigger": {"type": "input_tokens", "value": 100}}
    edited, applied = apply(body, edits(edit))
    outputs = [i["output"] for i in edited["input"] if i["type"] == "function_call_output"]
    assert outputs[:3] == [PLACEHOLDER] * 3 and all(o.startswith("output") for o in outputs[3:])  # keep: 3
    assert applied == [
        {
            "type": "clear_tool_uses_20250919",
            "cleared_tool_uses": 3,
            "cleared_input_tokens": applied[0]["cleared_input_tokens"],
        }
    ]
    assert 3 * (400 - len(PLACEHOLDER)) // 4 - 10 < applied[0]["cleared_input_tokens"] < 3 * 410 // 4  # 4 bytes a token


def test_clear_tool_uses_options():
    body = {"input": conversation(6)}
    edit = {
        "type": "clear_tool_uses_20250919",
        "trigger": {"type": "tool_uses", "value": 6},
        "keep": {"type": "tool_uses", "value": 1},
        "exclude_tools": ["Read"],
        "clear_tool_inputs": True,
    }
    edited, applied = apply(body, edits(edit))
    calls = {i["call_id"]: i for i in edited["input"] if i["type"] == "function_call"}
    outputs = {i["call_id"]: i["output"] for i in edited["input"] if i["type"] == "function_call_output"}
    cleared = sorted(c for c, o in outputs.items() if o == PLACEHOLDER)
    assert cleared == ["c0", "c2", "c4"]  # Bash calls before the last one; Read (c1, c3) excluded, c5 kept
    assert all(calls[c]["arguments"] == "{}" for c in cleared) and calls["c1"]["arguments"] == '{"n": 1}'
    assert applied[0]["cleared_tool_uses"] == 3
    not_enough = {**edit, "clear_at_least": {"type": "input_tokens", "value": 10_000}}
    same, applied = apply(body, edits(not_enough))
    assert same["input"] == body["input"] and applied == []
    below = {**edit, "trigger": {"type": "tool_uses", "value": 7}}
    assert apply(body, edits(below))[1] == []


@pytest.mark.parametrize(
    ("management", "field"),
    [
        ({"edits": [{"type": "compact_20260112"}]}, "context_management.edits[0].type"),
        (
            {"edits": [{"type": "clear_thinking_20251015", "keep": {"type": "tool_uses", "value": 1}}]},
            "context_management.edits[0].keep.type",
        ),
        (
            {"edits": [{"type": "clear_tool_uses_20250919", "keep": {"type": "tool_uses", "value": -1}}]},
            "context_management.edits[0].keep.value",
        ),
        (
            {"edits": [{"type": "clear_tool_uses_20250919", "exclude_tools": "Bash"}]},
            "context_management.edits[0].exclude_tools",
        ),
        ({"edits": [{"type": "clear_tool_uses_20250919", "frequency": 2}]}, "context_management.edits[0].frequency"),
        ({"edits": {}}, "context_management.edits"),
        ({"strategy": "x"}, "context_management.strategy"),
    ],
)
def test_invalid_edits_are_400_naming_them(management, field):
    with pytest.raises(GatewayError) as caught:
        context_edits.validate(management)
    assert caught.value.status == 400 and field in caught.value.message


def _history(turns: int) -> list[dict]:
    messages = [{"role": "user", "content": "Weather in Paris, please, several times."}]
    for n in range(turns):
        call = {"type": "tool_use", "id": f"toolu_{n}", "name": "get_weather", "input": {"city": "Paris"}}
        messages.append({"role": "assistant", "content": [call]})
        result = {"type": "tool_result", "tool_use_id": f"toolu_{n}", "content": f"sunny {n} " + "y" * 200}
        messages.append({"role": "user", "content": [result]})
    return messages


MANAGEMENT = {
    "edits": [
        {
            "type": "clear_tool_uses_20250919",
            "trigger": {"type": "tool_uses", "value": 2},
            "keep": {"type": "tool_uses", "value": 1},
        }
    ]
}


@pytest.mark.parametrize("stream", [False, True])
def test_applied_by_the_gateway_for_a_chat_provider(claude, fake_upstream, stream):  # noqa: F811
    client, add = claude
    model = add("openai-chat")
    kwargs = {"model": model, "max_tokens": 50, "messages": _history(3), "tools": [TOOL]}
    kwargs["context_management"] = MANAGEMENT
    if stream:
        with client.beta.messages.stream(**kwargs, betas=["context-management-2025-06-27"]) as events:
            raw = [event.model_dump() for event in events]
            message = events.get_final_message()
        delta = next(e for e in raw if e["type"] == "message_delta")
        assert delta["context_management"]["applied_edits"][0]["cleared_tool_uses"] == 2
    else:
        message = client.beta.messages.create(**kwargs, betas=["context-management-2025-06-27"])
    applied = message.context_management.applied_edits
    assert [(a.type, a.cleared_tool_uses) for a in applied] == [("clear_tool_uses_20250919", 2)]
    tools = [m["content"] for m in fake_upstream.last.body["messages"] if m["role"] == "tool"]
    assert tools[:2] == [PLACEHOLDER] * 2 and tools[2].startswith("sunny 2")
    assert "context_management" not in fake_upstream.last.body


def test_forwarded_to_an_anthropic_provider(claude, fake_upstream):  # noqa: F811
    client, add = claude
    model = add("anthropic-messages")
    message = client.beta.messages.create(
        model=model, max_tokens=50, messages=_history(3), tools=[TOOL], context_management=MANAGEMENT,
        betas=["context-management-2025-06-27"],
    )  # fmt: skip
    seen = fake_upstream.last.body
    assert seen["context_management"] == MANAGEMENT
    results = [b for m in seen["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert all(r["content"].startswith("sunny") for r in results)  # the provider edits, not the gateway
    assert message.context_management is not None and message.context_management.applied_edits == []
    assert json.loads(message.to_json())["content"][0]["type"] == "text"


def test_an_edit_the_gateway_cannot_apply_is_400(claude):  # noqa: F811
    client, add = claude
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.beta.messages.create(
            model=add("openai-chat"), max_tokens=50, messages=_history(1),
            context_management={"edits": [{"type": "compact_20260112"}]},
        )  # fmt: skip
    assert "context_management.edits[0].type" in caught.value.message

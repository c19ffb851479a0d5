"""The state of one server-tool loop (conversation so far, totals, steps) and the body of each turn."""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from inference.pipeline.context import Usage
from inference.providers.canonical import input_items
from inference.servertools.plan import Plan
from inference.servertools.registry import is_server_tool


@dataclass(slots=True)
class LoopState:
    """What the loop has done so far."""

    input: list[dict[str, Any]]  # the conversation the next turn sends (request input + turns + tool outputs)
    output: list[dict[str, Any]] = field(default_factory=list)  # client-visible output items (JSON answers)
    usage: Usage = field(default_factory=Usage)  # summed over the turns
    cost: Decimal = Decimal(0)  # model turns + tool and plugin fees
    turns: int = 0
    steps: int = 0  # turns whose server-tool calls ran
    server_calls: int = 0
    client_calls: int = 0
    final: bool = False  # the next turn is made with tool calls disabled
    stopped_by: str | None = None
    loaded: set[str] = field(default_factory=set)  # deferred function tools found by service:tool_search
    sources: dict[str, str] = field(default_factory=dict)  # url → title found by web tools (citations)
    tools: dict[str, Any] = field(default_factory=dict)  # a server tool's own per-request state, by tool kind
    log: list[dict[str, Any]] = field(default_factory=list)  # one entry per turn, for service_metadata

    def add_usage(self, usage: Usage) -> None:
        total = self.usage
        total.input_tokens += usage.input_tokens
        total.output_tokens += usage.output_tokens
        total.cached_tokens += usage.cached_tokens
        total.reasoning_tokens += usage.reasoning_tokens
        total.estimated = total.estimated or usage.estimated  # a turn charged from the estimate marks the total


def initial_state(body: dict[str, Any], plan: Plan) -> LoopState:
    items = [dict(item) for item in input_items(body)]
    state = LoopState(input=items)
    # A deferred tool the conversation already called (a client sent its output back) stays loaded.
    state.loaded = {
        item.get("name") for item in items if item.get("type") == "function_call" and item.get("name") in plan.deferred
    }
    return state


def turn_body(base: dict[str, Any], plan: Plan, state: LoopState) -> dict[str, Any]:
    """The upstream body of the next turn: the conversation so far, the tools the model may call now."""
    body = dict(base)
    body.pop("max_tool_calls", None)  # the gateway's own bound, not the provider's
    body["input"] = list(state.input)
    tools: list[dict[str, Any]] = []
    for tool in base.get("tools") or ():
        if is_server_tool(tool):
            continue
        if tool.get("defer_loading"):
            if tool.get("name") in state.loaded:
                tools.append({k: v for k, v in tool.items() if k != "defer_loading"})
            continue
        tools.append(tool)
    if plan.offers_server_tools:
        tools.extend(implementation.definition(tool, state) for implementation, tool in plan.server_tools.values())
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and is_server_tool(choice):  # {"type": "service:web_search"}: that function
        names = {implementation.kind: name for name, (implementation, _) in plan.server_tools.items()}
        if choice["type"] in names and plan.offers_server_tools:
            body["tool_choice"] = {"type": "function", "name": names[choice["type"]]}
        else:
            body.pop("tool_choice")
    if tools:
        body["tools"] = tools
    else:
        body.pop("tools", None)
        body.pop("tool_choice", None)
    if state.final and tools:
        body["tool_choice"] = "none"
    return body


def assistant_items(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A turn's output as input items for the next turn (provider item ids left out)."""
    items: list[dict[str, Any]] = []
    for item in output:
        kind = item.get("type")
        if kind == "message":
            text = "".join(p.get("text", "") for p in item.get("content") or () if p.get("type") == "output_text")
            if text:
                items.append({"type": "message", "role": "assistant", "content": text})
        elif kind == "function_call":
            items.append(
                {
                    "type": "function_call",
                    "call_id": item.get("call_id", ""),
                    "name": item.get("name", ""),
                    "arguments": item.get("arguments", ""),
                }
            )
    return items

"""What the server-side tool loop has to do for a request: its plugins, server tools and stop rules.

`needs_plan(ctx)` is the cheap test the handler makes on every request; `prepare(ctx)` builds the `Plan`
(or returns None: the request goes upstream as before, with no loop). Server-tool items that a client sends
back in `input` (its history, stateless) are replayed to the model as the function call and output they
stood for when the request offers that server tool, and left out otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway_project.api.errors import validation_error
from inference.plugins.context import field_of
from inference.plugins.registry import Plugin, enabled_plugins
from inference.schema import MAX_TOOL_CALLS
from inference.servertools.registry import ServerTool, is_server_tool, load
from inference.servertools.replay import replay_input


@dataclass(slots=True)
class Plan:
    """The request's agentic parts, resolved once."""

    plugins: list[tuple[Plugin, dict[str, Any]]] = field(default_factory=list)
    server_tools: dict[str, tuple[ServerTool, dict[str, Any]]] = field(default_factory=dict)  # by function name
    deferred: dict[str, dict[str, Any]] = field(default_factory=dict)  # deferred function tools by name
    max_steps: int = MAX_TOOL_CALLS
    conditions: list[dict[str, Any]] = field(default_factory=list)

    @property
    def offers_server_tools(self) -> bool:
        return bool(self.server_tools) and self.max_steps > 0


def needs_plan(ctx: Any) -> bool:
    """True when the request has plugins, tools, or server-tool items in its input (a few hundred nanoseconds:
    the input is looked at only when the raw body mentions `service:` at all)."""
    body = ctx.body
    if body.get("plugins") or body.get("tools"):
        return True
    raw = ctx.raw_body  # server-tool items (Responses) or server_tool_use blocks (Messages) sent back
    return isinstance(body.get("input"), list) and (b"service:" in raw or b"server_tool_use" in raw)


def _function_names(tools: list[Any]) -> set[str]:
    return {t.get("name") for t in tools if isinstance(t, dict) and t.get("type") == "function"}


def _server_tools(ctx: Any, tools: list[Any]) -> dict[str, tuple[ServerTool, dict[str, Any]]]:
    found: dict[str, tuple[ServerTool, dict[str, Any]]] = {}
    servers = [(index, tool) for index, tool in enumerate(tools) if is_server_tool(tool)]
    if not servers:
        return found
    names = _function_names(tools)
    registry = load()
    for index, tool in servers:
        implementation = registry.get(tool["type"])
        if implementation is None:
            raise validation_error(f"tools[{index}].type", f"server tool '{tool['type']}' is not supported yet")
        if implementation.function_name in names:
            raise validation_error(
                f"tools[{index}].type",
                f"conflicts with the function tool '{implementation.function_name}' (the name the model calls "
                f"{tool['type']} by)",
            )
        if implementation.function_name in found:
            raise validation_error(f"tools[{index}].type", f"{tool['type']} is listed twice")
        found[implementation.function_name] = (implementation, tool)
        implementation.ready(ctx, tool, f"tools[{index}]")
    return found


def prepare(ctx: Any) -> Plan | None:
    """The request's Plan, or None when it has no plugin and no server tool (server items in input removed)."""
    body = ctx.body
    tools = body.get("tools") or []
    # routers (auto-router, pareto-router, ...) chose the model already, in routing
    plugins = [p for p in enabled_plugins(body) if not p[0].chooses_model] if body.get("plugins") else []
    for plugin, obj in plugins:
        plugin.ready(ctx, obj, field_of(ctx, obj))
    server_tools = _server_tools(ctx, tools)
    choice = body.get("tool_choice")
    if is_server_tool(choice) and all(impl.kind != choice["type"] for impl, _ in server_tools.values()):
        raise validation_error("tool_choice.type", f"names {choice['type']}, which is not among the request's tools")
    replay_input(body, server_tools)
    if not plugins and not server_tools:
        return None
    conditions = body.get("stop_server_tools_when") or []
    max_steps = MAX_TOOL_CALLS if conditions else body.get("max_tool_calls")
    return Plan(
        plugins=plugins,
        server_tools=server_tools,
        deferred={t["name"]: t for t in tools if isinstance(t, dict) and t.get("defer_loading")},
        max_steps=MAX_TOOL_CALLS if max_steps is None else max_steps,
        conditions=conditions,
    )

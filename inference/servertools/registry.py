"""The server-tool registry: each `service:*` tool kind maps to an implementation, or is refused.

A server tool is a `tools` entry whose `type` starts with `service:`; the gateway offers it to the model as
a function and runs it itself when the model calls it (inference.servertools.loop). A kind with no
implementation here gets a 400 naming the tool: nothing is accepted and then ignored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from gateway_project.api.errors import validation_error

PREFIX = "service:"


@dataclass(slots=True)
class ToolResult:
    """What one server-tool call produced."""

    output: str  # what the model is given
    fields: dict[str, Any] = field(default_factory=dict)  # kind-specific fields of the client-visible item
    status: str = "completed"  # or "failed"
    fee: Decimal = Decimal(0)  # USD charged for the call (a search engine's price)
    sources: dict[str, str] = field(default_factory=dict)  # url → title, for url_citation annotations
    loaded: list[str] = field(default_factory=list)  # deferred function tools to offer from the next turn


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One implemented server-tool kind.

    `definition(tool, loop)` is the function tool the model sees; `started(arguments)` the kind-specific
    fields of the item while the call runs; `run(ctx, tool, arguments, loop)` executes one call (arguments
    already decoded; `loop` is the LoopState); `max_fee(ctx, tool)` bounds the fee of one call (held against
    the budgets before it runs).
    """

    kind: str  # the `type` in `tools`, e.g. service:web_search
    function_name: str  # the name the model calls it by
    item_prefix: str  # prefix of the output item ids, e.g. ws
    check: Callable[[str, dict[str, Any]], None]
    definition: Callable[[dict[str, Any], Any], dict[str, Any]]
    started: Callable[[dict[str, Any]], dict[str, Any]]
    run: Callable[[Any, dict[str, Any], dict[str, Any], Any], Awaitable[ToolResult]]
    max_fee: Callable[[Any, dict[str, Any]], Decimal] = lambda ctx, tool: Decimal(0)
    # (ctx, tool, field) before the first turn: 400 naming `field` when the tool cannot run (no engine, ...)
    ready: Callable[[Any, dict[str, Any], str], None] = lambda ctx, tool, field: None


REGISTRY: dict[str, ServerTool] = {}
IMPLEMENTATIONS = (
    "inference.servertools.web_search",
    "inference.servertools.tool_search",
    "inference.servertools.web_fetch",
)
_loaded = False


def load() -> dict[str, ServerTool]:
    """The registry, with the implementation modules imported (they register themselves) on first use."""
    global _loaded
    if not _loaded:
        import importlib

        for module in IMPLEMENTATIONS:
            importlib.import_module(module)
        _loaded = True
    return REGISTRY


def register(tool: ServerTool) -> ServerTool:
    REGISTRY[tool.kind] = tool
    return tool


def is_server_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and isinstance(tool.get("type"), str) and tool["type"].startswith(PREFIX)


def check_server_tool(name: str, tool: dict[str, Any]) -> None:
    """400 unless the server tool's kind is implemented and its fields are valid."""
    kind = tool["type"]
    implementation = load().get(kind)
    if implementation is None:
        raise validation_error(f"{name}.type", f"server tool '{kind}' is not supported yet by this gateway")
    implementation.check(name, tool)

"""The server-tool registry: each `service:*` tool kind maps to an implementation, or is refused.

A server tool is a `tools` entry whose `type` starts with `service:`; the gateway offers it to the model as
a function and runs it itself when the model calls it (inference.servertools.loop). A kind with no
implementation here gets a 400 naming the tool: nothing is accepted and then ignored.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from gateway_project.api.errors import validation_error

PREFIX = "service:"


@dataclass(frozen=True, slots=True)
class ServerTool:
    """One implemented server-tool kind."""

    kind: str  # the `type` in `tools`, e.g. service:web_search
    function_name: str  # the name the model calls it by
    check: Callable[[str, dict[str, Any]], None]  # validates the tool object's fields (400 naming them)
    definition: Callable[[dict[str, Any]], dict[str, Any]]  # the function tool the model sees
    run: Callable[..., Awaitable[Any]]  # executes one call (see inference.servertools.loop)


REGISTRY: dict[str, ServerTool] = {}


def register(tool: ServerTool) -> ServerTool:
    REGISTRY[tool.kind] = tool
    return tool


def is_server_tool(tool: Any) -> bool:
    return isinstance(tool, dict) and isinstance(tool.get("type"), str) and tool["type"].startswith(PREFIX)


def check_server_tool(name: str, tool: dict[str, Any]) -> None:
    """400 unless the server tool's kind is implemented and its fields are valid."""
    kind = tool["type"]
    implementation = REGISTRY.get(kind)
    if implementation is None:
        raise validation_error(f"{name}.type", f"server tool '{kind}' is not supported yet by this gateway")
    implementation.check(name, tool)

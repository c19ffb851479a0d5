"""What the server-side tool loop has to do for a request: its plugins and server tools, or nothing."""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from inference.plugins.registry import enabled_plugins
from inference.servertools.registry import REGISTRY, is_server_tool


def refuse_unimplemented(body: dict[str, Any]) -> None:
    """400 for a plugin or server tool this gateway does not implement.

    The request body was validated on arrival; a preset merged in later (`@preset/...`) may carry plugins or
    tools stored before their kind was refused, so the merged body is checked again here.
    """
    if body.get("plugins"):
        enabled_plugins(body)
    for index, tool in enumerate(body.get("tools") or ()):
        if is_server_tool(tool) and tool["type"] not in REGISTRY:
            raise validation_error(f"tools[{index}].type", f"server tool '{tool['type']}' is not supported yet")

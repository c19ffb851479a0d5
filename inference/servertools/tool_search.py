"""`service:tool_search` with `defer_loading`: function tools the model does not see until it finds them.

Function tools marked `defer_loading: true` are withheld from the model. With `{"type": "service:tool_search",
"parameters": {"max_results": 1..20 (default 5)}}` in `tools`, the model sees a function `tool_search(query)`
that searches the deferred tools' names, descriptions and parameter names (BM25, inference.servertools.bm25);
the tools found are offered from the next turn on (and stay offered). A deferred tool the conversation
already called (its call sent back in `input`) is offered from the start. No fee.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from inference.servertools.bm25 import ToolIndex
from inference.servertools.registry import ServerTool, ToolResult, register

KIND = "service:tool_search"
DEFAULT_MAX_RESULTS = 5
MAX_RESULTS = 20
_INDEX_KEY = "servertools.tool_index"


def _check(name: str, tool: dict[str, Any]) -> None:
    for key in tool:
        if key not in ("type", "parameters"):
            raise validation_error(f"{name}.{key}", "unknown parameter")
    options = tool.get("parameters")
    if options is None:
        return
    if not isinstance(options, dict):
        raise validation_error(f"{name}.parameters", "must be an object")
    for key, value in options.items():
        if key != "max_results":
            raise validation_error(f"{name}.parameters.{key}", "unknown parameter")
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_RESULTS:
            raise validation_error(f"{name}.parameters.max_results", f"must be an integer from 1 to {MAX_RESULTS}")


def _deferred(ctx: Any) -> list[dict[str, Any]]:
    return [t for t in ctx.body.get("tools") or () if isinstance(t, dict) and t.get("defer_loading")]


def _definition(tool: dict[str, Any], loop: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "name": "tool_search",
        "description": (
            "Search the tools that are available but not loaded yet, by what they do. The tools found become "
            "callable in your next turn. Use it when none of your current tools fits the task."
        ),
        "parameters": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "Words describing the tool you need"}},
            "required": ["query"],
            "additionalProperties": False,
        },
    }


def _index(ctx: Any) -> ToolIndex:
    index = ctx.extras.get(_INDEX_KEY)
    if index is None:
        index = ctx.extras[_INDEX_KEY] = ToolIndex(_deferred(ctx))
    return index


async def _run(ctx: Any, tool: dict[str, Any], arguments: dict[str, Any], loop: Any) -> ToolResult:
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        return ToolResult(output="Error: `query` must be a non-empty string.", status="failed")
    limit = (tool.get("parameters") or {}).get("max_results") or DEFAULT_MAX_RESULTS
    found = _index(ctx).search(query, limit)
    names = [t["name"] for t in found]
    if not found:
        output = f'No tools match "{query}".'
    else:
        lines = [f'{len(found)} tool(s) loaded for "{query}"; you can call them from your next turn:']
        lines.extend(f"- {t['name']}: {t['description']}" if t.get("description") else f"- {t['name']}" for t in found)
        output = "\n".join(lines)
    return ToolResult(output=output, fields={"query": query, "tools": names}, loaded=names)


register(
    ServerTool(
        kind=KIND,
        function_name="tool_search",
        item_prefix="ts",
        check=_check,
        definition=_definition,
        started=lambda arguments: {"query": str(arguments.get("query", ""))},
        run=_run,
    )
)

"""Server-tool blocks of earlier answers sent back in `messages` (a client continues the conversation with the
content it got): `server_tool_use` → the gateway's server-tool item (`{type: "service:...", call_id,
arguments, output}`), its result block (`web_search_tool_result`, `web_fetch_tool_result`,
`tool_search_tool_result`) → that item's `output`, the text the model is given again (the results' titles and
URLs, the fetched document's text, the names of the tools found). The server-tool loop replays such an item
to the model as the call and output it stood for when the request offers that server tool, and leaves it out
otherwise (inference.servertools.replay). `citations` on assistant text blocks are accepted and not sent
upstream (the text itself is).
"""

from __future__ import annotations

import json
from typing import Any

from gateway_project.api.errors import validation_error
from inference.ingress.common import require_object

KINDS = {"web_search": "service:web_search", "web_fetch": "service:web_fetch"}
KINDS["tool_search_tool_bm25"] = "service:tool_search"
RESULTS = {"web_search_tool_result", "web_fetch_tool_result", "tool_search_tool_result"}
SERVER_BLOCKS = frozenset({"server_tool_use"} | RESULTS)
ID_PREFIX = "srvtoolu_"


def _output(block_type: str, content: Any) -> str:
    if block_type == "web_search_tool_result":
        if not isinstance(content, list):
            return "Error: the web search failed."
        lines = ["Web search results:"]
        for position, result in enumerate(content, 1):
            if isinstance(result, dict):
                lines.append(f"[{position}] {result.get('title') or ''}\nURL: {result.get('url') or ''}")
        return "\n".join(lines)
    content = content if isinstance(content, dict) else {}
    if block_type == "web_fetch_tool_result":
        source = (content.get("content") or {}).get("source") or {}
        data = source.get("data") if isinstance(source, dict) else None
        return data if isinstance(data, str) else "Error: the page could not be fetched."
    names = [r.get("tool_name") for r in content.get("tool_references") or () if isinstance(r, dict)]
    return "Tools found: " + ", ".join(str(n) for n in names) if names else "No tools found."


def server_history(path: str, block: dict[str, Any], items: list[dict[str, Any]]) -> None:
    """Add the item of a `server_tool_use` block, or fill the output of the item a result block belongs to."""
    kind = block["type"]
    if kind == "server_tool_use":
        if not isinstance(block.get("id"), str) or not block["id"]:
            raise validation_error(f"{path}.id", "is required")
        name = block.get("name")
        if name not in KINDS:
            raise validation_error(f"{path}.name", f"must be one of {', '.join(KINDS)}")
        arguments = json.dumps(require_object(f"{path}.input", block.get("input", {})))
        call_id = block["id"].removeprefix(ID_PREFIX)
        items.append({"type": KINDS[name], "call_id": call_id, "arguments": arguments, "output": ""})
        return
    tool_use_id = block.get("tool_use_id")
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise validation_error(f"{path}.tool_use_id", "is required")
    call_id = tool_use_id.removeprefix(ID_PREFIX)
    owner = next(
        (i for i in reversed(items) if i.get("type", "").startswith("service:") and i.get("call_id") == call_id), None
    )
    if owner is None:
        raise validation_error(f"{path}.tool_use_id", "names no server_tool_use block before it")
    owner["output"] = _output(kind, block.get("content"))

"""Server-tool items sent back in `input` (the client's history) → the function call and output they stood for.

The API is stateless, so a client continues a conversation by sending the previous output items back. A
server-tool item (`type` `service:...`) carries `call_id`, `arguments` and `output` for this purpose. When the
request offers that server tool, the item is replayed to the model as a `function_call` and its
`function_call_output`; otherwise it is left out (no provider knows the item, and the model's answer already
holds what it learned).
"""

from __future__ import annotations

from typing import Any

from inference.servertools.registry import PREFIX


def _is_server_item(item: Any) -> bool:
    kind = item.get("type") if isinstance(item, dict) else None
    return isinstance(kind, str) and kind.startswith(PREFIX)


def replay_input(body: dict[str, Any], server_tools: dict[str, Any]) -> None:
    """Rewrite `body["input"]` in place when it holds server-tool items."""
    items = body.get("input")
    if not isinstance(items, list) or not any(_is_server_item(item) for item in items):
        return
    names = {implementation.kind: name for name, (implementation, _) in server_tools.items()}
    replayed: list[Any] = []
    for item in items:
        if not _is_server_item(item):
            replayed.append(item)
            continue
        name = names.get(item["type"])
        call_id = item.get("call_id")
        if name is None or not isinstance(call_id, str) or not call_id:
            continue
        arguments = item.get("arguments") if isinstance(item.get("arguments"), str) else "{}"
        output = item.get("output") if isinstance(item.get("output"), str) else ""
        replayed.append({"type": "function_call", "call_id": call_id, "name": name, "arguments": arguments})
        replayed.append({"type": "function_call_output", "call_id": call_id, "output": output})
    body["input"] = replayed

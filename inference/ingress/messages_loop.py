"""The server-tool loop's answer (plugins, `service:` tools) in the Anthropic Messages format, with Anthropic's
own server-tool blocks:

- each server-tool call is a `server_tool_use` block (`id` "srvtoolu_<call id>", `name`, `input`) followed by
  its result block: `web_search_tool_result` (a list of `web_search_result` {url, title, encrypted_content: "",
  page_age: null}, or a `web_search_tool_result_error`), `web_fetch_tool_result` (a `web_fetch_result` whose
  document holds the page text the model read, or a `web_fetch_tool_result_error`), `tool_search_tool_result`
  (`tool_search_tool_search_result` with one `tool_reference` per deferred tool loaded). The tool names are
  `web_search`, `web_fetch` and `tool_search_tool_bm25` (the gateway's tool search is BM25);
- the text of each turn is a `text` block; the sources it cites are its `citations` (`web_search_result_location`
  {url, title, cited_text: the cited link text, encrypted_index: ""});
- `usage.server_tool_use` counts `web_search_requests` and `web_fetch_requests`; `stop_reason` is `tool_use`
  when the last turn called client tools.

Stream: Anthropic's events for the same blocks: `server_tool_use` as content_block_start (empty input), one
`input_json_delta`, content_block_stop, when the call starts; the result block as content_block_start (whole) and
content_block_stop when it finished; a text block's `citations_delta` events just before its content_block_stop.
A server-tool kind with no block here is refused with a 400 on /messages (`unsupported_kinds`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from inference.ingress.common import LoopAnswer, LoopStreamState, loop_json, loop_usage, reasoning_text
from inference.ingress.context_edits import answer_member
from inference.ingress.messages_response import MessagesStream, _shell, tool_input, usage_object
from inference.pipeline.context import Context, Usage
from inference.providers.base import CanonicalResult, TextDelta
from inference.servertools.citations import annotate

TOOL_NAMES = {
    "service:web_search": "web_search",
    "service:web_fetch": "web_fetch",
    "service:tool_search": "tool_search_tool_bm25",
}
RESULT_TYPES = {
    "service:web_search": "web_search_tool_result",
    "service:web_fetch": "web_fetch_tool_result",
    "service:tool_search": "tool_search_tool_result",
}
ID_PREFIX = "srvtoolu_"


def unsupported_kinds(kinds: list[str]) -> list[str]:
    return [kind for kind in kinds if kind not in TOOL_NAMES]


def use_block(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "server_tool_use",
        "id": ID_PREFIX + str(item.get("call_id", "")),
        "name": TOOL_NAMES[item["type"]],
        "input": tool_input(item.get("arguments") or ""),
    }


def _result_content(item: dict[str, Any]) -> Any:
    kind, failed = item["type"], item.get("status") != "completed"
    if kind == "service:web_search":
        if failed:
            return {"type": "web_search_tool_result_error", "error_code": "unavailable"}
        sources = (item.get("action") or {}).get("sources") or []
        return [
            {"type": "web_search_result", "url": s["url"], "title": s.get("title") or "", "encrypted_content": ""}
            for s in sources
        ]
    if kind == "service:web_fetch":
        if failed:
            return {"type": "web_fetch_tool_result_error", "error_code": "url_not_accessible"}
        source = {"type": "text", "media_type": "text/plain", "data": item.get("output") or ""}
        document = {"type": "document", "source": source, "title": item.get("title")}
        return {"type": "web_fetch_result", "url": item.get("url") or "", "retrieved_at": None, "content": document}
    if failed:
        return {"type": "tool_search_tool_result_error", "error_code": "unavailable"}
    references = [{"type": "tool_reference", "tool_name": name} for name in item.get("tools") or ()]
    return {"type": "tool_search_tool_search_result", "tool_references": references}


def result_block(item: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": RESULT_TYPES[item["type"]],
        "tool_use_id": ID_PREFIX + str(item.get("call_id", "")),
        "content": _result_content(item),
    }


def citation(text: str, annotation: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "web_search_result_location",
        "url": annotation["url"],
        "title": annotation.get("title") or None,
        "cited_text": text[annotation["start_index"] : annotation["end_index"]],
        "encrypted_index": "",
    }


def _stop_reason(result: CanonicalResult, client_calls: int) -> str:
    if client_calls:
        return "tool_use"
    return {"length": "max_tokens", "content_filter": "refusal"}.get(result.finish_reason or "", "end_turn")


def _blocks(item: dict[str, Any]) -> list[dict[str, Any]]:
    kind = item.get("type")
    if kind == "message":
        parts = [p for p in item.get("content") or () if p.get("type") == "output_text"]
        blocks = []
        for part in parts:
            if not part.get("text"):
                continue
            block: dict[str, Any] = {"type": "text", "text": part["text"]}
            found = [a for a in part.get("annotations") or () if a.get("type") == "url_citation"]
            if found:
                block["citations"] = [citation(part["text"], a) for a in found]
            blocks.append(block)
        return blocks
    if kind == "reasoning":
        text = reasoning_text([item])
        signature = item.get("encrypted_content") or ""
        return [{"type": "thinking", "thinking": text, "signature": signature}] if text else []
    if kind == "function_call":
        arguments = tool_input(item.get("arguments") or "")
        return [{"type": "tool_use", "id": item["call_id"], "name": item["name"], "input": arguments}]
    if kind in TOOL_NAMES:
        return [use_block(item), result_block(item)]
    return []


def loop_message_json(ctx: Context, answer: LoopAnswer) -> bytes:
    payload = _shell(ctx, answer.candidate)
    payload["content"] = [block for item in answer.output for block in _blocks(item)]
    calls = sum(1 for item in answer.output if item.get("type") == "function_call")
    payload["stop_reason"] = _stop_reason(answer.result, calls)
    management = answer_member(ctx, answer.result)  # the edits of the last turn, as a one-call answer reports them
    if management is not None:
        payload["context_management"] = management
    return loop_json(ctx, payload, answer, usage_object)


class MessagesLoopStream(LoopStreamState, MessagesStream):
    """The Messages event stream of a server-tool loop (the interface of inference.servertools.stream.LoopStream)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.block_start = 0  # where the open text block starts in text_parts

    async def handle(self, event: Any) -> bool:
        if isinstance(event, TextDelta) and event.text and self.open_kind != "text":
            self.block_start = len(self.text_parts)
        return await super().handle(event)

    def _close_open(self) -> None:
        if self.open_kind == "text":
            text = "".join(self.text_parts[self.block_start :])
            for annotation in annotate(text, self.sources):
                self._delta({"type": "citations_delta", "citation": citation(text, annotation)})
        super()._close_open()

    async def add_items(self, items: list[dict[str, Any]]) -> list[int]:
        """Server-tool calls starting: a `server_tool_use` block each, written at once."""
        self._close_open()
        start = len(self.kinds)
        for item in items:
            block = use_block(item)
            self._open_block({**block, "input": {}})
            self._delta({"type": "input_json_delta", "partial_json": orjson.dumps(block["input"]).decode()})
            self.emit("content_block_stop", {"index": self.index})
            self.kinds.append(item["type"])
        await self._flush()
        return list(range(start, start + len(items)))

    async def done_item(self, index: int, item: dict[str, Any]) -> None:
        """A server-tool call finished: its result block, written at once."""
        self._open_block(result_block(item))
        self.emit("content_block_stop", {"index": self.index})
        await self._flush()

    async def finish(self, last: CanonicalResult, usage: Usage, cost: Decimal) -> None:
        self._close_open()
        self.record_output("".join(self.text_parts))
        delta = {"stop_reason": _stop_reason(last, self.calls), "stop_sequence": None}
        event = {"delta": delta, "usage": loop_usage(usage_object, usage, cost, self.is_byok, self.kinds)}
        management = answer_member(self.ctx, last)
        if management is not None:
            event["context_management"] = management
        self.emit("message_delta", event)
        self.emit("message_stop", {})
        await self._flush(more=False)

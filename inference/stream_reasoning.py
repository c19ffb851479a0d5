"""Reasoning in the Responses stream, as OpenAI's API streams it (a part of inference.streaming's writer).

A reasoning item opens with `response.output_item.added` (`{type: reasoning, id, summary: []}`) at its first
piece. Reasoning text (Anthropic's thinking, a Chat Completions `reasoning_content`, a Responses upstream's
`reasoning_text`) streams as `response.reasoning_text.delta` and ends with `response.reasoning_text.done`; a
summary (a Responses upstream's `reasoning_summary_text`) as `response.reasoning_summary_part.added`,
`response.reasoning_summary_text.delta`..., `response.reasoning_summary_text.done`,
`response.reasoning_summary_part.done`. The item ends with `response.output_item.done` carrying the whole item:
`content` (the text), `summary`, and `encrypted_content` (Anthropic's signature, or a Responses upstream's own
item as it gave it, with its id and `encrypted_content`). It closes when the message or a function call starts,
or at the end. A plain text stream never enters this module.
"""

from __future__ import annotations

from typing import Any

from inference.ids import new_item_id
from inference.providers.base import OutputItemDone, ReasoningDelta, RedactedReasoning
from inference.providers.canonical import redacted_reasoning_item


class ReasoningItems:
    """Mixin of inference.streaming.ResponseStream (uses its `emit`, `items`, `_close_message`)."""

    reasoning: dict[str, Any] | None = None  # the open reasoning item: id, index, text, summary, signature

    def _reasoning_delta(self, event: ReasoningDelta) -> None:
        if self.message_id is not None:
            self._close_message()
        state = self.reasoning
        if state is None or (event.item_id and event.item_id != state["id"]):
            self._close_reasoning()
            state = self._open_reasoning(event.item_id)
        if event.signature:  # the end of an Anthropic thinking block: the next one is another item
            state["signature"] = event.signature
            if not event.text:
                self._close_reasoning()
                return
        if not event.text:
            return
        ref = {"item_id": state["id"], "output_index": state["index"]}
        if event.summary:
            if not state["summary"]:
                part = {"type": "summary_text", "text": ""}
                self.emit("response.reasoning_summary_part.added", {**ref, "summary_index": 0, "part": part})
            state["summary"].append(event.text)
            self.emit("response.reasoning_summary_text.delta", {**ref, "summary_index": 0, "delta": event.text})
        else:
            state["text"].append(event.text)
            self.emit("response.reasoning_text.delta", {**ref, "content_index": 0, "delta": event.text})

    def _open_reasoning(self, item_id: str) -> dict[str, Any]:
        state = {"id": item_id or new_item_id("rs"), "index": len(self.items), "text": [], "summary": []}
        state["signature"] = ""
        added = {"type": "reasoning", "id": state["id"], "summary": []}
        self.items.append(added)
        self.emit("response.output_item.added", {"output_index": state["index"], "item": dict(added)})
        self.reasoning = state
        return state

    def _close_reasoning(self, upstream_item: dict[str, Any] | None = None) -> None:
        """End the open reasoning item: its `.done` events, then `output_item.done` with the whole item (the
        upstream's own item when it gave one)."""
        state = self.reasoning
        if state is None:
            return
        self.reasoning = None
        ref = {"item_id": state["id"], "output_index": state["index"]}
        item: dict[str, Any] = {"type": "reasoning", "id": state["id"], "summary": []}
        if state["summary"]:
            summary = "".join(state["summary"])
            part = {"type": "summary_text", "text": summary}
            self.emit("response.reasoning_summary_text.done", {**ref, "summary_index": 0, "text": summary})
            self.emit("response.reasoning_summary_part.done", {**ref, "summary_index": 0, "part": part})
            item["summary"] = [part]
        if state["text"]:
            text = "".join(state["text"])
            self.emit("response.reasoning_text.done", {**ref, "content_index": 0, "text": text})
            item["content"] = [{"type": "reasoning_text", "text": text}]
        if state["signature"]:
            item["encrypted_content"] = state["signature"]
        if upstream_item is not None:
            item = upstream_item if upstream_item.get("id") else {**upstream_item, "id": state["id"]}
        self.items[state["index"]] = item
        self.emit("response.output_item.done", {"output_index": state["index"], "item": item})

    def _output_item(self, event: OutputItemDone) -> None:
        """A finished item of a Responses upstream (reasoning, a hosted tool's call), passed on as it is."""
        item = event.item
        if self.message_id is not None:
            self._close_message()
        state = self.reasoning
        if state is not None and item.get("type") == "reasoning" and item.get("id") in (state["id"], None):
            self._close_reasoning(item)
            return
        self._close_reasoning()
        if item.get("type") == "reasoning":
            self._open_reasoning(str(item.get("id") or ""))
            self._close_reasoning(item)
            return
        index = len(self.items)
        self.items.append(item)
        self.emit("response.output_item.added", {"output_index": index, "item": item})
        self.emit("response.output_item.done", {"output_index": index, "item": item})

    def _redacted(self, event: RedactedReasoning) -> None:
        """Anthropic's `redacted_thinking` block: a reasoning item with only its `encrypted_content`."""
        self._output_item(OutputItemDone(redacted_reasoning_item(event.data)))

"""Anthropic Messages answers → canonical: the JSON body (`parse_response`) and the SSE stream
(`MessagesStreamParser`), both pure.

Text blocks become one message item (output_text), `tool_use` blocks function_call items (arguments are the JSON of
`input`; streamed `input_json_delta` pieces stream on as `FunctionCallDelta`, are joined and reported as
`FunctionCallDone` at `content_block_stop`); each thinking block becomes a reasoning item carrying its signature as
`encrypted_content` (streamed as `ReasoningDelta`), each `redacted_thinking` block one with its `data` and
`redacted: true` (streamed as `RedactedReasoning`). `stop_reason` max_tokens (or model_context_window_exceeded) →
incomplete `max_output_tokens`, refusal → incomplete `content_filter`, tool_use → finish `tool_calls`.
Usage: input = input_tokens + cache_read_input_tokens + cache_creation_input_tokens, cached =
cache_read_input_tokens, cache writes split into 1 hour (`cache_creation.ephemeral_1h_input_tokens`) and 5 minutes
(the rest); no usage at all → `reported=False`.
An `error` event is a ProviderError of the kind its `error.type` names (overloaded_error → OVERLOADED, ...).
"""

from __future__ import annotations

import json
from typing import Any

from inference.pipeline.context import Usage
from inference.providers.base import (
    CanonicalEvent,
    CanonicalResult,
    FunctionCallDelta,
    FunctionCallDone,
    ReasoningDelta,
    RedactedReasoning,
    TextDelta,
)
from inference.providers.canonical import (
    as_count,
    as_int,
    build_output,
    make_result,
    reasoning_item,
    redacted_reasoning_item,
    served_tier,
)
from inference.providers.errors import body_error, loads, malformed
from inference.providers.sse import ServerSentEvent

STOP_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


def parse_usage(data: Any) -> Usage:
    if not isinstance(data, dict) or not data:
        return Usage(reported=False)
    cached = as_count(data.get("cache_read_input_tokens"), "cache_read_input_tokens")
    written = as_count(data.get("cache_creation_input_tokens"), "cache_creation_input_tokens")
    split = data.get("cache_creation") if isinstance(data.get("cache_creation"), dict) else {}
    written_1h = min(as_count(split.get("ephemeral_1h_input_tokens"), "ephemeral_1h_input_tokens"), written)
    return Usage(
        input_tokens=as_count(data.get("input_tokens"), "input_tokens") + cached + written,
        output_tokens=as_count(data.get("output_tokens"), "output_tokens"),
        cached_tokens=cached,
        cache_write_5m_tokens=written - written_1h,
        cache_write_1h_tokens=written_1h,
        # the tier it was billed at: fast mode (`speed`), else `service_tier` (standard, priority, batch)
        tier="fast" if data.get("speed") == "fast" else served_tier(data.get("service_tier")),
    )


def parse_response(data: Any) -> CanonicalResult:
    if not isinstance(data, dict):
        raise malformed("Messages body")
    if data.get("type") == "error" or (data.get("error") and "content" not in data):
        raise body_error(data.get("error"), raw=data)
    content = data.get("content")
    if not isinstance(content, list):
        raise malformed("Messages body (no content)", raw=data)
    texts, calls, reasoning = [], [], []
    for block in content:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "thinking":
            reasoning.append(reasoning_item(str(block.get("thinking", "")), str(block.get("signature") or "")))
        elif block.get("type") == "redacted_thinking":
            reasoning.append(redacted_reasoning_item(str(block.get("data") or "")))
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") == "tool_use":
            arguments = json.dumps(block.get("input") or {})
            calls.append((str(block.get("id", "")), str(block.get("name", "")), arguments))
    finish = STOP_REASONS.get(data.get("stop_reason"), "stop")
    output = reasoning + build_output("".join(texts), calls)
    result = make_result(str(data.get("id", "")), output, parse_usage(data.get("usage")), finish)
    result.context_management = _context_management(data.get("context_management"))
    return result


def _context_management(value: Any) -> dict[str, Any] | None:
    return value if isinstance(value, dict) else None


class MessagesStreamParser:
    """Messages stream events → TextDelta / FunctionCallDone; `finish()` builds the result."""

    def __init__(self) -> None:
        self.upstream_id = ""
        self.usage: dict[str, Any] = {}  # Anthropic usage fields; message_delta repeats and updates some
        self.text: list[str] = []
        self.reasoning: list[dict[str, Any]] = []  # per thinking block: {"text": [...], "signature"} or {"data"}
        self.blocks: dict[int, dict[str, Any]] = {}
        self.calls: list[tuple[str, str, str]] = []
        self.stop_reason: str | None = None
        self.stopped = False
        self.context_management: dict[str, Any] | None = None

    def feed(self, sse: ServerSentEvent) -> list[CanonicalEvent]:
        if sse.data == "[DONE]":
            return []
        event = loads(sse.data, "stream event")
        if not isinstance(event, dict) or "type" not in event:
            raise malformed("stream event", raw=event)
        kind = event["type"]
        if kind == "content_block_delta":
            return self._delta(event)
        if kind == "content_block_start":
            block = dict(event.get("content_block") or {})
            block["parts"] = []
            self.blocks[as_int(event.get("index"))] = block
            if block.get("type") == "thinking":
                self.reasoning.append({"text": [], "signature": ""})
            elif block.get("type") == "redacted_thinking":
                self.reasoning.append({"data": str(block.get("data") or "")})
                return [RedactedReasoning(self.reasoning[-1]["data"])]
            if block.get("type") == "text" and block.get("text"):
                self.text.append(block["text"])
                return [TextDelta(block["text"])]
            if block.get("type") == "tool_use":  # the call starts; its arguments stream as input_json_delta
                return [FunctionCallDelta(str(block.get("id", "")), str(block.get("name", "")), "")]
        elif kind == "content_block_stop":
            return self._block_stop(as_int(event.get("index")))
        elif kind == "message_start":
            message = event.get("message") or {}
            self.upstream_id = str(message.get("id", ""))
            self._usage(message.get("usage"))
        elif kind == "message_delta":
            self.stop_reason = (event.get("delta") or {}).get("stop_reason") or self.stop_reason
            self._usage(event.get("usage"))
            self.context_management = _context_management(event.get("context_management")) or self.context_management
        elif kind == "message_stop":
            self.stopped = True
        elif kind == "error":
            raise body_error(event.get("error"), raw=event)
        return []

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.usage.update((k, v) for k, v in usage.items() if v is not None)

    def _delta(self, event: dict[str, Any]) -> list[CanonicalEvent]:
        delta = event.get("delta") or {}
        if delta.get("type") == "text_delta":
            text = str(delta.get("text", ""))
            self.text.append(text)
            return [TextDelta(text)] if text else []
        if delta.get("type") == "thinking_delta":
            text = str(delta.get("thinking", ""))
            self._thinking_block()["text"].append(text)
            return [ReasoningDelta(text)] if text else []
        if delta.get("type") == "signature_delta":
            signature = str(delta.get("signature") or "")
            self._thinking_block()["signature"] = signature
            return [ReasoningDelta("", signature)] if signature else []
        if delta.get("type") == "input_json_delta":
            block = self.blocks.get(as_int(event.get("index")))
            piece = str(delta.get("partial_json", ""))
            if block is not None and piece:
                block["parts"].append(piece)
                if block.get("type") == "tool_use":
                    return [FunctionCallDelta(str(block.get("id", "")), str(block.get("name", "")), piece)]
        return []

    def _thinking_block(self) -> dict[str, Any]:
        if not self.reasoning or "data" in self.reasoning[-1]:  # a delta without its content_block_start
            self.reasoning.append({"text": [], "signature": ""})
        return self.reasoning[-1]

    def _block_stop(self, index: int) -> list[CanonicalEvent]:
        block = self.blocks.get(index) or {}
        if block.get("type") != "tool_use":
            return []
        arguments = "".join(block["parts"]) or json.dumps(block.get("input") or {})
        call = (str(block.get("id", "")), str(block.get("name", "")), arguments)
        self.calls.append(call)
        return [FunctionCallDone(*call)]

    def finish(self) -> CanonicalResult:
        if not self.stopped and self.stop_reason is None:
            raise malformed("stream: it ended before message_stop")
        finish = STOP_REASONS.get(self.stop_reason, "stop")
        reasoning = [
            redacted_reasoning_item(block["data"])
            if "data" in block
            else reasoning_item("".join(block["text"]), block["signature"])
            for block in self.reasoning
        ]
        output = reasoning + build_output("".join(self.text), self.calls)
        result = make_result(self.upstream_id, output, parse_usage(self.usage), finish)
        result.context_management = self.context_management
        return result

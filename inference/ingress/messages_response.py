"""Canonical answers → Anthropic Messages: the `message` JSON object, the streamed event sequence and the
error shape the anthropic SDK turns into its typed exceptions.

JSON: `content` holds a `thinking` block (the reasoning an upstream returned), a `text` block and one
`tool_use` block per function call (arguments parsed back into `input`); `stop_reason` end_turn /
max_tokens / tool_use / refusal; `usage` with `input_tokens` (without cache reads, as Anthropic counts),
`cache_read_input_tokens`, `cache_creation_input_tokens`, `output_tokens`, plus `cost` and `is_byok`.

Stream: `message_start`, `ping`, then per block `content_block_start`, `content_block_delta` (`text_delta`,
`input_json_delta`, `thinking_delta`), `content_block_stop`; `message_delta` with `stop_reason` and the
usage, `message_stop`. After the first byte a failure is an `error` event.

Errors: `{"type": "error", "error": {"type": <anthropic error type>, "message": ...}}` with the HTTP
status of the gateway error (400 → BadRequestError, 401 → AuthenticationError, ... 529 → OverloadedError).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import orjson

from gateway_project.api.errors import GatewayError
from inference.ingress.common import answer_json, finish_outcome, function_calls, mark_first_byte, reasoning_text
from inference.ingress.context_edits import answer_member
from inference.pipeline.context import Candidate, Context, Usage
from inference.providers.base import (
    CanonicalResult,
    Flush,
    FunctionCallDone,
    ReasoningDelta,
    RedactedReasoning,
    StreamDone,
    TextDelta,
)

ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    524: "timeout_error",
    529: "overloaded_error",
}


def error_type(status: int) -> str:
    return ERROR_TYPES.get(status) or ("invalid_request_error" if status < 500 else "api_error")


def error_payload(error: GatewayError) -> dict[str, Any]:
    detail: dict[str, Any] = {"type": error_type(error.status), "message": error.message}
    if error.metadata:
        detail["metadata"] = error.metadata
    return {"type": "error", "error": detail}


def message_id(ctx: Context) -> str:
    return f"msg_{ctx.request_id.replace('-', '')}"


def stop_reason(result: CanonicalResult) -> str:
    if result.finish_reason == "length":
        return "max_tokens"
    if result.finish_reason == "content_filter":
        return "refusal"
    return "tool_use" if function_calls(result.output) else "end_turn"


def usage_object(usage: Usage, cost: Decimal, is_byok: bool) -> dict[str, Any]:
    cached = min(usage.cached_tokens, usage.input_tokens)
    return {
        "input_tokens": usage.input_tokens - cached,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": cached,
        "output_tokens": usage.output_tokens,
        "cost": float(cost),
        "is_byok": is_byok,
    }


def thinking_blocks(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A `thinking` block per reasoning item (its text, its signature or ""), a `redacted_thinking` block per
    redacted one (Anthropic's, sent back by the client as they were)."""
    blocks = []
    for item in output:
        if item.get("type") != "reasoning":
            continue
        if item.get("redacted"):
            blocks.append({"type": "redacted_thinking", "data": str(item.get("encrypted_content") or "")})
            continue
        text = reasoning_text([item])
        signature = item.get("encrypted_content")
        if text or signature:
            blocks.append({"type": "thinking", "thinking": text, "signature": signature or ""})
    return blocks


def tool_input(arguments: str) -> Any:
    try:
        return json.loads(arguments) if arguments else {}
    except ValueError:
        return {"_raw_arguments": arguments}  # a provider's malformed JSON, kept rather than lost


def _shell(ctx: Context, candidate: Candidate) -> dict[str, Any]:
    return {
        "id": message_id(ctx),
        "type": "message",
        "role": "assistant",
        "model": candidate.model_slug,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
    }


def message_json(ctx: Context, result: CanonicalResult, candidate: Candidate, is_byok: bool) -> bytes:
    cost = finish_outcome(ctx, candidate, result)
    payload = _shell(ctx, candidate)
    payload["content"].extend(thinking_blocks(result.output))
    if result.text:
        payload["content"].append({"type": "text", "text": result.text})
    for item in function_calls(result.output):
        block = {
            "type": "tool_use",
            "id": item["call_id"],
            "name": item["name"],
            "input": tool_input(item["arguments"]),
        }
        payload["content"].append(block)
    payload["stop_reason"] = stop_reason(result)
    management = answer_member(ctx, result)
    if management is not None:
        payload["context_management"] = management
    return answer_json(ctx, payload, usage_object(result.usage, cost, is_byok))


class MessagesStream:
    """Writes one streamed message through the consumer's responder."""

    def __init__(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool, headers) -> None:
        self.ctx = ctx
        self.responder = responder
        self.candidate = candidate
        self.is_byok = is_byok
        self.headers = headers
        self.pending: list[bytes] = []
        self.index = -1
        self.open_kind: str | None = None  # the block being streamed: "text", "thinking" or None
        self.reasoning = False
        self.signed = False  # the open thinking block got the provider's signature
        self.text_parts: list[str] = []
        self.calls = 0

    def emit(self, kind: str, payload: dict[str, Any]) -> None:
        data = orjson.dumps({"type": kind, **payload})
        self.pending.append(b"event: " + kind.encode() + b"\ndata: " + data + b"\n\n")

    async def open(self, debug_body: dict[str, Any] | None) -> None:
        mark_first_byte(self.ctx)
        await self.responder.start(200, self.headers)
        message = _shell(self.ctx, self.candidate)
        message["usage"] = {"input_tokens": 0, "output_tokens": 0}
        self.emit("message_start", {"message": message})
        self.emit("ping", {})

    def _open_block(self, block: dict[str, Any], kind: str | None = None) -> None:
        self._close_open()
        self.index += 1
        self.open_kind = kind
        self.emit("content_block_start", {"index": self.index, "content_block": block})

    def _close_open(self) -> None:
        """Close the text or thinking block being streamed (a thinking block gets its empty signature first)."""
        if self.open_kind == "thinking" and not self.signed:
            self._delta({"type": "signature_delta", "signature": ""})
        if self.open_kind is not None:
            self.emit("content_block_stop", {"index": self.index})
            self.open_kind = None

    def _delta(self, delta: dict[str, Any]) -> None:
        self.emit("content_block_delta", {"index": self.index, "delta": delta})

    def _text(self, text: str) -> None:
        if self.open_kind != "text":
            self._open_block({"type": "text", "text": ""}, "text")
        self.text_parts.append(text)
        self._delta({"type": "text_delta", "text": text})

    def _thinking(self, text: str, signature: str = "") -> None:
        if self.open_kind != "thinking" or (self.signed and text):  # a new block after a signed one
            self._open_block({"type": "thinking", "thinking": "", "signature": ""}, "thinking")
            self.signed = False
        self.reasoning = True
        if text:
            self._delta({"type": "thinking_delta", "thinking": text})
        if signature:
            self._delta({"type": "signature_delta", "signature": signature})
            self.signed = True

    def _redacted(self, data: str) -> None:
        self._open_block({"type": "redacted_thinking", "data": data})
        self.emit("content_block_stop", {"index": self.index})
        self.reasoning = True

    def _tool_use(self, call_id: str, name: str, arguments: str) -> None:
        self._open_block({"type": "tool_use", "id": call_id, "name": name, "input": {}})
        self._delta({"type": "input_json_delta", "partial_json": orjson.dumps(tool_input(arguments)).decode()})
        self.emit("content_block_stop", {"index": self.index})
        self.calls += 1

    async def handle(self, event: Any) -> bool:
        if isinstance(event, TextDelta):
            if event.text:
                self._text(event.text)
        elif isinstance(event, Flush):
            if self.pending:
                await self._flush()
        elif isinstance(event, ReasoningDelta):
            if event.text or event.signature:
                self._thinking(event.text, event.signature)
        elif isinstance(event, FunctionCallDone):
            self._tool_use(event.call_id, event.name, event.arguments)
        elif isinstance(event, RedactedReasoning):
            self._redacted(event.data)
        elif isinstance(event, StreamDone):
            await self._complete(event.result)
            return True
        return False

    def streamed_text(self) -> str:
        return "".join(self.text_parts)

    async def _flush(self, more: bool = True) -> None:
        data = b"".join(self.pending)
        self.pending.clear()
        await self.responder.body(data, more=more)

    async def _complete(self, result: CanonicalResult) -> None:
        if self.index < 0:  # nothing streamed yet: the reasoning, then what an adapter only sent as the result
            for block in thinking_blocks(result.output):
                if block["type"] == "redacted_thinking":
                    self._redacted(block["data"])
                else:
                    self._thinking(block["thinking"], block["signature"])
            if result.text:
                self._text(result.text)
            for item in function_calls(result.output):
                self._tool_use(item["call_id"], item["name"], item["arguments"])
        self._close_open()
        cost = finish_outcome(self.ctx, self.candidate, result)
        delta = {"stop_reason": stop_reason(result), "stop_sequence": None}
        event = {"delta": delta, "usage": usage_object(result.usage, cost, self.is_byok)}
        management = answer_member(self.ctx, result)
        if management is not None:
            event["context_management"] = management
        self.emit("message_delta", event)
        self.emit("message_stop", {})
        await self._flush(more=False)

    async def fail(self, message: str, error_kind: str, metadata: dict[str, Any] | None = None) -> None:
        self.ctx.outcome.status = "failed"
        self._close_open()
        detail: dict[str, Any] = {"type": "overloaded_error" if error_kind == "provider_overloaded" else "api_error"}
        detail["message"] = message
        if metadata:
            detail["metadata"] = metadata
        self.emit("error", {"error": detail})
        await self._flush(more=False)

"""Canonical answers → OpenAI Chat Completions: the `chat.completion` JSON object and the
`chat.completion.chunk` SSE stream ending with `data: [DONE]`.

JSON: one choice whose message holds the text (or null), the refusal, the reasoning an upstream returned
(`reasoning`, as OpenRouter does) and `tool_calls`; `finish_reason` stop / length / tool_calls /
content_filter; `usage` with prompt/completion/total tokens, cached and reasoning token details, `cost`
(USD) and `is_byok`, as on /responses.

Stream: a first chunk with `delta.role`, one chunk per text delta (`delta.content`), one per function call
(`delta.tool_calls[i]` with id, name and the whole arguments), the provider's reasoning text as
`delta.reasoning` (as OpenRouter streams it), a last chunk with `finish_reason`, then, with
`stream_options.include_usage`, a chunk with empty `choices` and `usage`. After the first byte a failure is
a chunk carrying `error` (the openai SDK raises `APIError` with its message) and `finish_reason: "error"`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from inference.ingress.common import (
    answer_json,
    finish_outcome,
    function_calls,
    mark_first_byte,
    reasoning_text,
    refusal_text,
)
from inference.pipeline.context import Candidate, Context, Usage
from inference.providers.base import CanonicalResult, Flush, FunctionCallDone, ReasoningDelta, StreamDone, TextDelta

DONE_FRAME = b"data: [DONE]\n\n"


def completion_id(ctx: Context) -> str:
    return f"chatcmpl-{ctx.request_id}"


def finish_reason(result: CanonicalResult) -> str:
    if result.finish_reason in ("length", "content_filter"):
        return result.finish_reason
    return "tool_calls" if function_calls(result.output) else "stop"


def usage_object(usage: Usage, cost: Decimal, is_byok: bool) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "cost": float(cost),
        "is_byok": is_byok,
    }


def tool_call(item: dict[str, Any], index: int | None = None) -> dict[str, Any]:
    call = {
        "id": item["call_id"],
        "type": "function",
        "function": {"name": item["name"], "arguments": item["arguments"]},
    }
    return call if index is None else {"index": index, **call}


def _envelope(ctx: Context, candidate: Candidate, kind: str) -> dict[str, Any]:
    return {
        "id": completion_id(ctx),
        "object": kind,
        "created": int(ctx.created_at.timestamp()),
        "model": candidate.model_slug,
        "provider": candidate.provider_slug,
        "system_fingerprint": None,
    }


def token_logprobs(output: list[dict[str, Any]]) -> dict[str, Any] | None:
    """`choice.logprobs` from the output_text parts' `logprobs` (when the request asked for them)."""
    entries = [
        entry
        for item in output
        if item.get("type") == "message"
        for part in item.get("content") or ()
        if part.get("type") == "output_text"
        for entry in part.get("logprobs") or ()
    ]
    return {"content": entries, "refusal": None} if entries else None


def image_parts(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Image output (`image_generation_call` items) as Chat Completions `message.images` (OpenRouter's shape)."""
    images = []
    for item in output:
        if item.get("type") == "image_generation_call":
            kind = item.get("output_format") or "png"
            url = item.get("image_url") or f"data:image/{kind};base64,{item.get('result')}"
            images.append({"type": "image_url", "image_url": {"url": url}})
    return images


def completion_json(ctx: Context, result: CanonicalResult, candidate: Candidate, is_byok: bool) -> bytes:
    cost = finish_outcome(ctx, candidate, result)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": result.text or None,
        "refusal": refusal_text(result.output),
    }
    reasoning = reasoning_text(result.output)
    if reasoning:
        message["reasoning"] = reasoning
    calls = function_calls(result.output)
    if calls:
        message["tool_calls"] = [tool_call(item) for item in calls]
    images = image_parts(result.output)
    if images:
        message["images"] = images
    payload = _envelope(ctx, candidate, "chat.completion")
    logprobs = token_logprobs(result.output)
    payload["choices"] = [
        {"index": 0, "message": message, "finish_reason": finish_reason(result), "logprobs": logprobs}
    ]
    return answer_json(ctx, payload, usage_object(result.usage, cost, is_byok))


class ChatStream:
    """Writes one streamed chat completion through the consumer's responder."""

    def __init__(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool, headers) -> None:
        self.ctx = ctx
        self.responder = responder
        self.candidate = candidate
        self.is_byok = is_byok
        self.headers = headers
        self.pending: list[bytes] = []
        self.text_parts: list[str] = []
        self.reasoning = False
        self.calls = 0
        base = orjson.dumps(_envelope(ctx, candidate, "chat.completion.chunk"))
        self.prefix = b"data: " + base[:-1] + b',"choices":[{"index":0,"delta":'
        self.include_usage = bool((ctx.body.get("stream_options") or {}).get("include_usage"))

    def _chunk(self, delta: dict[str, Any], finish: str | None = None) -> None:
        tail = b',"finish_reason":' + (orjson.dumps(finish) if finish else b"null") + b',"logprobs":null}]}\n\n'
        self.pending.append(self.prefix + orjson.dumps(delta) + tail)

    async def open(self, debug_body: dict[str, Any] | None) -> None:
        mark_first_byte(self.ctx)
        await self.responder.start(200, self.headers)
        if debug_body is not None:  # debug.echo_upstream_body: first, a chunk without choices carrying it
            chunk = _envelope(self.ctx, self.candidate, "chat.completion.chunk")
            chunk["choices"] = []
            chunk["debug"] = {"echo_upstream_body": debug_body}
            self.pending.append(b"data: " + orjson.dumps(chunk) + b"\n\n")
        self._chunk({"role": "assistant", "content": ""})

    async def handle(self, event: Any) -> bool:
        if isinstance(event, TextDelta):
            if event.text:
                self.text_parts.append(event.text)
                self._chunk({"content": event.text})
        elif isinstance(event, ReasoningDelta):
            if event.text:
                self.reasoning = True
                self._chunk({"reasoning": event.text})
        elif isinstance(event, Flush):
            if self.pending:
                await self._flush()
        elif isinstance(event, FunctionCallDone):
            item = {"call_id": event.call_id, "name": event.name, "arguments": event.arguments}
            self._chunk({"tool_calls": [tool_call(item, self.calls)]})
            self.calls += 1
        elif isinstance(event, StreamDone):
            await self._complete(event.result)
            return True
        return False

    def streamed_text(self) -> str:
        return "".join(self.text_parts)

    async def _flush(self, more: bool = True) -> None:
        if not more:
            self.pending.append(DONE_FRAME)
        data = b"".join(self.pending)
        self.pending.clear()
        await self.responder.body(data, more=more)

    async def _complete(self, result: CanonicalResult) -> None:
        if not self.text_parts and not self.calls:  # an adapter that only sent the result
            reasoning = reasoning_text(result.output)
            if reasoning and not self.reasoning:
                self._chunk({"reasoning": reasoning})
            if result.text:
                self._chunk({"content": result.text})
            for index, item in enumerate(function_calls(result.output)):
                self._chunk({"tool_calls": [tool_call(item, index)]})
        cost = finish_outcome(self.ctx, self.candidate, result)
        self._chunk({}, finish_reason(result))
        if self.include_usage:
            final = _envelope(self.ctx, self.candidate, "chat.completion.chunk")
            final["choices"] = []
            final["usage"] = usage_object(result.usage, cost, self.is_byok)
            self.pending.append(b"data: " + orjson.dumps(final) + b"\n\n")
        await self._flush(more=False)

    async def fail(self, message: str, error_type: str, metadata: dict[str, Any] | None = None) -> None:
        self.ctx.outcome.status = "failed"
        error: dict[str, Any] = {"code": error_type, "message": message}
        if metadata:
            error["metadata"] = metadata
        chunk = _envelope(self.ctx, self.candidate, "chat.completion.chunk")
        chunk["error"] = error
        chunk["choices"] = [{"index": 0, "delta": {}, "finish_reason": "error", "logprobs": None}]
        self.pending.append(b"data: " + orjson.dumps(chunk) + b"\n\n")
        await self._flush(more=False)

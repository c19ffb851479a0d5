"""The Responses SSE writer (DECISIONS.md §9).

Only this module writes the Responses event stream. Adapters hand over canonical events (`TextDelta`,
`ReasoningDelta`, `OutputItemDone`, `FunctionCallDelta`, `FunctionCallDone`, `StreamDone`); `ResponseStream` turns
them into `response.*` events numbered from 0 and ends with `data: [DONE]`. A text answer: `response.created`,
`response.in_progress`, `response.output_item.added`, `response.content_part.added`,
`response.output_text.delta`..., `response.output_text.done`, `response.content_part.done`,
`response.output_item.done`, `response.completed` (or `response.incomplete`). After the first byte an error is an
`error` event followed by `response.failed`. `response.debug` (debug.echo_upstream_body) comes before everything.
Reasoning (`ReasoningDelta`, a Responses upstream's `OutputItemDone`) is its own item, written by
inference.stream_reasoning; a plain text stream never reaches it.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from inference.pipeline.context import Candidate, Context
from inference.providers.base import (
    CanonicalResult,
    Flush,
    FunctionCallDelta,
    FunctionCallDone,
    OutputItemDone,
    ReasoningDelta,
    RedactedReasoning,
    StreamDone,
    TextDelta,
)
from inference.response import function_call_item, message_item, new_item_id, response_object, usage_object
from inference.stream_reasoning import ReasoningItems
from metering.cost import settled_cost, settled_usage

DONE_FRAME = b"data: [DONE]\n\n"
SSE_HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class ResponseStream(ReasoningItems):
    """Writes one streamed response to the client through the consumer's responder."""

    def __init__(self, ctx: Context, responder: Any, candidate: Candidate, is_byok: bool) -> None:
        self.ctx = ctx
        self.responder = responder
        self.candidate = candidate
        self.is_byok = is_byok
        self.sequence = 0
        self.pending: list[bytes] = []
        self.items: list[dict[str, Any]] = []
        self.message_id: str | None = None
        self.message_index = 0
        self.text_parts: list[str] = []
        self.logprobs: list[dict[str, Any]] = []  # the open message's log-probability entries (top_logprobs)
        self.open_calls: dict[str, list[Any]] = {}  # call_id → [output index, item id, arguments streamed so far]
        self.tool_calls = 0
        self.delta_prefix = b""

    # -- framing -------------------------------------------------------------------------------------
    def emit(self, event_type: str, payload: dict[str, Any]) -> None:
        data = {"type": event_type, **payload, "sequence_number": self.sequence}
        self.sequence += 1
        self.pending.append(b"event: " + event_type.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n")

    async def flush(self, more: bool = True) -> None:
        if not more:
            self.pending.append(DONE_FRAME)
        data = b"".join(self.pending)
        self.pending.clear()
        await self.responder.body(data, more=more)

    def _response(self, status: str, output: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        return response_object(self.ctx, status=status, output=output, model=self.candidate.model_slug, **extra)

    # -- lifecycle -----------------------------------------------------------------------------------
    async def open(self, debug_body: dict[str, Any] | None) -> None:
        """Start the 200 response and write the opening events (called when the first upstream event came)."""
        outcome = self.ctx.outcome
        outcome.first_byte_sent = True
        outcome.ttft_ms = int((time.perf_counter() - self.ctx.started) * 1000)
        await self.responder.start(200, SSE_HEADERS)
        if debug_body is not None:
            self.emit("response.debug", {"debug": {"echo_upstream_body": debug_body}})
        self.emit("response.created", {"response": self._response("in_progress", [])})
        self.emit("response.in_progress", {"response": self._response("in_progress", [])})

    async def handle(self, event: Any) -> bool:
        """Take one canonical event; True once the stream is finished. The frames are written to the client at
        each `Flush` (once per upstream read, however many events it held) and at the end."""
        if isinstance(event, TextDelta):
            if event.text:
                self._delta(event.text, event.logprobs)
        elif isinstance(event, Flush):
            if self.pending:
                await self.flush()
        elif isinstance(event, FunctionCallDelta):
            self._call_delta(event)
        elif isinstance(event, FunctionCallDone):
            self._function_call(event)
        elif isinstance(event, ReasoningDelta):
            self._reasoning_delta(event)
        elif isinstance(event, OutputItemDone):
            self._output_item(event)
        elif isinstance(event, RedactedReasoning):
            self._redacted(event)
        elif isinstance(event, StreamDone):
            await self._complete(event.result)
            return True
        return False

    def streamed_text(self) -> str:
        """The text sent so far (for the usage estimate of a stream that did not finish)."""
        done = "".join(p["text"] for i in self.items if i["type"] == "message" for p in i["content"])
        return done + "".join(self.text_parts)

    def _delta(self, text: str, logprobs: list[dict[str, Any]] | None = None) -> None:
        if self.message_id is None:
            self._open_message()
        self.text_parts.append(text)
        if logprobs:
            self.logprobs.extend(logprobs)
        # The hottest event: written from a precomputed prefix instead of a dict (same JSON, same key order).
        self.pending.append(
            self.delta_prefix
            + orjson.dumps(text)
            + (b',"logprobs":' + orjson.dumps(logprobs) if logprobs else b',"logprobs":[]')
            + b',"sequence_number":'
            + str(self.sequence).encode()
            + b"}\n\n"
        )
        self.sequence += 1

    def _open_message(self) -> None:
        if self.reasoning is not None:
            self._close_reasoning()
        self.message_id = new_item_id("msg")
        self.message_index = len(self.items)
        self.items.append(message_item(self.message_id, "", status="in_progress"))
        self.emit("response.output_item.added", {"output_index": self.message_index, "item": dict(self.items[-1])})
        part = {"type": "output_text", "text": "", "annotations": []}
        self.emit("response.content_part.added", {**self._part_ref(), "part": part})
        self.delta_prefix = (
            b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","item_id":"'
            + self.message_id.encode()
            + b'","output_index":'
            + str(self.message_index).encode()
            + b',"content_index":0,"delta":'
        )

    def _part_ref(self) -> dict[str, Any]:
        return {"item_id": self.message_id, "output_index": self.message_index, "content_index": 0}

    def _close_message(self, status: str = "completed") -> None:
        """End the open message item; `incomplete` when the stream failed before the message was finished."""
        if self.message_id is None:
            return
        text = "".join(self.text_parts)
        annotations = self._annotations(text)
        for position, annotation in enumerate(annotations):
            ref = {**self._part_ref(), "annotation_index": position, "annotation": annotation}
            self.emit("response.output_text.annotation.added", ref)
        self.emit("response.output_text.done", {**self._part_ref(), "text": text, "logprobs": self.logprobs})
        part = {"type": "output_text", "text": text, "annotations": annotations}
        if self.logprobs:
            part["logprobs"] = self.logprobs
        self.emit("response.content_part.done", {**self._part_ref(), "part": part})
        item = message_item(self.message_id, text, status)
        if annotations:
            item["content"][0]["annotations"] = annotations
        if self.logprobs:
            item["content"][0]["logprobs"] = self.logprobs
        self.items[self.message_index] = item
        self.emit("response.output_item.done", {"output_index": self.message_index, "item": item})
        self.message_id = None
        self.text_parts = []
        self.logprobs = []

    def _annotations(self, text: str) -> list[dict[str, Any]]:
        """Annotations of a finished text part: none here (the server-tool loop's writer adds url_citation)."""
        return []

    def _open_call(self, call_id: str, name: str, namespace: str) -> list[Any]:
        """Start a function_call item (`response.output_item.added`, in progress); its arguments stream next."""
        self._close_message()
        self._close_reasoning()
        index = len(self.items)
        item_id = new_item_id("fc")
        added = function_call_item(item_id, call_id, name, "", "in_progress")
        if namespace:  # a function of a `namespace` tool: named as the client declared it
            added["namespace"] = namespace
        self.items.append(added)
        self.emit("response.output_item.added", {"output_index": index, "item": dict(added)})
        return [index, item_id, []]

    def _call_delta(self, event: FunctionCallDelta) -> None:
        """A piece of a call's arguments as the upstream sent it: `response.function_call_arguments.delta`."""
        slot = self.open_calls.get(event.call_id)
        if slot is None:
            slot = self.open_calls[event.call_id] = self._open_call(event.call_id, event.name, event.namespace)
        if event.delta:
            slot[2].append(event.delta)
            ref = {"item_id": slot[1], "output_index": slot[0]}
            self.emit("response.function_call_arguments.delta", {**ref, "delta": event.delta})

    def _function_call(self, event: FunctionCallDone) -> None:
        slot = self.open_calls.pop(event.call_id, None)
        if slot is None:
            slot = self._open_call(event.call_id, event.name, event.namespace)
        index, item_id, streamed = slot
        sent = "".join(streamed)
        rest = event.arguments[len(sent) :] if event.arguments.startswith(sent) else ""
        ref = {"item_id": item_id, "output_index": index}
        if rest:  # what the pieces did not carry (all of it when nothing streamed): the deltas add up
            self.emit("response.function_call_arguments.delta", {**ref, "delta": rest})
        item = function_call_item(item_id, event.call_id, event.name, event.arguments, "completed")
        if event.namespace:
            item["namespace"] = event.namespace
        self.items[index] = item
        self.emit("response.function_call_arguments.done", {**ref, "name": event.name, "arguments": event.arguments})
        self.emit("response.output_item.done", {"output_index": index, "item": item})
        self.tool_calls += 1

    def _replay(self, result: CanonicalResult) -> None:
        """An adapter that only sent StreamDone: stream its output items so deltas still add up to the text."""
        for item in result.output:
            if item.get("type") == "message":
                for part in item.get("content", []):
                    if part.get("type") == "output_text" and part.get("text"):
                        self._delta(part["text"], part.get("logprobs") or None)
                self._close_message()
            elif item.get("type") == "function_call":
                call = (item.get("call_id", ""), item.get("name", ""), item["arguments"], item.get("namespace") or "")
                self._function_call(FunctionCallDone(*call))
            else:
                self._output_item(OutputItemDone(item))

    async def _complete(self, result: CanonicalResult) -> None:
        if not self.items:
            self._replay(result)
        self._close_message()
        self._close_reasoning()
        outcome = self.ctx.outcome
        usage = settled_usage(self.ctx, self.candidate, result.usage, self.items)
        cost = settled_cost(self.ctx, self.candidate, usage)
        outcome.status = result.status
        outcome.upstream_id = result.upstream_id
        outcome.finish_reason = result.finish_reason
        outcome.usage = usage
        outcome.cost = cost
        outcome.tool_calls = self.tool_calls
        outcome.output = self.items
        outcome.output_text = "".join(
            p["text"] for i in self.items if i["type"] == "message" for p in i["content"] if p["type"] == "output_text"
        )
        final = self._response(
            result.status,
            self.items,
            usage=usage_object(usage, cost, self.is_byok),
            incomplete_reason=result.incomplete_reason,
        )
        self.emit("response.completed" if result.status == "completed" else "response.incomplete", {"response": final})
        await self.flush(more=False)

    async def fail(self, message: str, error_type: str, metadata: dict[str, Any] | None = None) -> None:
        """An error after the first byte: `error` then `response.failed`, then [DONE]. A message cut by the
        failure ends `incomplete`."""
        self._close_message("incomplete")
        self._close_reasoning()
        for index, _, streamed in self.open_calls.values():  # calls cut by the failure
            self.items[index] = {**self.items[index], "arguments": "".join(streamed), "status": "incomplete"}
        self.open_calls.clear()
        self.ctx.outcome.status = "failed"
        self.ctx.outcome.output = self.items
        payload: dict[str, Any] = {"code": error_type, "message": message, "param": None}
        if metadata:
            payload["metadata"] = metadata
        self.emit("error", payload)
        error = {"code": error_type, "message": message}
        self.emit(
            "response.failed", {"response": self._response("failed", self.items, error=error, error_type=error_type)}
        )
        await self.flush(more=False)

"""The server-tool loop's answer (plugins, `service:` tools) in the Chat Completions format, as OpenRouter shows
it there: the format has no item for a server-tool call, so the calls themselves are not shown (their count is
in `usage.server_tool_use`, their steps in `service_metadata`), and what they found is cited on the message.

JSON: one choice whose `message.content` holds the text of every turn (turns separated by a blank line),
`message.annotations` the `url_citation` annotations (`{type: "url_citation", url_citation: {url, title,
start_index, end_index}}`, indices in characters of `content`), `tool_calls` the client function calls of the
last turn; `usage` the totals of all turns plus `server_tool_use` ({web_search_requests, web_fetch_requests}).

Stream: the text deltas of every turn as they arrive (a blank line between turns), one chunk with
`delta.annotations` once the text is finished, the chunk with `finish_reason`, the usage chunk (with
`stream_options.include_usage`), `[DONE]`.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import orjson

from inference.ingress.chat_response import ChatStream, _envelope, image_parts, tool_call, usage_object
from inference.ingress.common import LoopAnswer, LoopStreamState, function_calls, loop_json, loop_usage, message_texts
from inference.pipeline.context import Context, Usage
from inference.providers.base import CanonicalResult, TextDelta
from inference.servertools.citations import annotate

TURN_SEPARATOR = "\n\n"


def chat_annotation(annotation: dict[str, Any], offset: int = 0) -> dict[str, Any]:
    """A Responses `url_citation` annotation in OpenRouter's chat shape (nested `url_citation` object)."""
    return {
        "type": "url_citation",
        "url_citation": {
            "url": annotation["url"],
            "title": annotation.get("title") or "",
            "start_index": annotation["start_index"] + offset,
            "end_index": annotation["end_index"] + offset,
        },
    }


def _finish_reason(result: CanonicalResult, client_calls: int) -> str:
    if client_calls:
        return "tool_calls"
    return result.finish_reason if result.finish_reason in ("length", "content_filter") else "stop"


def loop_completion_json(ctx: Context, answer: LoopAnswer) -> bytes:
    texts, annotations, offset = [], [], 0
    for text, found in message_texts(answer.output):
        if texts:
            offset += len(TURN_SEPARATOR)
        annotations.extend(chat_annotation(a, offset) for a in found)
        texts.append(text)
        offset += len(text)
    content = TURN_SEPARATOR.join(texts)
    message: dict[str, Any] = {"role": "assistant", "content": content or None, "refusal": None}
    if annotations:
        message["annotations"] = annotations
    calls = function_calls(answer.output)
    if calls:
        message["tool_calls"] = [tool_call(item) for item in calls]
    images = image_parts(answer.output)
    if images:
        message["images"] = images
    payload = _envelope(ctx, answer.candidate, "chat.completion")
    reason = _finish_reason(answer.result, len(calls))
    payload["choices"] = [{"index": 0, "message": message, "finish_reason": reason, "logprobs": None}]
    return loop_json(ctx, payload, answer, usage_object)


class ChatLoopStream(LoopStreamState, ChatStream):
    """The chat chunk stream of a server-tool loop (the interface of inference.servertools.stream.LoopStream)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.between_turns = False  # a server-tool call ran since the last text: the next text starts a turn

    async def handle(self, event: Any) -> bool:
        if isinstance(event, TextDelta) and event.text and self.between_turns:
            self.between_turns = False
            if self.text_parts:
                self.text_parts.append(TURN_SEPARATOR)
                self._chunk({"content": TURN_SEPARATOR})
        return await super().handle(event)

    async def add_items(self, items: list[dict[str, Any]]) -> list[int]:
        """Server-tool calls starting: nothing to show in this format (the text so far is sent at once)."""
        self.between_turns = True
        if self.pending:
            await self._flush()
        start = len(self.kinds)
        self.kinds.extend(item.get("type", "") for item in items)
        return list(range(start, start + len(items)))

    async def done_item(self, index: int, item: dict[str, Any]) -> None:
        """A server-tool call finished: not shown either (its sources become annotations)."""

    async def finish(self, last: CanonicalResult, usage: Usage, cost: Decimal) -> None:
        text = "".join(self.text_parts)
        self.record_output(text)
        annotations = annotate(text, self.sources)
        if annotations:
            self._chunk({"annotations": [chat_annotation(a) for a in annotations]})
        self._chunk({}, _finish_reason(last, self.calls))
        if self.include_usage:
            final = _envelope(self.ctx, self.candidate, "chat.completion.chunk")
            final["choices"] = []
            final["usage"] = loop_usage(usage_object, usage, cost, self.is_byok, self.kinds)
            self.pending.append(b"data: " + orjson.dumps(final) + b"\n\n")
        await self._flush(more=False)

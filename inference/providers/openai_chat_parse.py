"""Chat Completions answers → canonical: the JSON body (`parse_response`) and the SSE stream
(`ChatStreamParser`), both pure. Text becomes one message item with an output_text part, `tool_calls` become
function_call items (streamed tool-call deltas stream on as `FunctionCallDelta` pieces, are assembled by index and
reported as `FunctionCallDone` when the choice finishes), `finish_reason` length / content_filter make the result
incomplete, and usage keeps cached (`prompt_tokens_details.cached_tokens`) and reasoning
(`completion_tokens_details.reasoning_tokens`) tokens. Log-probabilities (`choice.logprobs.content`) go with the
text: on the output_text part of a JSON answer, on each `TextDelta` of a stream. Reasoning text (`reasoning`, as
OpenRouter sends it, or `reasoning_content`, as DeepSeek and vLLM do) becomes a reasoning item, streamed as
`ReasoningDelta`."""

from __future__ import annotations

from typing import Any

from inference.pipeline.context import Usage
from inference.providers.base import (
    CanonicalEvent,
    CanonicalResult,
    FunctionCallDelta,
    FunctionCallDone,
    ReasoningDelta,
    TextDelta,
)
from inference.providers.canonical import as_count, as_int, build_output, make_result, served_tier
from inference.providers.errors import body_error, loads, malformed
from inference.providers.sse import ServerSentEvent

FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def parse_usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage(reported=False)
    return Usage(
        input_tokens=as_count(usage.get("prompt_tokens"), "prompt_tokens"),
        output_tokens=as_count(usage.get("completion_tokens"), "completion_tokens"),
        cached_tokens=as_count((usage.get("prompt_tokens_details") or {}).get("cached_tokens"), "cached_tokens"),
        reasoning_tokens=as_count(
            (usage.get("completion_tokens_details") or {}).get("reasoning_tokens"), "reasoning_tokens"
        ),
    )


def finish_reason(value: Any, has_calls: bool) -> str:
    finish = FINISH_REASONS.get(value, "stop") if value else "stop"
    return "tool_calls" if has_calls and finish == "stop" else finish


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some vendors answer with content parts
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def _reasoning(message: dict[str, Any]) -> str:
    value = message.get("reasoning") or message.get("reasoning_content")
    return value if isinstance(value, str) else ""


def parse_response(data: Any) -> CanonicalResult:
    if not isinstance(data, dict):
        raise malformed("Chat Completions body")
    if data.get("error") and not data.get("choices"):
        raise body_error(data["error"], raw=data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise malformed("Chat Completions body (no choices)", raw=data)
    choice = choices[0]
    message = choice.get("message") or {}
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        calls.append((str(call.get("id", "")), str(function.get("name", "")), str(function.get("arguments") or "")))
    reasoning = _reasoning(message)
    output = build_output(
        _content_text(message.get("content")), calls, refusal=message.get("refusal"), reasoning=reasoning
    )
    output.extend(image_items(message.get("images")))
    _keep_logprobs(output, choice.get("logprobs"))
    finish = finish_reason(choice.get("finish_reason"), bool(calls))
    usage = parse_usage(data.get("usage"))
    usage.tier = served_tier(data.get("service_tier"))  # the tier it was served at, which it is billed at
    return make_result(str(data.get("id", "")), output, usage, finish)


def _logprob_entries(logprobs: Any) -> list[dict[str, Any]] | None:
    """A stream chunk's `choice.logprobs.content` (asked with `top_logprobs`), or None."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return [entry for entry in content if isinstance(entry, dict)] if isinstance(content, list) else None


def _keep_logprobs(output: list[dict[str, Any]], logprobs: Any) -> None:
    """`choice.logprobs.content` (asked with `top_logprobs`) → the output_text part's `logprobs` (the same entries,
    {token, logprob, bytes, top_logprobs}, as a Responses answer carries them)."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return
    for item in output:
        for part in item.get("content") or () if item.get("type") == "message" else ():
            if part.get("type") == "output_text":
                part["logprobs"] = content
                return


def image_items(images: Any) -> list[dict[str, Any]]:
    """`message.images` (`[{type: image_url, image_url: {url}}]`, as OpenRouter-compatible servers answer image
    output) → Responses `image_generation_call` items: `result` is the base64 data of a `data:` URL, and
    `image_url` the URL as the provider gave it."""
    items = []
    for index, image in enumerate(images if isinstance(images, list) else ()):
        url = ((image or {}).get("image_url") or {}).get("url") if isinstance(image, dict) else None
        if not isinstance(url, str) or not url:
            raise malformed("message.images entry", raw=image)
        header, _, data = url.partition(",") if url.startswith("data:") else ("", "", "")
        item: dict[str, Any] = {"type": "image_generation_call", "id": f"ig_{index + 1}", "status": "completed"}
        item["result"] = data if header.endswith(";base64") else None
        if header.startswith("data:image/"):
            item["output_format"] = header[len("data:image/") :].split(";")[0]
        item["image_url"] = url
        items.append(item)
    return items


class ChatStreamParser:
    """Chat Completions chunks → TextDelta / FunctionCallDone; `finish()` builds the result."""

    def __init__(self) -> None:
        self.upstream_id = ""
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.reasoning: list[str] = []
        self.calls: dict[int, list[Any]] = {}  # index -> [id, name, [argument pieces]]
        self.reported = False
        self.finish_value: str | None = None
        self.usage = Usage(reported=False)
        self.tier: str | None = None
        self.done = False

    def feed(self, sse: ServerSentEvent) -> list[CanonicalEvent]:
        if sse.data == "[DONE]":
            self.done = True
            return self._report_calls()
        chunk = loads(sse.data, "stream chunk")
        if not isinstance(chunk, dict):
            raise malformed("stream chunk", raw=chunk)
        if chunk.get("error"):
            raise body_error(chunk["error"], raw=chunk)
        self.upstream_id = self.upstream_id or str(chunk.get("id", ""))
        if isinstance(chunk.get("usage"), dict):
            self.usage = parse_usage(chunk["usage"])
        self.tier = served_tier(chunk.get("service_tier")) or self.tier
        events: list[CanonicalEvent] = []
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = _reasoning(delta)
            if reasoning:
                self.reasoning.append(reasoning)
                events.append(ReasoningDelta(reasoning))
            content = delta.get("content")
            if content:
                self.text.append(content)
                events.append(TextDelta(content, _logprob_entries(choice.get("logprobs"))))
            if delta.get("refusal"):
                self.refusal.append(delta["refusal"])
            for call in delta.get("tool_calls") or []:
                events.extend(self._add_call_delta(call))
            if choice.get("finish_reason"):
                self.finish_value = choice["finish_reason"]
                events.extend(self._report_calls())
        return events

    def _add_call_delta(self, call: dict[str, Any]) -> list[CanonicalEvent]:
        """Add a tool-call delta to its call; its arguments piece streams on (`FunctionCallDelta`) once the call's id
        and name are known (a call without an id is reported whole when it finishes)."""
        slot = self.calls.setdefault(as_int(call.get("index")), ["", "", []])
        if call.get("id") and not slot[0]:
            slot[0] = call["id"]
        function = call.get("function") or {}
        if function.get("name") and not slot[1]:
            slot[1] = function["name"]
        piece = function.get("arguments")
        if piece:
            slot[2].append(piece)
        if not (slot[0] and slot[1]) or self.reported:
            return []
        return [FunctionCallDelta(slot[0], slot[1], piece if isinstance(piece, str) else "")]

    def _call_tuples(self) -> list[tuple[str, str, str]]:
        return [(slot[0], slot[1], "".join(slot[2])) for _, slot in sorted(self.calls.items())]

    def _report_calls(self) -> list[CanonicalEvent]:
        if self.reported:
            return []
        self.reported = True
        return [FunctionCallDone(*call) for call in self._call_tuples()]

    def finish(self) -> CanonicalResult:
        if self.finish_value is None and not self.done:
            raise malformed("stream: it ended before the completion finished")
        calls = self._call_tuples()
        refusal = "".join(self.refusal) or None
        output = build_output("".join(self.text), calls, refusal=refusal, reasoning="".join(self.reasoning))
        self.usage.tier = self.tier
        return make_result(self.upstream_id, output, self.usage, finish_reason(self.finish_value, bool(calls)))

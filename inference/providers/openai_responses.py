"""`openai-responses`: the Responses format passed through to an upstream that speaks it (OpenAI).

The body goes up nearly as it came: `model` becomes the endpoint's upstream model, `store` is always
false (the gateway is stateless), and only the parameters of OpenAI's Responses API are kept, so
gateway-only fields (`models`, `provider`, `plugins`, `route`, `session_id`, `trace`, `debug`,
`stop_server_tools_when`, ...) never leave the gateway. Gateway server tools (`service:...`) are removed,
`defer_loading` and `cache_control` are dropped from tools (OpenAI caches prompts by itself), `reasoning.enabled`
is folded away and `reasoning.max_tokens` (a thinking budget) left out, `stop`, `seed` and `logit_bias` (from a
Chat Completions or Messages request) are refused as unsupported, `service_tier: fast` becomes
`priority`, and `cache_control` / `prompt_cache_breakpoint` markers are removed from content parts
(`prompt_cache_breakpoint` is kept when the request sets `prompt_cache_options`, which is forwarded). Members a
/responses client sent that the gateway does not know go up as sent (inference.unknown_members).
"""

from __future__ import annotations

from typing import Any

from inference.pipeline.context import Usage
from inference.providers.base import (
    CanonicalEvent,
    CanonicalResult,
    FunctionCallDelta,
    FunctionCallDone,
    OutputItemDone,
    ReasoningDelta,
    TextDelta,
    UpstreamCall,
    UpstreamRequest,
)
from inference.providers.canonical import (
    IMAGE_OUTPUT,
    as_count,
    is_gateway_tool,
    refuse_unforwarded,
    served_tier,
    unsupported,
)
from inference.providers.errors import body_error, loads, malformed
from inference.providers.http import HttpAdapter
from inference.providers.sse import ServerSentEvent
from inference.reasoning_request import requested_effort
from inference.unknown_members import add_forwarded

FORWARDED_FIELDS = frozenset(
    {
        "client_metadata",
        "include",
        "input",
        "instructions",
        "max_output_tokens",
        "max_tool_calls",
        "metadata",
        "parallel_tool_calls",
        "prompt",
        "prompt_cache_key",
        "prompt_cache_options",
        "reasoning",
        "safety_identifier",
        "service_tier",
        "temperature",
        "text",
        "tool_choice",
        "tools",
        "top_logprobs",
        "top_p",
        "truncation",
        "user",
    }
)
_PART_MARKERS = ("cache_control", "prompt_cache_breakpoint")
LOGPROBS = "message.output_text.logprobs"
SUMMARY_DELTA = "response.reasoning_summary_text.delta"
REASONING_DELTA = "response.reasoning_text.delta"
PASSED_ITEMS = frozenset({"message", "function_call"})  # items the stream rebuilds from its deltas
# Members a Chat Completions or Messages request may carry that the Responses API has no equivalent for.
UNSUPPORTED_FIELDS = ("stop", "seed", "logit_bias")


def _clean_input(value: Any, markers: tuple[str, ...] = _PART_MARKERS) -> Any:
    if not isinstance(value, list):
        return value
    items = []
    for item in value:
        if isinstance(item, dict) and item.get("type") == "reasoning" and not item.get("id"):
            continue  # reasoning translated from another format (an Anthropic thinking block): not OpenAI's
        if isinstance(item, dict) and "cache_control" in item:  # a Messages tool_result's breakpoint
            item = {k: v for k, v in item.items() if k != "cache_control"}
        content = item.get("content") if isinstance(item, dict) else None
        if isinstance(content, list) and any(isinstance(p, dict) and p.keys() & set(markers) for p in content):
            content = [{k: v for k, v in p.items() if k not in markers} for p in content]
            item = {**item, "content": content}
        items.append(item)
    return items


def _clean_tools(tools: list[Any]) -> list[Any]:
    return [
        {k: v for k, v in tool.items() if k not in ("defer_loading", "cache_control")}
        for tool in tools
        if isinstance(tool, dict) and not is_gateway_tool(tool)
    ]


def _clean_reasoning(reasoning: dict[str, Any]) -> dict[str, Any] | None:
    cleaned = {k: v for k, v in reasoning.items() if k not in ("enabled", "max_tokens") and v is not None}
    effort = requested_effort(reasoning)  # `enabled: true` → medium; a budget alone → its effort
    if effort is not None:
        cleaned["effort"] = "xhigh" if effort == "max" else effort
    return cleaned or None


def build_body(body: dict[str, Any], upstream_model: str, stream: bool) -> dict[str, Any]:
    """The upstream Responses body of a gateway request (pure)."""
    for key in UNSUPPORTED_FIELDS:
        if body.get(key) is not None:
            raise unsupported(key)
    refuse_unforwarded(body, ("frequency_penalty", "presence_penalty", "top_k", *IMAGE_OUTPUT))
    out: dict[str, Any] = {"model": upstream_model}
    for key, value in body.items():
        if key in FORWARDED_FIELDS and value is not None:
            out[key] = value
    if "input" in out:
        # with prompt_cache_options the parts' prompt_cache_breakpoint markers are the client's explicit breakpoints
        markers = ("cache_control",) if out.get("prompt_cache_options") else _PART_MARKERS
        out["input"] = _clean_input(out["input"], markers)
    if "tools" in out:
        out["tools"] = _clean_tools(out["tools"])
        if not out["tools"]:
            del out["tools"]
            out.pop("tool_choice", None)
            out.pop("parallel_tool_calls", None)
    if isinstance(out.get("reasoning"), dict):
        reasoning = _clean_reasoning(out["reasoning"])
        if reasoning is None:
            del out["reasoning"]
        else:
            out["reasoning"] = reasoning
    if out.get("service_tier") == "fast":
        out["service_tier"] = "priority"
    if out.get("top_logprobs") is not None and LOGPROBS not in (out.get("include") or ()):
        out["include"] = [*(out.get("include") or ()), LOGPROBS]  # the answer's output_text parts carry them
    out["store"] = False
    if stream:
        out["stream"] = True
    add_forwarded(out, body)
    return out


def parse_usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage(reported=False)
    return Usage(
        input_tokens=as_count(usage.get("input_tokens"), "input_tokens"),
        output_tokens=as_count(usage.get("output_tokens"), "output_tokens"),
        cached_tokens=as_count((usage.get("input_tokens_details") or {}).get("cached_tokens"), "cached_tokens"),
        reasoning_tokens=as_count(
            (usage.get("output_tokens_details") or {}).get("reasoning_tokens"), "reasoning_tokens"
        ),
    )


def parse_response(data: Any) -> CanonicalResult:
    """A Responses object (JSON answer or the one in `response.completed`) → CanonicalResult (pure)."""
    if not isinstance(data, dict) or not isinstance(data.get("output", []), list):
        raise malformed("Responses body", raw=data if isinstance(data, dict) else None)
    if data.get("status") == "failed" or (data.get("error") and "output" not in data):
        raise body_error(data.get("error") or "response failed", raw=data.get("error") or data)
    output = [item for item in data.get("output") or [] if isinstance(item, dict)]
    reason = (data.get("incomplete_details") or {}).get("reason")
    if data.get("status") == "incomplete":
        finish = "content_filter" if reason == "content_filter" else "length"
    elif any(item.get("type") == "function_call" for item in output):
        finish = "tool_calls"
    else:
        finish = "stop"
    incomplete = data.get("status") == "incomplete"
    usage = parse_usage(data.get("usage"))
    usage.tier = served_tier(data.get("service_tier"))  # the tier it was served at, which it is billed at
    return CanonicalResult(
        upstream_id=str(data.get("id", "")),
        output=output,
        usage=usage,
        status="incomplete" if incomplete else "completed",
        incomplete_reason=(reason or "max_output_tokens") if incomplete else None,
        finish_reason=finish,
    )


class ResponsesStreamParser:
    """Responses SSE → canonical events; the final `response.completed|incomplete` gives the result."""

    def __init__(self) -> None:
        self.result: CanonicalResult | None = None
        self.calls: dict[str, tuple[str, str, str]] = {}  # function_call item id → (call_id, name, namespace)

    def _call_started(self, item: dict[str, Any]) -> list[CanonicalEvent]:
        call = (str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("namespace") or ""))
        if not item.get("id") or not call[0]:
            return []
        self.calls[str(item["id"])] = call
        return [FunctionCallDelta(call[0], call[1], "", call[2])]

    def _call_piece(self, event: dict[str, Any]) -> list[CanonicalEvent]:
        call = self.calls.get(str(event.get("item_id") or ""))
        piece = event.get("delta")
        if call is None or not isinstance(piece, str) or not piece:
            return []
        return [FunctionCallDelta(call[0], call[1], piece, call[2])]

    def feed(self, sse: ServerSentEvent) -> list[CanonicalEvent]:
        if sse.data == "[DONE]":
            return []
        event = loads(sse.data, "stream event")
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "response.output_text.delta":
            logprobs = event.get("logprobs")
            return [TextDelta(str(event.get("delta", "")), logprobs if isinstance(logprobs, list) else None)]
        if kind in (SUMMARY_DELTA, REASONING_DELTA):
            item_id = str(event.get("item_id") or "")
            return [ReasoningDelta(str(event.get("delta", "")), summary=kind == SUMMARY_DELTA, item_id=item_id)]
        if kind == "response.output_item.added" and (event.get("item") or {}).get("type") == "function_call":
            return self._call_started(event["item"])
        if kind == "response.function_call_arguments.delta":
            return self._call_piece(event)
        if kind == "response.output_item.done":
            item = event.get("item") or {}
            if item.get("type") == "function_call":
                call = (str(item.get("call_id", "")), str(item.get("name", "")), str(item.get("arguments", "")))
                return [FunctionCallDone(*call, str(item.get("namespace") or ""))]
            if isinstance(item.get("type"), str) and item["type"] not in PASSED_ITEMS:
                return [OutputItemDone(item)]  # reasoning (with encrypted_content), a hosted tool's call
            return []
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self.result = parse_response(event.get("response"))
            return []
        if kind == "error":
            raise body_error({"type": event.get("code"), "message": event.get("message")}, raw=event)
        if kind is None:
            raise malformed("stream event", raw=event)
        return []

    def finish(self) -> CanonicalResult:
        if self.result is None:
            raise malformed("stream: it ended before the response completed")
        return self.result


class OpenAIResponsesAdapter(HttpAdapter):
    api_format = "openai-responses"

    def build_request(self, call: UpstreamCall) -> UpstreamRequest:
        headers = {"Content-Type": "application/json", **call.extra_headers}
        if call.credential.api_key:
            headers["Authorization"] = f"Bearer {call.credential.api_key}"
        url = call.base_url.rstrip("/") + "/responses"
        return UpstreamRequest(url=url, headers=headers, json=build_body(call.body, call.upstream_model, call.stream))

    def parse_response(self, data: Any) -> CanonicalResult:
        return parse_response(data)

    def stream_parser(self, call: UpstreamCall) -> ResponsesStreamParser:
        return ResponsesStreamParser()

    def flattened_names(self, call: UpstreamCall) -> None:
        return None  # namespace tools go up as they are

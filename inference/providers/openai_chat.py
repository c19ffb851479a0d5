"""`openai-chat`: Responses requests translated to Chat Completions and back; the base of every
OpenAI-compatible vendor (Groq, Together, DeepInfra, ... and OpenAI's own chat endpoint).

Request (`build_body`, pure): `instructions` and system/developer messages → `system` messages; `input`
(a string, or items: messages with string or part content, `function_call`, `function_call_output`) →
`messages` (input_text → text, input_image → image_url, input_file → file, input_audio → input_audio;
function calls → the assistant's `tool_calls`, outputs → `tool` messages; reasoning items are dropped);
function tools → chat tools; `tool_choice` (`allowed_tools`: api.openai.com's own form, other vendors are sent
only the allowed tools and its mode); `text.format` json_schema/json_object → `response_format`;
`reasoning.effort` → `reasoning_effort`; `modalities` with `image` and `image_config` as they are
(image output: the answer's `message.images` become `image_generation_call` items); `max_output_tokens` →
`max_completion_tokens` (api.openai.com) or `max_tokens` (other vendors); sampling parameters (and `stop`,
`seed`, `logit_bias`, `min_p`, `top_a`, `repetition_penalty` of a Chat Completions request: routing sends only
those the endpoint supports, inference.router_parameters); `top_logprobs` → `logprobs` + `top_logprobs`; a
top-level `cache_control` on the last text part (for endpoints declaring `cache_control`); a stream asks for
`stream_options.include_usage`; members a Chat Completions client sent that the gateway does not know, as sent
(inference.unknown_members). Response parsing and the stream parser live in
`openai_chat_parse.py`.
"""

from __future__ import annotations

from typing import Any

from inference.providers.base import UpstreamCall, UpstreamRequest
from inference.providers.canonical import (
    ITEM_REFERENCE_HINT,
    TEXT_PART_TYPES,
    check_include,
    content_parts,
    function_tools,
    input_items,
    is_text_only,
    item_type,
    offered_tools,
    output_to_text,
    refuse_unforwarded,
    text_of,
    unsupported,
)
from inference.providers.http import HttpAdapter
from inference.providers.namespaces import call_name
from inference.providers.openai_chat_parse import ChatStreamParser, parse_response
from inference.reasoning_request import requested_effort
from inference.unknown_members import add_forwarded

SAMPLING_FIELDS = (
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
    "stop",
    "seed",
    "logit_bias",
    "min_p",
    "top_a",
    "repetition_penalty",
)
OPENAI_ONLY_FIELDS = ("service_tier", "prompt_cache_key", "safety_identifier")
CHAT_EFFORTS = {"max": "high", "xhigh": "high"}  # efforts Chat Completions does not know


def _part(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind in TEXT_PART_TYPES:
        return {"type": "text", "text": str(part.get("text", ""))}
    if kind == "input_image":
        if not part.get("image_url"):
            raise unsupported("an input_image without image_url (file_id)")
        image = {"url": part["image_url"]}
        if part.get("detail"):
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_file":
        file = {k: part[k] for k in ("file_data", "file_id", "filename") if part.get(k)}
        return {"type": "file", "file": file}
    if kind == "input_audio":
        return {"type": "input_audio", "input_audio": part.get("input_audio") or {}}
    raise unsupported(f"content part type {kind!r}")


def _message(item: dict[str, Any]) -> dict[str, Any]:
    role = item.get("role") or "user"
    if role == "developer":
        role = "system"
    parts = content_parts(item.get("content"))
    if role in ("assistant", "system") or is_text_only(parts):
        return {"role": role, "content": text_of(item.get("content"))}
    return {"role": role, "content": [_part(part) for part in parts]}


def _add_tool_call(messages: list[dict[str, Any]], item: dict[str, Any]) -> None:
    call = {
        "id": str(item.get("call_id") or item.get("id") or ""),
        "type": "function",
        "function": {"name": call_name(item), "arguments": str(item.get("arguments") or "{}")},
    }
    if messages and messages[-1]["role"] == "assistant":
        last = messages[-1]
        if not last.get("content"):
            last["content"] = None
        last.setdefault("tool_calls", []).append(call)
    else:
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})


def build_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    if body.get("instructions"):
        messages.append({"role": "system", "content": body["instructions"]})
    for item in input_items(body):
        kind = item_type(item)
        if kind == "message":
            messages.append(_message(item))
        elif kind == "function_call":
            _add_tool_call(messages, item)
        elif kind == "function_call_output":
            content = output_to_text(item.get("output"))
            messages.append({"role": "tool", "tool_call_id": str(item.get("call_id", "")), "content": content})
        elif kind == "item_reference":
            raise unsupported("input item type 'item_reference'", ITEM_REFERENCE_HINT)
        elif kind != "reasoning":
            raise unsupported(f"input item type {kind!r}")
    return messages


def _tool(tool: dict[str, Any]) -> dict[str, Any]:
    function = {"name": tool.get("name", "")}
    if tool.get("description"):
        function["description"] = tool["description"]
    function["parameters"] = tool.get("parameters") or {"type": "object", "properties": {}}
    if tool.get("strict") is not None:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _tool_choice(choice: Any) -> Any:
    if isinstance(choice, dict):
        if choice.get("type") == "function":
            return {"type": "function", "function": {"name": choice.get("name", "")}}
        raise unsupported(f"tool_choice type {choice.get('type')!r}")
    return choice


def _allowed_tools(choice: dict[str, Any], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """`allowed_tools` in api.openai.com Chat's own form (every tool sent, only the listed ones callable)."""
    names = {str(t.get("name")) for t in choice.get("tools") or () if isinstance(t, dict)}
    listed = [{"type": "function", "function": {"name": t["name"]}} for t in tools if t.get("name") in names]
    return {"type": "allowed_tools", "allowed_tools": {"mode": choice.get("mode") or "auto", "tools": listed}}


def _response_format(text: Any) -> dict[str, Any] | None:
    fmt = (text or {}).get("format") if isinstance(text, dict) else None
    if not isinstance(fmt, dict) or fmt.get("type") in (None, "text"):
        return None
    if fmt["type"] == "json_object":
        return {"type": "json_object"}
    if fmt["type"] == "json_schema":
        schema = {k: fmt[k] for k in ("name", "description", "schema", "strict") if fmt.get(k) is not None}
        return {"type": "json_schema", "json_schema": schema}
    raise unsupported(f"text.format type {fmt['type']!r}")


def _add_tools(out: dict[str, Any], body: dict[str, Any], openai: bool) -> None:
    choice = body.get("tool_choice")
    if openai and isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        tools = function_tools(body)
        if tools:
            out["tools"] = [_tool(tool) for tool in tools]
            out["tool_choice"] = _allowed_tools(choice, tools)
    else:
        tools, choice = offered_tools(body)  # other vendors: only the allowed tools are sent
        if tools:
            out["tools"] = [_tool(tool) for tool in tools]
            if choice is not None:
                out["tool_choice"] = _tool_choice(choice)
    if not tools:
        return
    if body.get("parallel_tool_calls") is not None:
        out["parallel_tool_calls"] = body["parallel_tool_calls"]


def _add_options(out: dict[str, Any], body: dict[str, Any], openai: bool) -> None:
    for key in SAMPLING_FIELDS:
        if body.get(key) is not None:
            out[key] = body[key]
    if body.get("top_k") is not None and not openai:
        out["top_k"] = body["top_k"]
    if body.get("top_logprobs") is not None:
        out["logprobs"] = True
        out["top_logprobs"] = body["top_logprobs"]
    if body.get("max_output_tokens") is not None:
        out["max_completion_tokens" if openai else "max_tokens"] = body["max_output_tokens"]
    response_format = _response_format(body.get("text"))
    if response_format:
        out["response_format"] = response_format
    effort = requested_effort(body.get("reasoning"))
    if effort:
        out["reasoning_effort"] = CHAT_EFFORTS.get(effort, effort)
    if body.get("user"):
        out["user"] = body["user"]
    if openai:
        for key in OPENAI_ONLY_FIELDS:
            if body.get(key) is not None:
                out[key] = "priority" if body[key] == "fast" else body[key]
        verbosity = (body.get("text") or {}).get("verbosity") if isinstance(body.get("text"), dict) else None
        if verbosity:
            out["verbosity"] = verbosity
    else:
        if body.get("safety_identifier") and "user" not in out:
            out["user"] = body["safety_identifier"]
        if body.get("service_tier") not in (None, "auto", "default"):  # routing: only endpoints that may take it
            out["service_tier"] = "priority" if body["service_tier"] == "fast" else body["service_tier"]
    if "image" in (body.get("modalities") or ()):  # image output (routing sends it only to image models)
        out["modalities"] = body["modalities"]
        if body.get("image_config") is not None:
            out["image_config"] = body["image_config"]


def build_body(body: dict[str, Any], upstream_model: str, stream: bool, *, openai: bool = False) -> dict[str, Any]:
    """The Chat Completions body of a gateway Responses request (pure). `openai`: api.openai.com dialect."""
    refuse_unforwarded(body, ("prompt", "truncation", "prompt_cache_options", *(("top_k",) if openai else ())))
    check_include(body)
    out: dict[str, Any] = {"model": upstream_model, "messages": build_messages(body)}
    _add_tools(out, body, openai)
    _add_options(out, body, openai)
    if isinstance(body.get("cache_control"), dict):  # routing sends it only where the endpoint declares it
        _mark_last_part(out["messages"], body["cache_control"])
    if stream:
        out["stream"] = True
        out["stream_options"] = {"include_usage": True}
    add_forwarded(out, body)
    return out


def _mark_last_part(messages: list[dict[str, Any]], cache_control: dict[str, Any]) -> None:
    """A top-level `cache_control` as providers taking it on content parts want it: on the last text part of the
    last message with content (a string content becomes one text part)."""
    for message in reversed(messages):
        content = message.get("content")
        if isinstance(content, str) and content:
            message["content"] = [{"type": "text", "text": content, "cache_control": cache_control}]
            return
        if isinstance(content, list):
            for part in reversed(content):
                if part.get("type") == "text":
                    part.setdefault("cache_control", cache_control)
                    return


class OpenAIChatAdapter(HttpAdapter):
    """Chat Completions over HTTP; subclass it (or just use it) for any OpenAI-compatible vendor."""

    api_format = "openai-chat"
    path = "/chat/completions"

    def build_request(self, call: UpstreamCall) -> UpstreamRequest:
        headers = {"Content-Type": "application/json", **call.extra_headers}
        if call.credential.api_key:
            headers["Authorization"] = f"Bearer {call.credential.api_key}"
        openai = "api.openai.com" in call.base_url
        body = build_body(call.body, call.upstream_model, call.stream, openai=openai)
        return UpstreamRequest(url=call.base_url.rstrip("/") + self.path, headers=headers, json=body)

    def parse_response(self, data: Any):
        return parse_response(data)

    def stream_parser(self, call: UpstreamCall) -> ChatStreamParser:
        return ChatStreamParser()

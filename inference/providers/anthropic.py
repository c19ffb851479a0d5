"""`anthropic-messages`: Responses requests translated to Anthropic's Messages API and back.

Request (`build_body`, pure): `instructions` and system/developer messages → `system`; messages with
content blocks (text; input_image → image block from a data URL, an https URL or a file id; input_file →
document block), consecutive messages of one role merged; `function_call` items → assistant `tool_use`
blocks, `function_call_output` → user `tool_result` blocks; function tools → tools with `input_schema`;
`tool_choice` (auto/none/required → auto/none/any, a function → tool, `allowed_tools` → only those tools sent
and its mode; `parallel_tool_calls: false` →
`disable_parallel_tool_use`); `max_tokens` (required) from `max_output_tokens` or
GATEWAY_ANTHROPIC_MAX_TOKENS; `reasoning` → `thinking` with `reasoning.max_tokens` or a budget per effort (temperature,
top_p and top_k are then left out, as Anthropic requires, and reported by inference.router_parameters; a cap of
1024 or less, or a forced tool, is refused: no thinking is possible); `temperature` (0..1; above is refused, never
clamped), `top_p`, `top_k`;
`item_reference` input items are refused (the gateway is stateless: nothing to reference);
`text.format` json_schema → `output_format` with the structured-outputs beta header; content-part
`cache_control` kept, a top-level `cache_control` marks the last block; `safety_identifier` (or `user`)
→ `metadata.user_id`; `stop` → `stop_sequences` (`seed` and `logit_bias` are refused as unsupported);
`service_tier` `fast` → `speed: fast` with the fast-mode beta, `default` → `standard_only`, `priority` → `auto`
(flex and scale refused); system blocks keep their `cache_control` (`system` is then an array of blocks), as do
tools. A Messages request's own `thinking`, `output_config` and `context_management` are sent as the client
sent them (`anthropic_thinking`, `anthropic_output_config`, `anthropic_context_management`), its mid-conversation system
messages (developer items after the first message) stay in place when it sent the `mid-conversation-system-…`
beta, and a tool result keeps its `cache_control`. Headers: `x-api-key`,
`anthropic-version` and `anthropic-beta` (the request's `anthropic_beta` features from a Messages request, plus
what the body needs). Members a Messages client sent that the gateway does not know go up as sent
(inference.unknown_members). Parsing: `anthropic_parse.py`.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from inference.providers.anthropic_parse import MessagesStreamParser, parse_response
from inference.providers.base import ProviderError, ProviderErrorKind, UpstreamCall, UpstreamRequest
from inference.providers.canonical import (
    IMAGE_OUTPUT,
    ITEM_REFERENCE_HINT,
    TEXT_PART_TYPES,
    check_include,
    content_parts,
    input_items,
    item_type,
    offered_tools,
    output_to_text,
    refuse_unforwarded,
    unsupported,
)
from inference.providers.http import HttpAdapter
from inference.providers.namespaces import call_name
from inference.reasoning_request import requested_effort, thinking_budget
from inference.unknown_members import add_forwarded

ANTHROPIC_VERSION = "2023-06-01"
STRUCTURED_OUTPUTS_BETA = "structured-outputs-2025-11-13"
FAST_MODE_BETA = "fast-mode-2026-02-01"
MID_CONVERSATION_SYSTEM = "mid-conversation-system-"
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768, "max": 32768}
MIN_THINKING_BUDGET = 1024


def _source(url: str, file_id: Any) -> dict[str, Any]:
    if file_id:
        return {"type": "file", "file_id": file_id}
    if url.startswith("data:"):
        header, _, data = url.partition(",")
        media_type = header[5:].split(";")[0]
        return {"type": "base64", "media_type": media_type, "data": data}
    return {"type": "url", "url": url}


def _block(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("type")
    if kind in TEXT_PART_TYPES:
        block: dict[str, Any] = {"type": "text", "text": str(part.get("text", ""))}
    elif kind == "refusal":
        block = {"type": "text", "text": str(part.get("refusal", ""))}
    elif kind == "input_image":
        block = {"type": "image", "source": _source(str(part.get("image_url") or ""), part.get("file_id"))}
    elif kind == "input_file":
        url = str(part.get("file_data") or part.get("file_url") or "")
        block = {"type": "document", "source": _source(url, part.get("file_id"))}
    else:
        raise unsupported(f"content part type {kind!r}")
    if part.get("cache_control"):
        block["cache_control"] = part["cache_control"]
    return block


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Add blocks as a message of `role`, merged into the previous one when it has the same role."""
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": blocks})


def _tool_use(item: dict[str, Any]) -> dict[str, Any]:
    try:
        arguments = json.loads(item.get("arguments") or "{}")
    except ValueError:
        raise ProviderError(ProviderErrorKind.BAD_REQUEST, "function_call arguments are not valid JSON")
    return {
        "type": "tool_use",
        "id": str(item.get("call_id", "")),
        "name": call_name(item),
        "input": arguments,
    }


def _system_blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    return [_block(part) for part in content_parts(content) if part.get("type") in TEXT_PART_TYPES]


def _mid_conversation(body: dict[str, Any]) -> bool:
    """The client sent the mid-conversation system messages beta (a Messages request's `system` messages)."""
    return any(beta.startswith(MID_CONVERSATION_SYSTEM) for beta in body.get("anthropic_beta") or ())


def build_messages(body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(system text blocks, messages) of a Responses request."""
    system = [{"type": "text", "text": body["instructions"]}] if body.get("instructions") else []
    messages: list[dict[str, Any]] = []
    in_place = _mid_conversation(body)
    for item in input_items(body):
        kind = item_type(item)
        if kind == "message":
            role = item.get("role") or "user"
            if role == "developer" and in_place and messages:
                content = item.get("content")
                blocks = content if isinstance(content, str) else _system_blocks(content)
                messages.append({"role": "system", "content": blocks})
                continue
            if role in ("system", "developer"):
                system.extend(_system_blocks(item.get("content")))
                continue
            blocks = [_block(part) for part in content_parts(item.get("content"))]
            blocks = [b for b in blocks if b["type"] != "text" or b["text"]]  # Anthropic refuses empty text
            if blocks:
                _append(messages, "assistant" if role == "assistant" else "user", blocks)
        elif kind == "function_call":
            _append(messages, "assistant", [_tool_use(item)])
        elif kind == "function_call_output":
            result = {
                "type": "tool_result",
                "tool_use_id": str(item.get("call_id", "")),
                "content": output_to_text(item.get("output")),
            }
            if item.get("cache_control"):
                result["cache_control"] = item["cache_control"]
            _append(messages, "user", [result])
        elif kind == "reasoning":
            block = _thinking_block(item)
            if block is not None:
                _append(messages, "assistant", [block])
        elif kind == "item_reference":
            raise unsupported("input item type 'item_reference'", ITEM_REFERENCE_HINT)
        else:
            raise unsupported(f"input item type {kind!r}")
    return system, messages


def _thinking_block(item: dict[str, Any]) -> dict[str, Any] | None:
    """A reasoning item that came from Anthropic (its signature in `encrypted_content`) as the thinking block the
    API needs back in a tool-use turn; other reasoning (another provider's, unsigned) is not sent."""
    signature = item.get("encrypted_content")
    if not isinstance(signature, str) or not signature:
        return None
    if item.get("redacted"):
        return {"type": "redacted_thinking", "data": signature}
    text = "".join(str(p.get("text", "")) for p in item.get("content") or () if isinstance(p, dict))
    return {"type": "thinking", "thinking": text, "signature": signature}


def _tools(body: dict[str, Any], out: dict[str, Any]) -> None:
    tools, choice = offered_tools(body)
    if not tools:
        return
    out["tools"] = [
        {k: v for k, v in (("name", t.get("name", "")), ("description", t.get("description"))) if v}
        | {"input_schema": t.get("parameters") or {"type": "object", "properties": {}}}
        | ({"cache_control": t["cache_control"]} if t.get("cache_control") else {})
        for t in tools
    ]
    mapped: dict[str, Any] | None = None
    if choice in ("auto", "none"):
        mapped = {"type": choice}
    elif choice == "required":
        mapped = {"type": "any"}
    elif isinstance(choice, dict) and choice.get("type") == "function":
        mapped = {"type": "tool", "name": choice.get("name", "")}
    if body.get("parallel_tool_calls") is False:
        mapped = (mapped or {"type": "auto"}) | {"disable_parallel_tool_use": True}
    if mapped:
        out["tool_choice"] = mapped


def _effort(body: dict[str, Any]) -> str | None:
    """The reasoning effort a (non-Messages) request asks for (inference.reasoning_request); None when it asks for
    no thinking."""
    effort = requested_effort(body.get("reasoning"))
    return None if effort == "none" else effort


def _thinking_budget(body: dict[str, Any], out: dict[str, Any]) -> int | None:
    effort = _effort(body)
    if effort is None:
        return None
    reasoning = body["reasoning"]
    if (out.get("tool_choice") or {}).get("type") in ("any", "tool"):  # Anthropic refuses thinking with it
        raise unsupported("reasoning with a forced tool", "use tool_choice auto or turn reasoning off (effort none)")
    budget = thinking_budget(reasoning)
    if budget is not None:  # an explicit budget (a Messages request's thinking.budget_tokens): as it is or not at all
        if budget < MIN_THINKING_BUDGET:  # routing sends it to other formats only (inference.routing_members)
            raise unsupported("reasoning.max_tokens below 1024", "Anthropic's extended thinking needs at least 1024")
        return budget
    return THINKING_BUDGETS.get(effort, THINKING_BUDGETS["medium"])


def thinks(body: dict[str, Any]) -> bool:
    """Whether the request turns Anthropic's thinking on (then `temperature`, `top_p` and `top_k` are not sent:
    Anthropic refuses them with thinking; inference.router_parameters reports them left out)."""
    if "anthropic_thinking" in body or "anthropic_output_config" in body:
        thinking = body.get("anthropic_thinking")
        return thinking is not None and thinking.get("type") != "disabled"
    return _effort(body) is not None


def _native_thinking(body: dict[str, Any], out: dict[str, Any], default_max_tokens: int) -> bool:
    """A Messages request's `thinking` and `output_config`, as the client sent them; False when the request came in
    another format, or had neither (its `reasoning` is translated instead)."""
    if "anthropic_thinking" not in body and "anthropic_output_config" not in body:
        return False
    requested = body.get("max_output_tokens")
    out["max_tokens"] = requested if requested is not None else default_max_tokens
    thinking = body.get("anthropic_thinking")
    budget = thinking.get("budget_tokens") if thinking is not None else None
    if isinstance(budget, int) and budget >= out["max_tokens"]:  # the endpoint's output cap is below the request's
        thinking = {**thinking, "budget_tokens": max(out["max_tokens"] - 1, MIN_THINKING_BUDGET)}
    if thinking is not None:
        out["thinking"] = thinking
    if body.get("anthropic_output_config"):
        out["output_config"] = body["anthropic_output_config"]
    if thinking is None or thinking.get("type") == "disabled":
        _sampling(body, out)
    return True


def _sampling(body: dict[str, Any], out: dict[str, Any]) -> None:
    if body.get("temperature") is not None:
        if body["temperature"] > 1:  # routing sends such a request to other formats only (inference.routing_members)
            raise unsupported("temperature above 1", "Anthropic takes 0..1")
        out["temperature"] = body["temperature"]
    for key in ("top_p", "top_k"):
        if body.get(key) is not None:
            out[key] = body[key]


def _limits(body: dict[str, Any], out: dict[str, Any], default_max_tokens: int) -> None:
    if _native_thinking(body, out, default_max_tokens):
        return
    budget = _thinking_budget(body, out)
    requested = body.get("max_output_tokens")
    if budget is not None and requested is not None:
        budget = min(budget, requested - 1)
        if budget < MIN_THINKING_BUDGET:
            raise unsupported(
                f"reasoning with max_output_tokens {requested}",
                f"extended thinking needs max_output_tokens above {MIN_THINKING_BUDGET}",
            )
    out["max_tokens"] = requested if requested is not None else default_max_tokens + (budget or 0)
    if budget is not None:
        out["thinking"] = {"type": "enabled", "budget_tokens": budget}
        return
    _sampling(body, out)


def build_body(
    body: dict[str, Any], upstream_model: str, stream: bool, *, default_max_tokens: int = 4096
) -> tuple[dict[str, Any], list[str]]:
    """(the Messages body, the `anthropic-beta` features it needs) of a Responses request (pure)."""
    for key in ("seed", "logit_bias"):
        if body.get(key) is not None:
            raise unsupported(key)
    refuse_unforwarded(
        body,
        (
            "prompt",
            "truncation",
            "top_logprobs",
            "frequency_penalty",
            "presence_penalty",
            "prompt_cache_options",
            *IMAGE_OUTPUT,
        ),
    )
    check_include(body)
    system, messages = build_messages(body)
    out: dict[str, Any] = {"model": upstream_model, "messages": messages}
    if any("cache_control" in block for block in system):
        out["system"] = system
    elif system:
        out["system"] = "\n\n".join(block["text"] for block in system)
    if body.get("stop"):
        out["stop_sequences"] = list(body["stop"])
    _tools(body, out)
    _limits(body, out, default_max_tokens)
    if isinstance(body.get("cache_control"), dict) and messages and messages[-1]["content"]:
        messages[-1]["content"][-1].setdefault("cache_control", body["cache_control"])
    betas = list(body.get("anthropic_beta") or ())
    fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
    if isinstance(fmt, dict) and fmt.get("type") == "json_schema" and "format" not in out.get("output_config", {}):
        out["output_format"] = {"type": "json_schema", "schema": fmt.get("schema") or {}}
        if STRUCTURED_OUTPUTS_BETA not in betas:
            betas.append(STRUCTURED_OUTPUTS_BETA)
    user_id = body.get("safety_identifier") or body.get("user")
    if user_id:
        out["metadata"] = {"user_id": user_id}
    _tier(body.get("service_tier"), out, betas)
    if body.get("anthropic_context_management") is not None:
        out["context_management"] = body["anthropic_context_management"]
    if stream:
        out["stream"] = True
    add_forwarded(out, body)
    return out, betas


def _tier(tier: Any, out: dict[str, Any], betas: list[str]) -> None:
    """`service_tier` as Anthropic takes it: `fast` (a Messages `speed: fast`) is fast mode, `default` is
    `standard_only`, `priority` is `auto` (priority capacity when the account has it); flex and scale do not
    exist there."""
    if tier in (None, "auto"):
        return
    if tier == "fast":
        out["speed"] = "fast"
        if FAST_MODE_BETA not in betas:
            betas.append(FAST_MODE_BETA)
    elif tier == "default":
        out["service_tier"] = "standard_only"
    elif tier == "priority":
        out["service_tier"] = "auto"
    else:
        raise unsupported(f"service_tier {tier!r}")


class AnthropicMessagesAdapter(HttpAdapter):
    api_format = "anthropic-messages"

    def build_request(self, call: UpstreamCall) -> UpstreamRequest:
        default_max = getattr(settings, "GATEWAY_ANTHROPIC_MAX_TOKENS", 4096)
        body, betas = build_body(call.body, call.upstream_model, call.stream, default_max_tokens=default_max)
        headers = {"Content-Type": "application/json", "anthropic-version": ANTHROPIC_VERSION, **call.extra_headers}
        if betas:
            existing = headers.get("anthropic-beta")
            headers["anthropic-beta"] = ",".join([existing, *betas] if existing else betas)
        if call.credential.api_key:
            headers["x-api-key"] = call.credential.api_key
        return UpstreamRequest(url=call.base_url.rstrip("/") + "/messages", headers=headers, json=body)

    def parse_response(self, data: Any):
        return parse_response(data)

    def stream_parser(self, call: UpstreamCall) -> MessagesStreamParser:
        return MessagesStreamParser()

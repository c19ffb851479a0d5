"""Shared pieces of the translating adapters: reading a Responses request (input items, content parts,
function tools) and building canonical results (output items, finish → status)."""

from __future__ import annotations

import uuid
from typing import Any

from inference.pipeline.context import Usage
from inference.providers import namespaces
from inference.providers.base import CanonicalResult, ProviderError, ProviderErrorKind
from inference.providers.errors import malformed

INCOMPLETE_REASONS = {"length": "max_output_tokens", "content_filter": "content_filter"}
TEXT_PART_TYPES = frozenset({"input_text", "output_text", "text", "summary_text"})


def new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


# --- reading the request ------------------------------------------------------------------------------------


def input_items(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's `input` as a list of items (a string is one user message)."""
    value = body.get("input")
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "user", "content": value}]
    return [item for item in value if isinstance(item, dict)]


def item_type(item: dict[str, Any]) -> str:
    """`message` for items with a role and no explicit other type."""
    return item.get("type") or "message"


def content_parts(content: Any) -> list[dict[str, Any]]:
    """A message's content as a list of typed parts (a string is one text part)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return [part for part in content if isinstance(part, dict)]


def text_of(content: Any) -> str:
    """The text of a message's content (string or parts), non-text parts left out."""
    if isinstance(content, str):
        return content
    return "".join(str(p.get("text", "")) for p in content_parts(content) if p.get("type") in TEXT_PART_TYPES)


def is_text_only(parts: list[dict[str, Any]]) -> bool:
    return all(part.get("type") in TEXT_PART_TYPES for part in parts)


def output_to_text(output: Any) -> str:
    """A function_call_output's `output` (a string or content parts) as a string."""
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return text_of(output)
    return "" if output is None else str(output)


def is_gateway_tool(tool: dict[str, Any]) -> bool:
    """Server tools the gateway runs itself (`service:...`) never go to a provider."""
    return str(tool.get("type", "")).startswith("service:") or str(tool.get("name", "")).startswith("service:")


def function_tools(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's function tools (a `namespace` tool's functions under their flat names: namespaces.py); another
    provider-side tool kind cannot be translated (BAD_REQUEST)."""
    tools = []
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict) or is_gateway_tool(tool):
            continue
        kind = tool.get("type")
        if kind == "namespace":
            tools.extend(namespaces.flatten(tool))
            continue
        if kind != "function":
            raise unsupported(f"tool type {kind!r}", HOSTED_TOOL_HINTS.get(kind, ""))
        tools.append(tool)
    return tools


def offered_tools(body: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    """(the function tools the model may call, the tool_choice to translate). `tool_choice: {type: allowed_tools,
    mode, tools}` keeps only the listed tools callable: the others are not sent, and the choice becomes its mode
    (`auto` or `required`); a required choice among no function tool is a 400."""
    tools = function_tools(body)
    choice = body.get("tool_choice")
    if not isinstance(choice, dict) or choice.get("type") != "allowed_tools":
        return tools, choice
    allowed = {str(t.get("name")) for t in choice.get("tools") or () if isinstance(t, dict) and t.get("name")}
    mode = choice.get("mode") or "auto"
    tools = [t for t in tools if t.get("name") in allowed]
    if not tools and mode == "required":
        raise unsupported("tool_choice allowed_tools with mode required and no function tool of the request")
    return tools, mode


# What to do about a hosted tool this format cannot carry.
HOSTED_TOOL_HINTS = {
    "web_search": "configure a web search engine on the gateway (it then runs the search itself), route the model "
    'to an openai-responses provider, or turn the tool off in the client (Codex: web_search = "disabled")',
}
ITEM_REFERENCE_HINT = "the gateway is stateless and stores no items: send the referenced item itself"
# The `include` values every format honours: encrypted reasoning is returned whenever the upstream produced it.
INCLUDE_EVERYWHERE = frozenset({"reasoning.encrypted_content"})


def check_include(body: dict[str, Any]) -> None:
    """`include` on a translating format: `reasoning.encrypted_content` is honoured (the reasoning the upstream
    signed or encrypted is always returned); any other value names output this format does not produce."""
    for value in body.get("include") or ():
        if value not in INCLUDE_EVERYWHERE:
            raise unsupported(f"include value {value!r}")


def unsupported(what: str, hint: str = "") -> ProviderError:
    message = f"{what} is not supported by this provider's API format"
    return ProviderError(ProviderErrorKind.BAD_REQUEST, f"{message}: {hint}" if hint else message)


# Image output and its options: only `openai-chat` forwards them (routing sends them only to image models).
IMAGE_OUTPUT = ("modalities", "image_config")


PASSES = {"modalities": ["text"], "truncation": "disabled"}  # values that ask for what every format does anyway


def refuse_unforwarded(body: dict[str, Any], fields: tuple[str, ...]) -> None:
    """A 400 (the provider error `unsupported`) for the first of `fields` the request sets that this format does
    not carry, so nothing is accepted and dropped; values asking for what every format does anyway pass."""
    for key in fields:
        value = body.get(key)
        if value is None or value in ([], {}) or PASSES.get(key) == value:
            continue
        raise unsupported("modalities (image output)" if key == "modalities" else key)


# --- building the result ------------------------------------------------------------------------------------


def message_item(text: str, *, refusal: str | None = None) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text:
        content.append({"type": "output_text", "text": text, "annotations": []})
    if refusal:
        content.append({"type": "refusal", "refusal": refusal})
    return {"type": "message", "id": new_id("msg"), "role": "assistant", "status": "completed", "content": content}


def function_call_item(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": new_id("fc"),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def reasoning_item(text: str, signature: str = "") -> dict[str, Any]:
    item = {
        "type": "reasoning",
        "id": new_id("rs"),
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}],
    }
    if signature:
        item["encrypted_content"] = signature  # Anthropic's thinking signature, to send back in a later turn
    return item


def redacted_reasoning_item(data: str) -> dict[str, Any]:
    """Anthropic's `redacted_thinking` block: encrypted reasoning only, sent back as it was in a later turn."""
    return {"type": "reasoning", "id": new_id("rs"), "summary": [], "encrypted_content": data, "redacted": True}


def build_output(
    text: str,
    calls: list[tuple[str, str, str]],
    refusal: str | None = None,
    reasoning: str = "",
    signature: str = "",
) -> list[dict[str, Any]]:
    """Output items: the reasoning (when the provider returned its text), one message (when there is text or a
    refusal), then one function_call per call."""
    output = [reasoning_item(reasoning, signature)] if reasoning else []
    if text or refusal:
        output.append(message_item(text, refusal=refusal))
    output.extend(function_call_item(*call) for call in calls)
    return output


def make_result(upstream_id: str, output: list[dict[str, Any]], usage: Usage, finish: str) -> CanonicalResult:
    """A CanonicalResult whose status follows the finish reason (length / content_filter → incomplete)."""
    reason = INCOMPLETE_REASONS.get(finish)
    return CanonicalResult(
        upstream_id=upstream_id,
        output=output,
        usage=usage,
        status="incomplete" if reason else "completed",
        incomplete_reason=reason,
        finish_reason=finish,
    )


def as_int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def served_tier(value: Any) -> str | None:
    """The service tier an upstream reports it served a request at (a short name), or None."""
    return value[:40] if isinstance(value, str) and value else None


def as_count(value: Any, name: str) -> int:
    """A token count from an upstream's usage: absent is 0; a whole number >= 0 (also written `12.0`) is
    taken; anything else (negative, fractional, a string, a boolean) is a malformed answer, never a count."""
    if value is None:
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise malformed(f"usage: {name} is {value!r}")

"""Anthropic Messages request → the canonical (Responses) request body, pure.

`to_canonical(body, betas)` validates every member of a Messages body (a 400 naming it) and returns the
equivalent Responses body:

- `system` (string or text blocks, `cache_control` kept) → system messages first in `input`;
- `messages`: text blocks → input_text (user) / output_text (assistant); image blocks (base64, url, file
  sources) → input_image; document blocks (base64 / url PDFs, plain text) → input_file / input_text;
  `tool_use` → function_call items (input as JSON arguments); `tool_result` → function_call_output (text
  content; `is_error: true` prefixes the output with "Error: "); `cache_control` on blocks kept;
  `thinking` / `redacted_thinking` blocks of earlier turns are not sent on (providers ignore them);
- `tools` (custom tools with `input_schema`) → function tools; `tool_choice` auto / any / tool / none
  (and `disable_parallel_tool_use`) → `tool_choice` / `parallel_tool_calls`;
- `max_tokens` → `max_output_tokens`; `thinking` {enabled, budget_tokens} → `reasoning` (effort from the
  budget, the budget itself as `reasoning.max_tokens`); `output_config` / `output_format` json_schema →
  `text.format`; `stop_sequences` → `stop`; `temperature`, `top_p`, `top_k`; `metadata.user_id` → `user`;
- the `anthropic-beta` header's features are carried (as `anthropic_beta`) to Anthropic-format providers.

Refused: server tools (web search, code execution, ...), `mcp_servers`, `container`, `context_management`,
`service_tier` other than auto, metadata members other than `user_id`, and any unknown member.
"""

from __future__ import annotations

import json
from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference import schema
from inference.ingress.common import is_int, require_list, require_object

SHARED = ("model", "models", "temperature", "top_p", "top_k", "provider", "route", "session_id", "trace", "plugins")
THINKING_EFFORTS = ((2048, "low"), (8192, "medium"), (24576, "high"))
BLOCK_CACHE = "cache_control"


def _cache(path: str, block: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    if block.get(BLOCK_CACHE) is not None:
        schema.CHECKERS["cache_control"](f"{path}.cache_control", block[BLOCK_CACHE])
        out[BLOCK_CACHE] = block[BLOCK_CACHE]
    return out


def _source_url(path: str, source: Any, kinds: tuple[str, ...]) -> dict[str, Any]:
    source = require_object(f"{path}.source", source)
    kind = source.get("type")
    if kind not in kinds:
        raise validation_error(f"{path}.source.type", f"must be one of {', '.join(kinds)}")
    if kind == "base64":
        if not isinstance(source.get("media_type"), str) or not isinstance(source.get("data"), str):
            raise validation_error(f"{path}.source", "needs media_type and data")
        return {"url": f"data:{source['media_type']};base64,{source['data']}"}
    if kind == "url":
        if not isinstance(source.get("url"), str) or not source["url"]:
            raise validation_error(f"{path}.source.url", "is required")
        return {"url": source["url"]}
    if kind == "file":
        if not isinstance(source.get("file_id"), str):
            raise validation_error(f"{path}.source.file_id", "is required")
        return {"file_id": source["file_id"]}
    if not isinstance(source.get("data"), str):
        raise validation_error(f"{path}.source.data", "must be a string")
    return {"text": source["data"]}


def _text_block(path: str, block: dict[str, Any], role: str) -> dict[str, Any]:
    if not isinstance(block.get("text"), str):
        raise validation_error(f"{path}.text", "must be a string")
    part = {"type": "output_text" if role == "assistant" else "input_text", "text": block["text"]}
    return _cache(path, block, part)


def _image_block(path: str, block: dict[str, Any]) -> dict[str, Any]:
    source = _source_url(path, block.get("source"), ("base64", "url", "file"))
    part = {"type": "input_image", "detail": "auto"}
    if "url" in source:
        part["image_url"] = source["url"]
    else:
        part["file_id"] = source["file_id"]
    return _cache(path, block, part)


def _document_block(path: str, block: dict[str, Any]) -> dict[str, Any]:
    source = _source_url(path, block.get("source"), ("base64", "url", "file", "text"))
    if "text" in source:
        return _cache(path, block, {"type": "input_text", "text": source["text"]})
    part: dict[str, Any] = {"type": "input_file"}
    if "file_id" in source:
        part["file_id"] = source["file_id"]
    elif source["url"].startswith("data:"):
        part["file_data"] = source["url"]
        part["filename"] = block.get("title") if isinstance(block.get("title"), str) else "document.pdf"
    else:
        part["file_url"] = source["url"]
    return _cache(path, block, part)


def _tool_result(path: str, block: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(block.get("tool_use_id"), str) or not block["tool_use_id"]:
        raise validation_error(f"{path}.tool_use_id", "is required")
    content = block.get("content", "")
    if isinstance(content, list):
        texts = []
        for index, item in enumerate(content):
            where = f"{path}.content[{index}]"
            item = require_object(where, item)
            if item.get("type") != "text" or not isinstance(item.get("text"), str):
                raise validation_error(f"{where}.type", "is not supported: tool results carry text blocks only")
            texts.append(item["text"])
        content = "".join(texts)
    elif not isinstance(content, str):
        raise validation_error(f"{path}.content", "must be a string or an array of text blocks")
    if block.get("is_error") is not None and not isinstance(block["is_error"], bool):
        raise validation_error(f"{path}.is_error", "must be a boolean")
    output = f"Error: {content}" if block.get("is_error") else content
    return {"type": "function_call_output", "call_id": block["tool_use_id"], "output": output}


def _tool_use(path: str, block: dict[str, Any]) -> dict[str, Any]:
    for key in ("id", "name"):
        if not isinstance(block.get(key), str) or not block[key]:
            raise validation_error(f"{path}.{key}", "is required")
    arguments = json.dumps(require_object(f"{path}.input", block.get("input", {})))
    return {"type": "function_call", "call_id": block["id"], "name": block["name"], "arguments": arguments}


def _blocks(path: str, role: str, content: Any) -> list[dict[str, Any]]:
    """The canonical items of one message: its parts grouped in messages, tool blocks as their own items."""
    if isinstance(content, str):
        kind = "output_text" if role == "assistant" else "input_text"
        return [{"type": "message", "role": role, "content": [{"type": kind, "text": content}]}]
    items: list[dict[str, Any]] = []
    for index, block in enumerate(require_list(f"{path}.content", content)):
        where = f"{path}.content[{index}]"
        block = require_object(where, block)
        kind = block.get("type")
        allowed = ("text",) if role == "assistant" else ("text", "image", "document", "tool_result")
        if kind in ("thinking", "redacted_thinking") and role == "assistant":
            continue
        if kind == "tool_use" and role == "assistant":
            items.append(_tool_use(where, block))
            continue
        if kind not in allowed:
            raise validation_error(f"{where}.type", f"must be one of {', '.join(allowed)} in a {role} message")
        if kind == "tool_result":
            items.append(_tool_result(where, block))
            continue
        part = {"text": _text_block, "image": _image_block, "document": _document_block}[kind]
        converted = part(where, block, role) if kind == "text" else part(where, block)
        if items and items[-1]["type"] == "message":
            items[-1]["content"].append(converted)
        else:
            items.append({"type": "message", "role": role, "content": [converted]})
    return items


def _system(value: Any) -> list[dict[str, Any]]:
    if value is None:
        return []
    if isinstance(value, str):
        return [{"type": "message", "role": "system", "content": value}] if value else []
    parts = []
    for index, block in enumerate(require_list("system", value)):
        where = f"system[{index}]"
        block = require_object(where, block)
        if block.get("type") != "text":
            raise validation_error(f"{where}.type", "must be text")
        parts.append(_text_block(where, block, "system"))
    return [{"type": "message", "role": "system", "content": parts}] if parts else []


def _messages(value: Any) -> list[dict[str, Any]]:
    messages = require_list("messages", value)
    if not messages:
        raise validation_error("messages", "must contain at least one message")
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        message = require_object(path, message)
        if message.get("role") not in ("user", "assistant"):
            raise validation_error(f"{path}.role", "must be user or assistant")
        extra = set(message) - {"role", "content"}
        if extra:
            raise validation_error(f"{path}.{sorted(extra)[0]}", "is not a member of a message")
        items.extend(_blocks(path, message["role"], message.get("content")))
    return items


def effort_of_budget(budget: int) -> str:
    return next((effort for limit, effort in THINKING_EFFORTS if budget <= limit), "xhigh")


def _thinking(value: Any, max_tokens: int) -> dict[str, Any] | None:
    thinking = require_object("thinking", value)
    kind = thinking.get("type")
    if kind == "disabled":
        return {"enabled": False}
    if kind != "enabled":
        raise validation_error("thinking.type", "must be enabled or disabled")
    budget = thinking.get("budget_tokens")
    if not is_int(budget) or budget < 1024:
        raise validation_error("thinking.budget_tokens", "must be an integer of at least 1024")
    if budget >= max_tokens:
        raise validation_error("thinking.budget_tokens", "must be less than max_tokens")
    return {"enabled": True, "effort": effort_of_budget(budget), "max_tokens": budget}


def _tools(value: Any) -> list[dict[str, Any]]:
    tools = []
    for index, tool in enumerate(require_list("tools", value)):
        path = f"tools[{index}]"
        tool = require_object(path, tool)
        if tool.get("type") not in (None, "custom"):
            raise validation_error(f"{path}.type", "is not supported: server tools are not offered; use custom tools")
        unknown = set(tool) - {"type", "name", "description", "input_schema", "cache_control", "strict"}
        if unknown:
            raise validation_error(f"{path}.{sorted(unknown)[0]}", "is not a member of a custom tool")
        if not isinstance(tool.get("input_schema"), dict):
            raise validation_error(f"{path}.input_schema", "is required and must be a JSON schema object")
        converted = {"type": "function", "name": tool.get("name"), "parameters": tool["input_schema"]}
        for key in ("description", "strict"):
            if tool.get(key) is not None:
                converted[key] = tool[key]
        tools.append(_cache(path, tool, converted))
    schema.CHECKERS["tools"]("tools", tools)
    return tools


def _tool_choice(value: Any, out: dict[str, Any]) -> None:
    choice = require_object("tool_choice", value)
    kind = choice.get("type")
    mapped = {"auto": "auto", "any": "required", "none": "none"}
    if kind == "tool":
        if not isinstance(choice.get("name"), str) or not choice["name"]:
            raise validation_error("tool_choice.name", "is required when type is tool")
        out["tool_choice"] = {"type": "function", "name": choice["name"]}
    elif kind in mapped:
        out["tool_choice"] = mapped[kind]
    else:
        raise validation_error("tool_choice.type", "must be one of auto, any, tool, none")
    disable = choice.get("disable_parallel_tool_use")
    if disable is not None and not isinstance(disable, bool):
        raise validation_error("tool_choice.disable_parallel_tool_use", "must be a boolean")
    if disable:
        out["parallel_tool_calls"] = False


def _json_format(name: str, value: Any) -> dict[str, Any]:
    fmt = require_object(name, value)
    if fmt.get("type") != "json_schema" or not isinstance(fmt.get("schema"), dict):
        raise validation_error(name, "must be {type: json_schema, schema: {...}}")
    return {"type": "json_schema", "name": "output", "schema": fmt["schema"], "strict": True}


def _output(body: dict[str, Any], out: dict[str, Any]) -> None:
    config = body.get("output_config")
    fmt = None
    if config is not None:
        config = require_object("output_config", config)
        unknown = set(config) - {"format", "effort"}
        if unknown:
            raise validation_error(f"output_config.{sorted(unknown)[0]}", "is not supported")
        if config.get("format") is not None:
            fmt = _json_format("output_config.format", config["format"])
        if config.get("effort") is not None:
            schema.CHECKERS["reasoning"]("output_config", {"effort": config["effort"]})
            out["reasoning"] = {**out.get("reasoning", {}), "effort": config["effort"]}
    if body.get("output_format") is not None:
        fmt = _json_format("output_format", body["output_format"])
    if fmt:
        out["text"] = {"format": fmt}


def _metadata(value: Any, out: dict[str, Any]) -> None:
    metadata = require_object("metadata", value)
    unknown = set(metadata) - {"user_id"}
    if unknown:
        raise validation_error(f"metadata.{sorted(unknown)[0]}", "is not supported: metadata takes user_id only")
    user = metadata.get("user_id")
    if user is not None:
        schema.CHECKERS["user"]("metadata.user_id", user)
        out["user"] = user


def _stop_sequences(value: Any) -> list[str]:
    stops = require_list("stop_sequences", value)
    if not all(isinstance(s, str) and s for s in stops):
        raise validation_error("stop_sequences", "must be an array of non-empty strings")
    return stops


HANDLED = frozenset(
    {
        "messages",
        "system",
        "max_tokens",
        "tools",
        "tool_choice",
        "thinking",
        "stop_sequences",
        "metadata",
        "output_config",
        "output_format",
        "service_tier",
        "stream",
    }
)
REFUSED = ("mcp_servers", "container", "context_management", "inference_geo")


def to_canonical(body: Any, betas: list[str] | None = None) -> dict[str, Any]:
    """The Responses body of a Messages body (400 naming the first wrong member)."""
    if not isinstance(body, dict):
        raise GatewayError(400, "Request body must be a JSON object")
    for name in body:
        if name in REFUSED:
            raise validation_error(name, "is not supported: the gateway does not offer this option")
        if name not in HANDLED and name not in SHARED:
            raise validation_error(name, "unknown parameter")
    out: dict[str, Any] = {}
    for name in SHARED:
        if body.get(name) is not None:
            check = schema.CHECKERS[name]
            if name == "temperature":
                check = lambda n, v: schema._number(n, v, 0, 1)  # noqa: E731 (Anthropic's range)
            check(name, body[name])
            out[name] = body[name]
    if not out.get("model") and not out.get("models"):
        raise validation_error("model", "is required")
    max_tokens = body.get("max_tokens")
    if not is_int(max_tokens) or max_tokens < 1:
        raise validation_error("max_tokens", "is required and must be an integer of at least 1")
    out["max_output_tokens"] = max_tokens
    if body.get("stream") is not None:
        schema.CHECKERS["stream"]("stream", body["stream"])
        out["stream"] = body["stream"]
    out["input"] = _system(body.get("system")) + _messages(body.get("messages"))
    if body.get("tools") is not None:
        out["tools"] = _tools(body["tools"])
    if body.get("tool_choice") is not None:
        _tool_choice(body["tool_choice"], out)
    if body.get("thinking") is not None:
        out["reasoning"] = _thinking(body["thinking"], max_tokens)
    _output(body, out)
    if body.get("stop_sequences"):
        out["stop"] = _stop_sequences(body["stop_sequences"])
    if body.get("metadata") is not None:
        _metadata(body["metadata"], out)
    if body.get("service_tier") not in (None, "auto"):
        raise validation_error("service_tier", "is not supported: only auto")
    if betas:
        out["anthropic_beta"] = betas
    return out

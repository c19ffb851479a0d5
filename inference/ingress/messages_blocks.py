"""Anthropic Messages `system` and `messages` → canonical input items (pure): text, image, document,
`tool_use` and `tool_result` blocks, `cache_control` kept on the parts, and the server-tool blocks of earlier
answers (inference.ingress.messages_history). Every member is checked; a 400 names
it (`messages[i].content[j]. ...`)."""

from __future__ import annotations

import json
from typing import Any

from gateway_project.api.errors import validation_error
from inference import schema
from inference.ingress.common import require_list, require_object
from inference.ingress.messages_history import SERVER_BLOCKS, server_history

BLOCK_CACHE = "cache_control"


def cache(path: str, block: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
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
    citations = block.get("citations")
    if citations is not None and (role != "assistant" or not isinstance(citations, list)):
        raise validation_error(f"{path}.citations", "is only accepted on assistant text blocks, as an array")
    part = {"type": "output_text" if role == "assistant" else "input_text", "text": block["text"]}
    return cache(path, block, part)


def _image_block(path: str, block: dict[str, Any]) -> dict[str, Any]:
    source = _source_url(path, block.get("source"), ("base64", "url", "file"))
    part = {"type": "input_image", "detail": "auto"}
    if "url" in source:
        part["image_url"] = source["url"]
    else:
        part["file_id"] = source["file_id"]
    return cache(path, block, part)


def _document_block(path: str, block: dict[str, Any]) -> dict[str, Any]:
    source = _source_url(path, block.get("source"), ("base64", "url", "file", "text"))
    if "text" in source:
        return cache(path, block, {"type": "input_text", "text": source["text"]})
    part: dict[str, Any] = {"type": "input_file"}
    if "file_id" in source:
        part["file_id"] = source["file_id"]
    elif source["url"].startswith("data:"):
        part["file_data"] = source["url"]
        part["filename"] = block.get("title") if isinstance(block.get("title"), str) else "document.pdf"
    else:
        part["file_url"] = source["url"]
    return cache(path, block, part)


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
    item = {"type": "function_call_output", "call_id": block["tool_use_id"], "output": output}
    return cache(path, block, item)  # a breakpoint on the result reaches Anthropic-format providers


def _tool_use(path: str, block: dict[str, Any]) -> dict[str, Any]:
    for key in ("id", "name"):
        if not isinstance(block.get(key), str) or not block[key]:
            raise validation_error(f"{path}.{key}", "is required")
    arguments = json.dumps(require_object(f"{path}.input", block.get("input", {})))
    return {"type": "function_call", "call_id": block["id"], "name": block["name"], "arguments": arguments}


def _thinking(path: str, block: dict[str, Any]) -> dict[str, Any]:
    """An earlier turn's thinking block → a reasoning item with its signature (Anthropic providers get the block
    back, as they require in tool-use turns; other providers do not take it)."""
    if block["type"] == "redacted_thinking":
        if not isinstance(block.get("data"), str):
            raise validation_error(f"{path}.data", "must be a string")
        return {"type": "reasoning", "summary": [], "encrypted_content": block["data"], "redacted": True}
    for key in ("thinking", "signature"):
        if not isinstance(block.get(key), str):
            raise validation_error(f"{path}.{key}", "must be a string")
    item = {"type": "reasoning", "summary": [], "content": [{"type": "reasoning_text", "text": block["thinking"]}]}
    if block["signature"]:
        item["encrypted_content"] = block["signature"]
    return item


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
            items.append(_thinking(where, block))
            continue
        if kind == "tool_use" and role == "assistant":
            items.append(_tool_use(where, block))
            continue
        if kind in SERVER_BLOCKS and role == "assistant":
            server_history(where, block, items)
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


def system_items(value: Any) -> list[dict[str, Any]]:
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


def _system_message(path: str, content: Any) -> dict[str, Any]:
    """A `system` message inside `messages` (mid-conversation instructions) → a developer message at the same
    place: Anthropic-format providers get it back there (with the mid-conversation beta the client sent), Chat
    Completions providers as a `system` message, Responses providers as a `developer` one."""
    if isinstance(content, str):
        return {"type": "message", "role": "developer", "content": content}
    parts = []
    for index, block in enumerate(require_list(f"{path}.content", content)):
        where = f"{path}.content[{index}]"
        block = require_object(where, block)
        if block.get("type") != "text":
            raise validation_error(f"{where}.type", "must be text in a system message")
        parts.append(_text_block(where, block, "system"))
    return {"type": "message", "role": "developer", "content": parts}


def message_items(value: Any) -> list[dict[str, Any]]:
    messages = require_list("messages", value)
    if not messages:
        raise validation_error("messages", "must contain at least one message")
    items: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        message = require_object(path, message)
        if message.get("role") not in ("user", "assistant", "system"):
            raise validation_error(f"{path}.role", "must be user, assistant or system")
        extra = set(message) - {"role", "content"}
        if extra:
            raise validation_error(f"{path}.{sorted(extra)[0]}", "is not a member of a message")
        if message["role"] == "system":
            items.append(_system_message(path, message.get("content")))
            continue
        items.extend(_blocks(path, message["role"], message.get("content")))
    return items

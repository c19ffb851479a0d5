"""Chat Completions `messages` → canonical input items (pure): system / developer / user messages with their
content parts, assistant text, refusal and `tool_calls` (→ function_call items; an earlier answer's
`annotations` are accepted and not sent upstream, the text carries its links), tool messages (→
function_call_output). Every member is checked; a 400 names it (`messages[i]. ...`)."""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import GatewayError, validation_error
from inference.ingress.common import require_list, require_object, text_parts


def refuse(name: str, why: str) -> GatewayError:
    return validation_error(name, f"is not supported: {why}")


ROLES = ("system", "developer", "user", "assistant", "tool")
MESSAGE_KEYS = {
    "system": {"role", "content"},
    "developer": {"role", "content"},
    "user": {"role", "content"},
    "assistant": {"role", "content", "tool_calls", "refusal", "annotations"},
    "tool": {"role", "content", "tool_call_id", "name"},  # name: the function answered (router-API clients send it)
}


def _user_part(path: str, part: Any) -> dict[str, Any]:
    part = require_object(path, part)
    kind = part.get("type")
    if kind == "text":
        if not isinstance(part.get("text"), str):
            raise validation_error(f"{path}.text", "must be a string")
        return {"type": "input_text", "text": part["text"]}
    if kind == "image_url":
        image = require_object(f"{path}.image_url", part.get("image_url"))
        if not isinstance(image.get("url"), str) or not image["url"]:
            raise validation_error(f"{path}.image_url.url", "is required and must be a string")
        out = {"type": "input_image", "image_url": image["url"], "detail": image.get("detail") or "auto"}
        if out["detail"] not in ("auto", "low", "high"):
            raise validation_error(f"{path}.image_url.detail", "must be one of auto, low, high")
        return out
    if kind == "input_audio":
        audio = require_object(f"{path}.input_audio", part.get("input_audio"))
        if not isinstance(audio.get("data"), str) or audio.get("format") not in ("wav", "mp3"):
            raise validation_error(f"{path}.input_audio", "needs data (base64) and format (wav or mp3)")
        return {"type": "input_audio", "input_audio": {"data": audio["data"], "format": audio["format"]}}
    if kind == "file":
        file = require_object(f"{path}.file", part.get("file"))
        out = {"type": "input_file"}
        for key in ("file_data", "file_id", "filename"):
            if file.get(key) is not None:
                if not isinstance(file[key], str):
                    raise validation_error(f"{path}.file.{key}", "must be a string")
                out[key] = file[key]
        if "file_data" not in out and "file_id" not in out:
            raise validation_error(f"{path}.file", "needs file_data or file_id")
        return out
    raise validation_error(f"{path}.type", "must be one of text, image_url, input_audio, file")


def _content(path: str, role: str, content: Any) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    if role == "user":
        return [_user_part(f"{path}[{i}]", p) for i, p in enumerate(require_list(path, content))]
    return text_parts(path, content, allowed=("text",) if role != "assistant" else ("text", "refusal"))


def _tool_calls(path: str, calls: Any) -> list[dict[str, Any]]:
    items = []
    for index, call in enumerate(require_list(path, calls)):
        where = f"{path}[{index}]"
        call = require_object(where, call)
        if call.get("type", "function") != "function":
            raise validation_error(f"{where}.type", "must be function")
        function = require_object(f"{where}.function", call.get("function"))
        if not isinstance(call.get("id"), str) or not call["id"]:
            raise validation_error(f"{where}.id", "is required")
        if not isinstance(function.get("name"), str) or not function["name"]:
            raise validation_error(f"{where}.function.name", "is required")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            raise validation_error(f"{where}.function.arguments", "must be a JSON string")
        items.append({"type": "function_call", "call_id": call["id"], "name": function["name"], "arguments": arguments})
    return items


def message_items(index: int, message: Any) -> list[dict[str, Any]]:
    path = f"messages[{index}]"
    message = require_object(path, message)
    role = message.get("role")
    if role not in ROLES:
        if role == "function":
            raise refuse(f"{path}.role", "the deprecated function role; use tool messages with tool_call_id")
        raise validation_error(f"{path}.role", f"must be one of {', '.join(ROLES)}")
    extra = set(message) - MESSAGE_KEYS[role]
    if extra:
        name = sorted(extra)[0]
        if name == "name":
            raise refuse(f"{path}.name", "participant names are not forwarded to every provider")
        raise validation_error(f"{path}.{name}", f"is not a member of a {role} message")
    content = message.get("content")
    if role == "tool":
        if not isinstance(message.get("tool_call_id"), str) or not message["tool_call_id"]:
            raise validation_error(f"{path}.tool_call_id", "is required")
        output = content if isinstance(content, str) else _joined(_content(f"{path}.content", role, content))
        return [{"type": "function_call_output", "call_id": message["tool_call_id"], "output": output}]
    if role == "assistant":
        return _assistant(path, message)
    if content is None:
        raise validation_error(f"{path}.content", "is required")
    return [{"type": "message", "role": role, "content": _content(f"{path}.content", role, content)}]


def check_tool_names(messages: list[Any], items: list[dict[str, Any]]) -> None:
    """A tool message's `name` (router-API clients such as the AI SDK's router provider send it) must be the name
    of the function whose call its `tool_call_id` answers; the call id carries it on to every provider."""
    calls = {item["call_id"]: item["name"] for item in items if item.get("type") == "function_call"}
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") != "tool" or message.get("name") is None:
            continue
        name, path = message["name"], f"messages[{index}].name"
        if not isinstance(name, str):
            raise validation_error(path, "must be a string")
        called = calls.get(message.get("tool_call_id"))
        if called is not None and called != name:
            raise validation_error(path, f"is not the name of the function called by tool_call_id ({called})")


def _joined(parts: list[dict[str, Any]]) -> str:
    return "".join(p.get("text", "") for p in parts)


def _assistant(path: str, message: dict[str, Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    content = message.get("content")
    parts: list[dict[str, Any]] = []
    if content is not None:
        raw = _content(f"{path}.content", "assistant", content)
        text = raw if isinstance(raw, str) else _joined([p for p in raw if p["type"] == "output_text"])
        if text:
            parts.append({"type": "output_text", "text": text, "annotations": []})
    if message.get("annotations") is not None and not isinstance(message["annotations"], list):
        raise validation_error(f"{path}.annotations", "must be an array")  # an earlier answer's citations: not sent
    refusal = message.get("refusal")
    if refusal is not None and not isinstance(refusal, str):
        raise validation_error(f"{path}.refusal", "must be a string")
    if refusal:
        parts.append({"type": "refusal", "refusal": refusal})
    if parts:
        items.append({"type": "message", "role": "assistant", "content": parts})
    if message.get("tool_calls") is not None:
        items.extend(_tool_calls(f"{path}.tool_calls", message["tool_calls"]))
    if not items and content is None:
        raise validation_error(f"{path}.content", "is required unless tool_calls is set")
    return items

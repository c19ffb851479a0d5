"""The texts of a Responses request that content filters read, wherever they stand: `instructions`, every input
message, tool call (its arguments) and tool output, tool and schema descriptions, prompt variables, and the text
of files sent inline (`request_texts`); each as a slot that can be read and rewritten in place (redaction). And
`prompt_text`: the instructions and the input's text as one string, what the prompt classifier reads.

Shared below the policy apps (docs/architecture.md): the guardrails scan these slots, and the data plane's
moderation plugin and file handling read them too.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class TextSlot:
    """One text of the request: where it lives in the body (container + key) and whose it is."""

    container: Any
    key: Any
    role: str

    @property
    def text(self) -> str:
        return self.container[self.key]

    def write(self, text: str) -> None:
        self.container[self.key] = text


TEXT_MEDIA_TYPES = ("text/", "application/json", "application/xml", "application/x-ndjson")


@dataclass(slots=True)
class FileSlot(TextSlot):
    """The text of a file sent inline as a `data:<text type>;base64,...` URL: read decoded, written re-encoded."""

    prefix: str = ""

    @property
    def text(self) -> str:
        return base64.b64decode(self.container[self.key][len(self.prefix) :]).decode("utf-8")

    def write(self, text: str) -> None:
        self.container[self.key] = self.prefix + base64.b64encode(text.encode("utf-8")).decode("ascii")


def file_slot(part: dict, role: str) -> FileSlot | None:
    """The slot of an `input_file` part whose inline data is text, or None when it is not readable as text."""
    data = part.get("file_data")
    if not isinstance(data, str) or not data.startswith("data:") or ";base64," not in data:
        return None
    prefix = data[: data.index(";base64,") + 8]
    if not prefix[5:].lower().startswith(TEXT_MEDIA_TYPES):
        return None
    slot = FileSlot(part, "file_data", role, prefix)
    try:
        slot.text  # noqa: B018  (decodes: base64 and UTF-8 must both hold)
    except (ValueError, UnicodeDecodeError):
        return None
    return slot


def opaque_files(body: dict) -> list[str]:
    """The `input_file` parts content filters cannot read (a PDF, a file by id or URL): their names."""
    names = []
    for item in body.get("input") if isinstance(body.get("input"), list) else ():
        parts = item.get("content") if isinstance(item, dict) else None
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, dict) and part.get("type") == "input_file" and file_slot(part, "user") is None:
                names.append(str(part.get("filename") or part.get("file_id") or part.get("file_url") or "file"))
    return names


def _item_texts(item: dict, role: str) -> Iterator[TextSlot]:
    content = item.get("content")
    if isinstance(content, str):
        yield TextSlot(item, "content", role)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield TextSlot(part, "text", role)
            elif isinstance(part, dict) and part.get("type") == "input_file" and (slot := file_slot(part, role)):
                yield slot
    for summary in item.get("summary") or () if item.get("type") == "reasoning" else ():
        if isinstance(summary, dict) and isinstance(summary.get("text"), str):
            yield TextSlot(summary, "text", "assistant")  # reasoning summaries sent back as input
    output = item.get("output")
    if isinstance(output, str):  # function_call_output items carry tool results as `output`
        yield TextSlot(item, "output", "tool")
    elif isinstance(output, list):
        for part in output:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                yield TextSlot(part, "text", "tool")
    if item.get("type") == "function_call" and isinstance(item.get("arguments"), str):
        yield TextSlot(item, "arguments", "assistant")  # the arguments of a tool call the model made earlier


def _schema_descriptions(schema: Any, depth: int = 0) -> Iterator[TextSlot]:
    """`description` strings anywhere in a JSON schema (a tool's parameters): the model reads them too."""
    if depth > 64:
        return
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key in ("description", "title") and isinstance(value, str):
                yield TextSlot(schema, key, "system")
            else:
                yield from _schema_descriptions(value, depth + 1)
    elif isinstance(schema, list):
        for value in schema:
            yield from _schema_descriptions(value, depth + 1)


def _tool_texts(body: dict) -> Iterator[TextSlot]:
    for tool in body.get("tools") or ():
        if isinstance(tool, dict):
            if isinstance(tool.get("description"), str):
                yield TextSlot(tool, "description", "system")
            yield from _schema_descriptions(tool.get("parameters"))


def _prompt_texts(body: dict) -> Iterator[TextSlot]:
    variables = (body.get("prompt") or {}).get("variables") if isinstance(body.get("prompt"), dict) else None
    for name, value in (variables or {}).items() if isinstance(variables, dict) else ():
        if isinstance(value, str):
            yield TextSlot(variables, name, "user")
        elif isinstance(value, dict):
            yield from _item_texts({"content": [value]}, "user")


def request_texts(body: dict) -> list[TextSlot]:
    """Every text of the request that content filters apply to (docs/guardrails.md lists them)."""
    slots: list[TextSlot] = []
    if isinstance(body.get("instructions"), str):
        slots.append(TextSlot(body, "instructions", "system"))
    slots.extend(_tool_texts(body))
    slots.extend(_prompt_texts(body))
    data = body.get("input")
    if isinstance(data, str):
        slots.append(TextSlot(body, "input", "user"))
    elif isinstance(data, list):
        for index, item in enumerate(data):
            if isinstance(item, dict):
                slots.extend(_item_texts(item, str(item.get("role") or "user")))
            elif isinstance(item, str):  # an /embeddings input array of strings
                slots.append(TextSlot(data, index, "user"))
    return slots


def has_token_input(body: dict) -> bool:
    """Whether `input` holds token ids (an /embeddings input), which content filters cannot read."""
    data = body.get("input")
    return isinstance(data, list) and bool(data) and isinstance(data[0], (int, list))


MAX_CLASSIFIED_CHARS = 8_000


def prompt_text(body: dict) -> str:
    """The instructions and the user-visible text of the input, as one string."""
    parts: list[str] = []
    if isinstance(body.get("instructions"), str):
        parts.append(body["instructions"])
    items = body.get("input")
    if isinstance(items, str):
        parts.append(items)
    elif isinstance(items, list):
        for item in items:
            content = item.get("content") if isinstance(item, dict) else None
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return "\n".join(parts)[:MAX_CLASSIFIED_CHARS]

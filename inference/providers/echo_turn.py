"""What the offline `echo` model reads in a request, pure: the last user message, the tool results that came
after it, the tool it calls (honouring `tool_choice`) and the JSON schema its answer follows."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from inference.providers.base import ProviderError, ProviderErrorKind
from inference.providers.canonical import function_tools, input_items, item_type, output_to_text, text_of

MAX_PROMPT_SCHEMA_SCAN = 64  # `{` positions tried when looking for a JSON schema written in the prompt


@dataclass(slots=True)
class Turn:
    """The request as the echo model reads it."""

    prompt: str = ""  # the last user message's text
    results: list[tuple[str, str]] = field(default_factory=list)  # (tool name, output) after the last user message
    called: set[str] = field(default_factory=set)  # tools called after the last user message
    texts: list[str] = field(default_factory=list)  # every message's text, instructions first


def read_turn(body: dict[str, Any]) -> Turn:
    turn = Turn()
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        turn.texts.append(instructions)
    names: dict[str, str] = {}
    for item in input_items(body):
        kind = item_type(item)
        if kind == "message":
            text = text_of(item.get("content"))
            turn.texts.append(text)
            if item.get("role", "user") == "user":
                turn.prompt, turn.results, turn.called = _user_text(item.get("content")), [], set()
        elif kind == "function_call":
            names[str(item.get("call_id"))] = str(item.get("name", ""))
            turn.called.add(str(item.get("name", "")))
        elif kind == "function_call_output":
            name = names.get(str(item.get("call_id")), "tool")
            turn.results.append((name, output_to_text(item.get("output"))))
    return turn


def _user_text(content: Any) -> str:
    if isinstance(content, list):  # the parts' texts, one space apart (as the echo model always read them)
        return " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return content if isinstance(content, str) else ""


def tool_to_call(body: dict[str, Any], turn: Turn) -> dict[str, Any] | None:
    """The function tool the model calls now, or None when it answers. `tool_choice` none: never; a named
    function: that one; required: a tool not called yet since the user spoke when there is one; auto (the
    default): a tool until tool results came back, then an answer. Among candidates the first one the user's
    text names wins, else the first offered."""
    tools = function_tools(body)
    choice = body.get("tool_choice") or "auto"
    if isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        allowed = {t.get("name") for t in choice.get("tools") or () if isinstance(t, dict)}
        tools = [t for t in tools if t.get("name") in allowed]
        choice = choice.get("mode") or "auto"
    if not tools or choice == "none":
        return None
    if isinstance(choice, dict):
        named = next(
            (t for t in tools if choice.get("type") == "function" and t.get("name") == choice.get("name")), None
        )
        if named is None:
            raise ProviderError(ProviderErrorKind.BAD_REQUEST, "tool_choice names a function that is not in tools")
        return named
    if choice == "auto" and turn.results:
        return None
    fresh = [t for t in tools if t.get("name") not in turn.called] if choice == "required" else tools
    candidates = fresh or tools
    prompt = turn.prompt.lower()
    mentioned = [t for t in candidates if _mentions(prompt, str(t.get("name", "")))]
    return (mentioned or candidates)[0]


def _mentions(prompt: str, name: str) -> bool:
    words = name.lower().replace("-", "_")
    return bool(name) and (words in prompt or words.replace("_", " ") in prompt)


def answer_schema(body: dict[str, Any], turn: Turn) -> tuple[bool, dict[str, Any] | None]:
    """(answer in JSON?, the schema to follow). `text.format` json_schema: its schema; json_object: a JSON
    schema written in the prompt (as JSON-mode clients send it), else none (a JSON object of the answer)."""
    text = body.get("text")
    fmt = text.get("format") if isinstance(text, dict) else None
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if kind == "json_schema":
        return True, fmt.get("schema") if isinstance(fmt.get("schema"), dict) else {}
    if kind == "json_object":
        return True, _prompt_schema(turn.texts)
    return False, None


def _prompt_schema(texts: list[str]) -> dict[str, Any] | None:
    decoder = json.JSONDecoder()
    tried = 0
    for text in texts:
        for match in re.finditer(r"\{", text):
            tried += 1
            if tried > MAX_PROMPT_SCHEMA_SCAN:
                return None
            try:
                value, _ = decoder.raw_decode(text, match.start())
            except ValueError:
                continue
            if isinstance(value, dict) and isinstance(value.get("properties"), dict):
                return value
    return None

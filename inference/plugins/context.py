"""Helpers of the plugins that add context to the prompt (web, web-fetch)."""

from __future__ import annotations

from typing import Any

from inference.providers.canonical import text_of


def last_user_text(items: list[dict[str, Any]]) -> tuple[int | None, str]:
    """(index, text) of the last user message of the conversation, or (None, "")."""
    for index in range(len(items) - 1, -1, -1):
        item = items[index]
        if item.get("role") == "user" and item.get("type", "message") == "message":
            return index, text_of(item.get("content"))
    return None, ""


def insert_before_last_user(items: list[dict[str, Any]], text: str) -> None:
    """A system message with `text` right above the last user message (at the end when there is none)."""
    index, _ = last_user_text(items)
    message = {"type": "message", "role": "system", "content": text}
    items.insert(len(items) if index is None else index, message)


def field_of(ctx: Any, plugin: dict[str, Any]) -> str:
    plugins = ctx.body.get("plugins") or []
    for position, candidate in enumerate(plugins):
        if candidate is plugin:
            return f"plugins[{position}]"
    return "plugins"

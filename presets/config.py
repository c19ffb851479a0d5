"""Which request fields a preset keeps, and how a stored config maps onto a Responses request.

A version stores its `config` in the vocabulary of the body it was created from (DECISIONS.md §4):
Responses field names for POST /presets/{slug}/responses, messages field names (`max_tokens`,
`fallbacks`, `output_config`, `speed`) for POST /presets/{slug}/messages. `to_responses_fields` turns either
into Responses request fields when a request uses the preset.
"""

from __future__ import annotations

from typing import Any

from inference.chat_request_type import ChatRequest
from inference.messages_request_type import MessagesRequest
from inference.responses_request import ResponsesRequest, preset_members

MESSAGES_PRESET_ONLY = ("fallbacks",)  # the presets API's own member of a messages body

# The request-configuration members a preset persists, declared `preset` on each format's typed request
# (inference.responses_request, chat_request_type, messages_request_type), in its order. Everything else
# (`input`, `stream`, `prompt`, `metadata`, `session_id`, `user`, `trace`, ...) is per request and silently
# ignored; `instructions` (Responses), `system` (Messages) and the system and developer messages (Chat
# Completions) become the version's `system_prompt`. A messages preset also keeps the presets API's own
# `fallbacks` (presets.messages_schema.PresetMessagesMembers).
RESPONSES_CONFIG_FIELDS: tuple[str, ...] = preset_members(ResponsesRequest)
MESSAGES_CONFIG_FIELDS: tuple[str, ...] = (*preset_members(MessagesRequest), *MESSAGES_PRESET_ONLY)
CHAT_CONFIG_FIELDS: tuple[str, ...] = preset_members(ChatRequest)
PLACEHOLDER_MESSAGES = [{"role": "user", "content": "-"}]

PLACEHOLDER_MAX_TOKENS = 1  # a messages preset may leave max_tokens out; the live converter requires it


def pick_config(body: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """The persisted part of a request body: the preset fields it carries, in a stable order."""
    return {name: body[name] for name in fields if name in body}


def system_prompt_from_messages(system: Any) -> str:
    """A messages `system` (string, or text blocks) as one string; blocks are joined by a blank line."""
    if system is None:
        return ""
    if isinstance(system, str):
        return system
    return "\n\n".join(block["text"] for block in system)


def messages_to_responses(config: dict[str, Any]) -> dict[str, Any]:
    """Responses request fields equivalent to a config stored from a messages body: the /messages ingress's own
    translation (inference.ingress.messages_request.to_canonical: `max_tokens` → `max_output_tokens`,
    `speed: fast` → `service_tier: fast`, `output_config` → `reasoning.effort` / `text.format`, tools and
    `tool_choice` in their Responses shapes, ...), so a preset means what the same body means on /messages.

    The preset's own members first: `fallbacks` become `models` (the primary model first, then the fallbacks in
    order); `output_config.task_budget`, which the presets API accepts, has no Responses equivalent and is left
    out (as before).
    """
    from inference.ingress.messages_request import to_canonical

    body = {name: value for name, value in config.items() if name != "fallbacks"}
    if config.get("fallbacks"):
        primary = [config["model"]] if config.get("model") else []
        body["models"] = primary + [entry["model"] for entry in config["fallbacks"]]
    output_config = body.get("output_config")
    if isinstance(output_config, dict) and "task_budget" in output_config:
        body["output_config"] = {key: value for key, value in output_config.items() if key != "task_budget"}
    if body.get("max_tokens") is None:
        body["max_tokens"] = PLACEHOLDER_MAX_TOKENS
    fields = to_canonical({**body, "messages": PLACEHOLDER_MESSAGES})
    fields.pop("input", None)
    if config.get("max_tokens") is None:
        fields.pop("max_output_tokens", None)
    return fields


def chat_to_responses(config: dict[str, Any]) -> dict[str, Any]:
    """Responses request fields equivalent to a config stored from a Chat Completions body (the chat ingress's
    own translation: `max_tokens` → `max_output_tokens`, `response_format` → `text.format`, ...)."""
    from inference.ingress.chat_request import to_canonical

    fields = to_canonical({**config, "messages": PLACEHOLDER_MESSAGES})
    fields.pop("input", None)
    return fields


def system_prompt_from_chat(messages: Any) -> str:
    """The system and developer messages of a Chat Completions body as one string (blank-line separated)."""
    texts = []
    for message in messages or ():
        if message.get("role") in ("system", "developer"):
            content = message.get("content")
            texts.append(content if isinstance(content, str) else "".join(p.get("text", "") for p in content))
    return "\n\n".join(t for t in texts if t)


def to_responses_fields(config: dict[str, Any], source_format: str) -> dict[str, Any]:
    """The Responses request fields a stored config stands for."""
    if source_format == "messages":
        return messages_to_responses(config)
    if source_format == "chat":
        return chat_to_responses(config)
    return dict(config)

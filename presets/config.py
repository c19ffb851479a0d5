"""Which request fields a preset keeps, and how a stored config maps onto a Responses request.

A version stores its `config` in the vocabulary of the body it was created from (DECISIONS.md §4):
Responses field names for POST /presets/{slug}/responses, messages field names (`max_tokens`,
`fallbacks`, `output_config`, `speed`) for POST /presets/{slug}/messages. `to_responses_fields` turns either
into Responses request fields when a request uses the preset.
"""

from __future__ import annotations

from typing import Any

# Request-configuration fields of a Responses body that a preset persists. Everything else (`input`,
# `stream`, `prompt`, `metadata`, `session_id`, `user`, `trace`, ...) is per request and silently ignored;
# `instructions` becomes the version's `system_prompt`.
RESPONSES_CONFIG_FIELDS: tuple[str, ...] = (
    "model",
    "models",
    "temperature",
    "top_p",
    "top_k",
    "top_logprobs",
    "max_output_tokens",
    "frequency_penalty",
    "presence_penalty",
    "provider",
    "plugins",
    "reasoning",
    "text",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "max_tool_calls",
    "stop_server_tools_when",
    "route",
    "service_tier",
    "truncation",
    "include",
    "modalities",
    "image_config",
    "cache_control",
    "prompt_cache_options",
)

# The same for a messages body; `system` becomes the version's `system_prompt`.
MESSAGES_CONFIG_FIELDS: tuple[str, ...] = (
    "model",
    "fallbacks",
    "max_tokens",
    "temperature",
    "top_p",
    "top_k",
    "provider",
    "plugins",
    "route",
    "tools",
    "tool_choice",
    "stop_server_tools_when",
    "cache_control",
    "output_config",
    "speed",
)

# The same for a Chat Completions body; its system and developer messages become the version's `system_prompt`.
CHAT_CONFIG_FIELDS: tuple[str, ...] = (
    "model",
    "models",
    "temperature",
    "top_p",
    "top_k",
    "frequency_penalty",
    "presence_penalty",
    "max_tokens",
    "max_completion_tokens",
    "stop",
    "seed",
    "logit_bias",
    "response_format",
    "verbosity",
    "reasoning",
    "reasoning_effort",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "provider",
    "plugins",
    "route",
    "service_tier",
)
PLACEHOLDER_MESSAGES = [{"role": "user", "content": "-"}]

# Messages fields whose name and meaning are the same in a Responses request.
_SAME_IN_RESPONSES = (
    "model",
    "temperature",
    "top_p",
    "top_k",
    "provider",
    "plugins",
    "route",
    "stop_server_tools_when",
    "cache_control",
)

_TOOL_CHOICE_TYPES = {"auto": "auto", "any": "required", "none": "none"}


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


def _messages_tool(tool: dict[str, Any]) -> dict[str, Any]:
    if "input_schema" not in tool and "type" in tool:
        return dict(tool)  # a server tool such as {"type": "service:web_search"} is the same in both formats
    converted: dict[str, Any] = {"type": "function", "name": tool["name"]}
    if "description" in tool:
        converted["description"] = tool["description"]
    converted["parameters"] = tool.get("input_schema") or {"type": "object", "properties": {}}
    return converted


def _messages_tool_choice(choice: dict[str, Any], fields: dict[str, Any]) -> None:
    kind = choice["type"]
    if kind == "tool":
        fields["tool_choice"] = {"type": "function", "name": choice["name"]}
    else:
        fields["tool_choice"] = _TOOL_CHOICE_TYPES[kind]
    if choice.get("disable_parallel_tool_use") is True:
        fields["parallel_tool_calls"] = False


def _messages_output_config(output_config: dict[str, Any], fields: dict[str, Any]) -> None:
    if output_config.get("effort") is not None:
        fields["reasoning"] = {"effort": output_config["effort"]}
    output_format = output_config.get("format")
    if output_format is not None:
        text_format = {"type": "json_schema", "name": output_format.get("name", "output"), "strict": True}
        text_format["schema"] = output_format["schema"]
        fields["text"] = {"format": text_format}


def messages_to_responses(config: dict[str, Any]) -> dict[str, Any]:
    """Responses request fields equivalent to a config stored from a messages body.

    `fallbacks` become `models` (the primary model first, then the fallbacks in order), `max_tokens` becomes
    `max_output_tokens`, `output_config.effort` becomes `reasoning.effort` and `output_config.format` a
    `text.format` of type `json_schema`, `speed: fast` becomes `service_tier: priority` (`standard` and null
    leave the default tier), tools and `tool_choice` take their Responses shapes.
    """
    fields: dict[str, Any] = {name: config[name] for name in _SAME_IN_RESPONSES if name in config}
    if config.get("fallbacks"):
        primary = [config["model"]] if config.get("model") else []
        fields["models"] = primary + [entry["model"] for entry in config["fallbacks"]]
    if config.get("max_tokens") is not None:
        fields["max_output_tokens"] = config["max_tokens"]
    if config.get("tools") is not None:
        fields["tools"] = [_messages_tool(tool) for tool in config["tools"]]
    if config.get("tool_choice") is not None:
        _messages_tool_choice(config["tool_choice"], fields)
    if config.get("output_config") is not None:
        _messages_output_config(config["output_config"], fields)
    if config.get("speed") == "fast":
        fields["service_tier"] = "priority"
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

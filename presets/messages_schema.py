"""Validation of the messages-format body of POST /presets/{slug}/messages (plain Python, no DRF).

Every rule raises `validation_error(field, message)`: a 400 whose message starts with the field path.
Members the messages body shares with the Responses body (`cache_control`, `plugins`, `provider`, `route`,
`session_id`, `user`, `stop_server_tools_when`, `trace`, `temperature`, `top_p`, `top_k`) are checked by
inference's own checkers, so one rule set serves both; the messages-only members are checked here. Fields
the preset does not keep are still checked when the spec gives them a rule (`messages`, `session_id`,
`user`, `trace`). Members of a messages body the preset does not keep (`stream`, `metadata`, `thinking`...)
are accepted and not persisted, as the spec asks; any other member is a 400 naming it (strict bodies).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from gateway_project.api.errors import validation_error
from gateway_project.api.serializers import refuse_unknown_members
from inference import schema
from presets.config import MESSAGES_CONFIG_FIELDS, MESSAGES_PRESET_ONLY, messages_to_responses, pick_config

MAX_FALLBACKS = 3
SPEEDS = ("fast", "standard")
EFFORTS = ("max", "xhigh", "high", "medium", "low", "minimal", "none")
TOOL_CHOICE_TYPES = ("auto", "any", "none", "tool")
# The members of a messages-format request body (Anthropic's Messages API and this API's additions).
MESSAGES_MEMBERS = frozenset(
    {
        "model", "models", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
        "tools", "tool_choice", "thinking", "service_tier", "fallbacks", "output_config", "speed",
    }
)  # fmt: skip
SHARED_WITH_RESPONSES = (
    "cache_control",
    "plugins",
    "provider",
    "route",
    "session_id",
    "user",
    "stop_server_tools_when",
    "trace",
    "temperature",
    "top_p",
    "top_k",
)


class Fallback(msgspec.Struct, forbid_unknown_fields=True):
    model: Annotated[str, Meta(min_length=1)]


class PresetOutputConfig(msgspec.Struct, forbid_unknown_fields=True):
    effort: Literal[EFFORTS] | None = None
    format: Annotated[dict[str, Any], Meta(description="`{type: json_schema, name?, schema}`")] | None = None
    task_budget: Annotated[int, Meta(ge=1)] | dict[str, Any] | None = None


class PresetMessagesMembers(msgspec.Struct):
    """The members of a messages body of the presets API that the Messages request (inference.
    messages_request_type.MessagesRequest) does not have, or has narrower: the body's OpenAPI schema
    (presets.serializers) is the Messages request's plus these."""

    fallbacks: Annotated[
        list[Fallback],
        Meta(max_length=MAX_FALLBACKS, description="Models tried after `model`; cannot be combined with `models`."),
    ] = []
    output_config: (
        Annotated[
            PresetOutputConfig, Meta(description="`{effort, format, task_budget}`; `task_budget` is not applied.")
        ]
        | None
    ) = None


assert set(MESSAGES_PRESET_ONLY) <= {field.name for field in msgspec.structs.fields(PresetMessagesMembers)}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _object(body: dict, name: str) -> dict | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise validation_error(name, "must be an object")
    return value


def _max_tokens(body: dict) -> None:
    value = body.get("max_tokens")
    if value is not None and (not _is_int(value) or value < 1):
        raise validation_error("max_tokens", "must be an integer of at least 1")


def _model(body: dict) -> None:
    model = body.get("model")
    if model is not None and (not isinstance(model, str) or not model):
        raise validation_error("model", "must be a non-empty string")


def _messages(body: dict) -> None:
    messages = body.get("messages")
    if messages is None:
        return
    if not isinstance(messages, list):
        raise validation_error("messages", "must be an array")
    for index, message in enumerate(messages):
        path = f"messages[{index}]"
        if not isinstance(message, dict):
            raise validation_error(path, "must be an object with role and content")
        if not isinstance(message.get("role"), str):
            raise validation_error(f"{path}.role", "is required and must be a string")
        if not isinstance(message.get("content"), (str, list)):
            raise validation_error(f"{path}.content", "is required and must be a string or an array of blocks")


def _system(body: dict) -> None:
    system = body.get("system")
    if system is None or isinstance(system, str):
        return
    if not isinstance(system, list):
        raise validation_error("system", "must be a string or an array of text blocks")
    for index, block in enumerate(system):
        path = f"system[{index}]"
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise validation_error(path, "must be a text block {type: 'text', text: string}")
        if "cache_control" in block:
            schema.CHECKERS["cache_control"](f"{path}.cache_control", block["cache_control"])


def _fallbacks(body: dict) -> None:
    fallbacks = body.get("fallbacks")
    if fallbacks is None:
        return
    if "models" in body:
        raise validation_error("fallbacks", "cannot be combined with models")
    if not isinstance(fallbacks, list):
        raise validation_error("fallbacks", "must be an array of {model} objects")
    if len(fallbacks) > MAX_FALLBACKS:
        raise validation_error("fallbacks", f"must have at most {MAX_FALLBACKS} entries")
    for index, entry in enumerate(fallbacks):
        path = f"fallbacks[{index}]"
        if not isinstance(entry, dict):
            raise validation_error(path, "must be an object {model}")
        extra = set(entry) - {"model"}
        if extra:
            raise validation_error(f"{path}.{sorted(extra)[0]}", "is not accepted; a fallback takes only model")
        if not isinstance(entry.get("model"), str) or not entry["model"]:
            raise validation_error(f"{path}.model", "is required and must be a non-empty string")


def _output_config(body: dict) -> None:
    config = _object(body, "output_config")
    if config is None:
        return
    unknown = set(config) - {"effort", "format", "task_budget"}
    if unknown:
        raise validation_error(f"output_config.{sorted(unknown)[0]}", "is not an output_config member")
    effort = config.get("effort")
    if effort is not None and effort not in EFFORTS:
        raise validation_error("output_config.effort", f"must be one of {', '.join(EFFORTS)}")
    output_format = config.get("format")
    if output_format is not None:
        if not isinstance(output_format, dict) or output_format.get("type") != "json_schema":
            raise validation_error("output_config.format.type", "must be 'json_schema'")
        if "name" in output_format and (not isinstance(output_format["name"], str) or not output_format["name"]):
            raise validation_error("output_config.format.name", "must be a non-empty string")
        if not isinstance(output_format.get("schema"), dict):
            raise validation_error("output_config.format.schema", "is required and must be a JSON schema object")
    budget = config.get("task_budget")
    if budget is not None and not ((_is_int(budget) and budget >= 1) or isinstance(budget, dict)):
        raise validation_error("output_config.task_budget", "must be a positive integer or an object")


def _tools(body: dict) -> None:
    tools = body.get("tools")
    if tools is None:
        return
    if not isinstance(tools, list):
        raise validation_error("tools", "must be an array")
    for index, tool in enumerate(tools):
        path = f"tools[{index}]"
        if not isinstance(tool, dict):
            raise validation_error(path, "must be an object")
        if "input_schema" not in tool and isinstance(tool.get("type"), str):
            continue  # a server tool, passed through by type
        if not isinstance(tool.get("name"), str) or not tool["name"]:
            raise validation_error(f"{path}.name", "is required and must be a non-empty string")
        if "description" in tool and not isinstance(tool["description"], str):
            raise validation_error(f"{path}.description", "must be a string")
        if "input_schema" in tool and not isinstance(tool["input_schema"], dict):
            raise validation_error(f"{path}.input_schema", "must be a JSON schema object")


def _tool_choice(body: dict) -> None:
    choice = _object(body, "tool_choice")
    if choice is None:
        return
    if choice.get("type") not in TOOL_CHOICE_TYPES:
        raise validation_error("tool_choice.type", f"must be one of {', '.join(TOOL_CHOICE_TYPES)}")
    if choice["type"] == "tool" and not isinstance(choice.get("name"), str):
        raise validation_error("tool_choice.name", "is required when type is tool")
    if "disable_parallel_tool_use" in choice and not isinstance(choice["disable_parallel_tool_use"], bool):
        raise validation_error("tool_choice.disable_parallel_tool_use", "must be a boolean")


def validate_messages_body(body: Any) -> dict:
    """Check a messages-format body; returns it unchanged, or raises a 400 naming the first bad field.

    Last, the config the preset keeps is translated by the /messages ingress's own converter (the one applying
    it on use), so a stored preset always applies.
    """
    if not isinstance(body, dict):
        raise validation_error("body", "must be a JSON object")
    refuse_unknown_members(body, MESSAGES_MEMBERS | set(SHARED_WITH_RESPONSES))
    _model(body)
    _messages(body)
    _max_tokens(body)
    _system(body)
    for name in SHARED_WITH_RESPONSES:
        if name in body:
            schema.CHECKERS[name](name, body[name])
    _fallbacks(body)
    _output_config(body)
    if body.get("speed") is not None and body["speed"] not in SPEEDS:
        raise validation_error("speed", "must be one of fast, standard or null")
    _tools(body)
    _tool_choice(body)
    if body.get("model") or body.get("fallbacks"):  # without either, the service's 400 says a preset needs one
        messages_to_responses(pick_config(body, MESSAGES_CONFIG_FIELDS))
    return body

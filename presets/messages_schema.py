"""Validation of the messages-format body of POST /presets/{slug}/messages (plain Python, no DRF).

Every rule raises `validation_error(field, message)`: a 400 whose message starts with the field path.
Fields the preset does not keep are still checked when the spec gives them a rule (`messages`,
`session_id`, `user`, `trace`); unknown fields are ignored.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error

MAX_FALLBACKS = 3
MAX_IDENTIFIER_LENGTH = 256
SPEEDS = ("fast", "standard")
ROUTES = ("fallback", "sort")
EFFORTS = ("max", "xhigh", "high", "medium", "low", "minimal", "none")
PLUGIN_IDS = (
    "auto-router",
    "auto-beta-router",
    "moderation",
    "web",
    "web-fetch",
    "file-parser",
    "response-healing",
    "context-compression",
    "pareto-router",
    "fusion",
)
# Stop-condition kinds (DECISIONS.md §9) and the one parameter each needs, with its type check.
STOP_CONDITIONS = {
    "step_count_is": ("step_count", "positive integer"),
    "max_cost": ("max_cost_in_dollars", "positive number"),
    "has_tool_call": ("tool_name", "non-empty string"),
    "max_tokens_used": ("max_tokens", "positive integer"),
    "finish_reason_is": ("reason", "non-empty string"),
}
TOOL_CHOICE_TYPES = ("auto", "any", "none", "tool")
DATA_COLLECTION = ("allow", "deny")
SORTS = ("price", "throughput", "latency")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check(value: Any, kind: str) -> bool:
    if kind == "positive integer":
        return _is_int(value) and value >= 1
    if kind == "positive number":
        return _is_number(value) and value > 0
    return isinstance(value, str) and value != ""


def _object(body: dict, name: str, path: str | None = None) -> dict | None:
    value = body.get(name)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise validation_error(path or name, "must be an object")
    return value


def _string_list(value: Any, path: str) -> None:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise validation_error(path, "must be an array of strings")


def _number_field(body: dict, name: str, minimum: float | None = None, maximum: float | None = None) -> None:
    value = body.get(name)
    if value is None:
        return
    if not _is_number(value):
        raise validation_error(name, "must be a number")
    if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
        raise validation_error(name, f"must be between {minimum} and {maximum}")


def _int_field(body: dict, name: str, minimum: int) -> None:
    value = body.get(name)
    if value is None:
        return
    if not _is_int(value) or value < minimum:
        raise validation_error(name, f"must be an integer of at least {minimum}")


def _identifier(body: dict, name: str) -> None:
    value = body.get(name)
    if value is None:
        return
    if not isinstance(value, str):
        raise validation_error(name, "must be a string")
    if len(value) > MAX_IDENTIFIER_LENGTH:
        raise validation_error(name, f"must be at most {MAX_IDENTIFIER_LENGTH} characters")


def validate_cache_control(value: Any, path: str = "cache_control") -> None:
    if not isinstance(value, dict):
        raise validation_error(path, "must be an object")
    if value.get("type") != "ephemeral":
        raise validation_error(f"{path}.type", "is required and must be 'ephemeral'")
    if "ttl" in value and not isinstance(value["ttl"], str):
        raise validation_error(f"{path}.ttl", "must be a string")
    unknown = set(value) - {"type", "ttl"}
    if unknown:
        raise validation_error(f"{path}.{sorted(unknown)[0]}", "is not a cache_control member")


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
            validate_cache_control(block["cache_control"], f"{path}.cache_control")


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
        if not isinstance(output_format.get("schema"), dict):
            raise validation_error("output_config.format.schema", "is required and must be a JSON schema object")
    budget = config.get("task_budget")
    if budget is not None and not ((_is_int(budget) and budget >= 1) or isinstance(budget, dict)):
        raise validation_error("output_config.task_budget", "must be a positive integer or an object")


def _enum(body: dict, name: str, values: tuple[str, ...]) -> None:
    value = body.get(name)
    if value is not None and value not in values:
        raise validation_error(name, f"must be one of {', '.join(values)} or null")


def validate_plugins(value: Any, path: str = "plugins") -> None:
    if not isinstance(value, list):
        raise validation_error(path, "must be an array of plugin objects")
    for index, plugin in enumerate(value):
        item = f"{path}[{index}]"
        if not isinstance(plugin, dict):
            raise validation_error(item, "must be a plugin object")
        if plugin.get("id") not in PLUGIN_IDS:
            raise validation_error(f"{item}.id", f"must be one of {', '.join(PLUGIN_IDS)}")
        if plugin["id"] != "auto-router":
            continue
        for name in ("enabled", "pin_model"):
            if name in plugin and not isinstance(plugin[name], bool):
                raise validation_error(f"{item}.{name}", "must be a boolean")
        for name in ("allowed_models", "excluded_models"):
            if name in plugin:
                _string_list(plugin[name], f"{item}.{name}")
        if "cost_tier" in plugin and not isinstance(plugin["cost_tier"], str):
            raise validation_error(f"{item}.cost_tier", "must be a string")


def validate_stop_conditions(value: Any, path: str = "stop_server_tools_when") -> None:
    if not isinstance(value, list) or not value:
        raise validation_error(path, "must be an array of at least 1 condition")
    for index, condition in enumerate(value):
        item = f"{path}[{index}]"
        if not isinstance(condition, dict) or condition.get("type") not in STOP_CONDITIONS:
            raise validation_error(f"{item}.type", f"must be one of {', '.join(STOP_CONDITIONS)}")
        parameter, kind = STOP_CONDITIONS[condition["type"]]
        if not _check(condition.get(parameter), kind):
            raise validation_error(f"{item}.{parameter}", f"is required and must be a {kind}")


def validate_provider(value: Any, path: str = "provider") -> None:
    """Provider preferences (DECISIONS.md §9); unknown members are refused so a typo is not silently lost."""
    if not isinstance(value, dict):
        raise validation_error(path, "must be an object")
    for name, item in value.items():
        field = f"{path}.{name}"
        if name in ("order", "only", "ignore", "quantizations"):
            _string_list(item, field)
        elif name in ("allow_fallbacks", "require_parameters", "zdr"):
            if not isinstance(item, bool):
                raise validation_error(field, "must be a boolean")
        elif name == "data_collection":
            if item not in DATA_COLLECTION:
                raise validation_error(field, "must be allow or deny")
        elif name == "sort":
            if not (item in SORTS or (isinstance(item, dict) and item.get("by") in SORTS)):
                raise validation_error(field, "must be price, throughput, latency or {by, partition}")
        elif name == "max_price":
            if not isinstance(item, dict) or not all(_is_number(v) and v >= 0 for v in item.values()):
                raise validation_error(field, "must be an object of non-negative prices")
        elif name in ("preferred_min_throughput", "preferred_max_latency"):
            if not _is_number(item) or item < 0:
                raise validation_error(field, "must be a non-negative number")
        else:
            raise validation_error(field, "is not a provider preference")


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
    """Check a messages-format body; returns it unchanged, or raises a 400 naming the first bad field."""
    if not isinstance(body, dict):
        raise validation_error("body", "must be a JSON object")
    _model(body)
    _messages(body)
    _int_field(body, "max_tokens", 1)
    _system(body)
    if body.get("cache_control") is not None:
        validate_cache_control(body["cache_control"])
    if body.get("plugins") is not None:
        validate_plugins(body["plugins"])
    if body.get("provider") is not None:
        validate_provider(body["provider"])
    _enum(body, "route", ROUTES)
    _identifier(body, "session_id")
    _identifier(body, "user")
    if "stop_server_tools_when" in body:
        validate_stop_conditions(body["stop_server_tools_when"])
    _object(body, "trace")
    _fallbacks(body)
    _output_config(body)
    _enum(body, "speed", SPEEDS)
    _number_field(body, "temperature", 0, 2)
    _number_field(body, "top_p", 0, 1)
    _int_field(body, "top_k", 0)
    _tools(body)
    _tool_choice(body)
    return body

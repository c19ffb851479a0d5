"""Checkers of the structured fields of the Responses body (input, tools, provider, plugins, ...).

Each `check_<field>(name, value)` raises a 400 naming the (nested) field; see inference.schema.
"""

from __future__ import annotations

from typing import Any

from gateway_project.api.errors import validation_error
from inference.plugins.registry import PLUGIN_IDS, check_plugin
from inference.search.engines import configured_engines
from inference.servertools.registry import check_server_tool, is_server_tool

ROLES = frozenset({"user", "assistant", "system", "developer"})
REASONING_EFFORTS = frozenset({"max", "xhigh", "high", "medium", "low", "minimal", "none"})
REASONING_SUMMARIES = frozenset({"auto", "concise", "detailed"})
TEXT_FORMATS = frozenset({"text", "json_object", "json_schema"})
VERBOSITIES = frozenset({"low", "medium", "high"})
TOOL_CHOICE_STRINGS = frozenset({"auto", "none", "required"})
TOOL_SEARCH = "service:tool_search"
STOP_CONDITIONS: dict[str, tuple[str, type | tuple[type, ...]]] = {
    "step_count_is": ("step_count", int),
    "max_cost": ("max_cost_in_dollars", (int, float)),
    "has_tool_call": ("tool_name", str),
    "max_tokens_used": ("max_tokens", int),
    "finish_reason_is": ("reason", str),
}


def is_one_of(value: Any, values: frozenset[str]) -> bool:
    """Membership that is False (not a TypeError) for unhashable JSON values such as objects and arrays."""
    return isinstance(value, str) and value in values


def allowed_values(values: frozenset[str]) -> str:
    return ", ".join(sorted(values))


def require_object(name: str, value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise validation_error(name, "must be an object")
    return value


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def string_list(name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise validation_error(name, "must be an array of strings")
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise validation_error(f"{name}[{index}]", "must be a string")


def check_image_config(name: str, value: Any) -> None:
    if value is None:
        return
    for key, item in require_object(name, value).items():
        if isinstance(item, bool) or not isinstance(item, (str, int, float, list)):
            raise validation_error(f"{name}.{key}", "must be a string, a number or an array")


def _content_part(name: str, part: Any) -> None:
    if not isinstance(part, dict):
        raise validation_error(name, "must be an object")
    kind = part.get("type")
    if not isinstance(kind, str) or not kind:
        raise validation_error(f"{name}.type", "is required")
    if kind in ("input_text", "output_text") and not isinstance(part.get("text"), str):
        raise validation_error(f"{name}.text", "must be a string")
    if "cache_control" in part:
        from inference.schema import CACHE_CONTROL  # generated from the type (inference.schema imports this module)

        CACHE_CONTROL(f"{name}.cache_control", part["cache_control"])


def _input_item(name: str, item: Any) -> None:
    if not isinstance(item, dict):
        raise validation_error(name, "must be an object")
    kind = item.get("type", "message")
    if kind != "message":
        if not isinstance(kind, str) or not kind:
            raise validation_error(f"{name}.type", "must be a string")
        return
    role = item.get("role")
    if not is_one_of(role, ROLES):
        raise validation_error(f"{name}.role", f"must be one of {allowed_values(ROLES)}")
    content = item.get("content")
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise validation_error(f"{name}.content", "must be a string or an array of content parts")
    for index, part in enumerate(content):
        _content_part(f"{name}.content[{index}]", part)


def check_input(name: str, value: Any) -> None:
    if isinstance(value, str):
        return
    if not isinstance(value, list):
        raise validation_error(name, "must be a string or an array of items")
    for index, item in enumerate(value):
        _input_item(f"{name}[{index}]", item)


def _auto_router(name: str, plugin: dict[str, Any]) -> None:
    for key in ("enabled", "pin_model"):
        if key in plugin and not isinstance(plugin[key], bool):
            raise validation_error(f"{name}.{key}", "must be a boolean")
    for key in ("allowed_models", "excluded_models"):
        if key in plugin:
            string_list(f"{name}.{key}", plugin[key])
    if "cost_tier" in plugin and not isinstance(plugin["cost_tier"], str):
        raise validation_error(f"{name}.cost_tier", "must be a string")


def check_plugins(name: str, value: Any) -> None:
    if not isinstance(value, list):
        raise validation_error(name, "must be an array of plugin objects")
    for index, plugin in enumerate(value):
        item = f"{name}[{index}]"
        plugin = require_object(item, plugin)
        if not is_one_of(plugin.get("id"), PLUGIN_IDS):
            raise validation_error(f"{item}.id", f"must be one of {allowed_values(PLUGIN_IDS)}")
        if plugin["id"] == "auto-router":
            _auto_router(item, plugin)
        if "enabled" in plugin and not isinstance(plugin["enabled"], bool):
            raise validation_error(f"{item}.enabled", "must be a boolean")
        check_plugin(item, plugin)  # 400 for a kind this gateway does not implement (yet)


def check_stop_conditions(name: str, value: Any) -> None:
    if not isinstance(value, list) or not value:
        raise validation_error(name, "must be an array of at least 1 condition")
    for index, condition in enumerate(value):
        item = f"{name}[{index}]"
        condition = require_object(item, condition)
        kind_name = condition.get("type")
        spec = STOP_CONDITIONS.get(kind_name) if isinstance(kind_name, str) else None
        if spec is None:
            raise validation_error(f"{item}.type", f"must be one of {allowed_values(frozenset(STOP_CONDITIONS))}")
        field, kind = spec
        field_value = condition.get(field)
        if isinstance(field_value, bool) or not isinstance(field_value, kind):
            raise validation_error(f"{item}.{field}", f"is required ({'string' if kind is str else 'number'})")
        if not isinstance(field_value, str) and field_value <= 0:
            raise validation_error(f"{item}.{field}", "must be greater than 0")


def check_text(name: str, value: Any) -> None:
    if value is None:
        return
    value = require_object(name, value)
    fmt = value.get("format")
    if fmt is not None:
        fmt = require_object(f"{name}.format", fmt)
        if not is_one_of(fmt.get("type"), TEXT_FORMATS):
            raise validation_error(f"{name}.format.type", f"must be one of {allowed_values(TEXT_FORMATS)}")
        if fmt["type"] == "json_schema":
            if not isinstance(fmt.get("name"), str) or not fmt["name"]:
                raise validation_error(f"{name}.format.name", "is required for json_schema")
            if not isinstance(fmt.get("schema"), dict):
                raise validation_error(f"{name}.format.schema", "must be an object")
    verbosity = value.get("verbosity")
    if verbosity is not None and not is_one_of(verbosity, VERBOSITIES):
        raise validation_error(f"{name}.verbosity", f"must be one of {allowed_values(VERBOSITIES)}")


def check_tool_choice(name: str, value: Any) -> None:
    if value is None:
        return
    if isinstance(value, str):
        if value not in TOOL_CHOICE_STRINGS:
            raise validation_error(name, f"must be one of {allowed_values(TOOL_CHOICE_STRINGS)} or an object")
        return
    if not isinstance(require_object(name, value).get("type"), str):
        raise validation_error(f"{name}.type", "is required")


def _function_tool(name: str, tool: dict[str, Any]) -> None:
    if not isinstance(tool.get("name"), str) or not tool["name"]:
        raise validation_error(f"{name}.name", "is required")
    if tool.get("description") is not None and not isinstance(tool["description"], str):
        raise validation_error(f"{name}.description", "must be a string")
    if tool.get("parameters") is not None and not isinstance(tool["parameters"], dict):
        raise validation_error(f"{name}.parameters", "must be a JSON schema object")
    for key in ("defer_loading", "strict"):
        if tool.get(key) is not None and not isinstance(tool[key], bool):
            raise validation_error(f"{name}.{key}", "must be a boolean")


def _namespace_tool(name: str, tool: dict[str, Any]) -> None:
    """A group of function tools under one name (Codex's sub-agent tools); see inference/providers/namespaces.py."""
    if not isinstance(tool.get("name"), str) or not tool["name"]:
        raise validation_error(f"{name}.name", "is required")
    if tool.get("description") is not None and not isinstance(tool["description"], str):
        raise validation_error(f"{name}.description", "must be a string")
    inner = tool.get("tools")
    if not isinstance(inner, list) or not inner:
        raise validation_error(f"{name}.tools", "must be a non-empty array of function tools")
    for index, function in enumerate(inner):
        field = f"{name}.tools[{index}]"
        if require_object(field, function).get("type") != "function":
            raise validation_error(f"{field}.type", "must be function")
        _function_tool(field, function)


WEB_SEARCH_MEMBERS = frozenset({"type", "external_web_access", "filters", "search_context_size", "user_location"})


def _web_search_tool(name: str, tool: dict[str, Any]) -> None:
    """OpenAI's hosted web search (Codex sends `{type: web_search, external_web_access: false}`)."""
    for key in tool:
        if key not in WEB_SEARCH_MEMBERS:
            raise validation_error(f"{name}.{key}", "unknown parameter")
    if tool.get("external_web_access") is not None and not isinstance(tool["external_web_access"], bool):
        raise validation_error(f"{name}.external_web_access", "must be a boolean")


def hosted_web_search(tools: list[dict[str, Any]]) -> None:
    """The hosted `web_search` tool is run by the gateway's own web search (`service:web_search`) when a search
    engine is configured; otherwise it goes to the provider (an openai-responses upstream runs it, another
    format refuses it with a 400 naming it). Members the gateway's search cannot honour are refused then."""
    indexes = [i for i, tool in enumerate(tools) if tool.get("type") == "web_search"]
    if not indexes or not configured_engines():
        return
    for index in indexes:
        for key in ("filters", "search_context_size", "user_location"):
            if tools[index].get(key) is not None:
                raise validation_error(
                    f"tools[{index}].{key}", "is not supported by the gateway's web search (it runs web_search here)"
                )
        tools[index] = {"type": "service:web_search"}


def check_tools(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, list):
        raise validation_error(name, "must be an array")
    for index, tool in enumerate(value):
        item = f"{name}[{index}]"
        tool = require_object(item, tool)
        kind = tool.get("type")
        if not isinstance(kind, str) or not kind:
            raise validation_error(f"{item}.type", "is required")
        if kind == "function":
            _function_tool(item, tool)
        elif kind == "namespace":
            _namespace_tool(item, tool)
        elif kind == "web_search":
            _web_search_tool(item, tool)
        elif is_server_tool(tool):
            check_server_tool(item, tool)  # 400 for a kind this gateway does not implement (yet)


def check_deferred_tools(tools: list[dict[str, Any]]) -> None:
    """`defer_loading` needs the `service:tool_search` server tool and at least one non-deferred tool."""
    deferred = [i for i, t in enumerate(tools) if t.get("defer_loading")]
    if not deferred:
        return
    field = f"tools[{deferred[0]}].defer_loading"
    if not any(t.get("type") == TOOL_SEARCH for t in tools):
        raise validation_error(field, f"needs the {TOOL_SEARCH} server tool in tools")
    if not any(not t.get("defer_loading") and t.get("type") != TOOL_SEARCH for t in tools):
        raise validation_error(field, "needs at least one tool that is not deferred")
